//! Acquisitions as pieces the pool loop takes (baal's way): an [`Acquisition`] reads what a
//! fitted model predicts about the unlabelled pool, a [`Predictive`], and names the points to
//! label next. The built-in ones are registered in [`crate::acquisitions::ACQUISITIONS`] under the names settings,
//! the command line and Python give them; a user's own (a closure, a Python callable) runs in
//! the same loop ([`crate::pool::run_loop`]) for regression and classification alike.

use faer::Mat;
use rand_chacha::ChaCha8Rng;

use crate::acquisition::{bald, lcmd, random_batch, top_b};
use crate::error::{ActiveError, Result};
use crate::frank_wolfe::{frank_wolfe, PoolVectors};

/// A quantity of the predictive an acquisition reads: declared, so that the loop refuses a
/// model that cannot give it before the first network is fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// [`Predictive::entropy`].
    Entropy,
    /// [`Predictive::mean_variance`].
    MeanVariance,
    /// [`Predictive::class_probabilities`].
    ClassProbabilities,
    /// [`Predictive::log_posterior_vectors`].
    LogPosteriorVectors,
    /// [`Predictive::features`].
    Features,
}

impl Reads {
    /// What it is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Reads::Entropy => "the predictive entropy",
            Reads::MeanVariance => "the predictive mean and variance",
            Reads::ClassProbabilities => "class probabilities under posterior draws",
            Reads::LogPosteriorVectors => "the weighted log-posterior vectors ACS-FW reads",
            Reads::Features => "last-layer features",
        }
    }
}

/// Class probabilities of the unlabelled points under posterior draws.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassProbabilities {
    pub samples: usize,
    pub points: usize,
    pub classes: usize,
    /// `[samples, points, classes]`, row-major.
    pub draws: Vec<f64>,
    /// `[points, classes]`, row-major: the MC predictive p̄ (the draws' mean).
    pub mean: Vec<f64>,
}

/// Last-layer features of the labelled and the unlabelled pool points.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolFeatures {
    /// `[labelled, k]`, labelled pool positions in ascending order.
    pub labelled: Mat<f64>,
    /// `[unlabelled, k]`, in the predictive's order.
    pub unlabelled: Mat<f64>,
}

/// The labelled pool positions (ascending) of a pool of `pool` points whose unlabelled ones are
/// `unlabelled`: what [`PoolFeatures::labelled`] holds the features of.
pub fn labelled_positions(pool: usize, unlabelled: &[usize]) -> Vec<usize> {
    let mut is_unlabelled = vec![false; pool];
    for &p in unlabelled {
        is_unlabelled[p] = true;
    }
    (0..pool).filter(|&p| !is_unlabelled[p]).collect()
}

/// What a fitted model predicts about the unlabelled points of the pool, computed when an
/// acquisition asks for it. Indices an acquisition returns are rows of this predictive. A
/// model leaves out what it cannot give (the default: [`ActiveError::NotOffered`]).
pub trait Predictive {
    /// Unlabelled points.
    fn len(&self) -> usize;
    /// Whether no point is left.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// H[y_n | x_n, D] per point, in nats, or a score that ranks the points alike where the
    /// entropy has no closed form (an ensemble's mixture: its variance).
    fn entropy(&self) -> Result<Vec<f64>> {
        Err(ActiveError::NotOffered { what: Reads::Entropy.describe() })
    }
    /// Predictive mean and variance per point (regression, on the standardised target scale).
    fn mean_variance(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        Err(ActiveError::NotOffered { what: Reads::MeanVariance.describe() })
    }
    /// Class probabilities under posterior draws (classification).
    fn class_probabilities(&self) -> Result<ClassProbabilities> {
        Err(ActiveError::NotOffered { what: Reads::ClassProbabilities.describe() })
    }
    /// The vectors L_n whose weighted sum ACS-FW fits to the pool's total (Pinsler et al.
    /// 2019): a closed-form Gram matrix or random projections drawn from `rng`.
    fn log_posterior_vectors(&self, rng: &mut ChaCha8Rng) -> Result<Box<dyn PoolVectors>> {
        let _ = rng;
        Err(ActiveError::NotOffered { what: Reads::LogPosteriorVectors.describe() })
    }
    /// Last-layer features of the labelled and the unlabelled points.
    fn features(&self) -> Result<PoolFeatures> {
        Err(ActiveError::NotOffered { what: Reads::Features.describe() })
    }
}

/// How many points a round asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Points to label (at most; at least one, at most the predictive's length).
    pub size: usize,
    /// Whether the batch must hold exactly `size` points; without it an acquisition may return
    /// fewer (ACS-FW's re-picks, as the paper allows).
    pub distinct: bool,
}

/// Chooses the next batch from a [`Predictive`].
pub trait Acquisition: Send + Sync {
    /// The name rounds are recorded under.
    fn name(&self) -> &str;
    /// What it reads of the predictive (checked against the model before the loop starts).
    fn reads(&self) -> &[Reads];
    /// Distinct rows of `predictive`, at most `request.size` of them; random choices draw from
    /// `rng`, so that a resumed loop chooses as an uninterrupted one.
    fn select(&self, predictive: &dyn Predictive, request: Request, rng: &mut ChaCha8Rng) -> Result<Vec<usize>>;
}

