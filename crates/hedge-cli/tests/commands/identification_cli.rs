//! `hedge hib index` and `hedge hib search` on image folders exported from Fashion-MNIST: the
//! files a user gets, numbers that agree with each other and with exact search, and refusals.

use std::path::Path;

use crate::common;

use common::{hedge, ok, refused, s, walk};

fn export(out: &Path, split: &str, per_class: usize, skip: usize, classes: &str) {
    let (per, skip) = (per_class.to_string(), skip.to_string());
    ok(&hedge(&[
        "data",
        "export-images",
        "--dataset",
        "fashion-mnist",
        "--split",
        split,
        "--per-class",
        &per,
        "--skip",
        &skip,
        "--classes",
        classes,
        "--out",
        s(out),
    ]));
}

/// Trains on a user's image folder, watching both held-out parts: the folder is decoded once
/// (it gives the config its image shape, the training and validation images, and both watched
/// parts).
fn train(folder: &Path, run: &Path, model: &str) {
    let o = hedge(&[
        "hib",
        "train",
        "--data",
        s(folder),
        "--unseen-classes",
        "2",
        "--model",
        model,
        "--dim",
        "2",
        "--steps",
        "40",
        "--batch",
        "32",
        "--threads",
        "1",
        "--watch-every",
        "20",
        "--watch",
        "test_seen,test_unseen",
        "--no-eval",
        "--out",
        s(run),
    ]);
    ok(&o);
    let log = String::from_utf8_lossy(&o.stderr);
    let decoded: Vec<&str> = log.lines().filter(|l| l.contains("decoded ")).collect();
    assert_eq!(decoded.len(), 1, "{log}");
    assert!(decoded[0].contains(&format!("from {}", std::fs::canonicalize(folder).unwrap().display())), "{log}");
}

