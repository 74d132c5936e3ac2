//! Bayesian linear regression on features Φ: (a) a Gaussian prior w ~ N(0, α⁻¹I) with known
//! noise σ², and (b) the normal–inverse-gamma prior w | σ² ~ N(0, σ²λ⁻¹I), σ² ~ IG(a₀, b₀) with
//! a Student-t predictive — the form ACS-FW's experiments use (λ = 1:
//! Σ̃ = (ΦᵀΦ + I)⁻¹, ã = a₀ + N/2, b̃ = b₀ + ½(yᵀy − μᵀΣ̃⁻¹μ)).

use faer::{Mat, MatRef};
use rand::Rng;
use rand_distr::{Distribution, Gamma, StandardNormal};
use serde::{Deserialize, Serialize};
use statrs::function::gamma::ln_gamma;

use crate::error::{check_positive, invalid, BayesError, Result};
use crate::linalg::{self, Cholesky};
use crate::model::Prediction;
use hedge_run::ParamGuard;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

fn check_data(phi: MatRef<'_, f64>, y: &[f64]) -> Result<()> {
    linalg::check_rows(phi, y.len(), "features vs targets")?;
    linalg::check_finite_matrix(phi, "features")?;
    linalg::check_finite_slice(y, "targets")?;
    if y.is_empty() {
        return Err(BayesError::NotEnoughData { what: "Bayesian linear regression".into(), found: 0, needed: 1 });
    }
    Ok(())
}

/// Posterior precision-weighted solve: returns (Cholesky of A, A⁻¹b) for A = ΦᵀΦ·scale + prior·I.
fn posterior_system(
    phi: MatRef<'_, f64>,
    y: &[f64],
    data_weight: f64,
    prior_precision: f64,
) -> Result<(Cholesky, Mat<f64>)> {
    let d = phi.ncols();
    let mut a = phi.transpose() * phi;
    for j in 0..d {
        for i in 0..d {
            a[(i, j)] *= data_weight;
        }
        a[(j, j)] += prior_precision;
    }
    let chol = Cholesky::new(a.as_ref(), "the posterior precision matrix")?;
    let rhs = phi.transpose() * linalg::column(y);
    let mut rhs = rhs;
    for i in 0..d {
        rhs[(i, 0)] *= data_weight;
    }
    let mean = chol.solve(rhs.as_ref());
    Ok((chol, mean))
}

/// Gaussian prior N(0, α⁻¹I) on the weights, known noise variance σ².
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BayesLinearConfig {
    /// α, the prior precision of each weight.
    pub prior_precision: f64,
    /// σ², the known noise variance.
    pub noise_variance: f64,
}

impl Default for BayesLinearConfig {
    fn default() -> Self {
        Self { prior_precision: 1.0, noise_variance: 1.0 }
    }
}

impl BayesLinearConfig {
    pub fn with_prior_precision(mut self, v: f64) -> Self {
        self.prior_precision = v;
        self
    }
    pub fn with_noise_variance(mut self, v: f64) -> Self {
        self.noise_variance = v;
        self
    }
    /// Posterior N(m, S) with S⁻¹ = αI + ΦᵀΦ/σ², m = SΦᵀy/σ².
    ///
    /// # Shapes
    /// `phi`: `[n, d]`, `y`: `[n]`.
    pub fn fit(&self, phi: MatRef<'_, f64>, y: &[f64]) -> Result<FittedBayesLinear> {
        self.check_ref()?;
        check_data(phi, y)?;
        let (n, d) = (phi.nrows() as f64, phi.ncols() as f64);
        let beta = 1.0 / self.noise_variance;
        let (chol, mean) = posterior_system(phi, y, beta, self.prior_precision)?;
        let fitted = phi * &mean;
        let residual: f64 = (0..y.len()).map(|i| (y[i] - fitted[(i, 0)]).powi(2)).sum();
        let mtm: f64 = (0..mean.nrows()).map(|i| mean[(i, 0)].powi(2)).sum();
        // Bishop (3.86).
        let log_evidence = 0.5 * d * self.prior_precision.ln() + 0.5 * n * beta.ln()
            - 0.5 * beta * residual
            - 0.5 * self.prior_precision * mtm
            - 0.5 * chol.log_det()
            - 0.5 * n * LN_2PI;
        Ok(FittedBayesLinear {
            mean: linalg::to_vec(mean.as_ref()),
            covariance: chol.inverse(),
            noise_variance: self.noise_variance,
            log_evidence,
        })
    }
}

