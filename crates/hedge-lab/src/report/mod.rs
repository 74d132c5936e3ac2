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
//! types that wrote them.

pub mod bench;
pub mod format;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::{LabError, Result};

/// The folder, inside an area's results folder, that holds its fragments.
pub const FRAGMENT_FOLDER: &str = "report";

/// One fragment: where it goes (relative to the repository root) and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment {
    pub path: PathBuf,
    pub text: String,
}

impl Fragment {
    /// The fragment `name` of `area` (`results/<area>/report/<name>.md`).
    pub fn new(area: &str, name: &str, text: impl Into<String>) -> Self {
        Fragment {
            path: Path::new("results").join(area).join(FRAGMENT_FOLDER).join(format!("{name}.md")),
            text: text.into(),
        }
    }

    /// The file's bytes: the text and one newline.
    fn bytes(&self) -> Vec<u8> {
        format!("{}\n", self.text.trim_end_matches('\n')).into_bytes()
    }
}

/// The result files of a repository checkout, read from its root.
#[derive(Debug, Clone)]
pub struct Results {
    root: PathBuf,
}

impl Results {
    /// The results under the repository root `root` (the folder holding `results/`).
    pub fn new(root: &Path) -> Self {
        Results { root: root.to_path_buf() }
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The full path of `rel` (relative to the repository root).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Whether the file `rel` exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).is_file()
    }

    /// The text of `rel`.
    pub fn text(&self, rel: &str) -> Result<String> {
        let path = self.path(rel);
        std::fs::read_to_string(&path).map_err(|e| LabError::Run(hedge_run::RunError::io(&path, e)))
    }

    /// The JSON file `rel`, as the type that wrote it.
    pub fn json<T: DeserializeOwned>(&self, rel: &str) -> Result<T> {
        let path = self.path(rel);
        let text = self.text(rel)?;
        serde_json::from_str(&text)
            .map_err(|e| LabError::Run(hedge_run::RunError::format(&path, "JSON", e.to_string())))
    }

    /// Every line of the JSON-lines file `rel` of a run folder (checked against the folder's
    /// manifest where it has one).
    pub fn json_lines<T: DeserializeOwned>(&self, folder: &str, name: &str) -> Result<Vec<T>> {
        Ok(hedge_run::RunDirectory::open(&self.path(folder))?.read_json_lines(name)?)
    }
}

/// Every fragment of every area, from the result files under `results`.
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    let mut all = crate::active::report::fragments(results)?;
    all.extend(crate::agnostic::report::fragments(results)?);
    all.extend(crate::hib::report::fragments(results)?);
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

/// The one mean-over-α lookup the summaries need: the entry of `alphas` at `alpha` (keys are
/// [`crate::agnostic::sweep::alpha_key`] strings).
pub(crate) fn at_alpha<'a, V>(
    alphas: &'a std::collections::BTreeMap<String, V>,
    alpha: f64,
    file: &str,
) -> Result<&'a V> {
    alphas
        .iter()
        .find(|(k, _)| k.parse::<f64>().is_ok_and(|a| (a - alpha).abs() < 1e-9))
        .map(|(_, v)| v)
        .ok_or_else(|| missing(file, format!("no entry at α = {alpha}")))
}

/// A result file without what a fragment reads from it.
pub(crate) fn missing(file: &str, what: impl Into<String>) -> LabError {
    LabError::Run(hedge_run::RunError::MissingFile {
        path: PathBuf::from(file),
        hint: format!("{}; re-run the experiment that writes it, or drop the fragment", what.into()),
    })
}
