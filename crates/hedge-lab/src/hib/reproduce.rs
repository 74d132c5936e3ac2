//! The paper's experiment as one call: [`reproduce`] trains point, MoG-1 and MoG-2 embeddings
//! (and optionally Table 5's β = 0 and Appendix B's contrastive margins), evaluates them on both
//! test splits, and writes the paper's Tables 1 and 2 (and 5–7, Appendix B) with the paper's
//! numbers beside ours, `summary.json` ([`ReproduceSummary`]) and the figures. It runs on hedge's
//! one engine ([`hedge_run::Experiment`]): every finished run is logged and checkpointed, so an
//! interrupted reproduction continues where it stopped (`--resume`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use hedge_data::{Corruption, NDigitProtocol, NDigitSplit};
use serde::{Deserialize, Serialize};
use tracing::info;

use crate::hib::figures::{cloud, embedding_ellipses};
use crate::hib::grid::{run_grid, scored_weights, GridSettings, StudyRun};
use crate::hib::paper::{self, PaperModel};
use crate::hib::run::curve;
use crate::hib::summary::{ModelSummary, OtherSplit, ReproduceSummary, ValidationChoice};
use crate::Result;
use hedge_embed::experiment::TrainPlan;
use hedge_embed::report::{mean, CurvePoint, EvalReport, Metric, TwinStats, Variant, VerificationStats};
use hedge_embed::run::{BestModel, RunDir, BEST_FILE};
use hedge_embed::run_eval::{embed_run_twins, with_group, EvalSettings};
use hedge_embed::{embed_dataset, EmbedOptions, EmbeddedSet, EmbeddingKind, HibConfig, LossKind, LrSchedule, Steps};
use hedge_run::undefined::Undefined;
use hedge_run::{Experiment, ParamGuard, RunDirectory};

/// Margins of the Appendix B comparison.
pub const MARGINS: [f64; 4] = [0.5, 1.0, 2.0, 4.0];

/// The spread `summary.json` reports.
pub const STD_CONVENTION: &str = "sample standard deviation over seeds (n - 1); null for one seed";

/// The schema of [`ReproduceConfig`]'s serde form (`config.json` of a reproduction): 2 holds
/// the settings as one [`HibConfig`] (`hib`); 1, written before `schema` existed, held a recipe
/// with seven settings beside it, which [`ReproduceConfig`] still reads ([`v1`]).
pub const REPRODUCE_SCHEMA: u32 = 2;

/// What [`reproduce`] trains and writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ReproduceConfig {
    /// [`REPRODUCE_SCHEMA`] when written.
    pub schema: u32,
    /// The settings every model starts from (each sets its own kind, and Table 5's its β):
    /// hedge's defaults ← a recipe ← the command's flags ([`hedge_embed::SettingsRequest`]). Its
    /// `steps` is unplanned with a budget ([`HibConfig::steps_planned`]); its `protocol` names the
    /// tables every model trains and is tested on.
    pub hib: HibConfig,
    /// Minutes of training per model (evaluation excluded): the step count is planned from the
    /// speed of the first steps so that schedules end on time.
    pub budget_minutes: Option<f64>,
    /// With a budget: train every planned step even if the machine slows down after planning,
    /// so other work beside a long reproduction changes its wall-clock, not its numbers.
    pub finish_planned_steps: bool,
    /// The split Tables 1 and 2 are computed on (one of the protocol's test splits); the
    /// protocol's other test split, if it has one, is reported beside it.
    pub split: NDigitSplit,
    /// Watch the validation classes (if the recipe holds some out) and the tables' split every
    /// this many steps (0: never); the validation classes choose `model_best.safetensors`.
    pub watch_every: usize,
    /// Seeds per model of Table 1 (results are averaged).
    pub seeds: u64,
    /// Seeds of the extra models (Table 5's β = 0, Appendix B's margins).
    pub extra_seeds: u64,
    /// Repeats of the sampling-dependent evaluation.
    pub repeats: usize,
    /// Evaluate on the first this many images of every class only (smoke tests, quick looks).
    pub eval_images_per_class: Option<usize>,
    /// Also train MoG-1 with β = 0 (Table 5).
    pub beta_sweep: bool,
    /// Also write Tables 6 and 7 (plurality KNN, gallery/probe variants).
    pub appendix_g: bool,
    /// Also train point embeddings with the hard contrastive loss at [`MARGINS`] (Appendix B).
    pub appendix_b: bool,
    /// Also evaluate every kept checkpoint and plot quality against steps.
    pub curves: bool,
    /// Draw the paper's figures of the seed-0 runs (embeddings, Figs 3, 4 and 7; the number line
    /// of Fig. 10 for D = 1; performance against uncertainty, Fig. 5).
    pub figures: bool,
    /// How the reproduction was started, recorded in its files.
    pub command: String,
}

impl hedge_run::schema::Schema for ReproduceConfig {
    const CURRENT: u32 = REPRODUCE_SCHEMA;
    const WHAT: &'static str = "a reproduction's config.json";

    fn upgrade(_from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        v1::upgrade(form)
    }
}

hedge_run::versioned_serde!(ReproduceConfig);

/// Schema 1 of [`ReproduceConfig`], read only: an optional recipe with the digits, dimension,
/// protocol, steps, learning rate, schedule and grouped batch set beside it.
pub mod v1 {
    use super::*;

    /// The settings schema 1 held outside its recipe.
    #[derive(Deserialize)]
    struct Settings {
        digits: usize,
        dim: usize,
        steps: Option<usize>,
        budget_minutes: Option<f64>,
        recipe: Option<HibConfig>,
        protocol: NDigitProtocol,
        learning_rate: Option<f64>,
        lr_schedule: Option<LrSchedule>,
        group: Option<String>,
    }

    /// Replaces schema 1's settings in `form` by the one [`HibConfig`] they gave every model
    /// (the recipe, or the defaults, with the settings beside it laid over), and draws the figures
    /// (every reproduction did before `figures` existed).
    ///
    /// # Errors
    /// A message naming what schema 1 lacks or holds wrongly.
    pub fn upgrade(form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        let old: Settings =
            serde_json::from_value(serde_json::Value::Object(form.clone())).map_err(|e| format!("schema 1: {e}"))?;
        let recipe = old.recipe.clone().unwrap_or_default();
        let default_steps = if old.recipe.is_some() { recipe.schedule.steps } else { 20_000 };
        let steps = Steps::from_flags(old.steps, old.budget_minutes, default_steps);
        let mut hib = recipe.with_protocol(old.protocol).with_digits(old.digits).with_dim(old.dim).with_training(steps);
        if let Some(spec) = &old.group {
            hib = with_group(hib, spec).map_err(|e| e.to_string())?;
        }
        if let Some(lr) = old.learning_rate {
            hib = hib.with_learning_rate(lr);
        }
        if let Some(schedule) = old.lr_schedule {
            hib = hib.with_lr_schedule(schedule);
        }
        for key in ["digits", "dim", "steps", "recipe", "protocol", "learning_rate", "lr_schedule", "group"] {
            form.remove(key);
        }
        form.insert("hib".into(), serde_json::to_value(hib).map_err(|e| e.to_string())?);
        // Reproductions drew their figures before the choice existed.
        form.entry("figures").or_insert(true.into());
        Ok(())
    }
}

impl Default for ReproduceConfig {
    fn default() -> Self {
        ReproduceConfig {
            schema: REPRODUCE_SCHEMA,
            hib: HibConfig::default(),
            budget_minutes: None,
            finish_planned_steps: false,
            split: NDigitSplit::Test,
            watch_every: 0,
            seeds: 1,
            extra_seeds: 1,
            repeats: 10,
            eval_images_per_class: None,
            beta_sweep: false,
            appendix_g: false,
            appendix_b: false,
            curves: false,
            figures: true,
            command: String::new(),
        }
    }
}

impl ReproduceConfig {
    pub fn with_digits(mut self, digits: usize) -> Self {
        self.hib = self.hib.with_digits(digits);
        self
    }
    pub fn with_dim(mut self, dim: usize) -> Self {
        self.hib = self.hib.with_dim(dim);
        self
    }
    pub fn with_steps(mut self, steps: usize) -> Self {
        self.hib = self.hib.with_steps(steps);
        self
    }
    pub fn with_seeds(mut self, seeds: u64) -> Self {
        self.seeds = seeds;
        self
    }

    /// The digits per image (N) of every model.
    pub fn digits(&self) -> usize {
        self.hib.data.digits
    }

    /// The embedding dimension (D) of every model.
    pub fn dim(&self) -> usize {
        self.hib.model.dim
    }

    /// The tables every model trains and is tested on.
    pub fn protocol(&self) -> NDigitProtocol {
        self.hib.data.protocol
    }

    /// The protocol's test split reported beside the tables' split (open-set: test_seen beside
    /// test_unseen and back; instance: none, it has one test split).
    pub fn other_split(&self) -> Option<NDigitSplit> {
        self.protocol().test_splits().iter().copied().find(|&s| s != self.split)
    }
}

impl ParamGuard for ReproduceConfig {
    type Error = crate::LabError;