impl ParamGuard for BayesLinearConfig {
    type Error = BayesError;

    fn check_ref(&self) -> Result<()> {
        check_positive("prior_precision", self.prior_precision)?;
        check_positive("noise_variance", self.noise_variance)
    }
}

/// Posterior of [`BayesLinearConfig`].
#[derive(Debug, Clone)]
pub struct FittedBayesLinear {
    /// Posterior mean m.
    pub mean: Vec<f64>,
    /// Posterior covariance S.
    pub covariance: Mat<f64>,
    pub noise_variance: f64,
    /// log p(y | Φ, α, σ²).
    pub log_evidence: f64,
}

impl FittedBayesLinear {
    /// Gaussian predictive: mean φᵀm, latent variance φᵀSφ, and the known noise variance.
    pub fn predict(&self, phi: MatRef<'_, f64>) -> Result<Prediction> {
        let (mean, latent_variance) = predict_linear(phi, &self.mean, &self.covariance, 1.0)?;
        Ok(Prediction { mean, latent_variance, noise_variance: self.noise_variance, degrees_of_freedom: None })
    }
}

fn predict_linear(phi: MatRef<'_, f64>, mean: &[f64], cov: &Mat<f64>, scale: f64) -> Result<(Vec<f64>, Vec<f64>)> {
    if phi.ncols() != mean.len() {
        return Err(BayesError::ShapeMismatch {
            what: "test features".into(),
            expected: format!("{} columns", mean.len()),
            found: format!("{} columns", phi.ncols()),
        });
    }
    let m = phi * linalg::column(mean);
    let ps = phi * cov;
    let var = linalg::column_dots(ps.transpose(), phi.transpose());
    Ok(((0..phi.nrows()).map(|i| m[(i, 0)]).collect(), var.iter().map(|v| v * scale).collect()))
}

/// Normal–inverse-gamma prior: w | σ² ~ N(0, σ²λ⁻¹I), σ² ~ IG(a₀, b₀).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NigLinearConfig {
    /// λ, the prior precision of the weights relative to σ² (1 in ACS-FW).
    pub prior_precision: f64,
    /// a₀, shape of the inverse-gamma prior on σ².
    pub a0: f64,
    /// b₀, scale of the inverse-gamma prior on σ².
    pub b0: f64,
}

impl Default for NigLinearConfig {
    fn default() -> Self {
        Self { prior_precision: 1.0, a0: 1.0, b0: 1.0 }
    }
}

impl NigLinearConfig {
    pub fn with_prior_precision(mut self, v: f64) -> Self {
        self.prior_precision = v;
        self
    }
    pub fn with_prior(mut self, a0: f64, b0: f64) -> Self {
        self.a0 = a0;
        self.b0 = b0;
        self
    }
    /// Posterior NIG(μ, Σ̃, ã, b̃).
    ///
    /// # Shapes
    /// `phi`: `[n, d]`, `y`: `[n]`.
    pub fn fit(&self, phi: MatRef<'_, f64>, y: &[f64]) -> Result<FittedNigLinear> {
        self.check_ref()?;
        check_data(phi, y)?;
        let (n, d) = (phi.nrows() as f64, phi.ncols() as f64);
        let (chol, mean) = posterior_system(phi, y, 1.0, self.prior_precision)?;
        let yty: f64 = y.iter().map(|v| v * v).sum();
        // μᵀΣ̃⁻¹μ = μᵀΦᵀy since Σ̃⁻¹μ = Φᵀy.
        let phity = phi.transpose() * linalg::column(y);
        let quad: f64 = (0..mean.nrows()).map(|i| mean[(i, 0)] * phity[(i, 0)]).sum();
        let a = self.a0 + 0.5 * n;
        let b = self.b0 + 0.5 * (yty - quad);
        let log_evidence = -0.5 * chol.log_det() + 0.5 * d * self.prior_precision.ln() + self.a0 * self.b0.ln()
            - a * b.ln()
            + ln_gamma(a)
            - ln_gamma(self.a0)
            - 0.5 * n * LN_2PI;
        Ok(FittedNigLinear { mean: linalg::to_vec(mean.as_ref()), covariance: chol.inverse(), a, b, log_evidence })
    }
}

impl ParamGuard for NigLinearConfig {
    type Error = BayesError;

    fn check_ref(&self) -> Result<()> {
        check_positive("prior_precision", self.prior_precision)?;
        check_positive("a0", self.a0)?;
        check_positive("b0", self.b0)
    }
}

