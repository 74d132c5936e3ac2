//! One error type for the crate: every message says what was wrong and how to fix it.

/// Errors from fitting and evaluating Bayesian models.
#[derive(Debug, thiserror::Error)]
pub enum BayesError {
    /// Inputs whose shapes do not agree.
    #[error("shape mismatch in {what}: expected {expected}, found {found}")]
    ShapeMismatch { what: String, expected: String, found: String },
    /// A fit whose result is not finite, stopped before it is written (the message says why).
    #[error("no silent NaN: {0}")]
    Unfit(String),
    /// A NaN or infinite value in user data.
    #[error("non-finite value in {what} at {position}: remove or impute it before fitting")]
    NonFinite { what: String, position: String },
    /// A finite value so large that squares and sums of squares of the data overflow float64.
    #[error(
        "in {what}, {value:e} at {position} is finite but so large that its square overflows float64 \
         (every value must lie within ±1e150); rescale it, e.g. divide by a power of ten"
    )]
    Huge { what: String, position: String, value: f64 },
    /// A matrix that stayed indefinite even after adding the largest allowed jitter.
    #[error(
        "{what} is not positive definite even with {jitter:.3e} added to its diagonal; \
         check for duplicated inputs, a vanishing noise variance or extreme lengthscales"
    )]
    NotPositiveDefinite { what: String, jitter: f64 },
    /// Too little data for the requested model.
    #[error("not enough data for {what}: {found} given, need at least {needed}")]
    NotEnoughData { what: String, found: usize, needed: usize },
    /// A data file or run-directory error (the file named inside).
    #[error(transparent)]
    Data(#[from] hedge_data::DataError),
    /// An error writing or resuming a run's files, or a memory estimate over the budget.
    #[error(transparent)]
    Run(#[from] hedge_run::RunError),
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, BayesError>;

pub(crate) fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> BayesError {
    BayesError::Run(hedge_run::RunError::InvalidConfig { field, value: value.to_string(), reason: reason.into() })
}

/// Fails unless `v` is a finite number > 0.
pub(crate) fn check_positive(name: &'static str, v: f64) -> Result<()> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(invalid(name, v, "must be a finite number > 0"))
    }
}
