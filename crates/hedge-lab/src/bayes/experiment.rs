//! The `hedge bayes` experiments as a library, each writing a run directory of typed files:
//! GP regression on a standard UCI split ([`GpRun`], `result.json`), the suite over several
//! datasets ([`GpSuite`]), the lengthscale study ([`LengthscaleStudy`]), the Gibbs sampler on
//! simulated normal data ([`GibbsDemo`]) and spike-and-slab EM on a simulated sparse regression
//! ([`SpikeSlabDemo`]).

use std::path::Path;
use std::time::Instant;

use faer::Mat;
use hedge_data::{DataRoot, TableSpec, UciDataset};
use hedge_run::RunDirectory;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use crate::LabError;
use hedge_bayes::diagnostics::ChainSummary;
use hedge_bayes::gibbs::{normal_gamma_posterior, GibbsConfig, MeanPrior};
use hedge_bayes::gp::{fit_with, FitProgress, GpConfig, GpHyperParameters, OptimisationRun, Prediction};
use hedge_bayes::kernel::{KernelKind, RbfKernel};
use hedge_bayes::linalg::Cholesky;
use hedge_bayes::sparse::{SparseGpConfig, SparseMethod};
use hedge_bayes::spike_slab::SpikeSlabConfig;
use hedge_run::ParamGuard;

/// Inputs standardised with the training split's mean and standard deviation.
pub struct Standardised {
    pub train_x: Mat<f64>,
    pub test_x: Mat<f64>,
    pub train_y: Vec<f64>,
    pub test_y: Vec<f64>,
    /// Standard deviation of each input on the training split (1 for constant columns).
    pub x_scale: Vec<f64>,
}

/// Loads `uci/<name>` split `k` from `root` (or split `k` of a user's CSV file when `table`
/// names its target; see [`hedge_data::regression_set`]) and standardises its inputs on the
/// training rows.
pub fn uci_split(
    root: &DataRoot,
    dataset: &str,
    table: Option<&TableSpec>,
    k: usize,
) -> Result<(UciDataset, Standardised)> {
    let data = hedge_data::regression_set(root, dataset, table)?;
    let split = data.split(k)?;
    let x = Mat::from_fn(data.rows(), data.features, |i, j| data.row(i)[j]);
    let standardiser = hedge_bayes::Standardiser::fit(x.as_ref(), &split.train);
    let take = |rows: &[usize]| standardiser.transform(x.as_ref(), rows);
    let s = Standardised {
        train_x: take(&split.train),
        test_x: take(&split.test),
        train_y: split.train.iter().map(|&i| data.targets[i]).collect(),
        test_y: split.test.iter().map(|&i| data.targets[i]).collect(),
        x_scale: standardiser.scale.clone(),
    };
    Ok((data, s))
}

/// One GP fit on a standard UCI split: exact, or sparse with `sparse` pseudo-inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct GpRun {
    /// `uci/<name>`.
    pub dataset: String,
    pub split: usize,
    /// Pseudo-inputs of a sparse GP (`None`: the exact GP).
    pub sparse: Option<usize>,
    pub method: SparseMethod,
    pub kernel: KernelKind,
    /// Random restarts (`None`: 2 for the exact GP, 0 for a sparse one).
    pub restarts: Option<usize>,
    pub max_iters: usize,
    pub seed: u64,
    /// A user's table: `dataset` is then the CSV file's path and this names its target column.
    pub table: Option<TableSpec>,
}

/// The model settings a GP run's `config.json` records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GpModelConfig {
    Sparse(SparseGpConfig),
    Exact(GpConfig),
}

/// A GP run's `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpRunConfig {
    pub command: String,
    pub model: GpModelConfig,
}

/// A GP run's `result.json` (fields in the file's order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpReport {
    pub dataset: String,
    pub fit_seconds: f64,
    /// In the units of the original inputs (the model sees standardised inputs).
    pub lengthscales: Vec<f64>,
    pub lengthscales_standardised_inputs: Vec<f64>,
    /// Of the exact GP; the sparse GP's objective (FITC likelihood or VFE bound) for a sparse one.
    pub log_marginal_likelihood: f64,
    /// `exact`, `fitc-M` or `vfe-M`.
    pub model: String,
    /// Mean negative log predictive density of the test targets (original scale).
    pub nll: f64,
    pub noise_variance: f64,
    /// Every L-BFGS run of the hyper-parameter search.
    pub optimisation: Vec<OptimisationRun>,
    pub rmse: f64,
    pub signal_variance: f64,
    pub split: usize,
    pub test_rows: usize,
    pub train_rows: usize,
}

