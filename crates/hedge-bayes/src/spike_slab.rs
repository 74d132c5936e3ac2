//! EM for spike-and-slab sparse linear regression (Q3 of the notes).
//!
//! Model: y ~ N(Xw, σ²I); w_d | γ_d, σ² ~ N(0, σ² κ_{γ_d}) with κ₁ = v₁ (the wide slab) and
//! κ₀ = v₀ (the narrow spike); γ_d ~ Bernoulli(θ); σ² ~ IG(ν/2, νλ/2); θ ~ Beta(a₀, b₀).
//! E-step: p(w | Θ, y) = N(μ_w, Σ_w) with μ_w = (XᵀX + K⁻¹)⁻¹Xᵀy, Σ_w = σ²(XᵀX + K⁻¹)⁻¹,
//! K = diag(κ_γ). M-step (exactly the notes' updates):
//! `σ² = (yᵀy − 2yᵀXμ_w + tr((XᵀX + K⁻¹)E[wwᵀ]) + νλ)/(N + D + ν + 2)`,
//! θ = (Σγ + a₀ − 1)/(D + a₀ + b₀ − 2), and each γ_d ∈ {0, 1} maximises the expected
//! complete-data log posterior. The notes write v₀ > v₁ in one place; here the spike is the
//! narrow component whatever its label, and `check()` insists on `spike_variance < slab_variance`.

use faer::{Mat, MatRef};
use serde::{Deserialize, Serialize};

use crate::error::{invalid, BayesError, Result};
use crate::linalg::{self, Cholesky};
use hedge_run::ParamGuard;

/// Priors and stopping rule.
///
/// | name | default | purpose | range |
/// |---|---|---|---|
/// | `spike_variance` | 1e-2 | v₀, prior variance (× σ²) of an excluded weight: σ√v₀ should exceed the sampling noise of a zero weight (≈ σ/√N for standardised inputs) or every weight lands in the slab | (0, slab) |
/// | `slab_variance` | 10 | v₁, prior variance (× σ²) of an included weight | > spike |
/// | `nu`, `lambda` | 1, 0.1 | IG(ν/2, νλ/2) prior on σ² | ≥ 0 |
/// | `a0`, `b0` | 1, 1 | Beta(a₀, b₀) prior on θ | ≥ 1 |
/// | `max_iters` | 200 | EM iterations at most | ≥ 1 |
/// | `tolerance` | 1e-8 | stop when the expected complete-data log posterior changes by less than this (relative) and γ is unchanged | > 0 |
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpikeSlabConfig {
    pub spike_variance: f64,
    pub slab_variance: f64,
    pub nu: f64,
    pub lambda: f64,
    pub a0: f64,
    pub b0: f64,
    pub max_iters: usize,
    pub tolerance: f64,
}

impl Default for SpikeSlabConfig {
    fn default() -> Self {
        Self {
            spike_variance: 1e-2,
            slab_variance: 10.0,
            nu: 1.0,
            lambda: 0.1,
            a0: 1.0,
            b0: 1.0,
            max_iters: 200,
            tolerance: 1e-8,
        }
    }
}

/// The EM fixed point.
#[derive(Debug, Clone, Serialize)]
pub struct FittedSpikeSlab {
    /// μ_w, the posterior mean of the weights.
    pub weights: Vec<f64>,
    /// Posterior standard deviation of each weight.
    pub weight_sd: Vec<f64>,
    /// γ, the included weights.
    pub included: Vec<bool>,
    pub theta: f64,
    pub noise_variance: f64,
    /// log p(y | Θ) + log p(Θ) (up to constants) at each E-step (EM never decreases it).
    pub objective: Vec<f64>,
    /// The expected complete-data log posterior after each M-step; convergence is judged on it.
    pub expected_complete_log_posterior: Vec<f64>,
    pub iterations: usize,
    pub converged: bool,
}

impl FittedSpikeSlab {
    /// Indices of the included weights.
    pub fn support(&self) -> Vec<usize> {
        self.included.iter().enumerate().filter(|(_, &g)| g).map(|(d, _)| d).collect()
    }
}

impl SpikeSlabConfig {
    pub fn with_variances(mut self, spike: f64, slab: f64) -> Self {
        self.spike_variance = spike;
        self.slab_variance = slab;
        self
    }
    pub fn with_max_iters(mut self, max_iters: usize) -> Self {
        self.max_iters = max_iters;
        self
    }

