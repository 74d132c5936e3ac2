//! Fault injection on the one experiment engine, in one test binary (one build and link): an
//! active-learning experiment, an agnostic sweep, a HIB reproduction and a HIB study whose writer stops after
//! any single write resume to the results of an uninterrupted run, and damaged logs are refused.

mod active_experiment;
mod agnostic_sweep;
mod hib_reproduction;
mod hib_study;
