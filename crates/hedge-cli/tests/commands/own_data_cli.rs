//! Every pillar on a user's own data (`--data`): a CSV table exported from a UCI set, an image
//! folder exported from Fashion-MNIST, an RGB `.npz`; and the errors bad user data gets.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

use common::{hedge, ok, refused, s};

/// Writes `header` and one comma-joined line per row to `dir/name`.
fn write_csv<'a>(dir: &Path, name: &str, header: &str, rows: impl Iterator<Item = Vec<&'a str>>) -> PathBuf {
    let mut csv = format!("{header}\n");
    for cells in rows {
        csv.push_str(&cells.join(","));
        csv.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, csv).unwrap();
    path
}

/// yacht's `data.txt` as the CSV a user would have: named columns, the target last.
fn yacht_csv(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(hedge_data::data_dir().unwrap().join("uci/yacht/data/data.txt")).unwrap();
    let rows = text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.split_whitespace().collect());
    write_csv(dir, "yacht.csv", "lcb,prismatic,length_displacement,beam_draught,length_beam,froude,resistance", rows)
}

#[test]
fn a_gp_fits_a_user_table_and_bad_tables_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let csv = yacht_csv(dir.path());
    let out = dir.path().join("gp");
    let o = hedge(&["bayes", "gp", "--data", s(&csv), "--target", "resistance", "--json", "--out", s(&out)]);
    let r: serde_json::Value = serde_json::from_str(ok(&o).trim()).unwrap();
    // 308 rows, 20 seeded 90/10 splits: 277 + 31 as in the standard UCI splits.
    assert_eq!((r["train_rows"].as_u64(), r["test_rows"].as_u64()), (Some(277), Some(31)));
    assert_eq!(r["lengthscales"].as_array().unwrap().len(), 6);
    // Published exact-GP RMSEs on yacht are 0.3–1.0; a broken reader (a column off, a target among
    // the inputs) would be far from that one way or the other.
    let rmse = r["rmse"].as_f64().unwrap();
    assert!(rmse > 0.05 && rmse < 1.0, "yacht from CSV: RMSE {rmse}");
    assert!(out.join("predictions.csv").is_file());
    common::assert_nulls_explained(&out);

    // Your own table needs no data directory: with HEDGE_DATA_DIR unset, in a folder without
    // ./data, the same fit gives the same numbers.
    let alone = std::process::Command::new(env!("CARGO_BIN_EXE_hedge"))
        .args(["bayes", "gp", "--data", s(&csv), "--target", "resistance", "--json"])
        .env_remove(hedge_data::DATA_DIR_ENV)
        .env("OMP_WAIT_POLICY", "passive")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let r_alone: serde_json::Value = serde_json::from_str(ok(&alone).trim()).unwrap();
    assert_eq!(r_alone["rmse"], r["rmse"]);

    let holed = dir.path().join("holed.csv");
    let text = std::fs::read_to_string(&csv).unwrap().replacen(",0.175,", ",,", 1);
    std::fs::write(&holed, text).unwrap();
    let err = refused(&hedge(&["bayes", "gp", "--data", s(&holed), "--target", "resistance"]));
    assert!(err.contains("holed.csv") && err.contains("missing value") && err.contains("line "), "{err}");
    let err = refused(&hedge(&["bayes", "gp", "--data", s(&csv), "--target", "speed"]));
    assert!(err.contains("has no column 'speed'") && err.contains("resistance"), "{err}");
    let err = refused(&hedge(&["bayes", "gp", "--data", s(&csv)]));
    assert!(err.contains("--target"), "{err}");
}

