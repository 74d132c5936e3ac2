//! A study: hedge commands of any pillar (HIB trainings and reproductions, agnostic sweeps and
//! fronts, active-learning experiments, evaluations, index and search steps), run in order on
//! hedge's one engine ([`hedge_run::Experiment`]) from a plan file, `hedge study PLAN.toml`. The
//! study's folder holds the resolved plan (`config.json`), one line per finished step
//! (`steps.jsonl`) and `table.md`; the same command given again after any interruption
//! continues at the first unfinished step, and that step continues itself (an experiment from
//! its own checkpoint), so no step tests for files.
//!
//! A plan is TOML: the study's folder, flags every step of a command shares, then the steps,
//! each a command with its flags (a flag `true` is given bare, `false` left out, a list given
//! once per value), and optionally a grid whose every combination is a step, its values
//! written into the name and the flags where they name it in braces:
//!
//! ```toml
//! about = "Kernel erasure against the probe ladder"   # optional: shown by --dry-run
//! out = "results/agnostic/kernel-front/study"         # the study's folder (or --out)
//! [defaults."agnostic sweep"]                          # every `agnostic sweep` step
//! alphas = "1"
//! repeats = 3
//! [[steps]]
//! name = "ctx-kernel-r{rounds}"                        # unique: steps ctx-kernel-r1, …-r2
//! run = "agnostic sweep"
//! grid = { rounds = [1, 2] }
//! flags = { dataset = "context-mnist", removal = "kernel", eraser-param = ["rounds={rounds}"], out = "results/agnostic/kernel-front/ctx-kernel-r{rounds}" }
//! ```
//!
//! What runs a step is a [`StepRunner`]: hedge's command line parses the step as the command it
//! names and calls it, so every command is a step with the flags and checks it has there. Every
//! step is checked before the first runs, so a typo in the last step costs no training.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tracing::info;

use crate::error::invalid;
use crate::{LabError, Result};
use hedge_run::{run_resumable, Experiment, RunDirectory};

/// The most steps a study runs at once (each a process of hedge with its own threads).
pub const MAX_PARALLEL: usize = 64;

/// The log of finished steps.
pub const STEPS_LOG: &str = "steps.jsonl";
/// The study's table of steps.
pub const TABLE_FILE: &str = "table.md";

/// A plan as its TOML file says it (see the module's docs).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    /// One line on what the study is for.
    #[serde(default)]
    pub about: Option<String>,
    /// The study's own folder (its plan, progress and step log), relative to the directory
    /// the command runs in.
    #[serde(default)]
    pub out: Option<PathBuf>,
    /// Flags every step of a command shares, by command (`"agnostic sweep"`); a step's own flags
    /// win.
    #[serde(default)]
    pub defaults: BTreeMap<String, toml::Table>,
    /// How many steps run at once, each in a process of its own (default 1): the steps of each
    /// `[[steps]]` entry in order, in groups of this many, a group finishing before the next
    /// starts.
    #[serde(default)]
    pub parallel: Option<usize>,
    /// The steps, in the order they run.
    #[serde(default)]
    pub steps: Vec<PlanStep>,
}

/// One `[[steps]]` entry: a command, its flags and an optional grid.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// The step's name, unique in the study; with a grid, it names every grid key in braces.
    pub name: String,
    /// The command, as typed after `hedge` (`"hib train"`, `"active run"`); or, with
    /// `program`, what the defaults of that program are filed under.
    #[serde(default)]
    pub run: String,
    /// Another program instead of hedge (a peer or a reference implementation, say
    /// `.venv/bin/python`), run with `args` and the flags.
    #[serde(default)]
    pub program: Option<String>,
    /// Words given before the flags (a program's script, a command's positional argument).
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables the step runs with (oneDNN's instruction set, say): the step then
    /// runs in a process of its own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A file the step's standard output is written to (whole, once the step has succeeded).
    #[serde(default)]
    pub stdout: Option<String>,
    /// What the step makes, for a step that prepares data: where this path exists, the step
    /// is done (a data export shared by several studies, say).
    #[serde(default)]
    pub creates: Option<String>,
    /// What a report calls the step's result (a table's row), grid values filled in.
    #[serde(default)]
    pub label: Option<String>,
    /// Values per key: the step runs once per combination (keys in sorted order, the last
    /// varying fastest), each `{key}` in its name and flags replaced by the value. A value may
    /// be a record (`{ model = "point", steps = 900 }`), whose fields `{key.model}`,
    /// `{key.steps}` vary together; a flag whose value a grid fills with nothing is left out.
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<toml::Value>>,
    /// The command's flags by their long names, without the dashes.
    #[serde(default)]
    pub flags: toml::Table,
}

