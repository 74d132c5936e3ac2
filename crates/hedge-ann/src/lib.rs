//! Approximate nearest neighbours among fixed points: the candidate stage of hedge's
//! identification (embedding means of a gallery) and of its sharded galleries.
//!
//! [`Hnsw`] is a hierarchical navigable small-world graph (Malkov & Yashunin 2018, Algorithms
//! 1, 2 and 4 with the neighbour-selection heuristic), laid out for memory: the points in one
//! array, the layer-0 links of every point in one array of `2M + 1` slots (count, then links),
//! the few upper-layer lists in another. Built in parallel (a lock per point while its list
//! changes, held only for the copy or the update), searched without locks, saved as a
//! safetensors file that NumPy and PyTorch read and that [`Hnsw::load`] checks field by field.
//!
//! ```
//! use hedge_ann::{AnnConfig, Hnsw};
//! // Four points on a line; the two nearest to 2.2 are 2 and 3.
//! let points = [0.0f32, 1.0, 2.0, 3.0];
//! let index = Hnsw::build(&points, 1, &AnnConfig::default()).unwrap();
//! let found = index.nearest(&[2.2], 2);
//! assert_eq!(found[0].iter().map(|&(i, _)| i).collect::<Vec<_>>(), vec![2, 3]);
//! ```

mod config;
mod distance;
mod error;
mod exact;
mod file;
mod graph;
mod visited;

pub use config::AnnConfig;
pub use error::{AnnError, Result};
pub use exact::{exact_nearest, recall_at};
pub use file::{FORMAT_NAME, FORMAT_VERSION};
pub use graph::Hnsw;
