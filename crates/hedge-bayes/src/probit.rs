//! Bayesian probit regression p(y = 1 | x, w) = Φ(wᵀx) with a Gaussian prior w ~ N(0, v·I),
//! approximated by Laplace's method: Newton's method finds the mode ŵ, the posterior is
//! N(ŵ, H⁻¹) with H the negative Hessian of the log posterior there, and the predictive is
//! p(y = 1 | x) = Φ(ŵᵀx / √(1 + xᵀH⁻¹x)).

use faer::{Mat, MatRef};
use serde::{Deserialize, Serialize};
use statrs::function::erf::erfc;

use crate::error::{invalid, BayesError, Result};
use crate::linalg::{self, Cholesky};
use hedge_run::ParamGuard;

/// Standard normal CDF Φ(z).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// log Φ(z), accurate far into the lower tail.
pub fn log_normal_cdf(z: f64) -> f64 {
    if z > -30.0 {
        normal_cdf(z).ln()
    } else {
        // Mills-ratio asymptotics: Φ(z) ≈ φ(z)/(−z) (1 − 1/z² + 3/z⁴).
        -0.5 * z * z - 0.5 * (2.0 * std::f64::consts::PI).ln() - (-z).ln()
            + (1.0 - 1.0 / (z * z) + 3.0 / z.powi(4)).ln()
    }
}

/// φ(z)/Φ(z), the derivative of log Φ.
fn inverse_mills(z: f64) -> f64 {
    if z > -30.0 {
        let pdf = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        pdf / normal_cdf(z)
    } else {
        -z / (1.0 - 1.0 / (z * z) + 3.0 / z.powi(4))
    }
}

/// Prior and Newton settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbitConfig {
    /// v, the prior variance of each weight.
    pub prior_variance: f64,
    /// Newton iterations at most.
    pub max_iters: usize,
    /// Stop when the largest Newton step component falls below this.
    pub tolerance: f64,
}

impl Default for ProbitConfig {
    fn default() -> Self {
        Self { prior_variance: 1.0, max_iters: 100, tolerance: 1e-10 }
    }
}

impl ProbitConfig {
    pub fn with_prior_variance(mut self, v: f64) -> Self {
        self.prior_variance = v;
        self
    }
    /// Laplace approximation to the posterior given inputs `x` and labels in {0, 1}.
    ///
    /// # Shapes
    /// `x`: `[n, d]`, `labels`: `[n]`.
    pub fn fit(&self, x: MatRef<'_, f64>, labels: &[u8]) -> Result<FittedProbit> {
        self.check_ref()?;
        linalg::check_rows(x, labels.len(), "probit inputs vs labels")?;
        linalg::check_finite_matrix(x, "probit inputs")?;
        if let Some(i) = labels.iter().position(|&l| l > 1) {
            return Err(BayesError::ShapeMismatch {
                what: format!("probit label {i}"),
                expected: "0 or 1".into(),
                found: labels[i].to_string(),
            });
        }
        let (n, d) = (x.nrows(), x.ncols());
        let sign: Vec<f64> = labels.iter().map(|&l| if l == 1 { 1.0 } else { -1.0 }).collect();
        let log_posterior = |w: &[f64]| {
            let f = x * linalg::column(w);
            (0..n).map(|i| log_normal_cdf(sign[i] * f[(i, 0)])).sum::<f64>()
                - 0.5 * w.iter().map(|v| v * v).sum::<f64>() / self.prior_variance
        };
        let mut w = vec![0.0; d];
        let mut current = log_posterior(&w);
        let mut iterations = 0;
        let mut hessian_chol = None;
        for it in 0..self.max_iters {
            iterations = it + 1;
            let f = x * linalg::column(&w);
            let mut grad = vec![0.0; d];
            let mut weights = vec![0.0; n];
            for i in 0..n {
                let z = sign[i] * f[(i, 0)];
                let r = inverse_mills(z);
                weights[i] = r * (z + r);
                for (j, g) in grad.iter_mut().enumerate() {
                    *g += sign[i] * r * x[(i, j)];
                }
            }
            for (g, wj) in grad.iter_mut().zip(&w) {
                *g -= wj / self.prior_variance;
            }
            let h = negative_hessian(x, &weights, self.prior_variance);
            let chol = Cholesky::new(h.as_ref(), "the probit Hessian")?;
            let step = linalg::to_vec(chol.solve(linalg::column(&grad).as_ref()).as_ref());
            hessian_chol = Some(chol);
            // Damped Newton: halve the step until the log posterior does not decrease.
            let mut t = 1.0;
            let mut accepted = false;
            for _ in 0..30 {
                let trial: Vec<f64> = w.iter().zip(&step).map(|(a, b)| a + t * b).collect();
                let value = log_posterior(&trial);
                if value >= current - 1e-12 {
                    w = trial;
                    current = value;
                    accepted = true;
                    break;
                }
                t *= 0.5;
            }
            let largest = step.iter().fold(0.0f64, |m, s| m.max((t * s).abs()));
            if !accepted || largest < self.tolerance {
                break;
            }
        }
        // Curvature at the final mode.
        let f = x * linalg::column(&w);
        let weights: Vec<f64> = (0..n)
            .map(|i| {
                let z = sign[i] * f[(i, 0)];
                let r = inverse_mills(z);
                r * (z + r)
            })
            .collect();
        let h = negative_hessian(x, &weights, self.prior_variance);
        let chol = Cholesky::new(h.as_ref(), "the probit Hessian")?;
        drop(hessian_chol);
        let log_evidence = current - 0.5 * d as f64 * self.prior_variance.ln() - 0.5 * chol.log_det();
        Ok(FittedProbit { mean: w, covariance: chol.inverse(), log_evidence, iterations })
    }
}

