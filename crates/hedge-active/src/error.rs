//! One error type for the crate.

/// Errors from acquisition functions and the active-learning loop.
#[derive(Debug, thiserror::Error)]
pub enum ActiveError {
    /// Inputs whose shapes do not agree.
    #[error("shape mismatch in {what}: expected {expected}, found {found}")]
    ShapeMismatch { what: String, expected: String, found: String },
    /// A score or prediction that is NaN or infinite, stopped where it would have been written.
    #[error("no silent NaN: {what}; {fix}")]
    NonFinite { what: String, fix: String },
    /// A model asked for a quantity of its predictive it does not give (an acquisition that
    /// reads class probabilities on a regression model, say).
    #[error("this model's predictive does not give {what}: choose an acquisition that reads what it gives")]
    NotOffered { what: &'static str },
    /// An acquisition returned a batch the loop cannot label.
    #[error("acquisition '{acquisition}' returned {fault}: a batch is distinct rows of the predictive, at least one and at most the round's size")]
    BadBatch { acquisition: String, fault: String },
    /// A user's acquisition (a Python callable) failed; its own message follows.
    #[error("acquisition '{acquisition}' failed: {message}")]
    Callback { acquisition: String, message: String },
    /// An error from the Bayesian model underneath.
    #[error(transparent)]
    Model(#[from] hedge_bayes::BayesError),
    /// A data or run-directory error (file named inside).
    #[error(transparent)]
    Data(#[from] hedge_data::DataError),
    /// An error writing or resuming a run's files, or a memory estimate over the budget.
    #[error(transparent)]
    Run(#[from] hedge_run::RunError),
    /// An error from libtorch.
    #[cfg(feature = "torch")]
    #[error("libtorch: {}", hedge_run::libtorch_message(&.0.to_string()))]
    Torch(#[from] tch::TchError),
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, ActiveError>;

pub(crate) fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> ActiveError {
    ActiveError::Run(hedge_run::RunError::InvalidConfig { field, value: value.to_string(), reason: reason.into() })
}
