//! The grid of HIB runs that a study and a reproduction train alike: runs in order, each trained
//! (or continued, or read back) and evaluated in `runs/<name>/` on hedge's one engine
//! ([`hedge_run::run_resumable`]), logged to `runs.jsonl`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::Device;
use tracing::info;

use crate::hib::run::train_with_progress;
use crate::Result;
use hedge_embed::evaluate::{HibMetric, MetricSet};
use hedge_embed::experiment::{new_run, TrainPlan};
use hedge_embed::report::EvalReport;
use hedge_embed::run::{RunDir, BEST_MODEL_FILE};
use hedge_embed::run_eval::{eval_file_name, evaluate_run, read_eval, EvalSettings};
use hedge_embed::{HibConfig, HibData};
use hedge_run::{run_resumable, RunDirectory};

/// The log of finished runs.
pub const RUNS_LOG: &str = "runs.jsonl";

/// Where a reproduction reads its images and trains: the papers' data root and the device.
#[derive(Debug, Clone)]
pub struct ReproduceEnv {
    pub data: hedge_data::DataRoot,
    pub device: Device,
}

/// What a reproduction trains on, loaded once: the images ([`HibData`] reads each split once)
/// and the device.
#[derive(Debug)]
pub struct ReproduceData {
    pub images: HibData,
    pub device: Device,
}

impl ReproduceData {
    /// The images under `env.data`, on `env.device`.
    pub fn new(env: &ReproduceEnv) -> Self {
        ReproduceData { images: HibData::new(env.data.clone()), device: env.device }
    }
}

/// One run of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyRun {
    /// Its folder under `runs/` and its row of the table.
    pub name: String,
    pub hib: HibConfig,
    /// With a budget: the earlier run whose planned step count this one trains.
    pub steps_from: Option<String>,
}

/// How a grid trains and scores each run: its training plan and its evaluation.
pub(crate) struct GridSettings<'a> {
    pub plan: &'a dyn Fn(&StudyRun) -> TrainPlan,
    pub eval: &'a dyn Fn(&StudyRun) -> EvalSettings,
    /// Recorded in every run's config.
    pub command: &'a str,
}

/// Trains and evaluates `runs` in order in `dir`'s `runs/<name>/` on hedge's one engine, each
/// logged to [`RUNS_LOG`] as `record(index, steps trained, evaluations)` makes it: the grid of a
/// study and of a reproduction alike. A run with `steps_from` trains the planned step count of
/// that earlier run (`name_and_steps` reads it from the log) instead of planning from the budget.
pub(crate) fn run_grid<R>(
    dir: &RunDirectory,
    data: &ReproduceData,
    runs: &[StudyRun],
    grid: &GridSettings<'_>,
    record: impl Fn(usize, usize, RunEvals) -> R,
    name_and_steps: impl Fn(&R) -> (String, usize),
    progress: &mut dyn FnMut(R),
) -> Result<()>
where
    R: Serialize + serde::de::DeserializeOwned + Clone,
{
    run_resumable::<R, (), crate::LabError>(
        dir,
        RUNS_LOG,
        runs.len(),
        |index, _, on_step| {
            let run = &runs[index];
            let run_dir = dir.path().join("runs").join(&run.name);
            info!("run {} of {}: {} in {}", index + 1, runs.len(), run.name, run_dir.display());
            let mut config = run.hib.clone();
            let mut run_plan = (grid.plan)(run);
            if let Some(planner) = &run.steps_from {
                let finished: Vec<R> = dir.checkpointed_json_lines(RUNS_LOG)?;
                let Some((_, steps)) = finished.iter().map(&name_and_steps).find(|(name, _)| name == planner) else {
                    return Err(crate::error::invalid(
                        "steps_from",
                        planner,
                        "that run has not finished before this one (a grid runs in order)",
                    ));
                };
                info!("{}: trains {planner}'s {steps} planned steps", run.name);
                config.schedule.steps = steps;
                run_plan.budget_minutes = None;
            }
            let evals = train_and_eval(&run_dir, data, &config, &(grid.eval)(run), &run_plan, grid.command)?;
            let steps = RunDir::open(&run_dir)?.read_config()?.hib.schedule.steps;
            let record = record(index, steps, evals);
            on_step(&record, None)?;
            progress(record);
            Ok(())
        },
        |_| {},
    )?;
    Ok(())
}

