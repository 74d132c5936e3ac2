//! The HIB evaluation protocol (Sections 4.2–4.4, Appendix G): verification AP, KNN
//! identification, uncertainty–performance correlations, calibration and risk–coverage.

use hedge_data::PairBatch;
use hedge_eval::{
    average_precision, equal_count_bins, expected_calibration_error, kendall_tau_b, knn_correct, risk_coverage, top_k,
    verification_decisions, KnnRule, MeanStd, ReliabilityAccumulator, ReliabilityDiagram,
};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::distribution::{index_tensor, Embedding};
use crate::embed::EmbeddedSet;
use crate::loss::{ClosedForm, MatchHead, Matching};
use crate::{EmbedError, Result};

/// How p(m | x1, x2) is computed for stochastic embeddings.
///
/// Reads and writes as `{"kind": "monte_carlo", "samples": 8}`, `{"kind": "quadrature",
/// "points": 32}` or `{"kind": NAME}` for a registered loss's closed form
/// ([`crate::losses::closed_form_named`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(try_from = "EstimatorForm", into = "EstimatorForm")]
pub enum MatchEstimator {
    /// Eq. 5: the average of σ(−a‖z1 − z2‖ + b) over K x K samples.
    MonteCarlo { samples: i64 },
    /// z1 − z2 is Gaussian (a Gaussian mixture for MoG embeddings), so the expectation is a
    /// Gauss–Hermite product rule with `points` nodes per dimension: no sampling noise.
    Quadrature { points: usize },
    /// The closed form of the loss that trained the model ([`crate::loss::Matching`]): exact,
    /// and its neighbours ranked over the whole gallery.
    ClosedForm(&'static ClosedForm),
}

impl PartialEq for MatchEstimator {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (MatchEstimator::MonteCarlo { samples: a }, MatchEstimator::MonteCarlo { samples: b }) => a == b,
            (MatchEstimator::Quadrature { points: a }, MatchEstimator::Quadrature { points: b }) => a == b,
            (MatchEstimator::ClosedForm(a), MatchEstimator::ClosedForm(b)) => a.name == b.name,
            _ => false,
        }
    }
}

impl Eq for MatchEstimator {}

/// [`MatchEstimator`]'s serde form.
#[derive(Serialize, Deserialize)]
struct EstimatorForm {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    samples: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    points: Option<usize>,
}

impl TryFrom<EstimatorForm> for MatchEstimator {
    type Error = String;
    fn try_from(form: EstimatorForm) -> std::result::Result<Self, String> {
        let missing = |field: &str| format!("match estimator {:?} needs `{field}`", form.kind);
        match form.kind.as_str() {
            "monte_carlo" => {
                Ok(MatchEstimator::MonteCarlo { samples: form.samples.ok_or_else(|| missing("samples"))? })
            }
            "quadrature" => Ok(MatchEstimator::Quadrature { points: form.points.ok_or_else(|| missing("points"))? }),
            name => crate::losses::closed_form_named(name)
                .map(MatchEstimator::ClosedForm)
                .map_err(|e| format!("match estimator: {e} (or monte_carlo, quadrature)")),
        }
    }
}

impl From<MatchEstimator> for EstimatorForm {
    fn from(estimator: MatchEstimator) -> Self {
        let (kind, samples, points) = match estimator {
            MatchEstimator::MonteCarlo { samples } => ("monte_carlo", Some(samples), None),
            MatchEstimator::Quadrature { points } => ("quadrature", None, Some(points)),
            MatchEstimator::ClosedForm(form) => (form.name, None, None),
        };
        EstimatorForm { kind: kind.to_string(), samples, points }
    }
}

impl MatchEstimator {
    pub fn name(&self) -> &'static str {
        match self {
            MatchEstimator::MonteCarlo { .. } => "mc",
            MatchEstimator::Quadrature { .. } => "quadrature",
            MatchEstimator::ClosedForm(form) => form.name,
        }
    }

    /// The estimator of a model trained with `config`: its loss's closed form where it has one,
    /// whose match probability is a different function of the embeddings than HIB's, else `hib`.
    pub fn for_model(config: &crate::HibConfig, hib: MatchEstimator) -> MatchEstimator {
        Self::for_matching(crate::pair_loss::PairLoss::matching(config.loss.kind.loss()), hib)
    }

    /// `matching`'s closed form where it has one, else `hib`.
    pub fn for_matching(matching: Matching, hib: MatchEstimator) -> MatchEstimator {
        matching.closed_form().map_or(hib, MatchEstimator::ClosedForm)
    }

    /// The match probability of aligned rows (`B` inputs each → `[B]`): Monte Carlo with the
    /// estimator's samples per side rounded up to a multiple of the components, quadrature, or
    /// the closed form.
    pub fn probability(self, matcher: &MatchHead, left: &Embedding, right: &Embedding) -> Result<Tensor> {
        match self {
            MatchEstimator::ClosedForm(form) => Ok((form.probability)(matcher, left, right)),
            MatchEstimator::Quadrature { points } => match_probability_quadrature(matcher, left, right, points),
            MatchEstimator::MonteCarlo { samples } => {
                let c = left.components();
                Ok(matcher.match_probability(left, right, (samples.max(1) + c - 1) / c * c))
            }
        }
    }
}

/// Nodes per axis of the quadrature estimator unless asked otherwise, by embedding dimension:
/// the fewest with which [`match_probability_quadrature`] stays within a relative error of
/// 10⁻³ (on probabilities of 1 % and more) of a 96-node polar reference over the grid of
/// `hedge bench quadrature` (`results/hib/quadrature-error.json`: 24 in D = 1 and 3, 32 in
/// D = 2). Above D = 3 the product rule's 16 (its grid grows as 16^D; not measured).
pub fn quadrature_points(dim: usize) -> usize {
    match dim {
        2 => 32,
        1 | 3 => 24,
        _ => 16,
    }
}

/// Expectation of σ(−a‖δ‖ + b) for δ ~ equal mixture over component pairs (c, c') of
/// N(μ1c − μ2c', v1c + v2c'), by a Gauss–Hermite product rule of `points` nodes per dimension.
///
/// The integrand has a kink where δ = 0 (the norm is not smooth there), so the rule converges
/// slowly when a pair's mean difference is small against its spread — a matching pair's case
/// (issue 82 measured 4 % relative error at 16 nodes). [`match_probability_quadrature`] uses the
/// polar rule instead up to D = 3; this one stays for larger D and as the measured reference
/// point.
///
/// # Shapes
/// `e1`, `e2`: `B` inputs each (aligned); returns `[B]`.
pub fn match_probability_gauss_hermite(
    matcher: &MatchHead,
    e1: &Embedding,
    e2: &Embedding,
    points: usize,
) -> Result<Tensor> {
    Ok(gauss_hermite_pairs(matcher, e1, e2, points)?.mean_dim([1i64, 2].as_slice(), false, Kind::Float))
}

/// [`match_probability_gauss_hermite`] per component pair: `[B, C1, C2]`.
fn gauss_hermite_pairs(matcher: &MatchHead, e1: &Embedding, e2: &Embedding, points: usize) -> Result<Tensor> {
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
    Ok((p * weights.view([1, 1, 1, grid])).sum_dim_intlist([3i64].as_slice(), false, Kind::Float))
}

/// Squared Mahalanobis distance of a pair's mean difference from 0 below which
/// [`match_probability_quadrature`] takes the polar rule, above which the product rule: past
/// it the kink lies in the Gaussian's far tail (its density there below e^{−c/2} of the
/// peak), while the polar rule's directions would have to resolve a mass concentrated in a
/// narrow angle (about c^{−1/2} radians). Chosen by `hedge bench quadrature` (`results/hib/quadrature-error.json`).
pub const POLAR_BELOW: f64 = 16.0;

/// Expectation of σ(−a‖δ‖ + b) for δ ~ equal mixture over component pairs (c, c') of
/// N(μ1c − μ2c', v1c + v2c'). Up to D = 3, each component pair by the polar rule
/// ([`match_probability_polar`]) when its mean difference lies within [`POLAR_BELOW`]
/// (squared Mahalanobis) of the kink at δ = 0, where a product rule loses its accuracy, and
/// by the Gauss–Hermite product rule ([`match_probability_gauss_hermite`]) farther out and
/// for larger D.
///
/// # Shapes
/// `e1`, `e2`: `B` inputs each (aligned); returns `[B]`.
pub fn match_probability_quadrature(
    matcher: &MatchHead,
    e1: &Embedding,
    e2: &Embedding,
    points: usize,
) -> Result<Tensor> {
    match_probability_quadrature_switching(matcher, e1, e2, points, POLAR_BELOW)
}