    /// Runs EM from γ = 1 (every weight in the slab), θ = ½, σ² = Var(y)/2.
    ///
    /// # Shapes
    /// `x`: `[n, d]`, `y`: `[n]`.
    pub fn fit(&self, x: MatRef<'_, f64>, y: &[f64]) -> Result<FittedSpikeSlab> {
        self.check_ref()?;
        linalg::check_training_data(x, y, "spike-and-slab")?;
        let (n, d) = (x.nrows(), x.ncols());
        if n < 2 {
            return Err(BayesError::NotEnoughData { what: "spike-and-slab EM".into(), found: n, needed: 2 });
        }
        let xtx = x.transpose() * x;
        let xty = x.transpose() * linalg::column(y);
        let yty: f64 = y.iter().map(|v| v * v).sum();
        let ybar = y.iter().sum::<f64>() / n as f64;
        let mut sigma2 = (y.iter().map(|v| (v - ybar).powi(2)).sum::<f64>() / n as f64 / 2.0).max(1e-12);
        let mut theta: f64 = 0.5;
        let mut gamma = vec![true; d];
        let kappa = |g: bool| if g { self.slab_variance } else { self.spike_variance };
        let mut objective = Vec::new();
        let mut expected = Vec::new();
        let mut converged = false;
        let mut posterior = (vec![0.0; d], Mat::<f64>::zeros(d, d));
        for _ in 0..self.max_iters {
            // E-step: A = XᵀX + K⁻¹, μ = A⁻¹Xᵀy, E[wwᵀ] = σ²A⁻¹ + μμᵀ.
            let mut a = xtx.clone();
            for j in 0..d {
                a[(j, j)] += 1.0 / kappa(gamma[j]);
            }
            let chol = Cholesky::new(a.as_ref(), "XᵀX + K⁻¹")?;
            let mu = linalg::to_vec(chol.solve(xty.as_ref()).as_ref());
            let a_inv = chol.inverse();
            // log p(y | Θ) + log p(Θ) at the current Θ, which EM never decreases:
            // y ~ N(0, σ²(I + XKXᵀ)), |I + XKXᵀ| = |K||A|, yᵀ(I + XKXᵀ)⁻¹y = yᵀy − yᵀXμ.
            let log_k: f64 = gamma.iter().map(|&g| kappa(g).ln()).sum();
            let fit_term: f64 = (0..d).map(|i| xty[(i, 0)] * mu[i]).sum();
            let included_now = gamma.iter().filter(|&&g| g).count() as f64;
            let value = -0.5 * n as f64 * (2.0 * std::f64::consts::PI * sigma2).ln()
                - 0.5 * (log_k + chol.log_det())
                - (yty - fit_term) / (2.0 * sigma2)
                - (0.5 * self.nu + 1.0) * sigma2.ln()
                - self.nu * self.lambda / (2.0 * sigma2)
                + (included_now + self.a0 - 1.0) * theta.ln()
                + (d as f64 - included_now + self.b0 - 1.0) * (1.0 - theta).ln();
            let second = |i: usize, s2: f64| s2 * a_inv[(i, i)] + mu[i] * mu[i];
            // M-step for σ²: tr((XᵀX + K⁻¹)E[wwᵀ]) = σ²_old·D + μᵀAμ.
            let mu_a_mu: f64 = (0..d).map(|i| (0..d).map(|j| mu[i] * a[(i, j)] * mu[j]).sum::<f64>()).sum();
            let y_x_mu: f64 = (0..d).map(|i| xty[(i, 0)] * mu[i]).sum();
            let trace = sigma2 * d as f64 + mu_a_mu;
            let sigma2_old = sigma2;
            sigma2 = ((yty - 2.0 * y_x_mu + trace + self.nu * self.lambda) / (n as f64 + d as f64 + self.nu + 2.0))
                .max(1e-300);
            // γ: compare the two terms of the expected log prior of w_d (with the new σ²).
            let previous_gamma = gamma.clone();
            for (j, g) in gamma.iter_mut().enumerate() {
                let ew2 = second(j, sigma2_old);
                let score = |inc: bool| {
                    let k = kappa(inc);
                    -ew2 / (2.0 * sigma2 * k) - 0.5 * k.ln() + if inc { theta.ln() } else { (1.0 - theta).ln() }
                };
                *g = score(true) > score(false);
            }
            let included = gamma.iter().filter(|&&g| g).count() as f64;
            let gamma_changed = gamma.iter().zip(&previous_gamma).any(|(a, b)| a != b);
            theta = ((included + self.a0 - 1.0) / (d as f64 + self.a0 + self.b0 - 2.0)).clamp(1e-12, 1.0 - 1e-12);
            // Expected complete-data log posterior Q(Θ_new | Θ_old) (the notes' objective), with
            // E[wwᵀ] = σ²_old A⁻¹ + μμᵀ from this E-step; EM stops when it settles.
            let xtx_second: f64 = (0..d)
                .map(|i| (0..d).map(|j| xtx[(i, j)] * (sigma2_old * a_inv[(i, j)] + mu[i] * mu[j])).sum::<f64>())
                .sum();
            let prior_w: f64 = (0..d).map(|j| second(j, sigma2_old) / kappa(gamma[j])).sum();
            let log_k_new: f64 = gamma.iter().map(|&g| kappa(g).ln()).sum();
            let q = -(yty - 2.0 * y_x_mu + xtx_second + prior_w) / (2.0 * sigma2)
                - 0.5 * (n + d) as f64 * (2.0 * std::f64::consts::PI * sigma2).ln()
                - 0.5 * log_k_new
                + (included + self.a0 - 1.0) * theta.ln()
                + (d as f64 - included + self.b0 - 1.0) * (1.0 - theta).ln()
                - (0.5 * self.nu + 1.0) * sigma2.ln()
                - self.nu * self.lambda / (2.0 * sigma2);
            posterior = (mu, a_inv);
            let done = !gamma_changed
                && expected.last().is_some_and(|&last: &f64| (q - last).abs() <= self.tolerance * last.abs().max(1.0));
            objective.push(value);
            expected.push(q);
            if done {
                converged = true;
                break;
            }
        }
        let (mu, a_inv) = posterior;
        Ok(FittedSpikeSlab {
            weight_sd: (0..d).map(|j| (sigma2 * a_inv[(j, j)]).sqrt()).collect(),
            weights: mu,
            included: gamma,
            theta,
            noise_variance: sigma2,
            iterations: objective.len(),
            objective,
            expected_complete_log_posterior: expected,
            converged,
        })
    }
}

