//! Moments of weighted rows and the optimal-transport geometry of Gaussians that quadratic
//! concept erasure needs: shrunk covariances, symmetric matrix powers, the Monge map between two
//! Gaussians and the Wasserstein barycentre of several.
//!
//! For covariances A (source) and B (target) the optimal transport map of the 2-Wasserstein
//! distance is linear, x ↦ T x with T = A^{−1/2} (A^{1/2} B A^{1/2})^{1/2} A^{−1/2}, symmetric
//! positive definite and T A T = B. The barycentre S of covariances Σ_k with weights π_k is the
//! fixed point of S = Σ_k π_k (S^{1/2} Σ_k S^{1/2})^{1/2} (Agueh & Carlier 2011), reached by
//! iterating S ← S^{−1/2} (Σ_k π_k (S^{1/2} Σ_k S^{1/2})^{1/2})² S^{−1/2} (Álvarez-Esteban et
//! al. 2016).

use faer::{Mat, Side};

use crate::error::{invalid, Result};

/// The weighted mean `[d]` and covariance `d × d` of the rows of `x` (`n × d`) under weights `w`
/// that sum to 1.
pub fn weighted_moments(x: &Mat<f64>, w: &[f64]) -> (Vec<f64>, Mat<f64>) {
    let (n, d) = (x.nrows(), x.ncols());
    let mean: Vec<f64> = (0..d).map(|j| (0..n).map(|i| w[i] * x[(i, j)]).sum::<f64>()).collect();
    let centred = Mat::from_fn(n, d, |i, j| x[(i, j)] - mean[j]);
    let weighted = Mat::from_fn(n, d, |i, j| w[i] * centred[(i, j)]);
    (mean, centred.transpose() * &weighted)
}

/// The number of equally weighted rows that would give the same variance of a mean:
/// 1 / Σ wᵢ² for weights summing to 1.
pub fn effective_rows(w: &[f64]) -> f64 {
    1.0 / w.iter().map(|v| v * v).sum::<f64>()
}

/// Shrinks `sigma` in place toward a scaled identity by oracle-approximating shrinkage (Chen et
/// al. 2010), the LEACE authors' default: with many dimensions and few rows the sample
/// covariance's small eigenvalues are noise, and whitening by them fits the training rows only.
/// The result is full rank.
pub fn oas_shrink(sigma: &mut Mat<f64>, effective_n: f64) {
    let d = sigma.nrows();
    let trace: f64 = (0..d).map(|i| sigma[(i, i)]).sum();
    let trace_sq: f64 = (0..d).flat_map(|i| (0..d).map(move |j| (i, j))).map(|(i, j)| sigma[(i, j)].powi(2)).sum();
    let dims = d as f64;
    let denominator = (effective_n + 1.0 - 2.0 / dims) * (trace_sq - trace * trace / dims);
    let shrinkage = if denominator > 0.0 {
        (((1.0 - 2.0 / dims) * trace_sq + trace * trace) / denominator).clamp(0.0, 1.0)
    } else {
        0.0
    };
    for i in 0..d {
        for j in 0..d {
            sigma[(i, j)] *= 1.0 - shrinkage;
        }
        sigma[(i, i)] += shrinkage * trace / dims;
    }
}

/// M^power for a symmetric positive semi-definite M, by its eigendecomposition; eigenvalues
/// below 10⁻¹² of the largest count as that floor (so negative powers stay finite).
pub fn symmetric_power(m: &Mat<f64>, power: f64) -> Result<Mat<f64>> {
    let d = m.nrows();
    let eig = m
        .self_adjoint_eigen(Side::Lower)
        .map_err(|e| invalid("covariance", format!("{e:?}"), "eigendecomposition failed"))?;
    let (v, lambda) = (eig.U(), eig.S().column_vector());
    let top = lambda.iter().copied().fold(0.0, f64::max);
    if !(top > 0.0 && top.is_finite()) {
        return Err(invalid("covariance", top, "needs a positive, finite largest eigenvalue"));
    }
    let floor = top * 1e-12;
    let scaled = Mat::from_fn(d, d, |r, k| v[(r, k)] * lambda[k].max(floor).powf(power));
    Ok(scaled * v.transpose())
}

/// The symmetric part (M + Mᵀ)/2: products of symmetric matrices drift from symmetry by
/// rounding, and the eigensolver reads one triangle only.
fn symmetrised(m: &Mat<f64>) -> Mat<f64> {
    Mat::from_fn(m.nrows(), m.ncols(), |i, j| 0.5 * (m[(i, j)] + m[(j, i)]))
}

