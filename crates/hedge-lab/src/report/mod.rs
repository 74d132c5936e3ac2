//! The Markdown fragments the READMEs include: every table and every sentence with a measured
//! number that a README shows, written from the typed result files that hold it.
//!
//! A fragment is a file under `results/<area>/report/` (`hedge report` writes them all). A README
//! holds it between `<!-- include:PATH:begin -->` and `<!-- include:PATH:end -->`, which
//! `scripts/docs.py` fills with the file as it is; `hedge report --check` (and the test
//! `the_committed_fragments_are_what_the_result_files_give`) fails when a committed fragment is
//! not what its result files give now.
//!
//! Each area's fragments come from its own module ([`crate::active::report`],
//! [`crate::agnostic::report`], [`crate::bayes::report`], [`crate::hib::report`],
//! [`mod@bench`]): a function per fragment, reading the result files through [`Results`] into the
//! types that wrote them. Those modules build on [`fragment`] (the pieces below them); this one
//! gathers them (the aggregator above them), so that no module imports one that imports it back.

pub mod bench;
pub mod format;
pub mod fragment;

use std::path::{Path, PathBuf};

pub use fragment::{Fragment, Results, FRAGMENT_FOLDER};

use crate::{LabError, Result};

/// Every fragment of every area, from the result files under `results`.
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    let mut all = crate::active::report::fragments(results)?;
    all.extend(crate::agnostic::report::fragments(results)?);
    all.extend(crate::hib::report::fragments(results)?);
    all.extend(crate::hib::report_tables::fragments(results)?);
    all.extend(crate::hib::side_by_side::fragments(results)?);
    all.extend(crate::bayes::report::fragments(results)?);
    all.extend(bench::fragments(results)?);
    Ok(all)
}

/// The fragments whose committed file differs from `fragments` (or is missing).
pub fn stale(root: &Path, fragments: &[Fragment]) -> Vec<PathBuf> {
    fragments
        .iter()
        .filter(|f| std::fs::read(root.join(&f.path)).ok().as_deref() != Some(f.bytes().as_slice()))
        .map(|f| f.path.clone())
        .collect()
}

/// Writes the fragments that changed under `root` (each through a temporary file and a rename)
/// and returns their paths.
pub fn write(root: &Path, fragments: &[Fragment]) -> Result<Vec<PathBuf>> {
    let changed = stale(root, fragments);
    for f in fragments.iter().filter(|f| changed.contains(&f.path)) {
        let path = root.join(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| LabError::Run(hedge_run::RunError::write(parent, e)))?;
        }
        hedge_run::atomic::write_atomic(&path, &f.bytes())?;
    }
    Ok(changed)
}
