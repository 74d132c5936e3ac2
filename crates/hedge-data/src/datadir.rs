//! Where the datasets live: `$HEDGE_DATA_DIR`, default `./data`.

use std::path::{Path, PathBuf};

use crate::{DataError, Result};

/// Name of the environment variable that points at the data directory.
pub const DATA_DIR_ENV: &str = "HEDGE_DATA_DIR";

/// Where the papers' datasets live, checked only when a loader needs them: a command on a
/// user's own files never asks, so it runs without `HEDGE_DATA_DIR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataRoot {
    path: PathBuf,
}

impl DataRoot {
    /// The datasets under `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `$HEDGE_DATA_DIR` if set, else `./data` (read now, checked when used).
    pub fn from_env() -> Self {
        Self::at(std::env::var_os(DATA_DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("data")))
    }

    /// The folder as given, not checked (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder, once it is known to exist.
    ///
    /// # Errors
    /// [`DataError::MissingDataDir`] when the folder does not exist.
    pub fn dir(&self) -> Result<&Path> {
        if self.path.is_dir() {
            Ok(&self.path)
        } else {
            Err(DataError::MissingDataDir { path: self.path.clone() })
        }
    }
}

/// The data directory: `$HEDGE_DATA_DIR` if set, else `./data`. It must exist.
///
/// # Errors
/// [`DataError::MissingDataDir`] when the folder does not exist.
pub fn data_dir() -> Result<PathBuf> {
    DataRoot::from_env().dir().map(Path::to_path_buf)
}

/// `path` if it is a file, else an error that says which dataset it belongs to.
pub(crate) fn require_file(path: &Path, dataset_hint: &str) -> Result<()> {
    let not_a_file =
        |what: String| DataError::NotAFile { path: path.to_path_buf(), what, hint: dataset_hint.to_string() };
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) if m.is_dir() => Err(not_a_file("is a folder, not a file".into())),
        Ok(_) => Err(not_a_file("is not a regular file (a device, socket or pipe)".into())),
        // The name exists but does not lead to a file: a link to nothing, a loop of links.
        Err(e) if std::fs::symlink_metadata(path).is_ok() => {
            Err(not_a_file(format!("is a symbolic link that does not lead to a file ({e})")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(DataError::MissingFile { path: path.to_path_buf(), hint: dataset_hint.to_string() })
        }
        Err(e) => Err(DataError::io(path, e)),
    }
}

/// Reads a whole file, naming it in the error.
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| DataError::io(path, e))
}
