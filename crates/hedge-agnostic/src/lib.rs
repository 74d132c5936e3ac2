//! Concept-agnostic networks for hedge (Jia, Lansdall-Welfare & Cristianini, IDA 2018): a shared
//! feature extractor trained with a gradient-reversal adversary (a DANN, Ganin et al. 2016) so
//! that a protected concept cannot be read from the features.

pub mod audit;
pub mod domain;
pub mod erasure;
mod error;
pub mod experiment;
pub mod fairness;
pub mod gaussian;
pub mod grl;
pub mod independence;
pub mod model;
pub mod train;

pub use error::{AgnosticError, Result};
pub use grl::reverse_gradient;
/// Settings validated once: every config here implements [`ParamGuard`] (`check_ref`, `check`).
pub use hedge_run::{Checked, ParamGuard};
pub use model::{AgnosticNet, ExtractorKind, ModelConfig};
pub use train::{fit, train, train_observed, Adversary, Objective, StepLog, TrainConfig, TrainingData};

/// Takes the process's tensor generator ([`hedge_run::lock_generator`], shared with the other
/// pillars) and seeds it: draws made while the guard lives depend on `seed` alone, whatever
/// other threads do.
pub fn seeded_generator(seed: i64) -> hedge_run::GeneratorGuard {
    let guard = hedge_run::lock_generator();
    tch::manual_seed(seed);
    guard
}
