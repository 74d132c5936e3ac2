//! The hostile-input regression suite: each case is a command a hostile or careless user ran
//! against hedge that once panicked, aborted, took the machine's memory or printed a libtorch
//! stack trace. Each must now end with exit code 1 and a message naming the flag (or file) and a
//! value that works, before any work starts (every case here returns in well under a second of
//! work; none trains).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

use common::s;

/// `hedge args` with the environment `env` added.
fn hedge_with(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hedge"));
    command
        .args(args)
        .env("OMP_WAIT_POLICY", "passive")
        .env_remove("HEDGE_MEMORY_BUDGET")
        .env_remove("HEDGE_WORK_BOUND");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("hedge runs")
}

/// Refused with exit code 1 and a message (no panic, abort or C++ trace); returns the message.
fn refused_cleanly(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "exit code 1 expected (101 is a panic, 134 an abort): {err}");
    for trace in ["panicked", "Exception raised from", "frame #", "libc10", "RUST_BACKTRACE"] {
        assert!(!err.contains(trace), "no '{trace}' in a refusal: {err}");
    }
    err
}

/// A command over the memory budget: refused naming `flag`, with the largest value that fits.
fn over_budget(args: &[&str], flag: &str) {
    let err = refused_cleanly(&hedge_with(&[], args));
    assert!(err.contains("memory budget") && err.contains(flag), "{args:?}: {err}");
    assert!(err.contains("Largest values that fit") || err.contains("None of these numbers"), "{args:?}: {err}");
}

/// A committed training run (config and weights) for the commands that read one.
fn committed_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/hib/instance-levers/b-cosine-seed0")
}

#[test]
fn sizes_a_user_types_are_checked_against_the_memory_budget_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = s(&out);
    let run = committed_run();
    let run = s(&run);
    // α values x repeats (an 8 TB allocation, rc 134, before).
    over_budget(&["agnostic", "sweep", "--dataset", "adult", "--alphas", "0:1:1e-12", "--out", o], "--alphas");
    over_budget(&["agnostic", "sweep", "--dataset", "adult", "--repeats", "1000000000000", "--out", o], "--repeats");
    // A training step: the batch (a 20 GB convolution), samples, a wide mixture head.
    over_budget(&["hib", "train", "--batch", "100000", "--steps", "1", "--out", o], "--batch (pairs)");
    over_budget(&["hib", "train", "--batch", "4000000", "--samples", "1", "--steps", "1", "--out", o], "--batch");
    over_budget(&["hib", "train", "--group", "100000x100000", "--steps", "1", "--out", o], "--group CLASSES");
    over_budget(
        &["hib", "train", "--dim", "4096", "--model", "mog", "--components", "16", "--samples", "16", "--out", o],
        "--dim",
    );
    let toml = tmp.path().join("wide.toml");
    std::fs::write(&toml, "channels = [100000, 100000]\n").unwrap();
    over_budget(&["hib", "train", "--config", s(&toml), "--steps", "1", "--out", o], "channels[1]");
    // Monte-Carlo samples of embedding and evaluation.
    over_budget(
        &["hib", "embed", "--run", run, "--samples", "100000000", "--out", s(&tmp.path().join("e.npz"))],
        "--samples",
    );
    over_budget(&["hib", "eval", "--run", run, "--samples", "100000000"], "--samples");
    // The ANN stage and the re-rank.
    let gallery = tmp.path().join("gallery");
    over_budget(
        &["hib", "index", "--run", run, "--gallery", s(&gallery), "--ef-construction", "1000000000000", "--out", o],
        "--ef-construction",
    );
    over_budget(
        &["hib", "index", "--run", run, "--gallery", s(&gallery), "--ef-search", "1000000000000", "--out", o],
        "--ef-search",
    );
    over_budget(
        &["hib", "index", "--run", run, "--gallery", s(&gallery), "--candidates", "1000000000000000", "--out", o],
        "--candidates",
    );
    // Active learning, the Bayesian toolbox and the benchmark.
    over_budget(
        &["active", "run", "--dataset", "uci/yacht", "--method", "acs-fw", "--projections", "1000000000", "--out", o],
        "--projections",
    );
    over_budget(&["bayes", "gibbs", "--samples", "1000000000000"], "--samples");
    over_budget(&["bayes", "gibbs", "--chains", "1000000000000"], "--chains");
    over_budget(&["bayes", "spike-slab", "--d", "1000000000"], "--d");
    over_budget(&["bench", "acs-fw", "--pool", "1000000000000"], "--pool");
    // Each of these once ended in a panic (rc 101) or an abort (rc 134).
    over_budget(&["active", "classify", "--projections", "10000000", "--out", o], "--projections");
    over_budget(&["active", "classify", "--samples", "1000000000000", "--out", o], "--samples");
    over_budget(&["agnostic", "sweep", "--dataset", "adult", "--bottleneck", "100000000", "--out", o], "--bottleneck");
    for flag in ["--points", "--queries", "--dims"] {
        over_budget(&["bench", "search", flag, "1000000000000"], flag);
    }
    // The number that is too large is the one named: 1e12 candidates, not the samples.
    over_budget(&["hib", "eval", "--run", run, "--candidates", "1000000000000"], "the others unchanged: --candidates");
    assert!(!out.exists(), "no refused command left a folder behind");
    // The budget is the user's to set: a tiny one refuses the default spike-slab run, naming it.
    let err = refused_cleanly(&hedge_with(&[("HEDGE_MEMORY_BUDGET", "1KB")], &["bayes", "spike-slab"]));
    assert!(err.contains("HEDGE_MEMORY_BUDGET=1KB") && err.contains("--d"), "{err}");
    let err = refused_cleanly(&hedge_with(&[("HEDGE_MEMORY_BUDGET", "lots")], &["bayes", "spike-slab"]));
    assert!(err.contains("HEDGE_MEMORY_BUDGET") && err.contains("16GiB"), "{err}");
}

