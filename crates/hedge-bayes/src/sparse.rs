//! Sparse GP regression with M pseudo-inputs Z (Q5 of the notes): FITC/SPGP (Snelson &
//! Ghahramani), whose marginal likelihood is N(y | 0, Q + Λ) with Q = K_fu K_uu⁻¹ K_uf and
//! Λ = diag(K_ff − Q) + σ²I, and VFE (Titsias), which uses Λ = σ²I and subtracts
//! tr(K_ff − Q)/2σ² to make the objective a lower bound on the exact log marginal likelihood.
//! Both cost O(NM²) per evaluation; the pseudo-inputs and kernel hyper-parameters are fitted
//! together by L-BFGS with analytic gradients.

use faer::{Mat, MatRef};
use rand::seq::index::sample;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, BayesError, Result};
use crate::gp::{FitProgress, GpConfig, GpHyperParameters, OptimisationRun, Packing, Prediction, TargetScaler};
use crate::linalg::{self, Cholesky};
use hedge_run::ParamGuard;

/// Which sparse objective to optimise (and which Λ to predict with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SparseMethod {
    /// Fully independent training conditional (SPGP): heteroscedastic Λ = diag(K_ff − Q) + σ².
    #[default]
    Fitc,
    /// Variational free energy (Titsias 2009): a lower bound on the exact log marginal likelihood.
    Vfe,
}

/// Hyper-parameters of a sparse GP: those of [`GpConfig`] plus the pseudo-inputs.
///
/// | name | default | purpose | range |
/// |---|---|---|---|
/// | `gp` | [`GpConfig::default`] with no restarts | kernel, initial values, iterations | |
/// | `method` | `Fitc` | objective | |
/// | `inducing` | 256 | number of pseudo-inputs M (initialised at a random subset of X) | ≥ 1 |
/// | `optimise_inducing` | true | move Z with the hyper-parameters | |
/// | `jitter` | 1e-6 | added to K_uu's diagonal, relative to s² | ≥ 0 |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SparseGpConfig {
    pub gp: GpConfig,
    pub method: SparseMethod,
    pub inducing: usize,
    pub optimise_inducing: bool,
    pub jitter: f64,
}

impl Default for SparseGpConfig {
    fn default() -> Self {
        Self {
            gp: GpConfig::default().with_restarts(0),
            method: SparseMethod::Fitc,
            inducing: 256,
            optimise_inducing: true,
            jitter: 1e-6,
        }
    }
}

impl SparseGpConfig {
    pub fn with_gp(mut self, gp: GpConfig) -> Self {
        self.gp = gp;
        self
    }
    pub fn with_method(mut self, method: SparseMethod) -> Self {
        self.method = method;
        self
    }
    pub fn with_inducing(mut self, inducing: usize) -> Self {
        self.inducing = inducing;
        self
    }
    pub fn with_optimise_inducing(mut self, optimise_inducing: bool) -> Self {
        self.optimise_inducing = optimise_inducing;
        self
    }
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Fits with pseudo-inputs initialised at a random subset of the rows of `x`.
    pub fn fit(&self, x: MatRef<'_, f64>, y: &[f64]) -> Result<FittedSparseGp> {
        self.fit_observed(x, y, &mut |_| {})
    }

    /// As [`SparseGpConfig::fit`], reporting each accepted L-BFGS step to `observer`.
    pub fn fit_observed(
        &self,
        x: MatRef<'_, f64>,
        y: &[f64],
        observer: &mut dyn FnMut(FitProgress),
    ) -> Result<FittedSparseGp> {
        self.check_ref()?;
        linalg::check_rows(x, y.len(), "sparse GP inputs vs targets")?;
        // Clamping would fit a model with fewer pseudo-inputs than its name says ("fitc-5000"
        // on 277 rows used 277).
        let m = self.inducing;
        if m > x.nrows() {
            return Err(BayesError::Run(hedge_run::RunError::InvalidConfig {
                field: "inducing",
                value: m.to_string(),
                reason: format!(
                    "{m} pseudo-inputs for {} training rows: a sparse GP needs at most as many pseudo-inputs as rows \
                     (with {} or fewer rows the exact GP is affordable)",
                    x.nrows(),
                    x.nrows()
                ),
            }));
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.gp.seed);
        let mut rows = sample(&mut rng, x.nrows(), m).into_vec();
        rows.sort_unstable();
        let z = Mat::from_fn(m, x.ncols(), |i, d| x[(rows[i], d)]);
        self.fit_from_observed(x, y, z, observer)
    }