/// The active-learning loop draws its own pool/test split per seed, so the same rows through a
/// CSV file must give exactly the numbers of the UCI loader.
#[test]
fn active_learning_on_a_csv_export_gives_the_uci_sets_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let csv = yacht_csv(dir.path());
    let common_args =
        ["--seeds", "1", "--method", "random,acs-fw", "--recipe", "mse", "--steps", "60", "--budget", "30"];
    let run = |source: &[&str], out: &Path| {
        ok(&hedge(&[&["active", "run"][..], source, &common_args, &["--out", s(out)]].concat()));
        let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    let from_uci = run(&["--dataset", "uci/yacht"], &dir.path().join("uci"));
    let from_csv = run(&["--data", s(&csv), "--target", "resistance"], &dir.path().join("csv"));
    for method in ["random", "acs-fw"] {
        let rmse = |summary: &serde_json::Value| summary["methods"][method]["final_rmse"]["mean"].as_f64().unwrap();
        assert_eq!(rmse(&from_csv), rmse(&from_uci), "{method}");
    }
    common::assert_nulls_explained(&dir.path().join("csv"));
}

#[test]
fn a_hedged_embedding_trains_on_an_image_folder_and_is_evaluated_on_unseen_classes() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("fashion");
    ok(&hedge(&["data", "export-images", "--dataset", "fashion-mnist", "--per-class", "16", "--out", s(&folder)]));
    let check = ok(&hedge(&["data", "check", s(&folder)]));
    assert!(check.contains("160 images of 28 x 28 pixels, 1 channel(s), 10 classes"), "{check}");

    let run = dir.path().join("run");
    let o = hedge(&[
        "hib",
        "train",
        "--data",
        s(&folder),
        "--unseen-classes",
        "3",
        "--steps",
        "30",
        "--batch",
        "32",
        "--threads",
        "1",
        "--out",
        s(&run),
    ]);
    let stdout = ok(&o);
    let report: serde_json::Value = serde_json::from_str(&stdout[..stdout.rfind("run directory").unwrap()]).unwrap();
    let ap = report["variants"]["clean"]["verification_ap"].as_f64().unwrap();
    assert!(ap > 0.0 && ap <= 1.0, "{report}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    let data = &config["hib"]["data"];
    assert_eq!(data["shape"], serde_json::json!([1, 28, 28]), "{config}");
    assert_eq!(data["unseen_classes"], 3);
    let split: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("data_split.json")).unwrap()).unwrap();
    assert_eq!(split["unseen_classes"].as_array().unwrap().len(), 3, "{split}");
    assert_eq!(split["seen_classes"].as_array().unwrap().len(), 7, "{split}");
    // 7 classes x 16 images: 10 % (2 images) of each held out as test_seen.
    assert_eq!((split["train_images"].as_u64(), split["test_seen_images"].as_u64()), (Some(98), Some(14)));

    // Evaluation reloads the same unseen classes from the recorded folder: 3 classes, 48 images.
    ok(&hedge(&["hib", "eval", "--run", s(&run), "--split", "test_unseen", "--repeats", "1", "--threads", "1"]));
    let eval: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("eval.json")).unwrap()).unwrap();
    assert!(eval.to_string().contains("verification_ap"), "{eval}");
    common::assert_nulls_explained(&run);
    let embedded = dir.path().join("unseen.npz");
    ok(&hedge(&["hib", "embed", "--run", s(&run), "--split", "test_unseen", "--out", s(&embedded)]));
    let arrays = hedge_data::read_npz(&embedded).unwrap();
    let eta = arrays.iter().find(|(n, _)| n == "eta").map(|(_, a)| a.shape.clone());
    assert_eq!(eta, Some(vec![48]), "one uncertainty per unseen-class image");
}

