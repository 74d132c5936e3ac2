//! Pair losses as pieces the trainer takes (pytorch-metric-learning's way): a [`PairLoss`]
//! scores one step's pairs from their embeddings and the match head, refuses settings it
//! cannot train with before training starts, and names the match function a model trained
//! with it scores by ([`Matching`]). The built-in ones are registered in
//! [`crate::losses::LOSSES`] under the names `loss = "…"` in a recipe, `hib train --loss` and
//! Python give them.

use tch::{Kind, Tensor};

use crate::distribution::Embedding;
use crate::error::{EmbedError, Result};
use crate::loss::{all_pair_loss, contrastive, vib_loss, MatchHead, Matching};

/// What a loss reads of a run's settings ([`crate::HibConfig::loss_params`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossParams {
    /// The loss's registered name (for messages).
    pub name: &'static str,
    /// Samples per input (1 for a point embedding).
    pub samples: usize,
    /// Weight of the KL term (Eq. 8).
    pub beta: f64,
    /// The contrastive margin M.
    pub margin: f64,
    /// Whether the embeddings are distributions (not points).
    pub stochastic: bool,
    /// Whether every pair of a grouped batch is scored (`pair_set = all`).
    pub all_pairs: bool,
}

/// What a pair loss sees of one training step.
pub struct LossInput<'a> {
    pub matcher: &'a MatchHead,
    /// Every image of the batch, embedded.
    pub embedding: &'a Embedding,
    /// The sampled pairs' two sides (rows of `embedding`).
    pub left: &'a Embedding,
    pub right: &'a Embedding,
    /// `[B]` bool: whether each sampled pair matches.
    pub is_match: &'a Tensor,
    /// With `pair_set = all`: every pair of the grouped batch as (left rows, right rows,
    /// is_match) into `embedding`.
    pub all_pairs: Option<(&'a Tensor, &'a Tensor, &'a Tensor)>,
    /// The run's settings (samples, β, margin, …).
    pub params: LossParams,
}

/// One step's loss and its parts (scalars); `total` is what is minimised.
#[derive(Debug)]
pub struct LossTerms {
    pub total: Tensor,
    /// The mean pair term.
    pub pair: Tensor,
    /// The KL term (zero for a loss without one).
    pub kl: Tensor,
    /// Pairs the step scored.
    pub pairs: usize,
}

