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

    /// Fault injection in tests ([`crate::rundir::RunDirectory::stop_after_writes`]).
    #[error("writer stopped after {after} writes, before writing '{path}' (fault injection)")]
    WriterStopped { path: PathBuf, after: usize },

    #[error("'{path}' is not a valid {format} file: {what}")]
    Format { path: PathBuf, format: &'static str, what: String },

    #[error("'{path}' failed the integrity check: {what}")]
    Integrity { path: PathBuf, what: String },

    /// A command's memory estimate over the budget ([`crate::budget`]).
    #[error("{0}")]
    OverBudget(String),

    /// A setting outside its valid range (every crate of hedge names this variant the same).
    #[error("invalid setting '{field}' = {value}: {reason}")]
    InvalidConfig { field: &'static str, value: String, reason: String },

    #[error("'{path}' already holds {entries} file(s) (e.g. '{example}'); choose another --out, or pass --overwrite to replace what a run there wrote")]
    OutputNotEmpty { path: PathBuf, entries: usize, example: String },

    #[error("'{path}' holds files hedge did not make there (e.g. '{example}'; the folder has no .hedge-owned marker), so --overwrite cannot replace anything in it; choose another --out (if an earlier hedge version wrote this folder before it marked its folders, delete the folder yourself)")]
    OutputNotHedges { path: PathBuf, example: String },

    #[error("--out '{path}' is not a folder (a file or a link to nothing is there); choose another --out")]
    OutputNotFolder { path: PathBuf },

    #[error("--out '{path}' lies inside the input folder '{input}' ({flag}): what hedge writes there would become part of its input; choose an --out outside it")]
    OutputInsideInput { path: PathBuf, input: PathBuf, flag: String },
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
        DataError::InvalidConfig { field, value: value.to_string(), reason: reason.into() }
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

/// `text` without the C++ stack trace libtorch appends to its errors ("Exception raised from …"
/// and its "frame #N" lines): what reaches a user is the message, never the trace.
pub fn libtorch_message(text: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("Exception raised from") || t.starts_with("frame #"))
        })
        .collect();
    kept.join("\n").trim_end().to_string()
}

#[cfg(test)]
mod libtorch_message_tests {
    #[test]
    fn the_cpp_trace_is_dropped_and_the_message_kept() {
        // The shape of a real libtorch error (tch's Display of TchError::Torch).
        let raw = "Internal torch error: size mismatch for head.weight: copying a param with shape [8, 3136] \
                   from checkpoint, the shape in current model is [4, 3136].\n\
                   Exception raised from copy_ at /pytorch/aten/src/ATen/native/Copy.cpp:250 (most recent call first):\n\
                   frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9d (0x7f in libc10.so)\n\
                   frame #1: <unknown function> + 0x1a2b (0x7f in libtorch_cpu.so)";
        let kept = super::libtorch_message(raw);
        assert!(kept.contains("size mismatch for head.weight"), "{kept}");
        assert!(!kept.contains("frame #") && !kept.contains("Exception raised"), "{kept}");
    }
}