#[test]
fn colour_images_from_an_npz_set_the_network_input() {
    use hedge_data::{NpyArray, NpyData};
    let dir = tempfile::tempdir().unwrap();
    // 6 classes x 6 images of 3 x 12 x 20: each class a colour, each image a brightness.
    let (n, c, h, w) = (36, 3, 12, 20);
    let mut pixels = Vec::with_capacity(n * c * h * w);
    for i in 0..n {
        for channel in 0..c {
            let value = if (i / 6) % 3 == channel { 200 } else { 20 } + (i % 6) as u8 * 5 + (i / 18) as u8 * 30;
            pixels.extend(std::iter::repeat_n(value, h * w));
        }
    }
    let path = dir.path().join("colours.npz");
    let images = NpyArray::new(vec![n, c, h, w], NpyData::U8(pixels));
    let labels = NpyArray::new(vec![n], NpyData::I64((0..n as i64).map(|i| i / 6).collect()));
    hedge_data::write_npz(&path, &[("images", images), ("labels", labels)]).unwrap();
    let run = dir.path().join("run");
    ok(&hedge(&[
        "hib",
        "train",
        "--data",
        s(&path),
        "--unseen-classes",
        "2",
        "--steps",
        "5",
        "--batch",
        "16",
        "--threads",
        "1",
        "--no-eval",
        "--out",
        s(&run),
    ]));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["hib"]["data"]["shape"], serde_json::json!([3, 12, 20]));

    // One image of another size: refused before any run folder exists, naming the image.
    let folder = dir.path().join("mixed");
    for (class, side) in [("a", 10), ("a", 10), ("b", 10), ("b", 12)] {
        std::fs::create_dir_all(folder.join(class)).unwrap();
        let file =
            folder.join(class).join(format!("{side}-{}.png", std::fs::read_dir(folder.join(class)).unwrap().count()));
        hedge_data::images::write_png(&file, side, side, 1, &vec![0; side * side]).unwrap();
    }
    let too_many = dir.path().join("too-many");
    let err = refused(&hedge(&[
        "hib",
        "train",
        "--data",
        s(&path),
        "--unseen-classes",
        "2",
        "--group",
        "5x4",
        "--steps",
        "5",
        "--out",
        s(&too_many),
    ]));
    assert!(err.contains("5 classes per batch but the labels have only 4"), "{err}");
    assert!(!too_many.exists(), "a refused run must not leave a directory behind");

    let bad_run = dir.path().join("bad");
    let err = refused(&hedge(&["hib", "train", "--data", s(&folder), "--steps", "5", "--out", s(&bad_run)]));
    assert!(err.contains("12-1.png") && err.contains("one size"), "{err}");
    assert!(!bad_run.exists(), "a refused run must not leave a directory behind");
}

/// The first `rows` complete rows of Adult's training file as the CSV a user would export.
fn adult_csv(dir: &Path, rows: usize) -> PathBuf {
    let raw = std::fs::read_to_string(hedge_data::data_dir().unwrap().join("adult/adult.data")).unwrap();
    let complete = raw
        .lines()
        .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>())
        .filter(|cells| cells.len() == 15 && !cells.contains(&"?"));
    let header = "age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,sex,\
                  capital_gain,capital_loss,hours_per_week,native_country,income";
    write_csv(dir, "adult.csv", header, complete.take(rows))
}

#[test]
fn a_concept_agnostic_sweep_audits_a_protected_column_of_a_user_table() {
    let dir = tempfile::tempdir().unwrap();
    let csv = adult_csv(dir.path(), 3000);
    let out = dir.path().join("sweep");
    let args = |protected: &str, out: &Path| {
        [
            "agnostic",
            "sweep",
            "--data",
            s(&csv),
            "--target",
            "income",
            "--protected",
            protected,
            "--alphas",
            "0",
            "--repeats",
            "1",
            "--steps",
            "100",
            "--probe-steps",
            "100",
            "--threads",
            "1",
            "--out",
            s(out),
        ]
        .map(str::to_string)
    };
    ok(&Command::new(env!("CARGO_BIN_EXE_hedge")).args(args("sex", &out)).output().unwrap());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["dataset"], "table");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    // 3,000 rows, 30 % held out; sex is out of the inputs (100 one-hot and numeric inputs remain
    // in the full file, fewer categories here).
    assert_eq!((config["data"]["train_rows"].as_u64(), config["data"]["test_rows"].as_u64()), (Some(2100), Some(900)));
    let line = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    let audit: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let accuracy = audit["accuracy"].as_f64().unwrap();
    // Adult's majority class is ~75 %; a network that learnt nothing sits there.
    assert!(accuracy > 0.78, "income accuracy {accuracy}");
    common::assert_nulls_explained(&out);

    let err =
        refused(&Command::new(env!("CARGO_BIN_EXE_hedge")).args(args("race", &dir.path().join("r"))).output().unwrap());
    assert!(err.contains("'race' has 5 text values") && err.contains("exactly two"), "{err}");
    assert!(!dir.path().join("r").exists());
}
