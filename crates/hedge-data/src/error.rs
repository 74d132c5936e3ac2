use std::path::PathBuf;

/// Everything that can go wrong while finding, reading or checking a dataset.
///
/// Every variant names the file involved and says what to do about it, because these
/// messages are read by people whose data is in the wrong place or damaged.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error(
        "data directory '{path}' does not exist. Set HEDGE_DATA_DIR to the folder that holds \
         mnist/, fashion-mnist/, n-digit-mnist/, uci/, bsds500/ and adult/ (default ./data); see README.md, section 'Data'"
    )]
    MissingDataDir { path: PathBuf },

    #[error("missing file '{path}': {hint}")]
    MissingFile { path: PathBuf, hint: String },

    #[error("'{path}' {what}; expected a file there ({hint})")]
    NotAFile { path: PathBuf, what: String, hint: String },

    #[error("cannot read '{path}': {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot write '{path}': {source}; check that the folder is writable and the disk has room")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("'{path}' is not a valid {format} file: {what}")]
    Format { path: PathBuf, format: &'static str, what: String },

    #[error("'{path}' failed the integrity check: {what}")]
    Integrity { path: PathBuf, what: String },

    /// Writing a file or a run directory, or a memory estimate over the budget.
    #[error(transparent)]
    Run(#[from] hedge_run::RunError),
}

/// What is wrong inside a file's bytes, before the file's name is known (the loaders wrap it in
/// [`DataError::Format`] with the path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormatIssue(pub String);

impl From<String> for FormatIssue {
    fn from(what: String) -> Self {
        FormatIssue(what)
    }
}

impl From<&str> for FormatIssue {
    fn from(what: &str) -> Self {
        FormatIssue(what.to_string())
    }
}

impl From<FormatIssue> for String {
    fn from(issue: FormatIssue) -> String {
        issue.0
    }
}

impl DataError {
    pub(crate) fn invalid(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        DataError::Run(hedge_run::RunError::InvalidConfig { field, value: value.to_string(), reason: reason.into() })
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DataError::Io { path: path.into(), source }
    }

    pub(crate) fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DataError::Write { path: path.into(), source }
    }

    pub(crate) fn format(path: impl Into<PathBuf>, format: &'static str, what: impl Into<String>) -> Self {
        DataError::Format { path: path.into(), format, what: what.into() }
    }
}

/// Result alias of this crate.
pub type Result<T, E = DataError> = std::result::Result<T, E>;
