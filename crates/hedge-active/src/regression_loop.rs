//! The pool-based active-learning loop for regression with NeuralLinear, following the paper's
//! protocol: per seed an 80/20 pool/test split (another with [`LoopConfig::test_fraction`]), inputs standardised on pool statistics, targets
//! on the initial labelled set, `init` random labels, then batches of `batch` until `budget`
//! labels; RMSE and test log-likelihood on the original target scale after every round.

use faer::Mat;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::acquire::{labelled_positions, Acquisition, PoolFeatures, Predictive, Reads};
use crate::acquisition::{nig_projections, student_t_entropy};
use crate::error::{invalid, ActiveError, Result};
use crate::fisher::linear_nig;
use crate::frank_wolfe::{GramMatrix, PoolVectors, Projections};
use crate::neural_linear::NeuralLinearConfig;
use crate::pool::{run_loop, ActiveModel, LoopState, RoundInfo, Schedule};
use hedge_bayes::model::{student_t_log_density, Prediction};
use hedge_run::ParamGuard;
use rand_chacha::ChaCha8Rng;

/// Which labels the targets are standardised on before each fit (RMSE and log-likelihood are
/// always reported on the original scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TargetScaling {
    /// The `init` initial labels, fixed for the whole loop (hedge's protocol so far).
    #[default]
    #[cfg_attr(feature = "clap", value(name = "initial"))]
    InitialLabels,
    /// Every label acquired so far, re-estimated before each fit.
    Labelled,
}

/// The model the loop fits every round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Surrogate {
    /// NeuralLinear ([`LoopConfig::model`]).
    #[default]
    #[cfg_attr(feature = "clap", value(help = "NeuralLinear: a network with a Bayesian last layer"))]
    NeuralLinear,
    /// An exact Gaussian process with an ARD RBF kernel, its hyper-parameters by maximum
    /// marginal likelihood (hedge-bayes' [`hedge_bayes::GpConfig`] defaults: L-BFGS with two
    /// random restarts): a reference for what the same labels allow a well-specified smooth
    /// model. Random and MaxEnt only (ACS-FW and LCMD read NeuralLinear's last-layer features).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "An exact GP (ARD RBF kernel, marginal likelihood): what the same labels allow a smooth model; Random and MaxEnt only"
        )
    )]
    Gp,
}

/// Loop settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoopConfig {
    pub init: usize,
    pub batch: usize,
    pub budget: usize,
    /// ACS-FW: force `batch` distinct points per round instead of the paper's re-picks.
    pub distinct: bool,
    /// ACS-FW: J random projections of the NIG posterior (the paper's large-pool form, O(N·J)
    /// per Frank–Wolfe step; [`DEFAULT_PROJECTIONS`] by default), or `None` for the closed-form
    /// N × N inner products.
    pub projections: Option<usize>,
    /// Share of each seed's shuffled points held out as the test set (the paper: 0.2); the rest
    /// is the pool.
    pub test_fraction: f64,
    /// The labels the targets are standardised on.
    pub target_scaling: TargetScaling,
    /// The model fitted every round.
    pub surrogate: Surrogate,
    /// Also fit the GP surrogate on every round's labels and score it beside the model that
    /// acquires ([`RoundMetrics::gp_test_rmse`]): what the very labels an acquisition chose allow
    /// a well-specified smooth model, paired seed by seed. The GP's seconds are not counted in
    /// `fit_seconds`.
    pub score_with_gp: bool,
    /// NeuralLinear fits per round from different starts, used together (not the paper's recipe,
    /// which fits one): predictions are the members' equal-weight mixture, MaxEnt ranks its
    /// variance, ACS-FW runs on the mean of the members' inner products (random projections:
    /// the members' concatenated, which has that mean as its inner product), LCMD on the
    /// members' concatenated features scaled by 1/√K. Member 0 is the single fit, so 1 is
    /// today's loop bit for bit.
    pub ensemble: usize,
    /// NeuralLinear's settings (unused by the GP surrogate).
    pub model: NeuralLinearConfig,
}

/// The paper's 80/20 pool/test split.
pub const PAPER_TEST_FRACTION: f64 = 0.2;

/// ACS-FW's default number of random projections J of the NIG posterior. Over the four UCI sets
/// J = 10 scored a lower final RMSE than the closed-form inner products in every paired
/// comparison run (40 seeds each, both protocols; `results/active/README.md`), at a fraction of
/// the selection time, so it is the default form; the closed form stays available (`None`).
pub const DEFAULT_PROJECTIONS: usize = 10;

impl Default for LoopConfig {
    fn default() -> Self {
        Self {
            init: 20,
            batch: 10,
            budget: 100,
            distinct: false,
            projections: Some(DEFAULT_PROJECTIONS),
            test_fraction: PAPER_TEST_FRACTION,
            target_scaling: TargetScaling::InitialLabels,
            surrogate: Surrogate::NeuralLinear,
            score_with_gp: false,
            ensemble: 1,
            model: NeuralLinearConfig::default(),
        }
    }
}