/// A step as it runs: its name, the command's words and its arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StudyStep {
    pub name: String,
    /// Another program than hedge, when the step runs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The command's words (`["agnostic", "sweep"]`; none for another program).
    pub command: Vec<String>,
    /// Its arguments, flags as the command line takes them (`["--alphas", "1", "--reweigh"]`).
    pub args: Vec<String>,
    /// Environment variables it runs with (in a process of its own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where its standard output goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// Whether it runs in a process of its own even without the above (a study that runs steps
    /// at once).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub apart: bool,
    /// The `[[steps]]` entry it comes from (counted from 0): steps run at once only beside
    /// steps of the same entry.
    #[serde(default)]
    pub entry: usize,
    /// A path whose existence means the step's work is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creates: Option<String>,
    /// What a report calls its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl StudyStep {
    /// The value of flag `--name` (its last), where the step gives it.
    pub fn flag(&self, name: &str) -> Option<&str> {
        let flag = format!("--{name}");
        self.args.windows(2).rev().find(|w| w[0] == flag).map(|w| w[1].as_str())
    }

    /// The step as a user would type it from the repository root.
    pub fn command_line(&self) -> String {
        let mut words: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={}", shell_word(v))).collect();
        words.push(self.program.as_deref().map_or("./target/release/hedge".into(), shell_word));
        words.extend(self.command.iter().cloned());
        words.extend(self.args.iter().map(|a| shell_word(a)));
        if let Some(file) = &self.stdout {
            words.extend([">".into(), shell_word(file)]);
        }
        words.join(" ")
    }

    /// Whether the step needs a process of its own (another program, its own environment or
    /// its standard output in a file).
    pub fn runs_apart(&self) -> bool {
        self.apart || self.program.is_some() || !self.env.is_empty() || self.stdout.is_some()
    }
}

/// `word`, quoted for a shell when it holds anything but plain characters.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./,:=+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What runs the steps of a study: hedge's command line parses a step as the command it names
/// and calls it; tests count calls and fail on purpose.
pub trait StepRunner {
    /// Refuses a step that cannot run (an unknown command, a flag it does not take, a value it
    /// refuses), before any step of the study runs.
    fn check(&self, step: &StudyStep) -> std::result::Result<(), BoxedError>;
    /// Runs the step to its end: a step interrupted before is called again and continues
    /// itself (an experiment from its own checkpoint).
    fn run(&self, step: &StudyStep) -> std::result::Result<(), BoxedError>;
}

/// The error a [`StepRunner`] returns (its causes kept).
pub type BoxedError = Box<dyn std::error::Error + Send + Sync>;

/// The runner a study is run with, shared by its definition's load and its runs.
pub type Runner = Arc<dyn StepRunner + Send + Sync>;

/// A resolved study: its steps in order (written to `config.json`; a resumed study runs
/// exactly these).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Study {
    /// The plan file it was resolved from, as given.
    pub plan: String,
    #[serde(default)]
    pub about: Option<String>,
    /// Steps run at once, in groups of this many.
    #[serde(default = "one")]
    pub parallel: usize,
    pub steps: Vec<StudyStep>,
}

fn one() -> usize {
    1
}

/// One line of `steps.jsonl`: a finished step, and how long it took in this study (a step
/// resumed after an interruption counts its last call only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub name: String,
    pub command: String,
    pub seconds: f64,
}