/// The optimal transport map T (`d × d`, symmetric) from N(·, `source`) to N(·, `target`):
/// T = A^{−1/2} (A^{1/2} B A^{1/2})^{1/2} A^{−1/2}, so that T A T = B.
pub fn transport_map(source: &Mat<f64>, target: &Mat<f64>) -> Result<Mat<f64>> {
    let root = symmetric_power(source, 0.5)?;
    let inverse_root = symmetric_power(source, -0.5)?;
    let middle = symmetric_power(&symmetrised(&(&root * target * &root)), 0.5)?;
    Ok(symmetrised(&(&inverse_root * &middle * &inverse_root)))
}

/// The 2-Wasserstein barycentre of centred Gaussians with covariances `covariances` and weights
/// `weights` (summing to 1), by the fixed-point iteration of the module's docs from the weighted
/// mean covariance, until the relative change is below 10⁻¹⁰ (at most 200 iterations).
pub fn barycentre(covariances: &[Mat<f64>], weights: &[f64]) -> Result<Mat<f64>> {
    let d = covariances.first().map_or(0, |c| c.nrows());
    let mut s = Mat::<f64>::zeros(d, d);
    for (c, &w) in covariances.iter().zip(weights) {
        s += c * faer::Scale(w);
    }
    for _ in 0..200 {
        let root = symmetric_power(&s, 0.5)?;
        let inverse_root = symmetric_power(&s, -0.5)?;
        let mut mixed = Mat::<f64>::zeros(d, d);
        for (c, &w) in covariances.iter().zip(weights) {
            mixed += symmetric_power(&symmetrised(&(&root * c * &root)), 0.5)? * faer::Scale(w);
        }
        let next = symmetrised(&(&inverse_root * &mixed * &mixed * &inverse_root));
        let change = (&next - &s).norm_l2() / s.norm_l2().max(f64::MIN_POSITIVE);
        s = next;
        if change < 1e-10 {
            break;
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(rows: &[&[f64]]) -> Mat<f64> {
        Mat::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
    }

    fn close(a: &Mat<f64>, b: &Mat<f64>, tol: f64) -> bool {
        (a - b).norm_l2() <= tol * b.norm_l2().max(1.0)
    }

    /// Commuting (diagonal) covariances: the barycentre's square roots are the weighted mean of
    /// the square roots, diag(((1 + 2)/2)², ((2 + 1)/2)²) = 2.25 · I for diag(1, 4), diag(4, 1).
    #[test]
    fn the_barycentre_of_diagonal_covariances_averages_their_roots() {
        let (a, b) = (mat(&[&[1.0, 0.0], &[0.0, 4.0]]), mat(&[&[4.0, 0.0], &[0.0, 1.0]]));
        let s = barycentre(&[a.clone(), b.clone()], &[0.5, 0.5]).unwrap();
        assert!(close(&s, &mat(&[&[2.25, 0.0], &[0.0, 2.25]]), 1e-9), "{s:?}");
        // Unequal weights in one dimension: (0.25·1 + 0.75·3)² = 6.25.
        let s = barycentre(&[mat(&[&[1.0]]), mat(&[&[9.0]])], &[0.25, 0.75]).unwrap();
        assert!((s[(0, 0)] - 6.25).abs() < 1e-9, "{s:?}");
    }

    /// Non-commuting covariances: the map pushes the source onto the target (T A T = B) and is
    /// symmetric; the barycentre satisfies its own fixed-point equation.
    #[test]
    fn transport_maps_and_barycentres_satisfy_their_equations() {
        let a = mat(&[&[2.0, 1.0, 0.2], &[1.0, 2.0, 0.3], &[0.2, 0.3, 1.0]]);
        let b = mat(&[&[1.0, 0.0, -0.4], &[0.0, 3.0, 0.5], &[-0.4, 0.5, 2.0]]);
        let t = transport_map(&a, &b).unwrap();
        assert!(close(&(&t * &a * &t), &b, 1e-10));
        assert!(close(&t, &t.transpose().to_owned(), 1e-12));
        let weights = [0.3, 0.7];
        let s = barycentre(&[a.clone(), b.clone()], &weights).unwrap();
        let root = symmetric_power(&s, 0.5).unwrap();
        let mut mixed = Mat::<f64>::zeros(3, 3);
        for (c, w) in [(&a, weights[0]), (&b, weights[1])] {
            mixed += symmetric_power(&symmetrised(&(&root * c * &root)), 0.5).unwrap() * faer::Scale(w);
        }
        assert!(close(&mixed, &s, 1e-8), "S = Σ π_k (S^½ Σ_k S^½)^½");
    }

    #[test]
    fn shrinkage_keeps_the_trace_and_refuses_nothing_finite() {
        let mut s = mat(&[&[4.0, 1.9], &[1.9, 1.0]]);
        oas_shrink(&mut s, 5.0);
        assert!((s[(0, 0)] + s[(1, 1)] - 5.0).abs() < 1e-12);
        assert!(s[(0, 1)].abs() < 1.9, "pulled toward the identity");
        assert!(symmetric_power(&Mat::<f64>::zeros(2, 2), 0.5).is_err());
    }
}
