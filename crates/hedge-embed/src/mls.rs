//! Probabilistic Face Embeddings' mutual likelihood score (Shi & Jain, ICCV 2019) as a pair
//! loss: the expected likelihood kernel of two embeddings,
//!
//! K(x₁, x₂) = ∫ p(z|x₁) p(z|x₂) dz = N(μ₁; μ₂, Σ₁ + Σ₂) for two diagonal Gaussians,
//!
//! whose log is PFE's score (Eq. 3 there, with its constants kept), under a sigmoid head:
//! p(m | x₁, x₂) = σ(a · log K + b), trained from scratch with binary cross-entropy plus β·KL
//! (Eq. 8's regulariser, which keeps the variances from collapsing to sharpen every match).
//!
//! **Mixtures.** The kernel of two equal-weight mixtures is the mean of the component pairs'
//! kernels, K = (1 / C₁C₂) Σᵢⱼ N(μ₁ᵢ; μ₂ⱼ, Σ₁ᵢ + Σ₂ⱼ), so log K is a log-sum-exp: still exact.
//!
//! **Search.** log K is not a distance of any fixed points (the variances of both sides meet in
//! one denominator), so an index finds candidates by the component means and re-ranks them by
//! the closed form; it states the candidates' recall of the exact top 10 (`hedge hib search`).
//!
//! PFE itself trains only the variance head on a frozen point backbone; here the whole network
//! trains with the score, as every hedge loss does.

use tch::{Kind, Tensor};

use crate::distribution::Embedding;
use crate::loss::{ClosedForm, MatchHead, Matching, Search};
use crate::pair_loss::{distributions_only, logistic, sampled_pairs_only, with_kl, LossParams, Registration};

const LOG_2PI: f64 = 1.837_877_066_409_345_5;

/// log N(μ₁; μ₂, Σ₁ + Σ₂) of every component pair, broadcast over leading dimensions.
///
/// # Shapes
/// `m1`, `v1`: `[..., C1, 1, D]`; `m2`, `v2`: `[..., 1, C2, D]`; returns `[..., C1, C2]`.
fn component_log_kernel(m1: &Tensor, v1: &Tensor, m2: &Tensor, v2: &Tensor) -> Tensor {
    let var = v1 + v2;
    let terms = (m1 - m2).square() / &var + var.log() + LOG_2PI;
    terms.sum_dim_intlist([-1i64].as_slice(), false, m1.kind()) * -0.5
}

/// The variances of `e`, which must be a distribution.
fn variance(e: &Embedding) -> &Tensor {
    e.variance.as_ref().expect("the mls loss refuses point embeddings (distributions_only)")
}

/// log K of aligned rows: the log of the mean kernel over component pairs.
///
/// # Shapes
/// `left`, `right`: `B` inputs each; returns `[B]`.
pub fn log_kernel(left: &Embedding, right: &Embedding) -> Tensor {
    let pairs = (left.components() * right.components()) as f64;
    let k = component_log_kernel(
        &left.mean.unsqueeze(2),
        &variance(left).unsqueeze(2),
        &right.mean.unsqueeze(1),
        &variance(right).unsqueeze(1),
    );
    k.logsumexp([1i64, 2].as_slice(), false) - pairs.ln()
}

/// log K of every probe against every gallery item, the gallery taken in chunks so that no
/// intermediate holds more than about 2²⁴ numbers.
///
/// # Shapes
/// `probes`: `P` inputs, `gallery`: `G` inputs; returns `[P, G]`.
pub fn log_kernel_matrix(probes: &Embedding, gallery: &Embedding) -> Tensor {
    let (p, g) = (probes.batch(), gallery.batch());
    let (c1, c2, d) = (probes.components(), gallery.components(), probes.dim());
    let chunk = ((1i64 << 24) / (p * c1 * c2 * d).max(1)).clamp(1, g.max(1));
    let pairs = (c1 * c2) as f64;
    let (mp, vp) = (probes.mean.view([p, 1, c1, 1, d]), variance(probes).view([p, 1, c1, 1, d]));
    let columns: Vec<Tensor> = (0..g)
        .step_by(chunk as usize)
        .map(|start| {
            let len = chunk.min(g - start);
            let part = gallery.narrow(start, len);
            let k = component_log_kernel(
                &mp,
                &vp,
                &part.mean.view([1, len, 1, c2, d]),
                &variance(&part).view([1, len, 1, c2, d]),
            );
            k.logsumexp([2i64, 3].as_slice(), false) - pairs.ln()
        })
        .collect();
    Tensor::cat(&columns, 1)
}

