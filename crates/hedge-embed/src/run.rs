//! A training run directory: `config.json`, `metrics.jsonl`, `model.safetensors`,
//! `optimizer.safetensors`, `state.json`. Checkpoints are written to a temporary sibling and
//! renamed, so an interrupted run never leaves a damaged file behind.

use std::path::{Path, PathBuf};

use hedge_run::RunDirectory;
use serde::{Deserialize, Serialize};

use crate::config::HibConfig;
use crate::{EmbedError, Result};

pub const CONFIG_FILE: &str = "config.json";
pub const METRICS_FILE: &str = "metrics.jsonl";
pub const MODEL_FILE: &str = "model.safetensors";
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";
pub const STATE_FILE: &str = "state.json";
/// The weight average (`ema_decay > 0`): what the run is evaluated with.
pub const EMA_FILE: &str = "model_ema.safetensors";
/// Quick quality of the watched sets during training, one JSON line per evaluation.
pub const MONITOR_FILE: &str = "monitor.jsonl";
/// The weights with the best validation score so far, and which step they are.
pub const BEST_MODEL_FILE: &str = "model_best.safetensors";
pub const BEST_FILE: &str = "best.json";
/// The sealed copy of `config.json` ([`hedge_run::RunDirectory::write_sealed_json`]).
pub const SEALED_CONFIG_FILE: &str = "sealed-config.json";
/// Folder of the models kept along the way (`--keep-every`).
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// Where a run keeps its `TrainPlan` (`crate::experiment`), so that `--resume` watches and stops as the run began.
pub const PLAN_FILE: &str = "plan.json";

/// Every file name a training run writes at its top level (evaluations `eval*.json` and their
/// `reliability*.png` aside).
const RUN_FILES: [&str; 18] = [
    CONFIG_FILE,
    SEALED_CONFIG_FILE,
    PLAN_FILE,
    METRICS_FILE,
    MODEL_FILE,
    OPTIMIZER_FILE,
    STATE_FILE,
    EMA_FILE,
    MONITOR_FILE,
    BEST_MODEL_FILE,
    BEST_FILE,
    hedge_run::rundir::MANIFEST_FILE,
    "verification.json",
    "curve.json",
    "curve.png",
    crate::data::OWN_SPLIT_FILE,
    // `hedge bench recipe` writes its report into the run it trained.
    "bench.json",
    "bench.md",
];

/// The kind of folder a training run is (its ownership marker).
pub const RUN_KIND: &str = "hib training run";

/// The schema of a run's `config.json`: 2 records it; 1 (files without `schema`) may lack the
/// data protocol, written before protocols existed when every run was open-set
/// ([`crate::report::upgrade_before_protocols`]). A setting added to [`HibConfig`] after a run
/// was written reads as its default, which is always the behaviour from before it existed.
pub const RUN_SCHEMA: u32 = 2;

/// What `config.json` holds: the resolved hyper-parameters and how the run was started.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct RunConfig {
    /// [`RUN_SCHEMA`] when written.
    pub schema: u32,
    pub hib: HibConfig,
    pub device: String,
    pub threads: i64,
    pub command: String,
    pub hedge_version: String,
    pub libtorch: String,
}

impl hedge_run::schema::Schema for RunConfig {
    const CURRENT: u32 = RUN_SCHEMA;
    const WHAT: &'static str = "a run's config.json";

    fn upgrade(from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        let hib = form.get_mut("hib").and_then(serde_json::Value::as_object_mut).ok_or("no `hib` object")?;
        crate::report::upgrade_before_protocols(from, hib, "protocol")
    }
}

hedge_run::versioned_serde!(RunConfig);

/// Progress of a run at its last checkpoint.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct RunState {
    pub step: usize,
    pub seconds: f64,
}

/// One line of `metrics.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepMetrics {
    pub step: usize,
    pub loss: f64,
    pub pair_loss: f64,
    pub kl: f64,
    pub a: f64,
    pub b: f64,
    pub seconds: f64,
    pub pairs_per_s: f64,
    /// Pairs scored in the step (absent, so 0, in runs written before grouped batches).
    #[serde(default)]
    pub pairs: usize,
}