/// [`match_probability_quadrature`] with the polar rule below `polar_below` instead of
/// [`POLAR_BELOW`] (for measuring the switch).
pub fn match_probability_quadrature_switching(
    matcher: &MatchHead,
    e1: &Embedding,
    e2: &Embedding,
    points: usize,
    polar_below: f64,
) -> Result<Tensor> {
    // Inputs in chunks, so that a chunk's nodes (pairs × nodes per pair, each with a few
    // double-precision intermediates) stay near 2²² values whatever the batch.
    let pairs = (e1.components() * e2.components()) as usize;
    let d = e1.dim() as usize;
    let per_pair = match d {
        1 => 2 * points,
        2 => points * points,
        3 => 2 * points.pow(3),
        _ => 0,
    }
    .max(points.saturating_pow(d as u32).min(1 << 22));
    let chunk = ((1usize << 22) / (pairs * per_pair).max(1)).max(1) as i64;
    let mut parts = Vec::new();
    let mut start = 0;
    while start < e1.batch() {
        let len = chunk.min(e1.batch() - start);
        let (l, r) = (e1.narrow(start, len), e2.narrow(start, len));
        let product = gauss_hermite_pairs(matcher, &l, &r, points)?;
        let part = if d > 3 || (l.variance.is_none() && r.variance.is_none()) {
            product.mean_dim([1i64, 2].as_slice(), false, Kind::Float)
        } else {
            let (polar, distance) = polar_pairs(matcher, &l, &r, points)?;
            let near = distance.lt(polar_below);
            let per_pair = polar.where_self(&near, &product.to_kind(Kind::Double));
            per_pair.mean_dim([1i64, 2].as_slice(), false, Kind::Double).to_kind(e1.mean.kind())
        };
        parts.push(part);
        start += len;
    }
    if parts.is_empty() {
        return Ok(Tensor::zeros([0], (e1.mean.kind(), e1.mean.device())));
    }
    Ok(Tensor::cat(&parts, 0))
}

/// Directions on the unit sphere of `d` ≤ 3 dimensions with quadrature weights summing to its
/// area: ±1 in one dimension; `points` equally spaced angles on the circle (the trapezoid rule,
/// exact to exponential order for a smooth periodic integrand); on the sphere, `points`
/// Gauss–Legendre nodes in cos θ times `2 · points` equally spaced longitudes.
fn sphere_rule(d: usize, points: usize) -> (Vec<f64>, Vec<f64>) {
    use std::f64::consts::PI;
    match d {
        1 => (vec![1.0, -1.0], vec![1.0, 1.0]),
        2 => {
            let mut u = Vec::with_capacity(2 * points);
            for j in 0..points {
                let (s, c) = (2.0 * PI * j as f64 / points as f64).sin_cos();
                u.extend([c, s]);
            }
            (u, vec![2.0 * PI / points as f64; points])
        }
        _ => {
            let (t, wt) = hedge_eval::gauss_legendre(points);
            let longitudes = 2 * points;
            let (mut u, mut w) = (Vec::new(), Vec::new());
            for (&z, &wz) in t.iter().zip(&wt) {
                let ring = (1.0 - z * z).max(0.0).sqrt();
                for j in 0..longitudes {
                    let (s, c) = (2.0 * PI * j as f64 / longitudes as f64).sin_cos();
                    u.extend([ring * c, ring * s, z]);
                    w.push(wz * 2.0 * PI / longitudes as f64);
                }
            }
            (u, w)
        }
    }
}

/// [`match_probability_quadrature`]'s polar rule, for D ≤ 3.
///
/// In polar coordinates about δ = 0, E f(‖δ‖) = ∫_S ∫₀^∞ f(r) r^{D−1} φ(r u) dr du, and for each
/// direction u the radial integrand is f(r) r^{D−1} times a Gaussian in r (mean u·V⁻¹m / u·V⁻¹u,
/// sd (u·V⁻¹u)^{−1/2}): smooth on the half-line, the kink gone. The radial integral takes
/// `points` Gauss–Legendre nodes over that Gaussian's ±8 sd (cut at 0); the directions are
/// ±1 in one dimension, `points` equally spaced angles on the circle, and on the sphere
/// `points` Gauss–Legendre nodes in cos θ times `2 · points` longitudes. Every sum is in double
/// precision. A point embedding (no variances) is scored exactly, σ(−a‖Δμ‖ + b).
///
/// # Shapes
/// `e1`, `e2`: `B` inputs each (aligned), `D` ≤ 3; returns `[B]`.
pub fn match_probability_polar(matcher: &MatchHead, e1: &Embedding, e2: &Embedding, points: usize) -> Result<Tensor> {
    let (per_pair, _) = polar_pairs(matcher, e1, e2, points)?;
    Ok(per_pair.mean_dim([1i64, 2].as_slice(), false, Kind::Double).to_kind(e1.mean.kind()))
}

/// [`match_probability_polar`] per component pair, `[B, C1, C2]` in double precision, with
/// each pair's squared Mahalanobis distance of its mean difference from 0.
fn polar_pairs(matcher: &MatchHead, e1: &Embedding, e2: &Embedding, points: usize) -> Result<(Tensor, Tensor)> {
    let d = e1.dim() as usize;
    if !(1..=3).contains(&d) || points == 0 {
        return Err(EmbedError::invalid(
            "quadrature",
            format!("D = {d}, {points} points"),
            "the polar rule takes D from 1 to 3 and at least 1 point",
        ));
    }
    let device = e1.mean.device();
    let a = matcher.a().to_kind(Kind::Double);
    let b = matcher.b.to_kind(Kind::Double);
    // Component pairs: [B, C1, C2, D].
    let m = (e1.mean.unsqueeze(2) - e2.mean.unsqueeze(1)).to_kind(Kind::Double);
    if e1.variance.is_none() && e2.variance.is_none() {
        let dist = m.square().sum_dim_intlist([3i64].as_slice(), false, Kind::Double).sqrt();
        let p = (-&a * &dist + &b).sigmoid();
        return Ok((p, dist.fill(f64::INFINITY)));
    }
    let zeros1 = || e1.mean.zeros_like();
    let zeros2 = || e2.mean.zeros_like();
    let v1 = e1.variance.as_ref().map_or_else(zeros1, Tensor::shallow_clone);
    let v2 = e2.variance.as_ref().map_or_else(zeros2, Tensor::shallow_clone);
    // A variance of zero (one side a point, the other's component degenerate) would divide by
    // zero; 10⁻¹² is far below any embedding's scale.
    let v = (v1.unsqueeze(2) + v2.unsqueeze(1)).to_kind(Kind::Double).clamp_min(1e-12);
    let (u, omega) = sphere_rule(d, points);
    let t_count = omega.len() as i64;
    let u = Tensor::from_slice(&u).to_device(device).view([t_count, d as i64]);
    let omega = Tensor::from_slice(&omega).to_device(device);
    let (t, wt) = hedge_eval::gauss_legendre(points);
    let t = Tensor::from_slice(&t).to_device(device);
    let wt = Tensor::from_slice(&wt).to_device(device);
    let inv_v = v.reciprocal();
    // Per pair and direction: A = u·V⁻¹u, B = u·V⁻¹m; per pair c = m·V⁻¹m.  [B, C1, C2, T]
    let quad = inv_v.matmul(&u.square().tr());
    let lin = (&m * &inv_v).matmul(&u.tr());
    let c = (m.square() * &inv_v).sum_dim_intlist([3i64].as_slice(), true, Kind::Double);
    let log_norm = (v.log().sum_dim_intlist([3i64].as_slice(), true, Kind::Double)
        + d as f64 * (2.0 * std::f64::consts::PI).ln())
        * -0.5;
    let centre = &lin / &quad;
    let spread = quad.rsqrt();
    let lo = (&centre - &spread * 8.0).clamp_min(0.0);
    let hi = centre.clamp_min(0.0) + &spread * 8.0;
    let half = (&hi - &lo) * 0.5;
    // Radii at the Legendre nodes: [B, C1, C2, T, K].
    let r = (&lo + &half).unsqueeze(4) + half.unsqueeze(4) * t.view([1, 1, 1, 1, points as i64]);
    let exponent = (quad.unsqueeze(4) * r.square() - lin.unsqueeze(4) * &r * 2.0 + c.unsqueeze(4)) * -0.5;
    let density = (exponent + log_norm.unsqueeze(4)).exp();
    let f = (-&a * &r + &b).sigmoid();
    let radial = r.pow_tensor_scalar((d - 1) as f64);
    let weights = half.unsqueeze(4) * wt.view([1, 1, 1, 1, points as i64]) * omega.view([1, 1, 1, t_count, 1]);
    let per_pair = (f * radial * density * weights).sum_dim_intlist([3i64, 4].as_slice(), false, Kind::Double);
    Ok((per_pair, c.squeeze_dim(3)))
}