    /// Fits starting from the given pseudo-inputs `z` (`[m, d]`).
    pub fn fit_from(&self, x: MatRef<'_, f64>, y: &[f64], z: Mat<f64>) -> Result<FittedSparseGp> {
        self.fit_from_observed(x, y, z, &mut |_| {})
    }

    fn fit_from_observed(
        &self,
        x: MatRef<'_, f64>,
        y: &[f64],
        z: Mat<f64>,
        observer: &mut dyn FnMut(FitProgress),
    ) -> Result<FittedSparseGp> {
        self.check_ref()?;
        linalg::check_training_data(x, y, "sparse GP")?;
        if z.ncols() != x.ncols() {
            return Err(BayesError::ShapeMismatch {
                what: "pseudo-inputs".into(),
                expected: format!("{} columns", x.ncols()),
                found: format!("{} columns", z.ncols()),
            });
        }
        let scaler = TargetScaler::new(y, self.gp.normalise_y);
        let ys = scaler.forward(y);
        let mut hyper = self.gp.initial(x.ncols());
        let mut z = z;
        let mut runs = Vec::new();
        if self.gp.optimise {
            let packing = Packing { noise_floor: self.gp.noise_floor };
            let n_hyper = packing.pack(&hyper).len();
            let (m, d) = (z.nrows(), z.ncols());
            let optimise_z = self.optimise_inducing;
            let z0 = z.clone();
            // θ = packed hyper-parameters, then (with optimise_inducing) the pseudo-inputs row by row.
            let unpack = |theta: &[f64], like: &crate::gp::GpHyperParameters| {
                let h = packing.unpack(&theta[..n_hyper], like);
                let zz = if optimise_z { Mat::from_fn(m, d, |i, k| theta[n_hyper + i * d + k]) } else { z0.clone() };
                (h, zz)
            };
            let theta0 = |start: &crate::gp::GpHyperParameters| {
                let mut theta = packing.pack(start);
                if optimise_z {
                    for i in 0..m {
                        for k in 0..d {
                            theta.push(z0[(i, k)]);
                        }
                    }
                }
                theta
            };
            let objective = |start: &crate::gp::GpHyperParameters, theta: &[f64]| {
                let (h, zz) = unpack(theta, start);
                match sparse_objective(x, &ys, zz.as_ref(), &h, self.method, self.jitter) {
                    Ok(o) => {
                        let g = crate::gp::GpGradient {
                            log_signal_variance: o.log_signal_variance,
                            log_lengthscales: o.log_lengthscales.clone(),
                            noise_variance: o.noise_variance,
                        };
                        let mut grad: Vec<f64> = packing.pack_gradient(&g, &h).into_iter().map(|v| -v).collect();
                        if optimise_z {
                            for i in 0..m {
                                for k in 0..d {
                                    grad.push(-o.inducing[(i, k)]);
                                }
                            }
                        }
                        (-o.value, grad)
                    }
                    Err(_) => (f64::INFINITY, vec![0.0; theta.len()]),
                }
            };
            // The same multi-start search as the exact GP: `restarts` random restarts of the
            // hyper-parameters, each from the same initial pseudo-inputs.
            let search = crate::gp::MultiStart {
                restarts: self.gp.restarts,
                seed: self.gp.seed,
                max_iters: self.gp.max_iters,
                noise_floor: self.gp.noise_floor,
                what: "sparse GP fit",
            };
            let (found, best) = search.run(&hyper, theta0, objective, observer);
            runs = found;
            let Some((start, theta)) = best else {
                return Err(BayesError::NotPositiveDefinite {
                    what: "the sparse GP matrices at every start".into(),
                    jitter: self.jitter,
                });
            };
            (hyper, z) = unpack(&theta, &start);
        }
        FittedSparseGp::new(x, &ys, scaler, hyper, z, self.method, self.jitter, runs)
    }
}

