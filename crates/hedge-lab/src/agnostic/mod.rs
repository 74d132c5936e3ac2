//! Concept-agnostic networks (Jia et al.): the papers' runs (Context-MNIST in `context`, MNIST →
//! MNIST-M in `domain`, Adult in `fairness`: train a network, audit it), the α sweep with its
//! audits, the Pareto front of every removal method, Experiment 1, and Grad-CAM grids of
//! committed sweeps.

pub mod context;
pub mod domain;
pub mod exp1;
pub mod fairness;
pub mod gradcam;
pub mod pareto;
pub mod report;
#[cfg(feature = "clap")]
pub mod request;
pub mod sweep;
