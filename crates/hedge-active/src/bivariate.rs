//! The bivariate standard normal CDF Φ₂(h, k; ρ) = P(X ≤ h, Y ≤ k), corr(X, Y) = ρ, through
//! Plackett's identity ∂Φ₂/∂ρ = φ₂: Φ₂(h, k; ρ) − Φ(h)Φ(k) = (1/2π) ∫₀^{asin ρ}
//! exp(−(h² − 2hk sin θ + k²)/(2cos²θ)) dθ, integrated by composite Gauss–Legendre. Computing
//! the difference directly avoids the cancellation of Φ₂ − Φ(h)Φ(k) for small ρ, which is the
//! quantity the probit inner product needs.

use hedge_bayes::probit::normal_cdf;
pub use hedge_eval::gauss_legendre;

/// The 20-node rule of [`bvn_minus_product`], computed once: the probit Fisher inner products
/// call it n²/2 times per acquisition round.
fn legendre_20() -> &'static (Vec<f64>, Vec<f64>) {
    static RULE: std::sync::OnceLock<(Vec<f64>, Vec<f64>)> = std::sync::OnceLock::new();
    RULE.get_or_init(|| gauss_legendre(20))
}

/// Φ₂(h, k; ρ) − Φ(h)Φ(k), i.e. Cov[1{X ≤ h}, 1{Y ≤ k}], for |ρ| < 1.
pub fn bvn_minus_product(h: f64, k: f64, rho: f64) -> f64 {
    let rho = rho.clamp(-1.0 + 1e-15, 1.0 - 1e-15);
    let end = rho.asin();
    let (nodes, weights) = legendre_20();
    let panels = 8;
    let width = end / panels as f64;
    let mut total = 0.0;
    for p in 0..panels {
        let mid = (p as f64 + 0.5) * width;
        for (x, w) in nodes.iter().zip(weights) {
            let theta = mid + 0.5 * width * x;
            let (s, c) = theta.sin_cos();
            total += w * (-(h * h - 2.0 * h * k * s + k * k) / (2.0 * c * c)).exp();
        }
    }
    total * 0.5 * width / (2.0 * std::f64::consts::PI)
}

/// Φ₂(h, k; ρ).
pub fn bvn_cdf(h: f64, k: f64, rho: f64) -> f64 {
    normal_cdf(h) * normal_cdf(k) + bvn_minus_product(h, k, rho)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legendre_rule_integrates_polynomials_exactly() {
        let (x, w) = gauss_legendre(20);
        for degree in [0, 2, 10, 38] {
            let q: f64 = x.iter().zip(&w).map(|(xi, wi)| wi * xi.powi(degree)).sum();
            assert!((q - 2.0 / (degree as f64 + 1.0)).abs() < 1e-13, "x^{degree}: {q}");
        }
    }

    /// SciPy 1.17.1, by Owen's T (agrees with `multivariate_normal.cdf` to 1e-16):
    /// Φ₂ = (Φ(h) + Φ(k))/2 − T(h, (k − ρh)/(h√(1−ρ²))) − T(k, (h − ρk)/(k√(1−ρ²))) − β.
    #[test]
    fn matches_scipy() {
        let cases = [
            (0.3, -0.5, 0.4, 0.24357588920110462, 0.052927019848251045),
            (1.2, 0.8, -0.7, 0.6735757145938706, -0.023877347450704578),
            (-1.0, -1.5, 0.95, 0.06541142861743018, 0.05481211513566955),
            (0.5, 0.5, 0.999, 0.6851807862330975, 0.20706045088198144),
            (2.0, -2.0, 0.0, 0.022232563444519737, 0.0),
            (-0.2, 0.1, -0.99, 0.007886372583918111, -0.21924094852487966),
        ];
        for (h, k, r, cdf, diff) in cases {
            assert!(
                (bvn_minus_product(h, k, r) - diff).abs() < 1e-12,
                "({h}, {k}, {r}): {}",
                bvn_minus_product(h, k, r)
            );
            assert!((bvn_cdf(h, k, r) - cdf).abs() < 1e-9, "({h}, {k}, {r}): {}", bvn_cdf(h, k, r));
        }
    }
}
