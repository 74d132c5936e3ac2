//! The HIB evaluation protocol (Sections 4.2–4.4, Appendix G): verification AP, KNN
//! identification, uncertainty–performance correlations, calibration and risk–coverage.

use hedge_data::PairBatch;
use hedge_eval::{
    average_precision, equal_count_bins, expected_calibration_error, kendall_tau_b, knn_correct, risk_coverage, top_k,
    KnnRule,
};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::distribution::Embedding;
use crate::embed::EmbeddedSet;
use crate::loss::MatchHead;
use crate::{EmbedError, Result};

/// How p(m | x1, x2) is computed for stochastic embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MatchEstimator {
    /// Eq. 5: the average of σ(−a‖z1 − z2‖ + b) over K x K samples.
    MonteCarlo { samples: i64 },
    /// z1 − z2 is Gaussian (a Gaussian mixture for MoG embeddings), so the expectation is a
    /// Gauss–Hermite product rule with `points` nodes per dimension: no sampling noise.
    Quadrature { points: usize },
}

impl MatchEstimator {
    pub fn name(&self) -> &'static str {
        match self {
            MatchEstimator::MonteCarlo { .. } => "mc",
            MatchEstimator::Quadrature { .. } => "quadrature",
        }
    }
}

/// Expectation of σ(−a‖δ‖ + b) for δ ~ equal mixture over component pairs (c, c') of
/// N(μ1c − μ2c', v1c + v2c'), by a Gauss–Hermite product rule.
///
/// # Shapes
/// `e1`, `e2`: `B` inputs each (aligned); returns `[B]`.
pub fn match_probability_quadrature(
    matcher: &MatchHead,
    e1: &Embedding,
    e2: &Embedding,
    points: usize,
) -> Result<Tensor> {
    let (x, w) = hedge_eval::gauss_hermite(points)?;
    let d = e1.dim();
    let device = e1.mean.device();
    // Product grid: every combination of the 1-D nodes, [G, D], and its weights [G].
    let grid = (points as i64).pow(d as u32);
    let mut nodes = Vec::with_capacity((grid * d) as usize);
    let mut weights = Vec::with_capacity(grid as usize);
    for g in 0..grid {
        let (mut rest, mut wt) = (g, 1.0f64);
        for _ in 0..d {
            let i = (rest % points as i64) as usize;
            rest /= points as i64;
            nodes.push(x[i] * std::f64::consts::SQRT_2);
            wt *= w[i] / std::f64::consts::PI.sqrt();
        }
        weights.push(wt);
    }
    let nodes = Tensor::from_slice(&nodes).reshape([grid, d]).to_kind(Kind::Float).to_device(device);
    let weights = Tensor::from_slice(&weights).to_kind(Kind::Float).to_device(device);
    let zeros1 = || e1.mean.zeros_like();
    let zeros2 = || e2.mean.zeros_like();
    let v1 = e1.variance.as_ref().map_or_else(zeros1, Tensor::shallow_clone);
    let v2 = e2.variance.as_ref().map_or_else(zeros2, Tensor::shallow_clone);
    // Component pairs: [B, C1, C2, D].
    let mean = e1.mean.unsqueeze(2) - e2.mean.unsqueeze(1);
    let sd = (v1.unsqueeze(2) + v2.unsqueeze(1)).sqrt();
    // δ at every node: [B, C1, C2, G, D].
    let delta = mean.unsqueeze(3) + sd.unsqueeze(3) * nodes.view([1, 1, 1, grid, d]);
    let dist = (delta.square().sum_dim_intlist([4i64].as_slice(), false, Kind::Float) + 1e-12).sqrt();
    let p = (-matcher.a() * dist + &matcher.b).sigmoid(); // [B, C1, C2, G]
    let per_pair = (p * weights.view([1, 1, 1, grid])).sum_dim_intlist([3i64].as_slice(), false, Kind::Float);
    Ok(per_pair.mean_dim([1i64, 2].as_slice(), false, Kind::Float))
}