    /// Checks what a user can give wrong before anything is trained or written.
    fn check_ref(&self) -> Result<()> {
        EvalSettings { images_per_class: self.eval_images_per_class, ..Default::default() }.check_ref()?;
        if self.seeds == 0 || self.extra_seeds == 0 {
            return Err(crate::error::invalid(
                "seeds",
                format!("{} and {} extra", self.seeds, self.extra_seeds),
                "seeds and extra seeds must be at least 1",
            ));
        }
        if let Some(m) = self.budget_minutes {
            if !(m.is_finite() && m > 0.0) {
                return Err(crate::error::invalid("budget_minutes", m, "give a positive number of minutes"));
            }
        } else if self.finish_planned_steps {
            return Err(crate::error::invalid("finish_planned_steps", true, "needs a budget (budget_minutes)"));
        }
        if self.split == NDigitSplit::Train {
            return Err(crate::error::invalid("split", "train", "tables are computed on a test split"));
        }
        self.protocol().check_split(self.split)?;
        if self.repeats == 0 {
            return Err(crate::error::invalid("repeats", 0, "give at least 1"));
        }
        // Every model's seeds trained for its steps (or the minutes of a budget): Table 1's
        // models take `seeds`, the variants `extra_seeds`.
        let (mut main, mut extra) = (0.0, 0.0);
        for m in models(self)? {
            let one_seed = match self.budget_minutes {
                Some(minutes) => minutes * 60.0,
                None => {
                    m.config.schedule.steps as f64 * m.config.step_operations()
                        / hedge_run::budget::rates::DENSE_PER_SECOND
                }
            };
            if matches!(m.key.as_str(), "point" | "mog1" | "mog2") {
                main += one_seed;
            } else {
                extra += one_seed;
            }
        }
        hedge_run::Workload::new("hib reproduce: every model's seeds trained", move |v| main * v[0] + extra * v[1])
            .knob("--seeds", self.seeds as f64, 1.0)
            .knob(if extra > 0.0 { "--extra-seeds" } else { "" }, self.extra_seeds as f64, 1.0)
            .check()?;
        Ok(())
    }
}

/// One model of the reproduction.
#[derive(Debug, Clone)]
pub struct ReproduceModel {
    /// Its key in `summary.json` and its run folders' prefix (`point`, `mog1`, …).
    pub key: String,
    pub label: String,
    pub config: HibConfig,
    /// Seeds 0..seeds are trained and averaged.
    pub seeds: u64,
    /// With a budget, the model whose seed 0 planned this one's step count (Table 5's and
    /// Appendix B's variants train as many steps as the Table 1 model they vary).
    pub steps_from: Option<String>,
}

/// The models a reproduction trains, in order: point, MoG-1, MoG-2, then the extras.
pub fn models(c: &ReproduceConfig) -> Result<Vec<ReproduceModel>> {
    let base = c.hib.clone();
    let model = |key: &str, label: &str, config: HibConfig, seeds: u64| ReproduceModel {
        key: key.into(),
        label: label.into(),
        config,
        seeds,
        steps_from: None,
    };
    let mut v = vec![
        model("point", "point", base.clone().with_model(EmbeddingKind::Point), c.seeds),
        model("mog1", "MoG-1", base.clone().with_model(EmbeddingKind::Gaussian), c.seeds),
        model("mog2", "MoG-2", base.clone().with_model(EmbeddingKind::MOG2), c.seeds),
    ];
    if c.beta_sweep {
        let config = base.clone().with_model(EmbeddingKind::Gaussian).with_beta(0.0);
        v.push(ReproduceModel {
            steps_from: Some("mog1".into()),
            ..model("mog1-beta0", "MoG-1, beta = 0", config, c.extra_seeds)
        });
    }
    if c.appendix_b {
        for m in MARGINS {
            let config = base.clone().with_model(EmbeddingKind::Point).with_loss(LossKind::CONTRASTIVE).with_margin(m);
            v.push(ReproduceModel {
                steps_from: Some("point".into()),
                ..model(
                    &format!("point-contrastive-m{m}"),
                    &format!("point, contrastive M = {m}"),
                    config,
                    c.extra_seeds,
                )
            });
        }
    }
    for m in &v {
        m.config.check_ref()?;
    }
    Ok(v)
}

/// The paper's columns for (N, D): Table 1's `point`, `mog1`, `mog2`, and Table 5's β = 0 and
/// β = 1e-4 as `mog1-beta0` and `mog1-beta1e4` where the paper has them.
pub fn paper_columns(digits: usize, dim: usize) -> Option<BTreeMap<String, PaperModel>> {
    let t = paper::table1(digits, dim)?;
    let mut v = BTreeMap::from([("point".to_string(), t.point), ("mog1".into(), t.mog1), ("mog2".into(), t.mog2)]);
    if let Some(t5) = paper::table5(digits, dim) {
        v.insert("mog1-beta0".into(), t5.beta0);
        v.insert("mog1-beta1e4".into(), t5.beta1e4);
    }
    Some(v)
}

/// A paper column's value of a metric and variant.
fn paper_value(model: &PaperModel, metric: Metric, variant: Variant) -> Option<f64> {
    let cc = match metric {
        Metric::VerificationAp => Some(model.verification_ap),
        Metric::KnnAccuracy => Some(model.knn_accuracy),
        Metric::TauAp => model.tau_ap,
        Metric::TauKnn => model.tau_knn,
        Metric::KnnPlurality => None,
    }?;
    Some(match variant {
        Variant::Clean => cc.clean,
        Variant::Corrupt => cc.corrupt,
    })
}

/// The evaluations of one model's seeds.
type ModelRuns = (ReproduceModel, Vec<EvalReport>);

/// The line `runs.jsonl` logs for every finished run (a model's seed): its evaluations and the
/// step count it trained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinishedRun {
    /// The model's key (`point`, `mog1`, …).
    pub model: String,
    pub seed: u64,
    /// Training steps of the run (with a budget: planned by seed 0 of the model, or of the
    /// model a variant varies, and trained by every other seed).
    pub steps: usize,
    /// On the tables' split.
    pub main: EvalReport,
    /// On the protocol's other test split, if it has one.
    pub other: Option<EvalReport>,
    /// Every field this line leaves `null`, and why: the evaluations' own lists under `main.`
    /// and `other.` (absent when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<Undefined>,
}

impl FinishedRun {
    /// The line of a finished run, its `null`s explained.
    fn new(model: String, seed: u64, steps: usize, main: EvalReport, other: Option<EvalReport>) -> Self {
        let mut undefined: Vec<Undefined> = [("main", Some(&main)), ("other", other.as_ref())]
            .into_iter()
            .flat_map(|(prefix, report)| {
                report.into_iter().flat_map(move |r| {
                    r.undefined.iter().map(move |u| Undefined {
                        fields: u.fields.iter().map(|f| format!("{prefix}.{f}")).collect(),
                        why: u.why.clone(),
                    })
                })
            })
            .collect();
        if other.is_none() {
            undefined.push(Undefined {
                fields: vec!["other".into()],
                why: "the instance protocol has one test split: there is no other to evaluate".into(),
            });
        }
        FinishedRun { model, seed, steps, main, other, undefined }
    }
}

pub use crate::hib::grid::{ReproduceData, ReproduceEnv, RUNS_LOG};

/// Every run of a reproduction in order: each model's seeds.
fn runs_of(c: &ReproduceConfig) -> Result<Vec<(ReproduceModel, u64)>> {
    Ok(models(c)?.into_iter().flat_map(|m| (0..m.seeds).map(move |seed| (m.clone(), seed))).collect())
}

/// The training plan every run of `c` shares.
fn train_plan(c: &ReproduceConfig) -> TrainPlan {
    TrainPlan {
        budget_minutes: c.budget_minutes,
        watch_every: c.watch_every,
        // The tables' split beside the validation classes: a third set would add ~1/3 to each
        // watch, and the other split is evaluated at the end anyway.
        watch_splits: if c.watch_every > 0 { vec![c.split] } else { vec![] },
        keep_every: 1000,
        finish_planned_steps: c.finish_planned_steps,
        ..Default::default()
    }
}

/// Each reproduction runs on the one engine of hedge ([`hedge_run::Experiment`]): a run (a
/// model's seed) trains and is evaluated in `runs/<model>-seed<seed>/` (a training resumes from
/// its own last checkpoint there), then `runs.jsonl` logs it and `progress.json` is
/// checkpointed. A new reproduction over a folder with `--overwrite` starts its log anew but
/// continues or reads back every run folder that holds the same configuration (remove `runs/` to
/// train again).
impl Experiment for ReproduceConfig {
    type Data = ReproduceData;
    type Root = ReproduceEnv;
    type Summary = ReproduceSummary;
    type Finished = FinishedRun;
    type Error = crate::LabError;