/// A command over the work bound: refused naming `flag`, with the largest value that fits.
fn over_work_bound(args: &[&str], flag: &str) {
    let err = refused_cleanly(&hedge_with(&[], args));
    assert!(err.contains("work bound") && err.contains(flag), "{args:?}: {err}");
    assert!(err.contains("Largest values that fit"), "{args:?}: {err}");
}

/// Loop counts that once ran until killed (or, for the seeds of a reproduction, aborted) are
/// refused before the first iteration by the work bound; the bound is the user's to raise.
#[test]
fn loop_counts_a_user_types_are_checked_against_the_work_bound_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = s(&out);
    let run = committed_run();
    let run = s(&run);
    over_work_bound(&["active", "run", "--dataset", "uci/yacht", "--ensemble", "1000000000", "--out", o], "--ensemble");
    over_work_bound(&["active", "run", "--dataset", "uci/yacht", "--ensemble", "1000000", "--out", o], "--ensemble");
    over_work_bound(&["hib", "eval", "--run", run, "--repeats", "1000000000000"], "--repeats");
    // Before the model is loaded, so before the minutes of embedding the test images: weights
    // that do not exist would be the refusal if the repeats were checked after loading.
    let missing = tmp.path().join("no-such-weights.safetensors");
    over_work_bound(
        &["hib", "eval", "--run", run, "--weights", s(&missing), "--repeats", "1000000000000"],
        "--repeats",
    );
    over_work_bound(&["hib", "reproduce", "--seeds", "1000000000000", "--out", o], "--seeds");
    over_work_bound(&["bayes", "gibbs", "--thin", "100000000000"], "--thin");
    over_work_bound(&["bayes", "gibbs", "--burn-in", "1000000000000"], "--burn-in");
    over_work_bound(&["bayes", "gp", "--dataset", "uci/yacht", "--restarts", "100000000", "--out", o], "restarts");
    assert!(!out.exists(), "no refused command left a folder behind");
    // A bound the user set is the one applied, and named.
    let err = refused_cleanly(&hedge_with(
        &[("HEDGE_WORK_BOUND", "1s")],
        &["bayes", "gibbs", "--burn-in", "1000000000", "--samples", "4"],
    ));
    assert!(err.contains("HEDGE_WORK_BOUND=1s") && err.contains("--burn-in"), "{err}");
    let err = refused_cleanly(&hedge_with(&[("HEDGE_WORK_BOUND", "soon")], &["bayes", "gibbs"]));
    assert!(err.contains("HEDGE_WORK_BOUND") && err.contains("12h"), "{err}");
    // An untrained probe's accuracy is not a measurement: zero probe steps are refused up front.
    let err = refused_cleanly(&hedge_with(
        &[],
        &["agnostic", "sweep", "--dataset", "adult", "--probe-steps", "0", "--out", o],
    ));
    assert!(err.contains("probe_steps") && err.contains("--probe-steps"), "{err}");
    // More images per class than a class holds: refused before a single PNG is written.
    let err = refused_cleanly(&hedge_with(&[], &["data", "export-images", "--per-class", "1000000000000", "--out", o]));
    assert!(err.contains("--per-class") && err.contains("6000 images"), "{err}");
    assert!(!out.exists(), "the refused export wrote nothing");
}