/// Options of [`evaluate_variant`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct EvalOptions {
    pub estimator: MatchEstimator,
    /// Neighbours of the KNN rule (the paper: 5).
    pub knn_k: usize,
    /// Uncertainty bins (the paper: 20).
    pub bins: usize,
    /// Candidates per probe, ranked first by the closest pair of component means, that the
    /// match probability then re-ranks (stochastic embeddings only; exhaustive scoring of
    /// 10⁸ pairs with K² samples each is minutes per repeat on a CPU).
    pub candidates: usize,
    /// Seed of the sampling noise of this repeat.
    pub seed: i64,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            estimator: MatchEstimator::MonteCarlo { samples: 8 },
            knn_k: 5,
            bins: 20,
            candidates: 100,
            seed: 0,
        }
    }
}

/// Scores every probe against a gallery: per probe, the gallery indices of its `k` best
/// matches (best first). With `leave_one_out`, probe i never matches gallery item i (the same
/// image, possibly in its other variant).
pub struct Scorer<'a> {
    pub matcher: &'a MatchHead,
    pub estimator: MatchEstimator,
    pub stochastic: bool,
}

impl Scorer<'_> {
    /// Per-image samples for Monte Carlo (drawn once per repeat, so a pair's score does not
    /// depend on which other pairs are scored with it).
    ///
    /// # Shapes
    /// returns `[N, K, D]`.
    fn samples(&self, set: &Embedding) -> Tensor {
        match self.estimator {
            MatchEstimator::MonteCarlo { samples } => set.sample(samples),
            MatchEstimator::Quadrature { .. } => set.mean.shallow_clone(),
        }
    }

    /// p(m | x1, x2) for aligned rows `left[i]`, `right[i]`, given per-image samples.
    fn pair_probability(&self, a: &Embedding, b: &Embedding, za: &Tensor, zb: &Tensor) -> Result<Tensor> {
        match self.estimator {
            MatchEstimator::MonteCarlo { .. } => Ok(self.matcher.log_match(za, zb).0.exp()),
            MatchEstimator::Quadrature { points } => match_probability_quadrature(self.matcher, a, b, points),
        }
    }

    /// Match probabilities of `pairs` in `set`.
    pub fn pair_scores(&self, set: &EmbeddedSet, pairs: &PairBatch) -> Result<Vec<f64>> {
        tch::no_grad(|| {
            let z = self.samples(&set.embedding);
            let idx = |v: &[usize]| Tensor::from_slice(&v.iter().map(|&i| i as i64).collect::<Vec<_>>());
            let (l, r) = (idx(&pairs.left), idx(&pairs.right));
            let p = self.pair_probability(
                &select(&set.embedding, &l),
                &select(&set.embedding, &r),
                &z.index_select(0, &l),
                &z.index_select(0, &r),
            )?;
            Ok(Vec::<f64>::try_from(p.to_kind(Kind::Double))?)
        })
    }

    /// The `k` best gallery matches of every probe, best first.
    pub fn neighbours(
        &self,
        probes: &Embedding,
        gallery: &Embedding,
        k: usize,
        candidates: usize,
        leave_one_out: bool,
    ) -> Result<Vec<Vec<usize>>> {
        tch::no_grad(|| {
            let n_probe = probes.batch();
            let n_gallery = gallery.batch();
            let zp = self.samples(probes);
            let zg = self.samples(gallery);
            let mut out = Vec::with_capacity(n_probe as usize);
            let chunk = 250i64;
            let mut start = 0;
            while start < n_probe {
                let len = chunk.min(n_probe - start);
                let p = probes.narrow(start, len);
                // Distances between every pair of component means: [len, n_gallery, C, C].
                let diff = p.mean.view([len, 1, -1, 1, p.dim()]) - gallery.mean.view([1, n_gallery, 1, -1, p.dim()]);
                let dist = (diff.square().sum_dim_intlist([4i64].as_slice(), false, Kind::Float) + 1e-12).sqrt();
                // Ranking score: the exact one for points (−distance); for distributions the
                // match probability of the component means, averaged over component pairs as the
                // mixture averages (variance ignored), which the exact estimator then re-ranks.
                let mut rank = if self.stochastic {
                    (-self.matcher.a() * &dist + &self.matcher.b).sigmoid().mean_dim(
                        [2i64, 3].as_slice(),
                        false,
                        Kind::Float,
                    )
                } else {
                    -dist.amin([2i64, 3].as_slice(), false)
                };
                if leave_one_out {
                    // Probe i and gallery item i are the same image: never its own neighbour.
                    let rows = Tensor::arange(len, (Kind::Int64, Device::Cpu));
                    let cols = &rows + start;
                    let _ = rank.index_put_(&[Some(rows), Some(cols)], &Tensor::from(f32::NEG_INFINITY), false);
                }
                if !self.stochastic {
                    let d: Vec<f64> = Vec::<f64>::try_from(rank.to_kind(Kind::Double).flatten(0, -1))?;
                    for row in d.chunks(n_gallery as usize) {
                        out.push(top_k(row, k, None));
                    }
                } else {
                    let m = (candidates.max(k) as i64).min(n_gallery - i64::from(leave_one_out));
                    let (_, cand) = rank.topk(m, 1, true, true); // [len, m], best first
                    let flat = cand.flatten(0, -1);
                    let probe_rows = Tensor::arange(len, (Kind::Int64, Device::Cpu))
                        .unsqueeze(1)
                        .expand([len, m], false)
                        .flatten(0, -1)
                        + start;
                    let pa = select(probes, &probe_rows);
                    let gb = select(gallery, &flat);
                    let prob =
                        self.pair_probability(&pa, &gb, &zp.index_select(0, &probe_rows), &zg.index_select(0, &flat))?;
                    let prob: Vec<f64> = Vec::<f64>::try_from(prob.to_kind(Kind::Double))?;
                    let cand: Vec<i64> = Vec::<i64>::try_from(flat)?;
                    for (row_p, row_c) in prob.chunks(m as usize).zip(cand.chunks(m as usize)) {
                        out.push(top_k(row_p, k, None).into_iter().map(|j| row_c[j] as usize).collect());
                    }
                }
                start += len;
            }
            Ok(out)
        })
    }
}

