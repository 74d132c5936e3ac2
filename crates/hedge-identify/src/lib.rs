//! Identification with abstention over a trained embedding model (hedge-embed): an index of a
//! gallery whose approximate-nearest-neighbour search proposes candidates, the exact match
//! probability re-ranks them, and a probe abstains when its self-mismatch η says it is unsure
//! ([`index`]); the same index split into shards searched apart and decided once ([`shards`]).

mod error;
pub mod index;
pub mod shards;

pub use error::{IdentifyError, Result};
pub use index::*;
