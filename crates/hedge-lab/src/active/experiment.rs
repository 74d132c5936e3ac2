//! Active-learning experiments as run directories: several seeds × methods of a loop, every
//! round logged to `rounds.jsonl` and checkpointed (`progress.json`, committed by the run
//! directory's manifest), so an interrupted experiment resumes at its last finished round;
//! then `summary.json`, `table.md` and a curve of the metric against labels.
//!
//! `hedge active run` is [`RegressionExperiment`], `hedge active classify` is
//! [`ClassificationExperiment`]; both are callable from Rust without the binary.

use std::collections::{BTreeMap, BTreeSet};

use faer::Mat;
use hedge_data::{DataRoot, Mnist, MnistSplit, RegressionSource, TableSpec, UciDataset};
use hedge_eval::{Mean, MeanSe};
use hedge_run::RunDirectory;
use rand::SeedableRng;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use tch::Tensor;

use crate::error::{invalid, LabError, Result};
use hedge_active::classification_loop::{
    images_tensor, labels_tensor, pixel_moments, ClassLoopConfig, ClassRoundMetrics, ImageSet,
};
use hedge_active::pool::LoopState;
use hedge_active::regression_loop::{LoopConfig, RoundMetrics};
pub use hedge_run::Experiment;

pub use hedge_run::experiment::{CONFIG_FILE, PROGRESS_FILE, ROUNDS_FILE};
pub const SUMMARY_FILE: &str = "summary.json";
pub const TABLE_FILE: &str = "table.md";
/// What an active-learning experiment writes besides its definition and checkpoint.
const EXPERIMENT_FILES: [&str; 3] = [ROUNDS_FILE, SUMMARY_FILE, TABLE_FILE];
/// The kind of folder `active run` writes (its ownership marker; regression and classification
/// experiments write the same files).
pub const ACTIVE_EXPERIMENT_KIND: &str = "active-learning experiment";

/// `progress.json` of an active-learning experiment: the runs (seed × method, seeds outer)
/// finished, the lines of `rounds.jsonl` that belong to the checkpoint, and the loop under way.
pub type ExperimentProgress = hedge_run::ExperimentProgress<LoopState>;

/// [`hedge_run::run_resumable`] for active-learning loops: every round logged to
/// `rounds.jsonl`, the loop's state checkpointed after it.
pub fn run_resumable<R: Serialize + DeserializeOwned>(
    dir: &RunDirectory,
    runs: usize,
    run_one: impl FnMut(
        usize,
        Option<LoopState>,
        &mut dyn FnMut(&R, Option<&LoopState>) -> hedge_active::Result<()>,
    ) -> hedge_active::Result<()>,
    on_run_finished: impl FnMut(usize),
) -> hedge_active::Result<Vec<R>> {
    hedge_run::run_resumable(dir, ROUNDS_FILE, runs, run_one, on_run_finished)
}

/// The schema of an active-learning experiment's `config.json` and `summary.json`: 2 records
/// every setting; 1 (files without `schema`) left out the settings added after it was written,
/// and [`v1`] writes each in as hedge ran before the setting existed.
pub const ACTIVE_SCHEMA: u32 = 2;

/// `hedge active run`: NeuralLinear active learning on a UCI regression set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct RegressionExperiment {
    /// [`ACTIVE_SCHEMA`] when written.
    pub schema: u32,
    /// How the experiment was started.
    pub command: String,
    /// `uci/<name>` under the data directory, or the path of a user's CSV file (with `table`).
    pub dataset: String,
    /// A user's table: which column of the CSV file `dataset` is the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<TableSpec>,
    /// Acquisitions by their registered names ([`hedge_active::ACQUISITIONS`]), in the order
    /// they run for each seed.
    pub methods: Vec<String>,
    #[serde(rename = "loop")]
    pub loop_config: LoopConfig,
    /// The split and scaling, in words ([`Self::protocol_for`]).
    pub protocol: String,
    /// Whose settings `loop_config` follows: the authors' (`paper`: 120 labels, their minibatch
    /// rule) or hedge's earlier ones (`hedge`: 100 labels).
    #[serde(rename = "labels_protocol")]
    pub active_protocol: crate::active::protocol::ActiveProtocol,
    /// Seeds 0..seeds, each its own pool/test split and initial labels.
    pub seeds: u64,
}

impl hedge_run::schema::Schema for RegressionExperiment {
    const CURRENT: u32 = ACTIVE_SCHEMA;
    const WHAT: &'static str = "a regression experiment's config.json";

    fn upgrade(_from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        v1::regression_experiment(form)
    }
}

hedge_run::versioned_serde!(RegressionExperiment);

/// What `progress` callbacks are told after each finished loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunFinished {
    pub index: usize,
    pub runs: usize,
    pub seed: u64,
    pub method: &'static str,
}

impl RegressionExperiment {
    /// Where the data comes from: `dataset` and `table` as `config.json` stores them, typed.
    ///
    /// # Errors
    /// A `dataset` that names neither a UCI set (`uci/<name>`) nor, with `table`, a CSV file.
    pub fn source(&self) -> Result<RegressionSource> {
        Ok(RegressionSource::parse(&self.dataset, self.table.as_ref())?)
    }