/// A PNG of `side` x `side` pixels (grey) by its header, with a small compressed body.
fn png_claiming(side: u32) -> Vec<u8> {
    fn chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
        let mut out = (data.len() as u32).to_be_bytes().to_vec();
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
        out
    }
    let mut header = side.to_be_bytes().to_vec();
    header.extend_from_slice(&side.to_be_bytes());
    header.extend_from_slice(&[8, 0, 0, 0, 0]);
    // The header is read up to the first IDAT chunk; its bytes are never decompressed.
    let idat = [0u8; 16];
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(chunk(b"IHDR", &header));
    png.extend(chunk(b"IDAT", &idat));
    png.extend(chunk(b"IEND", &[]));
    png
}

/// CRC-32 (IEEE), as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn image_headers_and_empty_files_are_refused_before_decoding() {
    let tmp = tempfile::tempdir().unwrap();
    // `printf '123456789' | python3 -c "import sys,zlib; print(hex(zlib.crc32(sys.stdin.buffer.read())))"`
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    let folder = |name: &str, bytes: &[u8]| {
        let root = tmp.path().join(name);
        for class in ["a", "b"] {
            std::fs::create_dir_all(root.join(class)).unwrap();
            for i in 0..2 {
                std::fs::write(root.join(class).join(format!("{i}.png")), bytes).unwrap();
            }
        }
        root
    };
    let huge = folder("huge", &png_claiming(100_000));
    let empty = folder("empty", b"");
    let run = committed_run();
    let out = tmp.path().join("out");
    let cases: [&[&str]; 3] = [
        &["data", "check", s(&huge)],
        &["hib", "train", "--data", s(&huge), "--steps", "1", "--out", s(&out)],
        &["hib", "index", "--run", s(&run), "--gallery", s(&huge), "--out", s(&out)],
    ];
    for args in cases {
        let err = refused_cleanly(&hedge_with(&[], args));
        assert!(err.contains("0.png") && err.contains("100000 x 100000") && err.contains("resize"), "{args:?}: {err}");
    }
    // A 0-byte .png is named as an empty PNG, not "not a valid JPEG".
    let err = refused_cleanly(&hedge_with(&[], &["data", "check", s(&empty)]));
    assert!(err.contains("PNG signature") && err.contains("0 bytes") && !err.contains("JPEG file"), "{err}");
    assert!(!out.exists());
}

#[test]
fn eval_refuses_fewer_candidates_than_its_neighbours_instead_of_raising_them() {
    let run = committed_run();
    let err = refused_cleanly(&hedge_with(&[], &["hib", "eval", "--run", s(&run), "--candidates", "0"]));
    assert!(err.contains("candidates") && err.contains("at least 5"), "{err}");
}

