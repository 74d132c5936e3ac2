//! The registry of acquisitions: every [`Registration`] hedge has, by the name settings, the
//! command line and Python give it. It sits above the trait ([`crate::acquire`]) and the
//! acquisitions (the built-in ones there, [`crate::least_confidence`] in a file of its own), so
//! that neither imports it back: a new acquisition is its own file plus one line here.

use crate::acquire::{Registration, ACS_FW, BALD, LCMD, MAXENT, RANDOM};
use crate::error::{ActiveError, Result};
use crate::least_confidence;

/// Every acquisition hedge has, by the name settings give it.
pub const ACQUISITIONS: &[Registration] = &[RANDOM, MAXENT, BALD, ACS_FW, LCMD, least_confidence::REGISTRATION];

/// The registered acquisition called `name`; the error lists the names there are.
pub fn acquisition(name: &str) -> Result<&'static Registration> {
    ACQUISITIONS.iter().find(|r| r.name == name).ok_or_else(|| {
        ActiveError::Run(hedge_run::RunError::InvalidConfig {
            field: "method",
            value: name.to_string(),
            reason: format!("no such acquisition; hedge has {}", acquisition_names()),
        })
    })
}

/// The registered names, for messages (`random, maxent, ...`).
pub fn acquisition_names() -> String {
    ACQUISITIONS.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::{check_reads, Acquisition, Predictive, Reads, Request};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A regression predictive with entropies only.
    struct Entropies(Vec<f64>);

    impl Predictive for Entropies {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn entropy(&self) -> Result<Vec<f64>> {
            Ok(self.0.clone())
        }
    }

    #[test]
    fn registered_acquisitions_are_found_by_name_and_read_what_they_declare() {
        let p = Entropies(vec![0.1, 2.0, -1.0, 3.0, 0.5]);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let request = Request { size: 2, distinct: true };
        assert_eq!(acquisition("maxent").unwrap().select(&p, request, &mut rng).unwrap(), vec![1, 3]);
        assert_eq!(acquisition("random").unwrap().select(&p, request, &mut rng).unwrap().len(), 2);
        let err = acquisition("bald").unwrap().select(&p, request, &mut rng).unwrap_err().to_string();
        assert!(err.contains("class probabilities"), "{err}");
        let err = acquisition("max-ent").unwrap_err().to_string();
        assert!(err.contains("'method'") && err.contains("random, maxent, bald, acs-fw, lcmd"), "{err}");
        let names: Vec<&str> = ACQUISITIONS.iter().map(|r| r.name).collect();
        assert!((1..names.len()).all(|i| !names[..i].contains(&names[i])), "names are unique: {names:?}");
        let err = check_reads(acquisition("lcmd").unwrap(), "the GP", &[Reads::Entropy], "use NeuralLinear")
            .unwrap_err()
            .to_string();
        assert!(err.contains("last-layer features, which the GP does not give; use NeuralLinear"), "{err}");
    }
}
