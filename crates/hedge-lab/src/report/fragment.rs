//! What every area's report is made of: a [`Fragment`] (one Markdown file a README includes) and
//! [`Results`] (the result files of a checkout, read into the types that wrote them), with the
//! lookups the fragment functions share. It imports no area: the areas' `report` modules build
//! on it, and [`crate::report`] gathers them.

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
    pub(crate) fn bytes(&self) -> Vec<u8> {
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
