use std::path::PathBuf;

use hedge_embed::EmbedError;

/// Everything that can go wrong while building, sharding or searching an identification index:
/// the embedding model's, the files', the index's own.
#[derive(Debug, thiserror::Error)]
pub enum IdentifyError {
    /// Embedding the gallery or the probes, or the run they come from.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// Writing or reading the index's files, or a setting outside its range.
    #[error(transparent)]
    Files(#[from] hedge_run::RunError),
    #[error(transparent)]
    Data(#[from] hedge_data::DataError),
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
    /// A user's file (an index, a probe set) that does not fit, named by its path.
    #[error("'{path}': {what}")]
    Input { path: PathBuf, what: String },
}

impl IdentifyError {
    /// A setting outside its valid range.
    pub fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        IdentifyError::Files(hedge_run::RunError::InvalidConfig {
            field,
            value: value.to_string(),
            reason: reason.into(),
        })
    }

    /// A file that could not be read.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        IdentifyError::Io { path: path.into(), source }
    }

    /// Input the index cannot take, named by its path.
    pub fn input(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        IdentifyError::Input { path: path.into(), what: what.into() }
    }

    /// The run-directory error inside, if this is one (an output that exists, a damaged file).
    pub fn run_error(&self) -> Option<&hedge_run::RunError> {
        match self {
            IdentifyError::Files(e) | IdentifyError::Embed(EmbedError::Files(e)) => Some(e),
            _ => None,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = IdentifyError> = std::result::Result<T, E>;
