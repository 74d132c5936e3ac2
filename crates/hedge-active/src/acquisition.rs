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

/// Differential entropy of a Student-t with `dof` degrees of freedom and scale² `scale_squared`
/// (the normal's for `dof` = ∞).
pub fn student_t_entropy(scale_squared: f64, dof: f64) -> f64 {
    if dof.is_infinite() {
        return gaussian_entropy(scale_squared);
    }
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
    if pred.dof() <= 2.0 {
        return Err(invalid("a", posterior.a, "the predictive variance needs 2ã > 2 (more labels or a larger a₀)"));
    }
    let draws = posterior.sample(j, rng)?;
    let n = phi.nrows();
    let var = pred.variance();
    let entropy: Vec<f64> = pred.observed_variance().iter().map(|&s| student_t_entropy(s, pred.dof())).collect();
    let norm = 1.0 / (j as f64).sqrt();
    let mut out = Mat::zeros(n, j);
    for (k, (w, sigma2)) in draws.iter().enumerate() {
        for i in 0..n {
            let f: f64 = (0..phi.ncols()).map(|c| phi[(i, c)] * w[c]).sum();
            let expected = -0.5 * (2.0 * std::f64::consts::PI * sigma2).ln()
                - (var[i] + (pred.mean[i] - f).powi(2)) / (2.0 * sigma2);
            out[(i, k)] = norm * (expected + entropy[i]);
        }
    }
    Ok(Projections(out))
}

/// LCMD, "largest cluster maximum distance" (Holzmüller, Zaverkin, Kästner and Steinwart, "A
/// Framework and Benchmark for Deep Batch Active Learning for Regression", JMLR 2023), in its
/// TP mode: the labelled points are the first cluster centres, every pool point belongs to its
/// nearest centre (squared Euclidean distance of the features, i.e. the last-layer linear
/// kernel's distance), and each step picks, in the cluster whose points' squared distances sum
/// highest, the point farthest from its centre, which becomes a centre itself. Returns `b`
/// distinct rows of `pool` in the order they were picked. O(pool · b · features).
///
/// # Shapes
/// `labelled`: `[n, k]`, `pool`: `[m, k]` → `min(b, m)` indices into `pool`'s rows.
pub fn lcmd(labelled: MatRef<'_, f64>, pool: MatRef<'_, f64>, b: usize) -> Result<Vec<usize>> {
    if labelled.ncols() != pool.ncols() {
        return Err(ActiveError::ShapeMismatch {
            what: "LCMD features: labelled vs pool".into(),
            expected: format!("{} columns", labelled.ncols()),
            found: format!("{} columns", pool.ncols()),
        });
    }
    if labelled.nrows() == 0 {
        return Err(invalid("labelled", 0, "LCMD starts its clusters at the labelled points: label at least one"));
    }
    let (m, k) = (pool.nrows(), pool.ncols());
    // Row-major copies: every step scans the pool once, one contiguous row per point.
    let rows =
        |x: MatRef<'_, f64>| -> Vec<f64> { (0..x.nrows()).flat_map(|i| (0..k).map(move |j| x[(i, j)])).collect() };
    let (points, centres) = (rows(pool), rows(labelled));
    let distance = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum() };
    // (squared distance, centre) of each pool point: centres 0..n are the labelled rows, n.. the picks.
    let mut nearest = vec![(f64::INFINITY, 0); m];
    for (c, centre) in centres.chunks_exact(k.max(1)).enumerate().take(labelled.nrows()) {
        for (best, point) in nearest.iter_mut().zip(points.chunks_exact(k.max(1))) {
            let d = distance(point, centre);
            if d < best.0 {
                *best = (d, c);
            }
        }
    }
    let mut picked = Vec::with_capacity(b.min(m));
    let mut is_picked = vec![false; m];
    while picked.len() < b.min(m) {
        // Mass of each cluster over its unpicked points (a pick has distance 0 to itself);
        // only clusters with an unpicked point compete, so the heaviest always offers one.
        let clusters = labelled.nrows() + picked.len();
        let mut mass: Vec<Option<f64>> = vec![None; clusters];
        for (i, &(d, c)) in nearest.iter().enumerate() {
            if !is_picked[i] {
                *mass[c].get_or_insert(0.0) += d;
            }
        }
        let heaviest = (0..clusters)
            .filter_map(|c| Some((c, mass[c]?)))
            .max_by(|a, c| a.1.total_cmp(&c.1).then(c.0.cmp(&a.0)))
            .expect("an unpicked point remains")
            .0;
        let pick = (0..m)
            .filter(|&i| nearest[i].1 == heaviest && !is_picked[i])
            .max_by(|&i, &j| nearest[i].0.total_cmp(&nearest[j].0).then(j.cmp(&i)))
            .expect("the heaviest cluster has an unpicked point");
        let centre = &points[pick * k..(pick + 1) * k];
        for (best, point) in nearest.iter_mut().zip(points.chunks_exact(k.max(1))) {
            let d = distance(point, centre);
            if d < best.0 {
                *best = (d, clusters);
            }
        }
        picked.push(pick);
        is_picked[pick] = true;
    }
    Ok(picked)
}

