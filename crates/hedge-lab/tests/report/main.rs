//! The fragments READMEs include (`results/<area>/report/`) against the result files that hold
//! their numbers.

use std::path::{Path, PathBuf};

use hedge_lab::report::{fragments, stale, write, Results};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// Every committed fragment is what its result files give now: a result that changed without
/// `hedge report`, or a number edited by hand in a fragment, fails here.
#[test]
fn the_committed_fragments_are_what_the_result_files_give() {
    let root = root();
    let all = fragments(&Results::new(&root)).expect("every fragment's result files read");
    assert!(all.len() >= 29, "{} fragments", all.len());
    let changed = stale(&root, &all);
    assert!(changed.is_empty(), "stale fragments (run `hedge report`): {changed:?}");
}

/// A number edited by hand in a fragment is found, and `write` puts back what the result files
/// give, touching no other fragment.
#[test]
fn a_number_edited_by_hand_in_a_fragment_is_found_and_rewritten() {
    let all = fragments(&Results::new(&root())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(write(dir.path(), &all).unwrap().len(), all.len(), "a new folder gets every fragment");
    assert!(stale(dir.path(), &all).is_empty());
    let gp = all.iter().find(|f| f.path.ends_with("bayes/report/gp.md")).expect("the GP table");
    let file = dir.path().join(&gp.path);
    let text = std::fs::read_to_string(&file).unwrap();
    let cell = text.find("| yacht |").expect("the yacht row");
    let digit = cell + text[cell..].find(|c: char| c.is_ascii_digit()).unwrap();
    let mut edited = text.clone().into_bytes();
    edited[digit] = if edited[digit] == b'9' { b'8' } else { edited[digit] + 1 };
    std::fs::write(&file, &edited).unwrap();
    assert_eq!(stale(dir.path(), &all), vec![gp.path.clone()]);
    assert_eq!(write(dir.path(), &all).unwrap(), vec![gp.path.clone()]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

/// The GP table's yacht row states what `results/bayes/gp-split0/summary.json` holds (values
/// read with Python's json module: `rmse` 0.284474…, `nll` 0.002564…, 277 training and 31
/// test rows).
#[test]
fn the_gp_table_states_the_suite_s_numbers() {
    let all = fragments(&Results::new(&root())).unwrap();
    let gp = all.iter().find(|f| f.path.ends_with("bayes/report/gp.md")).unwrap();
    let row = gp.text.lines().find(|l| l.starts_with("| yacht |")).expect("the yacht row");
    assert!(row.starts_with("| yacht | exact | 277 / 31 | 0.284 | 0.003 |"), "{row}");
}
