//! The generated tables of the READMEs are written from their result files by `hedge report`
//! (`results/<area>/report/`) and copied in by `scripts/docs.py` (blocks between
//! `<!-- include:PATH:begin -->` and `<!-- include:PATH:end -->`);
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
    an_edit_inside_the_block_fails_the_check("README.md", "include:results/hib/report/open-set.md");
}

#[test]
fn a_number_edited_by_hand_in_a_generated_active_learning_table_fails_the_check() {
    an_edit_inside_the_block_fails_the_check("results/active/README.md", "include:results/active/report/final-rmse.md");
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

/// `--check` on a copy of the repository's Markdown file `rel` holding `body`, outside the
/// repository and held to `rel`'s count of numbers by hand.
fn check_copy_as(rel: &str, body: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(Path::new(rel).file_name().unwrap());
    std::fs::write(&copy, body).unwrap();
    Command::new("python3")
        .arg(root().join("scripts/docs.py"))
        .args(["--check", "--as", rel, "--file"])
        .arg(&copy)
        .output()
        .expect("python3 runs scripts/docs.py")
}

/// `sentence` added to the prose of `rel` (before its first line starting with `before`) makes
/// the check fail with one number by hand more than the file's count; the unedited copy passes.
fn one_more_number_fails(rel: &str, before: &str, sentence: &str) {
    let text = std::fs::read_to_string(root().join(rel)).unwrap();
    let o = check_copy_as(rel, &text);
    assert!(o.status.success(), "{rel} holds its count: {}", String::from_utf8_lossy(&o.stderr));
    let at = text.find(&format!("\n{before}")).unwrap_or_else(|| panic!("{rel} has a line starting '{before}'")) + 1;
    let edited = format!("{}{sentence}\n\n{}", &text[..at], &text[at..]);
    let o = check_copy_as(rel, &edited);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("numbers by hand") && e.contains("1 more"), "{sentence}: {e}");
}

/// Hole 1 of issue 81: a number equal to a setting of a result folder (a learning rate in a
/// config.json) is still written by hand, and goes stale as the setting changes.
#[test]
fn a_setting_copied_into_the_prose_is_a_number_by_hand() {
    let configs = std::fs::read_to_string(root().join("results/hib/recipe.toml")).unwrap();
    assert!(configs.contains("learning_rate = 0.01"), "the recipe this test quotes");
    one_more_number_fails("README.md", "## Layout", "The recipe trains at a learning rate of 0.01.");
}

/// Hole 2: a number that a generated block of the same file holds, copied into the prose, does
/// not follow the block when its result file changes.
#[test]
fn a_generated_number_copied_into_the_prose_is_a_number_by_hand() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let begin = text
        .find("<!-- include:results/hib/report/open-set.md:begin -->")
        .expect("README.md includes the open-set table");
    let cell = begin + text[begin..].find("| 0.").expect("a number in the block") + 2;
    let number: String = text[cell..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    assert!(number.len() >= 4, "{number}");
    one_more_number_fails("README.md", "## Layout", &format!("Open-set verification reaches AP {number}."));
}

/// Hole 3: a decimal with a unit.
#[test]
fn a_number_with_a_unit_is_a_number_by_hand() {
    one_more_number_fails("README.md", "## Layout", "The index is 4.6x faster than before.");
    one_more_number_fails("README.md", "## Layout", "A query takes 58 ms.");
}

/// Hole 4: integers and percentages.
#[test]
fn integers_and_percentages_are_numbers_by_hand() {
    one_more_number_fails("README.md", "## Layout", "The full reproduction takes 37 minutes.");
    one_more_number_fails("README.md", "## Layout", "KNN accuracy is 12 % below the paper.");
    one_more_number_fails("README.md", "## Layout", "The reference ran 20,000 steps.");
}

/// Hole 5: every Markdown file is checked, not only those named README.md.
#[test]
fn a_number_by_hand_in_any_markdown_file_fails_the_check() {
    one_more_number_fails("ARCHITECTURE.md", "## Where a new piece goes", "Adding a loss took 12 minutes.");
    one_more_number_fails(
        "results/hib/open-set/levers/time-to-quality-validation.md",
        "| run | metric |",
        "The baseline reached it at 7.9 minutes.",
    );
}

/// What is no measurement stays out of the count: an ordered list's numbers, numbers inside
/// words, paths and links, and citations of issues, tables and equations.
#[test]
fn list_numbers_words_paths_and_citations_are_no_numbers_by_hand() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let plain = "1. Train in bf16 on `seed0` (see [the paper](https://arxiv.org/abs/1810.00319), issue 81, \
                 Table 1 and Eq. 8; results/hib/n2-d2).\n\n## Layout";
    let o = check_copy_as("README.md", &text.replacen("## Layout", plain, 1));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// ARCHITECTURE.md's worked examples of the three extension points are the code the crates
/// compile: every Rust block of the loss, acquisition and eraser sections appears, line for
/// line (ignoring indentation; `…` stands for left-out code), in the file the section names.
#[test]
fn architecture_s_worked_examples_are_the_compiled_code() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    for (section, files) in [
        ("### A loss (HIB)", &["crates/hedge-embed/src/focal.rs", "crates/hedge-embed/src/losses.rs"][..]),
        (
            "### An acquisition function",
            &["crates/hedge-active/src/least_confidence.rs", "crates/hedge-active/src/acquisitions.rs"][..],
        ),
        (
            "### An eraser",
            &["crates/hedge-agnostic/src/mean_difference.rs", "crates/hedge-agnostic/src/erasers.rs"][..],
        ),
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

/// ARCHITECTURE.md's study plans are shipped ones: every line of its TOML examples is a line of a
/// plan under studies/.
#[test]
fn architecture_s_study_examples_are_shipped_plans() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let start = text.find("### A study").expect("ARCHITECTURE.md has '### A study'");
    let body = &text[start..];
    let body = &body[..body[4..].find("\n### ").map_or(body.len(), |e| e + 4)];
    let mut plans = String::new();
    for folder in ["studies/active", "studies/hib"] {
        for entry in std::fs::read_dir(root().join(folder)).unwrap().flatten() {
            plans.push_str(&std::fs::read_to_string(entry.path()).unwrap());
        }
    }
    let plan_lines: Vec<&str> = plans.lines().map(str::trim).collect();
    let blocks: Vec<&str> = body.split("```toml").skip(1).map(|b| &b[..b.find("```").unwrap()]).collect();
    assert_eq!(blocks.len(), 2, "a plan of steps and a HIB grid");
    for line in blocks.iter().flat_map(|b| b.lines()).map(str::trim).filter(|l| !l.is_empty()) {
        assert!(plan_lines.contains(&line), "`{line}` is in no plan under studies/");
    }
}
