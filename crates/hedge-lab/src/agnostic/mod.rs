//! Concept-agnostic networks (Jia et al.): the α sweep with its audits, the Pareto front of
//! every removal method, Experiment 1, and Grad-CAM grids of committed sweeps.

pub mod exp1;
pub mod gradcam;
pub mod pareto;
pub mod report;
pub mod sweep;