    const KIND: &'static str = "hib reproduction";
    const FILES: &'static [&'static str] = &[
        RUNS_LOG,
        "summary.json",
        "table1.md",
        "table2.md",
        "table5.md",
        "table6.md",
        "table7.md",
        "appendix_b.md",
        "curves.json",
        "time_to_quality.md",
        "README.md",
    ];

    fn is_started_as(&self, started: &Self) -> bool {
        Self { command: started.command.clone(), ..self.clone() } == *started
    }

    fn load(&self, root: &ReproduceEnv) -> Result<ReproduceData> {
        let data = ReproduceData::new(root);
        // The tables the runs train and are scored on exist and are intact before anything runs.
        data.images.split(self.digits(), self.protocol(), NDigitSplit::Train)?;
        data.images.split(self.digits(), self.protocol(), self.split)?;
        Ok(data)
    }

    fn check(&self, _data: &ReproduceData) -> Result<()> {
        self.check_ref()
    }

    fn continue_in(
        &self,
        dir: &RunDirectory,
        data: &ReproduceData,
        progress: &mut dyn FnMut(FinishedRun),
    ) -> Result<ReproduceSummary> {
        let runs = runs_of(self)?;
        // The models' seeds as a grid of runs (`runs/<model>-seed<N>/`), trained by the grid
        // every HIB study trains: with a budget, seed 0 of a model (or of the model a variant
        // varies) plans its step count from the machine's speed and every other run of it trains
        // exactly that many, whatever else the machine was doing when they started.
        let grid_runs: Vec<StudyRun> = runs
            .iter()
            .map(|(m, seed)| {
                let name = format!("{}-seed{seed}", m.key);
                let planner = format!("{}-seed0", m.steps_from.as_deref().unwrap_or(&m.key));
                let steps_from = (self.budget_minutes.is_some() && planner != name).then_some(planner);
                StudyRun { name, hib: m.config.clone().with_seed(*seed), steps_from }
            })
            .collect();
        let plan = train_plan(self);
        let settings = EvalSettings {
            split: self.split,
            repeats: self.repeats,
            images_per_class: self.eval_images_per_class,
            ..Default::default()
        };
        let grid = GridSettings { plan: &|_| plan.clone(), eval: &|_| settings, command: &self.command };
        run_grid(
            dir,
            data,
            &grid_runs,
            &grid,
            |index, steps, e| FinishedRun::new(runs[index].0.key.clone(), runs[index].1, steps, e.main, e.other),
            |r: &FinishedRun| (format!("{}-seed{}", r.model, r.seed), r.steps),
            progress,
        )?;
        let summary = self.report_in(dir)?;
        let results = self.model_runs(&dir.checkpointed_json_lines(RUNS_LOG)?)?.0;
        if self.figures {
            draw_figures(self, dir.path(), &results, data)?;
        }
        if self.curves {
            draw_curves(self, dir.path(), &results, data)?;
        }
        Ok(summary)
    }

    fn report_in(&self, dir: &RunDirectory) -> Result<ReproduceSummary> {
        let finished: Vec<FinishedRun> = dir.checkpointed_json_lines(RUNS_LOG)?;
        let (results, other) = self.model_runs(&finished)?;
        let mut summary = summarise(self, &results)?;
        if let Some(split) = self.other_split() {
            summary.seconds += other.iter().flat_map(|(_, e)| e).map(|e| e.eval_seconds).sum::<f64>();
            summary.other_split = Some(OtherSplit { models: summarise(self, &other)?.models, split });
        }
        let summary = summary.with_nulls_explained();
        if let Some(line) = hedge_run::undefined::summary_line(&summary.undefined) {
            info!("{}: {line}", dir.file("summary.json").display());
        }
        dir.write_json("summary.json", &summary)?;
        dir.write_bytes("table1.md", table1(&summary).as_bytes())?;
        dir.write_bytes("table2.md", table2(&summary).as_bytes())?;
        if self.beta_sweep {
            dir.write_bytes("table5.md", table5(&summary).as_bytes())?;
        }
        if self.appendix_g {
            dir.write_bytes("table6.md", table67(self, &results, false).as_bytes())?;
            dir.write_bytes("table7.md", table67(self, &results, true).as_bytes())?;
        }
        if self.appendix_b {
            dir.write_bytes("appendix_b.md", appendix_b(&summary).as_bytes())?;
        }
        dir.write_bytes("README.md", readme(self, &summary).as_bytes())?;
        Ok(summary)
    }
}

impl ReproduceConfig {
    /// The logged runs grouped by model in the reproduction's order: each model's evaluations
    /// on the tables' split, then on the other split.
    fn model_runs(&self, finished: &[FinishedRun]) -> Result<(Vec<ModelRuns>, Vec<ModelRuns>)> {
        let (mut results, mut other) = (Vec::new(), Vec::new());
        for m in models(self)? {
            let runs: Vec<&FinishedRun> = finished.iter().filter(|r| r.model == m.key).collect();
            if runs.is_empty() {
                continue;
            }
            other.push((m.clone(), runs.iter().filter_map(|r| r.other.clone()).collect()));
            results.push((m, runs.iter().map(|r| r.main.clone()).collect()));
        }
        Ok((results, other))
    }
}

/// Trains, evaluates and writes the whole reproduction into `out`, or continues it there when
/// `out` holds this very reproduction (another one, or other files, are refused unless
/// `overwrite` and hedge made them); returns its summary ([`Experiment::run_or_resume`]).
pub fn reproduce(c: &ReproduceConfig, env: &ReproduceEnv, out: &Path, overwrite: bool) -> Result<ReproduceSummary> {
    c.check_ref()?;
    c.run_or_resume(env, out, overwrite, |r| info!("{} seed {} finished ({} steps)", r.model, r.seed, r.steps))
}

fn write(path: &Path, text: &str) -> Result<()> {
    hedge_run::write_atomic(path, text.as_bytes())?;
    Ok(())
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    write(path, &(serde_json::to_string_pretty(value).expect("serialisable") + "\n"))
}

/// The seed whose run scored best on the validation classes (`best.json`), with its metrics;
/// `None` for one seed or runs without validation classes.
fn validation_choice(evals: &[EvalReport]) -> Result<Option<ValidationChoice>> {
    if evals.len() < 2 {
        return Ok(None);
    }
    let mut best: Option<(f64, u64, &EvalReport)> = None;
    for (seed, e) in evals.iter().enumerate() {
        let run = RunDir::open(Path::new(&e.run))?;
        let Some(b) = run.read_json_if_present::<BestModel>(BEST_FILE)? else { return Ok(None) };
        if best.is_none_or(|(s, _, _)| b.score > s) {
            best = Some((b.score, seed as u64, e));
        }
    }
    Ok(best.map(|(score, seed, e)| ValidationChoice {
        knn_accuracy: e.knn_accuracy,
        run: e.run.clone(),
        seed,
        validation_score: score,
        verification_ap: VerificationStats { clean_vs_corrupt_std: None, ..e.verification_ap },
    }))
}

/// Means and sample sds over each model's seeds.
fn summarise(c: &ReproduceConfig, results: &[ModelRuns]) -> Result<ReproduceSummary> {
    let mut models = BTreeMap::new();
    let mut seconds = 0.0;
    for (m, evals) in results {
        let over = |f: fn(&EvalReport) -> TwinStats| TwinStats::over(&evals.iter().map(f).collect::<Vec<_>>());
        let train_seconds: Vec<f64> = evals
            .iter()
            .filter_map(|e| RunDir::open(Path::new(&e.run)).ok()?.read_state().ok())
            .map(|s| s.seconds)
            .collect();
        seconds += train_seconds.iter().sum::<f64>() + evals.iter().map(|e| e.eval_seconds).sum::<f64>();
        let verification: Vec<VerificationStats> = evals.iter().map(|e| e.verification_ap).collect();
        models.insert(
            m.key.clone(),
            ModelSummary {
                aurc: mean(&evals.iter().map(|e| Some(e.aurc).filter(|x| x.is_finite())).collect::<Vec<_>>()),
                aurc_uncertainty: evals.first().and_then(|e| e.aurc_uncertainty.clone()),
                ece: mean(&evals.iter().map(|e| Some(e.ece).filter(|x| x.is_finite())).collect::<Vec<_>>()),
                knn_accuracy: over(|e| e.knn_accuracy),
                knn_kept: evals
                    .iter()
                    .map(|e| e.knn_kept)
                    .collect::<Option<Vec<TwinStats>>>()
                    .map(|kept| TwinStats::over(&kept)),
                knn_plurality: over(|e| e.knn_plurality),
                label: m.label.clone(),
                runs: evals.iter().map(|e| e.run.clone()).collect(),
                seeds: evals.len(),
                tau_ap: over(|e| e.tau_ap),
                tau_knn: over(|e| e.tau_knn),
                train_seconds,
                validation_choice: validation_choice(evals)?,
                verification_ap: VerificationStats::over(&verification),
            },
        );
    }
    Ok(ReproduceSummary {
        schema: <ReproduceSummary as hedge_run::schema::Schema>::CURRENT,
        budget_minutes: c.budget_minutes,
        command: c.command.clone(),
        digits: c.digits(),
        dim: c.dim(),
        extra_seeds: c.extra_seeds,
        models,
        other_split: None,
        protocol: c.protocol(),
        paper: paper_columns(c.digits(), c.dim()),
        repeats: c.repeats,
        eval_images_per_class: c.eval_images_per_class,
        seconds,
        seeds: c.seeds,
        split: results.iter().flat_map(|(_, e)| e.first()).map(|e| e.split).next().unwrap_or(c.split),
        std_convention: STD_CONVENTION.to_string(),
        steps: c.hib.steps_planned().then_some(c.hib.schedule.steps),
        undefined: Vec::new(),
    })
}

/// "0.912 ± 0.004": ours, with the sd over seeds when there are several.
fn ours(t: &TwinStats, variant: Variant) -> Option<String> {
    let v = t.get(variant)?;
    Some(match t.std(variant) {
        Some(sd) => format!("{v:.3} ± {sd:.3}"),
        None => format!("{v:.3}"),
    })
}

