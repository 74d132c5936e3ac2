//! The ground every hedge crate stands on, below the data and the algorithms:
//!
//! - [`params`]: settings checked once ([`ParamGuard`], [`Checked`]);
//! - [`budget`]: memory and work estimates checked before memory is taken or a loop starts;
//! - [`generator`]: the one lock on libtorch's process-wide random generator;
//! - [`atomic`]: files written through a temporary sibling and a rename, output folders hedge
//!   owns (`--overwrite` replaces only what hedge wrote);
//! - [`rundir`]: run directories with checksummed checkpoints;
//! - [`experiment`]: the engine that runs, resumes and reports every resumable experiment;
//! - [`undefined`]: why a result file leaves a number `null`.
//!
//! It depends on no tensor library and no dataset, so a Python binding or a distributed worker
//! can use it as it is.

pub mod atomic;
pub mod budget;
mod error;
pub mod experiment;
pub mod generator;
pub mod params;
pub mod rundir;
pub mod schema;
#[cfg(feature = "torch")]
pub mod torch;
pub mod undefined;

pub use atomic::{check_out_not_inside, prepare_output_dir, write_atomic};
pub use budget::{Footprint, MemoryBudget, WorkBound, Workload};
pub use error::{libtorch_message, Result, RunError};
pub use experiment::{run_resumable, Experiment, ExperimentProgress};
pub use generator::{lock_generator, GeneratorGuard};
pub use params::{with_overrides, Checked, ParamGuard};
pub use rundir::{Checkpoint, CheckpointManifest, RunDirectory};

// For `versioned_serde!`, which expands in other crates.
#[doc(hidden)]
pub use serde as __serde;
#[doc(hidden)]
pub use serde_json as __serde_json;