fn select(e: &Embedding, idx: &Tensor) -> Embedding {
    Embedding { mean: e.mean.index_select(0, idx), variance: e.variance.as_ref().map(|v| v.index_select(0, idx)) }
}

/// η for every image of `set` under the estimator (seeded by the caller for Monte Carlo).
pub fn self_mismatch(matcher: &MatchHead, set: &Embedding, estimator: MatchEstimator) -> Result<Vec<f64>> {
    tch::no_grad(|| {
        let eta = match estimator {
            MatchEstimator::MonteCarlo { samples } => matcher.self_mismatch(set, samples),
            MatchEstimator::Quadrature { points } => 1.0 - match_probability_quadrature(matcher, set, set, points)?,
        };
        Ok(Vec::<f64>::try_from(eta.to_kind(Kind::Double))?)
    })
}

/// Everything measured on one variant (clean or corrupt) in one repeat.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantMetrics {
    pub verification_ap: f64,
    pub knn_majority: f64,
    pub knn_plurality: f64,
    /// −τ_b(bin index, AP of the bin's pairs); `None` without uncertainty (point embeddings).
    pub tau_ap: Option<f64>,
    /// −τ_b(bin index, KNN accuracy of the bin's images).
    pub tau_knn: Option<f64>,
    pub bin_ap: Vec<f64>,
    pub bin_knn: Vec<f64>,
    pub ece: f64,
    pub aurc: f64,
    /// Per image: KNN (majority) correct, and η.
    #[serde(skip)]
    pub correct: Vec<bool>,
    #[serde(skip)]
    pub eta: Vec<f64>,
    #[serde(skip)]
    pub pair_scores: Vec<f64>,
}

