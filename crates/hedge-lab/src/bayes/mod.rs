//! The Bayesian toolbox's studies: GP fits on standard UCI splits (one, or a suite with its
//! table), the lengthscale study, the Gibbs and spike-and-slab demonstrations, and the GP
//! benchmark against scikit-learn's timings.

pub mod bench;
pub mod experiment;
pub mod report;
#[cfg(feature = "clap")]
pub mod request;
