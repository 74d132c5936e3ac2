//! Baseline acquisitions as pure functions over model outputs (scores in, pool indices out),
//! and the random projections that let ACS-FW work with any model that has a likelihood.

use faer::{Mat, MatRef};
use hedge_bayes::linear::FittedNigLinear;
use rand::seq::index::sample;
use rand::Rng;
use statrs::function::gamma::{digamma, ln_gamma};

use crate::error::{invalid, ActiveError, Result};
use crate::frank_wolfe::Projections;

/// `b` pool indices uniformly at random, without replacement (ascending).
pub fn random_batch(pool: usize, b: usize, rng: &mut impl Rng) -> Vec<usize> {
    let mut v = sample(rng, pool, b.min(pool)).into_vec();
    v.sort_unstable();
    v
}

/// Indices of the `b` largest scores (ties to the lower index), ascending.
pub fn top_b(scores: &[f64], b: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
    let mut v: Vec<usize> = order.into_iter().take(b).collect();
    v.sort_unstable();
    v
}

/// Differential entropy of N(μ, σ²): ½ log(2πeσ²).
pub fn gaussian_entropy(variance: f64) -> f64 {
    0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * variance).ln()
}

/// Differential entropy of a Student-t with `dof` degrees of freedom and scale² `scale_squared`.
pub fn student_t_entropy(scale_squared: f64, dof: f64) -> f64 {
    let half = 0.5 * (dof + 1.0);
    half * (digamma(half) - digamma(0.5 * dof)) + 0.5 * (dof).ln() + ln_beta(0.5 * dof, 0.5) + 0.5 * scale_squared.ln()
}

fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// BALD scores I[y; θ | x] = H[E_θ p(y|x, θ)] − E_θ H[p(y|x, θ)] from `samples` posterior draws.
///
/// # Shapes
/// `probabilities`: `[samples, pool, classes]`, row-major → `[pool]`.
pub fn bald(probabilities: &[f64], samples: usize, pool: usize, classes: usize) -> Result<Vec<f64>> {
    if probabilities.len() != samples * pool * classes || samples == 0 {
        return Err(ActiveError::ShapeMismatch {
            what: "BALD probabilities".into(),
            expected: format!("{samples} × {pool} × {classes} values, samples ≥ 1"),
            found: format!("{} values", probabilities.len()),
        });
    }
    let entropy = |p: &mut dyn Iterator<Item = f64>| -p.filter(|&q| q > 0.0).map(|q| q * q.ln()).sum::<f64>();
    Ok((0..pool)
        .map(|n| {
            let at = |s: usize, c: usize| probabilities[(s * pool + n) * classes + c];
            let mean: Vec<f64> =
                (0..classes).map(|c| (0..samples).map(|s| at(s, c)).sum::<f64>() / samples as f64).collect();
            let expected: f64 =
                (0..samples).map(|s| entropy(&mut (0..classes).map(|c| at(s, c)))).sum::<f64>() / samples as f64;
            entropy(&mut mean.into_iter()) - expected
        })
        .collect())
}

/// Predictive entropies of the pool under categorical predictions (MaxEnt for classification).
///
/// # Shapes
/// `probabilities`: `[pool, classes]`, row-major → `[pool]`.
pub fn categorical_entropy(probabilities: &[f64], classes: usize) -> Vec<f64> {
    probabilities.chunks(classes).map(|p| -p.iter().filter(|&&q| q > 0.0).map(|q| q * q.ln()).sum::<f64>()).collect()
}

