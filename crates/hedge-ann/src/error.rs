use std::path::PathBuf;

/// Everything that can go wrong while building, searching, saving or loading an index.
#[derive(Debug, thiserror::Error)]
pub enum AnnError {
    /// A memory estimate over the budget, or a file that could not be written atomically.
    #[error(transparent)]
    Files(#[from] hedge_run::RunError),

    #[error("cannot access '{path}': {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An index file that is not a hedge HNSW graph, or one whose fields disagree.
    #[error("'{path}': {what}")]
    File { path: PathBuf, what: String },
}

impl AnnError {
    pub fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        AnnError::Files(hedge_run::RunError::InvalidConfig { field, value: value.to_string(), reason: reason.into() })
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AnnError::Io { path: path.into(), source }
    }

    pub fn file(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        AnnError::File { path: path.into(), what: what.into() }
    }
}

/// Result alias of this crate.
pub type Result<T, E = AnnError> = std::result::Result<T, E>;