/// "0.912 ± 0.004 (0.880)": ours and the paper's, or "n/a".
fn cell(s: &ReproduceSummary, model: &str, metric: Metric, variant: Variant) -> String {
    let Some(m) = s.models.get(model) else { return "n/a".into() };
    let Some(o) = ours(&m.metric(metric), variant) else { return "n/a".into() };
    match s.paper.as_ref().and_then(|p| p.get(model)).and_then(|p| paper_value(p, metric, variant)) {
        Some(p) => format!("{o} ({p:.3})"),
        None => o,
    }
}

/// The KNN cell of the kept-gallery reading, with the paper's KNN value, or "n/a".
fn kept_cell(s: &ReproduceSummary, model: &str, variant: Variant) -> String {
    let Some(o) = s.models.get(model).and_then(|m| m.knn_kept).and_then(|k| ours(&k, variant)) else {
        return "n/a".into();
    };
    match s.paper.as_ref().and_then(|p| p.get(model)).and_then(|p| paper_value(p, Metric::KnnAccuracy, variant)) {
        Some(p) => format!("{o} ({p:.3})"),
        None => o,
    }
}

/// The mixed clean-vs-corrupt AP cell (not in the paper).
fn mixed_cell(models: &BTreeMap<String, ModelSummary>, model: &str) -> String {
    models.get(model).and_then(|m| m.verification_ap.clean_vs_corrupt).map_or("n/a".into(), |v| format!("{v:.3}"))
}

/// Ours only (no paper value), for the other split's columns.
fn plain(s: &ReproduceSummary, model: &str, metric: Metric, variant: Variant) -> String {
    s.other_split
        .as_ref()
        .and_then(|o| o.models.get(model))
        .and_then(|m| m.metric(metric).get(variant))
        .map_or("n/a".into(), |v| format!("{v:.3}"))
}

const TABLE1_MODELS: [&str; 3] = ["point", "mog1", "mog2"];

/// Table 1 (verification AP and KNN accuracy) on the summary's split, the other split beside
/// it, and the validation-chosen seed where there is one.
/// ", first 20 images of each class only (not comparable with the paper)" for a subset evaluation.
fn subset_note(s: &ReproduceSummary) -> String {
    s.eval_images_per_class
        .map(|n| format!(", first {n} images of each class only (not comparable with the paper)"))
        .unwrap_or_default()
}

pub fn table1(s: &ReproduceSummary) -> String {
    let other = s.other_split.as_ref().map(|o| o.split);
    let mut t = format!(
        "Table 1, N = {}, D = {}, {}{}, ours (paper){}. KNN: K = 5, majority; corrupt = clean probes against the corrupt gallery.\n\n",
        s.digits,
        s.dim,
        s.split,
        subset_note(s),
        if s.seeds > 1 { " as mean ± sd over seeds" } else { "" },
    );
    match other {
        Some(o) => {
            let _ = writeln!(
                t,
                "| | point | MoG-1 | MoG-2 | point, {o} | MoG-1, {o} | MoG-2, {o} |\n|---|---|---|---|---|---|---|"
            );
        }
        None => t.push_str("| | point | MoG-1 | MoG-2 |\n|---|---|---|---|\n"),
    }
    let kept = TABLE1_MODELS.iter().any(|m| s.models.get(*m).is_some_and(|x| x.knn_kept.is_some()));
    for metric in [Metric::VerificationAp, Metric::KnnAccuracy] {
        for variant in Variant::BOTH {
            if metric == Metric::KnnAccuracy && kept {
                // The headline reading (results/hib/README.md): the gallery is the whole test
                // set, the probe's own image (twin) in it.
                let _ = write!(t, "| {}, {} (probe kept in the gallery) |", metric.label(), variant.name());
                for m in TABLE1_MODELS {
                    let _ = write!(t, " {} |", kept_cell(s, m, variant));
                }
                if let Some(o) = &s.other_split {
                    for m in TABLE1_MODELS {
                        let v = o.models.get(m).and_then(|x| x.knn_kept).and_then(|k| k.get(variant));
                        let _ = write!(t, " {} |", v.map_or("n/a".into(), |v| format!("{v:.3}")));
                    }
                }
                t.push('\n');
            }
            let reading = if metric == Metric::KnnAccuracy { ", leave-one-out" } else { "" };
            let _ = write!(t, "| {}, {}{reading} |", metric.label(), variant.name());
            for m in TABLE1_MODELS {
                let _ = write!(t, " {} |", cell(s, m, metric, variant));
            }
            if other.is_some() {
                for m in TABLE1_MODELS {
                    let _ = write!(t, " {} |", plain(s, m, metric, variant));
                }
            }
            t.push('\n');
        }
    }
    if TABLE1_MODELS.iter().any(|m| s.models.get(*m).is_some_and(|x| x.verification_ap.clean_vs_corrupt.is_some())) {
        t.push_str("| Verification AP, clean vs corrupt pairs (not in the paper) |");
        for m in TABLE1_MODELS {
            let _ = write!(t, " {} |", mixed_cell(&s.models, m));
        }
        if let Some(o) = &s.other_split {
            for m in TABLE1_MODELS {
                let _ = write!(t, " {} |", mixed_cell(&o.models, m));
            }
        }
        t.push('\n');
    }
    if TABLE1_MODELS.iter().any(|m| s.models.get(*m).is_some_and(|x| x.validation_choice.is_some())) {
        // Under the instance protocol the runs hold out images of the training classes, not classes.
        let chooser = match s.protocol {
            NDigitProtocol::Instance => "validation images (held-out training images of the same classes)",
            NDigitProtocol::OpenSet => "validation classes",
        };
        let _ = write!(
            t,
            "\nThe seed the {chooser} choose (best validation score of its `best.json`; a choice that touches no test split), on {}:\n\n\
             | | point | MoG-1 | MoG-2 |\n|---|---|---|---|\n",
            s.split
        );
        let chosen = |m: &str| s.models.get(m).and_then(|x| x.validation_choice.as_ref());
        let _ = writeln!(
            t,
            "| seed (validation score) | {} |",
            TABLE1_MODELS
                .map(|m| chosen(m).map_or("n/a".into(), |c| format!("{} ({:.3})", c.seed, c.validation_score)))
                .join(" | ")
        );
        for metric in [Metric::VerificationAp, Metric::KnnAccuracy] {
            for variant in Variant::BOTH {
                let value = |m: &str| {
                    let c = chosen(m)?;
                    let twin = if metric == Metric::VerificationAp { c.verification_ap.twin() } else { c.knn_accuracy };
                    twin.get(variant)
                };
                let _ = writeln!(
                    t,
                    "| {}, {} | {} |",
                    metric.label(),
                    variant.name(),
                    TABLE1_MODELS.map(|m| value(m).map_or("n/a".into(), |v| format!("{v:.3}"))).join(" | ")
                );
            }
        }
    }
    t
}

/// Table 2 (Kendall's τ between uncertainty bin and performance, sign inverted).
pub fn table2(s: &ReproduceSummary) -> String {
    let other = s.other_split.as_ref().map(|o| o.split);
    let mut t = format!(
        "Table 2, N = {}, D = {}, {}: Kendall's tau between uncertainty bin and performance (sign inverted), ours (paper).\n\n",
        s.digits, s.dim, s.split
    );
    match other {
        Some(o) => {
            let _ = writeln!(t, "| | MoG-1 | MoG-2 | MoG-1, {o} | MoG-2, {o} |\n|---|---|---|---|---|");
        }
        None => t.push_str("| | MoG-1 | MoG-2 |\n|---|---|---|\n"),
    }
    for metric in [Metric::TauAp, Metric::TauKnn] {
        for variant in Variant::BOTH {
            let _ = write!(
                t,
                "| {}, {} | {} | {} |",
                metric.label(),
                variant.name(),
                cell(s, "mog1", metric, variant),
                cell(s, "mog2", metric, variant)
            );
            if other.is_some() {
                let _ = write!(t, " {} | {} |", plain(s, "mog1", metric, variant), plain(s, "mog2", metric, variant));
            }
            t.push('\n');
        }
    }
    t
}

