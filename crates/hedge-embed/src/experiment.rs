//! Training runs as a user starts them: images from a [`HibData`], a run directory, held-out
//! sets watched against wall-clock, a budget, and resumption.

use std::path::Path;

use hedge_data::NDigitSplit;
use serde::{Deserialize, Serialize};
use tch::Device;

use crate::data::HibData;
use crate::monitor::WatchSet;
use crate::run::{RunConfig, RunDir};
use crate::train::{RunOptions, TrainEvent, Trainer};
use crate::{device_name, HibConfig, Result};

pub use crate::run::PLAN_FILE;

/// The plan a run was started with (the default for runs written before plans existed).
pub fn read_plan(run: &RunDir) -> Result<TrainPlan> {
    Ok(run.read_json_if_present(PLAN_FILE)?.unwrap_or_default())
}

/// What `--resume` continues: the run's config and plan with the user's changes applied and
/// saved. `steps` sets a new total (refused below the step the last checkpoint reached, with
/// `config.json` left as it was; the budget the run began with no longer applies), and
/// `keep_every` replaces the saved checkpoint-keeping interval (without it the run keeps
/// checkpoints as it began).
pub fn prepare_resume(
    run: &RunDir,
    steps: Option<usize>,
    keep_every: Option<usize>,
) -> Result<(crate::run::RunConfig, TrainPlan)> {
    run.check_config_unedited()?;
    let mut config = run.read_config()?;
    let mut plan = read_plan(run)?;
    if let Some(keep_every) = keep_every {
        plan.keep_every = keep_every;
        run.write_json(PLAN_FILE, &plan)?;
    }
    if let Some(steps) = steps {
        let reached = run.read_state()?.step;
        if steps < reached {
            return Err(crate::EmbedError::invalid(
                "steps",
                steps,
                format!(
                    "the run's last checkpoint is at step {reached}; --steps is the new total, so give at least \
                     {reached} (or start a new run to train fewer steps)"
                ),
            ));
        }
        config.hib.schedule.steps = steps;
        crate::ParamGuard::check_ref(&config.hib)?;
        run.write_config(&config)?;
        // An explicit new total replaces the budget the run was started with.
        plan.budget_minutes = None;
    }
    Ok((config, plan))
}

/// The schema of a run's `plan.json`: 2 records it; 1 (files without `schema`) held one stop
/// `target` or null instead of the list, and may lack `finish_planned_steps` (then false).
pub const PLAN_SCHEMA: u32 = 2;

/// How a training run is watched and bounded (not part of the model's hyper-parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct TrainPlan {
    /// [`PLAN_SCHEMA`] when written.
    pub schema: u32,
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
    /// Stop at the first watch that reaches all of these (the recipe benchmark: the paper's four
    /// values on the validation set).
    pub targets: Vec<crate::monitor::QualityTarget>,
    /// The budget only plans the step count; the run trains all planned steps even if it takes
    /// longer (reproductions that must not depend on the machine's other work).
    pub finish_planned_steps: bool,
}

impl hedge_run::schema::Schema for TrainPlan {
    const CURRENT: u32 = PLAN_SCHEMA;
    const WHAT: &'static str = "a run's plan.json";

    fn upgrade(_from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        use serde_json::Value;
        if let Some(one) = form.remove("target") {
            let targets = match one {
                Value::Null => Vec::new(),
                Value::Array(many) => many,
                one => vec![one],
            };
            form.insert("targets".into(), Value::Array(targets));
        }
        form.entry("targets").or_insert(Value::Array(Vec::new()));
        form.entry("finish_planned_steps").or_insert(false.into());
        Ok(())
    }
}

hedge_run::versioned_serde!(TrainPlan);

impl TrainPlan {
    /// Whether a run with this plan, at `step` of `steps` after `seconds` of training, has
    /// nothing left to train (the same stop rule as [`RunOptions::budget_reached`]).
    pub fn finished(&self, step: usize, steps: usize, seconds: f64) -> bool {
        step >= steps || self.run_options(&[], false).budget_reached(seconds)
    }