/// A fitted GP run: its report, model settings and test predictions.
pub struct GpFit {
    pub report: GpReport,
    pub model: GpModelConfig,
    pub prediction: Prediction,
    pub test_y: Vec<f64>,
}

impl GpRun {
    /// Loads the split from `root` (a user's CSV file needs none) and fits, telling `observer`
    /// about each L-BFGS iteration.
    pub fn fit(&self, root: &DataRoot, mut observer: impl FnMut(FitProgress)) -> Result<GpFit> {
        let (data, s) = uci_split(root, &self.dataset, self.table.as_ref(), self.split)?;
        self.fit_split(&data, s, &mut observer)
    }

    /// Fits on a split already loaded.
    pub fn fit_split(
        &self,
        data: &UciDataset,
        s: Standardised,
        mut observer: impl FnMut(FitProgress),
    ) -> Result<GpFit> {
        if let Some(m) = self.sparse {
            if m > s.train_y.len() {
                return Err(invalid(
                    "sparse",
                    m,
                    format!(
                        "{} has only {} training rows; use at most that many pseudo-inputs (or the exact GP)",
                        data.name,
                        s.train_y.len()
                    ),
                ));
            }
        }
        let gp_config = GpConfig::default()
            .with_kernel(self.kernel)
            .with_restarts(self.restarts.unwrap_or(if self.sparse.is_some() { 0 } else { 2 }))
            .with_max_iters(self.max_iters)
            .with_seed(self.seed);
        let start = Instant::now();
        let (prediction, lml, hyper, signal, noise, runs, model) = match self.sparse {
            None => {
                let fitted = gp_config.fit_observed(s.train_x.as_ref(), &s.train_y, &mut observer)?;
                (
                    fitted.predict(s.test_x.as_ref())?,
                    fitted.log_marginal_likelihood(),
                    fitted.hyper.clone(),
                    fitted.signal_variance(),
                    fitted.noise_variance(),
                    fitted.runs.clone(),
                    GpModelConfig::Exact(gp_config),
                )
            }
            Some(m) => {
                let config = SparseGpConfig::default().with_gp(gp_config).with_inducing(m).with_method(self.method);
                let fitted = config.fit_observed(s.train_x.as_ref(), &s.train_y, &mut observer)?;
                (
                    fitted.predict(s.test_x.as_ref())?,
                    fitted.objective(),
                    fitted.hyper.clone(),
                    fitted.signal_variance(),
                    fitted.noise_variance(),
                    fitted.runs.clone(),
                    GpModelConfig::Sparse(config),
                )
            }
        };
        let fit_seconds = start.elapsed().as_secs_f64();
        let lengthscales: Vec<f64> = match self.kernel {
            KernelKind::Ard => hyper.kernel.lengthscales.iter().zip(&s.x_scale).map(|(l, sd)| l * sd).collect(),
            KernelKind::Rbf => hyper.kernel.lengthscales.clone(),
        };
        let model_name = self.sparse.map_or("exact".to_string(), |m| {
            format!("{}-{m}", if self.method == SparseMethod::Fitc { "fitc" } else { "vfe" })
        });
        let report = GpReport {
            dataset: self.dataset.clone(),
            fit_seconds,
            lengthscales,
            lengthscales_standardised_inputs: hyper.kernel.lengthscales,
            log_marginal_likelihood: lml,
            model: model_name,
            nll: prediction.mean_nll(&s.test_y),
            noise_variance: noise,
            optimisation: runs,
            rmse: prediction.rmse(&s.test_y),
            signal_variance: signal,
            split: self.split,
            test_rows: s.test_y.len(),
            train_rows: s.train_y.len(),
        };
        // No silent NaN: every number of the report is finite, or the fit stops here, unwritten.
        let numbers = [
            ("test RMSE", report.rmse),
            ("test NLL", report.nll),
            ("log marginal likelihood", report.log_marginal_likelihood),
            ("noise variance", report.noise_variance),
            ("signal variance", report.signal_variance),
        ];
        let lengthscales = report.lengthscales.iter().map(|&l| ("a lengthscale", l));
        if let Some((name, value)) = numbers.into_iter().chain(lengthscales).find(|(_, v)| !v.is_finite()) {
            let largest = s.train_y.iter().chain(&s.test_y).fold(0.0f64, |m, y| m.max(y.abs()));
            return Err(hedge_bayes::BayesError::Unfit(format!(
                "the GP fit on {} gave {name} = {value}: the targets reach |y| = {largest:e}, past what f64 \
                 arithmetic on their squares holds; rescale the target column (e.g. to thousands) and fit again",
                self.dataset
            ))
            .into());
        }
        Ok(GpFit { report, model, prediction, test_y: s.test_y })
    }
}

