//! Hedged instance embeddings (Oh et al., ICLR 2019) on libtorch: point, Gaussian and
//! mixture-of-Gaussians embeddings of N-digit MNIST, trained with the soft contrastive loss and
//! a variational information bottleneck, with match probabilities and self-mismatch uncertainty.
//!
//! Pieces, each usable on its own: [`HibConfig`] (validated hyper-parameters), [`HibNet`]
//! (the network), [`Embedding`] (a batch of distributions), [`MatchHead`] and the losses in
//! [`loss`], [`Adam`], [`Trainer`], [`RunDir`], dataset-level [`embed`] tools, runs evaluated
//! in [`run_eval`] with typed reports in [`report`]. The identification service (an index of a
//! gallery with the abstention rule) is built on these in `hedge-identify`; the paper's
//! reproduction, progress bars and figures in `hedge-lab`.
//!
//! ```no_run
//! use hedge_data::{DataRoot, NDigitProtocol, NDigitSplit};
//! use hedge_embed::{BatchComposition, EmbeddingKind, HibConfig, HibData, ParamGuard, Trainer};
//!
//! // Exclusive choices are sum types; `check` is the only way to the `Checked` settings
//! // `Trainer::new` takes (config files stay flat: `model = "mog"`, `components = 2`).
//! let config = HibConfig::default()
//!     .with_model(EmbeddingKind::Mixture { components: 2 })
//!     .with_batch(BatchComposition::Grouped { classes: 32, per_class: 8 })
//!     .with_steps(4000)
//!     .check()?;
//! // The papers' datasets under a data root (N-digit MNIST here); a user's own images come
//! // from the path in `HibConfig::data`. Each is read once, whatever asks for it.
//! let data = HibData::new(DataRoot::at("data"));
//! let train = data.split(2, NDigitProtocol::Instance, NDigitSplit::Train)?;
//! let mut trainer = Trainer::new(config, train, tch::Device::Cpu)?;
//! trainer.run(None, |m| println!("step {}: loss {:.3}", m.step, m.loss))?;
//! # Ok::<(), hedge_embed::EmbedError>(())
//! ```

pub mod config;
pub mod csd;
pub mod data;
pub mod distribution;
pub mod ema;
pub mod embed;
mod error;
pub mod evaluate;
pub mod experiment;
pub mod focal;
pub mod loss;
pub mod losses;
pub mod mls;
pub mod model;
pub mod monitor;
pub mod optim;
pub mod pair_loss;
pub mod report;
pub mod run;
pub mod run_eval;
pub mod settings;
pub mod train;

pub use config::{
    BatchComposition, ConvPrecision, EmbeddingKind, HibConfig, LossKind, LrSchedule, MatchInit, ModelKind, Norm,
    OwnImages, PairSet, Steps, ValidationDigits,
};
pub use data::{HibData, OwnSplit};
pub use distribution::Embedding;
pub use embed::{embed_dataset, EmbedOptions, EmbeddedSet};
pub use error::{EmbedError, Result};
pub use evaluate::{
    evaluate_model, verification_ap, EvalOptions, HibMetric, MatchEstimator, MetricSet, ModelEval, ModelEvalOptions,
};
pub use experiment::new_run;
pub use experiment::{train_run, TrainPlan};
/// Validated settings ([`HibConfig`] implements [`ParamGuard`]; [`Trainer::new`] takes [`Checked`]).
pub use hedge_data::{NDigitProtocol, NDigitSplit};
pub use hedge_run::{Checked, ParamGuard};
pub use loss::MatchHead;
pub use model::HibNet;
pub use monitor::{MonitorRecord, QuickEval, WatchSet, CORRUPT_SEED, PAIR_SEED};
pub use optim::Adam;
pub use report::EvalReport;
pub use run::{RunConfig, RunDir, RunState, StepMetrics};
pub use run_eval::{evaluate_run, EvalSettings};
pub use settings::{OwnImagesRequest, SettingsRequest};
pub use train::{build_model, load_model, RunOptions, TrainEvent, Trainer};

pub use hedge_run::torch::{device_name, parse_device};

pub(crate) use hedge_run::torch::seeded_generator;