    /// The trainer's options for this plan, watching `watch`.
    fn run_options<'a>(&self, watch: &'a [WatchSet], plan_steps: bool) -> RunOptions<'a> {
        RunOptions {
            watch,
            watch_every: self.watch_every,
            budget_seconds: self.budget_minutes.map(|m| m * 60.0),
            plan_steps: self.budget_minutes.is_some() && plan_steps,
            finish_planned_steps: self.finish_planned_steps,
            targets: self.targets.clone(),
            stop: None,
        }
    }
}

impl Default for TrainPlan {
    fn default() -> Self {
        TrainPlan {
            schema: PLAN_SCHEMA,
            budget_minutes: None,
            watch_every: 0,
            watch_splits: Vec::new(),
            watch_pairs: 5000,
            keep_every: 0,
            targets: Vec::new(),
            finish_planned_steps: false,
        }
    }
}

/// The sets a run watches: `validation` (the held-out training classes or images, when the
/// config holds some out) and each split of `plan.watch_splits` under its own name (`test_seen`
/// without the held-out classes, which the model never trained on).
pub fn watch_sets(data: &HibData, trainer: &Trainer, plan: &TrainPlan) -> Result<Vec<WatchSet>> {
    let mut sets = Vec::new();
    if plan.watch_every == 0 {
        return Ok(sets);
    }
    if let Some(val) = trainer.validation_set() {
        sets.push(WatchSet::new("validation", val.clone(), plan.watch_pairs)?);
    }
    for &split in &plan.watch_splits {
        let mut images = data.role(&trainer.config, split)?;
        let held_out = trainer.held_out_classes();
        if split == NDigitSplit::TestSeen && !held_out.is_empty() {
            // Seen means trained on: the validation classes' test images are not.
            let keep: Vec<usize> =
                (0..images.len()).filter(|&i| held_out.binary_search(&images.labels[i]).is_err()).collect();
            images = images.subset(&keep);
        }
        sets.push(WatchSet::new(split.name(), images, plan.watch_pairs)?);
    }
    Ok(sets)
}

/// Trains (or resumes) the run in `run` to `config.steps` or to the plan's budget on the
/// training images `data` holds for `config`, watching the plan's sets; `on_event` sees every
/// step, evaluation and planning decision.
///
/// A fresh run writes a step-0 checkpoint first, so a run stopped before its first regular
/// checkpoint can still be resumed. With `resuming`, a run that has committed a checkpoint
/// continues from it and one that has not (stopped before its step-0 checkpoint) starts from
/// step 0; a resumed budgeted run keeps the planned step count of its `config.json` and stops
/// when the total training wall-clock reaches the budget (unless `plan.finish_planned_steps`).
pub fn train_run(
    run: &RunDir,
    data: &HibData,
    config: &HibConfig,
    device: Device,
    resuming: bool,
    plan: &TrainPlan,
    on_event: impl FnMut(TrainEvent),
) -> Result<Trainer> {
    train_run_until(run, data, config, device, resuming, plan, None, on_event)
}

/// [`train_run`] that also asks `stop` after every step and, when it answers `true`, stops
/// there with a checkpoint ([`TrainEvent::Stopped`]): the run resumes from that step (Python's
/// KeyboardInterrupt).
#[allow(clippy::too_many_arguments)]
pub fn train_run_until(
    run: &RunDir,
    data: &HibData,
    config: &HibConfig,
    device: Device,
    resuming: bool,
    plan: &TrainPlan,
    stop: Option<&dyn Fn() -> bool>,
    on_event: impl FnMut(TrainEvent),
) -> Result<Trainer> {
    let train_set = data.role(config, NDigitSplit::Train)?;
    let mut trainer = Trainer::new(crate::ParamGuard::check(config.clone())?, train_set, device)?;
    trainer.keep_checkpoints_every(plan.keep_every);
    let resuming = resuming && run.has_checkpoint();
    if resuming {
        trainer.resume_from(run)?;
    } else {
        trainer.checkpoint(run)?;
    }
    // Lines logged after the checkpoint belong to work it does not hold.
    run.truncate_metrics(trainer.step())?;
    let watch = watch_sets(data, &trainer, plan)?;
    // A resumed run already planned its steps (config.json holds them), and a budget beside
    // a given step count only caps the wall-clock.
    let plan_steps = !resuming && !config.steps_planned();
    let options = RunOptions { stop, ..plan.run_options(&watch, plan_steps) };
    trainer.run_with(Some(run), &options, on_event)?;
    Ok(trainer)
}

