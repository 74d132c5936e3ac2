//! Training runs as a user starts them: data from `$HEDGE_DATA_DIR`, a run directory, held-out
//! sets watched against wall-clock, a budget, and resumption.

use std::sync::Arc;

use hedge_data::{data_dir, Mnist, NDigitDataset, NDigitSplit};
use serde::{Deserialize, Serialize};
use tch::Device;

use crate::monitor::WatchSet;
use crate::run::RunDir;
use crate::train::{RunOptions, TrainEvent, Trainer};
use crate::{HibConfig, Result};

/// MNIST and one N-digit split from `$HEDGE_DATA_DIR`.
pub fn load_split(digits: usize, split: NDigitSplit) -> Result<NDigitDataset> {
    let dir = data_dir()?;
    let mnist = Arc::new(Mnist::load(&dir.join("mnist"))?);
    Ok(NDigitDataset::load(&dir, digits, split, &mnist)?)
}

/// Where a run keeps its [`TrainPlan`], so that `--resume` watches and stops as the run began.
pub const PLAN_FILE: &str = "plan.json";

/// The plan a run was started with (the default for runs written before plans existed).
pub fn read_plan(run: &RunDir) -> Result<TrainPlan> {
    Ok(run.read_json_if_present(PLAN_FILE)?.unwrap_or_default())
}

/// How a training run is watched and bounded (not part of the model's hyper-parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainPlan {
    /// Stop after this many minutes of training wall-clock (evaluation excluded); the step
    /// count is then planned from the speed of the first steps, so schedules end at the budget.
    pub budget_minutes: Option<f64>,
    /// Evaluate the watched sets every this many steps (0: never).
    pub watch_every: usize,
    /// Test splits watched besides the validation classes (quality-vs-wall-clock curves; never
    /// used to choose a model).
    pub watch_splits: Vec<NDigitSplit>,
    /// Verification pairs of each kind per watched set.
    pub watch_pairs: usize,
    /// Keep a copy of the (inference) weights every this many steps (0: none).
    pub keep_every: usize,
}

impl Default for TrainPlan {
    fn default() -> Self {
        TrainPlan { budget_minutes: None, watch_every: 0, watch_splits: Vec::new(), watch_pairs: 5000, keep_every: 0 }
    }
}

/// The sets a run watches: `validation` (the held-out training classes, when the config holds
/// some out) and each split of `plan.watch_splits` under its own name.
pub fn watch_sets(trainer: &Trainer, plan: &TrainPlan) -> Result<Vec<WatchSet>> {
    let mut sets = Vec::new();
    if plan.watch_every == 0 {
        return Ok(sets);
    }
    if let Some(val) = trainer.validation_set() {
        sets.push(WatchSet::new("validation", val.clone(), plan.watch_pairs)?);
    }
    for &split in &plan.watch_splits {
        let data = load_split(trainer.config.digits, split)?;
        sets.push(WatchSet::new(split.name(), data, plan.watch_pairs)?);
    }
    Ok(sets)
}

/// Trains (or resumes) the run in `run` to `config.steps` or to the plan's budget, watching
/// the plan's sets; `on_event` sees every step, evaluation and planning decision.
///
/// A fresh run writes a step-0 checkpoint first, so a run stopped before its first regular
/// checkpoint can still be resumed. A resumed budgeted run keeps the planned step count of its
/// `config.json` and stops when the total training wall-clock reaches the budget.
pub fn train_run(
    run: &RunDir,
    config: &HibConfig,
    device: Device,
    resuming: bool,
    plan: &TrainPlan,
    on_event: impl FnMut(TrainEvent),
) -> Result<Trainer> {
    let train_set = load_split(config.digits, NDigitSplit::Train)?;
    let mut trainer = Trainer::new(config.clone(), train_set, device)?;
    trainer.keep_checkpoints_every(plan.keep_every);
    if resuming {
        trainer.resume_from(run)?;
        run.truncate_metrics(trainer.step())?;
    } else {
        run.write_json(PLAN_FILE, plan)?;
        trainer.checkpoint(run)?;
    }
    let watch = watch_sets(&trainer, plan)?;
    let options = RunOptions {
        watch: &watch,
        watch_every: plan.watch_every,
        budget_seconds: plan.budget_minutes.map(|m| m * 60.0),
        // A resumed run already planned its steps (config.json holds them).
        plan_steps: plan.budget_minutes.is_some() && !resuming,
    };
    trainer.run_with(Some(run), &options, on_event)?;
    Ok(trainer)
}