impl GpFit {
    /// Writes `config.json`, `result.json` and `predictions.csv` into `dir`.
    pub fn write(&self, dir: &RunDirectory, command: &str) -> Result<()> {
        dir.write_json("config.json", &GpRunConfig { command: command.to_string(), model: self.model.clone() })?;
        dir.write_json("result.json", &self.report)?;
        let p = &self.prediction;
        let mut csv = String::from("target,mean,latent_variance,predictive_variance\n");
        for (i, t) in self.test_y.iter().enumerate() {
            csv.push_str(&format!(
                "{t},{},{},{}\n",
                p.mean[i],
                p.latent_variance[i],
                p.latent_variance[i] + p.noise_variance
            ));
        }
        dir.write_bytes("predictions.csv", csv.as_bytes())?;
        Ok(())
    }
}

/// The kind of folder a GP fit writes (its ownership marker).
pub const GP_FIT_KIND: &str = "GP fit";
/// The kind of folder a GP suite writes (one GP fit folder per dataset in it).
pub const GP_SUITE_KIND: &str = "GP suite";

/// The log of a GP suite's finished fits (one [`GpReport`] a dataset).
pub const GP_SUITE_LOG: &str = "fits.jsonl";

/// `hedge bayes gp-suite`: one GP fit (ARD-RBF kernel) on split `split` of each UCI set of
/// `datasets`, each into `<out>/<name>/` (a GP fit folder), on hedge's resumable engine: every
/// finished fit is logged and checkpointed, so the same command given again continues the suite
/// ([`hedge_run::Experiment::run_or_resume`]); `summary.json` (the reports) and `table.md` follow the last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpSuite {
    /// UCI set names (folders under the data root's `uci/`).
    pub datasets: Vec<String>,
    pub split: usize,
    /// Pseudo-inputs of a sparse GP (`None`: the exact GP).
    pub sparse: Option<usize>,
    pub method: SparseMethod,
    /// Random restarts (`None`: 2 for the exact GP, 0 for a sparse one).
    pub restarts: Option<usize>,
    pub max_iters: usize,
    pub seed: u64,
    pub command: String,
}

/// Where a GP suite reads its sets, and who is told of each fit's progress.
pub struct GpSuiteEnv {
    pub data: DataRoot,
    pub observer: std::rc::Rc<std::cell::RefCell<dyn FnMut(FitProgress)>>,
}

impl GpSuite {
    /// The fit of one dataset of the suite.
    fn run_of(&self, name: &str) -> GpRun {
        GpRun {
            dataset: format!("uci/{name}"),
            split: self.split,
            sparse: self.sparse,
            method: self.method,
            kernel: KernelKind::Ard,
            restarts: self.restarts,
            max_iters: self.max_iters,
            seed: self.seed,
            table: None,
        }
    }
}

/// `table.md` of a suite's reports.
pub fn gp_suite_table(split: usize, reports: &[GpReport], command: &str) -> String {
    let mut md = format!(
        "GP regression, ARD-RBF kernel, standard split {split} (inputs standardised on the training rows; \
         RMSE and mean test NLL on the original target scale).\n\n\
         | dataset | model | train | test | RMSE | NLL | log marginal likelihood | noise variance | fit s |\n\
         |---|---|---|---|---|---|---|---|---|\n"
    );
    for r in reports {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.4} | {:.3} | {:.1} | {:.3e} | {:.1} |\n",
            r.dataset,
            r.model,
            r.train_rows,
            r.test_rows,
            r.rmse,
            r.nll,
            r.log_marginal_likelihood,
            r.noise_variance,
            r.fit_seconds
        ));
    }
    md.push_str(&format!("\nCommand: `{command}`\n"));
    md
}

impl hedge_run::Experiment for GpSuite {
    type Data = GpSuiteEnvData;
    type Root = GpSuiteEnv;
    type Summary = Vec<GpReport>;
    type Finished = GpReport;
    type Error = LabError;