impl ParamGuard for SparseGpConfig {
    type Error = BayesError;

    /// Validates the hyper-parameters.
    fn check_ref(&self) -> Result<()> {
        self.gp.check_ref()?;
        if self.inducing == 0 {
            return Err(invalid("inducing", 0, "need at least one pseudo-input"));
        }
        if !(self.jitter >= 0.0 && self.jitter.is_finite()) {
            return Err(invalid("jitter", self.jitter, "must be a finite number ≥ 0"));
        }
        Ok(())
    }
}

/// The sparse objective and its gradients.
#[derive(Debug, Clone)]
pub struct SparseObjective {
    /// FITC: log N(y | 0, Q + Λ). VFE: log N(y | 0, Q + σ²I) − tr(K_ff − Q)/2σ².
    pub value: f64,
    pub log_signal_variance: f64,
    pub log_lengthscales: Vec<f64>,
    /// ∂/∂σ².
    pub noise_variance: f64,
    /// ∂/∂Z, `[m, d]`.
    pub inducing: Mat<f64>,
}

/// Shared factorisations of the sparse model.
struct Factors {
    /// K_uf, `[m, n]` (scaled inputs).
    u: Mat<f64>,
    /// K_uu without jitter.
    kuu: Mat<f64>,
    luu: Cholesky,
    /// L_uu⁻¹ K_uf.
    v: Mat<f64>,
    /// Qᵢᵢ.
    q: Vec<f64>,
    /// Λᵢᵢ.
    lambda: Vec<f64>,
    /// Cholesky of B̃ = I + V Λ⁻¹ Vᵀ.
    lb: Cholesky,
    /// a = (K_uu + K_uf Λ⁻¹ K_fu)⁻¹ K_uf Λ⁻¹ y.
    a: Mat<f64>,
    /// tᵀt where t = L_B⁻¹ V Λ⁻¹ y.
    tt: f64,
}

fn factorise(
    xs: MatRef<'_, f64>,
    zs: MatRef<'_, f64>,
    y: &[f64],
    h: &GpHyperParameters,
    method: SparseMethod,
    jitter: f64,
) -> Result<Factors> {
    let (m, n) = (zs.nrows(), xs.nrows());
    let s2 = h.kernel.signal_variance;
    let u = h.kernel.cross_scaled(zs, xs);
    let kuu = symmetric(h.kernel.cross_scaled(zs, zs));
    let mut kuu_j = kuu.clone();
    for i in 0..m {
        kuu_j[(i, i)] += jitter * s2;
    }
    let luu = Cholesky::new(kuu_j.as_ref(), "the pseudo-input kernel matrix K_uu")?;
    let v = luu.solve_l(u.as_ref());
    let q = linalg::column_dots(v.as_ref(), v.as_ref());
    let lambda: Vec<f64> = match method {
        SparseMethod::Fitc => q.iter().map(|qi| (s2 - qi).max(0.0) + h.noise_variance).collect(),
        SparseMethod::Vfe => vec![h.noise_variance; n],
    };
    let mut vb = v.clone();
    linalg::par_columns_mut(&mut vb, |j, column| {
        let scale = 1.0 / lambda[j].sqrt();
        column.iter_mut().for_each(|x| *x *= scale);
    });
    let mut bt = linalg::symmetric_product(vb.as_ref(), vb.as_ref());
    drop(vb);
    for i in 0..m {
        bt[(i, i)] += 1.0;
    }
    let lb = Cholesky::new(symmetric(bt).as_ref(), "the sparse GP matrix I + V Λ⁻¹ Vᵀ")?;
    let by = Mat::from_fn(n, 1, |i, _| y[i] / lambda[i]);
    let w = &v * &by;
    let t = lb.solve_l(w.as_ref());
    let tt = (0..m).map(|i| t[(i, 0)].powi(2)).sum();
    let a = luu.solve_lt(lb.solve_lt(t.as_ref()).as_ref());
    Ok(Factors { u, kuu, luu, v, q, lambda, lb, a, tt })
}