/// The match logit a · log K + b of aligned rows.
///
/// # Shapes
/// returns `[B]`.
pub fn match_logit(matcher: &MatchHead, left: &Embedding, right: &Embedding) -> Tensor {
    matcher.a() * log_kernel(left, right) + &matcher.b
}

/// Binary cross-entropy of the match logit per pair (from log-sigmoids, so neither saturates).
///
/// # Shapes
/// `is_match`: `[B]` bool; returns `[B]`.
pub fn mls_loss(matcher: &MatchHead, left: &Embedding, right: &Embedding, is_match: &Tensor) -> Tensor {
    let logit = match_logit(matcher, left, right);
    logistic(&logit, is_match)
}

/// σ(a · log K + b), η = 1 − σ(a · log K(x, x) + b), ranked by log K; candidates by the means.
pub const CLOSED_FORM: ClosedForm = ClosedForm {
    name: "mls",
    about: "PFE's mutual likelihood score under a sigmoid head, σ(a·log N(μ1; μ2, Σ1 + Σ2) + b), exact",
    distributions_only: true,
    probability: |matcher, left, right| match_logit(matcher, left, right).sigmoid(),
    self_mismatch: |matcher, e| match_logit(matcher, e, e).sigmoid().neg() + 1.0,
    rank: log_kernel_matrix,
    search: Search::Means,
};