impl ParamGuard for ProbitConfig {
    type Error = BayesError;

    fn check_ref(&self) -> Result<()> {
        if !(self.prior_variance > 0.0 && self.prior_variance.is_finite()) {
            return Err(invalid("prior_variance", self.prior_variance, "must be a finite number > 0"));
        }
        if self.max_iters == 0 {
            return Err(invalid("max_iters", 0, "must be at least 1"));
        }
        Ok(())
    }
}

fn negative_hessian(x: MatRef<'_, f64>, weights: &[f64], prior_variance: f64) -> Mat<f64> {
    let wx = Mat::from_fn(x.nrows(), x.ncols(), |i, j| weights[i] * x[(i, j)]);
    let mut h = x.transpose() * wx;
    for j in 0..h.nrows() {
        h[(j, j)] += 1.0 / prior_variance;
    }
    h
}

/// Laplace posterior N(ŵ, Σ) of a probit model.
#[derive(Debug, Clone)]
pub struct FittedProbit {
    /// ŵ, the posterior mode.
    pub mean: Vec<f64>,
    /// Σ = H⁻¹.
    pub covariance: Mat<f64>,
    /// Laplace approximation to log p(y | X).
    pub log_evidence: f64,
    pub iterations: usize,
}

impl FittedProbit {
    /// p(y = 1 | x) = Φ(ŵᵀx / √(1 + xᵀΣx)) for each row of `x`.
    pub fn predict_proba(&self, x: MatRef<'_, f64>) -> Result<Vec<f64>> {
        if x.ncols() != self.mean.len() {
            return Err(BayesError::ShapeMismatch {
                what: "probit test inputs".into(),
                expected: format!("{} columns", self.mean.len()),
                found: format!("{} columns", x.ncols()),
            });
        }
        let m = x * linalg::column(&self.mean);
        let xs = x * &self.covariance;
        let v = linalg::column_dots(xs.transpose(), x.transpose());
        Ok((0..x.nrows()).map(|i| normal_cdf(m[(i, 0)] / (1.0 + v[i]).sqrt())).collect())
    }
}