/// Table 5 (Appendix E of arXiv v1): MoG-1 with β = 0 and β = 1e-4, ours beside the paper's
/// own Table 5 columns (its β = 1e-4 column is a different run from its Table 1 MoG-1).
pub fn table5(s: &ReproduceSummary) -> String {
    let paper = s.paper.as_ref();
    let has_paper = paper.is_some_and(|p| p.contains_key("mog1-beta0"));
    let mut t = format!(
        "Table 5 (Appendix E), N = {}, D = {}, {}: MoG-1 with beta = 0 and beta = 1e-4.\n\n",
        s.digits, s.dim, s.split
    );
    if has_paper {
        t.push_str(
            "| | ours, beta = 0 | ours, beta = 1e-4 | paper, beta = 0 | paper, beta = 1e-4 |\n|---|---|---|---|---|\n",
        );
    } else {
        t.push_str("| | ours, beta = 0 | ours, beta = 1e-4 |\n|---|---|---|\n");
    }
    let ours_of = |model: &str, metric: Metric, variant: Variant| {
        s.models.get(model).and_then(|m| ours(&m.metric(metric), variant)).unwrap_or_else(|| "n/a".into())
    };
    let paper_of = |model: &str, metric: Metric, variant: Variant| {
        paper
            .and_then(|p| p.get(model))
            .and_then(|p| paper_value(p, metric, variant))
            .map_or("n/a".into(), |v| format!("{v:.3}"))
    };
    for metric in [Metric::VerificationAp, Metric::KnnAccuracy, Metric::TauAp, Metric::TauKnn] {
        for variant in Variant::BOTH {
            let _ = write!(
                t,
                "| {}, {} | {} | {} |",
                metric.label(),
                variant.name(),
                ours_of("mog1-beta0", metric, variant),
                ours_of("mog1", metric, variant)
            );
            if has_paper {
                let _ = write!(
                    t,
                    " {} | {} |",
                    paper_of("mog1-beta0", metric, variant),
                    paper_of("mog1-beta1e4", metric, variant)
                );
            }
            t.push('\n');
        }
    }
    let seeds = |model: &str| s.models.get(model).map_or(0, |m| m.seeds);
    let _ = writeln!(
        t,
        "\nSeeds: beta = 0 {}, beta = 1e-4 {} (the Table 1 MoG-1 runs; ± is the sd over seeds).",
        seeds("mog1-beta0"),
        seeds("mog1")
    );
    if !has_paper {
        t.push_str("\nThe paper reports Table 5 for (N, D) = (2, 2) and (3, 3) only.\n");
    }
    t
}

/// Table 6 (plurality KNN by gallery/probe) or Table 7 (τ by gallery/probe), point and MoG-1,
/// ours (paper). The paper's Table 6 "point" is its contrastive-loss point embedding.
fn table67(c: &ReproduceConfig, results: &[ModelRuns], tau: bool) -> String {
    let split = c.split.name();
    let paper_rows = paper::tables6_7(c.digits(), c.dim());
    let mut t = if tau {
        format!(
            "Table 7 (Appendix G), N = {}, D = {}, {split}: KNN correlation with uncertainty by gallery/probe, MoG-1, ours (paper).\n\n| gallery | probe | MoG-1 |\n|---|---|---|\n",
            c.digits(), c.dim()
        )
    } else {
        format!(
            "Table 6 (Appendix G), N = {}, D = {}, {split}: plurality KNN accuracy by gallery/probe, ours (paper).\n\n| gallery | probe | point | MoG-1 |\n|---|---|---|---|\n",
            c.digits(), c.dim()
        )
    };
    // Per gallery/probe row of the first seed's report, the mean over seeds.
    let rows = |key: &str| -> Vec<(String, String, f64)> {
        let Some((_, evals)) = results.iter().find(|(m, _)| m.key == key) else { return Vec::new() };
        let Some(first) = evals.first() else { return Vec::new() };
        first
            .gallery_probe
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let vals: Vec<Option<f64>> = evals
                    .iter()
                    .map(|e| e.gallery_probe.get(i).and_then(|r| if tau { r.tau_knn } else { Some(r.plurality) }))
                    .collect();
                (g.gallery.clone(), g.probe.clone(), mean(&vals).unwrap_or(f64::NAN))
            })
            .collect()
    };
    let paper_of =
        |g: &str, p: &str| paper_rows.and_then(|rows| rows.into_iter().find(|r| r.gallery == g && r.probe == p));
    let with_paper = |ours: String, paper: Option<f64>| match paper {
        Some(p) => format!("{ours} ({p:.3})"),
        None => ours,
    };
    let (point, mog) = (rows("point"), rows("mog1"));
    for (i, (g, p, m)) in mog.iter().enumerate() {
        let pr = paper_of(g, p);
        if tau {
            let _ = writeln!(t, "| {g} | {p} | {} |", with_paper(format!("{m:.3}"), pr.map(|r| r.mog1_tau_knn)));
        } else {
            let pt = point.get(i).map_or("n/a".into(), |r| format!("{:.3}", r.2));
            let _ = writeln!(
                t,
                "| {g} | {p} | {} | {} |",
                with_paper(pt, pr.map(|r| r.point_plurality)),
                with_paper(format!("{m:.3}"), pr.map(|r| r.mog1_plurality))
            );
        }
    }
    t
}

/// Appendix B: point embeddings with the soft contrastive loss against the hard contrastive loss
/// at each of [`MARGINS`].
pub fn appendix_b(s: &ReproduceSummary) -> String {
    let mut t = String::from("Appendix B: point embeddings, soft contrastive vs contrastive loss at several margins.\n\n| loss | AP clean | AP corrupt | KNN clean | KNN corrupt |\n|---|---|---|---|---|\n");
    let mut keys = vec![("point".to_string(), "soft contrastive".to_string())];
    keys.extend(MARGINS.iter().map(|m| (format!("point-contrastive-m{m}"), format!("contrastive, M = {m}"))));
    for (k, name) in keys {
        let _ = writeln!(
            t,
            "| {name} | {} | {} | {} | {} |",
            cell(s, &k, Metric::VerificationAp, Variant::Clean),
            cell(s, &k, Metric::VerificationAp, Variant::Corrupt),
            cell(s, &k, Metric::KnnAccuracy, Variant::Clean),
            cell(s, &k, Metric::KnnAccuracy, Variant::Corrupt)
        );
    }
    t
}

/// One run's D = 1 centroid ordering of Appendix D: the test set's class centroids sorted along
/// the line, scored by [`hedge_eval::ordering_score`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberLine {
    pub seed: u64,
    /// Adjacent pairs of the ordering that share their ones or tens digit (at most `out_of`).
    pub adjacent_sharing_a_digit: usize,
    /// Classes in the average run of consecutive such pairs.
    pub mean_run_length: f64,
    /// Class labels from the smallest centroid to the largest.
    pub order: Vec<u32>,
    pub out_of: usize,
}

/// `number_line_<model>.json`: Appendix D's ordering for every seed of one model (the paper
/// scores four trials of each model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberLines {
    /// The model's key (`point`, `mog1`, …).
    pub model: String,
    pub label: String,
    /// By seed.
    pub runs: Vec<NumberLine>,
}

/// `appendix_d.md`: every seed's number-line score beside the paper's range, and how often
/// MoG-1 (the paper's HIB here: "a single Gaussian embedding") beats point seed for seed (the
/// paper: "on each of the four trials").
pub fn appendix_d_table(digits: usize, dim: usize, lines: &[NumberLines]) -> String {
    let mut t = format!(
        "Appendix D: the test set's class centroids of a D = {dim} embedding sorted along the line; adjacent pairs \
         sharing a ones or tens digit, and the classes in the average run of such pairs, by seed.\n\n\
         | model | seeds | adjacent pairs sharing a digit, by seed | range | mean run (classes), by seed | mean |\n\
         |---|---|---|---|---|---|\n"
    );
    for l in lines {
        let adjacent: Vec<usize> = l.runs.iter().map(|r| r.adjacent_sharing_a_digit).collect();
        let runs: Vec<f64> = l.runs.iter().map(|r| r.mean_run_length).collect();
        let out_of = l.runs.first().map_or(0, |r| r.out_of);
        let (lo, hi) = (adjacent.iter().min().copied().unwrap_or(0), adjacent.iter().max().copied().unwrap_or(0));
        let _ = writeln!(
            t,
            "| {} | {} | {} (of {out_of}) | {lo}–{hi} | {} | {:.1} |",
            l.label,
            l.runs.len(),
            adjacent.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(" / "),
            runs.iter().map(|r| format!("{r:.1}")).collect::<Vec<_>>().join(" / "),
            runs.iter().sum::<f64>() / runs.len().max(1) as f64,
        );
    }
    if let Some(p) = crate::hib::paper::appendix_d(digits, dim) {
        let _ = writeln!(
            t,
            "| paper, HIB (a single Gaussian) | {} | — | {}–{} | — | {:.1} |\n| paper, point | {} | — | {}–{} | — | {:.1} |",
            p.trials,
            p.hib_adjacent.0,
            p.hib_adjacent.1,
            p.hib_mean_run,
            p.trials,
            p.point_adjacent.0,
            p.point_adjacent.1,
            p.point_mean_run
        );
    }
    let by_key = |key: &str| lines.iter().find(|l| l.model == key);
    if let (Some(hib), Some(point)) = (by_key("mog1"), by_key("point")) {
        let pairs: Vec<(usize, usize)> = hib
            .runs
            .iter()
            .filter_map(|h| {
                let p = point.runs.iter().find(|p| p.seed == h.seed)?;
                Some((h.adjacent_sharing_a_digit, p.adjacent_sharing_a_digit))
            })
            .collect();
        let wins = pairs.iter().filter(|(h, p)| h > p).count();
        let _ = writeln!(
            t,
            "\nMoG-1 above point, seed for seed: {wins} of {} (the paper: HIB above point on each of its four trials).",
            pairs.len()
        );
    }
    t
}

