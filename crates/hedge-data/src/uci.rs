//! UCI regression sets in the layout of the Bayesian-deep-learning benchmarks
//! (Hernández-Lobato & Adams 2015; Gal & Ghahramani 2016): `data.txt`, `index_features.txt`,
//! `index_target.txt`, `index_train_K.txt`, `index_test_K.txt`, `n_splits.txt`.
//!
//! Every value is checked on load; a bad cell is reported with its file, line and column.

use std::path::{Path, PathBuf};

use crate::{DataError, Result};

/// A UCI regression set: inputs and targets, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct UciDataset {
    /// Folder name, e.g. `yacht`.
    pub name: String,
    /// `[rows * features]`, row-major.
    pub inputs: Vec<f64>,
    /// `[rows]`.
    pub targets: Vec<f64>,
    pub features: usize,
    /// Number of standard splits (`n_splits.txt`).
    pub splits: usize,
    source: SplitSource,
}

/// Where a set's train/test splits come from.
#[derive(Debug, Clone, PartialEq)]
enum SplitSource {
    /// `index_{train,test}_K.txt` in this folder, read when asked for.
    Folder(PathBuf),
    /// Made when the set was built (a user's table, [`crate::table::Table::regression`]).
    InMemory(Vec<UciSplit>),
}

/// Row indices of one standard split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UciSplit {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

impl UciDataset {
    /// The folder of `name` under the data directory: `DATA_DIR/uci/<name>/data/`.
    pub fn folder(data_dir: &Path, name: &str) -> PathBuf {
        data_dir.join("uci").join(name).join("data")
    }

    /// Loads `DATA_DIR/uci/<name>/data/`.
    ///
    /// # Errors
    /// A missing file; a cell that is not a finite number (file, line, column); a row with a
    /// different number of columns; a feature or target index outside the table.
    pub fn load(data_dir: &Path, name: &str) -> Result<Self> {
        let folder = Self::folder(data_dir, name);
        if !folder.is_dir() {
            return Err(DataError::MissingFile {
                path: folder,
                hint: format!(
                    "no UCI set '{name}'; expected uci/<name>/data/ under the data directory (see uci/SOURCE.md)"
                ),
            });
        }
        let table = read_matrix(&folder.join("data.txt"))?;
        let columns = table.first().map_or(0, Vec::len);
        let feature_idx = read_indices(&folder.join("index_features.txt"))?;
        let target_idx = read_indices(&folder.join("index_target.txt"))?;
        let target = match target_idx.as_slice() {
            [t] => *t,
            other => {
                return Err(DataError::format(
                    folder.join("index_target.txt"),
                    "UCI index",
                    format!("expected one target column index, found {}", other.len()),
                ))
            }
        };
        for (file, idx) in [("index_features.txt", &feature_idx), ("index_target.txt", &target_idx)] {
            if let Some(bad) = idx.iter().find(|&&c| c >= columns) {
                return Err(DataError::format(
                    folder.join(file),
                    "UCI index",
                    format!("column {bad} does not exist: data.txt has {columns} columns (0-based indices)"),
                ));
            }
        }
        if feature_idx.is_empty() {
            return Err(DataError::format(
                folder.join("index_features.txt"),
                "UCI index",
                "lists no feature columns: a model needs at least one input (one 0-based column index per line)",
            ));
        }
        if feature_idx.contains(&target) {
            return Err(DataError::format(
                folder.join("index_features.txt"),
                "UCI index",
                format!("the target column {target} is also listed as a feature"),
            ));
        }
        let splits_path = folder.join("n_splits.txt");
        let splits = match read_indices(&splits_path)?.as_slice() {
            [n] if *n > 0 => *n,
            _ => return Err(DataError::format(splits_path, "UCI index", "expected one positive number of splits")),
        };
        let inputs = table.iter().flat_map(|row| feature_idx.iter().map(|&c| row[c])).collect();
        let targets: Vec<f64> = table.iter().map(|row| row[target]).collect();
        // A constant target has no scale to standardise by: every fit would divide by zero and
        // report NaN hyper-parameters.
        if targets.iter().all(|&t| t == targets[0]) {
            return Err(DataError::format(
                folder.join("data.txt"),
                "UCI data",
                format!(
                    "the target column {target} (index_target.txt) is {} in every row: there is nothing to regress",
                    targets[0]
                ),
            ));
        }
        Ok(UciDataset {
            name: name.to_string(),
            inputs,
            targets,
            features: feature_idx.len(),
            splits,
            source: SplitSource::Folder(folder),
        })
    }

    /// A set built in memory with its splits (a user's table). Every split must index rows of
    /// `targets`, train and test disjoint and non-empty; the caller guarantees it.
    pub(crate) fn in_memory(
        name: String,
        inputs: Vec<f64>,
        targets: Vec<f64>,
        features: usize,
        splits: Vec<UciSplit>,
    ) -> Self {
        debug_assert_eq!(inputs.len(), targets.len() * features);
        UciDataset { name, inputs, targets, features, splits: splits.len(), source: SplitSource::InMemory(splits) }
    }

