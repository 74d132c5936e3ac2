//! Least confidence (Lewis and Gale 1994; baal's `Certainty`): the `b` points whose most probable
//! class is least probable under the MC predictive, 1 − max_c p̄(c | x). The worked example of
//! an acquisition (ARCHITECTURE.md): this file and one line in [`crate::acquisitions::ACQUISITIONS`].

use crate::acquire::{Reads, Registration};
use crate::acquisition::top_b;

pub const REGISTRATION: Registration = Registration {
    name: "least-confidence",
    about: "Top-b 1 − max_c p̄(c | x) under the MC predictive (classification)",
    reads: &[Reads::ClassProbabilities],
    select: |predictive, request, _rng| {
        let p = predictive.class_probabilities()?;
        Ok(top_b(&least_confidence(&p.mean, p.classes), request.size))
    },
};

/// 1 − max_c p(c) per row.
///
/// # Shapes
/// `probabilities`: `[points, classes]`, row-major → `[points]`.
pub fn least_confidence(probabilities: &[f64], classes: usize) -> Vec<f64> {
    probabilities.chunks(classes).map(|p| 1.0 - p.iter().copied().fold(0.0, f64::max)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::{Acquisition, ClassProbabilities, Predictive, Request};
    use crate::acquisitions::acquisition;
    use rand::SeedableRng;

    struct Mean(ClassProbabilities);

    impl Predictive for Mean {
        fn len(&self) -> usize {
            self.0.points
        }
        fn class_probabilities(&self) -> crate::Result<ClassProbabilities> {
            Ok(self.0.clone())
        }
    }

    /// Three points over three classes: a sure one (max .9), an undecided one (max .4) and one
    /// between (max .6); the two least confident are the undecided and the middle one.
    #[test]
    fn picks_the_points_whose_top_class_is_least_probable() {
        let mean = vec![0.9, 0.05, 0.05, 0.4, 0.35, 0.25, 0.6, 0.3, 0.1];
        let scores = least_confidence(&mean, 3);
        assert!(scores.iter().zip([0.1, 0.6, 0.4]).all(|(s, want)| (s - want).abs() < 1e-12), "{scores:?}");
        let p = Mean(ClassProbabilities { samples: 1, points: 3, classes: 3, draws: mean.clone(), mean });
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let chosen = acquisition("least-confidence").unwrap().select(&p, Request { size: 2, distinct: true }, &mut rng);
        assert_eq!(chosen.unwrap(), vec![1, 2]);
    }
}
