//! Where a pool-based active-learning loop stands between two rounds, in a form that can be
//! saved and restored: the round to run next, the labelled pool positions and the position of
//! the acquisition random stream. Everything else a loop uses (splits, standardisation, the
//! per-round network seeds) is derived from its seed again.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};

/// A loop's state after a round: continue it with `run_from(…, Some(state), …)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopState {
    /// The round to run next.
    pub round: usize,
    /// Labelled pool positions in the order they were labelled (the first `init` are the
    /// initial random draw).
    pub labelled: Vec<usize>,
    /// Position in the acquisition stream ([`ChaCha8Rng::get_word_pos`]).
    pub rng_word_pos: u128,
}

impl LoopState {
    pub fn new(round: usize, labelled: &[usize], rng: &ChaCha8Rng) -> Self {
        LoopState { round, labelled: labelled.to_vec(), rng_word_pos: rng.get_word_pos() }
    }

    /// Refuses a state that cannot belong to a loop over `pool` points started with `init`
    /// labels (a state file edited by hand, or from another experiment).
    pub fn check(&self, pool: usize, init: usize) -> Result<()> {
        let mut seen = vec![false; pool];
        for &p in &self.labelled {
            if p >= pool || std::mem::replace(&mut seen[p], true) {
                return Err(invalid(
                    "state.labelled",
                    p,
                    format!("labelled positions must be distinct and below the pool size {pool}"),
                ));
            }
        }
        if self.labelled.len() < init || self.round == 0 {
            return Err(invalid(
                "state",
                format!("round {} with {} labels", self.round, self.labelled.len()),
                format!("a saved state follows a round (round ≥ 1) and holds at least the {init} initial labels"),
            ));
        }
        Ok(())
    }

    /// Moves `rng` (seeded as the loop seeds it) to where the saved loop stood.
    pub fn restore(&self, rng: &mut ChaCha8Rng) {
        rng.set_word_pos(self.rng_word_pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn a_restored_stream_continues_where_it_stood() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let _: Vec<u64> = (0..37).map(|_| rng.random()).collect();
        let state = LoopState::new(2, &[4, 1, 7], &rng);
        let next: Vec<u32> = (0..5).map(|_| rng.random()).collect();
        let json = serde_json::to_string(&state).unwrap();
        let back: LoopState = serde_json::from_str(&json).unwrap();
        let mut fresh = ChaCha8Rng::seed_from_u64(9);
        back.restore(&mut fresh);
        assert_eq!((0..5).map(|_| fresh.random()).collect::<Vec<u32>>(), next);
        assert!(back.check(8, 3).is_ok());
        assert!(back.check(7, 3).is_err(), "position 7 is outside a pool of 7");
        assert!(LoopState { labelled: vec![1, 1, 2], ..back.clone() }.check(8, 3).is_err());
    }
}
