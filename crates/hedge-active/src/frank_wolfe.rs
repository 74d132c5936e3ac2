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

use hedge_data::NpyRowReader;

use crate::error::{invalid, Result};
use crate::ActiveError;

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
    /// The explicit vectors, when the pool has them (enables the O(NJ) feature-space path).
    fn as_projections(&self) -> Option<&Projections> {
        None
    }
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
        let mut sq = vec![0.0; p.nrows()];
        for j in 0..p.ncols() {
            for (s, v) in sq.iter_mut().zip(p.col_as_slice(j)) {
                *s += v * v;
            }
        }
        sq.into_iter().map(f64::sqrt).collect()
    }
    fn as_projections(&self) -> Option<&Projections> {
        Some(self)
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
/// allows re-picks, which yield smaller batches). Ties go to the lowest pool index. Without
/// `distinct` it also stops early once L is reproduced exactly (see [`EXACT_FIT`]).
///
/// Explicit projections take the feature-space path (the residual L − L(w) is a J-vector, so an
/// iteration is one fused pass over the pool); any other pool works through columns of K.
pub fn frank_wolfe(pool: &dyn PoolVectors, iterations: usize, distinct: bool) -> Result<FwBatch> {
    if pool.is_empty() {
        return Err(invalid("pool", 0, "the pool is empty"));
    }
    if iterations == 0 {
        return Err(invalid("batch", 0, "need at least one Frank–Wolfe iteration"));
    }
    check_pool_vectors(&pool.norms(), &pool.against_total())?;
    // Each iteration scans the pool (N inner products of J values with projections; a column of
    // K otherwise). Distinct picks end after N iterations; the paper's re-picks only when L is
    // reproduced, so their count is what the user asked for.
    let n = pool.len() as f64;
    let per_iteration = n * pool.as_projections().map_or(n, |p| p.0.ncols() as f64) * 3.0;
    let cap = if distinct { n } else { f64::INFINITY };
    hedge_run::Workload::new("ACS-FW: the Frank–Wolfe iterations", move |v| {
        use hedge_run::budget::rates::{DENSE_PER_SECOND, PARALLEL_ITERATION_SECONDS};
        v[0].min(cap) * (PARALLEL_ITERATION_SECONDS + per_iteration / DENSE_PER_SECOND)
    })
    .knob("batch size (Frank–Wolfe iterations)", iterations as f64, 1.0)
    .check()?;
    match pool.as_projections() {
        Some(p) => Ok(frank_wolfe_projected(p, iterations, distinct)),
        None => Ok(frank_wolfe_by_columns(pool, iterations, distinct)),
    }
}

/// Refuses a pool Frank–Wolfe cannot weigh, instead of returning an empty batch: vectors whose
/// norms or inner products overflow float64 (rescale them), and a pool whose every vector is zero
/// (‖L_n‖ = 0 for all n, or a Gram matrix with no positive diagonal entry: nothing to approximate).
fn check_pool_vectors(norms: &[f64], against_total: &[f64]) -> Result<()> {
    if let Some(n) = (0..norms.len()).find(|&n| !norms[n].is_finite() || !against_total[n].is_finite()) {
        return Err(invalid(
            "pool",
            format!("vector {n}"),
            format!(
                "its norm ({}) or its inner product with the pool's sum ({}) overflows float64; rescale the \
                 vectors (ACS-FW's batch does not change when every vector is scaled by one factor)",
                norms[n], against_total[n]
            ),
        ));
    }
    if norms.iter().all(|&s| s == 0.0) {
        return Err(invalid(
            "pool",
            format!("{} vectors", norms.len()),
            "every vector is zero (‖L_n‖ = 0; for a Gram matrix, no positive diagonal entry), so ACS-FW has \
             nothing to approximate and no point to prefer",
        ));
    }
    Ok(())
}

/// Without `distinct`, Frank–Wolfe stops once ‖L − L(w)‖² ≤ this × ‖L‖²: the batch then
/// reproduces L to rounding error (with J-dimensional projections that takes about J + 1 points)
/// and further picks would be decided by rounding noise.
pub const EXACT_FIT: f64 = 1e-12;

/// The support of the sparse weights, or every chosen point with `distinct`.
fn batch_indices(w: &[f64], chosen: &[bool], distinct: bool) -> Vec<usize> {
    (0..w.len()).filter(|&m| if distinct { chosen[m] } else { w[m] > 0.0 }).collect()
}

/// Exact line search on ‖r − γ d‖² over γ ∈ [0, 1], given ⟨r, d⟩ and ‖d‖².
fn line_search(along: f64, d_sq: f64) -> f64 {
    if d_sq > 0.0 {
        (along / d_sq).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Frank–Wolfe through columns of K: O(N) memory for the iterate, one column per iteration.
pub(crate) fn frank_wolfe_by_columns(pool: &dyn PoolVectors, iterations: usize, distinct: bool) -> FwBatch {
    let n = pool.len();
    let k1 = pool.against_total();
    let sigma_n = pool.norms();
    let sigma: f64 = sigma_n.iter().sum();
    let total_sq: f64 = k1.iter().sum();
    let mut w = vec![0.0; n];
    let mut kw = vec![0.0; n]; // ⟨L(w), L_n⟩
    let (mut w_kw, mut l_kw) = (0.0, 0.0); // ‖L(w)‖², ⟨L, L(w)⟩
    let mut objective = vec![total_sq];
    let mut picks = Vec::with_capacity(iterations.min(n));
    let mut chosen = vec![false; n];
    for _ in 0..iterations {
        let candidate = (0..n)
            .filter(|&m| sigma_n[m] > 0.0 && !(distinct && chosen[m]))
            .map(|m| (m, (k1[m] - kw[m]) / sigma_n[m]))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        let Some((f, _)) = candidate else { break };
        let s = sigma / sigma_n[f];
        let kf = pool.column(f);
        // d = s L_f − L(w): ⟨L − L(w), d⟩ and ‖d‖².
        let along = s * (k1[f] - kw[f]) - (l_kw - w_kw);
        let d_sq = s * s * kf[f] - 2.0 * s * kw[f] + w_kw;
        let gamma = line_search(along, d_sq);
        // ‖L(w')‖² and ⟨L, L(w')⟩ for w' = (1 − γ)w + γ s e_f, using kw[f] = ⟨L(w), L_f⟩.
        w_kw = (1.0 - gamma).powi(2) * w_kw + 2.0 * (1.0 - gamma) * gamma * s * kw[f] + (gamma * s).powi(2) * kf[f];
        l_kw = (1.0 - gamma) * l_kw + gamma * s * k1[f];
        for m in 0..n {
            w[m] *= 1.0 - gamma;
            kw[m] = (1.0 - gamma) * kw[m] + gamma * s * kf[m];
        }
        w[f] += gamma * s;
        objective.push(total_sq - 2.0 * l_kw + w_kw);
        picks.push(f);
        chosen[f] = true;
        if !distinct && objective[objective.len() - 1] <= EXACT_FIT * total_sq {
            break;
        }
    }
    FwBatch { indices: batch_indices(&w, &chosen, distinct), weights: w, objective, picks }
}

/// Rows per parallel work item of the projected pass (the block's scores stay in L1).
const ROWS_PER_TASK: usize = 4096;

/// The pool for the projected pass: unit directions u_n = L̂_n/σ_n in single precision, in blocks
/// of rows stored column by column, which halves the memory each iteration streams; the f64
/// vectors remain the reference.
struct UnitDirections {
    /// Block b holds rows b·ROWS_PER_TASK.. as `[J][rows in block]`.
    blocks: Vec<Vec<f32>>,
    /// σ_n = ‖L̂_n‖.
    norms: Vec<f64>,
    /// L = Σ_n L̂_n.
    total: Vec<f64>,
}

impl UnitDirections {
    /// One parallel pass over the pool: norms, the total vector and the unit directions.
    fn new(p: &Mat<f64>) -> Self {
        use rayon::prelude::*;
        let (n, j) = (p.nrows(), p.ncols());
        let parts: Vec<(Vec<f32>, Vec<f64>, Vec<f64>)> = (0..n.div_ceil(ROWS_PER_TASK))
            .into_par_iter()
            .map(|block| {
                let lo = block * ROWS_PER_TASK;
                let hi = (lo + ROWS_PER_TASK).min(n);
                let mut sq = vec![0.0; hi - lo];
                let mut sums = vec![0.0; j];
                for (k, sum) in sums.iter_mut().enumerate() {
                    let column = &p.col_as_slice(k)[lo..hi];
                    for (s, v) in sq.iter_mut().zip(column) {
                        *s += v * v;
                    }
                    *sum = lane_sum(column);
                }
                let norms: Vec<f64> = sq.into_iter().map(f64::sqrt).collect();
                let inv: Vec<f64> = norms.iter().map(|&s| if s > 0.0 { 1.0 / s } else { 0.0 }).collect();
                let mut units = Vec::with_capacity(j * (hi - lo));
                for k in 0..j {
                    units.extend(p.col_as_slice(k)[lo..hi].iter().zip(&inv).map(|(v, i)| (v * i) as f32));
                }
                (units, norms, sums)
            })
            .collect();
        let mut total = vec![0.0; j];
        let mut norms = Vec::with_capacity(n);
        let mut blocks = Vec::with_capacity(parts.len());
        for (units, block_norms, sums) in parts {
            for (t, s) in total.iter_mut().zip(&sums) {
                *t += s;
            }
            norms.extend(block_norms);
            blocks.push(units);
        }
        Self { blocks, norms, total }
    }
}

/// Σ v with eight independent accumulators: one running sum is a chain of dependent additions
/// that cannot be vectorised and was the slowest part of the set-up.
fn lane_sum(v: &[f64]) -> f64 {
    let mut lanes = [0.0; 8];
    let chunks = v.chunks_exact(8);
    let tail: f64 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (l, x) in lanes.iter_mut().zip(chunk) {
            *l += x;
        }
    }
    lanes.iter().sum::<f64>() + tail
}

/// argmax_n ⟨r, L̂_n⟩/σ_n over the points not `excluded`, lowest index on ties, exactly as in
/// double precision: one fused single-precision pass (in parallel over blocks of rows) keeps every
/// point within `slack` of its block's best, where `slack` bounds the single-precision error,
/// and only those few candidates are re-scored in f64.
fn best_vertex(p: &Mat<f64>, units: &UnitDirections, r: &[f64], penalty: &[f32]) -> Option<(usize, f64)> {
    use rayon::prelude::*;
    const LANES: usize = 8;
    let r32: Vec<f32> = r.iter().map(|&v| v as f32).collect();
    // |Σ_j r_j u_nj| computed in f32 from rounded inputs errs by at most ~(J + 2)·2⁻²⁴·‖r‖‖u_n‖,
    // with ‖u_n‖ = 1; 1e-4·‖r‖ leaves two orders of magnitude to spare.
    let slack = 1e-4 * r.iter().map(|v| v * v).sum::<f64>().sqrt();
    let candidates: Vec<(usize, f64)> = units
        .blocks
        .par_iter()
        .enumerate()
        .map(|(block, units)| {
            let lo = block * ROWS_PER_TASK;
            let rows = units.len() / r.len();
            // Starts from the penalty (0, or −∞ for excluded points), so no branch per point.
            let mut acc = [0.0f32; ROWS_PER_TASK];
            let acc = &mut acc[..rows];
            acc.copy_from_slice(&penalty[lo..lo + rows]);
            for (column, &rj) in units.chunks_exact(rows).zip(&r32) {
                for (a, v) in acc.iter_mut().zip(column) {
                    *a += rj * v;
                }
            }
            // Lane-wise maximum (vectorises; f32::max folds do not).
            let mut lanes = [f32::NEG_INFINITY; LANES];
            let chunks = acc.chunks_exact(LANES);
            let tail = chunks.remainder();
            for chunk in chunks {
                for (l, &v) in lanes.iter_mut().zip(chunk) {
                    *l = if v > *l { v } else { *l };
                }
            }
            let best = lanes.iter().chain(tail).fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
            if best == f32::NEG_INFINITY {
                return Vec::new();
            }
            let floor = (f64::from(best) - 2.0 * slack) as f32;
            acc.iter()
                .enumerate()
                .filter(|&(_, &a)| a >= floor && a > f32::NEG_INFINITY)
                .map(|(i, &a)| (lo + i, f64::from(a)))
                .collect()
        })
        .flatten()
        .collect();
    let top = candidates.iter().map(|c| c.1).fold(f64::NEG_INFINITY, f64::max);
    candidates
        .into_iter()
        .filter(|c| c.1 >= top - 2.0 * slack)
        .map(|(m, _)| (m, (0..p.ncols()).map(|j| r[j] * p[(m, j)]).sum::<f64>() / units.norms[m]))
        .fold(None, |best: Option<(usize, f64)>, c| match best {
            Some(b) if b.1 > c.1 || (b.1 == c.1 && b.0 < c.0) => Some(b),
            _ => Some(c),
        })
}

/// Frank–Wolfe's iterate in the projections' own space: the residual r = L − L(w) and L(w) are
/// J-vectors and w is sparse, so a step is O(J) once the vertex is known. The in-memory and the
/// streamed paths share it, so they take the same steps from the same vertices.
struct FeatureSpaceIterate {
    /// L = Σ_n L̂_n.
    total: Vec<f64>,
    /// σ = Σ_n σ_n.
    sigma: f64,
    /// L(w).
    fitted: Vec<f64>,
    residual: Vec<f64>,
    /// The support of w with its weights, in the order first picked.
    weights: Vec<(usize, f64)>,
    objective: Vec<f64>,
    picks: Vec<usize>,
}

impl FeatureSpaceIterate {
    fn new(total: Vec<f64>, sigma: f64) -> Self {
        let objective = vec![dot(&total, &total)];
        let j = total.len();
        Self {
            residual: total.clone(),
            total,
            sigma,
            fitted: vec![0.0; j],
            weights: Vec::new(),
            objective,
            picks: Vec::new(),
        }
    }

    /// Moves towards the vertex (σ/σ_f)e_f, whose vector is `row_f` = L̂_f, with the exact line search.
    fn step(&mut self, f: usize, row_f: &[f64], sigma_f: f64) {
        let s = self.sigma / sigma_f;
        let d: Vec<f64> = row_f.iter().zip(&self.fitted).map(|(lf, lw)| s * lf - lw).collect();
        let gamma = line_search(dot(&self.residual, &d), dot(&d, &d));
        for (lw, dk) in self.fitted.iter_mut().zip(&d) {
            *lw += gamma * dk;
        }
        for ((r, t), lw) in self.residual.iter_mut().zip(&self.total).zip(&self.fitted) {
            *r = t - lw;
        }
        for (_, wm) in self.weights.iter_mut() {
            *wm *= 1.0 - gamma;
        }
        match self.weights.iter_mut().find(|(m, _)| *m == f) {
            Some((_, wf)) => *wf += gamma * s,
            None => self.weights.push((f, gamma * s)),
        }
        self.objective.push(dot(&self.residual, &self.residual));
        self.picks.push(f);
    }

    /// Whether L is reproduced to rounding error (the paper's mode stops there, see [`EXACT_FIT`]).
    fn reproduces_l(&self) -> bool {
        self.objective[self.objective.len() - 1] <= EXACT_FIT * self.objective[0]
    }

    fn into_batch(self, n: usize, distinct: bool) -> FwBatch {
        let mut w = vec![0.0; n];
        let mut chosen = vec![false; n];
        for &(m, wm) in &self.weights {
            w[m] = wm;
            chosen[m] = true;
        }
        FwBatch {
            indices: batch_indices(&w, &chosen, distinct),
            weights: w,
            objective: self.objective,
            picks: self.picks,
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Frank–Wolfe over projections held in memory: one fused pass per iteration picks the vertex.
fn frank_wolfe_projected(pool: &Projections, iterations: usize, distinct: bool) -> FwBatch {
    let p = &pool.0;
    let (n, j) = (p.nrows(), p.ncols());
    let units = UnitDirections::new(p);
    let sigma_n = &units.norms;
    let mut iterate = FeatureSpaceIterate::new(units.total.clone(), sigma_n.iter().sum());
    // −∞ for points that may not be picked (zero vectors; chosen ones with `distinct`).
    let mut penalty: Vec<f32> = sigma_n.iter().map(|&s| if s > 0.0 { 0.0 } else { f32::NEG_INFINITY }).collect();
    for _ in 0..iterations {
        let Some((f, _)) = best_vertex(p, &units, &iterate.residual, &penalty) else { break };
        let row: Vec<f64> = (0..j).map(|k| p[(f, k)]).collect();
        iterate.step(f, &row, sigma_n[f]);
        if distinct {
            penalty[f] = f32::NEG_INFINITY;
        }
        if !distinct && iterate.reproduces_l() {
            break;
        }
    }
    iterate.into_batch(n, distinct)
}

/// Bytes of float64 vectors a streamed pass reads at a time (held twice: the file's bytes and
/// their values).
pub const STREAM_BLOCK_BYTES: usize = 8 << 20;

/// Rows per block a streamed pass reads for vectors of `j` values: about
/// [`STREAM_BLOCK_BYTES`], and a multiple of the in-memory path's 4,096-row blocks, so that the set-up sums the same
/// blocks in the same order as the in-memory path.
pub fn stream_block_rows(j: usize) -> usize {
    (STREAM_BLOCK_BYTES / (8 * j.max(1)) / ROWS_PER_TASK).max(1) * ROWS_PER_TASK
}

/// ACS-FW over projections streamed from a 2-D float64 `.npy` file (`N × J`, one row per pool
/// point) that need not fit in memory: one pass for L and σ, then one pass per iteration in
/// which each block of rows (a shard) reports its best vertex and the row behind it, and the
/// global arg-max over shards (ties to the lowest index) takes the step. Memory: one block of
/// rows plus the norms and weights (2N values) — never N × J.
///
/// Scores are computed in double precision exactly as the in-memory path re-scores its
/// candidates, and L is summed over the same blocks in the same order, so the batch is the one
/// [`frank_wolfe`] picks on the same vectors.
///
/// # Errors
/// [`ActiveError::Data`] naming the file when it cannot be read;
/// [`hedge_run::RunError::InvalidConfig`] for an empty pool or zero iterations.
pub fn frank_wolfe_streamed(pool: &mut NpyRowReader, iterations: usize, distinct: bool) -> Result<FwBatch> {
    let block_rows = stream_block_rows(pool.cols());
    frank_wolfe_streamed_in_blocks(pool, iterations, distinct, block_rows)
}

/// [`frank_wolfe_streamed`] reading `block_rows` rows at a time (a multiple of [`ROWS_PER_TASK`]).
fn frank_wolfe_streamed_in_blocks(
    pool: &mut NpyRowReader,
    iterations: usize,
    distinct: bool,
    block_rows: usize,
) -> Result<FwBatch> {
    use rayon::prelude::*;
    let (n, j) = (pool.rows(), pool.cols());
    if n == 0 {
        return Err(invalid("pool", pool.path().display(), "the pool file has no rows"));
    }
    if iterations == 0 {
        return Err(invalid("batch", 0, "need at least one Frank–Wolfe iteration"));
    }
    // Set-up pass: L block by block (each column summed as the in-memory path sums it) and σ_n.
    let mut total = vec![0.0; j];
    let mut norms = Vec::with_capacity(n);
    pool.for_each_block(block_rows, |_, rows| {
        for block in rows.chunks(ROWS_PER_TASK * j) {
            let count = block.len() / j;
            let mut column = vec![0.0; count];
            for (k, t) in total.iter_mut().enumerate() {
                for (c, row) in column.iter_mut().zip(block.chunks_exact(j)) {
                    *c = row[k];
                }
                *t += lane_sum(&column);
            }
            norms.extend(block.chunks_exact(j).map(row_norm));
        }
        Ok::<(), ActiveError>(())
    })?;
    let mut iterate = FeatureSpaceIterate::new(total, norms.iter().sum());
    let mut chosen = vec![false; if distinct { n } else { 0 }];
    for _ in 0..iterations {
        // (score, index, row, σ_n) of the best vertex so far; one shard per ROWS_PER_TASK rows.
        let mut best: Option<(f64, usize, Vec<f64>, f64)> = None;
        let residual = &iterate.residual;
        pool.for_each_block(block_rows, |first, rows| {
            let shard_best = rows
                .par_chunks(ROWS_PER_TASK * j)
                .enumerate()
                .filter_map(|(shard, block)| {
                    let lo = first + shard * ROWS_PER_TASK;
                    let mut local: Option<(f64, usize)> = None;
                    for (i, row) in block.chunks_exact(j).enumerate() {
                        let m = lo + i;
                        let norm = norms[m];
                        if norm == 0.0 || (distinct && chosen[m]) {
                            continue;
                        }
                        let score = dot(residual, row) / norm;
                        // Strictly greater: the lowest index wins ties within a shard.
                        if local.is_none_or(|(b, _)| score > b) {
                            local = Some((score, m));
                        }
                    }
                    local
                })
                // Global arg-max over shards, ties to the lowest index.
                .reduce_with(|a, b| if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) { b } else { a });
            if let Some((score, m)) = shard_best {
                // Blocks arrive in index order, so strictly greater keeps the lowest index.
                if best.as_ref().is_none_or(|b| score > b.0) {
                    let row = &rows[(m - first) * j..(m - first + 1) * j];
                    best = Some((score, m, row.to_vec(), norms[m]));
                }
            }
            Ok::<(), ActiveError>(())
        })?;
        let Some((_, f, row, sigma_f)) = best else { break };
        iterate.step(f, &row, sigma_f);
        if distinct {
            chosen[f] = true;
        }
        if !distinct && iterate.reproduces_l() {
            break;
        }
    }
    Ok(iterate.into_batch(n, distinct))
}

/// Rows a pool shard starts at a multiple of (the blocks [`frank_wolfe_streamed`] sums L over),
/// so that a sharded pool sums L as the streamed one does, to the bit.
pub const SHARD_ROW_MULTIPLE: usize = ROWS_PER_TASK;

/// One shard of a pool held apart from the others (on another machine): rows
/// `first .. first + n` of the `N × J` projections. Driven by a [`ShardedFrankWolfe`]: its
/// [`PoolShard::setup`] once, then [`PoolShard::best`] and [`PoolShard::mark_chosen`] per step.
#[derive(Debug, Clone)]
pub struct PoolShard {
    first: usize,
    cols: usize,
    rows: Vec<f64>,
    norms: Vec<f64>,
    chosen: Vec<bool>,
}

/// What a shard sends once: per block of [`SHARD_ROW_MULTIPLE`] rows the column sums, and every
/// row's norm σ_n.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSetup {
    pub first: usize,
    pub block_sums: Vec<Vec<f64>>,
    pub norms: Vec<f64>,
}

/// A shard's best vertex for the current residual.
#[derive(Debug, Clone, PartialEq)]
pub struct Vertex {
    /// ⟨residual, L̂_f⟩ / σ_f.
    pub score: f64,
    /// Row in the whole pool.
    pub index: usize,
    /// L̂_f.
    pub row: Vec<f64>,
    /// σ_f.
    pub sigma: f64,
}

impl PoolShard {
    /// Rows `first ..` of the pool, `cols` values each (row-major). `first` must be a multiple
    /// of [`SHARD_ROW_MULTIPLE`].
    pub fn new(first: usize, cols: usize, rows: Vec<f64>) -> Result<Self> {
        if cols == 0 || rows.is_empty() || rows.len() % cols != 0 {
            return Err(invalid("pool", rows.len(), format!("give whole rows of {cols} values, at least one")));
        }
        if first % SHARD_ROW_MULTIPLE != 0 {
            return Err(invalid(
                "first",
                first,
                format!("a shard starts at a multiple of {SHARD_ROW_MULTIPLE} rows (the blocks L is summed over)"),
            ));
        }
        if let Some(bad) = rows.iter().position(|v| !v.is_finite()) {
            return Err(invalid("pool", rows[bad], format!("row {} holds a non-finite value", first + bad / cols)));
        }
        let norms: Vec<f64> = rows.chunks_exact(cols).map(row_norm).collect();
        let chosen = vec![false; norms.len()];
        Ok(PoolShard { first, cols, rows, norms, chosen })
    }

    /// Features per row (the length [`PoolShard::best`]'s residual must have).
    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn len(&self) -> usize {
        self.norms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.norms.is_empty()
    }

    /// Column sums per block of rows, and the norms: what [`ShardedFrankWolfe::new`] needs.
    pub fn setup(&self) -> ShardSetup {
        let j = self.cols;
        let block_sums = self
            .rows
            .chunks(ROWS_PER_TASK * j)
            .map(|block| {
                let mut column = vec![0.0; block.len() / j];
                (0..j)
                    .map(|k| {
                        for (c, row) in column.iter_mut().zip(block.chunks_exact(j)) {
                            *c = row[k];
                        }
                        lane_sum(&column)
                    })
                    .collect()
            })
            .collect();
        ShardSetup { first: self.first, block_sums, norms: self.norms.clone() }
    }

    /// The best vertex for `residual` among rows not yet chosen (with `distinct`) and of
    /// non-zero norm, ties to the lowest index; `None` when none is left.
    pub fn best(&self, residual: &[f64], distinct: bool) -> Option<Vertex> {
        let j = self.cols;
        let mut best: Option<(f64, usize)> = None;
        for (i, row) in self.rows.chunks_exact(j).enumerate() {
            let norm = self.norms[i];
            if norm == 0.0 || (distinct && self.chosen[i]) {
                continue;
            }
            let score = dot(residual, row) / norm;
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, i));
            }
        }
        best.map(|(score, i)| Vertex {
            score,
            index: self.first + i,
            row: self.rows[i * j..(i + 1) * j].to_vec(),
            sigma: self.norms[i],
        })
    }

    /// Forgets every pick (a new batch over the same pool).
    pub fn clear_chosen(&mut self) {
        self.chosen.fill(false);
    }

    /// Marks pool row `index` chosen when it is one of this shard's.
    pub fn mark_chosen(&mut self, index: usize) {
        if let Some(c) = index.checked_sub(self.first).and_then(|i| self.chosen.get_mut(i)) {
            *c = true;
        }
    }
}