/// Posterior of [`NigLinearConfig`].
#[derive(Debug, Clone)]
pub struct FittedNigLinear {
    /// μ.
    pub mean: Vec<f64>,
    /// Σ̃ (the weight covariance is σ²Σ̃).
    pub covariance: Mat<f64>,
    /// ã.
    pub a: f64,
    /// b̃.
    pub b: f64,
    /// log p(y | Φ) with w and σ² integrated out.
    pub log_evidence: f64,
}

impl FittedNigLinear {
    /// p(y* | φ*) = St(y*; φ*ᵀμ, (b̃/ã)(1 + φ*ᵀΣ̃φ*), 2ã): a Student-t [`Prediction`] whose latent
    /// part of the squared scale is (b̃/ã) φ*ᵀΣ̃φ* and whose noise part is b̃/ã.
    pub fn predict(&self, phi: MatRef<'_, f64>) -> Result<Prediction> {
        let (mean, leverage) = predict_linear(phi, &self.mean, &self.covariance, 1.0)?;
        let ratio = self.b / self.a;
        Ok(Prediction {
            mean,
            latent_variance: leverage.iter().map(|v| ratio * v).collect(),
            noise_variance: ratio,
            degrees_of_freedom: Some(2.0 * self.a),
        })
    }

    /// `E[σ²] = b̃/(ã − 1)` (infinite when ã ≤ 1).
    pub fn expected_noise_variance(&self) -> f64 {
        if self.a > 1.0 {
            self.b / (self.a - 1.0)
        } else {
            f64::INFINITY
        }
    }

    /// `count` joint draws (w, σ²) from the posterior: σ² ~ IG(ã, b̃), w ~ N(μ, σ²Σ̃).
    pub fn sample(&self, count: usize, rng: &mut impl Rng) -> Result<Vec<(Vec<f64>, f64)>> {
        let chol = Cholesky::new(self.covariance.as_ref(), "the posterior covariance Σ̃")?;
        let l = chol.l();
        let d = self.mean.len();
        let gamma = Gamma::new(self.a, 1.0 / self.b).map_err(|e| invalid("a", self.a, e.to_string()))?;
        Ok((0..count)
            .map(|_| {
                let sigma2 = 1.0 / gamma.sample(rng);
                let e: Vec<f64> = (0..d).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
                let w = (0..d)
                    .map(|i| self.mean[i] + sigma2.sqrt() * (0..=i).map(|k| l[(i, k)] * e[k]).sum::<f64>())
                    .collect();
                (w, sigma2)
            })
            .collect())
    }
}

