//! The one engine every resumable experiment of hedge runs on: a sequence of runs (a seed and
//! a method, an α and a repeat, a model of a table) in a [`RunDirectory`], every finished step
//! logged to a JSON-lines file and checkpointed with the state of the run under way, so an
//! interrupted experiment continues at its last finished step — in a later process, from
//! `--resume`.
//!
//! [`run_resumable`] is the loop; [`Experiment`] writes starting, resuming and reporting once
//! for any definition (`config.json`), data and runs.

use std::path::Path;

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::rundir::{RunDirectory, MANIFEST_FILE};
use crate::RunError;

/// The experiment's definition, written first: `--resume` reads it back.
pub const CONFIG_FILE: &str = "config.json";
/// The sealed copy of [`CONFIG_FILE`] ([`RunDirectory::write_sealed_json`]): what `--resume`
/// checks the definition against.
pub const SEALED_CONFIG_FILE: &str = "sealed-config.json";
/// One JSON line per finished step.
pub const ROUNDS_FILE: &str = "rounds.jsonl";
/// Where the experiment stands (checkpointed after every step).
pub const PROGRESS_FILE: &str = "progress.json";

/// `progress.json`: the runs finished, the lines of the log that belong to the checkpoint, and
/// the state `S` of the run under way (`None` between runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WrittenProgress<S>", bound(deserialize = "S: Deserialize<'de>"))]
pub struct ExperimentProgress<S> {
    pub finished_runs: usize,
    pub rounds_logged: usize,
    pub current: Option<S>,
}

/// `progress.json` as every version wrote it: agnostic sweeps written before this engine
/// counted `finished_networks` and logged one line per network, without `rounds_logged`.
#[derive(Deserialize)]
struct WrittenProgress<S> {
    #[serde(alias = "finished_networks")]
    finished_runs: usize,
    #[serde(default)]
    rounds_logged: Option<usize>,
    #[serde(default = "none")]
    current: Option<S>,
}

fn none<S>() -> Option<S> {
    None
}

impl<S> From<WrittenProgress<S>> for ExperimentProgress<S> {
    fn from(p: WrittenProgress<S>) -> Self {
        Self {
            finished_runs: p.finished_runs,
            rounds_logged: p.rounds_logged.unwrap_or(p.finished_runs),
            current: p.current,
        }
    }
}

impl<S> Default for ExperimentProgress<S> {
    fn default() -> Self {
        Self { finished_runs: 0, rounds_logged: 0, current: None }
    }
}

/// Runs `runs` runs in order through `dir`, appending every step `R` to `log` and
/// checkpointing `progress.json` after it, and continuing from the directory's last checkpoint
/// when it has one. `run_one(index, resume, on_step)` runs run `index` (from the state
/// `resume` when given) and calls `on_step(step, state)` after every step, `state` being where
/// the run stands (`None` once it has finished); `on_run_finished(index)` follows each run.
/// Returns every step in the log.
pub fn run_resumable<R, S, E>(
    dir: &RunDirectory,
    log: &str,
    runs: usize,
    mut run_one: impl FnMut(usize, Option<S>, &mut dyn FnMut(&R, Option<&S>) -> Result<(), E>) -> Result<(), E>,
    mut on_run_finished: impl FnMut(usize),
) -> Result<Vec<R>, E>
where
    R: Serialize + DeserializeOwned,
    S: Serialize + DeserializeOwned + Clone,
    E: From<RunError>,
{
    let progress: ExperimentProgress<S> =
        if dir.manifest()?.is_some() { dir.read_json(PROGRESS_FILE)? } else { ExperimentProgress::default() };
    // Steps logged after the checkpoint belong to work it does not hold (a checkpoint that
    // records its logs has already cut them; older ones count lines).
    let mut line = 0;
    dir.retain_json_lines::<R>(log, |_| {
        line += 1;
        line <= progress.rounds_logged
    })?;
    dir.require_lines(log, line, progress.rounds_logged, PROGRESS_FILE)?;
    let mut logged = progress.rounds_logged;
    let mut current = progress.current;
    for run in progress.finished_runs..runs {
        run_one(run, current.take(), &mut |step, state| {
            dir.append_json_line(log, step)?;
            logged += 1;
            let progress = ExperimentProgress {
                finished_runs: if state.is_none() { run + 1 } else { run },
                rounds_logged: logged,
                current: state.cloned(),
            };
            let mut checkpoint = dir.checkpoint(logged as u64);
            checkpoint.stage_json(PROGRESS_FILE, &progress)?;
            checkpoint.commit()?;
            Ok(())
        })?;
        on_run_finished(run);
    }
    Ok(dir.checkpointed_json_lines(log)?)
}

