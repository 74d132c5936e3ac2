//! The generated tables of the READMEs are written from their result files by `scripts/docs.py`
//! (blocks between `<!-- FAMILY:NAME:begin -->` and `<!-- FAMILY:NAME:end -->`);
//! `scripts/test.sh` runs its `--check`. These tests check that the check can fail: a number
//! edited by hand in a generated table is caught, a number added by hand to the prose is caught,
//! and the committed files pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(file: Option<&Path>) -> Output {
    let mut command = Command::new("python3");
    command.arg(root().join("scripts/docs.py")).arg("--check");
    if let Some(f) = file {
        command.arg("--file").arg(f);
    }
    command.output().expect("python3 runs scripts/docs.py")
}

/// `--check` on a copy of README.md holding `body`, outside the repository and held to
/// README.md's count of numbers by hand.
fn check_readme_copy(body: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("README.md");
    std::fs::write(&copy, body).unwrap();
    Command::new("python3")
        .arg(root().join("scripts/docs.py"))
        .args(["--check", "--as", "README.md", "--file"])
        .arg(&copy)
        .output()
        .expect("python3 runs scripts/docs.py")
}

#[test]
fn the_committed_readmes_state_what_their_result_files_give() {
    let o = check(None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Edits the first number after `| 0.` or `| 1.` inside `marker`'s block of `file` (the first
/// digit after the point becomes another) and checks that `--check` fails on the edited copy and
/// passes on the unedited one, from any path, without rewriting either.
fn an_edit_inside_the_block_fails_the_check(file: &str, marker: &str) {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let begin =
        text.find(&format!("<!-- {marker}:begin -->")).unwrap_or_else(|| panic!("{file} has the {marker} block"));
    let end = text.find(&format!("<!-- {marker}:end -->")).unwrap();
    let cell = text[begin..end].find("| 0.").or_else(|| text[begin..end].find("| 1.")).expect("a number in the block");
    let digit = begin + cell + "| 0.".len();
    let replacement = if &text[digit..digit + 1] == "8" { "7" } else { "8" };
    let edited = format!("{}{replacement}{}", &text[..digit], &text[digit + 1..]);
    assert_ne!(edited, text);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("README.md");
    std::fs::write(&copy, &edited).unwrap();
    let o = check(Some(&copy));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("no longer give") && e.contains("README.md"), "{e}");
    // The check never rewrites what it checks.
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), edited);
    // The unedited text passes from any path.
    std::fs::write(&copy, &text).unwrap();
    assert!(check(Some(&copy)).status.success());
}

#[test]
fn a_number_edited_by_hand_in_a_generated_hib_table_fails_the_check() {
    an_edit_inside_the_block_fails_the_check("README.md", "hib:open-set");
}

#[test]
fn a_number_edited_by_hand_in_a_generated_active_learning_table_fails_the_check() {
    an_edit_inside_the_block_fails_the_check("results/active/README.md", "active:final-rmse");
}

#[test]
fn a_number_edited_by_hand_in_an_included_table_fails_the_check() {
    an_edit_inside_the_block_fails_the_check(
        "results/agnostic/README.md",
        "include:results/agnostic/context-mnist/table.md",
    );
}

#[test]
fn a_table_of_numbers_outside_every_generated_block_fails_the_check_unless_marked_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("README.md");
    let table = "| run | RMSE |\n|---|---|\n| a | 1.234 |\n";
    std::fs::write(&copy, format!("# Results\n\n{table}")).unwrap();
    let o = check(Some(&copy));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("outside generated blocks") && e.contains("| run | RMSE |"), "{e}");
    // A table of settings that no result file holds passes once it says so.
    std::fs::write(&copy, format!("# Results\n\n<!-- hand: settings -->\n{table}")).unwrap();
    let o = check(Some(&copy));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A number added by hand to the prose of README.md (outside every generated block, no setting
/// of a result folder) fails the check: the file then states one more number by hand than
/// `scripts/prose-baseline.json` allows. The unedited copy, held to the same count, passes.
#[test]
fn a_number_added_by_hand_to_the_prose_fails_the_check() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(check_readme_copy(&text).status.success(), "the committed README.md holds its count");
    let edited = text.replacen("## Layout", "The quickstart reaches AP 0.937 on a laptop.\n\n## Layout", 1);
    assert_ne!(edited, text);
    let o = check_readme_copy(&edited);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("numbers by hand") && e.contains("1 more"), "{e}");
}

/// A citation is no measurement: a paper's section or table and a software version in the prose
/// leave the count of numbers by hand as it is, while a measured value beside them still fails.
#[test]
fn a_citation_in_the_prose_is_no_number_by_hand() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let cited = "As in Section 4.1 and Appendix B.2 of the paper, built on tch 0.26 and Ray 2.60.\n\n## Layout";
    let edited = text.replacen("## Layout", cited, 1);
    assert_ne!(edited, text);
    let o = check_readme_copy(&edited);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let measured = text.replacen("## Layout", &cited.replace("2.60.", "2.60, at AP 0.937."), 1);
    let o = check_readme_copy(&measured);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("numbers by hand"), "{e}");
}

/// ARCHITECTURE.md's worked examples of the three extension points are the code the crates
/// compile: every Rust block of the loss, acquisition and eraser sections appears, line for
/// line (ignoring indentation; `…` stands for left-out code), in the file the section names.
#[test]
fn architecture_s_worked_examples_are_the_compiled_code() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    for (section, files) in [
        ("### A loss (HIB)", &["crates/hedge-embed/src/focal.rs", "crates/hedge-embed/src/pair_loss.rs"][..]),
        (
            "### An acquisition function",
            &["crates/hedge-active/src/least_confidence.rs", "crates/hedge-active/src/acquire.rs"][..],
        ),
        ("### An eraser", &["crates/hedge-agnostic/src/mean_difference.rs", "crates/hedge-agnostic/src/eraser.rs"][..]),
    ] {
        let start = text.find(section).unwrap_or_else(|| panic!("ARCHITECTURE.md has no '{section}'"));
        let body = &text[start + section.len()..];
        let body = &body[..body.find("\n### ").unwrap_or(body.len())];
        let sources: String = files.iter().map(|f| std::fs::read_to_string(root().join(f)).unwrap()).collect();
        let source_lines: Vec<&str> = sources.lines().map(str::trim).collect();
        let blocks: Vec<&str> = body.split("```rust").skip(1).map(|b| &b[..b.find("```").unwrap()]).collect();
        assert_eq!(blocks.len(), 2, "{section}: the example and its registration line");
        for line in blocks.iter().flat_map(|b| b.lines()).map(str::trim) {
            if line.is_empty() || line.contains('…') {
                continue;
            }
            assert!(source_lines.contains(&line), "{section}: `{line}` is not in {files:?}");
        }
    }
}
