//! Datasets for hedge: MNIST IDX files, N-digit MNIST built from its official index tables,
//! the occlusion corruption of the HIB paper, balanced pair samplers and NumPy file I/O.
//!
//! ```no_run
//! use std::sync::Arc;
//! use hedge_data::{data_dir, Mnist, ImageDataset, NDigitProtocol, NDigitSplit};
//! let dir = data_dir()?;
//! let mnist = Arc::new(Mnist::load(&dir.join("mnist"))?);
//! let train = ImageDataset::load(&dir, 2, NDigitProtocol::Instance, NDigitSplit::Train, &mnist)?;
//! assert_eq!(train.len(), 100_000);
//! # Ok::<(), hedge_data::DataError>(())
//! ```

pub mod adult;
pub mod atomic;
pub mod budget;
pub mod context;
mod datadir;
mod error;
pub mod fuzz;
pub mod generator;
pub mod idx;
pub mod images;
pub mod mnist;
pub mod ndigit;
pub mod npy;
pub mod occlusion;
pub mod pairs;
pub mod params;
pub mod rundir;
pub mod table;
pub mod uci;
pub mod undefined;

pub use adult::{Adult, AdultSplit};
pub use atomic::{check_out_not_inside, prepare_output_dir, write_atomic};
pub use budget::{Footprint, MemoryBudget};
pub use context::{Backgrounds, ContextMnist, ContextMnistConfig, ContextSet};
pub use datadir::{data_dir, DATA_DIR_ENV};
pub use error::{libtorch_message, DataError, FormatIssue, Result};
pub use generator::{lock_generator, GeneratorGuard};
pub use images::ImageSet;
pub use mnist::{Mnist, MnistSplit};
pub use ndigit::{ImageDataset, NDigitProtocol, NDigitSplit, NDigitTable};
pub use npy::{read_npz, write_npz, NpyArray, NpyData, NpyRowReader, NpyRowWriter};
pub use occlusion::{Corruption, Occlusion};
pub use pairs::{verification_pairs, BalancedPairSampler, GroupedBatch, GroupedPairSampler, PairBatch};
pub use params::{Checked, ParamGuard};
pub use rundir::{Checkpoint, CheckpointManifest, RunDirectory};
pub use table::{regression_set, Table, TableSpec};
pub use uci::{UciDataset, UciSplit};
