//! Closed-form weighted Fisher inner products ⟨L_n, L_m⟩ between pool points (Pinsler et al.
//! 2019, Section 4 and Appendix): the Gram matrices ACS-FW uses for models where they exist.

use faer::{Mat, MatRef};
use hedge_bayes::linear::{FittedBayesLinear, FittedNigLinear};
use hedge_bayes::probit::FittedProbit;

use crate::bivariate::bvn_minus_product;
use crate::error::{ActiveError, Result};
use crate::frank_wolfe::GramMatrix;

fn check_columns(x: MatRef<'_, f64>, d: usize, what: &str) -> Result<()> {
    if x.ncols() != d {
        return Err(ActiveError::ShapeMismatch {
            what: what.into(),
            expected: format!("{d} columns (the model's features)"),
            found: format!("{} columns", x.ncols()),
        });
    }
    Ok(())
}

/// Elementwise product of two symmetric `[n, n]` matrices, scaled.
fn hadamard_scaled(a: &Mat<f64>, b: &Mat<f64>, scale: f64) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| scale * a[(i, j)] * b[(i, j)])
}

/// Bayesian linear regression with known noise σ₀²: ⟨L_n, L_m⟩ = (xₙᵀxₘ/σ₀⁴) xₙᵀΣ_θxₘ.
///
/// # Shapes
/// `x`: `[n, d]` pool features → `[n, n]`.
pub fn linear_known_noise(x: MatRef<'_, f64>, posterior: &FittedBayesLinear) -> Result<GramMatrix> {
    check_columns(x, posterior.mean.len(), "pool features")?;
    let xx = x * x.transpose();
    let xsx = x * &posterior.covariance * x.transpose();
    Ok(GramMatrix(hadamard_scaled(&xx, &xsx, 1.0 / posterior.noise_variance.powi(2))))
}

/// Normal–inverse-gamma linear regression: ⟨L_n, L_m⟩ = (ã/b̃)(φₙᵀΣ̃φₘ)(φₙᵀφₘ).
///
/// # Shapes
/// `phi`: `[n, d]` pool features → `[n, n]`.
pub fn linear_nig(phi: MatRef<'_, f64>, posterior: &FittedNigLinear) -> Result<GramMatrix> {
    check_columns(phi, posterior.mean.len(), "pool features")?;
    let pp = phi * phi.transpose();
    let psp = phi * &posterior.covariance * phi.transpose();
    Ok(GramMatrix(hadamard_scaled(&pp, &psp, posterior.a / posterior.b)))
}