    pub fn rows(&self) -> usize {
        self.targets.len()
    }

    /// Row `i`'s inputs.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.inputs[i * self.features..(i + 1) * self.features]
    }

    /// Standard split `k` (`index_train_k.txt`, `index_test_k.txt`).
    ///
    /// # Errors
    /// `k` beyond `n_splits`; an index outside the table; train and test sharing a row.
    pub fn split(&self, k: usize) -> Result<UciSplit> {
        if k >= self.splits {
            return Err(DataError::invalid(
                "split",
                k,
                format!("'{}' has splits 0..{} (n_splits.txt)", self.name, self.splits - 1),
            ));
        }
        let folder = match &self.source {
            SplitSource::InMemory(splits) => return Ok(splits[k].clone()),
            SplitSource::Folder(folder) => folder,
        };
        let mut parts = Vec::with_capacity(2);
        for part in ["train", "test"] {
            let path = folder.join(format!("index_{part}_{k}.txt"));
            let idx = read_indices(&path)?;
            if let Some(bad) = idx.iter().find(|&&i| i >= self.rows()) {
                return Err(DataError::format(
                    path,
                    "UCI index",
                    format!("row {bad} does not exist: data.txt has {} rows (0-based indices)", self.rows()),
                ));
            }
            parts.push(idx);
        }
        let test = parts.pop().expect("two parts");
        let train = parts.pop().expect("two parts");
        for (part, idx) in [("train", &train), ("test", &test)] {
            if idx.is_empty() {
                return Err(DataError::format(
                    folder.join(format!("index_{part}_{k}.txt")),
                    "UCI index",
                    format!("split {k} has no {part} rows: a split needs at least one row on each side"),
                ));
            }
        }
        let mut seen = vec![false; self.rows()];
        train.iter().for_each(|&i| seen[i] = true);
        if let Some(both) = test.iter().find(|&&i| seen[i]) {
            return Err(DataError::Integrity {
                path: folder.join(format!("index_test_{k}.txt")),
                what: format!("row {both} is in both the train and the test split {k}"),
            });
        }
        Ok(UciSplit { train, test })
    }
}

/// A whitespace-separated numeric table; every row as long as the first.
fn read_matrix(path: &Path) -> Result<Vec<Vec<f64>>> {
    parse_matrix(&read_text(path)?, path)
}

/// [`read_matrix`] on text already read (`path` names it in errors; the fuzz targets' entry).
pub(crate) fn parse_matrix(text: &str, path: &Path) -> Result<Vec<Vec<f64>>> {
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let mut row = Vec::new();
        for (c, cell) in line.split_whitespace().enumerate() {
            let value: f64 = cell.parse().map_err(|_| {
                DataError::format(
                    path,
                    "UCI data",
                    format!("line {}, column {}: '{cell}' is not a number", n + 1, c + 1),
                )
            })?;
            if !value.is_finite() {
                return Err(DataError::format(
                    path,
                    "UCI data",
                    format!("line {}, column {}: {cell}; remove or impute missing values first", n + 1, c + 1),
                ));
            }
            row.push(value);
        }
        if let Some(first) = rows.first() {
            if row.len() != first.len() {
                return Err(DataError::format(
                    path,
                    "UCI data",
                    format!("line {} has {} columns, the first line {}", n + 1, row.len(), first.len()),
                ));
            }
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(DataError::format(path, "UCI data", "no rows"));
    }
    Ok(rows)
}

/// One non-negative integer per line (the index files; `n_splits.txt`).
fn read_indices(path: &Path) -> Result<Vec<usize>> {
    parse_indices(&read_text(path)?, path)
}

/// [`read_indices`] on text already read.
pub(crate) fn parse_indices(text: &str, path: &Path) -> Result<Vec<usize>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            let cell = l.trim();
            // Some upstream index files hold integers written as floats ("3.0").
            let value: f64 = cell.parse().map_err(|_| {
                DataError::format(path, "UCI index", format!("line {}: '{cell}' is not an index", n + 1))
            })?;
            if value < 0.0 || value.fract() != 0.0 || !value.is_finite() {
                return Err(DataError::format(
                    path,
                    "UCI index",
                    format!("line {}: {cell} is not a non-negative integer", n + 1),
                ));
            }
            Ok(value as usize)
        })
        .collect()
}