    const KIND: &'static str = GP_SUITE_KIND;
    const FILES: &'static [&'static str] = &[GP_SUITE_LOG, "summary.json", "table.md"];

    fn is_started_as(&self, started: &Self) -> bool {
        Self { command: started.command.clone(), ..self.clone() } == *started
    }

    fn load(&self, root: &GpSuiteEnv) -> Result<GpSuiteEnvData> {
        // Every set is there and intact before the first fit.
        for name in &self.datasets {
            hedge_data::regression_set(&root.data, &format!("uci/{name}"), None)?;
        }
        Ok(GpSuiteEnvData { data: root.data.clone(), observer: std::rc::Rc::clone(&root.observer) })
    }

    fn check(&self, _data: &GpSuiteEnvData) -> Result<()> {
        if self.datasets.is_empty() {
            return Err(invalid("datasets", "none", "name at least one UCI set, e.g. yacht"));
        }
        Ok(())
    }

    fn continue_in(
        &self,
        dir: &RunDirectory,
        data: &GpSuiteEnvData,
        progress: &mut dyn FnMut(GpReport),
    ) -> Result<Vec<GpReport>> {
        hedge_run::run_resumable::<GpReport, (), LabError>(
            dir,
            GP_SUITE_LOG,
            self.datasets.len(),
            |index, _, on_step| {
                let name = &self.datasets[index];
                let fit = self.run_of(name).fit(&data.data, |p| (data.observer.borrow_mut())(p))?;
                // The suite owns its datasets' folders: a fit stopped before it was logged is
                // fitted again over what it left.
                fit.write(&RunDirectory::create(&dir.path().join(name), GP_FIT_KIND, true)?, &self.command)?;
                on_step(&fit.report, None)?;
                progress(fit.report);
                Ok(())
            },
            |_| {},
        )?;
        self.report_in(dir)
    }

    fn report_in(&self, dir: &RunDirectory) -> Result<Vec<GpReport>> {
        let reports: Vec<GpReport> = dir.checkpointed_json_lines(GP_SUITE_LOG)?;
        dir.write_bytes("table.md", gp_suite_table(self.split, &reports, &self.command).as_bytes())?;
        dir.write_json("summary.json", &reports)?;
        Ok(reports)
    }
}

/// What a GP suite fits with: the data root and the fit observer.
pub struct GpSuiteEnvData {
    data: DataRoot,
    observer: std::rc::Rc<std::cell::RefCell<dyn FnMut(FitProgress)>>,
}

/// The lengthscale study: GP priors and posteriors of one simulated function at six
/// lengthscales (signal variance 1, noise variance = `noise`², hyper-parameters fixed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LengthscaleStudy {
    pub command: String,
    pub function: String,
    pub kernel: String,
    /// Noise standard deviation of the simulated observations.
    pub noise_sd: f64,
    /// Observations, uniform on [−5, 5].
    pub points: usize,
    pub seed: u64,
}

/// One row of `lengthscales.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LengthscaleRow {
    /// Fraction of grid points whose true value lies within ±2 posterior sd.
    pub coverage_2sd: f64,
    pub lengthscale: f64,
    pub log_marginal_likelihood: f64,
    pub mean_posterior_sd: f64,
    pub rmse_to_truth: f64,
}

/// The study's true function.
fn study_function(x: f64) -> f64 {
    x.sin() + 0.5 * (2.3 * x).sin()
}

impl LengthscaleStudy {
    pub const LENGTHSCALES: [f64; 6] = [0.2, 0.5, 1.0, 2.0, 5.0, 10.0];

    pub fn new(points: usize, noise_sd: f64, seed: u64, command: &str) -> Self {
        LengthscaleStudy {
            command: command.to_string(),
            function: "f(x) = sin(x) + 0.5 sin(2.3x) on [-5, 5]".into(),
            kernel: "RBF, signal variance 1, noise variance = noise_sd²".into(),
            noise_sd,
            points,
            seed,
        }
    }

