//! Exact Gaussian-process regression with an RBF or ARD-RBF kernel plus Gaussian noise (Q4 of the
//! notes): posterior, log marginal likelihood and its gradient, hyper-parameters fitted by L-BFGS
//! with restarts.

use faer::{Mat, MatRef};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{check_positive, invalid, BayesError, Result};
use crate::kernel::{KernelKind, RbfKernel};
use crate::lbfgs::Lbfgs;
use crate::linalg::{self, Cholesky};
pub use crate::model::Prediction;
use hedge_run::ParamGuard;

/// Kernel hyper-parameters plus the noise variance σ².
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpHyperParameters {
    /// The RBF kernel (signal variance and lengthscales).
    pub kernel: RbfKernel,
    /// σ², the variance of the Gaussian observation noise.
    pub noise_variance: f64,
}

/// Gradient of the log marginal likelihood with respect to log-hyper-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct GpGradient {
    /// ∂/∂ log s².
    pub log_signal_variance: f64,
    /// ∂/∂ log ℓ.
    pub log_lengthscales: Vec<f64>,
    /// ∂/∂ σ² (not in log space, so callers can choose their parametrisation).
    pub noise_variance: f64,
}

/// Hyper-parameters of an exact GP regression ([`GpConfig`]).
///
/// | name | default | purpose | range |
/// |---|---|---|---|
/// | `kernel` | `Ard` | one lengthscale or one per input | |
/// | `signal_variance` | 1 | initial s² | > 0 |
/// | `lengthscale` | 1 | initial ℓ (every dimension) | > 0 |
/// | `noise_variance` | 0.1 | initial σ² | > `noise_floor` |
/// | `optimise` | true | fit hyper-parameters by maximising the log marginal likelihood | |
/// | `restarts` | 2 | extra L-BFGS runs from random starts | |
/// | `max_iters` | 200 | L-BFGS iterations per run | ≥ 1 |
/// | `normalise_y` | true | fit on (y − mean)/std, predict on the original scale | |
/// | `noise_floor` | 1e-6 | σ² never goes below this | ≥ 0 |
/// | `seed` | 0 | random restarts | |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpConfig {
    pub kernel: KernelKind,
    pub signal_variance: f64,
    pub lengthscale: f64,
    pub noise_variance: f64,
    pub optimise: bool,
    pub restarts: usize,
    pub max_iters: usize,
    pub normalise_y: bool,
    pub noise_floor: f64,
    pub seed: u64,
}

impl Default for GpConfig {
    fn default() -> Self {
        Self {
            kernel: KernelKind::Ard,
            signal_variance: 1.0,
            lengthscale: 1.0,
            noise_variance: 0.1,
            optimise: true,
            restarts: 2,
            max_iters: 200,
            normalise_y: true,
            noise_floor: 1e-6,
            seed: 0,
        }
    }
}

impl GpConfig {
    pub fn with_kernel(mut self, kernel: KernelKind) -> Self {
        self.kernel = kernel;
        self
    }
    pub fn with_initial(mut self, signal_variance: f64, lengthscale: f64, noise_variance: f64) -> Self {
        self.signal_variance = signal_variance;
        self.lengthscale = lengthscale;
        self.noise_variance = noise_variance;
        self
    }
    pub fn with_optimise(mut self, optimise: bool) -> Self {
        self.optimise = optimise;
        self
    }
    pub fn with_restarts(mut self, restarts: usize) -> Self {
        self.restarts = restarts;
        self
    }
    pub fn with_max_iters(mut self, max_iters: usize) -> Self {
        self.max_iters = max_iters;
        self
    }
    pub fn with_normalise_y(mut self, normalise_y: bool) -> Self {
        self.normalise_y = normalise_y;
        self
    }
    pub fn with_noise_floor(mut self, noise_floor: f64) -> Self {
        self.noise_floor = noise_floor;
        self
    }
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The initial hyper-parameters for inputs with `dims` columns.
    pub fn initial(&self, dims: usize) -> GpHyperParameters {
        let n_ls = match self.kernel {
            KernelKind::Rbf => 1,
            KernelKind::Ard => dims,
        };
        GpHyperParameters {
            kernel: RbfKernel::new(self.signal_variance, vec![self.lengthscale; n_ls]),
            noise_variance: self.noise_variance,
        }
    }