/// The evaluations of one run: on the tables' split and on the other one, if the protocol has one.
pub(crate) struct RunEvals {
    pub(crate) main: EvalReport,
    pub(crate) other: Option<EvalReport>,
}

/// Trains (or resumes, or reuses) one run and returns its evaluation on the tables' split and the
/// protocol's other test split. A run that held validation images or classes out is evaluated on
/// every split with the weights they chose (`model_best.safetensors`), so both columns score the
/// same model.
pub(crate) fn train_and_eval(
    dir: &Path,
    data: &ReproduceData,
    config: &HibConfig,
    settings: &EvalSettings,
    plan: &TrainPlan,
    command: &str,
) -> Result<RunEvals> {
    let device = data.device;
    let budgeted = plan.budget_minutes.is_some();
    let (run, resuming) = if dir.join(hedge_embed::run::CONFIG_FILE).is_file() {
        let run = RunDir::open_to_resume(dir)?;
        let stored = run.read_config()?.hib;
        let mut want = config.clone();
        want.model.conv_precision = stored.model.conv_precision;
        if budgeted {
            // A budgeted run plans its own step count.
            want.schedule.steps = stored.schedule.steps;
        }
        if stored != want {
            return Err(hedge_embed::EmbedError::run(
                dir,
                "holds a run with another configuration; remove it or choose another --out",
            )
            .into());
        }
        (run, true)
    } else {
        let mut c = config.clone();
        c.model.conv_precision = c.model.conv_precision.resolve(device)?;
        (new_run(dir, false, &c, plan, device, command)?, false)
    };
    let stored = run.read_config()?.hib;
    let state = run.read_state()?;
    let done = plan.finished(state.step, stored.schedule.steps, state.seconds);
    if !done {
        train_with_progress(&run, &data.images, &stored, device, resuming, plan)?;
    }
    let other_split = stored.data.protocol.test_splits().iter().copied().find(|&s| s != settings.split);
    let mut evals = Vec::new();
    for split in std::iter::once(settings.split).chain(other_split) {
        if done {
            // A report of another evaluation subset is evaluated again.
            if let Some(report) = read_eval(&run, split)?.filter(|r| r.images_per_class == settings.images_per_class) {
                info!("reusing {}", run.file(&eval_file_name(split)).display());
                // Reports written before `undefined` existed gain it (nothing else changes).
                let mut explained = report.clone().with_nulls_explained();
                // Reports written before the kept-gallery KNN reading existed gain it: computed
                // alone, it draws what a full evaluation draws, so its numbers are the full
                // evaluation's.
                if explained.knn_kept.is_none() && explained.metrics.is_none() {
                    info!("{}: KNN with the probe kept in the gallery", run.path.display());
                    let (_, kept) = evaluate_run(
                        &run,
                        &data.images,
                        scored_weights(&run).as_deref(),
                        &EvalSettings {
                            split,
                            repeats: explained.repeats,
                            estimator: explained.match_estimator,
                            metrics: MetricSet::from(vec![HibMetric::KnnKept]),
                            ..*settings
                        },
                        device,
                        command,
                    )?;
                    explained.knn_kept = kept.knn_kept;
                }
                if explained != report {
                    hedge_embed::run_eval::save_eval(&run, &explained)?;
                }
                evals.push(explained);
                continue;
            }
        }
        let weights = scored_weights(&run);
        let (_, mut report) = evaluate_run(
            &run,
            &data.images,
            weights.as_deref(),
            &EvalSettings { split, ..*settings },
            device,
            command,
        )?;
        // The run's own report, whichever weights it scored.
        report.run = run.path.display().to_string();
        hedge_embed::run_eval::save_eval(&run, &report)?;
        evals.push(report);
    }
    let other = other_split.map(|_| evals.pop().expect("an evaluation of the other split"));
    let main = evals.pop().expect("an evaluation of the tables' split");
    Ok(RunEvals { main, other })
}

/// The weights a run's tables, figures and number lines score: `model_best.safetensors` when
/// validation chose them, else (`None`) the run's own.
pub(crate) fn scored_weights(run: &RunDir) -> Option<std::path::PathBuf> {
    let best = run.file(BEST_MODEL_FILE);
    best.is_file().then_some(best)
}