    /// Runs the study into a new directory `out`: `config.json`, `lengthscales.json`,
    /// `lengthscales.md` and `lengthscales.png`. Returns the rows and the table.
    pub fn run(&self, out: &Path, overwrite: bool) -> Result<(Vec<LengthscaleRow>, String)> {
        self.check_ref()?;
        let dir = RunDirectory::create(out, "GP lengthscale study", overwrite)?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let train_x: Vec<f64> = (0..self.points).map(|_| -5.0 + 10.0 * rng.random::<f64>()).collect();
        let train_y: Vec<f64> =
            train_x.iter().map(|&x| study_function(x) + self.noise_sd * rng.sample::<f64, _>(StandardNormal)).collect();
        let grid: Vec<f64> = (0..201).map(|i| -5.0 + 0.05 * i as f64).collect();
        let truth: Vec<f64> = grid.iter().map(|&x| study_function(x)).collect();
        let xg = Mat::from_fn(grid.len(), 1, |i, _| grid[i]);
        let xt = Mat::from_fn(train_x.len(), 1, |i, _| train_x[i]);
        let mut panels = Vec::new();
        let mut rows = Vec::new();
        for &ell in &Self::LENGTHSCALES {
            let hyper = GpHyperParameters {
                kernel: RbfKernel::new(1.0, vec![ell]),
                noise_variance: self.noise_sd * self.noise_sd,
            };
            let prior = Cholesky::new(hyper.kernel.gram(xg.as_ref()).as_ref(), "the prior covariance on the grid")?;
            let l = prior.l();
            let prior_samples: Vec<Vec<f64>> = (0..3)
                .map(|_| {
                    let e: Vec<f64> = (0..grid.len()).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
                    (0..grid.len()).map(|i| (0..=i).map(|k| l[(i, k)] * e[k]).sum()).collect()
                })
                .collect();
            let config = GpConfig::default().with_normalise_y(false);
            let fitted = fit_with(&config, xt.as_ref(), &train_y, hyper)?;
            let p = fitted.predict(xg.as_ref())?;
            let inside = p
                .mean
                .iter()
                .zip(&p.latent_variance)
                .zip(&truth)
                .filter(|((m, v), t)| (*m - *t).abs() <= 2.0 * v.sqrt())
                .count();
            rows.push(LengthscaleRow {
                coverage_2sd: inside as f64 / grid.len() as f64,
                lengthscale: ell,
                log_marginal_likelihood: fitted.log_marginal_likelihood(),
                mean_posterior_sd: p.latent_variance.iter().map(|v| v.sqrt()).sum::<f64>() / grid.len() as f64,
                rmse_to_truth: p.rmse(&truth),
            });
            panels.push(hedge_plot::StudyPanel {
                lengthscale: ell,
                grid: grid.clone(),
                truth: truth.clone(),
                prior_samples,
                posterior_sd: p.latent_variance.iter().map(|v| v.sqrt()).collect(),
                posterior_mean: p.mean,
                train: train_x.iter().copied().zip(train_y.iter().copied()).collect(),
            });
        }
        hedge_plot::lengthscale_grid(&dir.file("lengthscales.png"), &panels)?;
        dir.write_json("config.json", self)?;
        dir.write_json("lengthscales.json", &rows)?;
        let mut md = String::from(
            "| ℓ | log marginal likelihood | RMSE to f on the grid | grid points inside ±2σ | mean posterior σ |\n|---|---|---|---|---|\n",
        );
        for r in &rows {
            md.push_str(&format!(
                "| {} | {:.2} | {:.3} | {:.2} | {:.3} |\n",
                r.lengthscale, r.log_marginal_likelihood, r.rmse_to_truth, r.coverage_2sd, r.mean_posterior_sd
            ));
        }
        dir.write_bytes("lengthscales.md", md.as_bytes())?;
        Ok((rows, md))
    }
}

impl ParamGuard for LengthscaleStudy {
    type Error = LabError;

    fn check_ref(&self) -> Result<()> {
        if self.points == 0 || self.noise_sd.is_nan() || self.noise_sd <= 0.0 {
            return Err(invalid(
                "points/noise",
                format!("{}/{}", self.points, self.noise_sd),
                "need ≥ 1 point and a noise sd > 0",
            ));
        }
        Ok(())
    }
}

/// The Gibbs sampler on `n` simulated draws from N(true_mean, true_sd²).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GibbsDemo {
    pub command: String,
    pub n: usize,
    pub sampler: GibbsConfig,
    pub true_mean: f64,
    pub true_sd: f64,
}

/// The exact normal-gamma posterior (conjugate prior only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExactPosterior {
    pub beta_mean: f64,
    pub beta_sd: f64,
    pub mu_mean: f64,
    pub mu_sd: f64,
}

/// The true mean and precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    pub beta: f64,
    pub mu: f64,
}

/// The Gibbs run's `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GibbsSummary {
    pub beta: ChainSummary,
    pub draws: usize,
    pub exact_posterior: Option<ExactPosterior>,
    pub mu: ChainSummary,
    pub seconds: f64,
    pub truth: Truth,
}

impl GibbsDemo {
    /// The run in words and a table (`hedge bayes gibbs`): the data, the chains, and per
    /// parameter the truth beside the posterior's mean, sd, 95 % interval, ESS and R-hat.
    pub fn summary_text(&self, summary: &GibbsSummary) -> String {
        let c = &self.sampler;
        let mut out = format!(
            "{} observations from N({}, {}²); {} chains × {} kept draws (burn-in {}, thin {}) in {:.3} s\n",
            self.n, self.true_mean, self.true_sd, c.chains, c.samples, c.burn_in, c.thin, summary.seconds
        );
        out.push_str(&format!(
            "{:<6} {:>8} {:>10} {:>9} {:>22} {:>9} {:>7}",
            "", "truth", "mean", "sd", "95% interval", "ESS", "R-hat"
        ));
        for (name, t, s) in [("μ", summary.truth.mu, &summary.mu), ("β", summary.truth.beta, &summary.beta)] {
            out.push_str(&format!(
                "\n{:<6} {:>8.4} {:>10.4} {:>9.4} {:>22} {:>9.0} {:>7.4}",
                name,
                t,
                s.mean,
                s.sd,
                format!("[{:.4}, {:.4}]", s.interval_95.0, s.interval_95.1),
                s.ess,
                s.r_hat
            ));
        }
        if let Some(e) = summary.exact_posterior {
            out.push_str(&format!(
                "\nexact normal-gamma posterior: E[μ] = {:.4} (sd {:.4}), E[β] = {:.4} (sd {:.4})",
                e.mu_mean, e.mu_sd, e.beta_mean, e.beta_sd
            ));
        }
        out
    }

