//! Where the datasets live: `$HEDGE_DATA_DIR`, default `./data`.

use std::path::{Path, PathBuf};

use crate::{DataError, Result};

/// Name of the environment variable that points at the data directory.
pub const DATA_DIR_ENV: &str = "HEDGE_DATA_DIR";

/// The data directory: `$HEDGE_DATA_DIR` if set, else `./data`. It must exist.
///
/// # Errors
/// [`DataError::MissingDataDir`] when the folder does not exist.
pub fn data_dir() -> Result<PathBuf> {
    let path = std::env::var_os(DATA_DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("data"));
    if path.is_dir() {
        Ok(path)
    } else {
        Err(DataError::MissingDataDir { path })
    }
}

/// `path` if it is a file, else an error that says which dataset it belongs to.
pub(crate) fn require_file(path: &Path, dataset_hint: &str) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(DataError::MissingFile { path: path.to_path_buf(), hint: dataset_hint.to_string() })
    }
}

/// Reads a whole file, naming it in the error.
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| DataError::io(path, e))
}