/// Options of [`evaluate_model`] (its `base`) and [`Scorer`].
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
    /// The estimator in use: a closed-form head's own closed form whatever was asked, since its
    /// match probability is another function of the embeddings.
    fn estimator(&self) -> MatchEstimator {
        MatchEstimator::for_matching(self.matcher.matching, self.estimator)
    }

    /// Per-image samples for Monte Carlo (drawn once per repeat, so a pair's score does not
    /// depend on which other pairs are scored with it).
    ///
    /// # Shapes
    /// returns `[N, K, D]`.
    fn samples(&self, set: &Embedding) -> Tensor {
        match self.estimator() {
            MatchEstimator::MonteCarlo { samples } => set.sample(samples),
            MatchEstimator::Quadrature { .. } | MatchEstimator::ClosedForm(_) => set.mean.shallow_clone(),
        }
    }

    /// p(m | x1, x2) for aligned rows `left[i]`, `right[i]`, given per-image samples.
    fn pair_probability(&self, a: &Embedding, b: &Embedding, za: &Tensor, zb: &Tensor) -> Result<Tensor> {
        match self.estimator() {
            MatchEstimator::MonteCarlo { .. } => Ok(self.matcher.log_match(za, zb).0.exp()),
            MatchEstimator::Quadrature { points } => match_probability_quadrature(self.matcher, a, b, points),
            MatchEstimator::ClosedForm(form) => Ok((form.probability)(self.matcher, a, b)),
        }
    }

    /// Draws what [`Scorer::pair_scores`] on `set` draws and discards it: work left out of an
    /// evaluation leaves the random stream where it would be, so the other metrics' numbers do
    /// not depend on the selection.
    pub fn skip_pair_scores(&self, set: &EmbeddedSet) {
        tch::no_grad(|| drop(self.samples(&set.embedding)));
    }

    /// Draws what [`Scorer::neighbours`] of `probes` in `gallery` draws and discards it.
    pub fn skip_neighbours(&self, probes: &Embedding, gallery: &Embedding) {
        tch::no_grad(|| {
            drop(self.samples(probes));
            drop(self.samples(gallery));
        });
    }

    /// Match probabilities of `pairs` in `set`.
    pub fn pair_scores(&self, set: &EmbeddedSet, pairs: &PairBatch) -> Result<Vec<f64>> {
        tch::no_grad(|| {
            let z = self.samples(&set.embedding);
            let (l, r) = (index_tensor(&pairs.left), index_tensor(&pairs.right));
            let p = self.pair_probability(
                &set.embedding.select_rows(&l),
                &set.embedding.select_rows(&r),
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
                // A closed form ranks every gallery item exactly: no candidate stage.
                let closed_form = match self.estimator() {
                    MatchEstimator::ClosedForm(form) => Some(form),
                    _ => None,
                };
                let mut rank = if let Some(form) = closed_form {
                    (form.rank)(&p, gallery)
                } else if self.stochastic {
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
                if !self.stochastic || closed_form.is_some() {
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
                    let pa = probes.select_rows(&probe_rows);
                    let gb = gallery.select_rows(&flat);
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

/// Verification average precision of `pairs` in `set`, p(m | x1, x2) by Monte Carlo with
/// `samples` per input drawn from `seed`: the quick check after training. [`evaluate_model`]
/// runs the full protocol.
pub fn verification_ap(
    matcher: &MatchHead,
    set: &EmbeddedSet,
    pairs: &PairBatch,
    samples: i64,
    seed: i64,
) -> Result<f64> {
    let _generator = crate::seeded_generator(seed);
    let matcher = matcher.to_cpu();
    let scorer = Scorer {
        matcher: &matcher,
        estimator: MatchEstimator::MonteCarlo { samples },
        stochastic: set.embedding.variance.is_some(),
    };
    let scores = scorer.pair_scores(set, pairs)?;
    Ok(hedge_eval::average_precision(&scores, &pairs.is_match)?)
}

/// η for every image of `set` under the estimator (seeded by the caller for Monte Carlo).
pub fn self_mismatch(matcher: &MatchHead, set: &Embedding, estimator: MatchEstimator) -> Result<Vec<f64>> {
    let estimator = MatchEstimator::for_matching(matcher.matching, estimator);
    tch::no_grad(|| {
        let eta = match estimator {
            MatchEstimator::MonteCarlo { samples } => matcher.self_mismatch(set, samples),
            MatchEstimator::Quadrature { points } => 1.0 - match_probability_quadrature(matcher, set, set, points)?,
            MatchEstimator::ClosedForm(form) => (form.self_mismatch)(matcher, set),
        };
        Ok(Vec::<f64>::try_from(eta.to_kind(Kind::Double))?)
    })
}

/// −τ_b(bin index, performance) over the bins with a defined performance, so that
/// "performance falls as uncertainty rises" is positive (Table 2). `None` when undefined.
pub fn inverted_tau(per_bin: &[f64]) -> Option<f64> {
    let (idx, perf): (Vec<f64>, Vec<f64>) =
        per_bin.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(i, &v)| (i as f64, v)).unzip();
    kendall_tau_b(&idx, &perf).ok().map(|t| -t)
}

/// Majority and plurality KNN correctness of every probe against a gallery holding the same
/// images (possibly in the other variant), leaving out each probe's own image.
#[derive(Debug, Clone)]
pub struct KnnOutcome {
    pub majority: Vec<bool>,
    pub plurality: Vec<bool>,
}

impl KnnOutcome {
    pub fn majority_accuracy(&self) -> f64 {
        fraction(&self.majority)
    }

    pub fn plurality_accuracy(&self) -> f64 {
        fraction(&self.plurality)
    }
}

fn fraction(v: &[bool]) -> f64 {
    v.iter().filter(|&&c| c).count() as f64 / v.len().max(1) as f64
}

/// Which gallery a probe is identified in. Probe i and gallery item i are the same image, or
/// its clean and occluded twins. The paper's first version says "each clean image is identified
/// by comparing to the test gallery which is either comprised of clean or corrupted images" and
/// names no exclusion; the two readings are reported side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GalleryReading {
    /// The probe's own image (its twin, in the other variant) is left out of the gallery.
    LeaveOneOut,
    /// The gallery is the whole test set, the probe's own image (twin) included.
    Kept,
}

/// KNN identification of `probes` against `gallery` (Section 4.3, Appendix G).
pub fn knn_outcome(
    scorer: &Scorer,
    gallery: &EmbeddedSet,
    probes: &EmbeddedSet,
    options: &EvalOptions,
    reading: GalleryReading,
) -> Result<KnnOutcome> {
    if gallery.labels != probes.labels {
        return Err(EmbedError::invalid(
            "gallery",
            format!("{} labels against {} probe labels", gallery.len(), probes.len()),
            "gallery and probes must be two variants of the same images",
        ));
    }
    let leave_one_out = reading == GalleryReading::LeaveOneOut;
    let neighbours =
        scorer.neighbours(&probes.embedding, &gallery.embedding, options.knn_k, options.candidates, leave_one_out)?;
    let (mut majority, mut plurality) = (Vec::with_capacity(probes.len()), Vec::with_capacity(probes.len()));
    for (i, n) in neighbours.iter().enumerate() {
        let labels: Vec<u32> = n.iter().map(|&j| gallery.labels[j]).collect();
        majority.push(knn_correct(probes.labels[i], &labels, KnnRule::Majority));
        plurality.push(knn_correct(probes.labels[i], &labels, KnnRule::Plurality));
    }
    Ok(KnnOutcome { majority, plurality })
}

/// Per probe, the distance from its (first-component) mean to the nearest gallery mean other
/// than gallery item i = probe i (the same image): the nearest-neighbour uncertainty proxy of a
/// point embedding.
///
/// # Shapes
/// `probes`, `gallery`: `N` aligned inputs each; returns `N` distances.
pub fn nearest_neighbour_distance(probes: &Embedding, gallery: &Embedding) -> Result<Vec<f64>> {
    tch::no_grad(|| {
        let g = gallery.mean.select(1, 0);
        let n = probes.batch();
        let mut out = Vec::with_capacity(n as usize);
        let chunk = 1000i64;
        let mut start = 0;
        while start < n {
            let len = chunk.min(n - start);
            let p = probes.mean.narrow(0, start, len).select(1, 0);
            let mut d2 =
                (p.unsqueeze(1) - g.unsqueeze(0)).square().sum_dim_intlist([2i64].as_slice(), false, Kind::Float);
            let rows = Tensor::arange(len, (Kind::Int64, Device::Cpu));
            let cols = &rows + start;
            let _ = d2.index_put_(&[Some(rows), Some(cols)], &Tensor::from(f32::INFINITY), false);
            out.extend(Vec::<f64>::try_from(d2.amin([1i64].as_slice(), false).sqrt().to_kind(Kind::Double))?);
            start += len;
        }
        Ok(out)
    })
}

/// Accuracy per η bin (bin 0 = most certain).
pub fn binned_accuracy(eta: &[f64], correct: &[bool], bins: usize) -> Result<Vec<f64>> {
    Ok(equal_count_bins(eta, bins)?
        .iter()
        .map(|b| b.iter().filter(|&&i| correct[i]).count() as f64 / b.len() as f64)
        .collect())
}

/// AP per bin of pairs sorted by the mean η of their two images (Section 4.4); NaN for a bin
/// without a matching pair.
pub fn binned_ap(eta: &[f64], pairs: &PairBatch, scores: &[f64], bins: usize) -> Result<Vec<f64>> {
    let pair_eta: Vec<f64> = pairs.left.iter().zip(&pairs.right).map(|(&l, &r)| 0.5 * (eta[l] + eta[r])).collect();
    Ok(equal_count_bins(&pair_eta, bins)?
        .iter()
        .map(|b| {
            let s: Vec<f64> = b.iter().map(|&k| scores[k]).collect();
            let y: Vec<bool> = b.iter().map(|&k| pairs.is_match[k]).collect();
            average_precision(&s, &y).unwrap_or(f64::NAN)
        })
        .collect())
}

/// One named metric of [`evaluate_model`]: the idea of pytorch-metric-learning's
/// AccuracyCalculator. Each metric states the shared work it needs ([`Needs`]); the evaluation
/// runs that work once per repeat for every selected metric (one KNN pass per gallery/probe
/// combination, one set of pair scores), so adding a metric means a variant here, its
/// [`HibMetric::needs`] and its lines in [`evaluate_model`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HibMetric {
    /// Verification AP within the clean and within the corrupt pairs (Table 1).
    VerificationAp,
    /// Verification AP over the same pairs, first image clean and second corrupt.
    VerificationApMixed,
    /// Majority-vote KNN accuracy, clean probes against the clean and the corrupt gallery (Table 1).
    KnnAccuracy,
    /// Plurality-vote KNN accuracy of the same passes (Appendix G).
    KnnPlurality,
    /// −τ between η bin and verification AP, and the per-bin AP (Table 2, Fig. 6).
    TauAp,
    /// −τ between η bin and KNN accuracy, and the per-bin accuracy (Table 2).
    TauKnn,
    /// Expected calibration error of p(m | x1, x2), pooled and per variant.
    Ece,
    /// Area under the risk–coverage curve of KNN identification and the risk at 20 coverages,
    /// the error detection of its uncertainty, and the AURC of verification decisions.
    Aurc,
    /// Every gallery/probe combination of Appendix G (Tables 6 and 7).
    GalleryProbe,
    /// Majority-vote KNN accuracy with the gallery read as the whole test set: the probe's own
    /// image kept in the clean gallery, its occluded twin kept in the corrupt one
    /// ([`GalleryReading::Kept`]; Table 1's headline KNN, `results/hib/README.md` says why).
    KnnKept,
}

/// Shared work of one repeat that metrics need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Match probabilities of the verification pairs within each variant.
    pub pair_scores: bool,
    /// Match probabilities of the clean-vs-corrupt pairs.
    pub mixed_pairs: bool,
    /// KNN passes, in [`KNN_PASSES`] order.
    pub knn: [bool; 4],
    /// The two Table 1 KNN passes again with the probe's image (twin) kept in the gallery.
    pub knn_kept: bool,
}

impl Needs {
    fn union(self, other: Needs) -> Needs {
        Needs {
            pair_scores: self.pair_scores || other.pair_scores,
            mixed_pairs: self.mixed_pairs || other.mixed_pairs,
            knn: std::array::from_fn(|i| self.knn[i] || other.knn[i]),
            knn_kept: self.knn_kept || other.knn_kept,
        }
    }
}

/// The (gallery, probe) variants of the KNN passes, in the order a repeat runs them.
pub const KNN_PASSES: [(&str, &str); 4] =
    [("clean", "clean"), ("corrupt", "clean"), ("clean", "corrupt"), ("corrupt", "corrupt")];

impl HibMetric {
    pub const ALL: [HibMetric; 10] = [
        HibMetric::VerificationAp,
        HibMetric::VerificationApMixed,
        HibMetric::KnnAccuracy,
        HibMetric::KnnPlurality,
        HibMetric::TauAp,
        HibMetric::TauKnn,
        HibMetric::Ece,
        HibMetric::Aurc,
        HibMetric::GalleryProbe,
        HibMetric::KnnKept,
    ];

    /// The name used in `--metrics` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            HibMetric::VerificationAp => "verification_ap",
            HibMetric::VerificationApMixed => "verification_ap_mixed",
            HibMetric::KnnAccuracy => "knn_accuracy",
            HibMetric::KnnPlurality => "knn_plurality",
            HibMetric::TauAp => "tau_ap",
            HibMetric::TauKnn => "tau_knn",
            HibMetric::Ece => "ece",
            HibMetric::Aurc => "aurc",
            HibMetric::GalleryProbe => "gallery_probe",
            HibMetric::KnnKept => "knn_kept",
        }
    }

    /// The metric named `name` (as [`HibMetric::name`] writes it).
    pub fn parse(name: &str) -> Result<HibMetric> {
        HibMetric::ALL.into_iter().find(|m| m.name() == name.trim()).ok_or_else(|| {
            let names: Vec<&str> = HibMetric::ALL.iter().map(|m| m.name()).collect();
            EmbedError::invalid("metrics", format!("'{name}'"), format!("known metrics: {}", names.join(", ")))
        })
    }

    /// The shared work this metric reads.
    pub fn needs(self) -> Needs {
        let passes = |which: &[usize]| std::array::from_fn(|i| which.contains(&i));
        match self {
            HibMetric::VerificationAp | HibMetric::TauAp | HibMetric::Ece => {
                Needs { pair_scores: true, ..Needs::default() }
            }
            HibMetric::VerificationApMixed => Needs { mixed_pairs: true, ..Needs::default() },
            HibMetric::KnnAccuracy | HibMetric::KnnPlurality | HibMetric::TauKnn => {
                Needs { knn: passes(&[0, 1]), ..Needs::default() }
            }
            // A stream of clean and corrupt probes against the clean gallery, and the
            // verification pairs' decisions.
            HibMetric::Aurc => Needs { pair_scores: true, knn: passes(&[0, 2]), ..Needs::default() },
            HibMetric::GalleryProbe => Needs { knn: [true; 4], ..Needs::default() },
            HibMetric::KnnKept => Needs { knn_kept: true, ..Needs::default() },
        }
    }
}

