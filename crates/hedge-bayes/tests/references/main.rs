//! Gaussian processes against independent references (scikit-learn, closed forms), in one test
//! binary.

mod gp_sklearn;
mod sparse_gp;