/// Figures of the seed-0 runs of point, MoG-1 and MoG-2, with the weights their tables scored:
/// embeddings (Figs 3–4, 7) and performance against uncertainty bins (Fig. 5); for D = 1,
/// Appendix D's number line (Fig. 10) of every seed, scored in `number_line_<model>.json` and
/// `appendix_d.md`.
fn draw_figures(c: &ReproduceConfig, out: &Path, results: &[ModelRuns], data: &ReproduceData) -> Result<()> {
    let device = data.device;
    let mut test = data.images.split(c.digits(), c.protocol(), c.split)?;
    if let Some(n) = c.eval_images_per_class {
        test = test.subset(&test.first_per_class(n));
    }
    let mut lines = Vec::new();
    for (m, evals) in results.iter().filter(|(m, _)| TABLE1_MODELS.contains(&m.key.as_str())) {
        let Some(first) = evals.first() else { continue };
        let run = RunDir::open(Path::new(&first.run))?;
        let title = format!("{} embeddings, N = {}, D = {}", m.label, c.digits(), c.dim());
        if c.dim() >= 2 {
            let (clean, corrupt) = embed_run_twins(&run, &test, scored_weights(&run).as_deref(), device)?;
            embedding_ellipses(&out.join(format!("embeddings_{}.png", m.key)), &clean, &corrupt, 400, &title)?;
        } else {
            lines.push(number_lines(c, out, m, evals, data, &title)?);
        }
        if m.key != "point" {
            let b = &first.bins;
            hedge_plot::uncertainty_bins(
                &out.join(format!("uncertainty_bins_{}.png", m.key)),
                &[
                    ("AP, clean", b.clean.ap.as_slice()),
                    ("AP, corrupt", b.corrupt.ap.as_slice()),
                    ("KNN, clean", b.clean.knn.as_slice()),
                    ("KNN, corrupt gallery", b.corrupt.knn.as_slice()),
                ],
                &format!("{title}: performance vs uncertainty (Fig. 5)"),
            )?;
        }
    }
    if !lines.is_empty() {
        write(&out.join("appendix_d.md"), &appendix_d_table(c.digits(), c.dim(), &lines))?;
    }
    Ok(())
}

/// Appendix D for every seed of one model: the centroids of all classes ordered along the line
/// (`number_line_<model>-seed<N>.png`) and scored (`number_line_<model>.json`), each run with
/// the weights its tables scored (`model_best.safetensors` when validation chose them).
fn number_lines(
    c: &ReproduceConfig,
    out: &Path,
    m: &ReproduceModel,
    evals: &[EvalReport],
    data: &ReproduceData,
    title: &str,
) -> Result<NumberLines> {
    let mut runs = Vec::new();
    for e in evals {
        let run = RunDir::open(Path::new(&e.run))?;
        let config = run.read_config()?.hib;
        let weights = scored_weights(&run);
        let (_vs, net) = hedge_embed::train::load_model_from(
            &run,
            &config,
            weights.as_deref(),
            "the weights validation chose replace its own",
            data.device,
        )?;
        // Appendix D orders the centroids of all classes: the instance test set holds all of
        // them; the open-set protocol's are split between its seen and unseen test classes.
        let options = EmbedOptions { samples: 1, ..Default::default() };
        let parts = c
            .protocol()
            .test_splits()
            .iter()
            .map(|&split| {
                embed_dataset(
                    &net,
                    &data.images.split(c.digits(), c.protocol(), split)?,
                    &Corruption::Clean,
                    data.device,
                    options,
                )
            })
            .collect::<hedge_embed::Result<Vec<_>>>()?;
        let all = EmbeddedSet::concat(&parts.iter().collect::<Vec<_>>());
        let all = cloud(&all);
        all.check()?;
        let centroids: Vec<(u32, f64)> = all.centroids().into_iter().map(|(label, (x, _))| (label, x)).collect();
        let order = hedge_eval::centroid_order(&centroids);
        hedge_plot::number_line(
            &out.join(format!("number_line_{}-seed{}.png", m.key, config.seed)),
            &centroids,
            &format!(
                "{title}, seed {}: adjacent pairs sharing a digit {}/{}, mean run {:.1}",
                config.seed,
                order.adjacent_sharing_a_digit,
                order.order.len().saturating_sub(1),
                order.mean_run_length
            ),
        )?;
        runs.push(NumberLine {
            seed: config.seed,
            adjacent_sharing_a_digit: order.adjacent_sharing_a_digit,
            mean_run_length: order.mean_run_length,
            out_of: order.order.len().saturating_sub(1),
            order: order.order,
        });
    }
    runs.sort_by_key(|r| r.seed);
    let lines = NumberLines { model: m.key.clone(), label: m.label.clone(), runs };
    write_json(&out.join(format!("number_line_{}.json", m.key)), &lines)?;
    Ok(lines)
}

/// The folder's README: command, recipe, training times and Tables 1 and 2.
fn readme(c: &ReproduceConfig, s: &ReproduceSummary) -> String {
    // Training time of each model (mean over seeds), from its run's state: a re-invocation that
    // reuses finished runs still reports what the training cost.
    let train_times: Vec<String> = s
        .models
        .values()
        .map(|m| {
            let mean = m.train_seconds.iter().sum::<f64>() / m.train_seconds.len().max(1) as f64;
            format!("{} {:.0} s", m.label, mean)
        })
        .collect();
    let length = match (c.budget_minutes, c.hib.steps_planned().then_some(c.hib.schedule.steps)) {
        (Some(m), _) if c.finish_planned_steps => format!(
            "a budget of {m} minutes of training per model: seed 0's steps were planned from the speed of its \
             first steps and all of them trained, however long that took; the other seeds and the Table 5 and \
             Appendix B variants train seed 0's step count"
        ),
        (Some(m), _) => {
            format!(
                "a budget of {m} minutes of training per model (seed 0's steps planned from the measured speed; \
                 the other seeds and the Table 5 and Appendix B variants train seed 0's step count)"
            )
        }
        (None, Some(steps)) => format!("{steps} training steps per model"),
        (None, None) => "the recipe's training steps".to_string(),
    };
    let protocol = match c.protocol() {
        NDigitProtocol::Instance => {
            "Protocol: `instance` — every class in training and in test, disjoint images (the paper's tables: its \
             Appendix D scores the test set's 100 class centroids, and its Table 3 sizes, 100,000 training and 10,000 \
             test images, are the instance tables'); models are chosen on held-out training images of the same \
             classes (`validation_fraction`), never on test images."
        }
        NDigitProtocol::OpenSet => {
            "Protocol: `open-set` — test_unseen's classes never appear in training (hedge's extension; the paper \
             names novel classes as future work), so these tables stand beside the paper's, not as its Table 1."
        }
    };
    let other = c.other_split().map_or(String::new(), |o| format!(", `{}` beside them", o.name()));
    let number_line = if c.dim() == 1 {
        " Appendix D, written with the figures: `appendix_d.md` (every seed's number-line score beside the paper's), \
         `number_line_<model>.json` (each seed's ordering) and `number_line_<model>-seed<N>.png`."
    } else {
        ""
    };
    let eval_files = match c.other_split() {
        Some(o) => format!("eval.json for {}, eval_{}.json", s.split, o.name()),
        None => format!("eval.json for {}", s.split),
    };
    format!(
        "# HIB reproduction, N = {}, D = {}\n\nCommand:\n\n```sh\n{}\n```\n\n{protocol}\n\n{length}; recipe (fields that differ from the paper's \
         defaults: Adam, lr 1e-3 constant, 128 independent pairs, beta 1e-4): {}; {} seed(s) per Table 1 model ({} for the extra models); tables on `{}`{other}; \
         {} repeats of the sampling-dependent metrics. Training time per model: {}. \
         Wall-clock of the last invocation that trained or evaluated: {:.0} s (finished runs are reused, not retrained).\n\n{}\n{}\n\
         Files: `summary.json` (every number, with the paper's), `table*.md`, figures `*.png`, runs in `runs/` \
         (config.json, plan.json, metrics.jsonl, monitor.jsonl when watched, model.safetensors, model_best.safetensors when \
         validated (every split is scored with it), {eval_files}; checkpoints every 1,000 steps in `runs/*/checkpoints/`).{number_line}\n",
        c.digits(),
        c.dim(),
        s.command,
        recipe_changes(s),
        c.seeds,
        c.extra_seeds,
        s.split,
        c.repeats,
        train_times.join(", "),
        s.seconds,
        included("table1.md", &table1(s)),
        included("table2.md", &table2(s)),
    )
}

/// `text` (what `name` in the same folder holds) between the marker comments with which
/// `scripts/docs.py --check` compares the README's copy with the file.
fn included(name: &str, text: &str) -> String {
    format!("<!-- include:./{name}:begin -->\n{}\n<!-- include:./{name}:end -->\n", text.trim_matches('\n'))
}

/// The MoG-1 seed-0 run's hyper-parameters that differ from `HibConfig::default()` (besides
/// digits, dim, model, steps and seed), as `name = value` pairs.
fn recipe_changes(s: &ReproduceSummary) -> String {
    let Some(run) = s.models.get("mog1").and_then(|m| m.runs.first()) else { return "n/a".into() };
    let Ok(config) = RunDir::open(Path::new(run)).and_then(|r| r.read_config()) else { return "n/a".into() };
    // The config as a field table: comparing field by field needs their names.
    let ours = serde_json::to_value(&config.hib).unwrap_or_default();
    let defaults = serde_json::to_value(HibConfig::default()).unwrap_or_default();
    let skip = ["digits", "dim", "model", "components", "steps", "seed", "conv_precision"];
    let changes: Vec<String> = ours
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| !skip.contains(&k.as_str()) && defaults.get(k.as_str()) != Some(v))
        .map(|(k, v)| format!("`{k} = {v}`"))
        .collect();
    if changes.is_empty() {
        "none".into()
    } else {
        changes.join(", ")
    }
}