/// Which metrics an evaluation computes (all by default). Written as a list of names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Vec<HibMetric>", from = "Vec<HibMetric>")]
pub struct MetricSet([bool; HibMetric::ALL.len()]);

impl Default for MetricSet {
    fn default() -> Self {
        MetricSet::all()
    }
}

impl From<MetricSet> for Vec<HibMetric> {
    fn from(set: MetricSet) -> Self {
        set.iter().collect()
    }
}

impl From<Vec<HibMetric>> for MetricSet {
    fn from(metrics: Vec<HibMetric>) -> Self {
        MetricSet(std::array::from_fn(|i| metrics.contains(&HibMetric::ALL[i])))
    }
}

impl MetricSet {
    pub fn all() -> Self {
        MetricSet([true; HibMetric::ALL.len()])
    }

    /// `include` (every metric when empty) without `exclude`, as pytorch-metric-learning's
    /// AccuracyCalculator selects; refuses a selection that leaves nothing to compute.
    pub fn select(include: &[HibMetric], exclude: &[HibMetric]) -> Result<Self> {
        let set = MetricSet(std::array::from_fn(|i| {
            let m = HibMetric::ALL[i];
            (include.is_empty() || include.contains(&m)) && !exclude.contains(&m)
        }));
        if set.is_empty() {
            return Err(EmbedError::invalid("metrics", "none", "the selection excludes every metric"));
        }
        Ok(set)
    }

    /// The selection of comma-separated names (`"verification_ap,knn_accuracy"`); empty strings
    /// include everything and exclude nothing.
    pub fn parse(include: &str, exclude: &str) -> Result<Self> {
        let names = |s: &str| -> Result<Vec<HibMetric>> {
            s.split(',').filter(|n| !n.trim().is_empty()).map(HibMetric::parse).collect()
        };
        MetricSet::select(&names(include)?, &names(exclude)?)
    }

    pub fn contains(&self, metric: HibMetric) -> bool {
        self.0[metric as usize]
    }

    pub fn is_all(&self) -> bool {
        self.0.iter().all(|&b| b)
    }

    pub fn is_empty(&self) -> bool {
        !self.0.iter().any(|&b| b)
    }

    pub fn iter(&self) -> impl Iterator<Item = HibMetric> + '_ {
        HibMetric::ALL.into_iter().filter(|&m| self.contains(m))
    }

    /// The shared work of every selected metric.
    pub fn needs(&self) -> Needs {
        self.iter().fold(Needs::default(), |n, m| n.union(m.needs()))
    }
}

/// A clean and a corrupt value of the same measure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Twin<T> {
    pub clean: T,
    pub corrupt: T,
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
    /// What to compute. A metric's numbers do not depend on which others are selected: work
    /// left out still draws its Monte Carlo samples, so the stream stays where it would be.
    #[serde(default)]
    pub metrics: MetricSet,
}

impl Default for ModelEvalOptions {
    fn default() -> Self {
        ModelEvalOptions {
            base: EvalOptions::default(),
            repeats: 10,
            matching_pairs: 5000,
            non_matching_pairs: 5000,
            pair_seed: 1,
            metrics: MetricSet::all(),
        }
    }
}

/// One gallery/probe combination of Appendix G (Tables 6 and 7).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GalleryProbeRow {
    pub gallery: String,
    pub probe: String,
    pub majority: MeanStd,
    pub plurality: MeanStd,
    /// −τ between probe-η bin and majority accuracy.
    pub tau_knn: Option<MeanStd>,
}

