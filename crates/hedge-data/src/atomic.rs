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
        DataError::write(path, e)
    })
}

/// Makes `out` ready to hold a new experiment's files: creates it, or refuses one that already
/// holds files unless `overwrite` (then files the experiment writes replace theirs, each
/// atomically; others are left alone). Commands call this after every check and data load, so
/// a bad argument never leaves an empty folder behind.
pub fn prepare_output_dir(out: &Path, overwrite: bool) -> Result<()> {
    check_output_dir(out, overwrite)?;
    std::fs::create_dir_all(out).map_err(|e| DataError::write(out, e))
}

/// The refusal of [`prepare_output_dir`] without creating anything: commands that compute for
/// minutes before writing call it first, so the work never ends in a refused folder.
pub fn check_output_dir(out: &Path, overwrite: bool) -> Result<()> {
    if let Ok(entries) = std::fs::read_dir(out) {
        let names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        if !names.is_empty() && !overwrite {
            let mut sorted = names.clone();
            sorted.sort();
            return Err(DataError::OutputNotEmpty {
                path: out.to_path_buf(),
                entries: names.len(),
                example: sorted[0].clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_folder_with_files_is_refused_unless_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        prepare_output_dir(&out, false).unwrap();
        assert!(out.is_dir());
        // Empty: accepted again.
        prepare_output_dir(&out, false).unwrap();
        write_atomic(&out.join("rounds.jsonl"), b"{}\n").unwrap();
        let e = prepare_output_dir(&out, false).unwrap_err().to_string();
        assert!(e.contains("rounds.jsonl") && e.contains("--overwrite"), "{e}");
        prepare_output_dir(&out, true).unwrap();
        assert_eq!(std::fs::read(out.join("rounds.jsonl")).unwrap(), b"{}\n", "overwrite deletes nothing itself");
    }
}