/// One shard of an LCMD pool (rows `first ..` of the pool's features), for a pool split across
/// machines: it keeps each of its points' nearest centre, and per step reports what the driver
/// ([`lcmd_sharded`]) needs: every cluster's mass over its unpicked points, then its farthest
/// unpicked point in the cluster the driver chose.
#[derive(Debug, Clone)]
pub struct LcmdShard {
    first: usize,
    cols: usize,
    points: Vec<f64>,
    /// (squared distance, centre) of each point.
    nearest: Vec<(f64, usize)>,
    picked: Vec<bool>,
    /// One more than the highest centre id added.
    centres: usize,
}

fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

impl LcmdShard {
    /// Rows `first ..` of the pool (`cols` features each, row-major), with the labelled rows
    /// (`labelled`, row-major) as the first centres.
    pub fn new(first: usize, cols: usize, points: Vec<f64>, labelled: &[f64]) -> Result<Self> {
        if cols == 0 || points.is_empty() || points.len() % cols != 0 || labelled.len() % cols != 0 {
            return Err(invalid("pool", points.len(), format!("give whole rows of {cols} features")));
        }
        if labelled.is_empty() {
            return Err(invalid("labelled", 0, "LCMD starts its clusters at the labelled points: label at least one"));
        }
        let m = points.len() / cols;
        let mut shard =
            LcmdShard { first, cols, points, nearest: vec![(f64::INFINITY, 0); m], picked: vec![false; m], centres: 0 };
        for (c, centre) in labelled.chunks_exact(cols).enumerate() {
            shard.add_centre(c, centre);
        }
        Ok(shard)
    }

    /// Each cluster's mass (sum of squared distances) over this shard's unpicked points, `None`
    /// where it has none; `clusters` centres exist so far.
    pub fn masses(&self, clusters: usize) -> Vec<Option<f64>> {
        let mut mass: Vec<Option<f64>> = vec![None; clusters];
        for (i, &(d, c)) in self.nearest.iter().enumerate() {
            if !self.picked[i] {
                *mass[c].get_or_insert(0.0) += d;
            }
        }
        mass
    }

    /// (squared distance, pool row, its features) of the unpicked point of `cluster` farthest
    /// from its centre, ties to the lowest row.
    pub fn farthest(&self, cluster: usize) -> Option<(f64, usize, Vec<f64>)> {
        (0..self.nearest.len())
            .filter(|&i| self.nearest[i].1 == cluster && !self.picked[i])
            .max_by(|&i, &j| self.nearest[i].0.total_cmp(&self.nearest[j].0).then(j.cmp(&i)))
            .map(|i| (self.nearest[i].0, self.first + i, self.points[i * self.cols..(i + 1) * self.cols].to_vec()))
    }

    /// A new centre `id` at `features` (a pick, of any shard); marks it picked here if it is ours.
    pub fn add_centre(&mut self, id: usize, features: &[f64]) {
        self.centres = self.centres.max(id + 1);
        for (best, point) in self.nearest.iter_mut().zip(self.points.chunks_exact(self.cols)) {
            let d = squared_distance(point, features);
            if d < best.0 {
                *best = (d, id);
            }
        }
    }

    /// Features per point.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// How many centres it knows (one more than the highest id added): [`LcmdShard::masses`]
    /// needs at least that many clusters.
    pub fn centres(&self) -> usize {
        self.centres
    }

    /// Marks pool row `index` picked when it is one of this shard's.
    pub fn mark_picked(&mut self, index: usize) {
        if let Some(p) = index.checked_sub(self.first).and_then(|i| self.picked.get_mut(i)) {
            *p = true;
        }
    }
}

/// The driver's first half of an LCMD step over shards: the cluster whose mass, summed over
/// every shard's [`LcmdShard::masses`], is the highest (ties to the lowest cluster); `None` when
/// no cluster has an unpicked point.
pub fn heaviest_cluster(masses: &[Vec<Option<f64>>], clusters: usize) -> Option<usize> {
    let mut mass: Vec<Option<f64>> = vec![None; clusters];
    for part in masses {
        for (total, p) in mass.iter_mut().zip(part) {
            if let Some(p) = p {
                *total.get_or_insert(0.0) += p;
            }
        }
    }
    (0..clusters)
        .filter_map(|c| Some((c, mass[c]?)))
        .max_by(|a, c| a.1.total_cmp(&c.1).then(c.0.cmp(&a.0)))
        .map(|(c, _)| c)
}