/// Whether the TOML file at `path` is a plan of steps (it has `[[steps]]`) rather than a HIB
/// grid plan ([`crate::hib::study::StudyPlan`]).
pub fn lists_steps(path: &Path) -> Result<bool> {
    let text =
        std::fs::read_to_string(path).map_err(|e| invalid("plan", path.display(), format!("cannot read it: {e}")))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| invalid("plan", path.display(), format!("not TOML: {e}")))?;
    // A HIB grid plan's `steps` is a number (every run's length).
    Ok(table.get("steps").is_some_and(toml::Value::is_array))
}

impl PlanFile {
    /// Reads a plan, naming the file in every error.
    pub fn from_toml_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid("plan", path.display(), format!("cannot read it: {e}")))?;
        toml::from_str(&text).map_err(|e| invalid("plan", path.display(), format!("not a study plan: {e}")))
    }

    /// The steps in order, each grid expanded and every name checked to be unique.
    pub fn resolve(&self, plan: &Path) -> Result<Study> {
        if self.steps.is_empty() {
            return Err(invalid("plan", plan.display(), "lists no [[steps]]"));
        }
        let mut steps = Vec::new();
        for (entry, step) in self.steps.iter().enumerate() {
            let defaults = self.defaults.get(step.run.trim()).cloned().unwrap_or_default();
            for point in grid_points(&step.grid) {
                let name = fill(&step.name, &point);
                let mut flags = defaults.clone();
                flags.extend(step.flags.clone());
                let mut args: Vec<String> = step.args.iter().map(|a| fill(a, &point)).collect();
                args.extend(flags_to_args(&flags, &point).map_err(|reason| invalid("flags", &name, reason))?);
                let program = step.program.as_ref().map(|p| fill(p, &point));
                let command: Vec<String> = match program {
                    Some(_) => Vec::new(),
                    None => step.run.split_whitespace().map(str::to_string).collect(),
                };
                if command.is_empty() && program.is_none() {
                    return Err(invalid("run", &name, "names no command (for example \"hib train\") or program"));
                }
                let env = step.env.iter().map(|(k, v)| (k.clone(), fill(v, &point))).collect();
                let stdout = step.stdout.as_ref().map(|f| fill(f, &point));
                let creates = step.creates.as_ref().map(|f| fill(f, &point));
                let label = step.label.as_ref().map(|f| fill(f, &point));
                if steps.iter().any(|s: &StudyStep| s.name == name) {
                    return Err(invalid(
                        "name",
                        &name,
                        "two steps have this name: name each grid key in braces (\"run-{seed}\")",
                    ));
                }
                let apart = self.parallel.unwrap_or(1) > 1;
                steps.push(StudyStep { name, program, command, args, env, stdout, apart, entry, creates, label });
            }
        }
        for name in self.defaults.keys() {
            if !self.steps.iter().any(|s| s.run.trim() == name) {
                return Err(invalid("defaults", name, "no step runs this command: spell it as a step's `run` does"));
            }
        }
        let parallel = match self.parallel {
            Some(0) => return Err(invalid("parallel", 0, "at least one step runs at a time")),
            Some(n) if n > MAX_PARALLEL => {
                return Err(invalid("parallel", n, format!("at most {MAX_PARALLEL} steps run at once")))
            }
            other => other.unwrap_or(1),
        };
        Ok(Study { plan: plan.display().to_string(), about: self.about.clone(), parallel, steps })
    }
}

/// Every combination of the grid's values, keys in sorted order, the last varying fastest (one
/// empty combination for no grid).
fn grid_points(grid: &BTreeMap<String, Vec<toml::Value>>) -> Vec<Vec<(String, String)>> {
    let mut points = vec![Vec::new()];
    for (key, values) in grid {
        points = points
            .into_iter()
            .flat_map(|point| {
                values.iter().map(move |value| {
                    let mut point = point.clone();
                    match value {
                        // A record: its fields by `{key.field}`, varying together.
                        toml::Value::Table(fields) => point
                            .extend(fields.iter().map(|(field, value)| (format!("{key}.{field}"), value_text(value)))),
                        value => point.push((key.clone(), value_text(value))),
                    }
                    point
                })
            })
            .collect();
    }
    points
}