/// One round's measurements (after fitting on `labels` points).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundMetrics {
    pub seed: u64,
    /// The acquisition's name.
    pub method: String,
    pub round: usize,
    pub labels: usize,
    pub test_rmse: f64,
    /// Mean Student-t log density of the test targets (original scale).
    pub test_log_likelihood: f64,
    pub fit_seconds: f64,
    /// Seconds spent choosing the batch that follows this round (0 after the last round).
    pub selection_seconds: f64,
    /// Points added after this round.
    pub batch_size: usize,
    /// With [`LoopConfig::score_with_gp`]: the GP's test RMSE on this round's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gp_test_rmse: Option<f64>,
    /// With [`LoopConfig::score_with_gp`]: the GP's mean test log density.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gp_test_log_likelihood: Option<f64>,
}

impl LoopConfig {
    pub fn check(&self, pool: usize) -> Result<()> {
        if self.init == 0 || self.batch == 0 {
            return Err(invalid("init/batch", format!("{}/{}", self.init, self.batch), "both must be ≥ 1"));
        }
        if self.budget < self.init {
            return Err(invalid("budget", self.budget, format!("must be ≥ init = {}", self.init)));
        }
        if self.projections == Some(0) {
            return Err(invalid(
                "projections",
                0,
                "ACS-FW needs at least one projection (or none, for the closed form)",
            ));
        }
        if !(self.test_fraction > 0.0 && self.test_fraction < 1.0) {
            return Err(invalid(
                "test_fraction",
                self.test_fraction,
                "must lie strictly between 0 and 1 (the paper: 0.2)",
            ));
        }
        if self.ensemble == 0 {
            return Err(invalid("ensemble", 0, "need at least one NeuralLinear fit per round (1: the paper's)"));
        }
        if self.ensemble > 1 && self.surrogate == Surrogate::Gp {
            return Err(invalid(
                "ensemble",
                self.ensemble,
                "an ensemble is of NeuralLinear fits; the GP surrogate fits one GP (use 1)",
            ));
        }
        if self.budget > pool {
            return Err(invalid("budget", self.budget, format!("the pool has only {pool} points")));
        }
        // The fits a run makes: every round (init, then each batch until the budget) fits
        // `ensemble` networks, each of `steps` (mse) or `epochs` × minibatches (paper) optimiser
        // steps, each a small network's step (libtorch's per-call overhead dominates) plus about
        // 1e4 multiply–adds per labelled row.
        let rounds = (self.budget - self.init) as f64 / self.batch as f64 + 1.0;
        let labels = self.budget as f64;
        let (flag, count, steps_per_count) = match self.model.recipe {
            crate::neural_linear::NeuralLinearRecipe::Mse => ("--steps", self.model.steps, 1.0),
            crate::neural_linear::NeuralLinearRecipe::Paper => {
                ("--epochs", self.model.epochs, (labels / self.model.batch_size.max(1) as f64).ceil())
            }
        };
        hedge_run::Workload::new("active run: one seed of one method's network fits", move |v| {
            use hedge_run::budget::rates::{DENSE_PER_SECOND, SMALL_STEP_SECONDS};
            v[0] * rounds * v[1] * steps_per_count * (SMALL_STEP_SECONDS + 1e4 * labels / DENSE_PER_SECOND)
        })
        .knob("--ensemble", self.ensemble as f64, 1.0)
        .knob(flag, count as f64, 1.0)
        .check()?;
        if let Some(j) = self.projections {
            // The projected pool: J values per point, in f64, with the Frank–Wolfe copies.
            let pool = pool as f64;
            hedge_run::Footprint::new("ACS-FW: the pool's random projections", move |v| pool * v[0] * 8.0 * 3.0)
                .knob("--projections", j as f64, 1.0)
                .check()?;
        }
        self.model.check_ref()
    }

    /// Refuses an acquisition the surrogate cannot drive (ACS-FW and LCMD read NeuralLinear's
    /// last-layer features), before any network is fitted.
    pub fn check_acquisition(&self, acquisition: &dyn Acquisition) -> Result<()> {
        let (model, offers, fix) = self.surrogate_offers();
        crate::acquire::check_reads(acquisition, model, offers, fix)
    }

    /// The surrogate's name, what its predictive gives and how to get the rest.
    fn surrogate_offers(&self) -> (&'static str, &'static [Reads], &'static str) {
        match self.surrogate {
            Surrogate::NeuralLinear => (
                "NeuralLinear regression",
                &[Reads::Entropy, Reads::MeanVariance, Reads::LogPosteriorVectors, Reads::Features],
                "a regression runs random, maxent, acs-fw and lcmd; drop it from --method",
            ),
            Surrogate::Gp => (
                "the GP surrogate",
                &[Reads::Entropy, Reads::MeanVariance],
                "the GP surrogate runs random and maxent only; drop it from --method or use --surrogate neural-linear",
            ),
        }
    }