/// `hedge hib search --index INDEX --probe PROBE --threads 1 --out OUT` and `extra` flags.
fn search(index: &Path, probe: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["hib", "search", "--index", s(index), "--probe", s(probe), "--threads", "1", "--out", s(out)];
    args.extend_from_slice(extra);
    hedge(&args)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_mixture_gallery_is_searched_with_abstention_and_its_numbers_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (train_folder, gallery, validation, probe) =
        (dir.path().join("train"), dir.path().join("gallery"), dir.path().join("val"), dir.path().join("probe"));
    export(&train_folder, "train", 20, 0, "trouser,pullover,coat,sneaker,bag,ankle-boot");
    // Identities the model never trained on; the probes add one the gallery lacks (shirt).
    export(&gallery, "train", 30, 0, "t-shirt,dress,sandal");
    export(&validation, "test", 15, 0, "t-shirt,dress,sandal");
    export(&probe, "test", 10, 15, "t-shirt,dress,sandal,shirt");
    let run = dir.path().join("run");
    train(&train_folder, &run, "mog");

    let index = dir.path().join("index");
    let out = ok(&hedge(&[
        "hib",
        "index",
        "--run",
        s(&run),
        "--gallery",
        s(&gallery),
        "--validation",
        s(&validation),
        "--target-risk",
        "0.3",
        "--candidates",
        "20",
        "--top-k",
        "2",
        "--threads",
        "1",
        "--out",
        s(&index),
    ]));
    assert!(out.contains("indexed 90 images of 3 identities"), "{out}");
    let manifest = json(&index.join("index.json"));
    assert_eq!(manifest["components"], 2);
    assert_eq!(manifest["calibration"]["uncertainty"].as_array().unwrap().len(), 45, "one η per validation probe");
    let eta: Vec<f64> =
        manifest["calibration"]["uncertainty"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(eta.windows(2).all(|w| w[0] <= w[1]), "validation η ascending");

    let results = dir.path().join("results");
    ok(&search(&index, &probe, &results, &[]));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(results.join("search.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 40, "one line per probe");
    let summary = json(&results.join("summary.json"));
    common::assert_nulls_explained(&results);
    // The summary's numbers recomputed from the lines.
    let answered: Vec<&serde_json::Value> = lines.iter().filter(|l| l["abstained"] == false).collect();
    let right = |l: &&serde_json::Value| l["matches"][0]["identity"] == l["label"];
    let coverage = answered.len() as f64 / 40.0;
    assert!((summary["coverage"].as_f64().unwrap() - coverage).abs() < 1e-12, "{summary}");
    let accuracy = lines.iter().filter(right).count() as f64 / 40.0;
    assert!((summary["accuracy"].as_f64().unwrap() - accuracy).abs() < 1e-12, "{summary}");
    assert_eq!(summary["known_identity"], 30, "shirt is not a gallery identity");
    // Shirts can never be identified correctly.
    assert!(accuracy <= 0.75 + 1e-12);
    // The rule abstains exactly above its threshold, and only abstaining probes lack a prediction.
    let threshold = manifest["calibration"]["rule"]["threshold"].as_f64();
    for l in &lines {
        let eta = l["eta"].as_f64().unwrap();
        let abstained = l["abstained"].as_bool().unwrap();
        if let Some(t) = threshold {
            assert_eq!(abstained, eta > t, "{l}");
        }
        assert_eq!(l.get("prediction").is_none(), abstained, "{l}");
        let matches = l["matches"].as_array().unwrap();
        assert!(!matches.is_empty() && matches.len() <= 2, "{l}");
        let p: Vec<f64> = matches.iter().map(|m| m["probability"].as_f64().unwrap()).collect();
        assert!(p.windows(2).all(|w| w[0] >= w[1]) && p.iter().all(|&p| (0.0..=1.0).contains(&p)), "{l}");
    }
    // 20 candidates among 90 images: the graph finds the exact 10 nearest.
    assert!(summary["ann_recall_at_10"].as_f64().unwrap() >= 0.99, "{summary}");
    let csv = std::fs::read_to_string(results.join("search.csv")).unwrap();
    assert!(csv.starts_with(
        "probe,label,eta,margin,abstained,prediction,identity_1,probability_1,identity_2,probability_2\n"
    ));
    assert_eq!(csv.lines().count(), 41);

    // A stricter risk from the same validation curve answers no more probes.
    let strict = dir.path().join("strict");
    ok(&search(&index, &probe, &strict, &["--target-risk", "0"]));
    assert!(json(&strict.join("summary.json"))["coverage"].as_f64().unwrap() <= coverage);

    // Abstention by the margin between the best two identities: the rule applies to 1 - margin.
    let by_margin = dir.path().join("index-margin");
    ok(&hedge(&[
        "hib",
        "index",
        "--run",
        s(&run),
        "--gallery",
        s(&gallery),
        "--validation",
        s(&validation),
        "--target-risk",
        "0.3",
        "--abstain-by",
        "margin",
        "--threads",
        "1",
        "--out",
        s(&by_margin),
    ]));
    let margin_results = dir.path().join("results-margin");
    ok(&search(&by_margin, &probe, &margin_results, &[]));
    let rule = &json(&by_margin.join("index.json"))["calibration"]["rule"];
    for line in std::fs::read_to_string(margin_results.join("search.jsonl")).unwrap().lines() {
        let l: serde_json::Value = serde_json::from_str(line).unwrap();
        let m = l["matches"].as_array().unwrap();
        let p = |k: usize| m.get(k).map_or(0.0, |x| x["probability"].as_f64().unwrap());
        assert!((l["margin"].as_f64().unwrap() - (p(0) - p(1))).abs() < 1e-12, "{l}");
        let expected = match rule["rule"].as_str().unwrap() {
            "accept_all" => false,
            "abstain_all" => true,
            _ => 1.0 - l["margin"].as_f64().unwrap() > rule["threshold"].as_f64().unwrap(),
        };
        assert_eq!(l["abstained"].as_bool().unwrap(), expected, "{l}");
    }

    // The results folder is not overwritten; a risk outside [0, 1] is refused.
    let err = refused(&search(&index, &probe, &results, &[]));
    assert!(err.contains("--overwrite") || err.contains("overwrite"), "{err}");
    let err = refused(&search(&index, &probe, &dir.path().join("r2"), &["--target-risk", "2"]));
    assert!(err.contains("target_risk"), "{err}");
    // A damaged graph file is refused by its checksum, naming it, before the graph reader runs.
    let graph = index.join("ann.safetensors");
    let mut bytes = std::fs::read(&graph).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&graph, bytes).unwrap();
    let err = refused(&search(&index, &probe, &dir.path().join("r3"), &[]));
    assert!(err.contains("ann.safetensors") && err.contains("rebuild"), "{err}");
}

#[test]
fn a_point_gallery_validates_by_leave_one_out_and_refuses_other_image_sizes() {
    use hedge_data::{NpyArray, NpyData};
    let dir = tempfile::tempdir().unwrap();
    let (train_folder, gallery) = (dir.path().join("train"), dir.path().join("gallery"));
    export(&train_folder, "train", 20, 0, "trouser,pullover,coat,sneaker,bag,ankle-boot");
    export(&gallery, "test", 12, 0, "t-shirt,dress,sandal");
    let run = dir.path().join("run");
    train(&train_folder, &run, "point");
    let index = dir.path().join("index");
    ok(&hedge(&["hib", "index", "--run", s(&run), "--gallery", s(&gallery), "--threads", "1", "--out", s(&index)]));
    let manifest = json(&index.join("index.json"));
    assert_eq!(manifest["calibration"]["source"], "leave-one-out over the gallery");
    assert_eq!(manifest["calibration"]["uncertainty"].as_array().unwrap().len(), 36);
    // An existing index is kept unless --overwrite.
    let err = refused(&hedge(&["hib", "index", "--run", s(&run), "--gallery", s(&gallery), "--out", s(&index)]));
    assert!(err.contains("--overwrite"), "{err}");
    let index_args = |out: &Path| {
        vec!["hib", "index", "--run", s(&run), "--gallery", s(&gallery), "--threads", "1", "--out"]
            .into_iter()
            .map(String::from)
            .chain([s(out).to_string(), "--overwrite".into()])
            .collect::<Vec<_>>()
    };
    let run_index = |out: &Path| hedge(&index_args(out).iter().map(String::as_str).collect::<Vec<_>>());
    // --overwrite replaces hedge's own index ...
    ok(&run_index(&index));
    // ... but not one a user has put a file into, and never the gallery itself.
    std::fs::write(index.join("notes.txt"), b"mine").unwrap();
    let err = refused(&run_index(&index));
    assert!(err.contains("notes.txt") && err.contains("not part of a hedge index"), "{err}");
    assert_eq!(std::fs::read(index.join("notes.txt")).unwrap(), b"mine");
    let images = |dir: &Path| walk(dir).len();
    let before = images(&gallery);
    let err = refused(&run_index(&gallery));
    assert!(err.contains("--gallery") && err.contains("inside"), "{err}");
    assert_eq!(images(&gallery), before, "no gallery image was touched");
    // A folder hedge did not make is refused even with --overwrite; the user's files stay.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("config.json"), b"{\"my\": 1}").unwrap();
    let err = refused(&run_index(&mine));
    assert!(err.contains("did not make") && err.contains("config.json"), "{err}");
    let train_over = |out: &Path| {
        hedge(&[
            "hib",
            "train",
            "--data",
            s(&train_folder),
            "--unseen-classes",
            "2",
            "--dim",
            "2",
            "--steps",
            "5",
            "--batch",
            "32",
            "--threads",
            "1",
            "--no-eval",
            "--overwrite",
            "--out",
            s(out),
        ])
    };
    let err = refused(&train_over(&mine));
    assert!(err.contains("did not make") && err.contains("config.json"), "{err}");
    assert_eq!(std::fs::read(mine.join("config.json")).unwrap(), b"{\"my\": 1}");
    let err = refused(&train_over(&train_folder.join("run")));
    assert!(err.contains("--data") && err.contains("inside"), "{err}");
    assert!(!train_folder.join("run").exists());

    // An edited index.json is refused, not trusted: renamed identities, another dim, an emptied
    // list of files (which would turn every hash check off).
    let original = std::fs::read_to_string(index.join("index.json")).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit); 4] = [
        ("class_names reversed", |m| m["class_names"].as_array_mut().unwrap().reverse()),
        ("dim 2 -> 3", |m| m["dim"] = 3.into()),
        ("files emptied", |m| m["files"] = serde_json::json!([])),
        ("item_names shortened", |m| {
            m["item_names"].as_array_mut().unwrap().pop();
        }),
    ];
    for (what, edit) in edits {
        let mut m: serde_json::Value = serde_json::from_str(&original).unwrap();
        edit(&mut m);
        std::fs::write(index.join("index.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
        let err = refused(&search(&index, &gallery, &dir.path().join("edited"), &[]));
        assert!(err.contains("index.json") && err.contains("edited") && err.contains("rebuild"), "{what}: {err}");
        assert!(!dir.path().join("edited").exists(), "{what}");
    }
    std::fs::write(index.join("index.json"), &original).unwrap();

    // A point's CSD is the squared distance between means: candidates found by CSD (one graph
    // point [m, 0] per item in D + 1 dimensions) answer exactly as those found by means.
    // Four candidates of 36 items, so that which four are found decides the answers.
    assert_eq!(json(&index.join("index.json"))["search"]["space"], "means", "a model trained without csd");
    let (by_means, by_csd) = (dir.path().join("index-means"), dir.path().join("index-csd"));
    for (folder, space) in [(&by_means, "means"), (&by_csd, "csd")] {
        let mut args = index_args(folder);
        args.extend(["--candidates", "4", "--top-k", "2", "--candidates-by", space].map(String::from));
        let out = ok(&hedge(&args.iter().map(String::as_str).collect::<Vec<_>>()));
        assert!(out.contains(&format!("candidates by {space}")), "{out}");
        assert_eq!(json(&folder.join("index.json"))["search"]["space"], space);
    }
    let (means_out, csd_out) = (dir.path().join("by-means"), dir.path().join("by-csd"));
    ok(&search(&by_means, &gallery, &means_out, &[]));
    ok(&search(&by_csd, &gallery, &csd_out, &[]));
    let matches = |out: &Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(out.join("search.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["matches"].clone())
            .collect()
    };
    assert_eq!(matches(&means_out), matches(&csd_out));

    // Probes of another size than the model takes: refused naming the file and the sizes.
    let npz = dir.path().join("small.npz");
    let images = NpyArray::new(vec![4, 14, 14], NpyData::U8(vec![0; 4 * 14 * 14]));
    let labels = NpyArray::new(vec![4], NpyData::I64(vec![0, 0, 1, 1]));
    hedge_data::write_npz(&npz, &[("images", images), ("labels", labels)]).unwrap();
    let err = refused(&search(&index, &npz, &dir.path().join("r"), &[]));
    assert!(err.contains("small.npz") && err.contains("1 x 14 x 14") && err.contains("1 x 28 x 28"), "{err}");
}
