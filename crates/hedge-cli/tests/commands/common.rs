//! Checks and helpers shared by the command-line tests.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the `hedge` binary under test.
pub fn hedge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hedge")).args(args).env("OMP_WAIT_POLICY", "passive").output().expect("hedge runs")
}

/// The command succeeded: its standard output.
pub fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command was refused with an error, not a panic: its standard error.
pub fn refused(o: &Output) -> String {
    assert!(!o.status.success(), "expected a refusal; stdout: {}", String::from_utf8_lossy(&o.stdout));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "a refusal, not a panic: {err}");
    err
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Files that record what was asked for, not what was measured: a `null` there is an option
/// left unset.
const INPUT_FILES: [&str; 6] =
    ["config.json", "sealed-config.json", "plan.json", "progress.json", "state.json", "manifest.json"];

/// Every `null` a command wrote into a result file under `dir` (JSON or JSON lines, recursively)
/// is named, with its reason, in that file's own `undefined` list: no number is silently missing.
pub fn assert_nulls_explained(dir: &Path) {
    let mut checked = 0;
    for entry in walk(dir) {
        let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let lines = name.ends_with(".jsonl");
        if INPUT_FILES.contains(&name.as_str()) || !(lines || name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(&entry).unwrap();
        let values: Vec<serde_json::Value> = if lines {
            text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
        } else {
            vec![serde_json::from_str(&text).unwrap()]
        };
        for v in values {
            let missing = hedge_run::undefined::unexplained_nulls(&v);
            assert!(missing.is_empty(), "{}: null without a reason at {missing:?}", entry.display());
        }
        checked += 1;
    }
    assert!(checked > 0, "no result file under {}", dir.display());
}

/// Every file under `dir`.
pub fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