    /// Test points out of `n`: ⌊n · test_fraction⌋, n / 5 for the paper's 0.2 (the small margin
    /// keeps a product like 15 × 0.2, which may round to just below 3, on the intended side).
    pub fn test_len(&self, n: usize) -> usize {
        ((n as f64 * self.test_fraction) + 1e-9).floor() as usize
    }

    /// Test and pool sizes of a set of `n` points, checked: at least one test point (an empty
    /// test set has no RMSE), and a pool the loop's budget fits in.
    pub fn check_split(&self, n: usize) -> Result<(usize, usize)> {
        let test = self.test_len(n);
        if test == 0 {
            return Err(invalid(
                "test_fraction",
                self.test_fraction,
                format!("holds out no test point of {n}: use at least {:.4} (the paper: 0.2)", 1.0 / n as f64),
            ));
        }
        self.check(n - test)?;
        Ok((test, n - test))
    }

    /// Runs one seed of `acquisition` on inputs `x` (`[n, d]`, raw) and targets `y`.
    pub fn run(&self, x: &Mat<f64>, y: &[f64], acquisition: &dyn Acquisition, seed: u64) -> Result<Vec<RoundMetrics>> {
        self.run_from(x, y, acquisition, seed, None, |_, _| Ok(()))
    }

    /// [`LoopConfig::run`] continued from `resume` (a state an earlier call reported), calling
    /// `on_round` after every round with the state to continue from (`None` after the last).
    /// Returns the rounds this call ran; with a state, they equal the rest of an uninterrupted
    /// run's.
    pub fn run_from(
        &self,
        x: &Mat<f64>,
        y: &[f64],
        acquisition: &dyn Acquisition,
        seed: u64,
        resume: Option<LoopState>,
        on_round: impl FnMut(&RoundMetrics, Option<&LoopState>) -> Result<()>,
    ) -> Result<Vec<RoundMetrics>> {
        let n = y.len();
        if x.nrows() != n {
            return Err(ActiveError::ShapeMismatch {
                what: "inputs vs targets".into(),
                expected: format!("{n} rows (one per target)"),
                found: format!("{} rows", x.nrows()),
            });
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut rng);
        let (test_len, _) = self.check_split(n)?;
        let (test, pool) = order.split_at(test_len);
        let standardiser = hedge_bayes::Standardiser::fit(x.as_ref(), pool);
        let model = RegressionPool {
            config: self,
            x,
            y,
            pool,
            test_x: standardiser.transform(x.as_ref(), test),
            test_y: test.iter().map(|&i| y[i]).collect(),
            standardiser,
        };
        let schedule = Schedule { init: self.init, batch: self.batch, budget: self.budget, distinct: self.distinct };
        // The acquisition stream continues from the split's shuffle.
        run_loop(&model, schedule, acquisition, seed, rng, resume, on_round)
    }
}

/// NeuralLinear on one seed's pool: inputs standardised on the pool, targets on the initial
/// labels, RMSE and log-likelihood on the original scale.
struct RegressionPool<'a> {
    config: &'a LoopConfig,
    x: &'a Mat<f64>,
    y: &'a [f64],
    /// Rows of `x` in the pool (pool position → row).
    pool: &'a [usize],
    standardiser: hedge_bayes::Standardiser,
    test_x: Mat<f64>,
    test_y: Vec<f64>,
}

/// A round's fitted model.
enum FittedSurrogate {
    /// [`LoopConfig::ensemble`] fits, member 0 first.
    NeuralLinear(Vec<crate::neural_linear::FittedNeuralLinear>),
    Gp(Box<hedge_bayes::FittedGp>),
}

impl FittedSurrogate {
    /// The predictive at `x` on the standardised target scale, one Student-t per ensemble
    /// member (an equal-weight mixture), or the GP's Gaussian.
    fn predict(&self, x: faer::MatRef<'_, f64>) -> Result<Vec<Prediction>> {
        match self {
            FittedSurrogate::NeuralLinear(members) => members.iter().map(|m| m.predict(x)).collect(),
            FittedSurrogate::Gp(gp) => Ok(vec![gp.predict(x)?]),
        }
    }

    /// The NeuralLinear members, for `what` (which the GP does not give).
    fn neural_linear(&self, what: Reads) -> Result<&[crate::neural_linear::FittedNeuralLinear]> {
        match self {
            FittedSurrogate::NeuralLinear(members) => Ok(members),
            FittedSurrogate::Gp(_) => Err(ActiveError::NotOffered { what: what.describe() }),
        }
    }
}