    /// The protocol with the paper's split ([`Self::protocol_for`] the default loop).
    pub const PROTOCOL: &'static str = "per seed: 80/20 pool/test split, inputs standardised on the pool, targets on the initial labels, RMSE on the original scale";

    /// The protocol with the pool/test split `loop_config` uses.
    pub fn protocol_for(loop_config: &LoopConfig) -> String {
        let test = (loop_config.test_fraction * 100.0).round();
        let targets = match loop_config.target_scaling {
            hedge_active::regression_loop::TargetScaling::InitialLabels => "the initial labels",
            hedge_active::regression_loop::TargetScaling::Labelled => "all labels so far",
        };
        format!(
            "per seed: {}/{test} pool/test split, inputs standardised on the pool, targets on {targets}, RMSE on the original scale",
            100.0 - test
        )
    }
}

impl Experiment for RegressionExperiment {
    type Data = UciDataset;
    type Root = DataRoot;
    type Summary = RegressionSummary;
    type Finished = RunFinished;
    type Error = LabError;
    const FILES: &'static [&'static str] = &EXPERIMENT_FILES;
    const KIND: &'static str = ACTIVE_EXPERIMENT_KIND;

    /// The UCI set `dataset` names (`uci/<name>`), from `root`, or the user's CSV file (which
    /// needs no data root).
    fn is_started_as(&self, started: &Self) -> bool {
        Self { command: started.command.clone(), ..self.clone() } == *started
    }

    fn load(&self, root: &DataRoot) -> Result<UciDataset> {
        Ok(self.source()?.load(root)?)
    }

    fn check(&self, data: &UciDataset) -> Result<()> {
        if self.seeds == 0 || self.methods.is_empty() {
            return Err(invalid("seeds/methods", format!("{}/{}", self.seeds, self.methods.len()), "need ≥ 1 of each"));
        }
        for method in &self.methods {
            self.loop_config.check_acquisition(hedge_active::acquisition(method)?)?;
        }
        self.loop_config.check_split(data.rows())?;
        Ok(())
    }

    fn continue_in(
        &self,
        dir: &RunDirectory,
        data: &UciDataset,
        progress: &mut dyn FnMut(RunFinished),
    ) -> Result<RegressionSummary> {
        let x = Mat::from_fn(data.rows(), data.features, |i, j| data.row(i)[j]);
        let per_seed = self.methods.len();
        let runs = self.seeds as usize * per_seed;
        let acquisitions =
            self.methods.iter().map(|m| hedge_active::acquisition(m)).collect::<hedge_active::Result<Vec<_>>>()?;
        let job = |index: usize| (index / per_seed, acquisitions[index % per_seed]);
        let rounds: Vec<RoundMetrics> = run_resumable(
            dir,
            runs,
            |index, resume, on_round| {
                let (seed, method) = job(index);
                self.loop_config.run_from(&x, &data.targets, method, seed as u64, resume, on_round).map(|_| ())
            },
            |index| {
                let (seed, method) = job(index);
                progress(RunFinished { index, runs, seed: seed as u64, method: method.name })
            },
        )?;
        regression_report(dir, self, &rounds)
    }

    fn report_in(&self, dir: &RunDirectory) -> Result<RegressionSummary> {
        regression_report(dir, self, &dir.checkpointed_json_lines(ROUNDS_FILE)?)
    }
}

/// `summary.json` of a regression experiment (fields in the order the file has them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct RegressionSummary {
    /// [`ACTIVE_SCHEMA`] when written.
    pub schema: u32,
    /// The UCI set's name (without `uci/`).
    pub dataset: String,
    /// Labels after the last round, which the final RMSE is fitted on (absent in summaries
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<usize>,
    pub methods: BTreeMap<String, RegressionMethodSummary>,
    /// Final RMSE of every pair of methods compared seed by seed (absent in summaries written
    /// before it was added).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paired_differences: Vec<PairedDifference>,
    /// With `--score-with-gp`: the GP's final RMSE on each method's labels, compared seed by
    /// seed (which method's labels serve a smooth model better).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gp_paired_differences: Vec<PairedDifference>,
    /// `paper` (the authors' settings) or `hedge`.
    pub protocol: crate::active::protocol::ActiveProtocol,
    pub seeds: u64,
    /// The fields left `null` and why (a standard error over one seed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<hedge_run::undefined::Undefined>,
}

impl hedge_run::schema::Schema for RegressionSummary {
    const CURRENT: u32 = ACTIVE_SCHEMA;
    const WHAT: &'static str = "a regression experiment's summary.json";

    fn upgrade(_from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        v1::regression_summary(form)
    }
}

hedge_run::versioned_serde!(RegressionSummary);

/// One method's final numbers over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionMethodSummary {
    pub final_log_likelihood: MeanSe,
    pub final_rmse: MeanSe,
    /// Pinsler et al. 2019, Table 1: final RMSE after 100 acquired labels, 120 in all (mean over
    /// 40 seeds), where the paper has the method and dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_final_rmse: Option<f64>,
    /// With `--score-with-gp`: the GP's final RMSE on the labels this method acquired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gp_final_rmse: Option<MeanSe>,
    /// With `--score-with-gp`: the acquiring model's final RMSE minus the GP's, seed by seed
    /// (positive: the GP predicts better from the same labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rmse_minus_gp: Option<MeanSe>,
    /// Acquisition rounds per seed.
    pub rounds: Mean,
    /// Seconds to choose one batch.
    pub selection_seconds: Mean,
}

