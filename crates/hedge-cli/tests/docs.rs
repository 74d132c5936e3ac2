//! The HIB numbers of the READMEs are written from their result files by
//! `scripts/hib-readme.py` (blocks between `<!-- hib:NAME:begin -->` and `<!-- hib:NAME:end -->`);
//! `scripts/test.sh` runs its `--check`. These tests check that the check can fail: a number
//! edited by hand in a generated table is caught, and the committed files pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(file: Option<&Path>) -> Output {
    let mut command = Command::new("python3");
    command.arg(root().join("scripts/hib-readme.py")).arg("--check");
    if let Some(f) = file {
        command.arg("--file").arg(f);
    }
    command.output().expect("python3 runs scripts/hib-readme.py")
}

#[test]
fn the_committed_readmes_state_what_their_result_files_give() {
    let o = check(None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_number_edited_by_hand_in_a_generated_table_fails_the_check() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let begin = readme.find("<!-- hib:open-set:begin -->").expect("README.md has the open-set block");
    let end = readme.find("<!-- hib:open-set:end -->").unwrap();
    // The first "0.9" inside the block, e.g. the AP of a table row, becomes "0.8".
    let nine = begin + readme[begin..end].find("| 0.9").expect("a number in the block") + "| 0.".len();
    let edited = format!("{}8{}", &readme[..nine], &readme[nine + 1..]);
    assert_ne!(edited, readme);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("README.md");
    std::fs::write(&copy, &edited).unwrap();
    let o = check(Some(&copy));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("no longer give") && e.contains("README.md"), "{e}");
    // The check never rewrites what it checks.
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), edited);
    // The unedited text passes from any path.
    std::fs::write(&copy, &readme).unwrap();
    assert!(check(Some(&copy)).status.success());
}