/// Random projections of L_n(θ) = E_{y ~ p(y|φ_n, D)}[log N(y | φ_nᵀw, σ²)] + H[y_n | φ_n, D] for
/// the normal–inverse-gamma model: L̂_n = J^{-1/2}[L_n(θ₁), …, L_n(θ_J)], θ_j from the posterior.
/// Under the Student-t predictive (mean m_n, variance v_n),
/// E[log N(y | φᵀw, σ²)] = −½ log 2πσ² − (v_n + (m_n − φᵀw)²)/2σ².
///
/// # Shapes
/// `phi`: `[n, d]` pool features → projections `[n, J]`.
pub fn nig_projections(
    phi: MatRef<'_, f64>,
    posterior: &FittedNigLinear,
    j: usize,
    rng: &mut impl Rng,
) -> Result<Projections> {
    if j == 0 {
        return Err(invalid("projections", 0, "need at least one posterior draw"));
    }
    let pred = posterior.predict(phi)?;
    if pred.dof <= 2.0 {
        return Err(invalid("a", posterior.a, "the predictive variance needs 2ã > 2 (more labels or a larger a₀)"));
    }
    let draws = posterior.sample(j, rng)?;
    let n = phi.nrows();
    let var: Vec<f64> = pred.scale_squared.iter().map(|s| s * pred.dof / (pred.dof - 2.0)).collect();
    let entropy: Vec<f64> = pred.scale_squared.iter().map(|&s| student_t_entropy(s, pred.dof)).collect();
    let norm = 1.0 / (j as f64).sqrt();
    let mut out = Mat::zeros(n, j);
    for (k, (w, sigma2)) in draws.iter().enumerate() {
        for i in 0..n {
            let f: f64 = (0..phi.ncols()).map(|c| phi[(i, c)] * w[c]).sum();
            let expected = -0.5 * (2.0 * std::f64::consts::PI * sigma2).ln()
                - (var[i] + (pred.location[i] - f).powi(2)) / (2.0 * sigma2);
            out[(i, k)] = norm * (expected + entropy[i]);
        }
    }
    Ok(Projections(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropies_match_scipy() {
        // scipy.stats.t(df=5, scale=1.7).entropy(), norm(scale=0.8).entropy()
        assert!((student_t_entropy(1.7f64.powi(2), 5.0) - 2.158130923476566).abs() < 1e-10);
        assert!((gaussian_entropy(0.64) - 1.195794981890463).abs() < 1e-12);
    }

    #[test]
    fn bald_is_the_mutual_information() {
        // Three posterior samples for one point (numpy: H(mean) − mean H = 0.13669201952405707).
        let p = [0.7, 0.2, 0.1, 0.1, 0.6, 0.3, 0.4, 0.4, 0.2];
        let s = bald(&p, 3, 1, 3).unwrap();
        assert!((s[0] - 0.13669201952405707).abs() < 1e-12);
        // Samples that agree carry no information about θ.
        let same = [0.5, 0.5, 0.5, 0.5];
        assert!(bald(&same, 2, 1, 2).unwrap()[0].abs() < 1e-15);
        assert!(bald(&p, 2, 1, 3).is_err());
    }

    #[test]
    fn top_b_and_random_batches() {
        assert_eq!(top_b(&[0.1, 0.9, 0.5, 0.9, 0.2], 3), vec![1, 2, 3]);
        assert!((categorical_entropy(&[0.5, 0.5, 1.0, 0.0], 2)[0] - std::f64::consts::LN_2).abs() < 1e-15);
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        let b = random_batch(100, 10, &mut rng);
        assert_eq!(b.len(), 10);
        assert!(b.windows(2).all(|w| w[0] < w[1]));
    }

    /// With many draws the projections' inner products converge to E_θ[L_n(θ) L_m(θ)], and a
    /// point the model is sure about (in the data's span) gets a shorter vector than one far away.
    #[test]
    fn projections_are_finite_and_larger_far_from_the_data() {
        let phi = Mat::from_fn(30, 2, |i, j| if j == 0 { 1.0 } else { i as f64 / 30.0 });
        let y: Vec<f64> = (0..30).map(|i| 0.5 + i as f64 / 30.0).collect();
        let post = hedge_bayes::linear::NigLinearConfig::default().with_prior(2.0, 1.0).fit(phi.as_ref(), &y).unwrap();
        let pool = Mat::from_fn(2, 2, |i, j| if j == 0 { 1.0 } else { [0.5, 8.0][i] });
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        let p = nig_projections(pool.as_ref(), &post, 2000, &mut rng).unwrap();
        use crate::frank_wolfe::PoolVectors;
        let norms = p.norms();
        assert!(norms.iter().all(|v| v.is_finite()));
        assert!(norms[1] > norms[0], "{norms:?}");
    }
}