/// Per model and metric, the training time (seconds on this machine) of the first kept
/// checkpoint at or above the paper's value, or the best value reached if none is.
fn time_to_quality(c: &ReproduceConfig, curves: &BTreeMap<String, Vec<CurvePoint>>, results: &[ModelRuns]) -> String {
    let paper = paper_columns(c.digits(), c.dim()).unwrap_or_default();
    let mut t = format!(
        "Time to quality, N = {}, D = {}: training wall-clock (2 threads, this machine) until a kept checkpoint \
         reaches the paper's value on {} (one Monte-Carlo repeat per checkpoint).\n\n\
         | model | metric | paper | reached at | best so far |\n|---|---|---|---|---|\n",
        c.digits(),
        c.dim(),
        c.split.name()
    );
    for (m, _) in results {
        let Some(rows) = curves.get(&m.key) else { continue };
        let Some(column) = paper.get(&m.key) else { continue };
        for (metric, variant, name) in [
            (Metric::VerificationAp, Variant::Clean, "AP clean"),
            (Metric::VerificationAp, Variant::Corrupt, "AP corrupt"),
            (Metric::KnnAccuracy, Variant::Clean, "KNN clean"),
            (Metric::KnnAccuracy, Variant::Corrupt, "KNN corrupt"),
        ] {
            let Some(target) = paper_value(column, metric, variant) else { continue };
            let points: Vec<(usize, f64, f64)> = rows
                .iter()
                .filter_map(|r| {
                    let twin = if metric == Metric::VerificationAp { r.verification_ap.twin() } else { r.knn_accuracy };
                    Some((r.step, r.train_seconds?, twin.get(variant)?))
                })
                .collect();
            let reached = points.iter().find(|p| p.2 >= target);
            let best = points.iter().max_by(|a, b| a.2.total_cmp(&b.2));
            let _ = writeln!(
                t,
                "| {} | {name} | {target:.3} | {} | {} |",
                m.label,
                reached.map_or("not reached".to_string(), |p| format!("{} s (step {})", p.1.round(), p.0)),
                best.map_or("n/a".to_string(), |p| format!("{:.3} at step {} ({} s)", p.2, p.0, p.1.round())),
            );
        }
    }
    t
}