/// One repeat of the evaluation of `set` (leave-one-out KNN within the set).
pub fn evaluate_variant(
    matcher: &MatchHead,
    set: &EmbeddedSet,
    pairs: &PairBatch,
    stochastic: bool,
    options: &EvalOptions,
) -> Result<VariantMetrics> {
    tch::manual_seed(options.seed);
    let scorer = Scorer { matcher, estimator: options.estimator, stochastic };
    let scores = scorer.pair_scores(set, pairs)?;
    let verification_ap = average_precision(&scores, &pairs.is_match)?;
    let neighbours = scorer.neighbours(&set.embedding, &set.embedding, options.knn_k, options.candidates, true)?;
    let labels_of = |n: &Vec<usize>| n.iter().map(|&j| set.labels[j]).collect::<Vec<u32>>();
    let nl: Vec<Vec<u32>> = neighbours.iter().map(labels_of).collect();
    let correct: Vec<bool> = set.labels.iter().zip(&nl).map(|(&t, n)| knn_correct(t, n, KnnRule::Majority)).collect();
    let plural = set.labels.iter().zip(&nl).filter(|(&t, n)| knn_correct(t, n, KnnRule::Plurality)).count();
    let n = set.len() as f64;
    let eta =
        if stochastic { self_mismatch(matcher, &set.embedding, options.estimator)? } else { vec![0.0; set.len()] };
    let (mut tau_ap, mut tau_knn, mut bin_ap, mut bin_knn) = (None, None, Vec::new(), Vec::new());
    if stochastic {
        let bins = equal_count_bins(&eta, options.bins)?;
        bin_knn = bins.iter().map(|b| b.iter().filter(|&&i| correct[i]).count() as f64 / b.len() as f64).collect();
        let pair_eta: Vec<f64> = pairs.left.iter().zip(&pairs.right).map(|(&l, &r)| 0.5 * (eta[l] + eta[r])).collect();
        for b in equal_count_bins(&pair_eta, options.bins)? {
            let s: Vec<f64> = b.iter().map(|&k| scores[k]).collect();
            let y: Vec<bool> = b.iter().map(|&k| pairs.is_match[k]).collect();
            // A bin without a matching pair has no AP; it is left out of the correlation.
            bin_ap.push(average_precision(&s, &y).unwrap_or(f64::NAN));
        }
        tau_knn = inverted_tau(&bin_knn);
        tau_ap = inverted_tau(&bin_ap);
    }
    Ok(VariantMetrics {
        verification_ap,
        knn_majority: correct.iter().filter(|&&c| c).count() as f64 / n,
        knn_plurality: plural as f64 / n,
        tau_ap,
        tau_knn,
        bin_ap,
        bin_knn,
        ece: expected_calibration_error(&scores, &pairs.is_match, 10)?,
        aurc: risk_coverage(&eta, &correct)?.aurc,
        correct,
        eta,
        pair_scores: scores,
    })
}

/// −τ_b(bin index, performance) over the bins with a defined performance, so that
/// "performance falls as uncertainty rises" is positive (Table 2). `None` when undefined.
pub fn inverted_tau(per_bin: &[f64]) -> Option<f64> {
    let (idx, perf): (Vec<f64>, Vec<f64>) =
        per_bin.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| (i as f64, v)).unzip();
    kendall_tau_b(&idx, &perf).ok().map(|t| -t)
}

