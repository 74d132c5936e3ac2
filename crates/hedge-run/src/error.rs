use std::path::PathBuf;

/// Everything that can go wrong while writing a run's files, resuming it, or checking a
/// setting or a memory estimate. Every variant names the file or setting and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("missing file '{path}': {hint}")]
    MissingFile { path: PathBuf, hint: String },

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

    /// A run's definition edited after it started ([`crate::rundir::RunDirectory::check_sealed`]).
    #[error("'{path}' was edited after the run started, so resuming would mix two experiments; changed: {changes}. {how_to_change}")]
    EditedDefinition { path: PathBuf, changes: String, how_to_change: String },

    /// A command's memory estimate over the budget ([`crate::budget`]).
    #[error("{0}")]
    OverBudget(String),

    /// A command's work estimate over the work bound ([`crate::budget::WorkBound`]).
    #[error("{0}")]
    OverWorkBound(String),

    /// A setting outside its valid range: the one such error of hedge, every crate's error
    /// carries it (`ActiveError::Run`, `EmbedError::Files`, ...).
    #[error("invalid setting '{field}' = {value}: {reason}")]
    InvalidConfig { field: &'static str, value: String, reason: String },

    #[error("'{path}' already holds {entries} file(s) (e.g. '{example}'); choose another --out, or pass --overwrite to replace what a run there wrote")]
    OutputNotEmpty { path: PathBuf, entries: usize, example: String },

    #[error("'{path}' holds files hedge did not make there (e.g. '{example}'; the folder has no .hedge-owned marker), so --overwrite cannot replace anything in it; choose another --out (if an earlier hedge version wrote this folder before it marked its folders, delete the folder yourself)")]
    OutputNotHedges { path: PathBuf, example: String },

    #[error("'{path}' is a folder of kind '{theirs}' (written by `{command}`), and this command writes one of kind '{ours}': --overwrite replaces only a folder of its own kind, so that two commands' files never mix; choose another --out, or delete that folder yourself")]
    OutputOfAnotherKind { path: PathBuf, theirs: String, command: String, ours: String },

    #[error("--out '{path}' is not a folder (a file or a link to nothing is there); choose another --out")]
    OutputNotFolder { path: PathBuf },

    #[error("--out '{path}' lies inside the input folder '{input}' ({flag}): what hedge writes there would become part of its input; choose an --out outside it")]
    OutputInsideInput { path: PathBuf, input: PathBuf, flag: String },
}

impl RunError {
    /// A file that could not be read.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RunError::Io { path: path.into(), source }
    }

    /// A file that could not be written.
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RunError::Write { path: path.into(), source }
    }

    /// A file whose contents are not the `format` they should be.
    pub fn format(path: impl Into<PathBuf>, format: &'static str, what: impl Into<String>) -> Self {
        RunError::Format { path: path.into(), format, what: what.into() }
    }
}

/// Result alias of this crate.
pub type Result<T, E = RunError> = std::result::Result<T, E>;

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
