//! A training run directory: `config.json`, `metrics.jsonl`, `model.safetensors`,
//! `optimizer.safetensors`, `state.json`. Checkpoints are written to a temporary sibling and
//! renamed, so an interrupted run never leaves a damaged file behind.

use std::io::Write;
use std::path::{Path, PathBuf};

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
/// Folder of the models kept along the way (`--keep-every`).
pub const CHECKPOINTS_DIR: &str = "checkpoints";

/// What `config.json` holds: the resolved hyper-parameters and how the run was started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    pub hib: HibConfig,
    pub device: String,
    pub threads: i64,
    pub command: String,
    pub hedge_version: String,
    pub libtorch: String,
}

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

/// A run directory on disk.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    /// Creates a fresh run directory; refuses one that already holds files, so nothing a
    /// user made is overwritten.
    pub fn create(path: &Path) -> Result<Self> {
        if path.exists() {
            let occupied = std::fs::read_dir(path).map_err(|e| EmbedError::io(path, e))?.next().is_some();
            if occupied {
                return Err(EmbedError::run(
                    path,
                    "already exists and is not empty; continue it with --resume, or choose another --out",
                ));
            }
        }
        std::fs::create_dir_all(path).map_err(|e| EmbedError::io(path, e))?;
        Ok(RunDir { path: path.to_path_buf() })
    }

    /// Opens an existing run, checking that its files are there.
    pub fn open(path: &Path) -> Result<Self> {
        for f in [CONFIG_FILE, MODEL_FILE] {
            if !path.join(f).is_file() {
                return Err(EmbedError::run(
                    path,
                    format!("has no {f}; is this a run directory written by `hedge hib train`?"),
                ));
            }
        }
        Ok(RunDir { path: path.to_path_buf() })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn write_config(&self, config: &RunConfig) -> Result<()> {
        self.write_json(CONFIG_FILE, config)
    }

    pub fn read_config(&self) -> Result<RunConfig> {
        self.read_json(CONFIG_FILE)
    }

    pub fn write_state(&self, state: &RunState) -> Result<()> {
        self.write_json(STATE_FILE, state)
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
        let path = self.file(name);
        let mut f =
            std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|e| EmbedError::io(&path, e))?;
        let line = serde_json::to_string(value).expect("serialisable");
        writeln!(f, "{line}").map_err(|e| EmbedError::io(&path, e))
    }

    /// Every line of the JSON-lines file `name` (empty when the file does not exist).
    pub fn read_json_lines<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<Vec<T>> {
        let path = self.file(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(EmbedError::io(&path, e)),
        };
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| EmbedError::run(&self.path, format!("{name} line {}: {e}", i + 1)))
            })
            .collect()
    }

    /// The JSON file `name` of the run, or `None` when it does not exist.
    pub fn read_json_if_present<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<Option<T>> {
        if !self.file(name).is_file() {
            return Ok(None);
        }
        self.read_json(name).map(Some)
    }

    /// Every metrics line, in order.
    pub fn read_metrics(&self) -> Result<Vec<StepMetrics>> {
        self.read_json_lines(METRICS_FILE)
    }

    /// Drops metrics (and monitor) lines logged after `step` (they belong to work the checkpoint lost).
    pub fn truncate_metrics(&self, step: usize) -> Result<()> {
        let kept: Vec<String> = self
            .read_metrics()?
            .into_iter()
            .filter(|m| m.step <= step)
            .map(|m| serde_json::to_string(&m).expect("metrics serialise") + "\n")
            .collect();
        hedge_data::write_atomic(&self.file(METRICS_FILE), kept.concat().as_bytes())?;
        if self.file(MONITOR_FILE).is_file() {
            let kept: Vec<String> = self
                .read_json_lines::<crate::MonitorRecord>(MONITOR_FILE)?
                .into_iter()
                .filter(|m| m.step <= step)
                .map(|m| serde_json::to_string(&m).expect("monitor serialises") + "\n")
                .collect();
            hedge_data::write_atomic(&self.file(MONITOR_FILE), kept.concat().as_bytes())?;
        }
        Ok(())
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let text = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
        hedge_data::write_atomic(&self.file(name), text.as_bytes())?;
        Ok(())
    }

    pub fn read_json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<T> {
        let path = self.file(name);
        let text = std::fs::read_to_string(&path).map_err(|e| EmbedError::io(&path, e))?;
        serde_json::from_str(&text).map_err(|e| EmbedError::run(&self.path, format!("{name} is not valid: {e}")))
    }
}

/// Saves through a temporary sibling and a rename (libtorch picks the format by extension,
/// which the sibling keeps).
pub(crate) fn save_atomically(path: &Path, save: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let tmp = hedge_data::atomic::temp_sibling(path);
    if let Err(e) = save(&tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(|e| EmbedError::io(path, e))
}
