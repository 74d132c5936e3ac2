//! Frank–Wolfe sparse subset approximation (ACS-FW; Pinsler et al., NeurIPS 2019, Algorithm 1).
//!
//! Every pool point n has a vector L_n (the expected change of the log posterior were n
//! labelled); L = Σ_n L_n. A batch approximates L by L(w) = Σ_n w_n L_n, minimising
//! ‖L − L(w)‖² = (1 − w)ᵀK(1 − w) over the polytope {w ≥ 0, Σ_n w_n σ_n = σ}, where
//! K_nm = ⟨L_n, L_m⟩, σ_n = ‖L_n‖ and σ = Σ_n σ_n. Frank–Wolfe starts at w = 0 and in each of b
//! iterations moves towards the vertex (σ/σ_f)e_f best aligned with the residual,
//! f = argmax_n ⟨L − L(w), L_n⟩/σ_n, with the exact line-search step; the batch is the support
//! of w. Only ⟨L, L_n⟩ and one column of K per iteration are needed, so with random projections
//! (L_n ∈ ℝ^J) an iteration costs O(NJ) and K is never formed.

use faer::Mat;
use serde::Serialize;

use crate::error::{invalid, Result};

/// The pool's vectors L_n, seen only through inner products.
pub trait PoolVectors {
    /// Pool size N.
    fn len(&self) -> usize;
    /// Whether the pool is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// ⟨L_n, L_f⟩ for every n (column f of K).
    fn column(&self, f: usize) -> Vec<f64>;
    /// ⟨L, L_n⟩ = Σ_m K_nm for every n.
    fn against_total(&self) -> Vec<f64>;
    /// σ_n = ‖L_n‖ for every n.
    fn norms(&self) -> Vec<f64>;
}

/// A dense, symmetric inner-product matrix K (closed-form weighted Fisher inner products).
pub struct GramMatrix(pub Mat<f64>);

impl PoolVectors for GramMatrix {
    fn len(&self) -> usize {
        self.0.nrows()
    }
    fn column(&self, f: usize) -> Vec<f64> {
        (0..self.0.nrows()).map(|n| self.0[(n, f)]).collect()
    }
    fn against_total(&self) -> Vec<f64> {
        (0..self.0.nrows()).map(|n| (0..self.0.ncols()).map(|m| self.0[(n, m)]).sum()).collect()
    }
    fn norms(&self) -> Vec<f64> {
        (0..self.0.nrows()).map(|n| self.0[(n, n)].max(0.0).sqrt()).collect()
    }
}

/// Explicit vectors, one row per pool point (random projections L̂_n ∈ ℝ^J).
pub struct Projections(pub Mat<f64>);

impl PoolVectors for Projections {
    fn len(&self) -> usize {
        self.0.nrows()
    }
    fn column(&self, f: usize) -> Vec<f64> {
        let p = &self.0;
        (0..p.nrows()).map(|n| (0..p.ncols()).map(|j| p[(n, j)] * p[(f, j)]).sum()).collect()
    }
    fn against_total(&self) -> Vec<f64> {
        let p = &self.0;
        let total: Vec<f64> = (0..p.ncols()).map(|j| (0..p.nrows()).map(|n| p[(n, j)]).sum()).collect();
        (0..p.nrows()).map(|n| (0..p.ncols()).map(|j| p[(n, j)] * total[j]).sum()).collect()
    }
    fn norms(&self) -> Vec<f64> {
        let p = &self.0;
        (0..p.nrows()).map(|n| (0..p.ncols()).map(|j| p[(n, j)] * p[(n, j)]).sum::<f64>().sqrt()).collect()
    }
}

/// A Frank–Wolfe batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FwBatch {
    /// Selected pool indices (the support of w), ascending.
    pub indices: Vec<usize>,
    /// The weights w (length N).
    pub weights: Vec<f64>,
    /// ‖L − L(w)‖² after each iteration (starts from ‖L‖² at w = 0).
    pub objective: Vec<f64>,
    /// Vertex picked at each iteration (re-picks show up as repeats).
    pub picks: Vec<usize>,
}

