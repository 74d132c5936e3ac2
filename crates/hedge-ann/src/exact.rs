use rayon::prelude::*;

use crate::distance::squared_l2;

/// The exact `k` nearest points of every query (rows of `queries`), nearest first with ties by
/// index: the reference an approximate search's recall is measured against. Brute force over
/// every point, queries in parallel.
pub fn exact_nearest(points: &[f32], dim: usize, queries: &[f32], k: usize) -> Vec<Vec<usize>> {
    queries
        .par_chunks(dim)
        .map(|q| {
            let mut scored: Vec<(f32, usize)> =
                points.chunks_exact(dim).enumerate().map(|(i, p)| (squared_l2(p, q), i)).collect();
            let k = k.min(scored.len());
            let by_distance = |a: &(f32, usize), b: &(f32, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
            if k < scored.len() {
                scored.select_nth_unstable_by(k, by_distance);
            }
            scored.truncate(k);
            scored.sort_by(by_distance);
            scored.into_iter().map(|(_, i)| i).collect()
        })
        .collect()
}

/// Mean over queries of |approx top-k ∩ exact top-k| / k.
pub fn recall_at(approx: &[Vec<usize>], exact: &[Vec<usize>], k: usize) -> f64 {
    let per: Vec<f64> = approx
        .iter()
        .zip(exact)
        .map(|(a, e)| {
            let truth: std::collections::HashSet<usize> = e.iter().take(k).copied().collect();
            let k = truth.len().max(1);
            a.iter().take(k).filter(|i| truth.contains(i)).count() as f64 / k as f64
        })
        .collect();
    per.iter().sum::<f64>() / per.len().max(1) as f64
}