/// `a − b` of a final value over the seeds both finished (lower is better): every seed shares
/// its split and initial labels across methods, so the per-seed difference cancels the
/// split-to-split variance that dominates the unpaired standard errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    pub a: String,
    pub b: String,
    /// Mean and standard error of the per-seed differences.
    pub difference: MeanSe,
    /// Seeds on which `a` is lower.
    pub a_better: usize,
    pub seeds: usize,
}

/// Pinsler et al. 2019, Table 1 (final test RMSE after 100 acquired labels, 120 in all with the
/// 20 initial ones, NeuralLinear, mean over 40 seeds) for the datasets and methods it reports.
pub fn paper_final_rmse(source: &RegressionSource, method: &str) -> Option<f64> {
    let [random, maxent, acs_fw] = match source.uci_name()? {
        "yacht" => [1.272, 0.923, 1.031],
        "bostonHousing" => [4.068, 3.640, 3.799],
        "energy" => [0.959, 1.443, 0.855],
        "power-plant" => [5.108, 5.022, 4.984],
        _ => return None,
    };
    match method {
        "random" => Some(random),
        "maxent" => Some(maxent),
        "acs-fw" => Some(acs_fw),
        _ => None,
    }
}

/// Methods present in the rounds, in the experiment's order (a report of an unfinished or
/// older experiment shows what it has).
fn present(order: &[String], has: impl Fn(&str) -> bool) -> Vec<&str> {
    order.iter().map(String::as_str).filter(|&m| has(m)).collect()
}

fn regression_report(
    dir: &RunDirectory,
    experiment: &RegressionExperiment,
    all: &[RoundMetrics],
) -> Result<RegressionSummary> {
    let source = experiment.source()?;
    let l = &experiment.loop_config;
    let model = match l.surrogate {
        hedge_active::regression_loop::Surrogate::NeuralLinear => format!(
            "NeuralLinear ({} × {} ReLU + NIG last layer, {} recipe{}{})",
            l.model.layers,
            l.model.hidden,
            l.model.recipe.name(),
            if l.ensemble > 1 { format!(", an ensemble of {} fits per round", l.ensemble) } else { String::new() },
            l.projections.map_or(String::new(), |j| format!("; ACS-FW on J = {j} random projections")),
        ),
        hedge_active::regression_loop::Surrogate::Gp => {
            "an exact GP (ARD RBF kernel, maximum marginal likelihood; the paper's numbers are NeuralLinear's)"
                .to_string()
        }
    };
    let gp_scored = all.iter().any(|r| r.gp_test_rmse.is_some());
    let (gp_head, gp_rule) =
        if gp_scored { (" GP on the same labels | model − GP (paired) |", "---|---|") } else { ("", "") };
    let mut md = format!(
        "{}: {model}, {} seeds, {} initial labels, batches of {}, budget {}.\n\n\
         | method | final RMSE (mean ± se) | paper (Pinsler et al., Table 1) |{gp_head} final test log-likelihood | acquisition rounds | selection s / round |\n|---|---|---|{gp_rule}---|---|---|\n",
        experiment.dataset,
        experiment.seeds,
        l.init,
        l.batch,
        l.budget
    );
    let methods = present(&experiment.methods, |m| all.iter().any(|r| r.method == m));
    let mut summary = BTreeMap::new();
    let mut curves: Vec<hedge_plot::MeanCurve> = Vec::new();
    for &method in &methods {
        let runs: Vec<Vec<&RoundMetrics>> =
            (0..experiment.seeds).map(|s| all.iter().filter(|r| r.method == method && r.seed == s).collect()).collect();
        let finished: Vec<&Vec<&RoundMetrics>> = runs.iter().filter(|r| !r.is_empty()).collect();
        let last = |f: fn(&RoundMetrics) -> f64| -> Vec<f64> { finished.iter().map(|r| f(r[r.len() - 1])).collect() };
        let selections: Vec<f64> =
            runs.iter().flatten().filter(|r| r.batch_size > 0).map(|r| r.selection_seconds).collect();
        let rounds: Vec<f64> = finished.iter().map(|r| (r.len() - 1) as f64).collect();
        // Seeds whose last round was scored by the GP as well.
        let gp_finals: Vec<(f64, f64)> = finished
            .iter()
            .filter_map(|r| {
                let last = r[r.len() - 1];
                Some((last.test_rmse, last.gp_test_rmse?))
            })
            .collect();
        let (gp_final_rmse, rmse_minus_gp) = if gp_finals.is_empty() {
            (None, None)
        } else {
            let gp: Vec<f64> = gp_finals.iter().map(|p| p.1).collect();
            let diff: Vec<f64> = gp_finals.iter().map(|p| p.0 - p.1).collect();
            (Some(MeanSe::of(&gp)), Some(MeanSe::of(&diff)))
        };
        let m = RegressionMethodSummary {
            final_log_likelihood: MeanSe::of(&last(|r| r.test_log_likelihood)),
            final_rmse: MeanSe::of(&last(|r| r.test_rmse)),
            paper_final_rmse: paper_final_rmse(&source, method),
            gp_final_rmse,
            rmse_minus_gp,
            rounds: Mean::of(&rounds),
            selection_seconds: Mean::of(&selections),
        };
        let gp_cells = match (gp_scored, &m.gp_final_rmse, &m.rmse_minus_gp) {
            (true, Some(gp), Some(d)) => format!(" {} | {} |", gp.plus_minus(3, false), d.plus_minus(3, true)),
            (true, _, _) => " – | – |".to_string(),
            (false, _, _) => String::new(),
        };
        md.push_str(&format!(
            "| {} | {} | {} |{gp_cells} {} | {:.1} | {:.4} |\n",
            method,
            m.final_rmse.plus_minus(3, false),
            m.paper_final_rmse.map_or("–".to_string(), |v| format!("{v:.3}")),
            m.final_log_likelihood.plus_minus(3, false),
            m.rounds.mean,
            m.selection_seconds.mean
        ));
        let per_seed: Vec<Vec<(usize, f64)>> =
            runs.iter().map(|run| run.iter().map(|r| (r.labels, r.test_rmse)).collect()).collect();
        curves.push((method.to_string(), band(grid_curve(&per_seed, l.init, l.batch, l.budget))));
        summary.insert(method.to_string(), m);
    }
    // Each method's last round per seed, read through `value` (seeds without it left out).
    let finals = |value: fn(&RoundMetrics) -> Option<f64>| -> Vec<(&str, BTreeMap<u64, f64>)> {
        methods
            .iter()
            .map(|&m| {
                let by_seed = (0..experiment.seeds)
                    .filter_map(|s| Some((s, value(all.iter().rfind(|r| r.method == m && r.seed == s)?)?)))
                    .collect();
                (m, by_seed)
            })
            .collect()
    };
    let paired = paired_differences(&finals(|r| Some(r.test_rmse)));
    md.push_str(&paired_differences_table(&paired));
    let gp_paired = if gp_scored { paired_differences(&finals(|r| r.gp_test_rmse)) } else { Vec::new() };
    if !gp_paired.is_empty() {
        md.push_str(
            &paired_differences_table(&gp_paired)
                .replace("of final RMSE", "of the GP's final RMSE on each method's labels"),
        );
    }
    let summary = RegressionSummary {
        schema: ACTIVE_SCHEMA,
        dataset: source.uci_name().unwrap_or(&experiment.dataset).to_string(),
        labels: Some(experiment.loop_config.budget),
        methods: summary,
        paired_differences: paired,
        gp_paired_differences: gp_paired,
        protocol: experiment.active_protocol,
        seeds: experiment.seeds,
        undefined: Vec::new(),
    };
    let summary = RegressionSummary { undefined: one_seed_nulls(&summary), ..summary };
    dir.write_json(SUMMARY_FILE, &summary)?;
    md.push_str(&format!("\nCommand: `{}`\n", experiment.command));
    dir.write_bytes(TABLE_FILE, md.as_bytes())?;
    if !curves.iter().all(|(_, c)| c.is_empty()) {
        hedge_plot::curves_with_error(
            &dir.file("rmse_vs_labels.png"),
            &curves,
            "labels",
            "test RMSE (mean ± se over seeds)",
            &format!("{}: RMSE vs labels", experiment.dataset),
        )?;
    }
    Ok(summary)
}

