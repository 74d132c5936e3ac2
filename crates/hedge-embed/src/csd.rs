//! PCME++'s closed-form sampled distance (Chun, ICLR 2024; naver-ai/pcmepp): for independent
//! draws z₁ ~ p(z|x₁), z₂ ~ p(z|x₂),
//!
//! CSD(x₁, x₂) = E‖z₁ − z₂‖² = ‖μ₁ − μ₂‖² + Σ_d (σ₁,d² + σ₂,d²),
//!
//! and the match probability σ(−a·CSD + b), trained with binary cross-entropy (plus β·KL, PCME++'s
//! optional variational bottleneck). No sampling: the loss, its gradients and the probability
//! are exact, where HIB's Monte-Carlo match probability (Eq. 5) is an average over K² samples.
//!
//! **Mixtures.** hedge defines CSD for a mixture as the same expectation, E‖z₁ − z₂‖² under the
//! two mixtures. Because the draws are independent it depends on each side's first two moments
//! only: with m = E z and s = E‖z‖² − ‖m‖² (the summed variance of the whole mixture),
//! E‖z₁ − z₂‖² = ‖m₁ − m₂‖² + s₁ + s₂. A mixture is therefore scored as the Gaussian with its mean
//! and total variance, which for one component is PCME++'s own formula. A point embedding has
//! s = 0, and its CSD is the squared Euclidean distance.
//!
//! A loss family with its own match function: this file, one line in
//! [`crate::losses::LOSSES`] and its `mod` line. [`CLOSED_FORM`] is what a model trained with it
//! scores, ranks, searches (exactly, [`csd_gallery_points`]) and abstains by.

use tch::{Kind, Tensor};

use crate::distribution::Embedding;
use crate::loss::{ClosedForm, MatchHead, Matching, Search};
use crate::pair_loss::{logistic, sampled_pairs_only, with_kl, Registration};

/// Each input's mean m = E z and summed variance s = E‖z‖² − ‖m‖² under its (equal-weight)
/// mixture; s = 0 for a point embedding.
///
/// # Shapes
/// `e`: `B` inputs of `C` components in `D` dimensions; returns `[B, D]` and `[B]`.
pub fn moments(e: &Embedding) -> (Tensor, Tensor) {
    let kind = e.mean.kind();
    let mean = e.mean.mean_dim([1i64].as_slice(), false, kind);
    let between = (&e.mean - mean.unsqueeze(1)).square().sum_dim_intlist([2i64].as_slice(), false, kind);
    let between = between.mean_dim([1i64].as_slice(), false, kind);
    let spread = match &e.variance {
        Some(v) => {
            let within = v.sum_dim_intlist([2i64].as_slice(), false, kind);
            within.mean_dim([1i64].as_slice(), false, kind) + between
        }
        None => between,
    };
    (mean, spread)
}

/// CSD of aligned rows: E‖z₁,ᵢ − z₂,ᵢ‖².
///
/// # Shapes
/// `left`, `right`: `B` inputs each; returns `[B]`.
pub fn csd(left: &Embedding, right: &Embedding) -> Tensor {
    let (m1, s1) = moments(left);
    let (m2, s2) = moments(right);
    let kind = m1.kind();
    (m1 - m2).square().sum_dim_intlist([1i64].as_slice(), false, kind) + s1 + s2
}

/// CSD of every probe against every gallery item.
///
/// # Shapes
/// `probes`: `P` inputs, `gallery`: `G` inputs; returns `[P, G]`.
pub fn csd_matrix(probes: &Embedding, gallery: &Embedding) -> Tensor {
    let (mp, sp) = moments(probes);
    let (mg, sg) = moments(gallery);
    let cross = mp.matmul(&mg.transpose(0, 1));
    let kind = mp.kind();
    let norms_p = mp.square().sum_dim_intlist([1i64].as_slice(), false, kind) + sp;
    let norms_g = mg.square().sum_dim_intlist([1i64].as_slice(), false, kind) + sg;
    // ‖m_p − m_g‖² + s_p + s_g = (‖m_p‖² + s_p) + (‖m_g‖² + s_g) − 2 m_p·m_g, never below 0.
    (norms_p.unsqueeze(1) + norms_g.unsqueeze(0) - cross * 2.0).clamp_min(0.0)
}

/// Gallery points for CSD search by Euclidean nearest neighbours: each item as [m, √s].
///
/// With a probe as [m_q, 0] ([`csd_probe_points`]), ‖q′ − x′‖² = ‖m_q − m_x‖² + s_x =
/// CSD(q, x) − s_q, and s_q is the same for every item of one probe's ranking. So the Euclidean
/// order of these points in D + 1 dimensions is exactly the CSD order, and a Euclidean index
/// (hedge-ann's HNSW) searches by CSD with no inner-product reduction.
///
/// # Shapes
/// `gallery`: `G` inputs in `D` dimensions; returns `[G, D + 1]`.
pub fn csd_gallery_points(gallery: &Embedding) -> Tensor {
    let (mean, spread) = moments(gallery);
    Tensor::cat(&[mean, spread.clamp_min(0.0).sqrt().unsqueeze(1)], 1)
}