/// KNN accuracy (majority, plurality) with a separate gallery and probe set (Appendix G), leaving
/// out each probe's own image.
pub fn gallery_probe_accuracy(
    matcher: &MatchHead,
    gallery: &EmbeddedSet,
    probes: &EmbeddedSet,
    stochastic: bool,
    options: &EvalOptions,
) -> Result<(f64, f64)> {
    if gallery.labels != probes.labels {
        return Err(EmbedError::config(
            "gallery",
            "gallery and probe sets must be the two variants of the same images".to_string(),
        ));
    }
    tch::manual_seed(options.seed);
    let scorer = Scorer { matcher, estimator: options.estimator, stochastic };
    let neighbours =
        scorer.neighbours(&probes.embedding, &gallery.embedding, options.knn_k, options.candidates, true)?;
    let (mut major, mut plural) = (0usize, 0usize);
    for (i, n) in neighbours.iter().enumerate() {
        let labels: Vec<u32> = n.iter().map(|&j| gallery.labels[j]).collect();
        major += usize::from(knn_correct(probes.labels[i], &labels, KnnRule::Majority));
        plural += usize::from(knn_correct(probes.labels[i], &labels, KnnRule::Plurality));
    }
    let n = probes.len() as f64;
    Ok((major as f64 / n, plural as f64 / n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::nn;

    fn head(a: f64, b: f64) -> (nn::VarStore, MatchHead) {
        let vs = nn::VarStore::new(Device::Cpu);
        let h = MatchHead::new(vs.root() / "m", a, b);
        (vs, h)
    }

    /// libtorch's generator is process-wide; tests that need a fixed stream take turns.
    static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn random_set(n: i64, c: i64, d: i64, var_scale: f64) -> Embedding {
        Embedding {
            mean: Tensor::randn([n, c, d], (Kind::Float, Device::Cpu)) * 2.0,
            variance: Some(Tensor::rand([n, c, d], (Kind::Float, Device::Cpu)) * var_scale + 1e-3),
        }
    }

    /// The paper's estimator is K = 8 Monte Carlo; its expectation is what quadrature computes.
    /// Averaging 20,000 independent K = 8 estimates leaves a standard error below 1e-3.
    #[test]
    fn quadrature_equals_the_expectation_of_k8_monte_carlo() {
        let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
        tch::manual_seed(11);
        let (_vs, h) = head(1.7, 0.9);
        let repeats = 20_000;
        for (c, d) in [(1, 2), (2, 2), (1, 3)] {
            let e1 = random_set(6, c, d, 0.8);
            let e2 = random_set(6, c, d, 0.8);
            let q = match_probability_quadrature(&h, &e1, &e2, 24).unwrap();
            let rep = |e: &Embedding| Embedding {
                mean: e.mean.repeat([repeats, 1, 1]),
                variance: e.variance.as_ref().map(|v| v.repeat([repeats, 1, 1])),
            };
            let mc = h.match_probability(&rep(&e1), &rep(&e2), 8).view([repeats, 6]).mean_dim(0, false, Kind::Float);
            let gap = f64::try_from((q - mc).abs().max()).unwrap();
            assert!(gap < 3e-3, "C = {c}, D = {d}: quadrature and Monte Carlo differ by {gap}");
        }
    }

    #[test]
    fn quadrature_of_points_is_the_point_match_probability() {
        let (_vs, h) = head(2.0, 0.5);
        let e1 = Embedding::point(Tensor::from_slice(&[0.0f32, 0.0]).reshape([1, 2]));
        let e2 = Embedding::point(Tensor::from_slice(&[0.6f32, 0.8]).reshape([1, 2]));
        let p = match_probability_quadrature(&h, &e1, &e2, 8).unwrap().double_value(&[0]);
        assert!((p - 1.0 / (1.0 + (2.0f64 - 0.5).exp())).abs() < 1e-6, "{p}");
    }

    #[test]
    fn candidate_prefilter_finds_the_exhaustive_neighbours() {
        let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
        tch::manual_seed(5);
        let (_vs, h) = head(1.5, 1.0);
        let set = random_set(300, 2, 2, 0.3);
        let scorer = Scorer { matcher: &h, estimator: MatchEstimator::MonteCarlo { samples: 8 }, stochastic: true };
        tch::manual_seed(1);
        let exhaustive = scorer.neighbours(&set, &set, 5, 299, true).unwrap();
        tch::manual_seed(1);
        let filtered = scorer.neighbours(&set, &set, 5, 60, true).unwrap();
        let same = exhaustive.iter().zip(&filtered).filter(|(a, b)| a == b).count();
        assert!(same >= 297, "only {same} of 300 neighbour lists agree");
        assert!(exhaustive.iter().enumerate().all(|(i, n)| !n.contains(&i)), "leave-one-out");
    }

    #[test]
    fn inverted_tau_is_positive_when_performance_falls() {
        assert_eq!(inverted_tau(&[0.9, 0.8, 0.7, 0.5]), Some(1.0));
        assert_eq!(
            inverted_tau(&[0.9, f64::NAN, 0.7, 0.95]).map(|t| (t * 1e6).round()),
            Some(-(1.0 / 3.0 * 1e6f64).round())
        );
        assert_eq!(inverted_tau(&[0.5, 0.5]), None);
    }
}

/// Mean and standard deviation over repeats.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct MeanStd {
    pub mean: f64,
    pub std: f64,
}

impl MeanStd {
    /// Over the defined values; `None` when there are none.
    pub fn of(values: &[Option<f64>]) -> Option<MeanStd> {
        let v: Vec<f64> = values.iter().flatten().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        Some(MeanStd { mean, std: var.sqrt() })
    }
}

/// Options of [`evaluate_model`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ModelEvalOptions {
    pub base: EvalOptions,
    /// Repeats of the sampling-dependent evaluation (the paper: 10). Deterministic evaluations
    /// (point embeddings, quadrature) run once.
    pub repeats: usize,
    pub matching_pairs: usize,
    pub non_matching_pairs: usize,
    pub pair_seed: u64,
}