#[test]
fn errors_name_the_real_cause_and_failed_starts_leave_no_stub() {
    let tmp = tempfile::tempdir().unwrap();
    let t = |name: &str| tmp.path().join(name);
    // --out naming a file, or a link to nothing: "not a folder", not "File exists".
    std::fs::write(t("file"), b"mine").unwrap();
    std::os::unix::fs::symlink("/nonexistent-target", t("dangling")).unwrap();
    for out in [t("file"), t("dangling")] {
        let err = refused_cleanly(&hedge_with(&[], &["hib", "train", "--steps", "1", "--out", s(&out)]));
        assert!(err.contains("is not a folder") && err.contains("--out"), "{err}");
    }
    assert_eq!(std::fs::read(t("file")).unwrap(), b"mine");
    // An offset no sigmoid survives is refused by name, not reported as a divergence.
    std::fs::write(t("b.toml"), "init_b = 1e308\n").unwrap();
    let err = refused_cleanly(&hedge_with(&[], &["hib", "train", "--config", s(&t("b.toml")), "--out", s(&t("b"))]));
    assert!(err.contains("init_b") && err.contains("±100") && !err.contains("--lr"), "{err}");
    // --resume on a folder that is not a run says so, without suggesting to overwrite it.
    let err = refused_cleanly(&hedge_with(&[], &["hib", "train", "--resume", s(tmp.path())]));
    assert!(err.contains("not a hedge run") && !err.contains("--overwrite"), "{err}");
    // A data file that is a folder is named as one, not as missing.
    let data = t("data");
    std::fs::create_dir_all(data.join("mnist/train-images-idx3-ubyte")).unwrap();
    let err = refused_cleanly(&hedge_with(&[("HEDGE_DATA_DIR", s(&data))], &["hib", "train", "--out", s(&t("r"))]));
    assert!(err.contains("train-images-idx3-ubyte") && err.contains("is a folder"), "{err}");
    // --top-k past the budget names --top-k (it used to blame --candidates).
    let run = committed_run();
    let err = refused_cleanly(&hedge_with(
        &[],
        &[
            "hib",
            "index",
            "--run",
            s(&run),
            "--gallery",
            s(&t("g")),
            "--top-k",
            "1000000000000000",
            "--out",
            s(&t("i")),
        ],
    ));
    assert!(err.contains("--top-k") && err.contains("memory budget"), "{err}");
    // A learning rate that makes the fit diverge: named as such, and no config.json stub is left
    // to block a rerun.
    let out = t("lr");
    let err = refused_cleanly(&hedge_with(
        &[],
        &[
            "active",
            "run",
            "--dataset",
            "uci/yacht",
            "--lr",
            "1e30",
            "--method",
            "random",
            "--seeds",
            "1",
            "--out",
            s(&out),
        ],
    ));
    assert!(err.contains("diverged") && err.contains("--lr") && !err.contains("cholesky"), "{err}");
    assert!(!out.exists(), "no stub folder");
    // Targets near 1e200: refused as the table is read, before a NaN could reach rounds.jsonl
    // (it used to be written as null, which the run could not read back), naming the column
    // and the magnitude.
    let mut csv = String::from("x1,x2,y\n");
    for i in 0..200 {
        let (a, b) = ((i * 37 % 101) as f64 / 101.0, (i * 53 % 97) as f64 / 97.0);
        csv.push_str(&format!("{a},{b},{:e}\n", (a + 2.0 * b + 0.1) * 1e200));
    }
    std::fs::write(t("huge.csv"), csv).unwrap();
    let out = t("huge");
    let huge = t("huge.csv");
    let args = ["active", "run", "--data", s(&huge), "--target", "y", "--method", "random", "--seeds", "1"];
    let err = refused_cleanly(&hedge_with(&[], &[&args[..], &["--out", s(&out)]].concat()));
    assert!(err.contains("column 'y'") && err.contains("e200") && err.contains("so large"), "{err}");
    assert!(err.contains("rescale") && !err.contains("lower --lr"), "{err}");
    assert!(!out.exists(), "no stub folder");
    // A constant target, which every regression command refuses, is refused by `data check` too.
    std::fs::write(t("constant.csv"), "x,y\n1,5\n2,5\n3,5\n4,5\n").unwrap();
    let err = refused_cleanly(&hedge_with(&[], &["data", "check", s(&t("constant.csv")), "--target", "y"]));
    assert!(err.contains("'y' is 5 in every row"), "{err}");
    // Every command that reads the table names the cause the same way: a huge but finite
    // value, its column, where it is and how large (`data check` first of all).
    for args in
        [&["bayes", "gp", "--data", s(&huge), "--target", "y"][..], &["data", "check", s(&huge), "--target", "y"]]
    {
        let err = refused_cleanly(&hedge_with(&[], args));
        assert!(err.contains("column 'y'") && err.contains("e200") && err.contains("so large"), "{args:?}: {err}");
        assert!(err.contains("rescale") && !err.contains("non-finite"), "{args:?}: {err}");
    }
}