/// Probe points for CSD search: each probe as [m, 0] (see [`csd_gallery_points`]).
///
/// # Shapes
/// `probes`: `P` inputs in `D` dimensions; returns `[P, D + 1]`.
pub fn csd_probe_points(probes: &Embedding) -> Tensor {
    let (mean, _) = moments(probes);
    let zero = mean.zeros_like().narrow(1, 0, 1);
    Tensor::cat(&[mean, zero], 1)
}

/// The match logit −a·CSD + b of aligned rows.
///
/// # Shapes
/// returns `[B]`.
pub fn match_logit(matcher: &MatchHead, left: &Embedding, right: &Embedding) -> Tensor {
    -matcher.a() * csd(left, right) + &matcher.b
}

/// p(m | x₁, x₂) = σ(−a·CSD + b) of aligned rows.
///
/// # Shapes
/// returns `[B]`.
pub fn match_probability(matcher: &MatchHead, left: &Embedding, right: &Embedding) -> Tensor {
    match_logit(matcher, left, right).sigmoid()
}

/// Self-mismatch η(x) = 1 − p(m | x, x) = 1 − σ(−a·2s + b): two draws of one input lie 2s apart
/// in squared distance on average, so η grows with the embedding's summed variance.
///
/// # Shapes
/// returns `[B]`.
pub fn self_mismatch(matcher: &MatchHead, e: &Embedding) -> Tensor {
    let (_, spread) = moments(e);
    (-matcher.a() * spread * 2.0 + &matcher.b).sigmoid().neg() + 1.0
}

/// Binary cross-entropy of the CSD match logit per pair: −log σ(ℓ) for matches, −log σ(−ℓ)
/// otherwise (computed from log-sigmoids, so neither saturates).
///
/// # Shapes
/// `is_match`: `[B]` bool; returns `[B]`.
pub fn csd_loss(matcher: &MatchHead, left: &Embedding, right: &Embedding, is_match: &Tensor) -> Tensor {
    let logit = match_logit(matcher, left, right);
    logistic(&logit, is_match)
}

/// σ(−a·CSD + b), its η, its ranking by −CSD and the exact search over [m, √s].
pub const CLOSED_FORM: ClosedForm = ClosedForm {
    name: "csd",
    about: "PCME++'s σ(−a·E‖z1 − z2‖² + b), exact; searched exactly over [m, √s]",
    distributions_only: false,
    probability: match_probability,
    self_mismatch,
    rank: |probes, gallery| -csd_matrix(probes, gallery),
    search: Search::Exact { point_dim: |d| d + 1, gallery_points: csd_gallery_points, probe_points: csd_probe_points },
};

pub const REGISTRATION: Registration = Registration {
    name: "csd",
    about: "PCME++ CSD: binary cross-entropy of σ(−a·E‖z1 − z2‖² + b), the closed-form sampled distance, no sampling, plus β·KL (Chun 2024)",
    check: sampled_pairs_only,
    loss: |input| with_kl(input, csd_loss(input.matcher, input.left, input.right, input.is_match).mean(Kind::Float)),
    matching: Matching::ClosedForm(&CLOSED_FORM),
};

#[cfg(test)]
mod tests {
    use super::*;

    fn gaussian(mean: &[f64], variance: &[f64], c: i64, d: i64) -> Embedding {
        let b = mean.len() as i64 / (c * d);
        Embedding {
            mean: Tensor::from_slice(mean).reshape([b, c, d]),
            variance: Some(Tensor::from_slice(variance).reshape([b, c, d])),
        }
    }

    /// One Gaussian each: ‖(1, 2) − (0, −1)‖² + (.5 + .25) + (1 + 2) = 1 + 9 + 3.75 = 13.75.
    /// A mixture of N((0, 0), .1 I) and N((2, 0), .3 I) against a point at the origin:
    /// E‖z‖² = ½(0 + .2) + ½(4 + .6) = 2.4, with mean (1, 0) and s = 2.4 − 1 = 1.4.
    #[test]
    fn csd_is_the_expected_squared_distance() {
        let left = gaussian(&[1.0, 2.0], &[0.5, 0.25], 1, 2);
        let right = gaussian(&[0.0, -1.0], &[1.0, 2.0], 1, 2);
        assert!((csd(&left, &right).double_value(&[0]) - 13.75).abs() < 1e-12);
        let mixture = gaussian(&[0.0, 0.0, 2.0, 0.0], &[0.1, 0.1, 0.3, 0.3], 2, 2);
        let origin = Embedding::point(Tensor::from_slice(&[0.0f64, 0.0]).reshape([1, 2]));
        let (mean, spread) = moments(&mixture);
        assert_eq!(Vec::<f64>::try_from(mean.flatten(0, -1)).unwrap(), [1.0, 0.0]);
        assert!((spread.double_value(&[0]) - 1.4).abs() < 1e-12);
        assert!((csd(&mixture, &origin).double_value(&[0]) - 2.4).abs() < 1e-12);
        // The same expectation by Monte Carlo from the mixture's own samples.
        // The generator is one per process: hold it while drawing, as every test beside this one does.
        let _generator = crate::seeded_generator(0);
        let z = mixture.sample(200_000);
        let mc = z.square().sum_dim_intlist([2i64].as_slice(), false, Kind::Double).mean(Kind::Double);
        assert!((mc.double_value(&[]) - 2.4).abs() < 0.02, "{}", mc.double_value(&[]));
    }