/// The libtorch the engine is built against (recorded in every run's `config.json`).
pub const LIBTORCH_VERSION: &str = "2.13.0";

/// Creates a run directory (refusing one that holds files unless `overwrite`) and writes its
/// definition ([`write_run_definition`]); `command` is how the run was started (recorded for
/// reproduction).
pub fn new_run(
    out: &Path,
    overwrite: bool,
    config: &HibConfig,
    plan: &TrainPlan,
    device: Device,
    command: &str,
) -> Result<RunDir> {
    let run = RunDir::create_with(out, overwrite)?;
    write_run_definition(&run, config, plan, device, command)?;
    Ok(run)
}

/// Writes a new run's plan and then its resolved `config.json`, the file that makes the
/// folder a run that `--resume` can continue.
pub fn write_run_definition(
    run: &RunDir,
    config: &HibConfig,
    plan: &TrainPlan,
    device: Device,
    command: &str,
) -> Result<()> {
    run.write_json(PLAN_FILE, plan)?;
    run.write_config(&RunConfig {
        schema: crate::run::RUN_SCHEMA,
        hib: config.clone(),
        device: device_name(device),
        threads: tch::get_num_threads() as i64,
        command: command.to_string(),
        hedge_version: env!("CARGO_PKG_VERSION").into(),
        libtorch: LIBTORCH_VERSION.into(),
    })
}

/// Starts a new training run of `config` in `out` (refused when it holds files, unless
/// `overwrite` and hedge made it): the config's precision resolved for `device`, the training
/// images loaded and checked against the settings (a grouped batch needs as many classes as it
/// draws; a user's set may have few) and, on a user's images, the split listed in
/// `data_split.json` — all before the folder exists, so a failure leaves none. Returns the run
/// directory and the config it holds; [`train_run`] then trains it.
///
/// # Errors
/// An `out` inside the user's image folder, images the config cannot train on, and the run
/// directory's refusals.
pub fn start_run(
    data: &HibData,
    mut config: HibConfig,
    plan: &TrainPlan,
    device: Device,
    out: &std::path::Path,
    overwrite: bool,
    command: &str,
) -> Result<(RunDir, HibConfig)> {
    config.model.conv_precision = config.model.conv_precision.resolve(device)?;
    if let Some(own) = &config.data.own_images {
        hedge_run::check_out_not_inside(out, &own.path, "--data")?;
    }
    let train_set = data.role(&config, NDigitSplit::Train)?;
    Trainer::check_data(&crate::ParamGuard::check(config.clone())?, train_set)?;
    let own_split = data.own_split(&config)?;
    let run = new_run(out, overwrite, &config, plan, device, command)?;
    if let Some(split) = own_split {
        tracing::info!(
            "training on {} images of {}; unseen (test_unseen): {}",
            split.train_images,
            split.seen_classes.join(", "),
            split.unseen_classes.join(", ")
        );
        run.write_json(crate::data::OWN_SPLIT_FILE, &split)?;
    }
    Ok((run, config))
}