    /// Simulates, samples and (with `out`) writes `config.json`, `summary.json`, `draws.npz` and
    /// `trace.png`; the directory is created after the sampler has run, refusing one with files
    /// unless `overwrite`, and checked before.
    pub fn run(&self, out: Option<&Path>, overwrite: bool) -> Result<GibbsSummary> {
        self.check_ref()?;
        if let Some(out) = out {
            // Refuse a folder with files before sampling, not after.
            hedge_run::atomic::check_output_dir(out, "Gibbs sampler demo", overwrite)?;
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.sampler.seed.wrapping_add(12345));
        let x: Vec<f64> =
            (0..self.n).map(|_| self.true_mean + self.true_sd * rng.sample::<f64, _>(StandardNormal)).collect();
        let start = Instant::now();
        let r = self.sampler.run(&x)?;
        let seconds = start.elapsed().as_secs_f64();
        let (a, b) = (self.sampler.a, self.sampler.b);
        let exact_posterior = match self.sampler.mean_prior {
            MeanPrior::Conjugate { mean, kappa } => {
                let (mu_n, kappa_n, a_n, b_n) = normal_gamma_posterior(&x, mean, kappa, a, b);
                Some(ExactPosterior {
                    beta_mean: a_n / b_n,
                    beta_sd: a_n.sqrt() / b_n,
                    mu_mean: mu_n,
                    mu_sd: (b_n / (kappa_n * (a_n - 1.0))).sqrt(),
                })
            }
            MeanPrior::Independent { .. } => None,
        };
        let summary = GibbsSummary {
            beta: r.beta_summary.clone(),
            draws: self.sampler.chains * self.sampler.samples,
            exact_posterior,
            mu: r.mu_summary.clone(),
            seconds,
            truth: Truth { beta: 1.0 / (self.true_sd * self.true_sd), mu: self.true_mean },
        };
        if let Some(out) = out {
            let dir = RunDirectory::create(out, "Gibbs sampler demo", overwrite)?;
            dir.write_json("config.json", self)?;
            dir.write_json("summary.json", &summary)?;
            let flat = |c: &[Vec<f64>]| {
                hedge_data::NpyArray::new(
                    vec![c.len(), c.first().map_or(0, Vec::len)],
                    hedge_data::NpyData::F64(c.iter().flatten().copied().collect()),
                )
            };
            let arrays = [("mu", flat(&r.mu)), ("beta", flat(&r.beta))];
            dir.write_with("draws.npz", |p| hedge_data::write_npz(p, &arrays))?;
            hedge_plot::traces(&dir.file("trace.png"), &[("μ", &r.mu), ("β (precision)", &r.beta)])?;
        }
        Ok(summary)
    }
}

impl ParamGuard for GibbsDemo {
    type Error = LabError;

    fn check_ref(&self) -> Result<()> {
        if self.n == 0 || self.true_sd.is_nan() || self.true_sd <= 0.0 {
            return Err(invalid("n/true_sd", format!("{}/{}", self.n, self.true_sd), "need n ≥ 1 and true sd > 0"));
        }
        // The data, and every chain's kept draws of μ and β (f64).
        let s = &self.sampler;
        hedge_run::Footprint::new("gibbs: the data and every chain's kept draws", |v| (v[0] + v[1] * v[2] * 2.0) * 8.0)
            .knob("--n", self.n as f64, 1.0)
            .knob("--chains", s.chains as f64, 2.0)
            .knob("--samples", s.samples as f64, 4.0)
            .check()?;
        // Every chain's sweeps: the burn-in, then `thin` per kept draw.
        hedge_run::Workload::new("gibbs: every chain's sweeps", |v| {
            v[0] * (v[1] + v[2] * v[3]) * hedge_run::budget::rates::SCALAR_STEP_SECONDS
        })
        .knob("--chains", s.chains as f64, 2.0)
        .knob("--burn-in", s.burn_in as f64, 0.0)
        .knob("--samples", s.samples as f64, 4.0)
        .knob("--thin", s.thin as f64, 1.0)
        .check()?;
        Ok(())
    }
}