/// A loss the trainer minimises.
pub trait PairLoss: Send + Sync {
    /// The name settings give it.
    fn name(&self) -> &str;
    /// Refuses settings it cannot train with (an [`hedge_run::RunError::InvalidConfig`] naming the field).
    fn check(&self, params: &LossParams) -> Result<()>;
    /// The step's loss.
    fn loss(&self, input: &LossInput<'_>) -> LossTerms;
    /// The match probability, self-mismatch and search space of a model trained with it.
    fn matching(&self) -> Matching {
        Matching::Hib
    }
}

/// A built-in loss: a name, its checks, a pure function and its match function.
#[derive(Debug)]
pub struct Registration {
    pub name: &'static str,
    pub about: &'static str,
    pub check: fn(&LossParams) -> Result<()>,
    pub loss: fn(&LossInput<'_>) -> LossTerms,
    /// What a model trained with it scores, ranks and abstains by ([`Matching::Hib`] unless
    /// the loss has its own closed form).
    pub matching: Matching,
}

impl PairLoss for Registration {
    fn name(&self) -> &str {
        self.name
    }
    fn check(&self, params: &LossParams) -> Result<()> {
        (self.check)(params)
    }
    fn loss(&self, input: &LossInput<'_>) -> LossTerms {
        (self.loss)(input)
    }
    fn matching(&self) -> Matching {
        self.matching
    }
}

/// Refuses `pair_set = all` for a loss that scores sampled pairs only.
pub fn sampled_pairs_only(params: &LossParams) -> Result<()> {
    if params.all_pairs {
        return Err(EmbedError::invalid(
            "pair_set",
            "all",
            format!("all pairs is implemented for the soft contrastive loss; use --loss soft, not {}", params.name),
        ));
    }
    Ok(())
}

/// Refuses point embeddings, for a loss whose match function needs a variance.
pub fn distributions_only(params: &LossParams) -> Result<()> {
    if !params.stochastic {
        return Err(EmbedError::invalid(
            "loss",
            params.name,
            format!("{} scores distributions; use --model gaussian or mog, not point", params.name),
        ));
    }
    Ok(())
}

/// Binary cross-entropy of a match logit per pair: −log σ(ℓ) for matches, −log σ(−ℓ) otherwise
/// (from log-sigmoids, so neither saturates); what a closed-form loss minimises.
///
/// # Shapes
/// `logit`, `is_match` (bool): `[B]`; returns `[B]`.
pub fn logistic(logit: &Tensor, is_match: &Tensor) -> Tensor {
    -logit.log_sigmoid().where_self(is_match, &(-logit).log_sigmoid())
}

/// β·KL(p(z|x) ‖ N(0, I)) of both sides of the pairs with `params.samples` draws each (Eq. 8's
/// regulariser), with the step's total: `pair` plus it where β > 0. Zero for point embeddings or
/// β = 0.
pub fn with_kl(input: &LossInput<'_>, pair: Tensor) -> LossTerms {
    let beta = input.params.beta;
    let kl = if beta > 0.0 && input.left.variance.is_some() {
        let k = input.params.samples as i64;
        let (z1, z2) = (input.left.sample(k), input.right.sample(k));
        (input.left.kl_to_standard_normal(&z1) + input.right.kl_to_standard_normal(&z2)).mean(Kind::Float)
    } else {
        pair.zeros_like()
    };
    let total = if beta > 0.0 { &pair + &kl * beta } else { pair.shallow_clone() };
    LossTerms { total, pair, kl, pairs: input.is_match.size()[0] as usize }
}

/// Soft contrastive loss with the variational information bottleneck (Eqs. 3 and 8), over the
/// sampled pairs or every pair of a grouped batch.
pub const SOFT: Registration = Registration {
    name: "soft",
    about: "Soft contrastive loss −log p(m = m̂) with p = σ(−a‖z1 − z2‖ + b), plus β·KL (Eqs. 2–3, 5, 8)",
    check: |_| Ok(()),
    matching: Matching::Hib,
    loss: |input| {
        let samples = input.params.samples as i64;
        match input.all_pairs {
            Some(pairs) => {
                let (total, pair, kl) =
                    all_pair_loss(input.matcher, input.embedding, pairs, samples, input.params.beta);
                LossTerms { total, pair, kl, pairs: pairs.2.size()[0] as usize }
            }
            None => {
                let l = vib_loss(input.matcher, input.left, input.right, input.is_match, samples, input.params.beta);
                LossTerms { total: l.total, pair: l.pair, kl: l.kl, pairs: input.is_match.size()[0] as usize }
            }
        }
    },
};

/// Hadsell et al.'s contrastive loss with margin `margin` (Eq. 1), on point embeddings.
pub const CONTRASTIVE: Registration = Registration {
    name: "contrastive",
    about: "Hadsell et al.'s contrastive loss with margin `margin` (Eq. 1); point embeddings only",
    check: |params| {
        if params.stochastic {
            return Err(EmbedError::invalid(
                "loss",
                "contrastive",
                "contrastive is defined for point embeddings (Eq. 1); use --loss soft for stochastic ones",
            ));
        }
        sampled_pairs_only(params)
    },
    matching: Matching::Hib,
    loss: |input| {
        let l = contrastive(
            &input.left.mean.select(1, 0),
            &input.right.mean.select(1, 0),
            input.is_match,
            input.params.margin,
        )
        .mean(Kind::Float);
        let kl = l.zeros_like();
        LossTerms { total: l.shallow_clone(), pair: l, kl, pairs: input.is_match.size()[0] as usize }
    },
};
