//! hedge's laboratory: the reproductions of the papers and the studies beside them, built on the
//! algorithm crates the way a user would build their own — sweeps, reports, tables, figures and
//! benchmarks. It is the only crate besides the command line that draws figures; the algorithm
//! crates (`hedge-embed`, `hedge-bayes`, `hedge-active`, `hedge-agnostic`) hold what a user
//! composes and nothing of this.

pub mod active;
pub mod agnostic;
pub mod bayes;
mod error;
pub mod fuzz;
pub mod hib;
pub mod report;
#[cfg(feature = "clap")]
pub mod request;
pub mod study;

pub use error::{LabError, Result};