/// Spike-and-slab EM on a simulated sparse regression: an `n × d` standard-normal design,
/// `nonzero` weights of magnitude 1–3 with random signs, noise sd `noise_sd`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpikeSlabDemo {
    pub command: String,
    pub d: usize,
    pub em: SpikeSlabConfig,
    pub n: usize,
    pub noise_sd: f64,
    pub nonzero: usize,
    pub seed: u64,
}

/// The spike-and-slab run's `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpikeSlabResult {
    pub converged: bool,
    pub exact_recovery: bool,
    pub false_positives: Vec<usize>,
    pub iterations: usize,
    pub missed: Vec<usize>,
    pub noise_variance: f64,
    pub recovered_support: Vec<usize>,
    pub seconds: f64,
    pub theta: f64,
    pub true_noise_variance: f64,
    pub true_support: Vec<usize>,
    pub true_weights: Vec<f64>,
    pub weight_sd: Vec<f64>,
    pub weights: Vec<f64>,
    /// Whether each weight is in the recovered support (not in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included: Vec<bool>,
}

impl SpikeSlabDemo {
    /// The run in words and a table (`hedge bayes spike-slab`): the design, EM's iterations,
    /// the true and recovered supports, and each weight that is non-zero or included.
    pub fn result_text(&self, r: &SpikeSlabResult) -> String {
        let mut out = format!(
            "{} × {} design, {} non-zero weights, noise sd {}; EM: {} iterations ({}), {:.3} s\n",
            self.n,
            self.d,
            self.nonzero,
            self.noise_sd,
            r.iterations,
            if r.converged { "converged" } else { "iteration limit" },
            r.seconds
        );
        out.push_str(&format!("true support      {:?}\n", r.true_support));
        out.push_str(&format!(
            "recovered support {:?}{}\n",
            r.recovered_support,
            if r.exact_recovery { "  (exact)" } else { "" }
        ));
        out.push_str(&format!(
            "θ = {:.3}, σ² = {:.4} (true {:.4})\n",
            r.theta, r.noise_variance, r.true_noise_variance
        ));
        out.push_str(&format!("{:>5} {:>10} {:>10} {:>9}", "index", "true w", "E[w]", "sd"));
        for (j, &t) in r.true_weights.iter().enumerate() {
            if t != 0.0 || r.included[j] {
                out.push_str(&format!("\n{j:>5} {:>10.4} {:>10.4} {:>9.4}", t, r.weights[j], r.weight_sd[j]));
            }
        }
        out
    }

    /// Simulates and fits; with `out`, writes `config.json`, `result.json` and `weights.csv`
    /// (the folder checked before the fit).
    pub fn run(&self, out: Option<&Path>, overwrite: bool) -> Result<SpikeSlabResult> {
        self.check_ref()?;
        if let Some(out) = out {
            hedge_run::atomic::check_output_dir(out, "spike-and-slab demo", overwrite)?;
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let x = Mat::from_fn(self.n, self.d, |_, _| rng.sample::<f64, _>(StandardNormal));
        let mut truth = vec![0.0; self.d];
        let mut support = rand::seq::index::sample(&mut rng, self.d, self.nonzero).into_vec();
        support.sort_unstable();
        for &j in &support {
            let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
            truth[j] = sign * (1.0 + 2.0 * rng.random::<f64>());
        }
        let y: Vec<f64> = (0..self.n)
            .map(|i| {
                (0..self.d).map(|j| x[(i, j)] * truth[j]).sum::<f64>()
                    + self.noise_sd * rng.sample::<f64, _>(StandardNormal)
            })
            .collect();
        let start = Instant::now();
        let fit = self.em.fit(x.as_ref(), &y)?;
        let seconds = start.elapsed().as_secs_f64();
        let found = fit.support();
        let false_positives: Vec<usize> = found.iter().copied().filter(|j| !support.contains(j)).collect();
        let missed: Vec<usize> = support.iter().copied().filter(|j| !found.contains(j)).collect();
        let result = SpikeSlabResult {
            converged: fit.converged,
            exact_recovery: false_positives.is_empty() && missed.is_empty(),
            false_positives,
            iterations: fit.iterations,
            missed,
            noise_variance: fit.noise_variance,
            recovered_support: found,
            seconds,
            theta: fit.theta,
            true_noise_variance: self.noise_sd * self.noise_sd,
            true_support: support,
            true_weights: truth,
            weight_sd: fit.weight_sd.clone(),
            weights: fit.weights.clone(),
            included: fit.included.clone(),
        };
        if let Some(out) = out {
            let dir = RunDirectory::create(out, "spike-and-slab demo", overwrite)?;
            dir.write_json("config.json", self)?;
            dir.write_json("result.json", &result)?;
            let mut csv = String::from("index,true_weight,posterior_mean,posterior_sd,included\n");
            for (j, t) in result.true_weights.iter().enumerate() {
                csv.push_str(&format!(
                    "{j},{},{},{},{}\n",
                    t,
                    result.weights[j],
                    result.weight_sd[j],
                    u8::from(result.included[j])
                ));
            }
            dir.write_bytes("weights.csv", csv.as_bytes())?;
        }
        Ok(result)
    }
}

impl ParamGuard for SpikeSlabDemo {
    type Error = LabError;

