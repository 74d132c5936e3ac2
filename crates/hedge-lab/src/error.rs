//! One error type for the crate.

/// Errors of a reproduction, sweep, report or benchmark: its own (settings, files, numbers
/// that are not finite) and those of the crates it runs.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A metric or weight that is NaN or infinite where it was about to be written.
    #[error("{what} is not finite (NaN or infinity), so '{file}' was not written: {fix}")]
    NonFinite { what: String, file: String, fix: String },
    /// A file that could not be written.
    #[error("cannot write '{path}': {what}")]
    Write { path: String, what: String },
    #[error(transparent)]
    Embed(#[from] hedge_embed::EmbedError),
    #[error(transparent)]
    Identify(#[from] hedge_identify::IdentifyError),
    #[error(transparent)]
    Agnostic(#[from] hedge_agnostic::AgnosticError),
    #[error(transparent)]
    Active(#[from] hedge_active::ActiveError),
    #[error(transparent)]
    Bayes(#[from] hedge_bayes::BayesError),
    #[error(transparent)]
    Data(#[from] hedge_data::DataError),
    #[error(transparent)]
    Eval(#[from] hedge_eval::EvalError),
    /// An error writing or resuming a run's files, or a memory estimate over the budget.
    #[error(transparent)]
    Run(#[from] hedge_run::RunError),
    #[error("libtorch: {}", hedge_run::libtorch_message(&.0.to_string()))]
    Torch(#[from] tch::TchError),
    /// A figure that could not be drawn.
    #[error(transparent)]
    Plot(#[from] hedge_plot::PlotError),
    /// A step of a study that failed or was refused: its name, then why.
    #[error("study step {name}: {source}")]
    Step {
        name: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A command-line flag whose value was refused: the flag as the user typed it, then why.
    #[error("{flag}: {source}")]
    Flag {
        flag: String,
        #[source]
        source: Box<LabError>,
    },
}

/// Result alias for this crate.
pub type Result<T, E = LabError> = std::result::Result<T, E>;

pub(crate) fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> LabError {
    LabError::Run(hedge_run::RunError::InvalidConfig { field, value: value.to_string(), reason: reason.into() })
}
