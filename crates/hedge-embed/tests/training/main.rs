//! Real training on 2-digit MNIST, in one test binary (one build and link; the tests share the
//! cores): checkpoints and exact resumes, the recipe's watched runs, and one short training
//! that must reach a verification AP.

mod checkpoint_resume;
mod recipe;
mod short_training;
