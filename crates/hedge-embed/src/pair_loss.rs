//! Pair losses as pieces the trainer takes (pytorch-metric-learning's way): a [`PairLoss`]
//! scores one step's pairs from their embeddings and the match head, and refuses settings it
//! cannot train with before training starts. The built-in ones are registered in [`LOSSES`]
//! under the names `loss = "…"` in a recipe, `hib train --loss` and Python give them.

use std::fmt;

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use crate::config::{EmbeddingKind, HibConfig, PairSet};
use crate::distribution::Embedding;
use crate::error::{EmbedError, Result};
use crate::loss::{all_pair_loss, contrastive, vib_loss, MatchHead};

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
    pub config: &'a HibConfig,
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
    fn check(&self, config: &HibConfig) -> Result<()>;
    /// The step's loss.
    fn loss(&self, input: &LossInput<'_>) -> LossTerms;
}

/// A built-in loss: a name, its checks and a pure function.
#[derive(Debug)]
pub struct Registration {
    pub name: &'static str,
    pub about: &'static str,
    pub check: fn(&HibConfig) -> Result<()>,
    pub loss: fn(&LossInput<'_>) -> LossTerms,
}

impl PairLoss for Registration {
    fn name(&self) -> &str {
        self.name
    }
    fn check(&self, config: &HibConfig) -> Result<()> {
        (self.check)(config)
    }
    fn loss(&self, input: &LossInput<'_>) -> LossTerms {
        (self.loss)(input)
    }
}

/// Every pair loss hedge has, by the name settings give it.
pub const LOSSES: &[Registration] = &[SOFT, CONTRASTIVE, crate::focal::REGISTRATION, crate::csd::REGISTRATION];

/// Which registered loss a run trains with; reads and writes as its name (`"soft"`).
#[derive(Clone, Copy)]
pub struct LossKind(&'static Registration);

impl LossKind {
    /// The soft contrastive loss (the default).
    pub const SOFT: LossKind = LossKind(&LOSSES[0]);
    /// Hadsell et al.'s contrastive loss.
    pub const CONTRASTIVE: LossKind = LossKind(&LOSSES[1]);

    /// The registered loss called `name`; the error lists the names there are.
    pub fn named(name: &str) -> Result<LossKind> {
        LOSSES
            .iter()
            .find(|r| r.name == name)
            .map(LossKind)
            .ok_or_else(|| EmbedError::invalid("loss", name, format!("no such loss; hedge has {}", loss_names())))
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The loss itself.
    pub fn loss(self) -> &'static Registration {
        self.0
    }
}

/// The registered names, for messages (`soft, contrastive, ...`).
pub fn loss_names() -> String {
    LOSSES.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
}

impl PartialEq for LossKind {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for LossKind {}

impl fmt::Debug for LossKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LossKind({:?})", self.0.name)
    }
}

impl Default for LossKind {
    fn default() -> Self {
        LossKind::SOFT
    }
}

impl Serialize for LossKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name)
    }
}

impl<'de> Deserialize<'de> for LossKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        LossKind::named(&name).map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for LossKind {
    type Err = EmbedError;
    fn from_str(s: &str) -> Result<Self> {
        LossKind::named(s)
    }
}

/// Refuses `pair_set = all` for a loss that scores sampled pairs only.
pub fn sampled_pairs_only(config: &HibConfig) -> Result<()> {
    if config.data.pair_set == PairSet::All {
        return Err(EmbedError::invalid(
            "pair_set",
            "all",
            format!(
                "all pairs is implemented for the soft contrastive loss; use --loss soft, not {}",
                config.loss.kind.name()
            ),
        ));
    }
    Ok(())
}

/// Soft contrastive loss with the variational information bottleneck (Eqs. 3 and 8), over the
/// sampled pairs or every pair of a grouped batch.
pub const SOFT: Registration = Registration {
    name: "soft",
    about: "Soft contrastive loss −log p(m = m̂) with p = σ(−a‖z1 − z2‖ + b), plus β·KL (Eqs. 2–3, 5, 8)",
    check: |_| Ok(()),
    loss: |input| {
        let samples = input.config.effective_samples() as i64;
        match input.all_pairs {
            Some(pairs) => {
                let (total, pair, kl) =
                    all_pair_loss(input.matcher, input.embedding, pairs, samples, input.config.loss.beta);
                LossTerms { total, pair, kl, pairs: pairs.2.size()[0] as usize }
            }
            None => {
                let l =
                    vib_loss(input.matcher, input.left, input.right, input.is_match, samples, input.config.loss.beta);
                LossTerms { total: l.total, pair: l.pair, kl: l.kl, pairs: input.is_match.size()[0] as usize }
            }
        }
    },
};

/// Hadsell et al.'s contrastive loss with margin `margin` (Eq. 1), on point embeddings.
pub const CONTRASTIVE: Registration = Registration {
    name: "contrastive",
    about: "Hadsell et al.'s contrastive loss with margin `margin` (Eq. 1); point embeddings only",
    check: |config| {
        if config.model.embedding != EmbeddingKind::Point {
            return Err(EmbedError::invalid(
                "loss",
                "contrastive",
                "contrastive is defined for point embeddings (Eq. 1); use --loss soft for stochastic ones",
            ));
        }
        sampled_pairs_only(config)
    },
    loss: |input| {
        let l = contrastive(
            &input.left.mean.select(1, 0),
            &input.right.mean.select(1, 0),
            input.is_match,
            input.config.loss.margin,
        )
        .mean(Kind::Float);
        let kl = l.zeros_like();
        LossTerms { total: l.shallow_clone(), pair: l, kl, pairs: input.is_match.size()[0] as usize }
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_reads_and_writes_as_its_name_and_an_unknown_one_is_listed() {
        for name in ["soft", "contrastive", "focal"] {
            let kind: LossKind = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(kind.name(), name);
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
        }
        let err = serde_json::from_str::<LossKind>("\"sfot\"").unwrap_err().to_string();
        assert!(err.contains("no such loss; hedge has soft, contrastive, focal"), "{err}");
        let names: Vec<&str> = LOSSES.iter().map(|r| r.name).collect();
        assert!((1..names.len()).all(|i| !names[..i].contains(&names[i])), "names are unique: {names:?}");
        assert_eq!(LossKind::default(), LossKind::SOFT);
    }
}