fn symmetric(mut k: Mat<f64>) -> Mat<f64> {
    for i in 0..k.nrows() {
        for j in 0..i {
            let v = 0.5 * (k[(i, j)] + k[(j, i)]);
            k[(i, j)] = v;
            k[(j, i)] = v;
        }
    }
    k
}

/// The FITC or VFE objective at pseudo-inputs `z` and its gradients (targets as given; no
/// standardisation here).
///
/// # Shapes
/// `x`: `[n, d]`, `y`: `[n]`, `z`: `[m, d]`.
pub fn sparse_objective(
    x: MatRef<'_, f64>,
    y: &[f64],
    z: MatRef<'_, f64>,
    h: &GpHyperParameters,
    method: SparseMethod,
    jitter: f64,
) -> Result<SparseObjective> {
    let n = y.len();
    let m = z.nrows();
    let s2 = h.kernel.signal_variance;
    let sigma2 = h.noise_variance;
    let xs = h.kernel.scale(x);
    let zs = h.kernel.scale(z);
    let f = factorise(xs.as_ref(), zs.as_ref(), y, h, method, jitter)?;
    let quad_lambda: f64 = (0..n).map(|i| y[i] * y[i] / f.lambda[i]).sum();
    let log_lambda: f64 = f.lambda.iter().map(|l| l.ln()).sum();
    let mut value = -0.5 * (quad_lambda - f.tt)
        - 0.5 * (f.lb.log_det() + log_lambda)
        - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
    let trace_residual: f64 = f.q.iter().map(|qi| s2 - qi).sum();
    if method == SparseMethod::Vfe {
        value -= trace_residual / (2.0 * sigma2);
    }

    // Reverse mode, with B = K_uu + K_uf Λ⁻¹ K_fu, a = B⁻¹ K_uf Λ⁻¹ y, β = 1/λ:
    //   ∂F/∂B = −½(aaᵀ + B⁻¹), ∂F/∂c = a for c = K_uf(β∘y), and ∂F/∂K_uu also gets +½K_uu⁻¹.
    // The [m, n] matrices dominate the cost, so they are formed by matrix products and fused,
    // in-place column passes.
    let identity = Mat::<f64>::identity(m, m);
    let luu_inv = f.luu.solve_l(identity.as_ref());
    let bt_inv = f.lb.inverse();
    let b_inv = luu_inv.transpose() * &bt_inv * &luu_inv;
    let kuu_inv = luu_inv.transpose() * &luu_inv;
    let g_b = Mat::from_fn(m, m, |i, j| -0.5 * (f.a[(i, 0)] * f.a[(j, 0)] + b_inv[(i, j)]));
    let p = f.luu.solve_lt(f.v.as_ref()); // K_uu⁻¹ K_uf
    let mut gbu = &g_b * &f.u;
    let uta = f.u.transpose() * &f.a;
    let u_gbu =
        linalg::par_map_columns(n, |j| linalg::col(&f.u, j).iter().zip(linalg::col(&gbu, j)).map(|(a, b)| a * b).sum());
    let beta: Vec<f64> = f.lambda.iter().map(|l| 1.0 / l).collect();
    let g_lambda: Vec<f64> = (0..n)
        .map(|i| {
            let g_beta = -0.5 * y[i] * y[i] + y[i] * uta[(i, 0)] + u_gbu[i] + 0.5 * f.lambda[i];
            -g_beta * beta[i] * beta[i]
        })
        .collect();
    let (q_weight, g_sigma2, g_log_s2_diag): (Vec<f64>, f64, f64) = match method {
        // λᵢ = max(s² − qᵢ, 0) + σ²: ∂F/∂qᵢ = −∂F/∂λᵢ and ∂F/∂s² = Σ ∂F/∂λᵢ where the clamp
        // is inactive.
        SparseMethod::Fitc => {
            let active: Vec<bool> = f.q.iter().map(|qi| s2 - qi >= 0.0).collect();
            let q_weight = (0..n).map(|i| if active[i] { -g_lambda[i] } else { 0.0 }).collect();
            let on_s2: f64 = (0..n).filter(|&i| active[i]).map(|i| g_lambda[i]).sum();
            (q_weight, g_lambda.iter().sum(), on_s2 * s2)
        }
        // λᵢ = σ², plus −tr(K_ff − Q)/2σ²: ∂F/∂qᵢ = 1/2σ².
        SparseMethod::Vfe => (
            vec![0.5 / sigma2; n],
            g_lambda.iter().sum::<f64>() + trace_residual / (2.0 * sigma2 * sigma2),
            -(n as f64) * s2 / (2.0 * sigma2),
        ),
    };
    // ∂F/∂K_uf = 2 G_B K_uf diag(β) + a(β∘y)ᵀ + 2 P diag(∂F/∂q), since qᵢ = K_uᵢᵀ K_uu⁻¹ K_uᵢ
    // has ∂qᵢ/∂K_uᵢ = 2pᵢ and ∂qᵢ/∂K_uu = −pᵢpᵢᵀ. Only W = K_uf ∘ ∂F/∂K_uf is needed, formed in
    // place of G_B K_uf.
    let a_vec = linalg::to_vec(f.a.as_ref());
    linalg::par_columns_mut(&mut gbu, |j, column| {
        let (u, pj) = (linalg::col(&f.u, j), linalg::col(&p, j));
        let (bj, byj, qj) = (beta[j], beta[j] * y[j], q_weight[j]);
        for i in 0..column.len() {
            column[i] = u[i] * (2.0 * column[i] * bj + a_vec[i] * byj + 2.0 * pj[i] * qj);
        }
    });
    let w_u = gbu;
    drop(p);
    // P diag(∂F/∂q) Pᵀ = L_uu⁻ᵀ (V diag(∂F/∂q) Vᵀ) L_uu⁻¹, a symmetric product at half the cost.
    let mut vw = f.v.clone();
    linalg::par_columns_mut(&mut vw, |j, column| column.iter_mut().for_each(|v| *v *= q_weight[j]));
    let vwv = linalg::symmetric_product(vw.as_ref(), f.v.as_ref());
    drop(vw);
    let ppt = luu_inv.transpose() * &vwv * &luu_inv;
    let g_kuu = symmetric(Mat::from_fn(m, m, |i, j| 0.5 * kuu_inv[(i, j)] + g_b[(i, j)] - ppt[(i, j)]));
    let jitter_trace: f64 = (0..m).map(|i| g_kuu[(i, i)]).sum::<f64>() * jitter * s2;

    let back_u = h.kernel.backward_weighted(zs.as_ref(), xs.as_ref(), &w_u);
    drop(w_u);
    let w_uu = crate::kernel::hadamard(f.kuu.as_ref(), g_kuu.as_ref());
    let back_uu = h.kernel.backward_weighted(zs.as_ref(), zs.as_ref(), &w_uu);
    let mut grad = back_u.hyper;
    grad.add(&back_uu.hyper);
    // K_uu depends on Z through both arguments; with a symmetric cotangent the two are equal.
    let g_z = Mat::from_fn(m, z.ncols(), |i, d| back_u.first_input[(i, d)] + 2.0 * back_uu.first_input[(i, d)]);
    Ok(SparseObjective {
        value,
        log_signal_variance: grad.log_signal_variance + g_log_s2_diag + jitter_trace,
        log_lengthscales: grad.log_lengthscales,
        noise_variance: g_sigma2,
        inducing: g_z,
    })
}

