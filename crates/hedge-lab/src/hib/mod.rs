//! Hedged instance embeddings (Oh et al.): `hedge hib reproduce` with the paper's tables and
//! figures, the embedding figures, time to quality, and the training and recipe benchmarks.

pub mod bench;
mod class_merges;
pub mod figures;
pub mod grid;
pub mod identification;
pub mod paper;
pub mod quadrature;
pub mod report;
pub(crate) mod report_tables;
pub mod reproduce;
#[cfg(feature = "clap")]
pub mod request;
pub mod run;
pub mod side_by_side;
pub mod study;
pub mod summary;
pub mod time_to_quality;
