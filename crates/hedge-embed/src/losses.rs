//! The registry of pair losses, above the trait ([`crate::pair_loss`]) and the losses it lists:
//! a new loss is its own file, one line in [`LOSSES`] and its `mod` line in `lib.rs`. Its match
//! function ([`crate::pair_loss::Registration::matching`]) comes with it: evaluation, index
//! manifests and search find a closed form here by name ([`closed_form_named`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{EmbedError, Result};
use crate::loss::ClosedForm;
use crate::pair_loss::{self, Registration};

/// Every pair loss hedge has, by the name settings give it.
pub const LOSSES: &[Registration] = &[
    // One line per loss, in the order `--help` lists them; the first is the default.
    pair_loss::SOFT,
    pair_loss::CONTRASTIVE,
    crate::focal::REGISTRATION,
    crate::csd::REGISTRATION,
    crate::mls::REGISTRATION,
];

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

/// The closed-form match function called `name` (its [`ClosedForm::name`]) among the registered
/// losses'; the error lists the names there are.
pub fn closed_form_named(name: &str) -> Result<&'static ClosedForm> {
    closed_forms().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<&str> = closed_forms().map(|f| f.name).collect();
        EmbedError::invalid(
            "kind",
            name,
            format!("no such closed-form match probability; the registered losses have {}", names.join(", ")),
        )
    })
}

/// Every registered loss's closed-form match function, in registry order.
pub fn closed_forms() -> impl Iterator<Item = &'static ClosedForm> {
    LOSSES.iter().filter_map(|r| r.matching.closed_form())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair_loss::PairLoss;

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

    #[test]
    fn every_closed_form_is_found_by_its_name_and_no_two_share_one() {
        let names: Vec<&str> = closed_forms().map(|f| f.name).collect();
        assert!((1..names.len()).all(|i| !names[..i].contains(&names[i])), "names are unique: {names:?}");
        for r in LOSSES {
            if let Some(form) = r.matching().closed_form() {
                assert_eq!(closed_form_named(form.name).unwrap().about, form.about);
            }
        }
        let err = closed_form_named("hib").unwrap_err().to_string();
        assert!(err.contains("no such closed-form match probability"), "{err}");
    }
}
