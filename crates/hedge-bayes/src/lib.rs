//! Bayesian model toolbox for hedge: Bayesian linear regression (known noise and
//! normal–inverse-gamma), Bayesian probit regression (Laplace), exact and sparse (FITC, VFE)
//! Gaussian-process regression, a Gibbs sampler for a normal model, and EM for spike-and-slab
//! linear regression. Pure Rust: faer for linear algebra, rand for sampling, statrs for special
//! functions. The `hedge bayes` studies built on it (UCI GP fits, the lengthscale study, the
//! Gibbs and spike-and-slab demos) are in `hedge-lab`.

pub mod diagnostics;
mod error;
pub mod gibbs;
pub mod gp;
pub mod kernel;
pub mod lbfgs;
pub mod linalg;
pub mod linear;
pub mod model;
pub mod probit;
pub mod sparse;
pub mod spike_slab;
pub mod standardise;

pub use error::{BayesError, Result};
pub use gp::{FittedGp, GpConfig, GpHyperParameters};
/// Settings validated once: every config here implements [`ParamGuard`] (`check_ref`, `check`).
pub use hedge_run::{Checked, ParamGuard};
pub use kernel::{KernelKind, RbfKernel};
pub use model::{Fit, Predict, Prediction};
pub use sparse::{FittedSparseGp, SparseGpConfig, SparseMethod};
pub use standardise::Standardiser;