    /// Fits the GP to inputs `x` (`[n, d]`) and targets `y` (`[n]`).
    ///
    /// # Errors
    /// Invalid hyper-parameters, mismatched shapes, non-finite data, or a kernel matrix that is
    /// not positive definite even with jitter.
    pub fn fit(&self, x: MatRef<'_, f64>, y: &[f64]) -> Result<FittedGp> {
        self.fit_observed(x, y, &mut |_| {})
    }

    /// As [`GpConfig::fit`], reporting each accepted L-BFGS step to `observer` (for progress bars).
    pub fn fit_observed(
        &self,
        x: MatRef<'_, f64>,
        y: &[f64],
        observer: &mut dyn FnMut(FitProgress),
    ) -> Result<FittedGp> {
        self.check_ref()?;
        linalg::check_training_data(x, y, "GP")?;
        if y.len() < 2 {
            return Err(BayesError::NotEnoughData { what: "GP regression".into(), found: y.len(), needed: 2 });
        }
        check_exact_gp_size(x.nrows(), x.ncols())?;
        if self.optimise {
            // Each start's L-BFGS iterations each factorise the n × n kernel (n³/3) and form
            // the gradient of every kernel hyper-parameter (n² per input dimension), besides a
            // fixed cost per iteration that dominates for small n.
            let (n, d) = (x.nrows() as f64, x.ncols() as f64);
            hedge_run::Workload::new("GP fit: marginal-likelihood search", move |v| {
                use hedge_run::budget::rates::{DENSE_PER_SECOND, SMALL_STEP_SECONDS};
                (v[0] + 1.0) * v[1] * (SMALL_STEP_SECONDS + (n * n * n / 3.0 + n * n * (d + 2.0)) / DENSE_PER_SECOND)
            })
            .knob("restarts", self.restarts as f64, 0.0)
            .knob("max_iters", self.max_iters as f64, 1.0)
            .check()?;
        }
        let scaler = TargetScaler::new(y, self.normalise_y);
        let ys = scaler.forward(y);
        let mut hyper = self.initial(x.ncols());
        let mut runs = Vec::new();
        if self.optimise {
            let packing = Packing { noise_floor: self.noise_floor };
            let search = MultiStart {
                restarts: self.restarts,
                seed: self.seed,
                max_iters: self.max_iters,
                noise_floor: self.noise_floor,
                what: "GP restart",
            };
            let objective = |start: &GpHyperParameters, theta: &[f64]| {
                let h = packing.unpack(theta, start);
                match log_marginal_likelihood(x, &ys, &h) {
                    Ok((lml, g)) => (-lml, packing.pack_gradient(&g, &h).into_iter().map(|v| -v).collect()),
                    Err(_) => (f64::INFINITY, vec![0.0; theta.len()]),
                }
            };
            let (found, best) = search.run(&hyper, |h| packing.pack(h), objective, observer);
            runs = found;
            hyper = best.map(|(start, theta)| packing.unpack(&theta, &start)).ok_or_else(|| {
                BayesError::NotPositiveDefinite { what: "the GP kernel matrix at every start".into(), jitter: 0.0 }
            })?;
        }
        FittedGp::new(x, y, &ys, scaler, hyper, runs)
    }
}

impl ParamGuard for GpConfig {
    type Error = BayesError;

    /// Validates the hyper-parameters.
    ///
    /// # Errors
    /// [`hedge_run::RunError::InvalidConfig`] naming the first bad field.
    fn check_ref(&self) -> Result<()> {
        check_positive("signal_variance", self.signal_variance)?;
        check_positive("lengthscale", self.lengthscale)?;
        if !(self.noise_floor >= 0.0 && self.noise_floor.is_finite()) {
            return Err(invalid("noise_floor", self.noise_floor, "must be a finite number ≥ 0"));
        }
        if !(self.noise_variance > self.noise_floor && self.noise_variance.is_finite()) {
            return Err(invalid(
                "noise_variance",
                self.noise_variance,
                format!("must exceed noise_floor = {}", self.noise_floor),
            ));
        }
        if self.max_iters == 0 {
            return Err(invalid("max_iters", 0, "must be at least 1"));
        }
        Ok(())
    }
}