/// Mean and variance of an equal-weight mixture of Student-t predictives at point `i` (a
/// member with ν ≤ 2 has no variance, its scale² stands in; ν = ∞ is the Gaussian).
fn mixture_moments(members: &[Prediction], i: usize) -> (f64, f64) {
    let k = members.len() as f64;
    let mean = members.iter().map(|p| p.mean[i]).sum::<f64>() / k;
    let second = members.iter().map(|p| p.variance_at(i) + p.mean[i].powi(2)).sum::<f64>() / k;
    (mean, (second - mean * mean).max(0.0))
}

/// Concatenates `[n, k_m]` matrices side by side, each scaled by `scale`.
fn concat_columns(blocks: &[Mat<f64>], scale: f64) -> Mat<f64> {
    let n = blocks[0].nrows();
    let widths: Vec<usize> = blocks.iter().map(|b| b.ncols()).collect();
    let mut out = Mat::zeros(n, widths.iter().sum());
    let mut at = 0;
    for b in blocks {
        for j in 0..b.ncols() {
            for i in 0..n {
                out[(i, at + j)] = scale * b[(i, j)];
            }
        }
        at += b.ncols();
    }
    out
}

/// A fit and the target scaling it was fitted with.
struct FittedRegression {
    model: FittedSurrogate,
    /// With [`LoopConfig::score_with_gp`]: the GP on the same labels and its fit's seconds.
    gp: Option<(FittedSurrogate, f64)>,
    y_mean: f64,
    y_scale: f64,
}

impl FittedRegression {
    /// Test RMSE and mean test log density of `model` on the original target scale.
    /// [`Self::score`] of the acquiring model.
    #[cfg(test)]
    fn score_on(&self, test_x: faer::MatRef<'_, f64>, test_y: &[f64]) -> Result<(f64, f64)> {
        self.score(&self.model, test_x, test_y)
    }

    /// The RMSE is the mixture mean's; the log density the mixture's.
    fn score(&self, model: &FittedSurrogate, test_x: faer::MatRef<'_, f64>, test_y: &[f64]) -> Result<(f64, f64)> {
        let members = model.predict(test_x)?;
        let k = members.len() as f64;
        let (mut sq, mut ll) = (0.0, 0.0);
        for (i, t) in test_y.iter().enumerate() {
            let logs: Vec<f64> = members
                .iter()
                .map(|p| {
                    let m = self.y_mean + self.y_scale * p.mean[i];
                    student_t_log_density(*t, m, p.observed_variance_at(i) * self.y_scale * self.y_scale, p.dof())
                })
                .collect();
            let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let m = self.y_mean + self.y_scale * members.iter().map(|p| p.mean[i]).sum::<f64>() / k;
            sq += (t - m).powi(2);
            ll += top + (logs.iter().map(|l| (l - top).exp()).sum::<f64>() / k).ln();
        }
        let n = test_y.len() as f64;
        Ok(((sq / n).sqrt(), ll / n))
    }
}

impl RegressionPool<'_> {
    fn rows(&self, positions: &[usize]) -> Mat<f64> {
        let idx: Vec<usize> = positions.iter().map(|&p| self.pool[p]).collect();
        self.standardiser.transform(self.x.as_ref(), &idx)
    }
}