    /// The Euclidean order of the search points is the CSD order: brute force on both agrees
    /// for every probe, and hedge-ann's HNSW over the gallery points returns exactly the
    /// brute-force CSD top 10 (a search wide enough to be exhaustive on 400 items).
    #[test]
    fn euclidean_search_over_the_points_is_csd_search() {
        // The generator is one per process: hold it while drawing, as every test beside this one does.
        let _generator = crate::seeded_generator(7);
        let (g, p, c, d) = (400i64, 25i64, 2i64, 3i64);
        let options = (Kind::Double, tch::Device::Cpu);
        let gallery = Embedding {
            mean: Tensor::randn([g, c, d], options),
            variance: Some(Tensor::rand([g, c, d], options) * 2.0 + 0.01),
        };
        let probes = Embedding {
            mean: Tensor::randn([p, c, d], options),
            variance: Some(Tensor::rand([p, c, d], options) + 0.01),
        };
        let top = |scores: &Tensor| -> Vec<Vec<i64>> {
            let (_, idx) = scores.topk(10, 1, false, true);
            (0..p).map(|i| Vec::<i64>::try_from(idx.get(i)).unwrap()).collect()
        };
        let scores = csd_matrix(&probes, &gallery);
        // The fixture has no near-ties among each probe's 11 nearest, so f32 search cannot
        // reorder them on any CPU.
        let (nearest, _) = scores.topk(11, 1, false, true);
        let gaps = nearest.narrow(1, 1, 10) - nearest.narrow(1, 0, 10);
        assert!(gaps.min().double_value(&[]) > 1e-4, "a near-tie in the fixture");
        let by_csd = top(&scores);
        let (gp, pp) = (csd_gallery_points(&gallery), csd_probe_points(&probes));
        assert_eq!(gp.size(), [g, d + 1]);
        let euclid =
            (pp.unsqueeze(1) - gp.unsqueeze(0)).square().sum_dim_intlist([2i64].as_slice(), false, Kind::Float);
        assert_eq!(top(&euclid), by_csd);
        let rows = |t: &Tensor| Vec::<f32>::try_from(t.to_kind(Kind::Float).flatten(0, -1)).unwrap();
        let config = hedge_ann::AnnConfig::default();
        let index = hedge_ann::Hnsw::build(&rows(&gp), (d + 1) as usize, &config).unwrap();
        let found = index.nearest_with_ef(&rows(&pp), 10, 400);
        let found: Vec<Vec<i64>> = found.iter().map(|r| r.iter().map(|&(i, _)| i as i64).collect()).collect();
        assert_eq!(found, by_csd);
    }

    /// The matrix form equals the row form on every pair, and the loss is the logistic loss of
    /// −a·CSD + b: −log σ(ℓ) for a match, −log σ(−ℓ) for a non-match.
    #[test]
    fn the_matrix_and_the_loss_follow_the_row_form() {
        let probes = gaussian(&[1.0, 2.0, -1.0, 0.5], &[0.5, 0.25, 0.1, 0.2], 1, 2);
        let gallery = gaussian(&[0.0, -1.0, 3.0, 1.0, 0.2, 0.2], &[1.0, 2.0, 0.3, 0.3, 0.05, 0.05], 1, 2);
        let m = csd_matrix(&probes, &gallery);
        for p in 0..2 {
            for g in 0..3 {
                let row = csd(&probes.narrow(p, 1), &gallery.narrow(g, 1)).double_value(&[0]);
                assert!((m.double_value(&[p, g]) - row).abs() < 1e-9, "{p} {g}");
            }
        }
        let vs = tch::nn::VarStore::new(tch::Device::Cpu);
        let head = MatchHead::new(vs.root(), 2.0, 1.5);
        let (left, right) = (probes.narrow(0, 1), gallery.narrow(0, 1));
        let logit = -2.0 * 13.75 + 1.5;
        let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
        let matched = csd_loss(&head, &left, &right, &Tensor::from_slice(&[true]));
        let unmatched = csd_loss(&head, &left, &right, &Tensor::from_slice(&[false]));
        assert!((matched.double_value(&[0]) + sigmoid(logit).ln()).abs() < 1e-6 * 26.0);
        assert!((unmatched.double_value(&[0]) + sigmoid(-logit).ln()).abs() < 1e-9);
        let p = match_probability(&head, &left, &right).double_value(&[0]);
        assert!((p - sigmoid(logit)).abs() < 1e-12);
        let eta = self_mismatch(&head, &left).double_value(&[0]);
        assert!((eta - (1.0 - sigmoid(-2.0 * 2.0 * 0.75 + 1.5))).abs() < 1e-6);
    }
}
