//! The `hedge` binary end to end: errors users see, a tiny training, resume, embed, bench.

use std::path::Path;
use std::process::{Command, Output};

use hedge_data::{read_npz, NpyData};

use crate::common;

fn hedge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hedge")).args(args).output().expect("hedge runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `--device` is parsed once, by the argument parser: an unknown device is refused with the
/// names it takes before anything is read, in every command that has the flag.
#[test]
fn an_unknown_device_is_refused_with_the_names_it_takes() {
    let dir = tempfile::tempdir().unwrap();
    let out = s(dir.path());
    for args in [
        vec!["hib", "train", "--steps", "1", "--out", out],
        vec!["hib", "eval", "--run", out],
        vec!["hib", "reproduce", "--out", out],
        vec!["hib", "index", "--run", out, "--gallery", out, "--out", out],
        vec!["bench", "train"],
    ] {
        let mut args = args.clone();
        args.extend(["--device", "tpu"]);
        let o = hedge(&args);
        let e = stderr(&o);
        assert!(!o.status.success() && !e.contains("panicked"), "{args:?}: {e}");
        assert!(e.contains("--device") && e.contains("use cpu, cuda, cuda:N or auto"), "{args:?}: {e}");
    }
}

#[test]
fn impossible_hyper_parameters_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = hedge(&["hib", "train", "--digits", "5", "--out", s(&out)]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("'digits'"), "{}", stderr(&o));
    let o = hedge(&["hib", "train", "--model", "gaussian", "--loss", "contrastive", "--out", s(&out)]);
    assert!(stderr(&o).contains("point embeddings"), "{}", stderr(&o));
    assert!(!out.exists(), "a refused run must not leave a directory behind");
}

/// Issue 17: these sizes crashed the process (a panic inside libtorch, the out-of-memory killer,
/// a stack overflow); each is now refused with its limit and no run directory is left.
#[test]
fn sizes_past_their_limits_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    for (args, expected) in [
        (vec!["--model", "gaussian", "--dim", "100000000"], "at most 4096"),
        (vec!["--model", "mog", "--components", "100000", "--samples", "100000"], "at most 256"),
        (vec!["--model", "gaussian", "--samples", "100000"], "memory budget"),
        (vec!["--threads", "100000"], "over the limit of 256"),
    ] {
        let mut all = vec!["hib", "train", "--out", s(&out)];
        all.extend(args);
        let o = hedge(&all);
        assert!(!o.status.success() && stderr(&o).contains(expected), "{all:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        assert!(!out.exists(), "a refused run must not leave a directory behind");
    }
}

#[test]
fn an_existing_run_directory_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
    let o = hedge(&["hib", "train", "--steps", "1", "--out", s(dir.path())]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(), "mine");
}

#[test]
fn a_missing_data_directory_says_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_hedge"))
        .args(["hib", "train", "--steps", "1", "--no-eval", "--out", s(&dir.path().join("r"))])
        .env("HEDGE_DATA_DIR", "/nonexistent/hedge-data")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("/nonexistent/hedge-data") && e.contains("HEDGE_DATA_DIR"), "{e}");
}