crate::model::fit_through!(ProbitConfig, [u8], FittedProbit);

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    fn data(n: usize, seed: u64) -> (Mat<f64>, Vec<u8>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let x = Mat::from_fn(n, 3, |_, j| if j == 0 { 1.0 } else { rng.sample::<f64, _>(StandardNormal) });
        let truth = [0.3, 1.5, -1.0];
        let labels = (0..n)
            .map(|i| {
                let f: f64 = (0..3).map(|j| truth[j] * x[(i, j)]).sum();
                u8::from(rng.sample::<f64, _>(StandardNormal) < f)
            })
            .collect();
        (x, labels)
    }

    #[test]
    fn normal_cdf_matches_known_values() {
        // scipy.stats.norm.cdf / logcdf
        // statrs' erfc is good to about 1e-11 here, plenty for probabilities.
        assert!((normal_cdf(1.0) - 0.8413447460685429).abs() < 1e-10, "{}", normal_cdf(1.0));
        assert!((normal_cdf(-2.5) - 0.006209665325776132).abs() < 1e-12, "{}", normal_cdf(-2.5));
        // Far in the tail, where Φ itself underflows; the two branches meet at z = −30.
        assert!((log_normal_cdf(-40.0) - -804.6084420137539).abs() < 1e-6);
        assert!((log_normal_cdf(-30.0 + 1e-9) - log_normal_cdf(-30.0 - 1e-9)).abs() < 1e-6);
    }

    #[test]
    fn mode_is_stationary() {
        let (x, y) = data(200, 0);
        let fit = ProbitConfig::default().fit(x.as_ref(), &y).unwrap();
        let sign: Vec<f64> = y.iter().map(|&l| if l == 1 { 1.0 } else { -1.0 }).collect();
        for j in 0..3 {
            let g: f64 = (0..200)
                .map(|i| {
                    let f: f64 = (0..3).map(|k| fit.mean[k] * x[(i, k)]).sum();
                    sign[i] * inverse_mills(sign[i] * f) * x[(i, j)]
                })
                .sum::<f64>()
                - fit.mean[j];
            assert!(g.abs() < 1e-8, "gradient {j} = {g}");
        }
        assert!((fit.mean[1] - 1.5).abs() < 0.5 && (fit.mean[2] + 1.0).abs() < 0.5, "{:?}", fit.mean);
    }

    /// The predictive Φ(μᵀx/√(1 + xᵀΣx)) is E_{w~N(μ,Σ)}[Φ(wᵀx)]; check it by Monte Carlo.
    #[test]
    fn predictive_matches_monte_carlo() {
        let (x, y) = data(40, 1);
        let fit = ProbitConfig::default().with_prior_variance(2.0).fit(x.as_ref(), &y).unwrap();
        let test = Mat::from_fn(4, 3, |i, j| if j == 0 { 1.0 } else { [-2.0, -0.5, 0.7, 2.5][i] * (j as f64 - 1.5) });
        let p = fit.predict_proba(test.as_ref()).unwrap();
        let chol = Cholesky::new(fit.covariance.as_ref(), "test").unwrap();
        let l = chol.l();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let draws = 200_000;
        let mut acc = [0.0; 4];
        for _ in 0..draws {
            let e: Vec<f64> = (0..3).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
            let w: Vec<f64> = (0..3).map(|i| fit.mean[i] + (0..=i).map(|k| l[(i, k)] * e[k]).sum::<f64>()).collect();
            for (t, a) in acc.iter_mut().enumerate() {
                *a += normal_cdf((0..3).map(|j| w[j] * test[(t, j)]).sum());
            }
        }
        for t in 0..4 {
            let mc = acc[t] / draws as f64;
            // Φ(·) ∈ [0, 1], so the Monte-Carlo standard error is below 0.5/√draws ≈ 0.0011.
            assert!((mc - p[t]).abs() < 0.0045, "point {t}: closed form {} vs Monte Carlo {mc}", p[t]);
        }
    }
}