/// An experiment run through [`run_resumable`] in a run directory: the definition (`Self`,
/// written to `config.json`), its data and its runs differ from one experiment to the next,
/// while starting, resuming and reporting are written once here ([`Experiment::run`],
/// [`Experiment::resume`], [`Experiment::report`]).
pub trait Experiment: Serialize + DeserializeOwned + Sized {
    /// What the definition names, loaded once and passed down.
    type Data;
    /// Where [`Experiment::load`] finds the data (the papers' data root, say; a user's own
    /// files are named in the definition).
    type Root: ?Sized;
    /// What the report returns (and writes as `summary.json`).
    type Summary;
    /// What progress callbacks are told after each finished run.
    type Finished;
    type Error: From<RunError>;

    /// Every file the experiment writes besides [`CONFIG_FILE`], [`PROGRESS_FILE`] and the
    /// manifest (removed when a new experiment starts over it with `--overwrite`).
    const FILES: &'static [&'static str];

    /// The kind of folder the experiment writes (recorded in its ownership marker): `--overwrite`
    /// refuses a folder of another kind, so two commands' files never mix.
    const KIND: &'static str;

    /// The data the definition names, from `root`.
    fn load(&self, root: &Self::Root) -> Result<Self::Data, Self::Error>;

    /// Refuses settings the data cannot satisfy, before anything is written.
    fn check(&self, data: &Self::Data) -> Result<(), Self::Error>;

    /// Runs every run not yet finished in `dir` (continuing from its checkpoint), then reports.
    fn continue_in(
        &self,
        dir: &RunDirectory,
        data: &Self::Data,
        progress: &mut dyn FnMut(Self::Finished),
    ) -> Result<Self::Summary, Self::Error>;

    /// Writes the report (`summary.json`, tables, figures) from what `dir` logged.
    fn report_in(&self, dir: &RunDirectory) -> Result<Self::Summary, Self::Error>;

    /// Runs the experiment into a new directory `out` (refused when it holds files, unless
    /// `overwrite`, and then only files hedge wrote).
    fn run(
        &self,
        data: &Self::Data,
        out: &Path,
        overwrite: bool,
        mut progress: impl FnMut(Self::Finished),
    ) -> Result<Self::Summary, Self::Error> {
        self.check(data)?;
        let made_here = !out.exists();
        let dir = RunDirectory::create(out, Self::KIND, overwrite)?;
        let result = self.run_in(&dir, data, &mut progress);
        if result.is_err() {
            dir.abandon_if_unstarted(&written_files::<Self>(), made_here);
        }
        result
    }

    /// Runs the experiment from its first run in `dir`, an opened run directory (what an
    /// earlier experiment there wrote is removed first). Tests inject faults through `dir`.
    fn run_in(
        &self,
        dir: &RunDirectory,
        data: &Self::Data,
        mut progress: impl FnMut(Self::Finished),
    ) -> Result<Self::Summary, Self::Error> {
        self.check(data)?;
        dir.remove_files(&written_files::<Self>())?;
        dir.write_sealed_json(CONFIG_FILE, self)?;
        self.continue_in(dir, data, &mut progress)
    }

    /// Continues the experiment whose directory is `out` from its last finished step.
    fn resume(
        out: &Path,
        root: &Self::Root,
        mut progress: impl FnMut(Self::Finished),
    ) -> Result<(Self, Self::Summary), Self::Error> {
        let dir = RunDirectory::open_to_resume(out)?;
        dir.check_sealed(
            CONFIG_FILE,
            "A resumed experiment runs what was started: to run other settings, start a new experiment (another \
             --out, or --overwrite)",
        )?;
        let experiment: Self = dir.read_json(CONFIG_FILE)?;
        let data = experiment.load(root)?;
        experiment.check(&data)?;
        let summary = experiment.continue_in(&dir, &data, &mut progress)?;
        Ok((experiment, summary))
    }

    /// Whether `started`, the definition a folder holds, is this experiment (so that starting
    /// this one there continues it). By default equal in every field; a definition that records
    /// its command line compares without it, so a command given again with other flags that do
    /// not change the definition (threads, device) still continues.
    fn is_started_as(&self, started: &Self) -> bool;

    /// Starts the experiment in `out`, or continues it where `out` already holds this very
    /// experiment ([`Experiment::is_started_as`]): one command that a study calls again after
    /// any interruption, without testing for files. A folder that holds another experiment is
    /// refused (its `--resume`, another `--out`, or `overwrite` to start over).
    fn run_or_resume(
        &self,
        root: &Self::Root,
        out: &Path,
        overwrite: bool,
        mut progress: impl FnMut(Self::Finished),
    ) -> Result<Self::Summary, Self::Error> {
        if !overwrite && out.join(SEALED_CONFIG_FILE).is_file() {
            let dir = RunDirectory::open(out)?;
            dir.check_sealed(
                CONFIG_FILE,
                "A resumed experiment runs what was started: to run other settings, start a new experiment \
                 (another --out, or --overwrite)",
            )?;
            let started: Self = dir.read_json(CONFIG_FILE)?;
            if !self.is_started_as(&started) {
                return Err(RunError::InvalidConfig {
                    field: "out",
                    value: out.display().to_string(),
                    reason: format!(
                        "holds another {} (its {CONFIG_FILE}): give its settings to continue it, or start \
                         this one in another --out or with --overwrite",
                        Self::KIND
                    ),
                }
                .into());
            }
            drop(dir);
            return Self::resume(out, root, progress).map(|(_, summary)| summary);
        }
        let data = self.load(root)?;
        self.run(&data, out, overwrite, &mut progress)
    }

    /// Rebuilds the report of the experiment in `out` from what it logged.
    fn report(out: &Path) -> Result<Self::Summary, Self::Error> {
        let dir = RunDirectory::open(out)?;
        dir.check_sealed(
            CONFIG_FILE,
            "A report describes the experiment that ran: restore config.json, or run a new experiment with the \
             other settings",
        )?;
        let experiment: Self = dir.read_json(CONFIG_FILE)?;
        experiment.report_in(&dir)
    }
}

/// Every file an experiment of type `X` writes.
fn written_files<X: Experiment>() -> Vec<&'static str> {
    let mut files = vec![CONFIG_FILE, SEALED_CONFIG_FILE, PROGRESS_FILE, MANIFEST_FILE];
    files.extend(X::FILES);
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `progress.json` hedge has written reads back: the engine's own, an active-learning
    /// one with its loop state, and an agnostic sweep's from before the engine.
    #[test]
    fn progress_files_of_every_version_read_back() {
        let own = ExperimentProgress { finished_runs: 3, rounds_logged: 41, current: Some(vec![1u32, 2]) };
        let text = serde_json::to_string(&own).unwrap();
        assert_eq!(serde_json::from_str::<ExperimentProgress<Vec<u32>>>(&text).unwrap(), own);
        let sweep: ExperimentProgress<()> = serde_json::from_str(r#"{"finished_networks": 7}"#).unwrap();
        assert_eq!((sweep.finished_runs, sweep.rounds_logged, sweep.current), (7, 7, None));
    }
}