/// The paper's Table 1 column of a configuration: point, MoG-1 (one Gaussian) or MoG-2.
pub fn paper_column(config: &HibConfig) -> Option<&'static str> {
    use crate::EmbeddingKind;
    match config.model.embedding {
        EmbeddingKind::Point => Some("point"),
        EmbeddingKind::Gaussian | EmbeddingKind::Mixture { components: 1 } => Some("mog1"),
        EmbeddingKind::Mixture { components: 2 } => Some("mog2"),
        EmbeddingKind::Mixture { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::monitor::{MonitorRecord, QuickEval};
    use crate::run::{RunConfig, MONITOR_FILE};

    /// A run directory holding what the report reads, config.json and monitor.jsonl, with
    /// test_unseen AP clean 0.95 at 60 s and 0.99 at 120 s.
    fn watched_run(dir: &std::path::Path, digits: usize) -> RunDir {
        let run = RunDir::create(dir).unwrap();
        run.write_config(&RunConfig {
            schema: crate::run::RUN_SCHEMA,
            hib: HibConfig::default().with_digits(digits).with_dim(2).with_model(crate::EmbeddingKind::Gaussian),
            device: "cpu".into(),
            threads: 2,
            command: String::new(),
            hedge_version: String::new(),
            libtorch: String::new(),
        })
        .unwrap();
        // Opening a run checks that its weights exist; the report never reads them.
        std::fs::write(run.file(crate::run::MODEL_FILE), b"").unwrap();
        for (step, seconds, ap) in [(500, 60.0, 0.95), (1000, 120.0, 0.99)] {
            let q = QuickEval { ap_clean: ap, ap_corrupt: 0.5, knn_clean: 0.5, knn_corrupt: 0.3 };
            let record = MonitorRecord {
                step,
                train_seconds: seconds,
                ema: false,
                sets: BTreeMap::from([("test_unseen".to_string(), q)]),
                eval_seconds: 1.0,
            };
            run.append_json_line(MONITOR_FILE, &record).unwrap();
        }
        run
    }

    /// Issue 17: `--resume --steps` below the current step rewrote config.json, and a resumed
    /// run forgot its `--keep-every`. Now the first is refused with config.json untouched, and
    /// the saved interval is kept unless the user gives a new one.
    #[test]
    fn resuming_keeps_the_saved_plan_and_refuses_a_total_below_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let run = watched_run(&dir.path().join("r"), 2);
        let plan = TrainPlan { keep_every: 500, budget_minutes: Some(20.0), ..TrainPlan::default() };
        run.write_json(PLAN_FILE, &plan).unwrap();
        run.write_json(crate::run::STATE_FILE, &crate::run::RunState { step: 1000, seconds: 120.0 }).unwrap();
        let config_before = std::fs::read(run.file(crate::run::CONFIG_FILE)).unwrap();

        let msg = prepare_resume(&run, Some(999), None).unwrap_err().to_string();
        assert!(msg.contains("'steps'") && msg.contains("step 1000"), "{msg}");
        assert_eq!(std::fs::read(run.file(crate::run::CONFIG_FILE)).unwrap(), config_before);

        let (config, resumed) = prepare_resume(&run, None, None).unwrap();
        assert_eq!((resumed.keep_every, resumed.budget_minutes), (500, Some(20.0)));
        assert_eq!(config.hib.schedule.steps, HibConfig::default().schedule.steps);

        let (config, resumed) = prepare_resume(&run, Some(3000), Some(250)).unwrap();
        assert_eq!((config.hib.schedule.steps, resumed.keep_every, resumed.budget_minutes), (3000, 250, None));
        assert_eq!(run.read_config().unwrap().hib.schedule.steps, 3000);
        assert_eq!(read_plan(&run).unwrap().keep_every, 250);

        // Once a checkpoint has recorded the definition, an edit by hand (the learning rate, 1e-3
        // to 0.5) is refused, naming the field and both values; the recorded change above
        // (--steps 3000) is not one.
        run.directory().checkpoint(1000).commit().unwrap();
        let path = run.file(crate::run::CONFIG_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let lr = format!("\"learning_rate\": {}", HibConfig::default().optimiser.learning_rate);
        assert!(text.contains(&lr), "{text}");
        std::fs::write(&path, text.replace(&lr, "\"learning_rate\": 0.5")).unwrap();
        let msg = prepare_resume(&run, None, None).unwrap_err().to_string();
        assert!(
            msg.contains("edited after the run started") && msg.contains("hib.learning_rate: 0.001 → 0.5"),
            "{msg}"
        );
        assert!(msg.contains("--steps"), "{msg}");
        std::fs::write(&path, text).unwrap();
        prepare_resume(&run, None, None).unwrap();
    }
}