/// Every command that writes a folder, pointed at a folder of the user's with `--overwrite` where
/// it has the flag: refused before any work, and the user's files are left as they were.
#[test]
fn no_command_replaces_a_folder_hedge_did_not_make() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    // Names hedge's own commands write, so a careless overwrite would hit them.
    let files = ["notes.txt", "summary.json", "table.md", "pareto.md", "maps.md", "config.json"];
    for f in files {
        std::fs::write(mine.join(f), format!("the user's {f}")).unwrap();
    }
    let m = s(&mine);
    let run = committed_run();
    let sweep = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/agnostic/adult");
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/hib/recipe.toml");
    let commands: Vec<Vec<&str>> = vec![
        vec!["hib", "train", "--steps", "1", "--overwrite", "--out", m],
        vec!["hib", "search", "--index", s(&run), "--probe", s(&run), "--overwrite", "--out", m],
        vec!["hib", "reproduce", "--overwrite", "--out", m],
        vec!["agnostic", "sweep", "--dataset", "adult", "--overwrite", "--out", m],
        vec!["agnostic", "exp1", "--overwrite", "--out", m],
        vec!["agnostic", "pareto", "--sweeps", s(&sweep), "--overwrite", "--out", m],
        vec!["active", "run", "--dataset", "uci/yacht", "--overwrite", "--out", m],
        vec!["active", "classify", "--overwrite", "--out", m],
        vec!["bayes", "gp", "--dataset", "uci/yacht", "--overwrite", "--out", m],
        vec!["bayes", "gp-suite", "--datasets", "yacht", "--out", m],
        vec!["bayes", "gibbs", "--overwrite", "--out", m],
        vec!["bayes", "spike-slab", "--overwrite", "--out", m],
        vec!["bench", "acs-fw", "--pool", "100", "--overwrite", "--export", m],
        vec!["bench", "search", "--out", m],
        vec!["bench", "recipe", "--config", s(&recipe), "--out", m],
        vec!["data", "export-images", "--dataset", "fashion-mnist", "--per-class", "2", "--out", m],
    ];
    // Single files: an existing file of the user's is never replaced, with or without --overwrite.
    let file = mine.join("notes.txt");
    let f = s(&file);
    let commands: Vec<Vec<&str>> = commands
        .into_iter()
        .chain([
            vec!["hib", "embed", "--run", s(&run), "--overwrite", "--out", f],
            vec!["bench", "search", "--points", "100", "--out", f],
        ])
        .collect();
    for args in commands {
        let err = refused_cleanly(&hedge_with(&[], &args));
        let named = ["did not make", "already holds", "not a file", "not empty", "already exists"]
            .iter()
            .any(|w| err.contains(w));
        assert!(named, "{args:?}: {err}");
        for f in files {
            let kept = std::fs::read_to_string(mine.join(f)).unwrap();
            assert_eq!(kept, format!("the user's {f}"), "{args:?} changed {f}");
        }
        let extra: Vec<_> = std::fs::read_dir(&mine).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(extra.len(), files.len(), "{args:?} added files: {extra:?}");
    }
}

/// One command per folder: `--overwrite` into a folder another command made is refused (its
/// files, and the marker saying what it is, stay as they were); into a folder the same command
/// made, it replaces that command's files (an ACS-FW export over an earlier export, once refused
/// because exports wrote no marker).
#[test]
fn no_command_overwrites_a_folder_another_command_made() {
    let tmp = tempfile::tempdir().unwrap();
    let gibbs = tmp.path().join("gibbs");
    let export = tmp.path().join("export");
    let index = tmp.path().join("index");
    let ok = |args: &[&str]| {
        let o = hedge_with(&[], args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    ok(&["bayes", "gibbs", "--samples", "200", "--burn-in", "50", "--out", s(&gibbs)]);
    // A small ACS-FW benchmark that exports (once, then over its own export).
    let small_export = ["bench", "acs-fw", "--pool", "100", "--projections", "10", "--batch", "5", "--repeats", "1"];
    ok(&[&small_export[..], &["--export", s(&export)]].concat());
    // An index folder as `hib index` marks it (building one needs a trained run).
    hedge_run::prepare_output_dir(&index, hedge_identify::INDEX_KIND, false).unwrap();
    std::fs::write(index.join("index.json"), "{}").unwrap();
    let snapshot = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        files
    };
    let before = [snapshot(&gibbs), snapshot(&export), snapshot(&index)];
    let run = committed_run();
    let (g, x, i) = (s(&gibbs), s(&export), s(&index));
    let crossings: Vec<(Vec<&str>, &str)> = vec![
        (vec!["hib", "train", "--steps", "1", "--overwrite", "--out", g], "Gibbs sampler demo"),
        (vec!["active", "run", "--dataset", "uci/yacht", "--overwrite", "--out", g], "Gibbs sampler demo"),
        (vec!["agnostic", "sweep", "--dataset", "adult", "--overwrite", "--out", x], "ACS-FW benchmark export"),
        (vec!["bayes", "gp", "--dataset", "uci/yacht", "--overwrite", "--out", x], "ACS-FW benchmark export"),
        (vec!["bayes", "spike-slab", "--overwrite", "--out", g], "Gibbs sampler demo"),
        (vec!["hib", "search", "--index", i, "--probe", s(&run), "--overwrite", "--out", i], "hib index"),
        (vec!["bench", "acs-fw", "--pool", "100", "--overwrite", "--export", g], "Gibbs sampler demo"),
    ];
    for (args, theirs) in crossings {
        let err = refused_cleanly(&hedge_with(&[], &args));
        assert!(err.contains(&format!("of kind '{theirs}'")) && err.contains("another --out"), "{args:?}: {err}");
    }
    assert_eq!(before, [snapshot(&gibbs), snapshot(&export), snapshot(&index)], "a refusal changes nothing");
    // The same command replaces its own folder.
    ok(&[&small_export[..], &["--overwrite", "--export", x]].concat());
    ok(&["bayes", "gibbs", "--samples", "200", "--burn-in", "50", "--overwrite", "--out", g]);
}