impl ParamGuard for SpikeSlabConfig {
    type Error = BayesError;

    fn check_ref(&self) -> Result<()> {
        if !(self.spike_variance > 0.0 && self.spike_variance.is_finite()) {
            return Err(invalid("spike_variance", self.spike_variance, "must be a finite number > 0"));
        }
        if !(self.slab_variance > self.spike_variance && self.slab_variance.is_finite()) {
            return Err(invalid(
                "slab_variance",
                self.slab_variance,
                format!("must exceed spike_variance = {}", self.spike_variance),
            ));
        }
        if !(self.nu >= 0.0 && self.lambda >= 0.0 && self.nu.is_finite() && self.lambda.is_finite()) {
            return Err(invalid("nu/lambda", format!("{}/{}", self.nu, self.lambda), "must be finite and ≥ 0"));
        }
        if !(self.a0 >= 1.0 && self.b0 >= 1.0) {
            return Err(invalid(
                "a0/b0",
                format!("{}/{}", self.a0, self.b0),
                "must be ≥ 1 so the θ update stays in [0, 1]",
            ));
        }
        if self.max_iters == 0 {
            return Err(invalid("max_iters", 0, "must be at least 1"));
        }
        if self.tolerance.is_nan() || self.tolerance <= 0.0 {
            return Err(invalid("tolerance", self.tolerance, "must be > 0"));
        }
        Ok(())
    }
}

crate::model::fit_through!(SpikeSlabConfig, [f64], FittedSpikeSlab);

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    pub(crate) fn sparse_problem(n: usize, d: usize, seed: u64) -> (Mat<f64>, Vec<f64>, Vec<f64>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let x = Mat::from_fn(n, d, |_, _| rng.sample::<f64, _>(StandardNormal));
        let mut w = vec![0.0; d];
        for (k, j) in [2usize, 7, 11, 19, 23].iter().enumerate() {
            w[*j % d] = [1.5, -2.0, 1.0, -1.2, 2.5][k];
        }
        let y = (0..n)
            .map(|i| (0..d).map(|j| x[(i, j)] * w[j]).sum::<f64>() + 0.5 * rng.sample::<f64, _>(StandardNormal))
            .collect();
        (x, y, w)
    }

    #[test]
    fn recovers_the_true_support() {
        for seed in 0..3 {
            let (x, y, w) = sparse_problem(200, 30, seed);
            let fit = SpikeSlabConfig::default().fit(x.as_ref(), &y).unwrap();
            let truth: Vec<usize> = w.iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(j, _)| j).collect();
            assert_eq!(fit.support(), truth, "seed {seed}");
            assert!(fit.converged);
            assert!((fit.noise_variance - 0.25).abs() < 0.1, "σ² = {}", fit.noise_variance);
            for j in truth {
                assert!(
                    (fit.weights[j] - w[j]).abs() < 4.0 * fit.weight_sd[j] + 0.05,
                    "w[{j}] {} vs {}",
                    fit.weights[j],
                    w[j]
                );
            }
        }
    }

    #[test]
    fn objective_never_decreases() {
        let (x, y, _) = sparse_problem(100, 30, 9);
        let fit = SpikeSlabConfig::default().fit(x.as_ref(), &y).unwrap();
        for pair in fit.objective.windows(2) {
            assert!(pair[1] >= pair[0] - 1e-8 * pair[0].abs(), "{:?}", fit.objective);
        }
    }

    #[test]
    fn rejects_a_spike_wider_than_the_slab() {
        let (x, y, _) = sparse_problem(20, 3, 0);
        let e = SpikeSlabConfig::default().with_variances(5.0, 1.0).fit(x.as_ref(), &y).unwrap_err();
        assert!(e.to_string().contains("slab_variance"), "{e}");
    }
}