/// The whole evaluation of one model on the clean and corrupt twins of a test split. Every
/// spread is the sample standard deviation over repeats ([`MeanStd`], n − 1). A metric not
/// selected is `None` (or empty).
///
/// Protocol (Section 4, and v1's Section 4.3 and Appendix G): verification pairs are drawn
/// within a variant; KNN probes are clean images, identified against a clean gallery
/// (`clean`) or against the corrupt twin of the gallery (`corrupt`), leaving each probe's own
/// image out (and, as `knn_majority_kept`, keeping it); uncertainty bins use the η of the images being scored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelEval {
    pub metrics: MetricSet,
    pub verification_ap: Option<Twin<MeanStd>>,
    /// AP over the same pairs with the first image clean and the second corrupt (a reading of
    /// the paper's "corrupt" verification that its numbers are closer to; see results).
    pub verification_ap_mixed: Option<MeanStd>,
    pub knn_majority: Option<Twin<MeanStd>>,
    pub knn_plurality: Option<Twin<MeanStd>>,
    /// Majority KNN with the probe's own image (twin) kept in the gallery
    /// ([`GalleryReading::Kept`]); absent in evaluations made before it was computed.
    #[serde(default)]
    pub knn_majority_kept: Option<Twin<MeanStd>>,
    /// `None` where not selected, for point embeddings (no η), or where τ is undefined.
    pub tau_ap: Twin<Option<MeanStd>>,
    pub tau_knn: Twin<Option<MeanStd>>,
    /// ECE of p(m | x1, x2) over the clean and corrupt verification pairs together.
    pub ece: Option<MeanStd>,
    pub ece_by_variant: Option<Twin<MeanStd>>,
    /// The reliability diagram of p(m | x1, x2) over the clean and corrupt verification pairs of
    /// every repeat together (10 equal-width bins; its `ece` pools the repeats, where `ece`
    /// above is their mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reliability: Option<ReliabilityDiagram>,
    /// AURC of selective verification over the clean and corrupt pairs together: a pair is
    /// declared a match where p ≥ ½, and the least confident decisions (1 − max(p, 1 − p)) are
    /// rejected first. Defined for every model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_aurc: Option<MeanStd>,
    /// The same decisions rejected by the pair's uncertainty instead: the larger η of its two
    /// images (stochastic embeddings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_aurc_eta: Option<MeanStd>,
    /// Area under the risk–coverage curve (η; the nearest-neighbour distance for point
    /// embeddings) of majority-KNN identification of clean and corrupt
    /// probes together against the clean gallery, rejecting the most uncertain (η) first.
    pub aurc: Option<MeanStd>,
    /// How well that uncertainty predicts the same probes' identification errors
    /// ([`hedge_eval::error_detection`]): ROC AUC and average precision for the wrong answers.
    /// `None` where not selected, or where every answer was right or every one wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_auroc: Option<MeanStd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_auprc: Option<MeanStd>,
    /// Risk at coverages 5 %, 10 %, …, 100 % of that pooled curve (mean over repeats).
    pub risk_at_coverage: Vec<f64>,
    pub gallery_probe: Vec<GalleryProbeRow>,
    /// Per-bin AP and KNN accuracy, mean over repeats (bin 0 = most certain).
    pub bin_ap: Twin<Vec<f64>>,
    pub bin_knn: Twin<Vec<f64>>,
    /// Mean η over the images of each variant.
    pub mean_eta: Twin<f64>,
    pub repeats: usize,
}

/// Per gallery/probe combination, over repeats: majority and plurality accuracy, −τ of the
/// per-bin accuracy, and the per-bin accuracies.
#[derive(Debug, Clone, Default)]
struct KnnRepeats(Vec<f64>, Vec<f64>, Vec<Option<f64>>, Vec<Vec<f64>>);

/// Mean over repeats of per-bin values (NaN where no repeat defines a bin).
fn mean_bins(runs: &[Vec<f64>]) -> Vec<f64> {
    let len = runs.first().map_or(0, Vec::len);
    (0..len)
        .map(|b| {
            let v: Vec<f64> = runs.iter().map(|r| r[b]).filter(|x| x.is_finite()).collect();
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        })
        .collect()
}

/// Refuses `options.repeats` when the repeats' match probabilities would run past the work
/// bound (`HEDGE_WORK_BOUND`): `images` test images embedded in `dim` dimensions, scored with
/// `estimator` (the one [`evaluate_model`] uses: the closed form of a closed-form head).
/// A deterministic model has one repeat whatever the count, so only a `stochastic` one is checked.
///
/// [`evaluate_model`] makes this check itself; a caller that still has to embed the test sets
/// makes it first, so that a refusal comes before the minutes of embedding.
///
/// # Errors
/// [`EmbedError`] naming `--repeats` and the largest count that fits.
pub fn check_eval_workload(
    estimator: MatchEstimator,
    dim: usize,
    images: usize,
    stochastic: bool,
    options: &ModelEvalOptions,
) -> Result<()> {
    if !stochastic {
        return Ok(());
    }
    // Each repeat scores the verification pairs three times (clean, corrupt, mixed) and
    // every probe's candidates in two galleries, each pair with its sample pairs (or
    // quadrature nodes) of D differences.
    let per_pair = match estimator {
        MatchEstimator::MonteCarlo { samples } => (samples.max(1) as f64).powi(2),
        MatchEstimator::Quadrature { points } => (points.max(1) as f64).powi(dim as i32),
        MatchEstimator::ClosedForm(_) => 1.0,
    } * (2.0 * dim as f64 + 8.0);
    let pairs = (options.matching_pairs + options.non_matching_pairs) as f64;
    let probes = images as f64 * options.base.candidates as f64;
    hedge_run::Workload::new("hib eval: the repeats' match probabilities", move |v| {
        v[0] * (3.0 * pairs + 2.0 * probes) * per_pair / hedge_run::budget::rates::DENSE_PER_SECOND
    })
    .knob("--repeats", options.repeats as f64, 1.0)
    .check()?;
    Ok(())
}