/// A TOML value as a command-line word (a string without its quotes).
fn value_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `text` with every `{key}` of `point` replaced by its value.
fn fill(text: &str, point: &[(String, String)]) -> String {
    point.iter().fold(text.to_string(), |text, (key, value)| text.replace(&format!("{{{key}}}"), value))
}

/// Flags as arguments: `true` bare, `false` left out, a list once per value, anything else
/// its text; grid values filled in.
fn flags_to_args(flags: &toml::Table, point: &[(String, String)]) -> std::result::Result<Vec<String>, String> {
    let mut args = Vec::new();
    for (key, value) in flags {
        let flag = format!("--{key}");
        let values = match value {
            toml::Value::Boolean(true) => {
                args.push(flag);
                continue;
            }
            toml::Value::Boolean(false) => continue,
            toml::Value::Array(values) => values.clone(),
            toml::Value::Table(_) => return Err(format!("{key} is a table: give a value or a list of values")),
            other => vec![other.clone()],
        };
        for value in &values {
            if matches!(value, toml::Value::Array(_) | toml::Value::Table(_) | toml::Value::Boolean(_)) {
                return Err(format!("{key}: a list holds plain values (strings or numbers)"));
            }
            // A value that a grid leaves empty leaves its flag out.
            let text = fill(&value_text(value), point);
            if !text.is_empty() || value_text(value).is_empty() {
                args.push(flag.clone());
                args.push(text);
            }
        }
    }
    Ok(args)
}

impl Study {
    /// Checks every step with `runner` (naming the step that fails).
    pub fn check_steps(&self, runner: &dyn StepRunner) -> Result<()> {
        for step in &self.steps {
            runner.check(step).map_err(|source| LabError::Step { name: step.name.clone(), source })?;
        }
        Ok(())
    }
}

impl Experiment for Study {
    type Data = Runner;
    type Root = Runner;
    type Summary = Vec<StepRecord>;
    type Finished = StepRecord;
    type Error = LabError;

    const KIND: &'static str = "study";
    const FILES: &'static [&'static str] = &[STEPS_LOG, TABLE_FILE];

    fn is_started_as(&self, started: &Self) -> bool {
        // The grouping is part of where a study stands (its progress counts groups).
        self.steps == started.steps && self.parallel == started.parallel
    }

    fn load(&self, root: &Runner) -> Result<Runner> {
        Ok(root.clone())
    }

    fn check(&self, runner: &Runner) -> Result<()> {
        self.check_steps(runner.as_ref())
    }

    fn continue_in(
        &self,
        dir: &RunDirectory,
        runner: &Runner,
        progress: &mut dyn FnMut(StepRecord),
    ) -> Result<Vec<StepRecord>> {
        let total = self.steps.len();
        let groups: Vec<&[StudyStep]> = self
            .steps
            .chunk_by(|a, b| a.entry == b.entry)
            .flat_map(|entry| entry.chunks(self.parallel.max(1)))
            .collect();
        let mut first = 0;
        let starts: Vec<usize> = groups
            .iter()
            .map(|g| {
                first += g.len();
                first - g.len()
            })
            .collect();
        // A group's state: how many of its steps are logged (an interrupted group runs the rest).
        run_resumable::<StepRecord, usize, LabError>(
            dir,
            STEPS_LOG,
            groups.len(),
            |group, logged, on_step| {
                let logged = logged.unwrap_or(0);
                let steps = &groups[group][logged..];
                for (i, step) in steps.iter().enumerate() {
                    let number = starts[group] + logged + i + 1;
                    info!("study step {number} of {total}: {}: {}", step.name, step.command_line());
                }
                let run_one = |step: &StudyStep| {
                    let started = Instant::now();
                    match &step.creates {
                        Some(path) if Path::new(path).exists() => info!("{}: {path} is there already", step.name),
                        _ => runner.run(step).map_err(|source| LabError::Step { name: step.name.clone(), source })?,
                    }
                    Ok::<_, LabError>(StepRecord {
                        name: step.name.clone(),
                        command: step.command_line(),
                        seconds: started.elapsed().as_secs_f64(),
                    })
                };
                let records: Vec<Result<StepRecord>> = if steps.len() == 1 {
                    vec![run_one(&steps[0])]
                } else {
                    std::thread::scope(|scope| {
                        let running: Vec<_> = steps.iter().map(|step| scope.spawn(move || run_one(step))).collect();
                        running
                            .into_iter()
                            .zip(steps)
                            .map(|(thread, step)| {
                                thread.join().unwrap_or_else(|_| {
                                    Err(LabError::Step { name: step.name.clone(), source: "its thread stopped".into() })
                                })
                            })
                            .collect()
                    })
                };
                let size = groups[group].len();
                for (i, record) in records.into_iter().enumerate() {
                    let record = record?;
                    let done = logged + i + 1;
                    on_step(&record, (done < size).then_some(&done))?;
                    progress(record);
                }
                Ok(())
            },
            |_| {},
        )?;
        self.report_in(dir)
    }

    fn report_in(&self, dir: &RunDirectory) -> Result<Vec<StepRecord>> {
        let finished: Vec<StepRecord> = dir.checkpointed_json_lines(STEPS_LOG)?;
        dir.write_bytes(TABLE_FILE, self.table(&finished).as_bytes())?;
        Ok(finished)
    }
}

