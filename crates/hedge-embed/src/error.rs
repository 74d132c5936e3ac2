use std::path::PathBuf;

/// Everything that can go wrong while configuring, training or using an embedding model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(transparent)]
    Data(#[from] hedge_data::DataError),
    /// An error writing or resuming a run's files, or a memory estimate over the budget.
    #[error(transparent)]
    Files(#[from] hedge_run::RunError),

    #[error(transparent)]
    Eval(#[from] hedge_eval::EvalError),

    /// The approximate-nearest-neighbour stage: its settings, or a damaged graph file.
    #[error(transparent)]
    Ann(#[from] hedge_ann::AnnError),

    #[error("libtorch: {}", hedge_run::libtorch_message(&.0.to_string()))]
    Torch(#[from] tch::TchError),

    #[error("cannot access '{path}': {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A user's file that does not fit the model (e.g. images of another size).
    #[error("'{path}': {what}")]
    Input { path: PathBuf, what: String },

    #[error("run directory '{path}': {what}")]
    Run { path: PathBuf, what: String },

    #[error("training diverged at step {step}: the loss is {loss}; lower --lr or check the data")]
    Diverged { step: usize, loss: f64 },

    /// Weights about to be written hold NaN or infinity (checked before every checkpoint).
    #[error(
        "training diverged at step {step}: {count} value(s) of '{tensor}' are NaN or infinite, so '{file}' was \
         not written; lower --lr, or resume from the last checkpoint with a lower --lr"
    )]
    NonFiniteWeights { step: usize, tensor: String, count: i64, file: String },
}

impl EmbedError {
    /// A setting outside its valid range.
    pub fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        EmbedError::Files(hedge_run::RunError::InvalidConfig { field, value: value.to_string(), reason: reason.into() })
    }

    /// A file that could not be read.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EmbedError::Io { path: path.into(), source }
    }

    /// Input the run cannot take, named by its path.
    pub fn input(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        EmbedError::Input { path: path.into(), what: what.into() }
    }

    /// A run directory that cannot be used as it is.
    pub fn run(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        EmbedError::Run { path: path.into(), what: what.into() }
    }
}

/// Result alias of this crate.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;
