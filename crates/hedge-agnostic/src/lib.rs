//! Concept-agnostic networks for hedge (Jia, Lansdall-Welfare & Cristianini, IDA 2018): a shared
//! feature extractor trained with a gradient-reversal adversary (a DANN, Ganin et al. 2016) so
//! that a protected concept cannot be read from the features.
//!
//! Training settings compose from [`TrainConfig`]'s defaults; `check` is the only way to the
//! checked settings. The strongest non-twin method on Context-MNIST (results/agnostic/README.md),
//! for instance: a within-class HSIC adversary with reweighing, and the decision penalty on
//! batch-standardised logits:
//!
//! ```no_run
//! use hedge_agnostic::train::DecisionPenaltyForm;
//! use hedge_agnostic::{Adversary, ParamGuard, TrainConfig};
//!
//! let config = TrainConfig::default()
//!     .with_adversary(Adversary::Hsic)
//!     .with_reweighing(true)
//!     .with_alpha(0.8)
//!     .with_decision_penalty(16.0)
//!     .with_decision_penalty_form(DecisionPenaltyForm::Standardised)
//!     .check()?;
//! assert!(config.reweigh && config.decision_penalty == 16.0);
//! # Ok::<(), hedge_agnostic::AgnosticError>(())
//! ```

pub mod audit;
pub mod eraser;
pub mod erasers;
pub mod erasure;
mod error;
pub mod forest;
pub mod gaussian;
pub mod grl;
pub mod independence;
pub mod kernel_eraser;
pub mod ladder;
pub mod mean_difference;
pub mod model;
pub mod train;

pub use error::{AgnosticError, Result};
pub use grl::reverse_gradient;
/// Settings validated once: every config here implements [`ParamGuard`] (`check_ref`, `check`).
pub use hedge_run::{Checked, ParamGuard};
pub use model::{AgnosticNet, ExtractorKind, ModelConfig};
pub use train::{fit, train, train_observed, Adversary, Objective, StepLog, TrainConfig, TrainingData};

pub use hedge_run::torch::seeded_generator;
