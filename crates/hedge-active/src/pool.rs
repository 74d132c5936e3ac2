//! The pool-based active-learning loop, once for every model: `init` random pool points
//! labelled, then rounds of fit → evaluate → choose a batch until `budget` labels
//! ([`run_loop`] over an [`ActiveModel`]). And where such a loop stands between two rounds, in a
//! form that can be saved and restored ([`LoopState`]): the round to run next, the labelled pool
//! positions and the position of the acquisition random stream. Everything else a loop uses
//! (splits, standardisation, the per-round network seeds) is derived from its seed again.

use std::time::Instant;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::acquire::{check_batch, check_reads, Acquisition, Predictive, Reads, Request};
use crate::acquisition::random_batch;
use crate::error::{invalid, Result};

/// What a model family offers the loop: fit on labelled pool points, measure the fit on its
/// test set, and say what the fit predicts about the unlabelled points, from which an
/// [`Acquisition`] chooses the next batch.
pub trait ActiveModel {
    /// A fitted model.
    type Fitted;
    /// One round's measurements.
    type Round;

    /// Points in the pool.
    fn pool_len(&self) -> usize;
    /// The model family, for messages ("NeuralLinear", "the GP surrogate").
    fn describe(&self) -> String;
    /// What its predictives give.
    fn offers(&self) -> &[Reads];
    /// How to run an acquisition that reads what it does not give (a flag to change).
    fn fix(&self) -> &str;
    /// Fits on the pool positions `labelled` (in the order they were labelled), initialised
    /// from `seed`.
    fn fit(&self, labelled: &[usize], seed: u64) -> Result<Self::Fitted>;
    /// The round's measurements of `fitted` on the test set.
    fn evaluate(&self, fitted: &Self::Fitted, round: RoundInfo<'_>) -> Result<Self::Round>;
    /// What `fitted` predicts about the pool positions `unlabelled` (ascending; every other
    /// position is labelled), computed when an acquisition asks.
    fn predictive<'a>(&'a self, fitted: &'a Self::Fitted, unlabelled: &'a [usize]) -> Box<dyn Predictive + 'a>;
    /// Records in a round the seconds its selection took and the batch it chose.
    fn record_selection(round: &mut Self::Round, seconds: f64, batch_size: usize);
}

/// What the loop tells [`ActiveModel::evaluate`] about the round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundInfo<'a> {
    pub seed: u64,
    /// The acquisition's name.
    pub method: &'a str,
    pub round: usize,
    /// Labelled points the model was fitted on.
    pub labels: usize,
    pub fit_seconds: f64,
}

/// How many points to label, and in which steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Random labels before the first round.
    pub init: usize,
    /// Points added per round.
    pub batch: usize,
    /// Labels after the last round.
    pub budget: usize,
    /// Whether every batch must hold `batch` points ([`Request::distinct`]).
    pub distinct: bool,
}

/// Runs one seed of `acquisition` on `model`: `init` random labels drawn from `rng` (seeded by the
/// caller, which may have drawn its split from it first), then rounds until `budget`, the
/// network of round r seeded with `seed · 1000 + r`. With `resume` (a state an earlier call
/// reported) it continues from there. `on_round` sees every round with the state to continue
/// from (`None` after the last); returns the rounds this call ran. An acquisition that reads
/// what the model does not give is refused before the first fit.
pub fn run_loop<M: ActiveModel>(
    model: &M,
    schedule: Schedule,
    acquisition: &dyn Acquisition,
    seed: u64,
    mut rng: ChaCha8Rng,
    resume: Option<LoopState>,
    mut on_round: impl FnMut(&M::Round, Option<&LoopState>) -> Result<()>,
) -> Result<Vec<M::Round>> {
    check_reads(acquisition, &model.describe(), model.offers(), model.fix())?;
    let n = model.pool_len();
    let (first_round, mut labelled) = match resume {
        Some(state) => {
            state.check(n, schedule.init)?;
            state.restore(&mut rng);
            (state.round, state.labelled)
        }
        None => (0, random_batch(n, schedule.init, &mut rng)),
    };
    let mut is_labelled = vec![false; n];
    for &i in &labelled {
        is_labelled[i] = true;
    }
    let mut out = Vec::new();
    for round in first_round.. {
        let start = Instant::now();
        let fitted = model.fit(&labelled, seed.wrapping_mul(1000).wrapping_add(round as u64))?;
        let fit_seconds = start.elapsed().as_secs_f64();
        let info = RoundInfo { seed, method: acquisition.name(), round, labels: labelled.len(), fit_seconds };
        let mut metrics = model.evaluate(&fitted, info)?;
        let unlabelled: Vec<usize> = (0..n).filter(|&i| !is_labelled[i]).collect();
        let room = schedule.budget.saturating_sub(labelled.len());
        if room == 0 || unlabelled.is_empty() {
            on_round(&metrics, None)?;
            out.push(metrics);
            break;
        }
        let b = schedule.batch.min(room).min(unlabelled.len());
        let start = Instant::now();
        let request = Request { size: b, distinct: schedule.distinct };
        let chosen = acquisition.select(model.predictive(&fitted, &unlabelled).as_ref(), request, &mut rng)?;
        check_batch(acquisition.name(), &chosen, unlabelled.len(), request)?;
        M::record_selection(&mut metrics, start.elapsed().as_secs_f64(), chosen.len());
        for &c in &chosen {
            labelled.push(unlabelled[c]);
            is_labelled[unlabelled[c]] = true;
        }
        on_round(&metrics, Some(&LoopState::new(round + 1, &labelled, &rng)))?;
        out.push(metrics);
    }
    Ok(out)
}

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
