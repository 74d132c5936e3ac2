//! `hedge study`: the shipped plans check as the commands they run and match the committed
//! runs' own command lines, and a real study continues after it is given again.

use std::path::{Path, PathBuf};

use hedge_lab::study::{lists_steps, PlanFile, STEPS_LOG};

use crate::common::{hedge, ok, refused, s};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every plan file under studies/.
fn plans() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![repository().join("studies")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Every shipped plan, a plan of steps or a HIB grid, parses as the commands it runs (each step
/// through the command line's own parser, as `hedge study` checks it before the first step).
#[test]
fn every_shipped_plan_checks_as_the_commands_it_runs() {
    let mut with_steps = 0;
    for plan in plans() {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hedge"))
            .args(["study", s(&plan), "--dry-run"])
            .current_dir(repository())
            .output()
            .unwrap();
        let text = ok(&out);
        if lists_steps(&plan).unwrap() {
            let study = PlanFile::from_toml_file(&plan).unwrap().resolve(&plan).unwrap();
            for step in &study.steps {
                assert!(text.contains(&format!("| {} |", step.name)), "{}: {text}", plan.display());
            }
            with_steps += 1;
        } else {
            // A HIB grid: each run with its settings.
            assert!(text.contains("\n  {\"model\":"), "{}: {text}", plan.display());
        }
    }
    assert!(with_steps >= 8, "{with_steps} plans of steps");
}

/// A command line's flags as (flag, value) pairs, sorted, without those that say where and how
/// fast it ran rather than what (`--out`, `--threads`, `--overwrite`, `--continue`).
fn what_it_runs(args: &[String]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].clone();
        let value = args.get(i + 1).filter(|v| !v.starts_with("--")).cloned();
        i += 1 + usize::from(value.is_some());
        if !["--out", "--threads", "--overwrite", "--continue"].contains(&flag.as_str()) {
            pairs.push((flag, value.unwrap_or_default()));
        }
    }
    pairs.sort();
    pairs
}

/// Where a plan's step writes a run that is committed, the step is the command that run
/// recorded: the bash loops these plans replace ran exactly what they now say.
#[test]
fn every_step_of_a_committed_run_is_the_command_it_recorded() {
    let root = repository();
    let mut compared = 0;
    for plan in plans().into_iter().filter(|p| lists_steps(p).unwrap()) {
        for step in PlanFile::from_toml_file(&plan).unwrap().resolve(&plan).unwrap().steps {
            let Some(at) = step.args.iter().position(|a| a == "--out") else { continue };
            // An experiment's config.json records its command; a reproduction written before
            // the engine, its summary.json.
            // A study that trains under runs/ commits copies of its runs (its collect step).
            let out = &step.args[at + 1];
            let folder = match out.strip_prefix("runs/side-by-side/") {
                Some(run) => root.join("results/hib/side-by-side/runs").join(run),
                None => root.join(out),
            };
            let Some((config, text)) = ["config.json", "summary.json"]
                .iter()
                .find_map(|name| std::fs::read_to_string(folder.join(name)).ok().map(|t| (folder.join(name), t)))
            else {
                continue;
            };
            let recorded: serde_json::Value = serde_json::from_str(&text).unwrap();
            let Some(command) = recorded["command"].as_str() else { continue };
            let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
            let flags_from = words.iter().position(|w| w.starts_with("--")).unwrap_or(words.len());
            assert_eq!(
                words[1..flags_from],
                step.command[..],
                "{}: step {} runs another command than {}",
                plan.display(),
                step.name,
                config.display()
            );
            assert_eq!(
                what_it_runs(&step.args),
                what_it_runs(&words[flags_from..]),
                "{}: step {} differs from {}",
                plan.display(),
                step.name,
                config.display()
            );
            compared += 1;
        }
    }
    assert!(compared >= 80, "only {compared} steps compared with committed runs");
}

/// A real study (MNIST images exported as folders, a grid of two splits, then one checked in a
/// process of its own with its output in a file, then an export whose folder is there already)
/// runs every step that has work to do, records each step's own
/// command line, and given again runs nothing twice; a step with a flag its command does not
/// take is refused before any step runs.
#[test]
fn a_study_runs_its_steps_once_and_refuses_a_bad_step_before_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let images = tmp.path().join("images");
    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        format!(
            "out = {log:?}\n[[steps]]\nname = \"fine\"\nrun = \"data export-images\"\nflags = {{ out = {images:?} }}\n[[steps]]\nname = \"typo\"\nrun = \"data export-images\"\nflags = {{ per-clas = 3, out = \"x\" }}\n",
            log = s(&tmp.path().join("bad-log")),
            images = s(&tmp.path().join("never")),
        ),
    )
    .unwrap();
    let e = refused(&hedge(&["study", s(&bad)]));
    assert!(e.contains("study step typo") && e.contains("--per-clas"), "{e}");
    assert!(!tmp.path().join("never").exists() && !tmp.path().join("bad-log").exists());

    let two_steps = tmp.path().join("two.toml");
    std::fs::write(
        &two_steps,
        format!(
            "out = {log:?}\n[[steps]]\nname = \"export-{{split}}\"\nrun = \"data export-images\"\ngrid = {{ split = [\"train\", \"test\"] }}\nflags = {{ dataset = \"mnist\", split = \"{{split}}\", per-class = 3, classes = \"0,1\", out = \"{images}-{{split}}\" }}\n",
            log = s(&tmp.path().join("log")),
            images = s(&images),
        ),
    )
    .unwrap();
    // A third step in a process of its own: its environment, its standard output to a file.
    let checked = tmp.path().join("checked.txt");
    let mut plan = std::fs::read_to_string(&two_steps).unwrap();
    plan.push_str(&format!(
        "[[steps]]\nname = \"check\"\nrun = \"data check\"\nargs = [\"{images}-test\"]\nenv = {{ OMP_NUM_THREADS = \"1\" }}\nstdout = {checked:?}\n",
        images = s(&images),
        checked = s(&checked),
    ));
    // A fourth that prepares what is there already: not run (an export into a folder that holds
    // images would be refused).
    plan.push_str(&format!(
        "[[steps]]\nname = \"export-again\"\nrun = \"data export-images\"\ncreates = \"{images}-test\"\nflags = {{ dataset = \"mnist\", out = \"{images}-test\" }}\n",
        images = s(&images),
    ));
    std::fs::write(&two_steps, plan).unwrap();
    let first = ok(&hedge(&["study", s(&two_steps)]));
    let check = std::fs::read_to_string(&checked).unwrap();
    assert!(check.contains("6 images of 28 x 28 pixels") && check.contains("2 classes"), "{check}");
    assert!(first.contains("| export-train |") && first.contains("| export-test |"), "{first}");
    let exported = std::fs::read_dir(format!("{}-test", s(&images))).unwrap().count();
    assert!(exported >= 2, "{exported} class folders");
    // Given again: both steps are logged as finished, so neither runs (an export into its own
    // folder again would be refused).
    let again = ok(&hedge(&["study", s(&two_steps)]));
    assert!(!again.contains("waiting"), "{again}");
    let log = std::fs::read_to_string(tmp.path().join("log").join(STEPS_LOG)).unwrap();
    assert_eq!(log.lines().count(), 4, "{log}");
    assert!(log.contains("data export-images --classes 0,1 --dataset mnist --out"), "{log}");
}
