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
        let path = self.file(METRICS_FILE);
        let mut f =
            std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|e| EmbedError::io(&path, e))?;
        let line = serde_json::to_string(m).expect("metrics serialise");
        writeln!(f, "{line}").map_err(|e| EmbedError::io(&path, e))
    }

    /// Every metrics line, in order.
    pub fn read_metrics(&self) -> Result<Vec<StepMetrics>> {
        let path = self.file(METRICS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(EmbedError::io(&path, e)),
        };
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l)
                    .map_err(|e| EmbedError::run(&self.path, format!("{METRICS_FILE} line {}: {e}", i + 1)))
            })
            .collect()
    }

    /// Drops metrics lines logged after `step` (they belong to work the checkpoint lost).
    pub fn truncate_metrics(&self, step: usize) -> Result<()> {
        let kept: Vec<String> = self
            .read_metrics()?
            .into_iter()
            .filter(|m| m.step <= step)
            .map(|m| serde_json::to_string(&m).expect("metrics serialise") + "\n")
            .collect();
        hedge_data::write_atomic(&self.file(METRICS_FILE), kept.concat().as_bytes())?;
        Ok(())
    }

    fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let text = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
        hedge_data::write_atomic(&self.file(name), text.as_bytes())?;
        Ok(())
    }

    fn read_json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<T> {
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