/// A built-in acquisition: a name, what it reads and a pure function.
#[derive(Debug, Clone, Copy)]
pub struct Registration {
    pub name: &'static str,
    pub about: &'static str,
    pub reads: &'static [Reads],
    pub select: fn(&dyn Predictive, Request, &mut ChaCha8Rng) -> Result<Vec<usize>>,
}

impl Acquisition for Registration {
    fn name(&self) -> &str {
        self.name
    }
    fn reads(&self) -> &[Reads] {
        self.reads
    }
    fn select(&self, predictive: &dyn Predictive, request: Request, rng: &mut ChaCha8Rng) -> Result<Vec<usize>> {
        (self.select)(predictive, request, rng)
    }
}

/// Refuses `acquisition` on a model that does not give everything it reads, naming both and
/// `fix`.
pub fn check_reads(acquisition: &dyn Acquisition, model: &str, offers: &[Reads], fix: &str) -> Result<()> {
    match acquisition.reads().iter().find(|r| !offers.contains(r)) {
        Some(missing) => Err(ActiveError::Run(hedge_run::RunError::InvalidConfig {
            field: "method",
            value: acquisition.name().to_string(),
            reason: format!("it reads {}, which {model} does not give; {fix}", missing.describe()),
        })),
        None => Ok(()),
    }
}

/// Uniformly at random.
pub const RANDOM: Registration = Registration {
    name: "random",
    about: "Uniformly at random",
    reads: &[],
    select: |predictive, request, rng| Ok(random_batch(predictive.len(), request.size, rng)),
};

/// Top-b predictive entropy.
pub const MAXENT: Registration = Registration {
    name: "maxent",
    about: "Top-b predictive entropy",
    reads: &[Reads::Entropy],
    select: |predictive, request, _| Ok(top_b(&predictive.entropy()?, request.size)),
};

/// Top-b mutual information between the label and the last-layer weights (Houlsby et al. 2011).
pub const BALD: Registration = Registration {
    name: "bald",
    about: "Top-b mutual information between label and last-layer weights (classification)",
    reads: &[Reads::ClassProbabilities],
    select: |predictive, request, _| {
        let p = predictive.class_probabilities()?;
        Ok(top_b(&bald(&p.draws, p.samples, p.points, p.classes)?, request.size))
    },
};

/// Frank–Wolfe sparse subset approximation of the pool's log posterior (Pinsler et al. 2019).
pub const ACS_FW: Registration = Registration {
    name: "acs-fw",
    about: "Frank–Wolfe on the weighted log-posterior vectors (closed form or random projections)",
    reads: &[Reads::LogPosteriorVectors],
    select: |predictive, request, rng| {
        Ok(frank_wolfe(predictive.log_posterior_vectors(rng)?.as_ref(), request.size, request.distinct)?.indices)
    },
};

/// Largest cluster maximum distance (Holzmüller et al. 2023; [`crate::acquisition::lcmd`]).
pub const LCMD: Registration = Registration {
    name: "lcmd",
    about: "Largest cluster maximum distance on the last-layer features (Holzmüller et al. 2023)",
    reads: &[Reads::Features],
    select: |predictive, request, _| {
        let f = predictive.features()?;
        lcmd(f.labelled.as_ref(), f.unlabelled.as_ref(), request.size)
    },
};

/// Checks what `acquisition` chose for a round of `request` over `len` points: distinct rows in
/// range, at least one, at most `request.size`, exactly that many when `request.distinct`.
pub fn check_batch(acquisition: &str, chosen: &[usize], len: usize, request: Request) -> Result<()> {
    let mut seen = vec![false; len];
    let fault = if chosen.is_empty() || chosen.len() > request.size {
        Some(format!("{} points for a round of {}", chosen.len(), request.size))
    } else if request.distinct && chosen.len() != request.size {
        Some(format!("{} points where the round needs exactly {}", chosen.len(), request.size))
    } else {
        chosen.iter().find_map(|&c| match seen.get_mut(c) {
            None => Some(format!("row {c} of a predictive of {len} points")),
            Some(s) => std::mem::replace(s, true).then(|| format!("row {c} twice")),
        })
    };
    match fault {
        Some(fault) => Err(ActiveError::BadBatch { acquisition: acquisition.to_string(), fault }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_out_of_range_repeated_or_of_the_wrong_size_is_refused() {
        let r = Request { size: 3, distinct: true };
        assert!(check_batch("mine", &[0, 4, 2], 5, r).is_ok());
        for (chosen, fault) in [
            (vec![0, 5, 2], "row 5 of a predictive of 5"),
            (vec![0, 2, 2], "row 2 twice"),
            (vec![0, 2], "exactly 3"),
            (vec![], "0 points"),
            (vec![0, 1, 2, 3], "4 points for a round of 3"),
        ] {
            let err = check_batch("mine", &chosen, 5, r).unwrap_err().to_string();
            assert!(err.contains("'mine'") && err.contains(fault), "{err}");
        }
        assert!(check_batch("acs-fw", &[1], 5, Request { size: 3, distinct: false }).is_ok());
    }
}