/// `best.json`: the model kept as `model_best.safetensors`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct BestModel {
    pub step: usize,
    pub train_seconds: f64,
    /// [`crate::QuickEval::score`] on the validation classes.
    pub score: f64,
    pub validation: crate::QuickEval,
}

/// A run directory on disk, written through [`hedge_run::RunDirectory`]: every file
/// atomically, and model, optimiser, weight average and `state.json` committed together by
/// `checkpoint.json`.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    dir: RunDirectory,
}

impl RunDir {
    /// Creates a fresh run directory; refuses one that already holds files, so nothing a
    /// user made is overwritten.
    pub fn create(path: &Path) -> Result<Self> {
        Self::create_with(path, false)
    }

    /// [`RunDir::create`], or with `overwrite` a folder that holds files (the run's files
    /// replace theirs; others are left alone).
    pub fn create_with(path: &Path, overwrite: bool) -> Result<Self> {
        if !overwrite && !hedge_run::atomic::entries_besides_marker(path).is_empty() {
            return Err(EmbedError::run(
                path,
                "already exists and is not empty; continue it with --resume, replace it with --overwrite, \
                 or choose another --out",
            ));
        }
        let dir = RunDirectory::create(path, RUN_KIND, true)?;
        let run = RunDir { path: path.to_path_buf(), dir };
        if overwrite {
            run.remove_run_files()?;
        }
        Ok(run)
    }

