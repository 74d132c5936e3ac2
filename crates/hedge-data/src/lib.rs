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
pub mod context;
mod datadir;
mod error;
pub mod fuzz;
pub mod idx;
pub mod images;
pub mod mnist;
pub mod ndigit;
pub mod npy;
pub mod occlusion;
pub mod pairs;
pub mod table;
pub mod uci;

pub use adult::{Adult, AdultSplit};
pub use context::{Backgrounds, ContextMnist, ContextMnistConfig, ContextSet};
pub use datadir::{data_dir, DataRoot, DATA_DIR_ENV};
pub use error::{DataError, FormatIssue, Result};
pub use images::ImageSet;
pub use mnist::{Mnist, MnistSplit};
pub use ndigit::{DigitPool, ImageDataset, NDigitProtocol, NDigitSplit, NDigitTable};
pub use npy::{read_npz, write_npz, NpyArray, NpyData, NpyRowReader, NpyRowWriter};
pub use occlusion::{Corruption, Occlusion};
pub use pairs::{verification_pairs, BalancedPairSampler, GroupedBatch, GroupedPairSampler, PairBatch};
#[cfg(feature = "clap")]
pub use table::TableFlags;
pub use table::{regression_set, RegressionSource, Table, TableSpec};
pub use uci::{UciDataset, UciSplit};