/// HEDGE_CONV_PRECISION decides what `auto` means on any CPU (bf16 on one without native bf16
/// runs slowly, but runs), an explicit `--precision` wins over it, and a value it does not take
/// is refused by the variable's name before a run folder exists. The two paths really compute
/// differently: the same seed's two steps end on other weights.
#[test]
fn the_environment_forces_either_convolution_precision_on_any_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let train = |name: &str, forced: Option<&str>, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hedge"));
        cmd.args(["hib", "train", "--steps", "2", "--batch", "8", "--no-eval", "--out", s(&out)]).args(extra);
        cmd.env("OMP_WAIT_POLICY", "passive").env_remove(hedge_embed::config::CONV_PRECISION_ENV);
        if let Some(value) = forced {
            cmd.env(hedge_embed::config::CONV_PRECISION_ENV, value);
        }
        (cmd.output().unwrap(), out)
    };
    let recorded = |out: &Path| -> String {
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
        config["hib"]["conv_precision"].as_str().unwrap().to_string()
    };
    let mut weights = Vec::new();
    for (name, forced, extra, want) in [
        ("bf16", Some("bf16"), &[][..], "bf16"),
        ("f32", Some("f32"), &[][..], "f32"),
        ("explicit", Some("bf16"), &["--precision", "f32"][..], "f32"),
    ] {
        let (o, out) = train(name, forced, extra);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(recorded(&out), want, "{name}");
        weights.push(std::fs::read(out.join("model.safetensors")).unwrap());
    }
    assert_ne!(weights[0], weights[1], "bf16 and f32 convolutions give the same weights: one path was not taken");
    assert_eq!(weights[1], weights[2], "an explicit f32 is the f32 path");
    let (o, out) = train("unset", None, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let hardware = serde_json::to_value(hedge_embed::ConvPrecision::for_hardware(tch::Device::Cpu)).unwrap();
    assert_eq!(recorded(&out), hardware, "unset: the hardware's choice");
    let (o, out) = train("bad", Some("fp8"), &[]);
    let e = stderr(&o);
    assert!(!o.status.success() && !e.contains("panicked"), "{e}");
    assert!(e.contains("HEDGE_CONV_PRECISION") && e.contains("f32, bf16 or auto"), "{e}");
    assert!(!out.exists(), "a refused run must not leave a directory behind");
}