crate::model::fit_through!(BayesLinearConfig, [f64], FittedBayesLinear, predict);
crate::model::fit_through!(NigLinearConfig, [f64], FittedNigLinear, predict);

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy 2.4.6 / scipy 1.17.1:
    /// ```python
    /// i = np.arange(8.0)
    /// Phi = np.stack([np.ones(8), np.sin(i), 0.3 * i], axis=1)
    /// y = np.array([0.5, 1.2, -0.3, 0.8, 2.0, 1.1, 0.4, 1.9])
    /// alpha, sigma2 = 0.5, 0.2
    /// S = np.linalg.inv(alpha * np.eye(3) + Phi.T @ Phi / sigma2); m = S @ Phi.T @ y / sigma2
    /// ev = multivariate_normal(np.zeros(8), sigma2 * np.eye(8) + Phi @ Phi.T / alpha).logpdf(y)
    /// xt = np.array([1.0, 0.5, 2.0]); print(xt @ m, xt @ S @ xt)
    /// ```
    #[test]
    fn known_noise_posterior_matches_numpy() {
        let phi = Mat::from_fn(8, 3, |i, j| match j {
            0 => 1.0,
            1 => (i as f64).sin(),
            _ => 0.3 * i as f64,
        });
        let y = [0.5, 1.2, -0.3, 0.8, 2.0, 1.1, 0.4, 1.9];
        let fit = BayesLinearConfig::default()
            .with_prior_precision(0.5)
            .with_noise_variance(0.2)
            .fit(phi.as_ref(), &y)
            .unwrap();
        let mean = [0.5414044733480086, -0.18234404789599679, 0.39471352821582023];
        let cov = [
            [0.08642522534176268, -0.02174221829218543, -0.05809582701630697],
            [-0.02174221829218544, 0.0605141557397233, 0.01697658312861401],
            [-0.05809582701630698, 0.01697658312861401, 0.0549018700912575],
        ];
        for (i, row) in cov.iter().enumerate() {
            assert!((fit.mean[i] - mean[i]).abs() < 1e-12);
            for (j, c) in row.iter().enumerate() {
                assert!((fit.covariance[(i, j)] - c).abs() < 1e-12);
            }
        }
        assert!((fit.log_evidence - -15.118696510447139).abs() < 1e-10, "{}", fit.log_evidence);
        let p = fit.predict(Mat::from_fn(1, 3, |_, j| [1.0, 0.5, 2.0][j]).as_ref()).unwrap();
        let (m, v) = (p.mean, p.latent_variance);
        assert!((m[0] - 1.2396595058316506).abs() < 1e-12 && (v[0] - 0.1009888845415382).abs() < 1e-12);
    }

    /// The NIG evidence against a direct evaluation of the multivariate Student-t density
    /// y ~ St_{2a₀}(0, (b₀/a₀)(I + ΦΦᵀ/λ)).
    #[test]
    fn nig_evidence_is_the_multivariate_student_t_density() {
        let n = 9;
        let phi = Mat::from_fn(n, 2, |i, j| if j == 0 { 1.0 } else { (0.7 * i as f64).cos() });
        let y: Vec<f64> = (0..n).map(|i| 0.4 + (i as f64 * 1.3).sin()).collect();
        for (lambda, a0, b0) in [(1.0, 1.0, 1.0), (0.3, 2.5, 0.7), (4.0, 0.6, 3.0)] {
            let fit = NigLinearConfig::default()
                .with_prior_precision(lambda)
                .with_prior(a0, b0)
                .fit(phi.as_ref(), &y)
                .unwrap();
            let mut sigma = &phi * phi.transpose();
            for j in 0..n {
                for i in 0..n {
                    sigma[(i, j)] = (b0 / a0) * (sigma[(i, j)] / lambda + if i == j { 1.0 } else { 0.0 });
                }
            }
            let chol = Cholesky::new(sigma.as_ref(), "test").unwrap();
            let sy = chol.solve(linalg::column(&y).as_ref());
            let maha: f64 = (0..n).map(|i| y[i] * sy[(i, 0)]).sum();
            let nu = 2.0 * a0;
            let nf = n as f64;
            let direct = ln_gamma((nu + nf) / 2.0)
                - ln_gamma(nu / 2.0)
                - 0.5 * nf * (nu * std::f64::consts::PI).ln()
                - 0.5 * chol.log_det()
                - 0.5 * (nu + nf) * (1.0 + maha / nu).ln();
            assert!((fit.log_evidence - direct).abs() < 1e-10, "λ={lambda}: {} vs {direct}", fit.log_evidence);
        }
    }

    #[test]
    fn nig_samples_have_the_posterior_moments() {
        use rand::SeedableRng;
        let n = 30;
        let phi = Mat::from_fn(n, 2, |i, j| if j == 0 { 1.0 } else { i as f64 / 10.0 });
        let y: Vec<f64> = (0..n).map(|i| 1.0 + 0.5 * i as f64 / 10.0 + 0.3 * (i as f64 * 2.1).sin()).collect();
        let fit = NigLinearConfig::default().with_prior(3.0, 1.0).fit(phi.as_ref(), &y).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let draws = fit.sample(40_000, &mut rng).unwrap();
        let m0 = draws.iter().map(|(w, _)| w[0]).sum::<f64>() / draws.len() as f64;
        let s2 = draws.iter().map(|(_, s)| s).sum::<f64>() / draws.len() as f64;
        assert!((m0 - fit.mean[0]).abs() < 0.01, "{m0} vs {}", fit.mean[0]);
        assert!((s2 - fit.expected_noise_variance()).abs() < 0.01 * fit.expected_noise_variance(), "{s2}");
    }

    #[test]
    fn rejects_bad_input() {
        let phi = Mat::from_fn(3, 2, |i, j| (i + j) as f64);
        assert!(BayesLinearConfig::default().with_noise_variance(0.0).fit(phi.as_ref(), &[1.0, 2.0, 3.0]).is_err());
        let e = NigLinearConfig::default().fit(phi.as_ref(), &[1.0, 2.0]).unwrap_err();
        assert!(e.to_string().contains("expected 2 rows"), "{e}");
        let e = NigLinearConfig::default().fit(phi.as_ref(), &[1.0, f64::NAN, 3.0]).unwrap_err();
        assert!(e.to_string().contains("index 1"), "{e}");
    }
}