fn read_text(path: &Path) -> Result<String> {
    if !path.is_file() {
        return Err(DataError::MissingFile {
            path: path.to_path_buf(),
            hint: "the UCI layout needs data.txt, index_features.txt, index_target.txt, n_splits.txt and \
                   index_{train,test}_K.txt (see uci/SOURCE.md)"
                .into(),
        });
    }
    std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4-row set in the UCI layout under a temporary data directory.
    fn write_set(data: &str, features: &str, target: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let folder = UciDataset::folder(dir.path(), "toy");
        std::fs::create_dir_all(&folder).unwrap();
        for (name, text) in [
            ("data.txt", data),
            ("index_features.txt", features),
            ("index_target.txt", target),
            ("n_splits.txt", "1\n"),
            ("index_train_0.txt", "0\n1\n2\n"),
            ("index_test_0.txt", "3\n"),
        ] {
            std::fs::write(folder.join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn loads_features_targets_and_splits() {
        let dir = write_set("1 2 3\n4 5 6\n7 8 9\n10 11 12\n", "0\n2\n", "1\n");
        let d = UciDataset::load(dir.path(), "toy").unwrap();
        assert_eq!((d.rows(), d.features), (4, 2));
        assert_eq!(d.row(1), &[4.0, 6.0]);
        assert_eq!(d.targets, vec![2.0, 5.0, 8.0, 11.0]);
        assert_eq!(d.split(0).unwrap(), UciSplit { train: vec![0, 1, 2], test: vec![3] });
        let err = d.split(1).unwrap_err().to_string();
        assert!(err.contains("splits 0..0"), "{err}");
    }

    #[test]
    fn bad_cells_name_file_line_and_column() {
        let dir = write_set("1 2 3\n4 x 6\n7 8 9\n10 11 12\n", "0\n2\n", "1\n");
        let err = UciDataset::load(dir.path(), "toy").unwrap_err().to_string();
        assert!(err.contains("data.txt") && err.contains("line 2, column 2") && err.contains("'x'"), "{err}");
        let dir = write_set("1 2 3\n4 NaN 6\n7 8 9\n10 11 12\n", "0\n2\n", "1\n");
        let err = UciDataset::load(dir.path(), "toy").unwrap_err().to_string();
        assert!(err.contains("line 2, column 2") && err.contains("missing values"), "{err}");
        let dir = write_set("1 2 3\n4 5\n7 8 9\n10 11 12\n", "0\n2\n", "1\n");
        assert!(UciDataset::load(dir.path(), "toy").unwrap_err().to_string().contains("line 2 has 2 columns"));
    }

    /// Issue 17's silent nonsense: no features gave a null RMSE, a constant target NaN
    /// lengthscales, and an empty test split a null RMSE, each with exit code 0.
    #[test]
    fn sets_no_model_can_be_fitted_or_scored_on_are_refused() {
        let dir = write_set("1 2 3\n4 5 6\n7 8 9\n10 11 12\n", "", "1\n");
        let err = UciDataset::load(dir.path(), "toy").unwrap_err().to_string();
        assert!(err.contains("index_features.txt") && err.contains("no feature columns"), "{err}");
        let dir = write_set("1 7 3\n4 7 6\n7 7 9\n10 7 12\n", "0\n2\n", "1\n");
        let err = UciDataset::load(dir.path(), "toy").unwrap_err().to_string();
        assert!(err.contains("data.txt") && err.contains("target column 1") && err.contains("7 in every row"), "{err}");
        let dir = write_set("1 2 3\n4 5 6\n7 8 9\n10 11 12\n", "0\n2\n", "1\n");
        std::fs::write(UciDataset::folder(dir.path(), "toy").join("index_test_0.txt"), "\n").unwrap();
        let err = UciDataset::load(dir.path(), "toy").unwrap().split(0).unwrap_err().to_string();
        assert!(err.contains("index_test_0.txt") && err.contains("no test rows"), "{err}");
    }

    #[test]
    fn impossible_indices_are_refused() {
        let dir = write_set("1 2 3\n4 5 6\n7 8 9\n10 11 12\n", "0\n5\n", "1\n");
        let err = UciDataset::load(dir.path(), "toy").unwrap_err().to_string();
        assert!(err.contains("index_features.txt") && err.contains("column 5 does not exist"), "{err}");
        let dir = write_set("1 2 3\n4 5 6\n7 8 9\n10 11 12\n", "0\n1\n", "1\n");
        assert!(UciDataset::load(dir.path(), "toy").unwrap_err().to_string().contains("also listed as a feature"));
        let dir = write_set("1 2 3\n4 5 6\n7 8 9\n10 11 12\n", "0\n2\n", "1\n");
        let folder = UciDataset::folder(dir.path(), "toy");
        std::fs::write(folder.join("index_test_0.txt"), "9\n").unwrap();
        let err = UciDataset::load(dir.path(), "toy").unwrap().split(0).unwrap_err().to_string();
        assert!(err.contains("row 9 does not exist"), "{err}");
        std::fs::write(folder.join("index_test_0.txt"), "2\n").unwrap();
        let err = UciDataset::load(dir.path(), "toy").unwrap().split(0).unwrap_err().to_string();
        assert!(err.contains("row 2 is in both"), "{err}");
    }
}