/// Evaluates a model on the clean and corrupt twins of a test split: the metrics of
/// `options.metrics`, each over `options.repeats` repeats.
pub fn evaluate_model(
    matcher: &MatchHead,
    clean: &EmbeddedSet,
    corrupt: &EmbeddedSet,
    stochastic: bool,
    options: &ModelEvalOptions,
    mut progress: impl FnMut(&str),
) -> Result<ModelEval> {
    let want = options.metrics;
    if want.is_empty() {
        return Err(EmbedError::invalid("metrics", "none", "select at least one metric"));
    }
    let needs = want.needs();
    let has = |m| want.contains(m);
    let estimator = MatchEstimator::for_matching(matcher.matching, options.base.estimator);
    check_eval_workload(estimator, clean.embedding.dim() as usize, clean.len(), stochastic, options)?;
    // Embedded sets live on the CPU; so must the match head, whatever device trained it.
    let matcher = &matcher.to_cpu();
    let pairs = hedge_data::verification_pairs(
        &clean.labels,
        options.matching_pairs,
        options.non_matching_pairs,
        options.pair_seed,
    )?;
    let deterministic =
        !stochastic || matches!(estimator, MatchEstimator::Quadrature { .. } | MatchEstimator::ClosedForm(_));
    let repeats = if deterministic { 1 } else { options.repeats.max(1) };
    let bins = options.base.bins;
    let set_of = |name: &str| if name == "clean" { clean } else { corrupt };
    let mut ap = (Vec::new(), Vec::new());
    let mut ece = (Vec::new(), Vec::new(), Vec::new());
    let mut tau_ap = (Vec::new(), Vec::new());
    let mut bin_ap = (Vec::new(), Vec::new());
    let mut knn: Vec<KnnRepeats> = vec![KnnRepeats::default(); KNN_PASSES.len()];
    let (mut aurc, mut risk, mut eta_means) = (Vec::new(), Vec::new(), (Vec::new(), Vec::new()));
    let mut error_detection = (Vec::new(), Vec::new());
    let mut reliability = ReliabilityAccumulator::new(10)?;
    let mut verification_aurc = (Vec::new(), Vec::new());
    let mut ap_mixed = Vec::new();
    let mut knn_kept: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    // Clean then corrupt images in one set, so a pair can take its right image from the corrupt twin.
    // (Also built for the kept-gallery KNN, which runs after the mixed pairs and so must draw
    // past them when they are left out.)
    let both_sets =
        if needs.mixed_pairs || needs.knn_kept { Some(EmbeddedSet::concat(&[clean, corrupt])) } else { None };
    let mixed_pairs = PairBatch {
        left: pairs.left.clone(),
        right: pairs.right.iter().map(|&j| j + clean.len()).collect(),
        is_match: pairs.is_match.clone(),
    };
    for r in 0..repeats {
        progress(&format!("repeat {}/{repeats}", r + 1));
        let opts = EvalOptions { seed: options.base.seed + r as i64, ..options.base };
        let _generator = crate::seeded_generator(opts.seed);
        let scorer = Scorer { matcher, estimator: opts.estimator, stochastic };
        let eta_of = |set: &EmbeddedSet| -> Result<Vec<f64>> {
            if stochastic {
                self_mismatch(matcher, &set.embedding, opts.estimator)
            } else {
                Ok(vec![0.0; set.len()])
            }
        };
        let (eta_clean, eta_corrupt) = (eta_of(clean)?, eta_of(corrupt)?);
        eta_means.0.push(eta_clean.iter().sum::<f64>() / eta_clean.len() as f64);
        eta_means.1.push(eta_corrupt.iter().sum::<f64>() / eta_corrupt.len() as f64);
        if needs.pair_scores {
            let s_clean = scorer.pair_scores(clean, &pairs)?;
            let s_corrupt = scorer.pair_scores(corrupt, &pairs)?;
            if has(HibMetric::VerificationAp) {
                ap.0.push(average_precision(&s_clean, &pairs.is_match)?);
                ap.1.push(average_precision(&s_corrupt, &pairs.is_match)?);
            }
            // The clean and corrupt pairs pooled, for the pooled ECE, the diagram and the AURC.
            let both: Vec<f64> = s_clean.iter().chain(&s_corrupt).copied().collect();
            let both_y: Vec<bool> = pairs.is_match.iter().chain(&pairs.is_match).copied().collect();
            if has(HibMetric::Ece) {
                ece.0.push(expected_calibration_error(&s_clean, &pairs.is_match, 10)?);
                ece.1.push(expected_calibration_error(&s_corrupt, &pairs.is_match, 10)?);
                ece.2.push(expected_calibration_error(&both, &both_y, 10)?);
                reliability.add(&both, &both_y)?;
            }
            if has(HibMetric::Aurc) {
                let (correct, confidence) = verification_decisions(&both, &both_y)?;
                verification_aurc.0.push(risk_coverage(&confidence, &correct)?.aurc);
                if stochastic {
                    let pair_eta = |eta: &[f64]| -> Vec<f64> {
                        pairs.left.iter().zip(&pairs.right).map(|(&l, &r)| eta[l].max(eta[r])).collect()
                    };
                    let mut eta = pair_eta(&eta_clean);
                    eta.extend(pair_eta(&eta_corrupt));
                    verification_aurc.1.push(risk_coverage(&eta, &correct)?.aurc);
                }
            }
            if stochastic && has(HibMetric::TauAp) {
                let (bc, bk) = (
                    binned_ap(&eta_clean, &pairs, &s_clean, bins)?,
                    binned_ap(&eta_corrupt, &pairs, &s_corrupt, bins)?,
                );
                tau_ap.0.push(inverted_tau(&bc));
                tau_ap.1.push(inverted_tau(&bk));
                bin_ap.0.push(bc);
                bin_ap.1.push(bk);
            }
        } else {
            scorer.skip_pair_scores(clean);
            scorer.skip_pair_scores(corrupt);
        }
        let mut outcomes = Vec::with_capacity(KNN_PASSES.len());
        for (c, (gallery, probe)) in KNN_PASSES.iter().enumerate() {
            if !needs.knn[c] {
                scorer.skip_neighbours(&set_of(probe).embedding, &set_of(gallery).embedding);
                outcomes.push(None);
                continue;
            }
            progress(&format!("repeat {}/{repeats}: KNN, {gallery} gallery, {probe} probes", r + 1));
            let o = knn_outcome(&scorer, set_of(gallery), set_of(probe), &opts, GalleryReading::LeaveOneOut)?;
            knn[c].0.push(o.majority_accuracy());
            knn[c].1.push(o.plurality_accuracy());
            if stochastic {
                let eta = if *probe == "clean" { &eta_clean } else { &eta_corrupt };
                let per_bin = binned_accuracy(eta, &o.majority, bins)?;
                knn[c].2.push(inverted_tau(&per_bin));
                knn[c].3.push(per_bin);
            }
            outcomes.push(Some(o));
        }
        if let (true, Some(clean_probes), Some(corrupt_probes)) = (has(HibMetric::Aurc), &outcomes[0], &outcomes[2]) {
            // Known unknowns: a stream of clean and corrupt probes against the clean gallery,
            // rejected by η, or for a point embedding (no η) by the distance to the nearest
            // gallery neighbour (the paper's baseline proxy, Section 4.4).
            let eta: Vec<f64> = if stochastic {
                eta_clean.iter().chain(&eta_corrupt).copied().collect()
            } else {
                let mut d = nearest_neighbour_distance(&clean.embedding, &clean.embedding)?;
                d.extend(nearest_neighbour_distance(&corrupt.embedding, &clean.embedding)?);
                d
            };
            let correct: Vec<bool> = clean_probes.majority.iter().chain(&corrupt_probes.majority).copied().collect();
            let rc = risk_coverage(&eta, &correct)?;
            aurc.push(rc.aurc);
            // Undefined (and left out) where every answer was right, or every one wrong.
            if let Ok(d) = hedge_eval::error_detection(&eta, &correct) {
                error_detection.0.push(d.auroc);
                error_detection.1.push(d.auprc);
            }
            let n = rc.risk.len();
            risk.push((1..=20).map(|q| rc.risk[(q * n / 20).max(1) - 1]).collect::<Vec<f64>>());
        }
        // Last in the repeat, so the draws above (and their numbers) are as before this metric.
        if let Some(both_sets) = &both_sets {
            if needs.mixed_pairs {
                let scores = scorer.pair_scores(both_sets, &mixed_pairs)?;
                ap_mixed.push(average_precision(&scores, &mixed_pairs.is_match)?);
            } else {
                scorer.skip_pair_scores(both_sets);
            }
        }
        // After everything else, for the same reason: clean probes against the whole clean
        // test set and against every occluded twin, the probe's own image (twin) kept.
        if needs.knn_kept {
            progress(&format!("repeat {}/{repeats}: KNN, galleries with the probe kept", r + 1));
            for (slot, gallery) in [clean, corrupt].into_iter().enumerate() {
                let o = knn_outcome(&scorer, gallery, clean, &opts, GalleryReading::Kept)?;
                knn_kept[slot].push(o.majority_accuracy());
            }
        }
    }
    let twin = |metric, clean: &[f64], corrupt: &[f64]| {
        has(metric).then(|| Twin { clean: MeanStd::of(clean), corrupt: MeanStd::of(corrupt) })
    };
    let defined = |metric, values: &[Option<f64>]| if has(metric) { MeanStd::of_defined(values) } else { None };
    Ok(ModelEval {
        metrics: want,
        verification_ap: twin(HibMetric::VerificationAp, &ap.0, &ap.1),
        verification_ap_mixed: has(HibMetric::VerificationApMixed).then(|| MeanStd::of(&ap_mixed)),
        knn_majority: twin(HibMetric::KnnAccuracy, &knn[0].0, &knn[1].0),
        knn_plurality: twin(HibMetric::KnnPlurality, &knn[0].1, &knn[1].1),
        knn_majority_kept: twin(HibMetric::KnnKept, &knn_kept[0], &knn_kept[1]),
        tau_ap: Twin { clean: defined(HibMetric::TauAp, &tau_ap.0), corrupt: defined(HibMetric::TauAp, &tau_ap.1) },
        tau_knn: Twin { clean: defined(HibMetric::TauKnn, &knn[0].2), corrupt: defined(HibMetric::TauKnn, &knn[1].2) },
        ece: has(HibMetric::Ece).then(|| MeanStd::of(&ece.2)),
        ece_by_variant: twin(HibMetric::Ece, &ece.0, &ece.1),
        reliability: if has(HibMetric::Ece) { Some(reliability.finish()?) } else { None },
        verification_aurc: has(HibMetric::Aurc).then(|| MeanStd::of(&verification_aurc.0)),
        verification_aurc_eta: (has(HibMetric::Aurc) && stochastic).then(|| MeanStd::of(&verification_aurc.1)),
        aurc: has(HibMetric::Aurc).then(|| MeanStd::of(&aurc)),
        error_auroc: (has(HibMetric::Aurc) && !error_detection.0.is_empty()).then(|| MeanStd::of(&error_detection.0)),
        error_auprc: (has(HibMetric::Aurc) && !error_detection.1.is_empty()).then(|| MeanStd::of(&error_detection.1)),
        risk_at_coverage: mean_bins(&risk),
        gallery_probe: if has(HibMetric::GalleryProbe) {
            KNN_PASSES
                .iter()
                .zip(&knn)
                .map(|((g, p), k)| GalleryProbeRow {
                    gallery: g.to_string(),
                    probe: p.to_string(),
                    majority: MeanStd::of(&k.0),
                    plurality: MeanStd::of(&k.1),
                    tau_knn: MeanStd::of_defined(&k.2),
                })
                .collect()
        } else {
            Vec::new()
        },
        bin_ap: Twin { clean: mean_bins(&bin_ap.0), corrupt: mean_bins(&bin_ap.1) },
        bin_knn: if has(HibMetric::TauKnn) {
            Twin { clean: mean_bins(&knn[0].3), corrupt: mean_bins(&knn[1].3) }
        } else {
            Twin { clean: Vec::new(), corrupt: Vec::new() }
        },
        mean_eta: Twin { clean: MeanStd::of(&eta_means.0).mean, corrupt: MeanStd::of(&eta_means.1).mean },
        repeats,
    })
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

    fn random_set(n: i64, c: i64, d: i64, var_scale: f64) -> Embedding {
        Embedding {
            mean: Tensor::randn([n, c, d], (Kind::Float, Device::Cpu)) * 2.0,
            variance: Some(Tensor::rand([n, c, d], (Kind::Float, Device::Cpu)) * var_scale + 1e-3),
        }
    }

    #[test]
    fn nearest_neighbour_distance_leaves_the_probe_itself_out() {
        // Gallery on a line at 0, 1, 5; probes are the same images shifted by 0.5.
        let gallery = Embedding::point(Tensor::from_slice(&[0.0f32, 0.0, 1.0, 0.0, 5.0, 0.0]).reshape([3, 2]));
        let probes = Embedding::point(Tensor::from_slice(&[0.5f32, 0.0, 1.5, 0.0, 5.5, 0.0]).reshape([3, 2]));
        let d = nearest_neighbour_distance(&probes, &gallery).unwrap();
        // Probe 0 may not use gallery 0 (itself): nearest is 1 at 0.5; probe 1: 0 at 1.5;
        // probe 2: 1 at 4.5.
        for (got, want) in d.iter().zip([0.5, 1.5, 4.5]) {
            assert!((got - want).abs() < 1e-6, "{d:?}");
        }
    }

    /// The paper's estimator is K = 8 Monte Carlo; its expectation is what quadrature computes.
    /// Averaging 20,000 independent K = 8 estimates leaves a standard error below 1e-3.
    #[test]
    fn quadrature_equals_the_expectation_of_k8_monte_carlo() {
        let _turn = hedge_run::lock_generator();
        let _generator = crate::seeded_generator(11);
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

    /// E σ(−a r + b) over r with density `density` on [0, ∞), by the trapezoid rule on a fine
    /// grid (the integrand is smooth there, so its error is far below the tolerances below).
    fn radial_reference(a: f64, b: f64, top: f64, density: impl Fn(f64) -> f64) -> f64 {
        let n = 400_000;
        let h = top / n as f64;
        (0..=n)
            .map(|i| {
                let r = i as f64 * h;
                let w = if i == 0 || i == n { 0.5 } else { 1.0 };
                w * h * density(r) / (1.0 + (a * r - b).exp())
            })
            .sum()
    }

    fn gaussian_pair(mean: &[f32], variance: &[f32]) -> (Embedding, Embedding) {
        let d = mean.len() as i64;
        let left = Embedding {
            mean: Tensor::from_slice(mean).view([1, 1, d]),
            variance: Some(Tensor::from_slice(variance).view([1, 1, d]) * 0.5),
        };
        let right = Embedding {
            mean: Tensor::zeros([1, 1, d], (Kind::Float, Device::Cpu)),
            variance: Some(Tensor::from_slice(variance).view([1, 1, d]) * 0.5),
        };
        (left, right)
    }

    /// A matching pair's difference centred at 0 is where a product rule meets the kink of ‖δ‖
    /// head on. ‖δ‖ then has a closed-form density (Rayleigh in 2-D, Maxwell in 3-D, half-normal
    /// in 1-D), and the polar rule equals the one-dimensional integral against it.
    #[test]
    fn the_polar_rule_equals_the_radial_integral_at_the_kink() {
        let (_vs, h) = head(1.7, 0.9);
        let (a, b) = (f64::try_from(h.a()).unwrap(), f64::try_from(&h.b).unwrap());
        let s2 = 0.6f64;
        let pi = std::f64::consts::PI;
        type Density = Box<dyn Fn(f64) -> f64>;
        let densities: [(usize, Density); 3] = [
            (1, Box::new(move |r| 2.0 * (-r * r / (2.0 * s2)).exp() / (2.0 * pi * s2).sqrt())),
            (2, Box::new(move |r| r / s2 * (-r * r / (2.0 * s2)).exp())),
            (3, Box::new(move |r| (2.0 / pi).sqrt() * r * r / s2.powf(1.5) * (-r * r / (2.0 * s2)).exp())),
        ];
        for (d, density) in densities {
            let (left, right) = gaussian_pair(&vec![0.0; d], &vec![s2 as f32; d]);
            let want = radial_reference(a, b, 14.0 * s2.sqrt(), density);
            let got = match_probability_polar(&h, &left, &right, 24).unwrap().double_value(&[0]);
            assert!((got - want).abs() < 1e-6 * want, "D = {d}: polar {got}, radial integral {want}");
        }
    }

    /// Off the kink, with unequal variances: the quadrature estimator agrees with a fine
    /// Gauss–Hermite product rule where the mean lies far from 0 (the product rule is accurate
    /// there, and the estimator takes it), and in one dimension the polar rule equals the
    /// integral split at the kink, whatever the offset.
    #[test]
    fn the_quadrature_agrees_off_the_kink_and_with_unequal_variances() {
        let (_vs, h) = head(1.3, 2.0);
        for (mean, variance) in
            [(vec![2.5f32, -1.5], vec![0.09f32, 0.25]), (vec![1.8, 0.3, -0.6], vec![0.3, 0.05, 0.12])]
        {
            let (left, right) = gaussian_pair(&mean, &variance);
            let points = quadrature_points(mean.len());
            let got = match_probability_quadrature(&h, &left, &right, points).unwrap().double_value(&[0]);
            let fine = match_probability_gauss_hermite(&h, &left, &right, 48).unwrap().double_value(&[0]);
            // Within the tolerance the default node count was chosen for (10⁻³), with room.
            assert!((got - fine).abs() < 1e-4 * fine, "{mean:?}: quadrature {got}, fine product rule {fine}");
        }
        let (a, b) = (f64::try_from(h.a()).unwrap(), f64::try_from(&h.b).unwrap());
        for offset in [0.0f64, 0.2, 0.7, 2.0] {
            let s2 = 0.4f64;
            let (left, right) = gaussian_pair(&[offset as f32], &[s2 as f32]);
            let normal = |x: f64| (-(x - offset).powi(2) / (2.0 * s2)).exp() / (2.0 * std::f64::consts::PI * s2).sqrt();
            // |δ| = r from δ = r and δ = −r.
            let want = radial_reference(a, b, offset.abs() + 14.0 * s2.sqrt(), |r| normal(r) + normal(-r));
            let got = match_probability_polar(&h, &left, &right, 24).unwrap().double_value(&[0]);
            assert!((got - want).abs() < 1e-6 * want, "offset {offset}: polar {got}, integral {want}");
        }
    }

    /// A large batch is integrated in chunks; each row's probability is the one it gets alone.
    #[test]
    fn a_batch_in_chunks_scores_each_row_as_alone() {
        let _turn = hedge_run::lock_generator();
        let _generator = crate::seeded_generator(3);
        let (_vs, h) = head(1.5, 0.5);
        let (e1, e2) = (random_set(9000, 1, 2, 0.5), random_set(9000, 1, 2, 0.5));
        let all = match_probability_quadrature(&h, &e1, &e2, 32).unwrap();
        assert_eq!(all.size(), [9000]);
        for i in [0i64, 4095, 4096, 8191, 8192, 8999] {
            let alone = match_probability_quadrature(&h, &e1.narrow(i, 1), &e2.narrow(i, 1), 32).unwrap();
            // Equal up to rounding (a batch's matrix products may take another kernel).
            assert!((all.double_value(&[i]) - alone.double_value(&[0])).abs() < 1e-7, "row {i}");
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
        let _turn = hedge_run::lock_generator();
        let _generator = crate::seeded_generator(5);
        let (_vs, h) = head(1.5, 1.0);
        let set = random_set(300, 2, 2, 0.3);
        let scorer = Scorer { matcher: &h, estimator: MatchEstimator::MonteCarlo { samples: 8 }, stochastic: true };
        let _generator = crate::seeded_generator(1);
        let exhaustive = scorer.neighbours(&set, &set, 5, 299, true).unwrap();
        let _generator = crate::seeded_generator(1);
        let filtered = scorer.neighbours(&set, &set, 5, 60, true).unwrap();
        let same = exhaustive.iter().zip(&filtered).filter(|(a, b)| a == b).count();
        assert!(same >= 297, "only {same} of 300 neighbour lists agree");
        assert!(exhaustive.iter().enumerate().all(|(i, n)| !n.contains(&i)), "leave-one-out");
    }

    /// libtorch's generator is one per process: two evaluations running in parallel threads
    /// must each get the numbers their seeds give alone. Without the library's generator lock
    /// their Monte Carlo draws interleave and both change.
    #[test]
    fn evaluations_in_parallel_threads_give_their_seeds_numbers() {
        // The evaluation's AP and KNN accuracy, serialised (exact: floats round-trip).
        fn evaluation(seed: i64) -> String {
            let (_vs, h, clean, corrupt) = {
                let _generator = crate::seeded_generator(3);
                let (vs, h) = head(1.5, 1.0);
                let (clean, corrupt) = labelled_twins(12, 10);
                (vs, h, clean, corrupt)
            };
            let options = ModelEvalOptions {
                base: EvalOptions { bins: 4, candidates: 30, seed, ..Default::default() },
                repeats: 3,
                matching_pairs: 200,
                non_matching_pairs: 200,
                pair_seed: 7,
                metrics: MetricSet::select(&[HibMetric::VerificationAp, HibMetric::KnnAccuracy], &[]).unwrap(),
            };
            let e = evaluate_model(&h, &clean, &corrupt, true, &options, |_| {}).unwrap();
            serde_json::to_string(&(e.verification_ap, e.knn_majority)).unwrap()
        }
        let alone = [0, 100].map(evaluation);
        assert_ne!(alone[0], alone[1], "different seeds must draw differently for this test to mean anything");
        for _ in 0..3 {
            let threads = [0, 100].map(|seed| std::thread::spawn(move || evaluation(seed)));
            let together = threads.map(|t| t.join().unwrap());
            assert_eq!(together, alone);
        }
    }

    /// A labelled set of `classes` x `per_class` mixtures around class centres, and its
    /// "corrupt" twin: the same images with more spread and variance.
    fn labelled_twins(classes: u32, per_class: u32) -> (EmbeddedSet, EmbeddedSet) {
        let labels: Vec<u32> = (0..classes).flat_map(|c| std::iter::repeat_n(c, per_class as usize)).collect();
        let n = labels.len() as i64;
        let centres = Tensor::randn([classes as i64, 1, 2], (Kind::Float, Device::Cpu)) * 3.0;
        let idx = Tensor::from_slice(&labels.iter().map(|&l| i64::from(l)).collect::<Vec<_>>());
        let mean = centres.index_select(0, &idx).repeat([1, 2, 1]);
        let set = |noise: f64, var: f64| EmbeddedSet {
            embedding: Embedding {
                mean: &mean + Tensor::randn([n, 2, 2], (Kind::Float, Device::Cpu)) * noise,
                variance: Some(Tensor::rand([n, 2, 2], (Kind::Float, Device::Cpu)) * var + 1e-3),
            },
            labels: labels.clone(),
            eta: Tensor::zeros([n], (Kind::Float, Device::Cpu)),
        };
        (set(0.5, 0.2), set(1.2, 1.0))
    }

    /// What pytorch-metric-learning's include/exclude promises, and more: a metric computed in
    /// a partial evaluation is bit-identical to the same metric in the full one (left-out work
    /// still draws its samples), and left-out metrics are absent.
    #[test]
    fn a_metric_does_not_depend_on_which_others_are_selected() {
        let _turn = hedge_run::lock_generator();
        let _generator = crate::seeded_generator(3);
        let (_vs, h) = head(1.5, 1.0);
        let (clean, corrupt) = labelled_twins(12, 10);
        let options = |metrics| ModelEvalOptions {
            base: EvalOptions { bins: 4, candidates: 30, ..Default::default() },
            repeats: 3,
            matching_pairs: 200,
            non_matching_pairs: 200,
            pair_seed: 7,
            metrics,
        };
        let full = evaluate_model(&h, &clean, &corrupt, true, &options(MetricSet::all()), |_| {}).unwrap();
        let knn_only = MetricSet::select(&[HibMetric::KnnAccuracy, HibMetric::VerificationApMixed], &[]).unwrap();
        let part = evaluate_model(&h, &clean, &corrupt, true, &options(knn_only), |_| {}).unwrap();
        assert_eq!(part.knn_majority, full.knn_majority);
        assert_eq!(part.verification_ap_mixed, full.verification_ap_mixed);
        assert_eq!(part.mean_eta, full.mean_eta);
        assert!(part.verification_ap.is_none() && part.aurc.is_none() && part.ece.is_none());
        assert!(part.gallery_probe.is_empty() && part.tau_knn.clean.is_none());
        let no_gallery = MetricSet::parse("", "gallery_probe,knn_plurality").unwrap();
        let rest = evaluate_model(&h, &clean, &corrupt, true, &options(no_gallery), |_| {}).unwrap();
        assert_eq!(rest.verification_ap, full.verification_ap);
        assert_eq!(rest.aurc, full.aurc);
        assert_eq!(rest.tau_ap, full.tau_ap);
        assert_eq!(rest.tau_knn, full.tau_knn);
        assert!(rest.knn_plurality.is_none() && rest.gallery_probe.is_empty());
        // The kept-gallery reading alone equals the full evaluation's (how reports written
        // before it existed gain it), and the full evaluation's other numbers did not move.
        let kept_only = MetricSet::select(&[HibMetric::KnnKept], &[]).unwrap();
        let kept = evaluate_model(&h, &clean, &corrupt, true, &options(kept_only), |_| {}).unwrap();
        assert!(kept.knn_majority_kept.is_some());
        assert_eq!(kept.knn_majority_kept, full.knn_majority_kept);
        assert!(rest.knn_majority_kept.is_some() && rest.knn_majority_kept == full.knn_majority_kept);
        // The full evaluation's spread is the sample sd over its 3 repeats.
        let ap = full.verification_ap.unwrap().clean;
        assert_eq!(ap.n, 3);
        assert!(ap.mean > 0.5, "AP {ap:?} on well separated classes");
    }

    /// The reliability diagram and the verification AURCs are those of the pair scores and η
    /// computed here directly (quadrature: deterministic, one repeat), and the Monte-Carlo
    /// evaluation's diagram holds every repeat's pairs.
    #[test]
    fn reliability_and_verification_aurc_are_those_of_the_pair_scores() {
        let _turn = hedge_run::lock_generator();
        let _generator = crate::seeded_generator(5);
        let (_vs, h) = head(1.5, 1.0);
        let (clean, corrupt) = labelled_twins(12, 10);
        let estimator = MatchEstimator::Quadrature { points: 8 };
        let options = ModelEvalOptions {
            base: EvalOptions { bins: 4, candidates: 30, estimator, ..Default::default() },
            repeats: 3,
            matching_pairs: 200,
            non_matching_pairs: 200,
            pair_seed: 7,
            metrics: MetricSet::all(),
        };
        let eval = evaluate_model(&h, &clean, &corrupt, true, &options, |_| {}).unwrap();
        let pairs = hedge_data::verification_pairs(&clean.labels, 200, 200, 7).unwrap();
        let scorer = Scorer { matcher: &h, estimator, stochastic: true };
        let mut p = scorer.pair_scores(&clean, &pairs).unwrap();
        p.extend(scorer.pair_scores(&corrupt, &pairs).unwrap());
        let y: Vec<bool> = pairs.is_match.iter().chain(&pairs.is_match).copied().collect();
        // As JSON: an empty bin's NaN means (null there) are equal too.
        let json = |d: &ReliabilityDiagram| serde_json::to_string(d).unwrap();
        assert_eq!(json(eval.reliability.as_ref().unwrap()), json(&ReliabilityDiagram::new(&p, &y, 10).unwrap()));
        let (correct, confidence) = verification_decisions(&p, &y).unwrap();
        assert_eq!(eval.verification_aurc.unwrap().mean, risk_coverage(&confidence, &correct).unwrap().aurc);
        let pair_eta = |set: &EmbeddedSet| -> Vec<f64> {
            let eta = self_mismatch(&h, &set.embedding, estimator).unwrap();
            pairs.left.iter().zip(&pairs.right).map(|(&l, &r)| eta[l].max(eta[r])).collect()
        };
        let mut eta = pair_eta(&clean);
        eta.extend(pair_eta(&corrupt));
        assert_eq!(eval.verification_aurc_eta.unwrap().mean, risk_coverage(&eta, &correct).unwrap().aurc);
        // Monte Carlo: three repeats of 2 x 400 pairs in one diagram; a point model has no η.
        let mc = ModelEvalOptions {
            base: EvalOptions { estimator: MatchEstimator::MonteCarlo { samples: 4 }, ..options.base },
            ..options
        };
        let eval = evaluate_model(&h, &clean, &corrupt, true, &mc, |_| {}).unwrap();
        assert_eq!(eval.reliability.unwrap().count(), 3 * 2 * 400);
        let point = evaluate_model(&h, &clean, &corrupt, false, &mc, |_| {}).unwrap();
        assert!(point.verification_aurc.is_some() && point.verification_aurc_eta.is_none());
    }

    /// Three tight classes of three points on a line, one unit apart: with its own image in
    /// the gallery every probe's 5 neighbours are its 3 class members (itself included) and 2
    /// others, a majority; left out, only 2 of 5 are its class. Worked by hand: kept 1, left out 0.
    #[test]
    fn the_kept_gallery_counts_the_probe_as_its_own_neighbour() {
        let x: Vec<f32> = [0.0f32, 1.0, 2.0].iter().flat_map(|&c| [c, c + 0.01, c + 0.02]).collect();
        let labels: Vec<u32> = (0..3).flat_map(|c| [c; 3]).collect();
        let mean = Tensor::from_slice(&x).view([9, 1, 1]).repeat([1, 1, 2]) * Tensor::from_slice(&[1.0f32, 0.0]);
        let set = EmbeddedSet {
            embedding: Embedding { mean, variance: None },
            labels,
            eta: Tensor::zeros([9], (Kind::Float, Device::Cpu)),
        };
        let (_vs, h) = head(1.0, 0.0);
        let scorer = Scorer { matcher: &h, estimator: MatchEstimator::MonteCarlo { samples: 1 }, stochastic: false };
        let options = EvalOptions::default();
        let kept = knn_outcome(&scorer, &set, &set, &options, GalleryReading::Kept).unwrap();
        let left_out = knn_outcome(&scorer, &set, &set, &options, GalleryReading::LeaveOneOut).unwrap();
        assert_eq!(kept.majority_accuracy(), 1.0);
        assert_eq!(left_out.majority_accuracy(), 0.0);
    }

    #[test]
    fn metric_names_parse_and_bad_ones_are_named() {
        for m in HibMetric::ALL {
            assert_eq!(HibMetric::parse(m.name()).unwrap(), m);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
        }
        let err = MetricSet::parse("knn_acuracy", "").unwrap_err().to_string();
        assert!(err.contains("'metrics'") && err.contains("knn_accuracy"), "{err}");
        let err = MetricSet::parse("ece", "ece").unwrap_err().to_string();
        assert!(err.contains("excludes every metric"), "{err}");
        let set = MetricSet::parse("ece, aurc", "").unwrap();
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![HibMetric::Ece, HibMetric::Aurc]);
        let back: MetricSet = serde_json::from_str(&serde_json::to_string(&set).unwrap()).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn binned_metrics_follow_the_bins() {
        // η rises with the index; the first half is correct, the second wrong.
        let eta: Vec<f64> = (0..40).map(f64::from).collect();
        let correct: Vec<bool> = (0..40).map(|i| i < 20).collect();
        let per_bin = binned_accuracy(&eta, &correct, 4).unwrap();
        assert_eq!(per_bin, vec![1.0, 1.0, 0.0, 0.0]);
        assert!(inverted_tau(&per_bin).unwrap() > 0.0);
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
