//! Gauss–Hermite quadrature: ∫ e^{−x²} f(x) dx ≈ Σ_i w_i f(x_i), exact for polynomials of
//! degree < 2n. Used to compute expectations under Gaussians without Monte-Carlo noise:
//! E_{x ~ N(m, s²)}[f(x)] = π^{−1/2} Σ_i w_i f(m + √2 s x_i).
//!
//! Gauss–Legendre quadrature: ∫₋₁¹ f(x) dx ≈ Σ_i w_i f(x_i), for smooth integrands on an
//! interval.

use crate::{EvalError, Result};

/// Nodes (ascending) and weights of the `n`-point Gauss–Hermite rule (physicists' weight e^{−x²}).
///
/// Nodes are the roots of H_n, found by Newton's method on the orthonormal Hermite recurrence
/// from the classical asymptotic starting guesses; weights are 2 / H̃_n'(x)².
pub fn gauss_hermite(n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    if n == 0 || n > 200 {
        return Err(EvalError::Undefined(format!("Gauss-Hermite rule of {n} points; use 1 to 200")));
    }
    let pim4 = std::f64::consts::PI.powf(-0.25);
    let mut x = vec![0.0; n];
    let mut w = vec![0.0; n];
    let half = n.div_ceil(2);
    let nf = n as f64;
    let mut z = 0.0f64;
    for i in 0..half {
        z = match i {
            0 => (2.0 * nf + 1.0).sqrt() - 1.85575 * (2.0 * nf + 1.0).powf(-1.0 / 6.0),
            1 => z - 1.14 * nf.powf(0.426) / z,
            2 => 1.86 * z - 0.86 * x[0],
            3 => 1.91 * z - 0.91 * x[1],
            _ => 2.0 * z - x[i - 2],
        };
        let mut derivative = 0.0;
        for _ in 0..100 {
            // Orthonormal Hermite polynomials: p_j = z √(2/j) p_{j−1} − √((j−1)/j) p_{j−2}.
            let (mut p1, mut p2) = (pim4, 0.0);
            for j in 1..=n {
                let p3 = p2;
                p2 = p1;
                let jf = j as f64;
                p1 = z * (2.0 / jf).sqrt() * p2 - ((jf - 1.0) / jf).sqrt() * p3;
            }
            derivative = (2.0 * nf).sqrt() * p2;
            let step = p1 / derivative;
            z -= step;
            if step.abs() <= 1e-14 * z.abs().max(1.0) {
                break;
            }
        }
        x[i] = z;
        x[n - 1 - i] = -z;
        w[i] = 2.0 / (derivative * derivative);
        w[n - 1 - i] = w[i];
    }
    x.reverse();
    w.reverse();
    Ok((x, w))
}

/// Gauss–Legendre nodes and weights on [−1, 1] (Newton's method on Pₙ).
pub fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut nodes = vec![0.0; n];
    let mut weights = vec![0.0; n];
    for i in 0..n.div_ceil(2) {
        let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        let mut derivative = 1.0;
        for _ in 0..100 {
            // P_n(x) and P_n'(x) by the three-term recurrence.
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=n {
                let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                p0 = p1;
                p1 = p2;
            }
            let pn = if n == 0 {
                1.0
            } else if n == 1 {
                x
            } else {
                p1
            };
            let pn_1 = if n == 1 { 1.0 } else { p0 };
            derivative = n as f64 * (x * pn - pn_1) / (x * x - 1.0);
            let step = pn / derivative;
            x -= step;
            if step.abs() < 1e-15 {
                break;
            }
        }
        nodes[i] = -x;
        nodes[n - 1 - i] = x;
        let w = 2.0 / ((1.0 - x * x) * derivative * derivative);
        weights[i] = w;
        weights[n - 1 - i] = w;
    }
    (nodes, weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    // NumPy 2.4.6: numpy.polynomial.hermite.hermgauss(5)
    const NUMPY_X5: [f64; 5] = [-2.0201828704560856, -0.9585724646138185, 0.0, 0.9585724646138185, 2.0201828704560856];
    const NUMPY_W5: [f64; 5] =
        [0.019953242059045917, 0.3936193231522411, 0.9453087204829418, 0.3936193231522411, 0.019953242059045917];

    #[test]
    fn five_points_match_numpy() {
        let (x, w) = gauss_hermite(5).unwrap();
        for i in 0..5 {
            assert!((x[i] - NUMPY_X5[i]).abs() < 1e-13, "{x:?}");
            assert!((w[i] - NUMPY_W5[i]).abs() < 1e-13, "{w:?}");
        }
    }

    #[test]
    fn gaussian_moments_are_exact() {
        // E[X^4] = 3 s^4 and E[X^2] = s^2 + m^2 under N(m, s^2).
        for n in [3usize, 8, 20, 64] {
            let (x, w) = gauss_hermite(n).unwrap();
            let expect = |f: &dyn Fn(f64) -> f64, m: f64, s: f64| -> f64 {
                x.iter().zip(&w).map(|(xi, wi)| wi * f(m + std::f64::consts::SQRT_2 * s * xi)).sum::<f64>()
                    / std::f64::consts::PI.sqrt()
            };
            assert!((expect(&|_| 1.0, 0.0, 1.0) - 1.0).abs() < 1e-12, "n = {n}");
            assert!((expect(&|v| v * v, 0.7, 1.3) - (1.69 + 0.49)).abs() < 1e-11, "n = {n}");
            assert!((expect(&|v| v.powi(4), 0.0, 2.0) - 48.0).abs() < 1e-9, "n = {n}");
        }
        assert!(gauss_hermite(0).is_err());
    }
}
