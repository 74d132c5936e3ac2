//! One error type for the crate.

/// Errors from models, training and the audit.
#[derive(Debug, thiserror::Error)]
pub enum AgnosticError {
    /// Inputs whose shapes do not agree.
    #[error("shape mismatch in {what}: expected {expected}, found {found}")]
    ShapeMismatch { what: String, expected: String, found: String },
    /// Training diverged (a loss became NaN or infinite).
    #[error("training diverged at step {step}: {what}")]
    Diverged { step: usize, what: String },
    /// A metric or weight that is NaN or infinite where it was about to be written.
    #[error("{what} is not finite (NaN or infinity), so '{file}' was not written: {fix}")]
    NonFinite { what: String, file: String, fix: String },
    /// A file that could not be written.
    #[error("cannot write '{path}': {what}")]
    Write { path: String, what: String },
    /// An error from the data layer.
    #[error(transparent)]
    Data(#[from] hedge_data::DataError),
    /// An error writing or resuming a run's files, or a memory estimate over the budget.
    #[error(transparent)]
    Run(#[from] hedge_run::RunError),
    /// An error from libtorch.
    #[error("libtorch: {}", hedge_run::libtorch_message(&.0.to_string()))]
    Torch(#[from] tch::TchError),
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, AgnosticError>;

pub(crate) fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> AgnosticError {
    AgnosticError::Run(hedge_run::RunError::InvalidConfig { field, value: value.to_string(), reason: reason.into() })
}