impl Default for ModelEvalOptions {
    fn default() -> Self {
        ModelEvalOptions {
            base: EvalOptions::default(),
            repeats: 10,
            matching_pairs: 5000,
            non_matching_pairs: 5000,
            pair_seed: 1,
        }
    }
}

/// Summary of one variant over the repeats.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantSummary {
    pub verification_ap: MeanStd,
    pub knn_majority: MeanStd,
    pub knn_plurality: MeanStd,
    pub tau_ap: Option<MeanStd>,
    pub tau_knn: Option<MeanStd>,
    pub ece: MeanStd,
    pub aurc: MeanStd,
    /// Per-bin AP and KNN accuracy, averaged over repeats (bin 0 = most certain).
    pub bin_ap: Vec<f64>,
    pub bin_knn: Vec<f64>,
}

/// The whole evaluation of one model on one split.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelEval {
    pub clean: VariantSummary,
    pub corrupt: VariantSummary,
    /// ECE of p(m | x1, x2) over the clean and corrupt verification pairs together.
    pub ece: MeanStd,
    /// Area under the risk–coverage curve of majority-KNN identification, clean and corrupt
    /// probes together, rejecting by η.
    pub aurc: MeanStd,
    /// Risk at 20 evenly spaced coverages (5 %, 10 %, … 100 %) of the pooled curve (repeat 0).
    pub risk_at_coverage: Vec<f64>,
    /// Appendix G: (majority, plurality) KNN accuracy per gallery/probe combination (repeat 0).
    pub gallery_probe: GalleryProbe,
    pub repeats: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GalleryProbe {
    pub clean_gallery_clean_probe: (f64, f64),
    pub clean_gallery_corrupt_probe: (f64, f64),
    pub corrupt_gallery_clean_probe: (f64, f64),
}

