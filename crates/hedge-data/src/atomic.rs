//! Writing files so that a crash never leaves a half-written file where a good one was.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{DataError, Result};

/// A sibling path to write to before renaming onto `path`; it keeps `path`'s extension
/// because some writers (libtorch's safetensors) choose the format by extension.
pub fn temp_sibling(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".tmp-{}-{name}", std::process::id()))
}

/// Writes `bytes` to `path` through a temporary sibling file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_sibling(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        DataError::io(path, e)
    })
}