impl ActiveModel for RegressionPool<'_> {
    type Fitted = FittedRegression;
    type Round = RoundMetrics;

    fn pool_len(&self) -> usize {
        self.pool.len()
    }

    fn describe(&self) -> String {
        self.config.surrogate_offers().0.to_string()
    }

    fn offers(&self) -> &[Reads] {
        self.config.surrogate_offers().1
    }

    fn fix(&self) -> &str {
        self.config.surrogate_offers().2
    }

    fn fit(&self, labelled: &[usize], seed: u64) -> Result<FittedRegression> {
        // Targets are standardised on the initial labels (the first `init` labelled) or on all.
        let scaled_on = match self.config.target_scaling {
            TargetScaling::InitialLabels => &labelled[..self.config.init],
            TargetScaling::Labelled => labelled,
        };
        let scale_y: Vec<f64> = scaled_on.iter().map(|&p| self.y[self.pool[p]]).collect();
        let y_mean = scale_y.iter().sum::<f64>() / scale_y.len() as f64;
        let y_var = scale_y.iter().map(|v| (v - y_mean).powi(2)).sum::<f64>() / scale_y.len() as f64;
        let y_scale = if y_var > 0.0 { y_var.sqrt() } else { 1.0 };
        let ly: Vec<f64> = labelled.iter().map(|&p| (self.y[self.pool[p]] - y_mean) / y_scale).collect();
        let x = self.rows(labelled);
        let gp = || -> Result<FittedSurrogate> {
            Ok(FittedSurrogate::Gp(Box::new(hedge_bayes::GpConfig::default().with_seed(seed).fit(x.as_ref(), &ly)?)))
        };
        let model = match self.config.surrogate {
            Surrogate::NeuralLinear => FittedSurrogate::NeuralLinear(
                (0..self.config.ensemble as u64)
                    // Member 0 keeps the single fit's seed; the others start far from every
                    // other round's seed (rounds step by 1, seeds by 1000).
                    .map(|k| {
                        self.config
                            .model
                            .with_seed(seed.wrapping_add(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
                            .fit(x.as_ref(), &ly)
                    })
                    .collect::<Result<_>>()?,
            ),
            Surrogate::Gp => gp()?,
        };
        let gp = if self.config.score_with_gp && self.config.surrogate != Surrogate::Gp {
            let start = std::time::Instant::now();
            let fitted = gp()?;
            Some((fitted, start.elapsed().as_secs_f64()))
        } else {
            None
        };
        Ok(FittedRegression { model, gp, y_mean, y_scale })
    }

    fn evaluate(&self, fitted: &FittedRegression, info: RoundInfo<'_>) -> Result<RoundMetrics> {
        let (test_rmse, test_log_likelihood) = fitted.score(&fitted.model, self.test_x.as_ref(), &self.test_y)?;
        // No silent NaN: a round whose scores are not finite stops the run here, before it is logged.
        if !(test_rmse.is_finite() && test_log_likelihood.is_finite()) {
            let largest = self.test_y.iter().fold(0.0f64, |m, y| m.max(y.abs()));
            return Err(ActiveError::NonFinite {
                what: format!(
                    "seed {}, {}, round {} ({} labels): test RMSE {test_rmse}, log-likelihood {test_log_likelihood}",
                    info.seed, info.method, info.round, info.labels
                ),
                fix: format!(
                    "the targets reach |y| = {largest:e}; rescale the target column (e.g. to its units in thousands) \
                     or lower --lr"
                ),
            });
        }
        // A GP fitted on a surrogate-GP run's labels would score what `test_rmse` already does.
        let (gp_score, gp_seconds) = match &fitted.gp {
            Some((gp, seconds)) => (Some(fitted.score(gp, self.test_x.as_ref(), &self.test_y)?), *seconds),
            None if self.config.score_with_gp => (Some((test_rmse, test_log_likelihood)), 0.0),
            None => (None, 0.0),
        };
        Ok(RoundMetrics {
            seed: info.seed,
            method: info.method.to_string(),
            round: info.round,
            labels: info.labels,
            test_rmse,
            test_log_likelihood,
            fit_seconds: info.fit_seconds - gp_seconds,
            selection_seconds: 0.0,
            batch_size: 0,
            gp_test_rmse: gp_score.map(|s| s.0),
            gp_test_log_likelihood: gp_score.map(|s| s.1),
        })
    }

    fn predictive<'a>(&'a self, fitted: &'a FittedRegression, unlabelled: &'a [usize]) -> Box<dyn Predictive + 'a> {
        Box::new(RegressionPredictive { pool: self, fitted, unlabelled, rows: std::cell::OnceCell::new() })
    }

    fn record_selection(round: &mut RoundMetrics, seconds: f64, batch_size: usize) {
        round.selection_seconds = seconds;
        round.batch_size = batch_size;
    }
}

/// What a round's fit predicts about the unlabelled pool points.
struct RegressionPredictive<'a> {
    pool: &'a RegressionPool<'a>,
    fitted: &'a FittedRegression,
    /// Pool positions, ascending.
    unlabelled: &'a [usize],
    /// Their standardised inputs, made on first use.
    rows: std::cell::OnceCell<Mat<f64>>,
}

impl RegressionPredictive<'_> {
    fn rows(&self) -> &Mat<f64> {
        self.rows.get_or_init(|| self.pool.rows(self.unlabelled))
    }
}