/// Conditions a sparse GP with *fixed* hyper-parameters (on the standardised scale when
/// `config.gp.normalise_y`) and pseudo-inputs `z`, skipping the search.
pub fn fit_with(
    config: &SparseGpConfig,
    x: MatRef<'_, f64>,
    y: &[f64],
    hyper: GpHyperParameters,
    z: Mat<f64>,
) -> Result<FittedSparseGp> {
    config.check_ref()?;
    linalg::check_training_data(x, y, "sparse GP")?;
    let scaler = TargetScaler::new(y, config.gp.normalise_y);
    let ys = scaler.forward(y);
    FittedSparseGp::new(x, &ys, scaler, hyper, z, config.method, config.jitter, Vec::new())
}

/// A sparse GP conditioned on its training data.
pub struct FittedSparseGp {
    /// Hyper-parameters on the standardised target scale.
    pub hyper: GpHyperParameters,
    /// Pseudo-inputs, `[m, d]`.
    pub inducing: Mat<f64>,
    pub method: SparseMethod,
    pub scaler: TargetScaler,
    pub runs: Vec<OptimisationRun>,
    objective_standardised: f64,
    n: usize,
    zs: Mat<f64>,
    luu: Cholesky,
    lb: Cholesky,
    a: Mat<f64>,
}