/// Probit regression with posterior N(μ, Σ): ⟨L_n, L_m⟩ = xₙᵀxₘ [Φ₂(ζₙ, ζₘ; ρₙₘ) − Φ(ζₙ)Φ(ζₘ)],
/// ζₙ = xₙᵀμ/√(1 + xₙᵀΣxₙ), ρₙₘ = xₙᵀΣxₘ/√((1 + xₙᵀΣxₙ)(1 + xₘᵀΣxₘ)). The bracket is
/// Cov[Φ(xₙᵀθ), Φ(xₘᵀθ)] under θ ~ N(μ, Σ).
///
/// # Shapes
/// `x`: `[n, d]` pool inputs → `[n, n]`.
pub fn probit(x: MatRef<'_, f64>, posterior: &FittedProbit) -> Result<GramMatrix> {
    check_columns(x, posterior.mean.len(), "pool inputs")?;
    let n = x.nrows();
    let xx = x * x.transpose();
    let xsx = x * &posterior.covariance * x.transpose();
    let mean = x * Mat::from_fn(posterior.mean.len(), 1, |i, _| posterior.mean[i]);
    let scale: Vec<f64> = (0..n).map(|i| (1.0 + xsx[(i, i)]).sqrt()).collect();
    let zeta: Vec<f64> = (0..n).map(|i| mean[(i, 0)] / scale[i]).collect();
    let mut k = Mat::zeros(n, n);
    for j in 0..n {
        for i in j..n {
            let rho = xsx[(i, j)] / (scale[i] * scale[j]);
            let v = xx[(i, j)] * bvn_minus_product(zeta[i], zeta[j], rho);
            k[(i, j)] = v;
            k[(j, i)] = v;
        }
    }
    Ok(GramMatrix(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hedge_bayes::probit::{normal_cdf, ProbitConfig};
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    /// The bracket against a Monte-Carlo estimate of Cov[Φ(xₙᵀθ), Φ(xₘᵀθ)], θ ~ N(μ, Σ).
    #[test]
    fn probit_bracket_is_the_covariance_of_the_predictive_probabilities() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let train = Mat::from_fn(30, 2, |_, j| if j == 0 { 1.0 } else { rng.sample::<f64, _>(StandardNormal) });
        let labels: Vec<u8> =
            (0..30).map(|i| u8::from(train[(i, 1)] + 0.5 * rng.sample::<f64, _>(StandardNormal) > 0.0)).collect();
        let post = ProbitConfig::default().fit(train.as_ref(), &labels).unwrap();
        let pool = Mat::from_fn(4, 2, |i, j| if j == 0 { 1.0 } else { [-1.5, -0.2, 0.4, 2.0][i] });
        let k = probit(pool.as_ref(), &post).unwrap();
        let chol = hedge_bayes::linalg::Cholesky::new(post.covariance.as_ref(), "Σ").unwrap();
        let l = chol.l();
        let draws = 400_000;
        let mut sum = [0.0; 4];
        let mut sum_prod = [[0.0; 4]; 4];
        for _ in 0..draws {
            let e: [f64; 2] = [rng.sample(StandardNormal), rng.sample(StandardNormal)];
            let theta = [post.mean[0] + l[(0, 0)] * e[0], post.mean[1] + l[(1, 0)] * e[0] + l[(1, 1)] * e[1]];
            let p: Vec<f64> = (0..4).map(|i| normal_cdf(theta[0] * pool[(i, 0)] + theta[1] * pool[(i, 1)])).collect();
            for i in 0..4 {
                sum[i] += p[i];
                for j in 0..4 {
                    sum_prod[i][j] += p[i] * p[j];
                }
            }
        }
        for i in 0..4 {
            for j in 0..4 {
                let cov = sum_prod[i][j] / draws as f64 - sum[i] * sum[j] / (draws as f64).powi(2);
                let xx = pool[(i, 0)] * pool[(j, 0)] + pool[(i, 1)] * pool[(j, 1)];
                let closed = k.0[(i, j)] / xx;
                assert!((closed - cov).abs() < 1.5e-3 + 0.02 * cov.abs(), "({i}, {j}): closed {closed} vs MC {cov}");
            }
        }
    }

    /// NIG: the Gram matrix is symmetric positive semi-definite and scales with ã/b̃.
    #[test]
    fn nig_gram_is_positive_semidefinite() {
        let phi = Mat::from_fn(20, 3, |i, j| ((i * 3 + j) as f64 * 0.7).sin());
        let y: Vec<f64> = (0..20).map(|i| (i as f64 * 0.3).cos()).collect();
        let post = hedge_bayes::linear::NigLinearConfig::default().fit(phi.as_ref(), &y).unwrap();
        let k = linear_nig(phi.as_ref(), &post).unwrap().0;
        let v: Vec<f64> = (0..20).map(|i| (i as f64).cos()).collect();
        let q: f64 = (0..20).map(|i| (0..20).map(|j| v[i] * k[(i, j)] * v[j]).sum::<f64>()).sum();
        assert!(q >= -1e-12);
        let direct = post.a / post.b
            * (0..3)
                .map(|a| (0..3).map(|b| phi[(2, a)] * post.covariance[(a, b)] * phi[(5, b)]).sum::<f64>())
                .sum::<f64>()
            * (0..3).map(|a| phi[(2, a)] * phi[(5, a)]).sum::<f64>();
        assert!((k[(2, 5)] - direct).abs() < 1e-12 && (k[(5, 2)] - direct).abs() < 1e-12);
    }

    /// Known noise: the Gram matrix is symmetric positive semi-definite and each entry is
    /// (xₙᵀxₘ/σ₀⁴)·xₙᵀΣxₘ, written out element by element.
    #[test]
    fn known_noise_gram_is_the_closed_form_and_positive_semidefinite() {
        let x = Mat::from_fn(20, 3, |i, j| ((i * 3 + j) as f64 * 0.7).sin());
        let y: Vec<f64> = (0..20).map(|i| (i as f64 * 0.3).cos()).collect();
        let post = hedge_bayes::linear::BayesLinearConfig::default().fit(x.as_ref(), &y).unwrap();
        let k = linear_known_noise(x.as_ref(), &post).unwrap().0;
        let v: Vec<f64> = (0..20).map(|i| (i as f64).cos()).collect();
        let q: f64 = (0..20).map(|i| (0..20).map(|j| v[i] * k[(i, j)] * v[j]).sum::<f64>()).sum();
        assert!(q >= -1e-12);
        let (n, m) = (2, 5);
        let xsx: f64 =
            (0..3).map(|a| (0..3).map(|b| x[(n, a)] * post.covariance[(a, b)] * x[(m, b)]).sum::<f64>()).sum();
        let xx: f64 = (0..3).map(|a| x[(n, a)] * x[(m, a)]).sum();
        let direct = xx / post.noise_variance.powi(2) * xsx;
        assert!((k[(n, m)] - direct).abs() < 1e-12 * direct.abs().max(1.0) && (k[(m, n)] - k[(n, m)]).abs() < 1e-15);
        assert!(linear_known_noise(Mat::<f64>::zeros(2, 4).as_ref(), &post).is_err(), "columns must match");
    }
}
