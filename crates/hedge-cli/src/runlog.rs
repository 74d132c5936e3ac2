//! What every multi-run experiment command shares: a progress bar over runs and a JSON-lines
//! file rewritten (atomically) after each run, so an interrupted experiment keeps what it finished.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

/// A bar counting `len` runs of what `unit` names ("runs", "networks").
pub fn runs_bar(len: u64, unit: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{bar:30}} {{pos}}/{{len}} {unit} {{elapsed_precise}} ETA {{eta}} {{msg}}"
        ))
        .expect("template"),
    );
    bar
}

/// A JSON-lines file that grows by whole runs.
pub struct JsonLines {
    path: PathBuf,
    text: String,
}

impl JsonLines {
    pub fn new(path: &Path) -> Self {
        Self { path: path.to_path_buf(), text: String::new() }
    }

    /// Appends one line per row and rewrites the file.
    pub fn append<T: Serialize>(&mut self, rows: &[T]) -> Result<()> {
        for row in rows {
            self.text.push_str(&serde_json::to_string(row)?);
            self.text.push('\n');
        }
        hedge_data::write_atomic(&self.path, self.text.as_bytes())?;
        Ok(())
    }
}