impl Predictive for RegressionPredictive<'_> {
    fn len(&self) -> usize {
        self.unlabelled.len()
    }

    fn entropy(&self) -> Result<Vec<f64>> {
        let ux = self.rows();
        let members = self.fitted.model.predict(ux.as_ref())?;
        Ok(match members.as_slice() {
            [p] => p.observed_variance().iter().map(|&s| student_t_entropy(s, p.dof())).collect(),
            // The mixture's entropy has no closed form; its variance ranks alike for
            // unimodal members and is what the members disagree on.
            _ => (0..ux.nrows()).map(|i| mixture_moments(&members, i).1).collect(),
        })
    }

    fn mean_variance(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        let ux = self.rows();
        let members = self.fitted.model.predict(ux.as_ref())?;
        Ok((0..ux.nrows()).map(|i| mixture_moments(&members, i)).unzip())
    }

    /// J random projections per ensemble member side by side (scaled by 1/√K), or the members'
    /// mean closed-form Gram matrix.
    fn log_posterior_vectors(&self, rng: &mut ChaCha8Rng) -> Result<Box<dyn PoolVectors>> {
        let ux = self.rows();
        let members = self.fitted.model.neural_linear(Reads::LogPosteriorVectors)?;
        let k = members.len() as f64;
        Ok(match self.pool.config.projections {
            Some(j) => {
                let blocks = members
                    .iter()
                    .map(|m| Ok(nig_projections(m.features(ux.as_ref()).as_ref(), &m.posterior, j, rng)?.0))
                    .collect::<Result<Vec<_>>>()?;
                Box::new(Projections(concat_columns(&blocks, 1.0 / k.sqrt())))
            }
            None => {
                let mut gram = linear_nig(members[0].features(ux.as_ref()).as_ref(), &members[0].posterior)?.0;
                for m in &members[1..] {
                    gram += linear_nig(m.features(ux.as_ref()).as_ref(), &m.posterior)?.0;
                }
                if members.len() > 1 {
                    gram *= faer::Scale(1.0 / k);
                }
                Box::new(GramMatrix(gram))
            }
        })
    }

    /// Every member's features side by side (scaled by 1/√K, so that squared distances are the
    /// members' mean).
    fn features(&self) -> Result<PoolFeatures> {
        let labelled = labelled_positions(self.pool.pool.len(), self.unlabelled);
        let members = self.fitted.model.neural_linear(Reads::Features)?;
        let features = |x: &Mat<f64>| match members {
            [m] => m.features(x.as_ref()),
            _ => concat_columns(
                &members.iter().map(|m| m.features(x.as_ref())).collect::<Vec<_>>(),
                1.0 / (members.len() as f64).sqrt(),
            ),
        };
        Ok(PoolFeatures { labelled: features(&self.pool.rows(&labelled)), unlabelled: features(self.rows()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::{Registration, ACS_FW, LCMD, MAXENT, RANDOM};

    /// The paper's split stays n / 5 for every size (old runs resume unchanged); another
    /// fraction holds out ⌊n·f⌋ points; fractions outside (0, 1) are refused by name; the split
    /// is written, the paper's too.
    #[test]
    fn test_fraction_sets_the_held_out_share() {
        let paper = LoopConfig::default();
        assert!((0..100_000).all(|n| paper.test_len(n) == n / 5));
        let tenth = LoopConfig { test_fraction: 0.1, ..LoopConfig::default() };
        assert_eq!([tenth.test_len(45_730), tenth.test_len(30), tenth.test_len(9)], [4_573, 3, 0]);
        for bad in [0.0, 1.0, -0.1, f64::NAN] {
            let config = LoopConfig { test_fraction: bad, ..LoopConfig::default() };
            assert!(config.check(1000).unwrap_err().to_string().contains("test_fraction"), "{bad}");
        }
        assert_eq!(serde_json::to_value(paper).unwrap()["test_fraction"], 0.2);
        assert_eq!(serde_json::to_value(tenth).unwrap()["test_fraction"], 0.1);
    }

    /// The GP reference sees exactly the labels NeuralLinear's Random loop acquires (the random
    /// stream does not depend on the model), learns from them, and refuses the acquisitions that
    /// need last-layer features by name.
    #[test]
    fn the_gp_surrogate_sees_random_s_labels_and_learns() {
        let n = 300;
        let x = Mat::from_fn(n, 3, |i, j| ((i * (j + 3)) as f64 * 0.37).sin() * 2.0);
        // A wiggly function plus deterministic uniform noise (sd ≈ 0.06), so that 20 labels are
        // not enough for the GP.
        let noise = |i: usize| ((i as f64 * 12.9898).sin() * 43_758.545_3).fract() * 0.2;
        let y: Vec<f64> =
            (0..n).map(|i| (3.0 * x[(i, 0)]).sin() * x[(i, 1)] + (2.0 * x[(i, 2)]).cos() + noise(i)).collect();
        let labels_of = |config: &LoopConfig| {
            let mut last = Vec::new();
            let rounds = config
                .run_from(&x, &y, &RANDOM, 3, None, |_, state| {
                    if let Some(s) = state {
                        last = s.labelled.clone();
                    }
                    Ok(())
                })
                .unwrap();
            (rounds, last)
        };
        let nl = LoopConfig { model: NeuralLinearConfig { steps: 50, ..Default::default() }, ..Default::default() };
        let gp = LoopConfig { surrogate: Surrogate::Gp, ..nl };
        let ((nl_rounds, nl_labels), (gp_rounds, gp_labels)) = (labels_of(&nl), labels_of(&gp));
        assert_eq!(nl_labels, gp_labels);
        assert_eq!(gp_rounds.len(), 9);
        // Scoring a GP beside NeuralLinear fits the GP surrogate's very model every round (same
        // labels, same seed), without touching NeuralLinear's own numbers.
        let (shadowed, _) = labels_of(&LoopConfig { score_with_gp: true, ..nl });
        for ((s, plain), gp_round) in shadowed.iter().zip(&nl_rounds).zip(&gp_rounds) {
            assert_eq!((s.test_rmse, s.test_log_likelihood), (plain.test_rmse, plain.test_log_likelihood));
            assert_eq!(s.gp_test_rmse, Some(gp_round.test_rmse));
            assert_eq!(s.gp_test_log_likelihood, Some(gp_round.test_log_likelihood));
        }
        assert!(nl_rounds.iter().all(|r| r.gp_test_rmse.is_none()));
        let (first, last) = (&gp_rounds[0], gp_rounds.last().unwrap());
        assert!(last.test_rmse < 0.7 * first.test_rmse, "{} → {}", first.test_rmse, last.test_rmse);
        assert!(gp_rounds.iter().all(|r| r.test_log_likelihood.is_finite()));
        assert_eq!(gp.run(&x, &y, &MAXENT, 0).unwrap().last().unwrap().labels, 100);
        for method in [&ACS_FW, &LCMD] {
            let err = gp.run(&x, &y, method, 0).unwrap_err().to_string();
            assert!(err.contains("'method'") && err.contains("--surrogate neural-linear"), "{err}");
        }
    }

    /// One seed of `method` under `config`: it ends at 100 labels, its last round predicts better
    /// than its first, and every log-likelihood is finite.
    fn reaches_the_budget_and_learns(
        config: &LoopConfig,
        x: &Mat<f64>,
        y: &[f64],
        method: &Registration,
    ) -> Vec<RoundMetrics> {
        let rounds = config.run(x, y, method, 0).unwrap();
        let (first, last) = (&rounds[0], rounds.last().unwrap());
        assert_eq!(last.labels, 100, "{}", method.name);
        assert!(last.test_rmse < first.test_rmse, "{}: {} → {}", method.name, first.test_rmse, last.test_rmse);
        assert!(rounds.iter().all(|r| r.test_log_likelihood.is_finite()));
        rounds
    }

    /// A smooth 3-input function: every method runs init → budget in rounds of `batch`, and
    /// 100 labels predict better than 20.
    #[test]
    fn loop_runs_to_budget_and_learns() {
        let n = 400;
        let x = Mat::from_fn(n, 3, |i, j| ((i * (j + 3)) as f64 * 0.37).sin() * 2.0);
        let y: Vec<f64> = (0..n).map(|i| 3.0 * x[(i, 0)] - 2.0 * x[(i, 1)] + x[(i, 2)].powi(2) + 10.0).collect();
        let config =
            LoopConfig { model: NeuralLinearConfig { steps: 300, ..Default::default() }, ..Default::default() };
        for method in [&RANDOM, &MAXENT, &ACS_FW, &LCMD] {
            let rounds = reaches_the_budget_and_learns(&config, &x, &y, method);
            assert_eq!(rounds[0].labels, 20);
            if method.name != ACS_FW.name {
                assert_eq!(rounds.len(), 9);
            }
        }
        let distinct = LoopConfig { distinct: true, ..config }.run(&x, &y, &ACS_FW, 0).unwrap();
        assert_eq!(distinct.len(), 9);
        // The default form is J random projections; the closed-form N × N inner products also
        // reach the budget and learn.
        assert_eq!(config.projections, Some(DEFAULT_PROJECTIONS));
        let closed = LoopConfig { projections: None, ..config }.run(&x, &y, &ACS_FW, 0).unwrap();
        assert_eq!(closed.last().unwrap().labels, 100);
        assert!(closed.last().unwrap().test_rmse < closed[0].test_rmse);
    }

    /// The mixture's moments in closed form: two Gaussians N(0, 1), N(2, 1) → mean 1, variance
    /// 1 + 1 (the spread of the means); a Student-t with ν = 4 and scale² 1 has variance 2.
    #[test]
    fn mixture_moments_match_the_closed_form() {
        let t = |loc: f64, s2: f64, dof: f64| Prediction {
            mean: vec![loc],
            latent_variance: vec![0.0],
            noise_variance: s2,
            degrees_of_freedom: Some(dof),
        };
        let (m, v) = mixture_moments(&[t(0.0, 1.0, f64::INFINITY), t(2.0, 1.0, f64::INFINITY)], 0);
        assert!((m - 1.0).abs() < 1e-15 && (v - 2.0).abs() < 1e-12, "{m} {v}");
        let (m, v) = mixture_moments(&[t(3.0, 1.0, 4.0)], 0);
        assert!((m - 3.0).abs() < 1e-15 && (v - 2.0).abs() < 1e-12, "{m} {v}");
    }

    /// An ensemble scores as the mixture of its members: its RMSE is that of the members' mean
    /// prediction, never above the members' root mean MSE (convexity), and its log density
    /// never below the members' mean (Jensen); member 0 alone scores as a single fit. With
    /// three members every acquisition runs to the budget and learns; zero members, or an
    /// ensemble of the GP, are refused by name.
    #[test]
    fn an_ensemble_scores_as_its_mixture_and_drives_every_acquisition() {
        let n = 400;
        let x = Mat::from_fn(n, 3, |i, j| ((i * (j + 3)) as f64 * 0.37).sin() * 2.0);
        let y: Vec<f64> = (0..n).map(|i| (2.0 * x[(i, 0)]).sin() - x[(i, 1)] + 0.3 * x[(i, 2)].powi(2)).collect();
        let (train, test): (Vec<usize>, Vec<usize>) = (0..n).partition(|i| i % 4 != 0);
        let rows = |idx: &[usize]| Mat::from_fn(idx.len(), 3, |r, c| x[(idx[r], c)]);
        let (train_x, test_x) = (rows(&train), rows(&test));
        let train_y: Vec<f64> = train.iter().map(|&i| y[i]).collect();
        let test_y: Vec<f64> = test.iter().map(|&i| y[i]).collect();
        let config = NeuralLinearConfig { steps: 200, ..Default::default() };
        let members: Vec<_> = (0..3).map(|k| config.with_seed(k).fit(train_x.as_ref(), &train_y).unwrap()).collect();
        let scored = |model: FittedSurrogate| {
            FittedRegression { model, gp: None, y_mean: 0.0, y_scale: 1.0 }.score_on(test_x.as_ref(), &test_y).unwrap()
        };
        let singles: Vec<(f64, f64)> = (0..3)
            .map(|k| {
                scored(FittedSurrogate::NeuralLinear(vec![config
                    .with_seed(k)
                    .fit(train_x.as_ref(), &train_y)
                    .unwrap()]))
            })
            .collect();
        let (rmse, ll) = scored(FittedSurrogate::NeuralLinear(members));
        let preds: Vec<_> = (0..3)
            .map(|k| config.with_seed(k).fit(train_x.as_ref(), &train_y).unwrap().predict(test_x.as_ref()).unwrap())
            .collect();
        let mean_rmse = (test_y
            .iter()
            .enumerate()
            .map(|(i, t)| (t - preds.iter().map(|p| p.mean[i]).sum::<f64>() / 3.0).powi(2))
            .sum::<f64>()
            / test_y.len() as f64)
            .sqrt();
        assert!((rmse - mean_rmse).abs() < 1e-12, "{rmse} vs {mean_rmse}");
        let root_mean_mse = (singles.iter().map(|s| s.0 * s.0).sum::<f64>() / 3.0).sqrt();
        assert!(rmse <= root_mean_mse + 1e-12, "{rmse} > {root_mean_mse}");
        assert!(ll >= singles.iter().map(|s| s.1).sum::<f64>() / 3.0 - 1e-12, "{ll} vs {singles:?}");
        assert!(singles.windows(2).any(|w| w[0] != w[1]), "members must differ: {singles:?}");

        let three = LoopConfig {
            ensemble: 3,
            model: NeuralLinearConfig { steps: 300, ..Default::default() },
            ..Default::default()
        };
        for method in [&RANDOM, &MAXENT, &ACS_FW, &LCMD] {
            reaches_the_budget_and_learns(&three, &x, &y, method);
        }
        let closed = LoopConfig { projections: None, ..three }.run(&x, &y, &ACS_FW, 0).unwrap();
        assert_eq!(closed.last().unwrap().labels, 100);
        let err = LoopConfig { ensemble: 0, ..three }.run(&x, &y, &RANDOM, 0).unwrap_err().to_string();
        assert!(err.contains("'ensemble'"), "{err}");
        let err = LoopConfig { surrogate: Surrogate::Gp, ..three }.run(&x, &y, &RANDOM, 0).unwrap_err().to_string();
        assert!(err.contains("'ensemble'") && err.contains("use 1"), "{err}");
    }

    /// A loop continued from the state it reported after round 3 runs the rounds an
    /// uninterrupted loop runs after it, to the last digit.
    #[test]
    fn a_loop_resumed_from_a_round_state_matches_the_uninterrupted_loop() {
        let n = 300;
        let x = Mat::from_fn(n, 3, |i, j| ((i * (j + 5)) as f64 * 0.23).cos() * 1.5);
        let y: Vec<f64> = (0..n).map(|i| x[(i, 0)] * x[(i, 1)] - x[(i, 2)] + 4.0).collect();
        let config =
            LoopConfig { model: NeuralLinearConfig { steps: 100, ..Default::default() }, ..Default::default() };
        for method in [&RANDOM, &MAXENT, &ACS_FW] {
            let mut states = Vec::new();
            let straight = config
                .run_from(&x, &y, method, 3, None, |_, s| {
                    states.push(s.cloned());
                    Ok(())
                })
                .unwrap();
            assert!(states.last().unwrap().is_none(), "the last round reports no state");
            let state = states[2].clone().unwrap();
            assert_eq!(state.round, 3);
            let rest = config.run_from(&x, &y, method, 3, Some(state), |_, _| Ok(())).unwrap();
            let key = |r: &RoundMetrics| (r.round, r.labels, r.test_rmse, r.test_log_likelihood, r.batch_size);
            assert_eq!(
                rest.iter().map(key).collect::<Vec<_>>(),
                straight[3..].iter().map(key).collect::<Vec<_>>(),
                "{}",
                method.name
            );
        }
    }
}