/// The driver of ACS-FW over a pool split into [`PoolShard`]s: L and σ from their setups, then
/// per step the global best of their vertices (ties to the lowest index) and the exact line
/// search — the picks, weights and objective of [`frank_wolfe_streamed`] on the same rows.
pub struct ShardedFrankWolfe {
    iterate: FeatureSpaceIterate,
    n: usize,
    distinct: bool,
    steps: usize,
}

impl ShardedFrankWolfe {
    /// From every shard's setup, in any order (they are put in row order and must cover
    /// `0..N` once, each but the last a whole number of blocks).
    pub fn new(mut setups: Vec<ShardSetup>, distinct: bool) -> Result<Self> {
        setups.sort_by_key(|s| s.first);
        let j = setups.first().and_then(|s| s.block_sums.first()).map_or(0, Vec::len);
        let mut total = vec![0.0; j];
        let mut norms = Vec::new();
        let last = setups.len().saturating_sub(1);
        for (i, s) in setups.iter().enumerate() {
            if s.first != norms.len() || (i < last && s.norms.len() % ROWS_PER_TASK != 0) || s.norms.is_empty() {
                return Err(invalid(
                    "shards",
                    s.first,
                    format!(
                        "shards must cover the pool once in whole blocks of {ROWS_PER_TASK} rows (all but the last)"
                    ),
                ));
            }
            for sums in &s.block_sums {
                if sums.len() != j {
                    return Err(invalid("shards", sums.len(), format!("every shard's rows hold {j} values")));
                }
                for (t, v) in total.iter_mut().zip(sums) {
                    *t += v;
                }
            }
            norms.extend_from_slice(&s.norms);
        }
        if norms.is_empty() {
            return Err(invalid("pool", 0, "the pool is empty"));
        }
        let n = norms.len();
        Ok(ShardedFrankWolfe { iterate: FeatureSpaceIterate::new(total, norms.iter().sum()), n, distinct, steps: 0 })
    }