/// Paired comparison of final values (lower is better) of every pair of methods, over the seeds
/// both finished ([`PairedDifference`]).
pub fn paired_differences(finals: &[(&str, BTreeMap<u64, f64>)]) -> Vec<PairedDifference> {
    let mut v = Vec::new();
    for (i, (a, fa)) in finals.iter().enumerate() {
        for (b, fb) in &finals[i + 1..] {
            let diffs: Vec<f64> = fa.iter().filter_map(|(s, va)| Some(va - fb.get(s)?)).collect();
            v.push(PairedDifference {
                a: a.to_string(),
                b: b.to_string(),
                difference: MeanSe::of(&diffs),
                a_better: diffs.iter().filter(|d| **d < 0.0).count(),
                seeds: diffs.len(),
            });
        }
    }
    v
}

/// The Markdown table of [`paired_differences`].
pub fn paired_differences_table(paired: &[PairedDifference]) -> String {
    let mut md = String::from(
        "\nPaired differences of final RMSE (same split and initial labels per seed):\n\n\
         | A − B | mean ± se | seeds where A is better |\n|---|---|---|\n",
    );
    for p in paired {
        md.push_str(&format!(
            "| {} − {} | {} | {}/{} |\n",
            p.a,
            p.b,
            p.difference.plus_minus(3, true),
            p.a_better,
            p.seeds
        ));
    }
    md
}

/// Mean ± se over seeds on a common label grid (init, init + batch, …, budget), each seed
/// contributing its latest round at or below each grid point, so that runs whose label counts
/// differ (ACS-FW's smaller batches) average point by point.
pub fn grid_curve(
    per_seed: &[Vec<(usize, f64)>],
    init: usize,
    batch: usize,
    budget: usize,
) -> Vec<(f64, f64, Option<f64>)> {
    let grid: BTreeSet<usize> = (init..=budget).step_by(batch.max(1)).chain(std::iter::once(budget)).collect();
    let mut by_labels: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for run in per_seed {
        for &g in &grid {
            if let Some(&(_, v)) = run.iter().rev().find(|(labels, _)| *labels <= g) {
                by_labels.entry(g).or_default().push(v);
            }
        }
    }
    by_labels
        .into_iter()
        .map(|(l, v)| {
            let s = MeanSe::of(&v);
            (l as f64, s.mean, s.se)
        })
        .collect()
}