    fn check_ref(&self) -> Result<()> {
        if self.nonzero > self.d || self.n < 2 || self.noise_sd.is_nan() || self.noise_sd <= 0.0 {
            return Err(invalid(
                "nonzero/d/n/noise",
                format!("{}/{}/{}/{}", self.nonzero, self.d, self.n, self.noise_sd),
                "need nonzero ≤ d, n ≥ 2 and a noise sd > 0",
            ));
        }
        // The design (n x d) and EM's d x d matrices (XᵀX, the precision and its inverse), in f64.
        hedge_run::Footprint::new("spike-slab: the design and EM's d x d matrices", |v| {
            (v[0] * v[1] + 4.0 * v[1] * v[1] + 8.0 * v[1]) * 8.0
        })
        .knob("--n", self.n as f64, 2.0)
        .knob("--d", self.d as f64, self.nonzero.max(1) as f64)
        .check()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(path: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/bayes").join(path);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Every committed `hedge bayes` file reads back typed, and the GP reports write out as
    /// they were written.
    #[test]
    fn committed_results_read_typed() {
        for name in ["yacht", "concrete", "bostonHousing", "kin8nm"] {
            let text = committed(&format!("gp-split0/{name}/result.json"));
            let report: GpReport = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string_pretty(&report).unwrap().trim_end(), text.trim_end(), "{name}");
            let config: GpRunConfig =
                serde_json::from_str(&committed(&format!("gp-split0/{name}/config.json"))).unwrap();
            assert!(matches!(config.model, GpModelConfig::Exact(_)), "{name}");
        }
        let sparse: GpRunConfig =
            serde_json::from_str(&committed("protein-fitc256/protein-tertiary-structure/config.json")).unwrap();
        assert!(matches!(sparse.model, GpModelConfig::Sparse(_)));
        let _: Vec<GpReport> = serde_json::from_str(&committed("gp-split0/summary.json")).unwrap();
        let gibbs: GibbsSummary = serde_json::from_str(&committed("gibbs-conjugate/summary.json")).unwrap();
        assert!(gibbs.exact_posterior.is_some());
        let _: GibbsDemo = serde_json::from_str(&committed("gibbs-conjugate/config.json")).unwrap();
        let slab: SpikeSlabResult = serde_json::from_str(&committed("spike-slab/result.json")).unwrap();
        assert!(slab.exact_recovery);
        let _: SpikeSlabDemo = serde_json::from_str(&committed("spike-slab/config.json")).unwrap();
        let rows: Vec<LengthscaleRow> = serde_json::from_str(&committed("lengthscales/lengthscales.json")).unwrap();
        assert_eq!(rows.len(), 6);
        let _: LengthscaleStudy = serde_json::from_str(&committed("lengthscales/config.json")).unwrap();
    }

    /// The demos reproduce their committed results from their committed configs (the seeds
    /// fix the simulated data).
    #[test]
    fn the_demos_reproduce_their_committed_results() {
        let demo: SpikeSlabDemo = serde_json::from_str(&committed("spike-slab/config.json")).unwrap();
        let want: SpikeSlabResult = serde_json::from_str(&committed("spike-slab/result.json")).unwrap();
        let got = demo.run(None, false).unwrap();
        assert_eq!((got.recovered_support, got.iterations), (want.recovered_support, want.iterations));
        assert!((got.theta - want.theta).abs() < 1e-12 && (got.noise_variance - want.noise_variance).abs() < 1e-12);
        let gibbs: GibbsDemo = serde_json::from_str(&committed("gibbs-conjugate/config.json")).unwrap();
        let want: GibbsSummary = serde_json::from_str(&committed("gibbs-conjugate/summary.json")).unwrap();
        let got = gibbs.run(None, false).unwrap();
        assert_eq!((got.mu.mean, got.beta.mean), (want.mu.mean, want.beta.mean));
        assert_eq!(got.exact_posterior, want.exact_posterior);
    }
}