/// Refuses an exact GP whose n × n matrices (the kernel, its Cholesky factor, its inverse for
/// the gradient, and one derivative per input dimension) would not fit the memory budget: a
/// sparse GP is the model for that many rows.
fn check_exact_gp_size(rows: usize, columns: usize) -> Result<()> {
    let d = columns as f64;
    hedge_run::Footprint::new("an exact GP's n × n matrices (a sparse GP holds n × m)", move |v| {
        8.0 * v[0] * v[0] * (4.0 + d)
    })
    .knob("training rows", rows as f64, 2.0)
    .check()?;
    Ok(())
}

/// Conditions a GP with *fixed* hyper-parameters (on the standardised scale when
/// `config.normalise_y`), skipping the search.
pub fn fit_with(config: &GpConfig, x: MatRef<'_, f64>, y: &[f64], hyper: GpHyperParameters) -> Result<FittedGp> {
    linalg::check_training_data(x, y, "GP")?;
    check_exact_gp_size(x.nrows(), x.ncols())?;
    let scaler = TargetScaler::new(y, config.normalise_y);
    let ys = scaler.forward(y);
    FittedGp::new(x, y, &ys, scaler, hyper, Vec::new())
}

/// Log-space packing of hyper-parameters for the optimiser: [log s², log ℓ…, log(σ² − floor)].
pub(crate) struct Packing {
    pub noise_floor: f64,
}

impl Packing {
    pub fn pack(&self, h: &GpHyperParameters) -> Vec<f64> {
        let mut v = vec![h.kernel.signal_variance.ln()];
        v.extend(h.kernel.lengthscales.iter().map(|l| l.ln()));
        v.push((h.noise_variance - self.noise_floor).max(1e-300).ln());
        v
    }
    pub fn unpack(&self, theta: &[f64], like: &GpHyperParameters) -> GpHyperParameters {
        let n_ls = like.kernel.lengthscales.len();
        GpHyperParameters {
            kernel: RbfKernel::new(theta[0].exp(), theta[1..1 + n_ls].iter().map(|v| v.exp()).collect()),
            noise_variance: self.noise_floor + theta[1 + n_ls].exp(),
        }
    }
    pub fn pack_gradient(&self, g: &GpGradient, h: &GpHyperParameters) -> Vec<f64> {
        let mut v = vec![g.log_signal_variance];
        v.extend_from_slice(&g.log_lengthscales);
        v.push(g.noise_variance * (h.noise_variance - self.noise_floor));
        v
    }
}

fn random_start(like: &GpHyperParameters, noise_floor: f64, rng: &mut impl Rng) -> GpHyperParameters {
    let log_uniform =
        |rng: &mut dyn rand::RngCore, lo: f64, hi: f64| (lo.ln() + rng.random::<f64>() * (hi / lo).ln()).exp();
    GpHyperParameters {
        kernel: RbfKernel::new(
            log_uniform(rng, 0.1, 10.0),
            like.kernel.lengthscales.iter().map(|_| log_uniform(rng, 0.1, 10.0)).collect(),
        ),
        noise_variance: noise_floor + log_uniform(rng, 1e-3, 1.0),
    }
}

/// The hyper-parameter search every GP shares: L-BFGS from the configured start, then from
/// `restarts` random starts ([`random_start`], drawn from a generator seeded with `seed`),
/// keeping the run with the best objective.
pub(crate) struct MultiStart {
    pub restarts: usize,
    pub seed: u64,
    pub max_iters: usize,
    pub noise_floor: f64,
    /// The log line of each run.
    pub what: &'static str,
}