#[test]
fn train_resume_and_embed_write_loadable_artefacts() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let o = hedge(&[
        "hib",
        "train",
        "--steps",
        "3",
        "--batch",
        "8",
        "--model",
        "mog",
        "--keep-every",
        "3",
        "--no-eval",
        "--out",
        s(&run),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["config.json", "metrics.jsonl", "model.safetensors", "optimizer.safetensors", "state.json"] {
        assert!(run.join(f).is_file(), "{f} missing");
    }
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["hib"]["model"], "mog");
    assert_eq!(config["hib"]["batch_pairs"], 8);
    assert_ne!(config["hib"]["conv_precision"], "auto", "the resolved precision is recorded");

    let o = hedge(&["hib", "train", "--resume", s(&run), "--steps", "5", "--no-eval"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["step"], 5);

    // The default protocol is the paper's: its test split holds the 100 training classes'
    // 10,000 test images; the open-set protocol's splits are refused with the protocol named.
    assert_eq!(config["hib"]["protocol"], "instance");
    let npz = dir.path().join("emb.npz");
    let o = hedge(&["hib", "embed", "--run", s(&run), "--split", "test_unseen", "--out", s(&npz)]);
    assert!(
        !o.status.success() && stderr(&o).contains("instance protocol has the splits train, test"),
        "{}",
        stderr(&o)
    );
    assert!(!npz.exists());
    // test_seen is a second test set of the instance protocol (the number tables' seen classes).
    let o = hedge(&[
        "hib",
        "eval",
        "--run",
        s(&run),
        "--split",
        "test_seen",
        "--per-class",
        "6",
        "--repeats",
        "1",
        "--metrics",
        "verification_ap",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((report["split"].as_str(), report["data_protocol"].as_str()), (Some("test_seen"), Some("instance")));
    let o = hedge(&["hib", "embed", "--run", s(&run), "--variant", "corrupt", "--out", s(&npz)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let arrays = read_npz(&npz).unwrap();
    let get = |n: &str| arrays.iter().find(|(k, _)| k == n).map(|(_, a)| a.clone()).unwrap();
    assert_eq!(get("mean").shape, vec![10_000, 2, 2]);
    assert_eq!(get("variance").shape, vec![10_000, 2, 2]);
    assert_eq!(get("weights").shape, vec![10_000, 2]);
    let NpyData::F32(eta) = get("eta").data else { panic!("eta is float32") };
    assert!(eta.iter().all(|e| (0.0..=1.0).contains(e)));
    let NpyData::F32(var) = get("variance").data else { panic!("variance is float32") };
    assert!(var.iter().all(|v| *v > 0.0));
    // --overwrite replaces an embedding hedge wrote, never another file.
    let o = hedge(&["hib", "embed", "--run", s(&run), "--overwrite", "--out", s(&npz)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mine = dir.path().join("mine.npz");
    std::fs::write(&mine, b"my own archive").unwrap();
    let o = hedge(&["hib", "embed", "--run", s(&run), "--overwrite", "--out", s(&mine)]);
    assert!(!o.status.success() && stderr(&o).contains("not a file this command writes"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&mine).unwrap(), b"my own archive");

    // --weights embeds with another file of the same model: the run's own final weights give
    // the same arrays as no flag, the copy kept at step 3 (two steps before the end) others.
    let means = |npz: &Path| {
        let arrays = read_npz(npz).unwrap();
        let (_, a) = arrays.into_iter().find(|(k, _)| k == "mean").unwrap();
        let NpyData::F32(m) = a.data else { panic!("mean is float32") };
        m
    };
    let clean = dir.path().join("clean.npz");
    let own = dir.path().join("own.npz");
    let kept = dir.path().join("kept.npz");
    common::ok(&hedge(&["hib", "embed", "--run", s(&run), "--out", s(&clean)]));
    let final_weights = run.join("model.safetensors");
    common::ok(&hedge(&["hib", "embed", "--run", s(&run), "--weights", s(&final_weights), "--out", s(&own)]));
    let step3 = run.join("checkpoints").join("model-0000003.safetensors");
    common::ok(&hedge(&["hib", "embed", "--run", s(&run), "--weights", s(&step3), "--out", s(&kept)]));
    assert_eq!(means(&clean), means(&own));
    assert_ne!(means(&clean), means(&kept));
    // Weights of another model are refused with the file named, before anything is written.
    let other = dir.path().join("other");
    common::ok(&hedge(&[
        "hib",
        "train",
        "--steps",
        "1",
        "--batch",
        "8",
        "--model",
        "point",
        "--no-eval",
        "--out",
        s(&other),
    ]));
    let wrong = dir.path().join("wrong.npz");
    let o = hedge(&[
        "hib",
        "embed",
        "--run",
        s(&run),
        "--weights",
        s(&other.join("model.safetensors")),
        "--out",
        s(&wrong),
    ]);
    let e = common::refused(&o);
    assert!(e.contains("model.safetensors") && e.contains("--weights"), "{e}");
    assert!(!wrong.exists());
}

/// `hib train --continue` is one command a study script repeats: it starts the run, then
/// continues it with the run's own settings (a differing flag is named in a warning, not
/// applied), and --steps is the new total.
#[test]
fn continue_starts_a_run_then_continues_it_with_its_own_settings() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let state = |run: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap()
    };
    let o = hedge(&["hib", "train", "--steps", "3", "--batch", "8", "--no-eval", "--out", s(&run), "--continue"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(state(&run)["step"], 3);
    let started = std::fs::read_to_string(run.join("config.json")).unwrap();
    let o = hedge(&["hib", "train", "--steps", "5", "--lr", "0.01", "--no-eval", "--out", s(&run), "--continue"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(state(&run)["step"], 5);
    let warning = stderr(&o);
    assert!(warning.contains("not applied: learning_rate = 0.01 (the run's: 0.001)"), "{warning}");
    // Only the flags that differ are named: the batch, given again, is the run's own.
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    let first: serde_json::Value = serde_json::from_str(&started).unwrap();
    assert_eq!(
        (config["hib"]["learning_rate"].as_f64(), config["hib"]["batch_pairs"].as_u64()),
        (Some(0.001), Some(8))
    );
    assert_eq!(config["hib"]["model"], first["hib"]["model"]);
    let o = hedge(&["hib", "train", "--steps", "5", "--batch", "8", "--no-eval", "--out", s(&run), "--continue"]);
    assert!(o.status.success() && !stderr(&o).contains("not applied"), "{}", stderr(&o));
    assert_eq!(state(&run)["step"], 5);
    // --continue never replaces a run: it and --overwrite are refused together.
    let o = hedge(&["hib", "train", "--steps", "5", "--out", s(&run), "--continue", "--overwrite"]);
    assert!(!o.status.success() && stderr(&o).contains("--overwrite"), "{}", stderr(&o));
}

#[test]
fn bench_prints_both_throughputs_as_json() {
    let o = hedge(&["bench", "train", "--json", "--steps", "2", "--warmup", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["train_images_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["infer_images_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_toml_config_is_read_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("hib.toml");
    std::fs::write(&cfg, "dim = 3\nmodel = \"point\"\nsteps = 2\nbatch_pairs = 4\nseed = 1\n").unwrap();
    let run = dir.path().join("run");
    let o = hedge(&["hib", "train", "--config", s(&cfg), "--seed", "7", "--no-eval", "--out", s(&run)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["hib"]["dim"], 3);
    assert_eq!(config["hib"]["model"], "point");
    assert_eq!(config["hib"]["seed"], 7);
    assert_eq!(std::fs::read_to_string(run.join("metrics.jsonl")).unwrap().lines().count(), 1);

    std::fs::write(&cfg, "dims = 3\n").unwrap();
    let o = hedge(&["hib", "train", "--config", s(&cfg), "--out", s(&dir.path().join("r2"))]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("hib.toml") && e.contains("dims"), "{e}");
}

#[test]
fn eval_writes_every_documented_key() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let o = hedge(&["hib", "train", "--model", "point", "--steps", "3", "--batch", "8", "--no-eval", "--out", s(&run)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The first 10 test images of each class (all 10,000 took a minute of the suite): a quick
    // look goes to stdout only, never into the run's eval.json.
    let o = hedge(&["hib", "eval", "--run", s(&run), "--json", "--per-class", "10"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!run.join("eval.json").exists(), "a subset evaluation replaced the run's eval.json");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["images_per_class"], 10);
    for key in ["verification_ap", "knn_accuracy", "knn_plurality"] {
        for variant in ["clean", "corrupt"] {
            let x = v[key][variant].as_f64().unwrap_or_else(|| panic!("{key}.{variant} missing"));
            assert!((0.0..=1.0).contains(&x), "{key}.{variant} = {x}");
        }
    }
    let mixed = v["verification_ap"]["clean_vs_corrupt"].as_f64().expect("verification_ap.clean_vs_corrupt");
    assert!((0.0..=1.0).contains(&mixed), "clean-vs-corrupt AP {mixed}");
    // A point embedding has no uncertainty: its correlations are null, not invented.
    assert!(v["tau_ap"]["clean"].is_null() && v["tau_knn"]["corrupt_std"].is_null());
    assert!((0.0..=1.0).contains(&v["ece"].as_f64().unwrap()));
    // No η either: its risk-coverage curve rejects by the nearest-neighbour distance, and says so.
    assert_eq!(v["aurc_uncertainty"], "nearest_neighbour_distance");
    assert!((0.0..=1.0).contains(&v["aurc"].as_f64().expect("aurc for a point model")));
    assert_eq!(v["gallery_probe"].as_array().unwrap().len(), 4);
    // ... and the report says why they are null.
    let why: Vec<hedge_run::undefined::Undefined> = serde_json::from_value(v["undefined"].clone()).unwrap();
    assert!(why.iter().any(|u| u.fields.contains(&"tau_ap.clean".to_string()) && u.why.contains("point embedding")));
    let report = dir.path().join("report");
    std::fs::create_dir(&report).unwrap();
    std::fs::write(report.join("eval.json"), &o.stdout).unwrap();
    common::assert_nulls_explained(&report);
    // Fewer images than the KNN rule needs are refused before anything is loaded.
    let o = hedge(&["hib", "eval", "--run", s(&run), "--per-class", "3"]);
    assert!(!o.status.success() && stderr(&o).contains("per-class"), "{}", stderr(&o));
}

/// `--set KEY=VALUE` reaches any setting by its config.json name, a number as a number and a
/// word as a word; a misspelt name is refused by its spelling, and a setting given by its own flag
/// and by `--set` is refused, before anything trains.
#[test]
fn set_reaches_any_setting_by_name_and_refuses_a_typo_or_a_second_value() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let args = ["hib", "train", "--steps", "2", "--batch", "4", "--no-eval", "--out", s(&run)];
    let o = hedge(&[&args[..], &["--set", "init_a=2.5", "--set", "lr_schedule=cosine"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    assert_eq!((config["hib"]["init_a"].as_f64(), config["hib"]["lr_schedule"].as_str()), (Some(2.5), Some("cosine")));
    let o = hedge(&[&args[..], &["--set", "init_aa=2", "--overwrite"]].concat());
    assert!(!o.status.success() && stderr(&o).contains("unknown field `init_aa`"), "{}", stderr(&o));
    let o = hedge(&[&args[..], &["--set", "loss=csd", "--loss", "soft", "--overwrite"]].concat());
    assert!(!o.status.success() && stderr(&o).contains("a flag of its own gives it too"), "{}", stderr(&o));
}

/// A model trained with PCME++'s CSD loss is evaluated by its own closed form whatever
/// `--match-estimator` says: the report names `csd`, one deterministic repeat, and η follows
/// σ(−a·CSD(x, x) + b), the same for every repeat.
#[test]
fn a_csd_model_is_evaluated_by_its_closed_form() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let o = hedge(&["hib", "train", "--loss", "csd", "--steps", "3", "--batch", "8", "--no-eval", "--out", s(&run)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["hib"]["loss"], "csd");
    let o = hedge(&["hib", "eval", "--run", s(&run), "--json", "--per-class", "10", "--repeats", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["match_estimator"]["kind"], "csd", "{}", v["match_estimator"]);
    assert_eq!(v["repeats"], 1, "a closed form needs no repeats");
    for key in ["verification_ap", "knn_accuracy"] {
        let x = v[key]["clean"].as_f64().unwrap_or_else(|| panic!("{key}.clean missing"));
        assert!((0.0..=1.0).contains(&x), "{key}.clean = {x}");
    }
    // CSD cannot score every pair of a grouped batch (only sampled pairs).
    let o = hedge(&[
        "hib",
        "train",
        "--loss",
        "csd",
        "--group",
        "4x2",
        "--all-pairs",
        "--steps",
        "1",
        "--out",
        s(&dir.path().join("all")),
    ]);
    assert!(!o.status.success() && stderr(&o).contains("pair_set"), "{}", stderr(&o));
}

/// `--validation-digits unused` is recorded in the run's config, and `hib eval --split
/// validation` scores the held-out images with the run's digits (or, named, the other ones),
/// saying which in the report.
#[test]
fn validation_images_with_new_digits_are_recorded_and_evaluated() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let train = [
        "hib",
        "train",
        "--model",
        "point",
        "--steps",
        "3",
        "--batch",
        "8",
        "--no-eval",
        "--validation-fraction",
        "0.05",
        "--validation-digits",
        "unused",
        "--out",
        s(&run),
    ];
    let o = hedge(&train);
    assert!(o.status.success(), "{}", stderr(&o));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["hib"]["validation_digits"], "unused");
    let quick = ["hib", "eval", "--run", s(&run), "--split", "validation", "--per-class", "10", "--json"];
    for (extra, digits) in [(None, "unused"), (Some("shared"), "shared")] {
        let mut args = quick.to_vec();
        args.extend(extra.iter().flat_map(|d| ["--validation-digits", d]));
        let o = hedge(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((v["split"].as_str(), v["validation_digits"].as_str()), (Some("validation"), Some(digits)));
        assert!((0.0..=1.0).contains(&v["verification_ap"]["clean"].as_f64().unwrap()));
    }
    // The digits of validation images mean nothing for a test split, and a run without held-out
    // images has none to redraw: both refused by name.
    let o = hedge(&["hib", "eval", "--run", s(&run), "--validation-digits", "shared", "--per-class", "10"]);
    assert!(!o.status.success() && stderr(&o).contains("--split validation"), "{}", stderr(&o));
    let plain = dir.path().join("plain");
    let o =
        hedge(&["hib", "train", "--model", "point", "--steps", "1", "--batch", "8", "--no-eval", "--out", s(&plain)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = hedge(&["hib", "eval", "--run", s(&plain), "--split", "validation", "--per-class", "10"]);
    assert!(!o.status.success() && stderr(&o).contains("holds no images out"), "{}", stderr(&o));
}

/// `--weight-decay`, `--dropout` and `--hidden-units` are recorded in the run's config (a resumed
/// run reads them back from there), and values that would wipe the weights out in one step or
/// drop every feature are refused by name, leaving no run behind.
#[test]
fn weight_decay_dropout_and_hidden_units_are_recorded_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let train = |decay: &str, dropout: &str, out: &std::path::Path| {
        let o = hedge(&[
            "hib",
            "train",
            "--model",
            "point",
            "--steps",
            "2",
            "--batch",
            "8",
            "--no-eval",
            "--lr",
            "0.01",
            "--weight-decay",
            decay,
            "--dropout",
            dropout,
            "--hidden-units",
            "8",
            "--out",
            s(out),
        ]);
        (o.status.success(), stderr(&o))
    };
    let (ok, err) = train("1e-4", "0.5", &run);
    assert!(ok, "{err}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["hib"]["weight_decay"].as_f64(), Some(1e-4));
    assert_eq!(config["hib"]["dropout"].as_f64(), Some(0.5));
    assert_eq!(config["hib"]["hidden_units"].as_u64(), Some(8));
    let refused = dir.path().join("refused");
    for (decay, dropout, expected) in [("100", "0", "below 1"), ("0", "1", "dropout")] {
        let (ok, err) = train(decay, dropout, &refused);
        assert!(!ok && err.contains(expected), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!refused.exists(), "a refused run must not leave a directory behind");
    }
}

/// A tiny reproduction (2 steps a model, 1 repeat): the tables, summary.json in the documented
/// shape with the paper's values beside ours, figures, and reuse of finished runs. (Tables 5 and
/// Appendix B are formatted by unit tests; with `--beta-sweep --appendix-b` this run passed too,
/// but takes minutes.) The evaluation keeps the first 10 test images of each class: every
/// image took 5.5 minutes of the suite's time on 2 cores, this 1,000 seconds.
#[test]
fn reproduce_smoke_run_writes_tables_summary_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("n2-d2");
    let args = [
        "hib",
        "reproduce",
        "--steps",
        "2",
        "--repeats",
        "1",
        "--group",
        "4x4",
        "--appendix-g",
        "--eval-per-class",
        "10",
        "--out",
        s(&out),
    ];
    let o = hedge(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["steps"], 2);
    // The subset is recorded in the summary, every run's eval.json and the table's caption.
    assert_eq!(summary["eval_images_per_class"], 10);
    let eval: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("runs/mog1-seed0/eval.json")).unwrap()).unwrap();
    assert_eq!(eval["images_per_class"], 10);
    assert!(summary["command"].as_str().unwrap().contains("reproduce"));
    for model in ["point", "mog1", "mog2"] {
        for key in ["verification_ap", "knn_accuracy"] {
            for variant in ["clean", "corrupt"] {
                let x = summary["models"][model][key][variant].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&x), "{model}.{key}.{variant} = {x}");
                assert!(summary["paper"][model][key][variant].is_number());
            }
        }
    }
    // Table 1 of the paper, N = 2, D = 2: point AP clean 0.987, MoG-2 KNN corrupt 0.757.
    assert_eq!(summary["paper"]["point"]["verification_ap"]["clean"], 0.987);
    assert_eq!(summary["paper"]["mog2"]["knn_accuracy"]["corrupt"], 0.757);
    // (Its KNN correlation needs two η bins with different KNN scores: after 2 steps and 10
    // images a class, every bin may score 0, and the summary then says why it is null.)
    assert!(summary["models"]["mog1"]["tau_ap"]["clean"].is_number());
    assert!(summary["models"]["point"]["tau_knn"]["clean"].is_null(), "no η for a point embedding");
    // The paper's protocol by default: one test split, all 100 classes, named in the summary.
    assert_eq!(summary["protocol"], "instance");
    assert_eq!(summary["split"], "test");
    assert!(summary.get("other_split").is_none());
    // One seed: no spread to report.
    assert!(summary["models"]["mog1"]["verification_ap"]["clean_std"].is_null());
    let table1 = std::fs::read_to_string(out.join("table1.md")).unwrap();
    // Both KNN readings: the probe kept in the gallery (the headline) and leave-one-out.
    assert!(table1.contains("(0.987)") && table1.contains("| KNN accuracy, corrupt, leave-one-out |"), "{table1}");
    assert!(table1.contains("| KNN accuracy, corrupt (probe kept in the gallery) |"), "{table1}");
    assert!(summary["models"]["point"]["knn_kept"]["clean"].is_number(), "{summary}");
    assert!(table1.contains(", test, first 10 images of each class only") && !table1.contains("test_seen"), "{table1}");
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("Protocol: `instance`"), "{readme}");
    // Appendix G with the paper's numbers (Table 6, N = 2, D = 2: point clean/clean 0.882).
    let table6 = std::fs::read_to_string(out.join("table6.md")).unwrap();
    assert!(table6.contains("(0.882)"), "{table6}");
    for f in ["table2.md", "table6.md", "table7.md", "README.md", "embeddings_mog2.png", "uncertainty_bins_mog1.png"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // The same command again continues the reproduction in its folder (a study gives it again
    // after an interruption): finished, it trains nothing and reports the same numbers.
    let o = hedge(&args);
    assert!(o.status.success() && !stderr(&o).contains("training "), "{}", stderr(&o));
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(again["models"], summary["models"]);
    // Other settings in that folder are refused: it holds another reproduction.
    let mut other = args.to_vec();
    other[3] = "3";
    let o = hedge(&other);
    assert!(!o.status.success() && stderr(&o).contains("--overwrite"), "{}", stderr(&o));
    // --resume of a finished reproduction trains nothing and rebuilds the same summary from
    // its log (the wall-clock is the runs' own training and evaluation time, not this call's).
    let o = hedge(&["hib", "reproduce", "--resume", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(again, summary);
    // A new reproduction over it (--overwrite) reads the finished runs back instead of
    // training again: the same numbers.
    let mut overwrite = args.to_vec();
    overwrite.push("--overwrite");
    let o = hedge(&overwrite);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("reusing") && !stderr(&o).contains("training "), "{}", stderr(&o));
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(again["models"], summary["models"]);
    assert_eq!(again["seconds"], summary["seconds"]);
    // Another subset is evaluated again, not read back.
    let mut more = overwrite.clone();
    more[10] = "12";
    let o = hedge(&more);
    assert!(o.status.success(), "{}", stderr(&o));
    let eval: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("runs/mog1-seed0/eval.json")).unwrap()).unwrap();
    assert_eq!(eval["images_per_class"], 12);
    common::assert_nulls_explained(&out);
}
