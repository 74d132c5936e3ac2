/// Why a metric could not be computed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EvalError {
    #[error("'{a_name}' has {a} entries but '{b_name}' has {b}; they must be the same length")]
    LengthMismatch { a_name: &'static str, a: usize, b_name: &'static str, b: usize },
    #[error("'{name}' has a non-finite value ({value}) at index {index}")]
    NonFinite { name: &'static str, index: usize, value: f64 },
    #[error("{0}")]
    Undefined(String),
}

/// Result alias of this crate.
pub type Result<T, E = EvalError> = std::result::Result<T, E>;

pub(crate) fn check_same_len(a_name: &'static str, a: usize, b_name: &'static str, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(EvalError::LengthMismatch { a_name, a, b_name, b })
    }
}

pub(crate) fn check_finite(name: &'static str, values: &[f64]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(EvalError::NonFinite { name, index, value: values[index] }),
        None => Ok(()),
    }
}
