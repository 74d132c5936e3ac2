//! Metrics for hedge. Each metric is a pure function over plain slices, tested against
//! scikit-learn / SciPy reference values.

mod error;
pub mod ranking;

pub use error::{EvalError, Result};
pub use ranking::average_precision;