pub const REGISTRATION: Registration = Registration {
    name: "mls",
    about: "PFE MLS: binary cross-entropy of σ(a·log N(μ1; μ2, Σ1 + Σ2) + b), no sampling, plus β·KL (Shi & Jain 2019)",
    check: |params: &LossParams| distributions_only(params).and_then(|()| sampled_pairs_only(params)),
    loss: |input| with_kl(input, mls_loss(input.matcher, input.left, input.right, input.is_match).mean(Kind::Float)),
    matching: Matching::ClosedForm(&CLOSED_FORM),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::LossKind;
    use crate::pair_loss::PairLoss;

    fn gaussian(mean: &[f64], variance: &[f64], c: i64, d: i64) -> Embedding {
        let b = mean.len() as i64 / (c * d);
        Embedding {
            mean: Tensor::from_slice(mean).reshape([b, c, d]),
            variance: Some(Tensor::from_slice(variance).reshape([b, c, d])),
        }
    }

    /// By hand, in one dimension: N(0; 1, .5 + 1.5) = exp(−1 / 4) / √(4π), so log K = −.25 −
    /// ½ ln 4π = −1.515512.
    /// In two: means (1, 2) and (0, −1), variances (.5, .25) and (1, 2): Σ = (1.5, 2.25),
    /// log K = −½ (1/1.5 + 9/2.25 + ln 1.5 + ln 2.25 + 2 ln 2π) = −4.580024.
    #[test]
    fn log_kernel_is_the_gaussian_density_of_one_mean_at_the_other() {
        let one = log_kernel(&gaussian(&[0.0], &[0.5], 1, 1), &gaussian(&[1.0], &[1.5], 1, 1));
        let want = -0.25 - 0.5 * (4.0 * std::f64::consts::PI).ln();
        assert!((one.double_value(&[0]) - want).abs() < 1e-12, "{}", one.double_value(&[0]));
        let two = log_kernel(&gaussian(&[1.0, 2.0], &[0.5, 0.25], 1, 2), &gaussian(&[0.0, -1.0], &[1.0, 2.0], 1, 2));
        let want = -0.5 * (1.0 / 1.5 + 9.0 / 2.25 + 1.5f64.ln() + 2.25f64.ln() + 2.0 * LOG_2PI);
        assert!((two.double_value(&[0]) - want).abs() < 1e-12, "{}", two.double_value(&[0]));
    }

    /// The kernel is E_{z ~ p(z|x₁)} p(z|x₂): for a mixture against a mixture, the Monte-Carlo
    /// mean of the second mixture's density at 400,000 draws of the first agrees within 1 %.
    #[test]
    fn the_mixture_kernel_is_the_expected_likelihood() {
        let left = gaussian(&[0.0, 0.0, 2.0, 0.5], &[0.3, 0.2, 0.1, 0.4], 2, 2);
        let right = gaussian(&[1.0, 0.0, -0.5, 1.0], &[0.5, 0.5, 0.2, 0.3], 2, 2);
        let exact = log_kernel(&left, &right).double_value(&[0]).exp();
        // The generator is one per process: hold it while drawing, as every test beside this one does.
        let _generator = crate::seeded_generator(3);
        let z = left.sample(400_000).squeeze_dim(0); // [K, 2]
        let (m, v) = (right.mean.squeeze_dim(0), variance(&right).squeeze_dim(0)); // [2, 2]
        let log_density =
            ((z.unsqueeze(1) - m.unsqueeze(0)).square() / v.unsqueeze(0) + v.log().unsqueeze(0) + LOG_2PI)
                .sum_dim_intlist([2i64].as_slice(), false, Kind::Double)
                * -0.5;
        let density = log_density.exp().mean_dim([1i64].as_slice(), false, Kind::Double);
        let mc = density.mean(Kind::Double).double_value(&[]);
        assert!((mc / exact - 1.0).abs() < 0.01, "Monte Carlo {mc}, closed form {exact}");
    }

    /// The matrix form equals the row form on every pair (gallery chunks included), the loss is
    /// the logistic loss of a·log K + b, and η grows with the variance.
    #[test]
    fn the_matrix_the_loss_and_eta_follow_the_row_form() {
        let probes = gaussian(&[1.0, 2.0, -1.0, 0.5], &[0.5, 0.25, 0.1, 0.2], 1, 2);
        let gallery = gaussian(&[0.0, -1.0, 3.0, 1.0, 0.2, 0.2], &[1.0, 2.0, 0.3, 0.3, 0.05, 0.05], 1, 2);
        let m = log_kernel_matrix(&probes, &gallery);
        for p in 0..2 {
            for g in 0..3 {
                let row = log_kernel(&probes.narrow(p, 1), &gallery.narrow(g, 1)).double_value(&[0]);
                assert!((m.double_value(&[p, g]) - row).abs() < 1e-9, "{p} {g}");
            }
        }
        let vs = tch::nn::VarStore::new(tch::Device::Cpu);
        let head = MatchHead::new(vs.root(), 2.0, 1.5).with_matching(REGISTRATION.matching());
        let (left, right) = (probes.narrow(0, 1), gallery.narrow(0, 1));
        let logit = 2.0 * log_kernel(&left, &right).double_value(&[0]) + 1.5;
        let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
        let matched = mls_loss(&head, &left, &right, &Tensor::from_slice(&[true])).double_value(&[0]);
        let unmatched = mls_loss(&head, &left, &right, &Tensor::from_slice(&[false])).double_value(&[0]);
        assert!((matched + sigmoid(logit).ln()).abs() < 1e-6 && (unmatched + sigmoid(-logit).ln()).abs() < 1e-6);
        assert!((head.match_probability(&left, &right, 1).double_value(&[0]) - sigmoid(logit)).abs() < 1e-6);
        let eta = |v: f64| head.self_mismatch(&gaussian(&[0.0, 0.0], &[v, v], 1, 2), 1).double_value(&[0]);
        assert!(eta(0.1) < eta(1.0) && eta(1.0) < eta(10.0), "{} {} {}", eta(0.1), eta(1.0), eta(10.0));
    }

    /// Named `mls` in settings; a point model is refused naming the fix.
    #[test]
    fn mls_is_registered_and_refuses_point_embeddings() {
        let kind: LossKind = "mls".parse().unwrap();
        let point = crate::HibConfig::default().with_loss(kind).with_model(crate::EmbeddingKind::Point);
        let err = kind.loss().check(&point.loss_params()).unwrap_err().to_string();
        assert!(err.contains("--model gaussian"), "{err}");
        let gaussian = crate::HibConfig::default().with_loss(kind).with_model(crate::EmbeddingKind::Gaussian);
        kind.loss().check(&gaussian.loss_params()).unwrap();
    }
}