/// Evaluates a model on the clean and corrupt twins of a test split.
pub fn evaluate_model(
    matcher: &MatchHead,
    clean: &EmbeddedSet,
    corrupt: &EmbeddedSet,
    stochastic: bool,
    options: &ModelEvalOptions,
    mut progress: impl FnMut(&str),
) -> Result<ModelEval> {
    let pairs = hedge_data::verification_pairs(
        &clean.labels,
        options.matching_pairs,
        options.non_matching_pairs,
        options.pair_seed,
    )?;
    let deterministic = !stochastic || matches!(options.base.estimator, MatchEstimator::Quadrature { .. });
    let repeats = if deterministic { 1 } else { options.repeats.max(1) };
    let (mut runs_clean, mut runs_corrupt) = (Vec::new(), Vec::new());
    let (mut pooled_ece, mut pooled_aurc) = (Vec::new(), Vec::new());
    let mut risk_at_coverage = Vec::new();
    for r in 0..repeats {
        progress(&format!("repeat {}/{repeats}", r + 1));
        let opts = EvalOptions { seed: options.base.seed + r as i64, ..options.base };
        let c = evaluate_variant(matcher, clean, &pairs, stochastic, &opts)?;
        let k = evaluate_variant(matcher, corrupt, &pairs, stochastic, &opts)?;
        let scores: Vec<f64> = c.pair_scores.iter().chain(&k.pair_scores).copied().collect();
        let labels: Vec<bool> = pairs.is_match.iter().chain(&pairs.is_match).copied().collect();
        pooled_ece.push(Some(expected_calibration_error(&scores, &labels, 10)?));
        let eta: Vec<f64> = c.eta.iter().chain(&k.eta).copied().collect();
        let correct: Vec<bool> = c.correct.iter().chain(&k.correct).copied().collect();
        let rc = risk_coverage(&eta, &correct)?;
        pooled_aurc.push(Some(rc.aurc));
        if r == 0 {
            let n = rc.risk.len();
            risk_at_coverage = (1..=20).map(|q| rc.risk[(q * n / 20).max(1) - 1]).collect();
        }
        runs_clean.push(c);
        runs_corrupt.push(k);
    }
    progress("gallery/probe variants");
    let opts = EvalOptions { seed: options.base.seed, ..options.base };
    let cc = (runs_clean[0].knn_majority, runs_clean[0].knn_plurality);
    let ck = gallery_probe_accuracy(matcher, clean, corrupt, stochastic, &opts)?;
    let kc = gallery_probe_accuracy(matcher, corrupt, clean, stochastic, &opts)?;
    Ok(ModelEval {
        clean: summarise(&runs_clean),
        corrupt: summarise(&runs_corrupt),
        ece: MeanStd::of(&pooled_ece).unwrap_or_default(),
        aurc: MeanStd::of(&pooled_aurc).unwrap_or_default(),
        risk_at_coverage,
        gallery_probe: GalleryProbe {
            clean_gallery_clean_probe: cc,
            clean_gallery_corrupt_probe: ck,
            corrupt_gallery_clean_probe: kc,
        },
        repeats,
    })
}

fn summarise(runs: &[VariantMetrics]) -> VariantSummary {
    let of = |f: &dyn Fn(&VariantMetrics) -> Option<f64>| MeanStd::of(&runs.iter().map(f).collect::<Vec<_>>());
    let bins = |f: &dyn Fn(&VariantMetrics) -> &Vec<f64>| -> Vec<f64> {
        let len = f(&runs[0]).len();
        (0..len)
            .map(|b| {
                let v: Vec<f64> = runs.iter().map(|r| f(r)[b]).filter(|x| x.is_finite()).collect();
                if v.is_empty() {
                    f64::NAN
                } else {
                    v.iter().sum::<f64>() / v.len() as f64
                }
            })
            .collect()
    };
    VariantSummary {
        verification_ap: of(&|r| Some(r.verification_ap)).unwrap_or_default(),
        knn_majority: of(&|r| Some(r.knn_majority)).unwrap_or_default(),
        knn_plurality: of(&|r| Some(r.knn_plurality)).unwrap_or_default(),
        tau_ap: of(&|r| r.tau_ap),
        tau_knn: of(&|r| r.tau_knn),
        ece: of(&|r| Some(r.ece)).unwrap_or_default(),
        aurc: of(&|r| Some(r.aurc)).unwrap_or_default(),
        bin_ap: bins(&|r| &r.bin_ap),
        bin_knn: bins(&|r| &r.bin_knn),
    }
}
