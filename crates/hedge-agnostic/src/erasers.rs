//! The registry of concept erasers: every [`Registration`] hedge has, by the name a sweep's
//! `removal`, the CLI's `--removal` and Python's `hedge.agnostic.Eraser(kind)` give it. It sits
//! above the trait ([`crate::eraser`]) and the erasers, so that no file imports one that imports
//! it back: a new eraser is its own file, one line here, and its test.

use crate::eraser::{Eraser, EraserSpec, Registration};
use crate::error::{invalid, Result};
use crate::{erasure, kernel_eraser, mean_difference};

/// Every eraser hedge has, by the name settings give it.
pub const ERASERS: &[Registration] = &[
    erasure::LEACE,
    erasure::INLP,
    erasure::QUADRATIC_LEACE,
    mean_difference::REGISTRATION,
    kernel_eraser::REGISTRATION,
];

/// The registered names, for messages (`leace, inlp, ...`).
pub fn eraser_kinds() -> String {
    ERASERS.iter().map(|r| r.kind).collect::<Vec<_>>().join(", ")
}

impl EraserSpec {
    /// The registered eraser these settings build.
    pub fn build(&self) -> Result<Box<dyn Eraser>> {
        let registered = ERASERS.iter().find(|r| r.kind == self.kind).ok_or_else(|| {
            invalid("removal", &self.kind, format!("not an eraser hedge knows; the erasers are {}", eraser_kinds()))
        })?;
        (registered.build)(self)
    }
}