impl MultiStart {
    /// Minimises `objective(start, θ)` from `theta0(start)` for each start; returns every run
    /// and the best run's start and θ (`None` when no run reached a finite objective).
    pub fn run(
        &self,
        initial: &GpHyperParameters,
        theta0: impl Fn(&GpHyperParameters) -> Vec<f64>,
        objective: impl Fn(&GpHyperParameters, &[f64]) -> (f64, Vec<f64>),
        observer: &mut dyn FnMut(FitProgress),
    ) -> (Vec<OptimisationRun>, Option<(GpHyperParameters, Vec<f64>)>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let mut runs = Vec::new();
        let mut best: Option<(f64, GpHyperParameters, Vec<f64>)> = None;
        for restart in 0..=self.restarts {
            let start = if restart == 0 { initial.clone() } else { random_start(initial, self.noise_floor, &mut rng) };
            let optimiser = Lbfgs { max_iters: self.max_iters, ..Default::default() };
            let m = optimiser.minimise_observed(
                |theta| objective(&start, theta),
                theta0(&start),
                &mut |iteration, value| {
                    observer(FitProgress { run: restart, iteration, log_marginal_likelihood: -value })
                },
            );
            tracing::info!(restart, objective = -m.value, iterations = m.iterations, stop = m.stop, "{}", self.what);
            runs.push(OptimisationRun {
                log_marginal_likelihood: -m.value,
                iterations: m.iterations,
                stop: m.stop.to_string(),
            });
            if m.value.is_finite() && best.as_ref().is_none_or(|(v, _, _)| -m.value > *v) {
                best = Some((-m.value, start, m.x));
            }
        }
        (runs, best.map(|(_, start, theta)| (start, theta)))
    }
}

/// Optional standardisation of the targets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TargetScaler {
    pub mean: f64,
    pub scale: f64,
}

impl TargetScaler {
    /// Mean and standard deviation of `y` (identity when `normalise` is false or y is constant).
    pub fn new(y: &[f64], normalise: bool) -> Self {
        if !normalise {
            return Self { mean: 0.0, scale: 1.0 };
        }
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        Self { mean, scale: if var > 0.0 { var.sqrt() } else { 1.0 } }
    }
    pub fn forward(&self, y: &[f64]) -> Vec<f64> {
        y.iter().map(|v| (v - self.mean) / self.scale).collect()
    }

    /// A variance of standardised targets on the original scale.
    pub fn variance(&self, standardised: f64) -> f64 {
        standardised * self.scale.powi(2)
    }

    /// A prediction made on the standardised scale (means, latent variances, noise variance),
    /// on the original one.
    pub fn prediction(
        &self,
        mean: impl IntoIterator<Item = f64>,
        latent_variance: impl IntoIterator<Item = f64>,
        noise_variance: f64,
    ) -> Prediction {
        Prediction {
            mean: mean.into_iter().map(|m| self.mean + self.scale * m).collect(),
            latent_variance: latent_variance.into_iter().map(|v| self.variance(v)).collect(),
            noise_variance: self.variance(noise_variance),
            degrees_of_freedom: None,
        }
    }
}

/// Progress of a hyper-parameter search, reported after each accepted L-BFGS step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitProgress {
    /// 0 for the run from the configured start, then 1, 2, … for the random restarts.
    pub run: usize,
    pub iteration: usize,
    /// The objective being maximised (standardised targets).
    pub log_marginal_likelihood: f64,
}

/// One L-BFGS run of the hyper-parameter search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimisationRun {
    pub iterations: usize,
    pub log_marginal_likelihood: f64,
    /// Why L-BFGS stopped ("relative tolerance", "iteration limit", …).
    pub stop: String,
}