    /// The residual L − L(w) the shards score their rows against.
    pub fn residual(&self) -> &[f64] {
        &self.iterate.residual
    }

    /// Steps taken.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Whether another step would change nothing: without `distinct`, L is reproduced.
    pub fn finished(&self) -> bool {
        !self.distinct && self.steps > 0 && self.iterate.reproduces_l()
    }

    /// Takes the step towards the best of the shards' vertices; returns the row picked, or
    /// `None` when no shard has one left.
    pub fn step(&mut self, vertices: impl IntoIterator<Item = Option<Vertex>>) -> Option<usize> {
        let best = vertices.into_iter().flatten().reduce(|a, b| {
            if b.score > a.score || (b.score == a.score && b.index < a.index) {
                b
            } else {
                a
            }
        })?;
        self.iterate.step(best.index, &best.row, best.sigma);
        self.steps += 1;
        Some(best.index)
    }

    pub fn into_batch(self) -> FwBatch {
        self.iterate.into_batch(self.n, self.distinct)
    }
}

/// ‖L̂_n‖, summed in the order the in-memory path sums it (column by column).
fn row_norm(row: &[f64]) -> f64 {
    let mut sq = 0.0;
    for v in row {
        sq += v * v;
    }
    sq.sqrt()
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

    /// The feature-space path (projections), the column path over the same vectors and the
    /// dense Gram matrix are one algorithm: same picks, weights and objective, with re-picks
    /// (25 iterations on 30 points) and with `distinct`.
    #[test]
    fn projections_columns_and_the_gram_matrix_give_the_same_batch() {
        let p = random_vectors(30, 5, 2);
        let projections = Projections(p.clone());
        for (iterations, distinct) in [(8, false), (25, false), (25, true)] {
            let a = frank_wolfe(&projections, iterations, distinct).unwrap();
            let b = frank_wolfe(&gram(&p), iterations, distinct).unwrap();
            let c = frank_wolfe_by_columns(&projections, iterations, distinct);
            for other in [&b, &c] {
                assert_eq!(a.picks, other.picks);
                assert_eq!(a.indices, other.indices);
                for (x, y) in a.objective.iter().zip(&other.objective) {
                    assert!((x - y).abs() < 1e-9 * x.max(1.0), "{x} vs {y}");
                }
                for (x, y) in a.weights.iter().zip(&other.weights) {
                    assert!((x - y).abs() < 1e-9 * x.abs().max(1.0), "{x} vs {y}");
                }
            }
            if !distinct && iterations == 25 {
                assert!(a.indices.len() < 25, "expected re-picks: {:?}", a.picks);
            }
        }
    }

    fn write_pool(dir: &std::path::Path, p: &Mat<f64>) -> std::path::PathBuf {
        let path = dir.join("pool.npy");
        let mut writer = hedge_data::NpyRowWriter::create(&path, p.nrows(), p.ncols()).unwrap();
        let rows: Vec<f64> =
            (0..p.nrows()).flat_map(|n| (0..p.ncols()).map(move |k| (n, k))).map(|(n, k)| p[(n, k)]).collect();
        writer.write_rows(&rows).unwrap();
        writer.finish().unwrap();
        path
    }

    /// Streaming the pool from disk is the same algorithm as holding it: identical picks,
    /// weights and objective, across several read blocks (70,000 rows in blocks of 8,192)
    /// and many shards, with re-picks and with `distinct`; also with a zero vector and exact
    /// duplicates (ties go to the lowest index in both).
    #[test]
    fn streamed_pool_gives_the_in_memory_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut small = random_vectors(40, 4, 9);
        for k in 0..4 {
            small[(3, k)] = 0.0;
            small[(30, k)] = small[(7, k)];
        }
        for (p, cases) in
            [(random_vectors(70_000, 3, 8), vec![(12, false), (12, true)]), (small, vec![(30, false), (30, true)])]
        {
            let path = write_pool(dir.path(), &p);
            let mut reader = NpyRowReader::open(&path).unwrap();
            for (iterations, distinct) in cases {
                let held = frank_wolfe(&Projections(p.clone()), iterations, distinct).unwrap();
                let streamed =
                    frank_wolfe_streamed_in_blocks(&mut reader, iterations, distinct, 2 * ROWS_PER_TASK).unwrap();
                assert_eq!(held.picks, streamed.picks, "N = {}, distinct = {distinct}", p.nrows());
                assert_eq!(held.indices, streamed.indices);
                assert_eq!(held.objective, streamed.objective);
                assert_eq!(held.weights, streamed.weights);
            }
        }
        let mut reader = NpyRowReader::open(&dir.path().join("pool.npy")).unwrap();
        let msg = frank_wolfe_streamed(&mut reader, 0, false).unwrap_err().to_string();
        assert!(msg.contains("'batch'") && msg.contains("at least one"), "{msg}");
    }

    /// A pool split into shards (three, the last partial, handed to the driver out of order)
    /// gives the streamed batch to the bit: picks, weights, objective.
    #[test]
    fn sharded_pool_gives_the_streamed_batch() {
        let p = random_vectors(3 * ROWS_PER_TASK - 1000, 4, 11);
        let (n, j) = (p.nrows(), p.ncols());
        let rows: Vec<f64> = (0..n).flat_map(|r| (0..j).map(move |k| (r, k))).map(|(r, k)| p[(r, k)]).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut reader = NpyRowReader::open(&write_pool(dir.path(), &p)).unwrap();
        for distinct in [true, false] {
            let streamed = frank_wolfe_streamed(&mut reader, 25, distinct).unwrap();
            let bounds = [0, ROWS_PER_TASK, 2 * ROWS_PER_TASK, n];
            let mut shards: Vec<PoolShard> = bounds
                .windows(2)
                .map(|w| PoolShard::new(w[0], j, rows[w[0] * j..w[1] * j].to_vec()).unwrap())
                .collect();
            let setups = shards.iter().rev().map(PoolShard::setup).collect();
            let mut driver = ShardedFrankWolfe::new(setups, distinct).unwrap();
            while driver.steps() < 25 && !driver.finished() {
                let residual = driver.residual().to_vec();
                let Some(f) = driver.step(shards.iter().map(|s| s.best(&residual, distinct))) else { break };
                shards.iter_mut().for_each(|s| s.mark_chosen(f));
            }
            let sharded = driver.into_batch();
            assert_eq!(sharded.picks, streamed.picks, "distinct = {distinct}");
            assert_eq!(sharded.weights, streamed.weights);
            assert_eq!(sharded.objective, streamed.objective);
            assert_eq!(sharded.indices, streamed.indices);
        }
        let msg = PoolShard::new(100, j, rows[..4 * j].to_vec()).unwrap_err().to_string();
        assert!(msg.contains("multiple of"), "{msg}");
        let gap = vec![shards_setup(&rows, j, 0, 10), shards_setup(&rows, j, ROWS_PER_TASK, 10)];
        let msg = ShardedFrankWolfe::new(gap, true).err().unwrap().to_string();
        assert!(msg.contains("cover the pool once"), "{msg}");
    }

    fn shards_setup(rows: &[f64], j: usize, first: usize, n: usize) -> ShardSetup {
        PoolShard::new(first, j, rows[first * j..(first + n) * j].to_vec()).unwrap().setup()
    }

    #[test]
    fn streamed_errors_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = random_vectors(10, 2, 1);
        let mut reader = NpyRowReader::open(&write_pool(dir.path(), &p)).unwrap();
        let msg = frank_wolfe_streamed(&mut reader, 0, false).unwrap_err().to_string();
        assert!(msg.contains("'batch'") && msg.contains("at least one"), "{msg}");
    }

    /// With J = 3 the batch reproduces L exactly after a few points; the paper's mode then stops
    /// instead of picking by rounding noise, while `distinct` still fills the batch.
    #[test]
    fn stops_once_l_is_reproduced_exactly() {
        let p = random_vectors(200, 3, 4);
        for pool in [&Projections(p.clone()) as &dyn PoolVectors, &gram(&p)] {
            let batch = frank_wolfe(pool, 50, false).unwrap();
            let last = *batch.objective.last().unwrap();
            assert!(batch.picks.len() < 50, "{:?}", batch.objective);
            assert!(last <= EXACT_FIT * batch.objective[0]);
            assert_eq!(frank_wolfe(pool, 50, true).unwrap().indices.len(), 50);
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