/// The `undefined` list of a summary: its standard errors over one seed are `null`.
fn one_seed_nulls<T: Serialize>(summary: &T) -> Vec<hedge_run::undefined::Undefined> {
    use hedge_run::undefined::{explain_nulls, NullReason};
    explain_nulls(summary, &[NullReason::new("*.se", hedge_eval::ONE_RUN_SPREAD)])
}

/// A curve for the figure: one seed draws no band.
fn band(curve: Vec<(f64, f64, Option<f64>)>) -> Vec<(f64, f64, f64)> {
    curve.into_iter().map(|(l, mean, se)| (l, mean, se.unwrap_or(0.0))).collect()
}

/// `hedge active classify`: CNN + Laplace last layer on (Fashion-)MNIST.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ClassificationExperiment {
    /// [`ACTIVE_SCHEMA`] when written.
    pub schema: u32,
    pub command: String,
    /// Folder under the data directory with the four IDX files.
    pub dataset: String,
    #[serde(rename = "loop")]
    pub loop_config: ClassLoopConfig,
    /// Acquisitions by their registered names ([`hedge_active::ACQUISITIONS`]).
    pub methods: Vec<String>,
    /// Pool images drawn per seed from the training split.
    pub pool: usize,
    pub protocol: String,
    pub seeds: u64,
    /// Test images drawn per seed from the test split.
    pub test: usize,
    /// libtorch intra-op threads the experiment ran with.
    pub threads: i32,
}

impl hedge_run::schema::Schema for ClassificationExperiment {
    const CURRENT: u32 = ACTIVE_SCHEMA;
    const WHAT: &'static str = "a classification experiment's config.json";

    fn upgrade(_from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        v1::classification_experiment(form)
    }
}

hedge_run::versioned_serde!(ClassificationExperiment);

/// One seed's pool and test images, standardised on the pool.
struct SeedImages {
    pool: (Tensor, Tensor),
    test: (Tensor, Tensor),
}

impl ClassificationExperiment {
    pub const PROTOCOL: &'static str = "per seed: pool drawn from the training split, test images from the test split, pixels standardised on the pool; the CNN is retrained from scratch every round";

    fn seed_images(&self, data: &Mnist, seed: u64) -> SeedImages {
        let subset = |split: &MnistSplit, size: usize, seed: u64| -> (Vec<u8>, Vec<u8>) {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let idx = rand::seq::index::sample(&mut rng, split.len(), size).into_vec();
            (
                idx.iter().flat_map(|&i| split.image(i).to_vec()).collect(),
                idx.iter().map(|&i| split.labels[i]).collect(),
            )
        };
        let (pool_pixels, pool_labels) = subset(&data.train, self.pool, seed);
        let (test_pixels, test_labels) = subset(&data.test, self.test, seed + 1_000_000);
        let (mean, std) = pixel_moments(&pool_pixels);
        SeedImages {
            pool: (images_tensor(&pool_pixels, mean, std), labels_tensor(&pool_labels)),
            test: (images_tensor(&test_pixels, mean, std), labels_tensor(&test_labels)),
        }
    }
}

impl Experiment for ClassificationExperiment {
    type Data = Mnist;
    type Root = DataRoot;
    type Summary = ClassificationSummary;
    type Finished = RunFinished;
    type Error = LabError;
    const FILES: &'static [&'static str] = &EXPERIMENT_FILES;
    const KIND: &'static str = ACTIVE_EXPERIMENT_KIND;

    fn is_started_as(&self, started: &Self) -> bool {
        Self { command: started.command.clone(), ..self.clone() } == *started
    }

    fn load(&self, root: &DataRoot) -> Result<Mnist> {
        Ok(Mnist::load(&root.dir()?.join(&self.dataset))?)
    }

    fn check(&self, data: &Mnist) -> Result<()> {
        if self.pool == 0 || self.pool > data.train.len() {
            return Err(invalid(
                "pool",
                self.pool,
                format!("must lie in 1..={} (the training split)", data.train.len()),
            ));
        }
        if self.test == 0 || self.test > data.test.len() {
            return Err(invalid("test", self.test, format!("must lie in 1..={} (the test split)", data.test.len())));
        }
        if self.seeds == 0 || self.methods.is_empty() {
            return Err(invalid("seeds/methods", format!("{}/{}", self.seeds, self.methods.len()), "need ≥ 1 of each"));
        }
        for method in &self.methods {
            self.loop_config.check_acquisition(hedge_active::acquisition(method)?)?;
        }
        Ok(self.loop_config.check(self.pool)?)
    }

    fn continue_in(
        &self,
        dir: &RunDirectory,
        data: &Mnist,
        progress: &mut dyn FnMut(RunFinished),
    ) -> Result<ClassificationSummary> {
        let per_seed = self.methods.len();
        let runs = self.seeds as usize * per_seed;
        let acquisitions =
            self.methods.iter().map(|m| hedge_active::acquisition(m)).collect::<hedge_active::Result<Vec<_>>>()?;
        let job = |index: usize| ((index / per_seed) as u64, acquisitions[index % per_seed]);
        let mut images: Option<(u64, SeedImages)> = None;
        let rounds: Vec<ClassRoundMetrics> = run_resumable(
            dir,
            runs,
            |index, resume, on_round| {
                let (seed, method) = job(index);
                if images.as_ref().is_none_or(|(s, _)| *s != seed) {
                    images = Some((seed, self.seed_images(data, seed)));
                }
                let (_, set) = images.as_ref().expect("drawn above");
                let pool = ImageSet { images: &set.pool.0, labels: &set.pool.1 };
                let test = ImageSet { images: &set.test.0, labels: &set.test.1 };
                self.loop_config.run_from(&pool, &test, 10, method, seed, resume, on_round).map(|_| ())
            },
            |index| {
                let (seed, method) = job(index);
                progress(RunFinished { index, runs, seed, method: method.name })
            },
        )?;
        classification_report(dir, self, &rounds)
    }

    fn report_in(&self, dir: &RunDirectory) -> Result<ClassificationSummary> {
        classification_report(dir, self, &dir.checkpointed_json_lines(ROUNDS_FILE)?)
    }
}