    /// Removes the files a training run writes (and nothing else), so a run started over an
    /// earlier one mixes nothing of it: no stale best model, metrics line or kept checkpoint.
    fn remove_run_files(&self) -> Result<()> {
        let kept = self.file(CHECKPOINTS_DIR);
        let mut doomed: Vec<PathBuf> = RUN_FILES.iter().map(|f| self.file(f)).collect();
        if let Ok(entries) = std::fs::read_dir(&kept) {
            doomed.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("model-"))),
            );
        }
        if let Ok(entries) = std::fs::read_dir(&self.path) {
            doomed.extend(entries.flatten().map(|e| e.path()).filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    (n.starts_with("eval") && n.ends_with(".json"))
                        || (n.starts_with("reliability") && n.ends_with(".png"))
                })
            }));
        }
        for path in doomed.iter().filter(|p| p.is_file()) {
            std::fs::remove_file(path).map_err(|e| EmbedError::io(path, e))?;
        }
        Ok(())
    }

    /// Opens an existing run to read it (evaluate, embed, report), checking that its files are
    /// there. Changes nothing on disk.
    pub fn open(path: &Path) -> Result<Self> {
        for f in [CONFIG_FILE, MODEL_FILE] {
            if !path.join(f).is_file() {
                return Err(EmbedError::run(
                    path,
                    format!("has no {f}; is this a run directory written by `hedge hib train`?"),
                ));
            }
        }
        Ok(RunDir { path: path.to_path_buf(), dir: RunDirectory::open(path)? })
    }

    /// Opens a run to continue training it: brings it to its last committed checkpoint
    /// ([`RunDirectory::recover`]). A run stopped before its first checkpoint (only
    /// `config.json` there) continues from step 0.
    pub fn open_to_resume(path: &Path) -> Result<Self> {
        if !path.join(CONFIG_FILE).is_file() {
            // A folder hedge made but stopped before its definition can be started again in
            // place; any other folder is not a run, and overwriting it is not the fix.
            let what = if hedge_run::atomic::is_hedge_folder(path) {
                format!(
                    "has no {CONFIG_FILE}: the run stopped before it wrote its definition; start it again with \
                     --out {} --overwrite",
                    path.display()
                )
            } else {
                format!(
                    "has no {CONFIG_FILE}, so it is not a hedge run to resume; check the path (a run folder \
                     holds config.json, metrics.jsonl and model.safetensors), or start a new run with --out"
                )
            };
            return Err(EmbedError::run(path, what));
        }
        let dir = RunDirectory::open_to_resume(path)?;
        Ok(RunDir { path: path.to_path_buf(), dir })
    }

    /// The same directory whose writer stops after `n` writes (fault-injection tests; see
    /// [`RunDirectory::stop_after_writes`]).
    #[doc(hidden)]
    pub fn stop_after_writes(self, n: usize) -> Self {
        RunDir { path: self.path, dir: self.dir.stop_after_writes(n) }
    }

    /// Writes made through this directory so far.
    pub fn writes_done(&self) -> usize {
        self.dir.writes_done()
    }

    /// The generic layer underneath (atomic writes, checkpoints).
    pub fn directory(&self) -> &RunDirectory {
        &self.dir
    }

    /// Whether the run has committed a checkpoint (or, written before manifests, a `state.json`).
    pub fn has_checkpoint(&self) -> bool {
        self.dir.has(hedge_run::rundir::MANIFEST_FILE) || self.dir.has(STATE_FILE)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `config.json` and seals it: every write of a run's definition is hedge's own (a new
    /// run, a planned step count, `--resume --steps`), so each is recorded in the sealed copy
    /// that [`Self::check_config_unedited`] compares with.
    pub fn write_config(&self, config: &RunConfig) -> Result<()> {
        Ok(self.dir.write_sealed_json(CONFIG_FILE, config)?)
    }

    /// Refuses a run whose `config.json` was edited by hand after it started, naming the changed
    /// fields.
    pub fn check_config_unedited(&self) -> Result<()> {
        Ok(self.dir.check_sealed(
            CONFIG_FILE,
            "A resumed run trains what was started: change the step count with --resume --steps N \
             (recorded), or start a new run with the other settings",
        )?)
    }

    pub fn read_config(&self) -> Result<RunConfig> {
        self.read_json(CONFIG_FILE)
    }

    /// The last checkpoint's state; a run without `state.json` has taken no steps.
    pub fn read_state(&self) -> Result<RunState> {
        if !self.file(STATE_FILE).is_file() {
            return Ok(RunState { step: 0, seconds: 0.0 });
        }
        self.read_json(STATE_FILE)
    }

    pub fn append_metrics(&self, m: &StepMetrics) -> Result<()> {
        self.append_json_line(METRICS_FILE, m)
    }

    /// Appends one JSON line to the file `name` of the run.
    pub fn append_json_line<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        Ok(self.dir.append_json_line(name, value)?)
    }

    /// Every line of the JSON-lines file `name` (empty when the file does not exist).
    pub fn read_json_lines<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<Vec<T>> {
        Ok(self.dir.read_json_lines(name)?)
    }

    /// The JSON file `name` of the run, or `None` when it does not exist.
    pub fn read_json_if_present<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<Option<T>> {
        Ok(self.dir.read_json_if_present(name)?)
    }

    /// Every metrics line, in order.
    pub fn read_metrics(&self) -> Result<Vec<StepMetrics>> {
        self.read_json_lines(METRICS_FILE)
    }

    /// Drops metrics (and monitor) lines logged after `step` (they belong to work the checkpoint lost).
    pub fn truncate_metrics(&self, step: usize) -> Result<()> {
        self.dir.retain_json_lines::<StepMetrics>(METRICS_FILE, |m| m.step <= step)?;
        self.dir.retain_json_lines::<crate::MonitorRecord>(MONITOR_FILE, |m| m.step <= step)?;
        Ok(())
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        Ok(self.dir.write_json(name, value)?)
    }

    /// Writes the file `name` with `save` (given a temporary path), atomically.
    pub fn write_with(&self, name: &str, save: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        self.dir.write_with(name, save)
    }

    pub fn read_json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<T> {
        let path = self.file(name);
        let text = std::fs::read_to_string(&path).map_err(|e| EmbedError::io(&path, e))?;
        serde_json::from_str(&text).map_err(|e| EmbedError::run(&self.path, format!("{name} is not valid: {e}")))
    }
}