/// Runs `iterations` Frank–Wolfe steps. With `distinct`, a point already in the batch is never
/// picked again, so the batch has exactly `min(iterations, N)` points (the paper's algorithm
/// allows re-picks, which yield smaller batches).
pub fn frank_wolfe(pool: &dyn PoolVectors, iterations: usize, distinct: bool) -> Result<FwBatch> {
    let n = pool.len();
    if n == 0 {
        return Err(invalid("pool", 0, "the pool is empty"));
    }
    if iterations == 0 {
        return Err(invalid("batch", 0, "need at least one Frank–Wolfe iteration"));
    }
    let k1 = pool.against_total();
    let sigma_n = pool.norms();
    let sigma: f64 = sigma_n.iter().sum();
    let total_sq: f64 = k1.iter().sum();
    let mut w = vec![0.0; n];
    let mut kw = vec![0.0; n]; // ⟨L(w), L_n⟩
    let (mut w_kw, mut l_kw) = (0.0, 0.0); // ‖L(w)‖², ⟨L, L(w)⟩
    let mut objective = vec![total_sq];
    let mut picks = Vec::with_capacity(iterations);
    let mut chosen = vec![false; n];
    for _ in 0..iterations {
        let candidate = (0..n)
            .filter(|&m| sigma_n[m] > 0.0 && !(distinct && chosen[m]))
            .map(|m| (m, (k1[m] - kw[m]) / sigma_n[m]))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((f, _)) = candidate else { break };
        let s = sigma / sigma_n[f];
        let kf = pool.column(f);
        // Exact line search on ‖L − L(w) − γ d‖² with d = s L_f − L(w).
        let along = s * (k1[f] - kw[f]) - (l_kw - w_kw);
        let d_sq = s * s * kf[f] - 2.0 * s * kw[f] + w_kw;
        let gamma = if d_sq > 0.0 { (along / d_sq).clamp(0.0, 1.0) } else { 0.0 };
        for m in 0..n {
            w[m] *= 1.0 - gamma;
            kw[m] = (1.0 - gamma) * kw[m] + gamma * s * kf[m];
        }
        w[f] += gamma * s;
        w_kw = w.iter().zip(&kw).map(|(a, b)| a * b).sum();
        l_kw = w.iter().zip(&k1).map(|(a, b)| a * b).sum();
        objective.push(total_sq - 2.0 * l_kw + w_kw);
        picks.push(f);
        chosen[f] = true;
    }
    let indices = if distinct {
        let mut v: Vec<usize> = (0..n).filter(|&m| chosen[m]).collect();
        v.sort_unstable();
        v
    } else {
        (0..n).filter(|&m| w[m] > 0.0).collect()
    };
    Ok(FwBatch { indices, weights: w, objective, picks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    fn random_vectors(n: usize, j: usize, seed: u64) -> Mat<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        // Positive-mean vectors, as log-likelihood changes of similar points tend to be.
        Mat::from_fn(n, j, |_, _| 0.5 + rng.sample::<f64, _>(StandardNormal))
    }

    fn gram(p: &Mat<f64>) -> GramMatrix {
        GramMatrix(p * p.transpose())
    }

    fn objective_at(p: &Mat<f64>, w: &[f64]) -> f64 {
        (0..p.ncols()).map(|j| (0..p.nrows()).map(|n| (1.0 - w[n]) * p[(n, j)]).sum::<f64>().powi(2)).sum()
    }

    #[test]
    fn objective_never_increases_and_matches_its_definition() {
        let p = random_vectors(40, 6, 1);
        for distinct in [false, true] {
            let batch = frank_wolfe(&Projections(p.clone()), 10, distinct).unwrap();
            for pair in batch.objective.windows(2) {
                assert!(pair[1] <= pair[0] + 1e-9 * pair[0], "{:?}", batch.objective);
            }
            let last = *batch.objective.last().unwrap();
            assert!((objective_at(&p, &batch.weights) - last).abs() < 1e-8 * last.max(1.0));
            // Starting from w = 0, every iterate is a convex combination of 0 and vertices
            // (σ/σ_f)e_f, so w ≥ 0 and Σ w_n σ_n ≤ σ.
            let norms = Projections(p.clone()).norms();
            let (sw, s): (f64, f64) = (batch.weights.iter().zip(&norms).map(|(a, b)| a * b).sum(), norms.iter().sum());
            assert!(sw <= s * (1.0 + 1e-9) && batch.weights.iter().all(|&v| v >= 0.0), "{sw} vs {s}");
        }
        let distinct = frank_wolfe(&Projections(p.clone()), 10, true).unwrap();
        assert_eq!(distinct.indices.len(), 10);
    }

    #[test]
    fn projections_and_the_gram_matrix_give_the_same_batch() {
        let p = random_vectors(30, 5, 2);
        let a = frank_wolfe(&Projections(p.clone()), 8, false).unwrap();
        let b = frank_wolfe(&gram(&p), 8, false).unwrap();
        assert_eq!(a.picks, b.picks);
        for (x, y) in a.objective.iter().zip(&b.objective) {
            assert!((x - y).abs() < 1e-9 * x.max(1.0));
        }
    }

    /// One iteration is the best single point: min_c ‖L − cL_n‖² over every n and every scale c
    /// on the polytope's edge, enumerated.
    #[test]
    fn one_step_equals_the_brute_force_best_single_point() {
        for seed in 0..5 {
            let p = random_vectors(12, 4, 10 + seed);
            let pool = Projections(p.clone());
            let batch = frank_wolfe(&pool, 1, false).unwrap();
            let norms = pool.norms();
            let sigma: f64 = norms.iter().sum();
            let mut best = f64::INFINITY;
            for n in 0..12 {
                // c ∈ [0, σ/σ_n] on a fine grid, plus the closed-form minimiser clipped.
                let mut w = vec![0.0; 12];
                for step in 0..=2000 {
                    w[n] = sigma / norms[n] * step as f64 / 2000.0;
                    best = best.min(objective_at(&p, &w));
                }
            }
            let fw = batch.objective[1];
            assert!(fw <= best + 1e-9 * best, "seed {seed}: FW {fw} vs brute force {best}");
            assert!(fw >= best - 1e-3 * best, "seed {seed}: FW {fw} below the enumerated optimum {best}");
        }
    }

    /// On tiny pools, FW's b-point batch is as good as the best b-subset picked greedily by
    /// brute force up to a modest factor, and better than the median random b-subset
    /// (subsets scored with their optimal non-negative weights on the polytope's scale).
    #[test]
    fn batches_beat_typical_subsets_of_the_same_size() {
        let p = random_vectors(10, 3, 7);
        let batch = frank_wolfe(&Projections(p.clone()), 3, true).unwrap();
        let fw = objective_at(&p, &batch.weights);
        // Enumerate every 3-subset; score = min over w ≥ 0 on the subset of ‖L − L(w)‖² (a
        // relaxation of FW's constraint, so it lower-bounds what FW can reach on that subset).
        let mut scores = Vec::new();
        for a in 0..10 {
            for b in a + 1..10 {
                for c in b + 1..10 {
                    scores.push(best_nonnegative_fit(&p, &[a, b, c]));
                }
            }
        }
        scores.sort_by(f64::total_cmp);
        let median = scores[scores.len() / 2];
        assert!(fw <= median, "FW {fw} vs median subset {median} (best {})", scores[0]);
    }

    /// min_{w ≥ 0} ‖L − Σ_{n∈S} w_n L_n‖² by projected gradient (tiny problems only).
    fn best_nonnegative_fit(p: &Mat<f64>, subset: &[usize]) -> f64 {
        let j = p.ncols();
        let total: Vec<f64> = (0..j).map(|k| (0..p.nrows()).map(|n| p[(n, k)]).sum()).collect();
        let mut w = vec![1.0; subset.len()];
        let lipschitz: f64 = subset.iter().map(|&n| (0..j).map(|k| p[(n, k)].powi(2)).sum::<f64>()).sum();
        for _ in 0..20000 {
            let r: Vec<f64> =
                (0..j).map(|k| total[k] - subset.iter().zip(&w).map(|(&n, wn)| wn * p[(n, k)]).sum::<f64>()).collect();
            for (i, &n) in subset.iter().enumerate() {
                let g: f64 = -(0..j).map(|k| r[k] * p[(n, k)]).sum::<f64>();
                w[i] = (w[i] - g / lipschitz).max(0.0);
            }
        }
        (0..j).map(|k| (total[k] - subset.iter().zip(&w).map(|(&n, wn)| wn * p[(n, k)]).sum::<f64>()).powi(2)).sum()
    }
}