/// `summary.json` of a classification experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassificationSummary {
    pub dataset: String,
    pub methods: BTreeMap<String, ClassMethodSummary>,
    pub seeds: u64,
    /// The fields left `null` and why (a standard error over one seed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<hedge_run::undefined::Undefined>,
}

/// One method's numbers over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassMethodSummary {
    /// Accuracy on the label grid (init, init + batch, …, budget), keyed by label count.
    pub accuracy_by_labels: BTreeMap<String, MeanSe>,
    pub final_accuracy: MeanSe,
    pub final_log_likelihood: MeanSe,
    pub final_predictive_accuracy: MeanSe,
    pub rounds: Mean,
    pub selection_seconds: Mean,
}

fn classification_report(
    dir: &RunDirectory,
    experiment: &ClassificationExperiment,
    all: &[ClassRoundMetrics],
) -> Result<ClassificationSummary> {
    let c = &experiment.loop_config;
    let mut md = format!(
        "{}: CNN + Laplace last layer, {} seeds, {} initial labels, batches of {}, budget {}, J = {} projections.\n\n\
         Accuracy: the network's prediction (last layer at its MAP); MC accuracy and log-likelihood: the posterior predictive.\n\n\
         | method | final accuracy (mean ± se) | final MC accuracy | final test log-likelihood | acquisition rounds | selection s / round |\n|---|---|---|---|---|---|\n",
        experiment.dataset, experiment.seeds, c.init, c.batch, c.budget, c.projections
    );
    let methods = present(&experiment.methods, |m| all.iter().any(|r| r.method == m));
    let mut summary = BTreeMap::new();
    let mut curves: Vec<hedge_plot::MeanCurve> = Vec::new();
    for &method in &methods {
        let runs: Vec<Vec<&ClassRoundMetrics>> =
            (0..experiment.seeds).map(|s| all.iter().filter(|r| r.method == method && r.seed == s).collect()).collect();
        let finished: Vec<&Vec<&ClassRoundMetrics>> = runs.iter().filter(|r| !r.is_empty()).collect();
        let last =
            |f: fn(&ClassRoundMetrics) -> f64| -> Vec<f64> { finished.iter().map(|r| f(r[r.len() - 1])).collect() };
        let selections: Vec<f64> =
            runs.iter().flatten().filter(|r| r.batch_size > 0).map(|r| r.selection_seconds).collect();
        let per_seed: Vec<Vec<(usize, f64)>> =
            runs.iter().map(|run| run.iter().map(|r| (r.labels, r.test_accuracy)).collect()).collect();
        let curve = grid_curve(&per_seed, c.init, c.batch, c.budget);
        let m = ClassMethodSummary {
            accuracy_by_labels: curve.iter().map(|&(l, mean, se)| (format!("{l}"), MeanSe { mean, se })).collect(),
            final_accuracy: MeanSe::of(&last(|r| r.test_accuracy)),
            final_log_likelihood: MeanSe::of(&last(|r| r.test_log_likelihood)),
            final_predictive_accuracy: MeanSe::of(&last(|r| r.predictive_accuracy)),
            rounds: Mean::of(&finished.iter().map(|r| (r.len() - 1) as f64).collect::<Vec<_>>()),
            selection_seconds: Mean::of(&selections),
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {:.3} |\n",
            method,
            m.final_accuracy.plus_minus(4, false),
            m.final_predictive_accuracy.plus_minus(4, false),
            m.final_log_likelihood.plus_minus(3, false),
            m.rounds.mean,
            m.selection_seconds.mean
        ));
        curves.push((method.to_string(), band(curve)));
        summary.insert(method.to_string(), m);
    }
    let summary = ClassificationSummary {
        dataset: experiment.dataset.clone(),
        methods: summary,
        seeds: experiment.seeds,
        undefined: Vec::new(),
    };
    let summary = ClassificationSummary { undefined: one_seed_nulls(&summary), ..summary };
    dir.write_json(SUMMARY_FILE, &summary)?;
    md.push_str(&format!("\nCommand: `{}`\n", experiment.command));
    dir.write_bytes(TABLE_FILE, md.as_bytes())?;
    if !curves.iter().all(|(_, c)| c.is_empty()) {
        hedge_plot::curves_with_error(
            &dir.file("accuracy_vs_labels.png"),
            &curves,
            "labels",
            "test accuracy (mean ± se over seeds)",
            &format!("{}: accuracy vs labels", experiment.dataset),
        )?;
    }
    Ok(summary)
}

