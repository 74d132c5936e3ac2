//! Active learning (Pinsler et al.): experiments of seeds × methods on the one engine, their
//! reports and curves, and the ACS-FW selection benchmark.

pub mod bench;
pub mod experiment;
pub mod protocol;
pub mod report;
#[cfg(feature = "clap")]
pub mod request;