/// log p(y | X, θ) = −½ yᵀ(K + σ²I)⁻¹y − ½ log|K + σ²I| − n/2 log 2π and its gradient.
///
/// # Shapes
/// `x`: `[n, d]`, `y`: `[n]`.
pub fn log_marginal_likelihood(x: MatRef<'_, f64>, y: &[f64], h: &GpHyperParameters) -> Result<(f64, GpGradient)> {
    let n = y.len();
    let xs = h.kernel.scale(x);
    let kf = h.kernel.cross_scaled(xs.as_ref(), xs.as_ref());
    let mut k = kf.clone();
    for i in 0..n {
        k[(i, i)] += h.noise_variance;
    }
    let chol = Cholesky::new(k.as_ref(), "the GP kernel matrix K + σ²I")?;
    drop(k);
    let alpha = chol.solve(linalg::column(y).as_ref());
    let quad: f64 = (0..n).map(|i| y[i] * alpha[(i, 0)]).sum();
    let lml = -0.5 * quad - 0.5 * chol.log_det() - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
    // ∂lml/∂K = ½(ααᵀ − K⁻¹); the kernel's backward pass needs W = K_f ∘ ∂lml/∂K, formed in
    // place of K⁻¹ (the noise enters only through the trace).
    let mut w = chol.inverse();
    drop(chol);
    let trace: f64 = (0..n).map(|i| 0.5 * (alpha[(i, 0)] * alpha[(i, 0)] - w[(i, i)])).sum();
    let alpha_v = linalg::to_vec(alpha.as_ref());
    linalg::par_columns_mut(&mut w, |j, column| {
        let kf_j = linalg::col(&kf, j);
        for (i, v) in column.iter_mut().enumerate() {
            *v = kf_j[i] * 0.5 * (alpha_v[i] * alpha_v[j] - *v);
        }
    });
    let kg = h.kernel.backward_weighted(xs.as_ref(), xs.as_ref(), &w).hyper;
    Ok((
        lml,
        GpGradient {
            log_signal_variance: kg.log_signal_variance,
            log_lengthscales: kg.log_lengthscales,
            noise_variance: trace,
        },
    ))
}

/// A GP conditioned on its training data.
pub struct FittedGp {
    /// Hyper-parameters on the standardised target scale.
    pub hyper: GpHyperParameters,
    /// Target standardisation.
    pub scaler: TargetScaler,
    /// L-BFGS runs (empty when the hyper-parameters were fixed).
    pub runs: Vec<OptimisationRun>,
    x_scaled: Mat<f64>,
    alpha: Mat<f64>,
    chol: Cholesky,
    lml_standardised: f64,
}

impl FittedGp {
    fn new(
        x: MatRef<'_, f64>,
        y: &[f64],
        ys: &[f64],
        scaler: TargetScaler,
        hyper: GpHyperParameters,
        runs: Vec<OptimisationRun>,
    ) -> Result<Self> {
        let n = y.len();
        let x_scaled = hyper.kernel.scale(x);
        let mut k = hyper.kernel.cross_scaled(x_scaled.as_ref(), x_scaled.as_ref());
        for i in 0..n {
            k[(i, i)] += hyper.noise_variance;
        }
        let chol = Cholesky::new(k.as_ref(), "the GP kernel matrix K + σ²I")?;
        let alpha = chol.solve(linalg::column(ys).as_ref());
        let quad: f64 = (0..n).map(|i| ys[i] * alpha[(i, 0)]).sum();
        let lml_standardised = -0.5 * quad - 0.5 * chol.log_det() - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
        Ok(Self { hyper, scaler, runs, x_scaled, alpha, chol, lml_standardised })
    }

    /// log p(y | X, θ) of the training targets on their original scale.
    pub fn log_marginal_likelihood(&self) -> f64 {
        self.lml_standardised - self.alpha.nrows() as f64 * self.scaler.scale.ln()
    }

    /// Signal variance on the original target scale.
    pub fn signal_variance(&self) -> f64 {
        self.scaler.variance(self.hyper.kernel.signal_variance)
    }

    /// Noise variance on the original target scale.
    pub fn noise_variance(&self) -> f64 {
        self.scaler.variance(self.hyper.noise_variance)
    }

    /// Posterior predictive at `x_test` (`[m, d]`), on the original target scale.
    pub fn predict(&self, x_test: MatRef<'_, f64>) -> Result<Prediction> {
        linalg::check_test_inputs(x_test, self.x_scaled.ncols(), "GP")?;
        let ts = self.hyper.kernel.scale(x_test);
        let k_star = self.hyper.kernel.cross_scaled(self.x_scaled.as_ref(), ts.as_ref()); // [n, m]
        let mean_s = k_star.transpose() * &self.alpha;
        let v = self.chol.solve_l(k_star.as_ref());
        let explained = linalg::column_dots(v.as_ref(), v.as_ref());
        let signal = self.hyper.kernel.signal_variance;
        Ok(self.scaler.prediction(
            (0..x_test.nrows()).map(|i| mean_s[(i, 0)]),
            explained.iter().map(|e| (signal - e).max(0.0)),
            self.hyper.noise_variance,
        ))
    }
}
crate::model::fit_through!(GpConfig, [f64], FittedGp, predict);
