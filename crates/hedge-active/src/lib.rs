//! Bayesian batch active learning for hedge: Frank–Wolfe sparse subset approximation (ACS-FW,
//! Pinsler et al. 2019) over closed-form or projected log-posterior vectors, and baseline
//! acquisitions. Builds on `hedge-bayes`.

pub mod acquire;
pub mod acquisition;
pub mod acquisitions;
pub mod bivariate;
#[cfg(feature = "torch")]
pub mod classification;
#[cfg(feature = "torch")]
pub mod classification_loop;
mod error;
pub mod fisher;
pub mod frank_wolfe;
pub mod least_confidence;
#[cfg(feature = "torch")]
pub mod neural_linear;
pub mod pool;
#[cfg(feature = "torch")]
pub mod regression_loop;

pub use acquire::{Acquisition, Predictive, Reads, Request};
pub use acquisitions::{acquisition, ACQUISITIONS};
pub use error::{ActiveError, Result};
pub use frank_wolfe::{
    frank_wolfe, FwBatch, GramMatrix, PoolShard, PoolVectors, Projections, ShardSetup, ShardedFrankWolfe, Vertex,
    SHARD_ROW_MULTIPLE,
};
/// Settings validated once: every config here implements [`ParamGuard`] (`check_ref`, `check`).
pub use hedge_run::{Checked, ParamGuard};