/// The driver's second half: of every shard's [`LcmdShard::farthest`] point in the heaviest
/// cluster, the farthest (ties to the lowest row) — the step's pick.
pub fn farthest_pick(candidates: impl IntoIterator<Item = (f64, usize, Vec<f64>)>) -> Option<(f64, usize, Vec<f64>)> {
    candidates.into_iter().max_by(|a, c| a.0.total_cmp(&c.0).then(c.1.cmp(&a.1)))
}

/// LCMD over a pool split into [`LcmdShard`]s (`labelled` centres to start, as in every shard):
/// per step the cluster whose mass summed over the shards is the highest
/// ([`heaviest_cluster`]), then its farthest unpicked point over the shards
/// ([`farthest_pick`]). The same rule as [`lcmd`]; a cluster's mass is summed shard by shard,
/// so on exact ties of mass the two may differ.
pub fn lcmd_sharded(shards: &mut [LcmdShard], labelled: usize, b: usize) -> Vec<usize> {
    let m: usize = shards.iter().map(|s| s.nearest.len()).sum();
    let mut picked = Vec::with_capacity(b.min(m));
    while picked.len() < b.min(m) {
        let clusters = labelled + picked.len();
        let masses: Vec<_> = shards.iter().map(|s| s.masses(clusters)).collect();
        let Some(heaviest) = heaviest_cluster(&masses, clusters) else {
            break;
        };
        let Some((_, pick, features)) = farthest_pick(shards.iter().filter_map(|s| s.farthest(heaviest))) else {
            break;
        };
        for s in shards.iter_mut() {
            s.add_centre(clusters, &features);
            s.mark_picked(pick);
        }
        picked.push(pick);
    }
    picked
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

    /// Worked by hand: one labelled centre at the origin; a far cluster around (10, 0) and a
    /// near one on the y axis. Step 1: one cluster, its farthest point (10.5, 0). Step 2: the
    /// origin's cluster keeps (0, 1) and (0, 1.2) (mass 1 + 1.44 = 2.44) against (10, 0) and
    /// (9.5, 0) around (10.5, 0) (0.25 + 1 = 1.25): its farthest point, (0, 1.2).
    #[test]
    fn sharded_lcmd_picks_what_lcmd_picks() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (m, n, k) = (900, 5, 4);
        let pool = Mat::from_fn(m, k, |_, _| rng.random::<f64>());
        let labelled = Mat::from_fn(n, k, |_, _| rng.random::<f64>());
        let rows = |x: &Mat<f64>| -> Vec<f64> {
            (0..x.nrows()).flat_map(|i| (0..k).map(move |j| (i, j))).map(|(i, j)| x[(i, j)]).collect()
        };
        let (points, centres) = (rows(&pool), rows(&labelled));
        let want = lcmd(labelled.as_ref(), pool.as_ref(), 40).unwrap();
        let mut shards: Vec<LcmdShard> = [0, 300, 650, m]
            .windows(2)
            .map(|w| LcmdShard::new(w[0], k, points[w[0] * k..w[1] * k].to_vec(), &centres).unwrap())
            .collect();
        assert_eq!(lcmd_sharded(&mut shards, n, 40), want);
    }

    #[test]
    fn lcmd_picks_the_farthest_point_of_the_heaviest_cluster() {
        let labelled = Mat::from_fn(1, 2, |_, _| 0.0);
        let points = [[10.0, 0.0], [10.5, 0.0], [9.5, 0.0], [0.0, 1.0], [0.0, 1.2]];
        let pool = Mat::from_fn(5, 2, |i, j| points[i][j]);
        assert_eq!(lcmd(labelled.as_ref(), pool.as_ref(), 2).unwrap(), vec![1, 4]);
        // Asking for the whole pool returns each point once.
        let mut all = lcmd(labelled.as_ref(), pool.as_ref(), 9).unwrap();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
        let wrong = Mat::from_fn(1, 3, |_, _| 0.0);
        assert!(lcmd(wrong.as_ref(), pool.as_ref(), 1).is_err());
        let none = Mat::<f64>::zeros(0, 2);
        assert!(matches!(
            lcmd(none.as_ref(), pool.as_ref(), 1),
            Err(ActiveError::Run(hedge_run::RunError::InvalidConfig { .. }))
        ));
    }
}
