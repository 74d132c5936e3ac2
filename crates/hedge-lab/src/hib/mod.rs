//! Hedged instance embeddings (Oh et al.): `hedge hib reproduce` with the paper's tables and
//! figures, the embedding figures, and the training and recipe benchmarks.

pub mod bench;
pub mod figures;
pub mod reproduce;