/// Schema 1 of the active experiments' files, read only: each setting a file left out, written
/// in as hedge ran before the setting existed (or, for those written only when they differed
/// from it, as the value that left them out).
pub mod v1 {
    use hedge_active::neural_linear::{LayerInit, Minibatch, NeuralLinearRecipe};
    use hedge_active::regression_loop::{Surrogate, TargetScaling, PAPER_TEST_FRACTION};
    use serde_json::{Map, Value};

    use crate::active::protocol::ActiveProtocol;

    fn fill(form: &mut Map<String, Value>, key: &str, value: impl serde::Serialize) {
        if !form.contains_key(key) {
            form.insert(key.into(), serde_json::to_value(value).expect("a setting serialises"));
        }
    }

    fn object<'a>(form: &'a mut Map<String, Value>, key: &str) -> Result<&'a mut Map<String, Value>, String> {
        form.get_mut(key).and_then(Value::as_object_mut).ok_or_else(|| format!("no `{key}` object"))
    }

    /// A regression experiment's `config.json`: the methods hedge then ran (random, maxent,
    /// acs-fw), hedge's label protocol (100 labels), the paper's 80/20 split, targets scaled on
    /// the initial labels, one NeuralLinear fit per round and no GP beside it; the network's mse
    /// recipe (full batch, 1,000 epochs and minibatches of 64 unused), its cosine end at 1e-5
    /// and tch's start.
    ///
    /// # Errors
    /// No `loop` object, or none for its `model`.
    pub fn regression_experiment(form: &mut Map<String, Value>) -> Result<(), String> {
        fill(form, "methods", ["random", "maxent", "acs-fw"]);
        fill(form, "labels_protocol", ActiveProtocol::Hedge);
        let loop_config = object(form, "loop")?;
        fill(loop_config, "projections", Value::Null);
        fill(loop_config, "test_fraction", PAPER_TEST_FRACTION);
        fill(loop_config, "target_scaling", TargetScaling::InitialLabels);
        fill(loop_config, "surrogate", Surrogate::NeuralLinear);
        fill(loop_config, "score_with_gp", false);
        fill(loop_config, "ensemble", 1);
        let model = object(loop_config, "model")?;
        fill(model, "recipe", NeuralLinearRecipe::Mse);
        fill(model, "epochs", 1000);
        fill(model, "batch_size", 64);
        fill(model, "minibatch", Minibatch::Fixed);
        fill(model, "final_learning_rate", 1e-5);
        fill(model, "init", LayerInit::Tch);
        Ok(())
    }

    /// A regression experiment's `summary.json`: hedge's label protocol.
    ///
    /// # Errors
    /// None; a step for every schema.
    pub fn regression_summary(form: &mut Map<String, Value>) -> Result<(), String> {
        fill(form, "protocol", ActiveProtocol::Hedge);
        Ok(())
    }

    /// A classification experiment's `config.json`: the four methods hedge then ran.
    ///
    /// # Errors
    /// None; a step for every schema.
    pub fn classification_experiment(form: &mut Map<String, Value>) -> Result<(), String> {
        fill(form, "methods", ["random", "maxent", "bald", "acs-fw"]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 17: `--seeds 0` wrote NaN tables with exit code 0, and a test fraction that holds
    /// out no point gave a null RMSE; both are refused before anything runs.
    #[test]
    fn experiments_that_could_only_report_nothing_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let folder = UciDataset::folder(dir.path(), "toy");
        std::fs::create_dir_all(&folder).unwrap();
        let rows: String = (0..30).map(|i| format!("{i} {} {}\n", (i * i) % 7, i as f64 * 0.5)).collect();
        for (name, text) in [
            ("data.txt", rows.as_str()),
            ("index_features.txt", "0\n1\n"),
            ("index_target.txt", "2\n"),
            ("n_splits.txt", "1\n"),
        ] {
            std::fs::write(folder.join(name), text).unwrap();
        }
        let data = UciDataset::load(dir.path(), "toy").unwrap();
        let experiment = |seeds: u64, test_fraction: f64| RegressionExperiment {
            schema: ACTIVE_SCHEMA,
            command: String::new(),
            dataset: "uci/toy".into(),
            table: None,
            methods: vec!["random".into()],
            loop_config: LoopConfig { init: 5, batch: 5, budget: 10, test_fraction, ..LoopConfig::default() },
            protocol: String::new(),
            active_protocol: Default::default(),
            seeds,
        };
        experiment(1, 0.2).check(&data).unwrap();
        let msg = experiment(0, 0.2).check(&data).unwrap_err().to_string();
        assert!(msg.contains("seeds"), "{msg}");
        let msg = experiment(1, 0.01).check(&data).unwrap_err().to_string();
        assert!(msg.contains("test_fraction") && msg.contains("no test point of 30"), "{msg}");
    }

    #[test]
    fn the_protocol_names_the_split() {
        assert_eq!(RegressionExperiment::protocol_for(&LoopConfig::default()), RegressionExperiment::PROTOCOL);
        let tenth = LoopConfig { test_fraction: 0.1, ..LoopConfig::default() };
        assert!(RegressionExperiment::protocol_for(&tenth).starts_with("per seed: 90/10 pool/test split"));
        let all = LoopConfig {
            target_scaling: hedge_active::regression_loop::TargetScaling::Labelled,
            ..LoopConfig::default()
        };
        assert!(RegressionExperiment::protocol_for(&all).contains("targets on all labels so far"));
    }

    /// Every committed summary reads back into the typed structs and writes out as it was, in
    /// the current schema: `schema` set and, in a schema-1 regression summary, the protocol it
    /// left out (hedge's) written in. Every committed config reads.
    #[test]
    fn committed_summaries_round_trip() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/active");
        let mut seen = 0;
        let folders = [
            root.clone(),
            root.join("hedge-protocol"),
            root.join("mse-recipe"),
            root.join("gp-same-labels"),
            root.join("ensemble"),
            root.join("gp-reference"),
        ];
        for entry in folders.iter().flat_map(|f| std::fs::read_dir(f).into_iter().flatten().flatten()) {
            let path = entry.path().join(SUMMARY_FILE);
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let mut expected: serde_json::Value = serde_json::from_str(&text).unwrap();
            let again = if entry.file_name() == "fashion-mnist" {
                let s: ClassificationSummary = serde_json::from_str(&text).unwrap();
                serde_json::to_value(&s).unwrap()
            } else {
                let s: RegressionSummary = serde_json::from_str(&text).unwrap();
                assert_eq!(serde_json::from_value::<RegressionSummary>(serde_json::to_value(&s).unwrap()).unwrap(), s);
                let form = expected.as_object_mut().unwrap();
                if !form.contains_key("schema") {
                    form.insert("schema".into(), ACTIVE_SCHEMA.into());
                    form.entry("protocol").or_insert("hedge".into());
                }
                serde_json::to_value(&s).unwrap()
            };
            assert_eq!(again, expected, "{}", path.display());
            let config = std::fs::read_to_string(entry.path().join(CONFIG_FILE)).unwrap();
            if entry.file_name() == "fashion-mnist" {
                serde_json::from_str::<ClassificationExperiment>(&config).unwrap();
            } else {
                serde_json::from_str::<RegressionExperiment>(&config).unwrap();
            }
            seen += 1;
        }
        assert!(seen >= 5, "{seen} summaries under {}", root.display());
    }

    /// A config written before most settings existed (schema 1: no methods, no label protocol,
    /// no minibatch rule) reads as the experiment it ran; a current one writes its schema and
    /// every setting, and reads back equal.
    #[test]
    fn a_schema_1_config_reads_as_the_experiment_it_ran() {
        use hedge_active::neural_linear::{LayerInit, Minibatch, NeuralLinearRecipe};
        use hedge_active::regression_loop::{Surrogate, TargetScaling};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../results/active/mse-recipe/yacht")
            .join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        for absent in ["schema", "methods", "labels_protocol", "recipe", "minibatch", "ensemble", "surrogate"] {
            assert!(!text.contains(&format!("\"{absent}\"")), "{} holds {absent}", path.display());
        }
        let old: RegressionExperiment = serde_json::from_str(&text).unwrap();
        let (l, m) = (&old.loop_config, &old.loop_config.model);
        assert_eq!(old.methods, ["random", "maxent", "acs-fw"]);
        assert_eq!(old.active_protocol, crate::active::protocol::ActiveProtocol::Hedge);
        assert_eq!(
            (l.projections, l.test_fraction, l.target_scaling, l.surrogate, l.score_with_gp, l.ensemble),
            (None, 0.2, TargetScaling::InitialLabels, Surrogate::NeuralLinear, false, 1)
        );
        assert_eq!(
            (m.recipe, m.epochs, m.batch_size, m.minibatch),
            (NeuralLinearRecipe::Mse, 1000, 64, Minibatch::Fixed)
        );
        assert_eq!((m.final_learning_rate, m.init), (1e-5, LayerInit::Tch));
        let written = serde_json::to_value(&old).unwrap();
        assert_eq!(written["schema"], ACTIVE_SCHEMA);
        assert_eq!(written["loop"]["model"]["minibatch"], "fixed");
        assert_eq!(serde_json::from_value::<RegressionExperiment>(written).unwrap(), old);
        let mut old_form: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
        old_form.remove("loop");
        let e = serde_json::from_value::<RegressionExperiment>(old_form.into()).unwrap_err();
        assert!(e.to_string().contains("config.json of schema 1: no `loop` object"), "{e}");
    }

    #[test]
    fn paired_differences_use_only_seeds_both_methods_finished() {
        let a: BTreeMap<u64, f64> = [(0, 1.0), (1, 2.0), (2, 3.0)].into();
        let b: BTreeMap<u64, f64> = [(0, 2.0), (1, 1.0)].into();
        let md = paired_differences_table(&paired_differences(&[("a", a), ("b", b)]));
        // Differences −1 and +1: mean 0, se = std(ddof=1)/√2 = √2/√2 = 1; a better on one of two.
        assert!(md.contains("| a − b | +0.000 ± 1.000 | 1/2 |"), "{md}");
    }
}