impl FittedSparseGp {
    #[allow(clippy::too_many_arguments)]
    fn new(
        x: MatRef<'_, f64>,
        ys: &[f64],
        scaler: TargetScaler,
        hyper: GpHyperParameters,
        inducing: Mat<f64>,
        method: SparseMethod,
        jitter: f64,
        runs: Vec<OptimisationRun>,
    ) -> Result<Self> {
        let xs = hyper.kernel.scale(x);
        let zs = hyper.kernel.scale(inducing.as_ref());
        let objective_standardised = sparse_objective(x, ys, inducing.as_ref(), &hyper, method, jitter)?.value;
        let f = factorise(xs.as_ref(), zs.as_ref(), ys, &hyper, method, jitter)?;
        Ok(Self {
            hyper,
            inducing,
            method,
            scaler,
            runs,
            objective_standardised,
            n: ys.len(),
            zs,
            luu: f.luu,
            lb: f.lb,
            a: f.a,
        })
    }

    /// The fitted objective (FITC marginal likelihood or VFE bound) on the original target scale.
    pub fn objective(&self) -> f64 {
        self.objective_standardised - self.n as f64 * self.scaler.scale.ln()
    }

    /// Signal variance on the original target scale.
    pub fn signal_variance(&self) -> f64 {
        self.scaler.variance(self.hyper.kernel.signal_variance)
    }

    /// Noise variance on the original target scale.
    pub fn noise_variance(&self) -> f64 {
        self.scaler.variance(self.hyper.noise_variance)
    }

    /// Predictive mean k*ᵀa and latent variance k** − k*ᵀ(K_uu⁻¹ − B⁻¹)k* at `x_test`, in O(M²)
    /// per point, on the original target scale.
    pub fn predict(&self, x_test: MatRef<'_, f64>) -> Result<Prediction> {
        linalg::check_test_inputs(x_test, self.zs.ncols(), "sparse GP")?;
        let ts = self.hyper.kernel.scale(x_test);
        let k_star = self.hyper.kernel.cross_scaled(self.zs.as_ref(), ts.as_ref()); // [m, t]
        let mean_s = k_star.transpose() * &self.a;
        let c = self.luu.solve_l(k_star.as_ref());
        let q = linalg::column_dots(c.as_ref(), c.as_ref());
        let e = self.lb.solve_l(c.as_ref());
        let back = linalg::column_dots(e.as_ref(), e.as_ref());
        let signal = self.hyper.kernel.signal_variance;
        Ok(self.scaler.prediction(
            (0..x_test.nrows()).map(|i| mean_s[(i, 0)]),
            q.iter().zip(&back).map(|(qi, bi)| (signal - qi + bi).max(0.0)),
            self.hyper.noise_variance,
        ))
    }
}
crate::model::fit_through!(SparseGpConfig, [f64], FittedSparseGp, predict);
