//! The focal soft contrastive loss: Lin et al.'s focal loss (ICCV 2017) on HIB's match
//! probability, −(1 − p_t)^γ log p_t with p_t = p(m = m̂ | x₁, x₂) and γ = 2 (their choice),
//! plus β·KL as in Eq. 8. Pairs the head already gets right weigh less, so training dwells on
//! the hard ones. The worked example of a loss (ARCHITECTURE.md): this file, one line in
//! [`crate::losses::LOSSES`] and its `mod` line. It scores by HIB's match probability.

use tch::{Kind, Tensor};

use crate::loss::Matching;
use crate::pair_loss::{sampled_pairs_only, LossTerms, Registration};

/// Lin et al.'s focusing parameter.
pub const GAMMA: f64 = 2.0;

pub const REGISTRATION: Registration = Registration {
    name: "focal",
    about: "Focal soft contrastive loss −(1 − p_t)² log p_t on the match probability, plus β·KL (Lin et al. 2017)",
    check: sampled_pairs_only,
    matching: Matching::Hib,
    loss: |input| {
        let k = input.params.samples as i64;
        let (z1, z2) = (input.left.sample(k), input.right.sample(k));
        let (log_p, log_not_p) = input.matcher.log_match(&z1, &z2);
        let pair = focal(&log_p.where_self(input.is_match, &log_not_p), GAMMA).mean(Kind::Float);
        let kl = (input.left.kl_to_standard_normal(&z1) + input.right.kl_to_standard_normal(&z2)).mean(Kind::Float);
        let beta = input.params.beta;
        let total = if beta > 0.0 { &pair + &kl * beta } else { pair.shallow_clone() };
        LossTerms { total, pair, kl, pairs: input.is_match.size()[0] as usize }
    },
};

/// −(1 − p_t)^γ log p_t per pair from log p_t.
///
/// # Shapes
/// `log_pt`: `[B]` → `[B]`.
pub fn focal(log_pt: &Tensor, gamma: f64) -> Tensor {
    let miss = log_pt.exp().neg() + 1.0;
    -(miss.pow_tensor_scalar(gamma) * log_pt)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from the formula by hand: p_t = .9 → −(.1)² ln .9 = .0010536; p_t = .2 →
    /// −(.8)² ln .2 = 1.030046; with γ = 0 it is the soft contrastive loss −ln p_t.
    #[test]
    fn focal_weights_the_soft_contrastive_loss_by_how_wrong_the_pair_is() {
        let log_pt = Tensor::from_slice(&[0.9f64.ln(), 0.2f64.ln()]);
        let got: Vec<f64> = Vec::try_from(focal(&log_pt, 2.0)).unwrap();
        for (g, want) in got.iter().zip([0.01 * -(0.9f64.ln()), 0.64 * -(0.2f64.ln())]) {
            assert!((g - want).abs() < 1e-12, "{got:?}");
        }
        let plain: Vec<f64> = Vec::try_from(focal(&log_pt, 0.0)).unwrap();
        assert!((plain[1] + 0.2f64.ln()).abs() < 1e-12);
    }
}