/// AP and KNN against training steps for the seed-0 runs of point, MoG-1 and MoG-2:
/// `curves.json`, `time_to_quality.md` and `quality_vs_steps.png`.
fn draw_curves(c: &ReproduceConfig, out: &Path, results: &[ModelRuns], data: &ReproduceData) -> Result<()> {
    let mut all = BTreeMap::new();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (m, evals) in results.iter().filter(|(m, _)| TABLE1_MODELS.contains(&m.key.as_str())) {
        let Some(first) = evals.first() else { continue };
        let run = RunDir::open(Path::new(&first.run))?;
        let rows = curve(&run, &data.images, 1, c.split, data.device, &c.command)?;
        let points = |f: &dyn Fn(&CurvePoint) -> Option<f64>| -> Vec<(f64, f64)> {
            rows.iter().filter_map(|r| Some((r.step as f64, f(r)?))).collect()
        };
        series.push((format!("{} AP clean", m.label), points(&|r| r.verification_ap.clean)));
        series.push((format!("{} AP corrupt", m.label), points(&|r| r.verification_ap.corrupt)));
        series.push((format!("{} KNN corrupt", m.label), points(&|r| r.knn_accuracy.corrupt)));
        all.insert(m.key.clone(), rows);
    }
    write_json(&out.join("curves.json"), &all)?;
    write(&out.join("time_to_quality.md"), &time_to_quality(c, &all, results))?;
    let named: Vec<(&str, Vec<(f64, f64)>)> = series.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
    hedge_plot::line_chart(
        &out.join("quality_vs_steps.png"),
        &named,
        "training steps",
        c.split.name(),
        &format!("N = {}, D = {}: quality vs training steps", c.digits(), c.dim()),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary with the given models, every metric of model k equal to 0.1·(k + 1).
    fn summary(models: &[&str]) -> ReproduceSummary {
        let mut m = BTreeMap::new();
        for (k, name) in models.iter().enumerate() {
            let x = Some(0.1 * (k + 1) as f64);
            let twin = TwinStats { clean: x, corrupt: x, ..Default::default() };
            m.insert(
                name.to_string(),
                ModelSummary {
                    aurc: None,
                    aurc_uncertainty: None,
                    ece: None,
                    knn_accuracy: twin,
                    knn_kept: None,
                    knn_plurality: twin,
                    label: name.to_string(),
                    runs: vec![],
                    seeds: 1,
                    tau_ap: twin,
                    tau_knn: twin,
                    train_seconds: vec![],
                    validation_choice: None,
                    verification_ap: VerificationStats { clean: x, corrupt: x, ..Default::default() },
                },
            );
        }
        ReproduceSummary {
            schema: 2,
            budget_minutes: None,
            command: String::new(),
            digits: 2,
            dim: 2,
            extra_seeds: 1,
            models: m,
            other_split: None,
            protocol: NDigitProtocol::OpenSet,
            paper: paper_columns(2, 2),
            repeats: 10,
            eval_images_per_class: None,
            seconds: 0.0,
            seeds: 1,
            split: NDigitSplit::TestUnseen,
            std_convention: STD_CONVENTION.into(),
            steps: None,
            undefined: Vec::new(),
        }
    }

    fn line(seed: u64, adjacent: usize, mean_run_length: f64) -> NumberLine {
        NumberLine { seed, adjacent_sharing_a_digit: adjacent, mean_run_length, order: Vec::new(), out_of: 99 }
    }

    /// Every seed's score, its range and mean run, the paper's rows, and MoG-1 against point
    /// seed for seed (seed 2 of MoG-1 has no point twin and is left out of the comparison).
    #[test]
    fn appendix_d_lists_every_seed_beside_the_papers_range() {
        let lines = [
            NumberLines {
                model: "point".into(),
                label: "point".into(),
                runs: vec![line(0, 60, 3.0), line(1, 70, 3.6)],
            },
            NumberLines {
                model: "mog1".into(),
                label: "MoG-1".into(),
                runs: vec![line(0, 78, 4.5), line(1, 65, 2.9), line(2, 90, 9.0)],
            },
        ];
        let t = appendix_d_table(2, 1, &lines);
        assert!(t.contains("| point | 2 | 60 / 70 (of 99) | 60–70 | 3.0 / 3.6 | 3.3 |"), "{t}");
        assert!(t.contains("| MoG-1 | 3 | 78 / 65 / 90 (of 99) | 65–90 | 4.5 / 2.9 / 9.0 | 5.5 |"), "{t}");
        assert!(t.contains("| paper, HIB (a single Gaussian) | 4 | — | 76–80 | — | 4.6 |"), "{t}");
        assert!(t.contains("| paper, point | 4 | — | 42–74 | — | 3.0 |"), "{t}");
        assert!(t.contains("MoG-1 above point, seed for seed: 1 of 2"), "{t}");
        // No paper row where the paper has no number line.
        assert!(!appendix_d_table(2, 2, &lines).contains("| paper,"));
    }

    #[test]
    fn appendix_b_lists_soft_then_every_margin() {
        let t = appendix_b(&summary(&[
            "point",
            "point-contrastive-m0.5",
            "point-contrastive-m1",
            "point-contrastive-m2",
            "point-contrastive-m4",
        ]));
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| loss")).collect();
        assert_eq!(rows.len(), 5, "{t}");
        assert!(rows[0].starts_with("| soft contrastive | 0.100 (0.987) |"), "{}", rows[0]);
        assert!(rows[4].starts_with("| contrastive, M = 4 | 0.500 |"), "{}", rows[4]);
    }

    #[test]
    fn table5_puts_ours_beside_the_papers_table_5_not_table_1() {
        let t = table5(&summary(&["mog1", "mog1-beta0"]));
        // Paper Table 5, N = 2, D = 2: AP clean 0.986 (beta = 0) and 0.988 (beta = 1e-4; Table 1 has 0.989).
        assert!(t.contains("| Verification AP, clean | 0.200 | 0.100 | 0.986 | 0.988 |"), "{t}");
        assert!(t.contains("| KNN correlation, corrupt | 0.200 | 0.100 | 0.636 | 0.609 |"), "{t}");
        // The beta = 0 model is an extra (one seed by default), the beta = 1e-4 one a Table 1 model.
        let mut s = summary(&["mog1", "mog1-beta0"]);
        s.models.get_mut("mog1").unwrap().seeds = 3;
        assert!(table5(&s).contains("Seeds: beta = 0 1, beta = 1e-4 3"), "{}", table5(&s));
        // (2, 3) has no Table 5 in the paper: ours only, and a note.
        let mut s = summary(&["mog1", "mog1-beta0"]);
        s.paper = paper_columns(2, 3);
        let t = table5(&s);
        assert!(t.contains("| Verification AP, clean | 0.200 | 0.100 |\n"), "{t}");
        assert!(t.contains("(3, 3) only"), "{t}");
    }

    #[test]
    fn table1_cells_carry_the_sd_over_seeds_the_other_split_and_the_validation_choice() {
        let mut s = summary(&["point", "mog1", "mog2"]);
        s.split = NDigitSplit::TestSeen;
        s.models.get_mut("mog1").unwrap().verification_ap.clean_std = Some(0.004);
        let mut other = summary(&["point"]);
        other.models.get_mut("point").unwrap().verification_ap.clean = Some(0.9);
        s.other_split = Some(OtherSplit { models: other.models, split: NDigitSplit::TestUnseen });
        let t = table1(&s);
        assert!(t.contains("test_seen"), "{t}");
        assert!(t.contains("| point, test_unseen |"), "{t}");
        assert!(
            t.contains("| Verification AP, clean | 0.100 (0.987) | 0.200 ± 0.004 (0.989) | 0.300 (0.990) | 0.900 | n/a | n/a |"),
            "{t}"
        );
        assert!(!t.contains("validation classes choose"), "{t}");
        let choice = ValidationChoice {
            knn_accuracy: TwinStats { clean: Some(0.7), corrupt: Some(0.5), ..Default::default() },
            run: "r".into(),
            seed: 2,
            validation_score: 0.873,
            verification_ap: VerificationStats { clean: Some(0.97), corrupt: Some(0.8), ..Default::default() },
        };
        s.models.get_mut("mog1").unwrap().validation_choice = Some(choice);
        let t = table1(&s);
        assert!(t.contains("| seed (validation score) | n/a | 2 (0.873) | n/a |"), "{t}");
        assert!(t.contains("| KNN accuracy, corrupt | n/a | 0.500 | n/a |"), "{t}");
        assert!(t.contains("The seed the validation classes choose"), "{t}");
        // The instance protocol holds no classes out: its validation set is images.
        s.protocol = NDigitProtocol::Instance;
        let t = table1(&s);
        assert!(
            t.contains("The seed the validation images (held-out training images of the same classes) choose"),
            "{t}"
        );
    }

    /// Where the runs scored both KNN readings, the kept-gallery one comes first beside the
    /// paper's KNN value and leave-one-out follows it, also beside the paper's.
    #[test]
    fn table1_puts_the_kept_gallery_reading_before_leave_one_out() {
        let mut s = summary(&["point", "mog1", "mog2"]);
        assert!(!table1(&s).contains("probe kept"), "no kept row without the reading");
        for (k, m) in s.models.values_mut().enumerate() {
            let v = Some(0.5 + 0.1 * k as f64);
            m.knn_kept = Some(TwinStats { clean: v, corrupt: v.map(|x| x - 0.4), ..Default::default() });
        }
        s.models.get_mut("point").unwrap().knn_kept.as_mut().unwrap().clean_std = Some(0.01);
        let t = table1(&s);
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| KNN")).collect();
        // Paper, N = 2, D = 2: KNN clean 0.871 / 0.879 / 0.888, corrupt 0.583 / 0.760 / 0.757.
        assert_eq!(
            rows,
            [
                "| KNN accuracy, clean (probe kept in the gallery) | 0.700 ± 0.010 (0.871) | 0.500 (0.879) | 0.600 (0.888) |",
                "| KNN accuracy, clean, leave-one-out | 0.100 (0.871) | 0.200 (0.879) | 0.300 (0.888) |",
                "| KNN accuracy, corrupt (probe kept in the gallery) | 0.300 (0.583) | 0.100 (0.760) | 0.200 (0.757) |",
                "| KNN accuracy, corrupt, leave-one-out | 0.100 (0.583) | 0.200 (0.760) | 0.300 (0.757) |",
            ],
            "{t}"
        );
    }

    #[test]
    fn variants_train_the_step_count_of_the_model_they_vary() {
        let c = ReproduceConfig {
            budget_minutes: Some(20.0),
            beta_sweep: true,
            appendix_b: true,
            ..ReproduceConfig::default()
        };
        let from: Vec<(String, Option<String>)> =
            models(&c).unwrap().into_iter().map(|m| (m.key, m.steps_from)).collect();
        assert_eq!(from[..3], [("point".into(), None), ("mog1".into(), None), ("mog2".into(), None)]);
        assert_eq!(from[3], ("mog1-beta0".into(), Some("mog1".into())));
        assert!(from[4..].iter().all(|(k, f)| k.starts_with("point-contrastive") && f.as_deref() == Some("point")));
        assert_eq!(from.len(), 3 + 1 + MARGINS.len());
    }

    #[test]
    fn paper_values_exist_for_the_four_settings_only() {
        assert_eq!(paper_columns(3, 3).unwrap()["mog2"].knn_accuracy.corrupt, 0.598);
        assert_eq!(paper_columns(2, 3).unwrap()["mog1"].tau_ap.unwrap().corrupt, 0.86);
        assert!(paper_columns(2, 1).is_none());
    }

    #[test]
    fn impossible_reproductions_are_refused_before_anything_is_written() {
        let c = ReproduceConfig::default().with_seeds(0);
        assert!(c.check_ref().unwrap_err().to_string().contains("seeds"));
        let c = ReproduceConfig { budget_minutes: Some(-1.0), ..Default::default() };
        assert!(c.check_ref().unwrap_err().to_string().contains("budget_minutes"));
        let c = ReproduceConfig { finish_planned_steps: true, ..Default::default() };
        assert!(c.check_ref().is_err());
        // The instance protocol has one test split; test_unseen is the open-set protocol's.
        let c = ReproduceConfig { split: NDigitSplit::TestUnseen, ..Default::default() };
        assert!(c.check_ref().unwrap_err().to_string().contains("open-set"));
        // An open-set recipe's validation classes under the instance protocol: refused, with the fix.
        let c = ReproduceConfig { hib: HibConfig::default().with_validation_classes(10), ..Default::default() };
        assert!(c.check_ref().unwrap_err().to_string().contains("--validation-fraction"));
    }

    #[test]
    fn the_other_split_is_the_protocols_other_test_split() {
        assert_eq!(ReproduceConfig::default().other_split(), None);
        let open = ReproduceConfig {
            hib: HibConfig::default().with_protocol(NDigitProtocol::OpenSet),
            split: NDigitSplit::TestUnseen,
            ..Default::default()
        };
        assert_eq!(open.other_split(), Some(NDigitSplit::TestSeen));
        let seen = ReproduceConfig { split: NDigitSplit::TestSeen, ..open };
        assert_eq!(seen.other_split(), Some(NDigitSplit::TestUnseen));
    }

    /// A reproduction written before schemas (schema 1: a recipe and seven settings beside it)
    /// reads as the one `HibConfig` it gave every model, and writes back as schema 2; a bad
    /// setting of schema 1 is named, and a schema from a newer hedge is refused.
    #[test]
    fn schema_1_reads_as_the_settings_it_trained() {
        // The third N = 2, D = 2 table, moved aside when the setting was retrained, keeps the
        // schema-1 config it trained under; `n2-d2/` itself is written as schema 2 now.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/hib");
        let text = std::fs::read_to_string(root.join("n2-d2-wd1e-1/config.json")).unwrap();
        let v1: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v1.get("schema").is_none() && v1.get("recipe").is_some(), "the committed n2-d2-wd1e-1 is schema 1");
        let c: ReproduceConfig = serde_json::from_str(&text).unwrap();
        let recipe: HibConfig = serde_json::from_value(v1["recipe"].clone()).unwrap();
        // 45-minute budget: the steps are planned, not the recipe's 20,000.
        let want = recipe.with_protocol(NDigitProtocol::Instance).with_training(Steps::Budget { minutes: 45.0 });
        assert_eq!(c.hib, want);
        assert_eq!(
            (c.schema, c.seeds, c.budget_minutes, c.split),
            (REPRODUCE_SCHEMA, 3, Some(45.0), NDigitSplit::Test)
        );
        let back: ReproduceConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        // Schema 1 without a recipe: the defaults with the settings beside it.
        let old = r#"{"digits": 3, "dim": 3, "steps": 500, "budget_minutes": null, "finish_planned_steps": false,
            "recipe": null, "protocol": "open-set", "split": "test_unseen", "watch_every": 0, "seeds": 1,
            "extra_seeds": 1, "repeats": 10, "eval_images_per_class": null, "learning_rate": 0.003,
            "lr_schedule": "cosine", "group": "16x8", "beta_sweep": false, "appendix_g": false,
            "appendix_b": false, "curves": false, "command": "hedge hib reproduce"}"#;
        let c: ReproduceConfig = serde_json::from_str(old).unwrap();
        let want = HibConfig::default()
            .with_protocol(NDigitProtocol::OpenSet)
            .with_digits(3)
            .with_dim(3)
            .with_steps(500)
            .with_batch(hedge_embed::BatchComposition::Grouped { classes: 16, per_class: 8 })
            .with_learning_rate(0.003)
            .with_lr_schedule(LrSchedule::Cosine);
        assert_eq!(c.hib, want);
        assert!(c.figures, "figures defaults to on");
        let e = serde_json::from_str::<ReproduceConfig>(&old.replace("16x8", "16by8")).unwrap_err().to_string();
        assert!(e.contains("CLASSESxIMAGES"), "{e}");
        let newer = serde_json::to_string(&ReproduceConfig { schema: 9, ..Default::default() }).unwrap();
        let e = serde_json::from_str::<ReproduceConfig>(&newer).unwrap_err().to_string();
        assert!(e.contains("schema") && e.contains('9'), "{e}");
    }
}