impl Study {
    /// The steps as a Markdown table: each finished one with its minutes, the rest waiting.
    pub fn table(&self, finished: &[StepRecord]) -> String {
        let mut table = String::new();
        if let Some(about) = &self.about {
            let _ = writeln!(table, "{about}\n");
        }
        table.push_str("| step | command | minutes |\n|---|---|---:|\n");
        for step in &self.steps {
            let minutes = match finished.iter().find(|r| r.name == step.name) {
                Some(record) => format!("{:.1}", record.seconds / 60.0),
                None => "waiting".into(),
            };
            let _ = writeln!(table, "| {} | `{}` | {minutes} |", step.name, step.command_line());
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn plan(text: &str) -> Result<Study> {
        toml::from_str::<PlanFile>(text).unwrap().resolve(Path::new("plan.toml"))
    }

    #[test]
    fn a_grid_fills_names_and_flags_and_defaults_sit_under_a_step_s_own_flags() {
        let study = plan(
            r#"
[defaults."agnostic sweep"]
alphas = "1"
repeats = 3
reweigh = false
[[steps]]
name = "ctx-r{rounds}-{task}"
run = "agnostic sweep"
grid = { rounds = [1, 8], task = [0, 1] }
flags = { repeats = 1, reweigh = true, eraser-param = ["rounds={rounds}", "keep-task={task}"], out = "x/r{rounds}-{task}" }
[[steps]]
name = "front"
run = "agnostic  pareto"
flags = { sweeps = "x/r1-0,x/r8-1", tolerance = 0.05 }
"#,
        )
        .unwrap();
        let names: Vec<&str> = study.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ctx-r1-0", "ctx-r1-1", "ctx-r8-0", "ctx-r8-1", "front"]);
        let s = &study.steps[1];
        assert_eq!(s.command, ["agnostic", "sweep"]);
        assert_eq!(
            s.args,
            [
                "--alphas",
                "1",
                "--eraser-param",
                "rounds=1",
                "--eraser-param",
                "keep-task=1",
                "--out",
                "x/r1-1",
                "--repeats",
                "1",
                "--reweigh"
            ]
        );
        assert_eq!(study.steps[4].args, ["--sweeps", "x/r1-0,x/r8-1", "--tolerance", "0.05"]);
        let records = plan(
            r#"
[[steps]]
name = "{run.model}-seed{seed}"
run = "hib train"
grid = { run = [{ model = "point", loss = "", steps = 900 }, { model = "csd", loss = "csd", steps = 700 }], seed = [0, 1] }
flags = { loss = "{run.loss}", steps = "{run.steps}", seed = "{seed}" }
"#,
        )
        .unwrap();
        let got: Vec<(&str, Vec<&str>)> =
            records.steps.iter().map(|s| (s.name.as_str(), s.args.iter().map(String::as_str).collect())).collect();
        assert_eq!(
            got,
            [
                ("point-seed0", vec!["--seed", "0", "--steps", "900"]),
                ("point-seed1", vec!["--seed", "1", "--steps", "900"]),
                ("csd-seed0", vec!["--loss", "csd", "--seed", "0", "--steps", "700"]),
                ("csd-seed1", vec!["--loss", "csd", "--seed", "1", "--steps", "700"]),
            ]
        );
        assert_eq!(
            study.steps[4].command_line(),
            "./target/release/hedge agnostic pareto --sweeps x/r1-0,x/r8-1 --tolerance 0.05"
        );
    }

    #[test]
    fn a_plan_that_cannot_run_as_written_is_refused_naming_what_to_change() {
        let e = plan("[[steps]]\nname = \"a{seed}\"\nrun = \"hib train\"\ngrid = { s = [0, 1] }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("two steps have this name"), "{e}");
        let e = plan("[defaults.\"hib trian\"]\nseed = 1\n[[steps]]\nname = \"a\"\nrun = \"hib train\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("hib trian") && e.contains("no step runs this command"), "{e}");
        let e = plan("[[steps]]\nname = \"a\"\nrun = \"hib train\"\nflags = { set = { a = 1 } }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("set is a table"), "{e}");
        assert!(plan("").unwrap_err().to_string().contains("[[steps]]"));
        assert!(toml::from_str::<PlanFile>("[[steps]]\nname = \"a\"\nrun = \"x\"\nflag = {}\n").is_err());
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("rounds=1"), "rounds=1");
    }

    /// Runs what it is told, records each call, and fails the run of one chosen step once.
    #[derive(Default)]
    struct Recorder {
        calls: Mutex<Vec<String>>,
        fail_once: Mutex<Option<String>>,
    }

    impl StepRunner for Recorder {
        fn check(&self, step: &StudyStep) -> std::result::Result<(), BoxedError> {
            if step.command == ["no", "such"] {
                return Err("unknown command 'no such'".into());
            }
            Ok(())
        }
        fn run(&self, step: &StudyStep) -> std::result::Result<(), BoxedError> {
            self.calls.lock().unwrap().push(step.name.clone());
            if self.fail_once.lock().unwrap().take_if(|name| *name == step.name).is_some() {
                return Err("interrupted".into());
            }
            Ok(())
        }
    }

    fn four_steps() -> Study {
        plan("[[steps]]\nname = \"s{i}\"\nrun = \"hib train\"\ngrid = { i = [0, 1, 2, 3] }\n").unwrap()
    }

    /// A study stopped by a failed write after each of its checkpoints in turn, or by a step
    /// that fails, continues at its first unfinished step: every finished step ran once, the
    /// interrupted one again, and the log lists each step once, in order.
    #[test]
    fn an_interrupted_study_continues_at_its_first_unfinished_step() {
        let study = four_steps();
        let names: Vec<String> = study.steps.iter().map(|s| s.name.clone()).collect();
        for stop in 1..12 {
            let tmp = tempfile::tempdir().unwrap();
            let out = tmp.path().join("study");
            let recorder = Arc::new(Recorder::default());
            let runner: Runner = recorder.clone();
            let dir = RunDirectory::create(&out, Study::KIND, false).unwrap().stop_after_writes(stop);
            let Err(e) = study.run_in(&dir, &runner, |_| {}) else {
                continue;
            };
            assert!(e.to_string().contains("fault injection"), "stop {stop}: {e}");
            let first = recorder.calls.lock().unwrap().len();
            let records = Study::resume(&out, &runner, |_| {}).unwrap().1;
            let logged: Vec<&String> = records.iter().map(|r| &r.name).collect();
            assert_eq!(logged, names.iter().collect::<Vec<_>>(), "stop {stop}");
            let calls = recorder.calls.lock().unwrap().clone();
            // Before the fault the steps ran in order; after it, the rest in order from the
            // step under way (again) or the next one.
            assert_eq!(calls[..first], names[..first], "stop {stop}: {calls:?}");
            let resumed_from = (names.len() + first).checked_sub(calls.len()).expect("no step runs three times");
            assert!(resumed_from + 1 >= first && resumed_from <= first, "stop {stop}: {calls:?}");
            assert_eq!(calls[first..], names[resumed_from..], "stop {stop}: {calls:?}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("study");
        let recorder = Arc::new(Recorder { fail_once: Mutex::new(Some("s2".into())), ..Default::default() });
        let runner: Runner = recorder.clone();
        let e = study.run_or_resume(&runner, &out, false, |_| {}).unwrap_err().to_string();
        assert!(e.contains("step s2") && e.contains("interrupted"), "{e}");
        let records = study.run_or_resume(&runner, &out, false, |_| {}).unwrap();
        assert_eq!(records.len(), 4);
        assert_eq!(*recorder.calls.lock().unwrap(), ["s0", "s1", "s2", "s2", "s3"]);
        let table = std::fs::read_to_string(out.join(TABLE_FILE)).unwrap();
        assert!(table.contains("| s3 | `./target/release/hedge hib train` |"), "{table}");
        let other = plan("[[steps]]\nname = \"t\"\nrun = \"hib train\"\n").unwrap();
        let e = other.run_or_resume(&runner, &out, false, |_| {}).unwrap_err().to_string();
        assert!(e.contains("holds another study"), "{e}");
    }

    /// Two steps at a time: stopped after each checkpoint in turn, the study continues with the
    /// steps of the group under way that its log does not hold; every step runs, none more than
    /// twice, and the log lists each once, in the plan's order.
    #[test]
    fn a_study_of_steps_at_once_continues_with_the_steps_it_has_not_logged() {
        let study =
            plan("parallel = 2\n[[steps]]\nname = \"one\"\nrun = \"data check\"\n[[steps]]\nname = \"s{i}\"\nrun = \"hib train\"\ngrid = { i = [0, 1, 2, 3, 4] }\n")
                .unwrap();
        assert_eq!(study.steps.iter().map(|s| s.entry).collect::<Vec<_>>(), [0, 1, 1, 1, 1, 1]);
        assert!(study.steps.iter().all(|s| s.runs_apart()));
        let names: Vec<String> = study.steps.iter().map(|s| s.name.clone()).collect();
        let mut stopped = 0;
        for stop in 1..14 {
            let tmp = tempfile::tempdir().unwrap();
            let out = tmp.path().join("study");
            let recorder = Arc::new(Recorder::default());
            let runner: Runner = recorder.clone();
            let dir = RunDirectory::create(&out, Study::KIND, false).unwrap().stop_after_writes(stop);
            if study.run_in(&dir, &runner, |_| {}).is_ok() {
                continue;
            }
            stopped += 1;
            let records = Study::resume(&out, &runner, |_| {}).unwrap().1;
            let logged: Vec<&String> = records.iter().map(|r| &r.name).collect();
            assert_eq!(logged, names.iter().collect::<Vec<_>>(), "stop {stop}");
            let calls = recorder.calls.lock().unwrap().clone();
            for name in &names {
                let n = calls.iter().filter(|c| *c == name).count();
                assert!((1..=2).contains(&n), "stop {stop}: {name} ran {n} times: {calls:?}");
            }
        }
        assert!(stopped >= 8, "{stopped} stops");
        let e = plan("parallel = 0\n[[steps]]\nname = \"a\"\nrun = \"hib train\"\n").unwrap_err().to_string();
        assert!(e.contains("parallel"), "{e}");
    }

    #[test]
    fn every_step_is_checked_before_the_first_runs() {
        let mut study = four_steps();
        study.steps[3].command = vec!["no".into(), "such".into()];
        let recorder = Arc::new(Recorder::default());
        let runner: Runner = recorder.clone();
        let tmp = tempfile::tempdir().unwrap();
        let e = study.run_or_resume(&runner, &tmp.path().join("s"), false, |_| {}).unwrap_err().to_string();
        assert!(e.contains("step s3") && e.contains("unknown command"), "{e}");
        assert!(recorder.calls.lock().unwrap().is_empty());
        assert!(!tmp.path().join("s").exists());
    }
}
