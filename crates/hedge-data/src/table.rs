//! A user's own table (CSV, header row first): a target column, an optional protected column,
//! and every other column as an input — numeric columns as they are, text columns one-hot.
//!
//! ```no_run
//! use hedge_data::table::{Table, TableSpec};
//! let table = Table::read_csv("houses.csv".as_ref(), &TableSpec::new("price"))?;
//! println!("{} rows, inputs: {:?}", table.rows(), table.feature_names);
//! # Ok::<(), hedge_data::DataError>(())
//! ```
//!
//! Nothing is guessed silently: a missing value (an empty cell, `NA`, `NaN`, `?`, `null`), an
//! infinite number, a row with the wrong number of cells or a column that is text in some rows
//! and numbers in others are refused naming the file, the line and the column, with the fix.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::adult::{Adult, AdultSplit};
use crate::uci::{UciDataset, UciSplit};
use crate::{DataError, Result};

/// Text that means "no value here" in the tables people export (pandas, R, UCI).
const MISSING_MARKERS: [&str; 8] = ["", "na", "n/a", "nan", "null", "none", "?", "-"];

/// More distinct text values than this in one input column is almost always an identifier
/// (a name, an id, a date) that one-hot encoding would blow up into thousands of inputs.
pub const MAX_LEVELS: usize = 200;

/// Files larger than this are refused before reading (the table is held in memory as f64).
pub const MAX_TABLE_BYTES: u64 = 4 << 30;

/// Which columns of a user's table play which part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSpec {
    /// The column to predict.
    pub target: String,
    /// A protected column (concept-agnostic networks): removed from the inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected: Option<String>,
    /// Columns to leave out of the inputs (identifiers, leaks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop: Vec<String>,
}

impl TableSpec {
    pub fn new(target: impl Into<String>) -> Self {
        TableSpec { target: target.into(), protected: None, drop: Vec::new() }
    }

    pub fn with_protected(mut self, protected: impl Into<String>) -> Self {
        self.protected = Some(protected.into());
        self
    }

    pub fn with_drop(mut self, columns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.drop = columns.into_iter().map(Into::into).collect();
        self
    }
}

/// One column of the file as read: numbers, or text levels (sorted) with each row's level index.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Numeric(Vec<f64>),
    Categorical { levels: Vec<String>, codes: Vec<u32> },
}

impl Column {
    /// The levels of a categorical column (`None` for a numeric one).
    pub fn levels(&self) -> Option<&[String]> {
        match self {
            Column::Numeric(_) => None,
            Column::Categorical { levels, .. } => Some(levels),
        }
    }

    /// Each row's value as a number: the number itself, or the level's index.
    pub fn values(&self) -> Vec<f64> {
        match self {
            Column::Numeric(v) => v.clone(),
            Column::Categorical { codes, .. } => codes.iter().map(|&c| c as f64).collect(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Numeric(v) => v.len(),
            Column::Categorical { codes, .. } => codes.len(),
        }
    }
}

/// A labelled column (target or protected) with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelColumn {
    pub name: String,
    pub column: Column,
}

impl LabelColumn {
    /// Each row's class, for a column with exactly two values (text levels in sorted order, or
    /// numbers: the smaller is 0). `None` when the column does not have exactly two values.
    pub fn binary(&self) -> Option<(Vec<u8>, [String; 2])> {
        match &self.column {
            Column::Categorical { levels, codes } if levels.len() == 2 => {
                Some((codes.iter().map(|&c| c as u8).collect(), [levels[0].clone(), levels[1].clone()]))
            }
            Column::Numeric(v) => {
                let distinct: BTreeSet<u64> = v.iter().map(|x| x.to_bits()).collect();
                if distinct.len() != 2 {
                    return None;
                }
                let mut values: Vec<f64> = distinct.into_iter().map(f64::from_bits).collect();
                values.sort_by(f64::total_cmp);
                let classes = v.iter().map(|&x| u8::from(x == values[1])).collect();
                Some((classes, [values[0].to_string(), values[1].to_string()]))
            }
            Column::Categorical { .. } => None,
        }
    }
}

/// A user's table, read and checked: inputs row-major (one-hot expanded), target, protected.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub path: PathBuf,
    /// The inputs' names: a numeric column's name, or `column=level` for each one-hot input.
    pub feature_names: Vec<String>,
    /// Whether each input is a numeric column (the others are one-hot indicators).
    pub numeric: Vec<bool>,
    /// `[rows * features]`, row-major.
    pub inputs: Vec<f64>,
    pub target: LabelColumn,
    pub protected: Option<LabelColumn>,
}

impl Table {
    /// Reads a CSV file (comma-separated, first row the column names; quoted cells allowed).
    ///
    /// # Errors
    /// A missing or unreadable file; no header or no data rows; a column of `spec` missing
    /// (the columns present are listed); duplicate column names; a row with a different number
    /// of cells; a missing value or infinite number (line and column named); an input column
    /// with more than [`MAX_LEVELS`] text values; no input column left.
    pub fn read_csv(path: &Path, spec: &TableSpec) -> Result<Self> {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => DataError::MissingFile {
                path: path.to_path_buf(),
                hint: "no such table; pass the path of a CSV file whose first row names the columns".into(),
            },
            _ => DataError::io(path, e),
        })?;
        if meta.len() > MAX_TABLE_BYTES {
            return Err(DataError::format(
                path,
                "CSV table",
                format!("it is {} bytes, over the limit of {MAX_TABLE_BYTES}; sample the rows first", meta.len()),
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
        Self::parse_csv(&bytes, path, spec)
    }

    /// Parses CSV `bytes` as [`Table::read_csv`] does (`path` names the source in errors).
    pub fn parse_csv(bytes: &[u8], path: &Path, spec: &TableSpec) -> Result<Self> {
        let bad = |what: String| DataError::format(path, "CSV table", what);
        // Spreadsheet exports often start with a UTF-8 byte-order mark, which would otherwise
        // become part of the first column's name.
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(true).from_reader(bytes);
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| bad(format!("cannot read the header row: {e}")))?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        if header.is_empty() || header.iter().all(String::is_empty) {
            return Err(bad("the first row names no columns; the first row must be the column names".into()));
        }
        let mut seen = BTreeSet::new();
        for (i, name) in header.iter().enumerate() {
            if name.is_empty() {
                return Err(bad(format!("column {} has an empty name in the header row; name every column", i + 1)));
            }
            if !seen.insert(name.as_str()) {
                return Err(bad(format!("two columns are named '{name}'; column names must be unique")));
            }
        }
        let find = |flag: &str, name: &str| {
            header.iter().position(|h| h == name).ok_or_else(|| {
                let other_separator = [';', '\t'].into_iter().find(|&c| header.len() == 1 && header[0].contains(c));
                let hint = match other_separator {
                    Some(c) => format!(
                        "; the header is one column holding {c:?}: hedge reads comma-separated files, so save the \
                         table as CSV with commas"
                    ),
                    None => String::new(),
                };
                bad(format!("has no column '{name}' (given as {flag}); its columns are: {}{hint}", header.join(", ")))
            })
        };
        let target_at = find("--target", &spec.target)?;
        let protected_at = spec.protected.as_deref().map(|p| find("--protected", p)).transpose()?;
        if protected_at == Some(target_at) {
            return Err(DataError::invalid(
                "protected",
                &spec.target,
                "the protected column must differ from the target",
            ));
        }
        let mut dropped = BTreeSet::new();
        for name in &spec.drop {
            dropped.insert(find("--drop", name)?);
        }

        // Every cell as text, checked for completeness first, so the first problem a user sees is
        // the first one in the file.
        let mut cells: Vec<Vec<String>> = vec![Vec::new(); header.len()];
        for (i, record) in reader.records().enumerate() {
            let record = record.map_err(|e| bad(format!("cannot parse the row after data row {i}: {e}")))?;
            let line = record.position().map_or(i as u64 + 2, |p| p.line());
            if record.len() != header.len() {
                // A lone empty line is the trailing newline of some exporters: skip it.
                if record.len() == 1 && record[0].trim().is_empty() {
                    continue;
                }
                return Err(bad(format!(
                    "line {line} has {} cells, the header {}; every row needs one cell per column",
                    record.len(),
                    header.len()
                )));
            }
            for (c, cell) in record.iter().enumerate() {
                let cell = cell.trim();
                if MISSING_MARKERS.contains(&cell.to_ascii_lowercase().as_str()) {
                    return Err(bad(format!(
                        "line {line}, column '{}': missing value ('{cell}'); fill it in or drop the row (hedge does not impute)",
                        header[c]
                    )));
                }
                cells[c].push(cell.to_string());
            }
        }
        let rows = cells[0].len();
        if rows == 0 {
            return Err(bad("has a header but no data rows".into()));
        }
        let columns: Vec<Column> = cells
            .iter()
            .enumerate()
            .map(|(c, values)| parse_column(values, &header[c], path))
            .collect::<Result<_>>()?;

        let mut feature_names = Vec::new();
        let mut numeric = Vec::new();
        let mut parts: Vec<&Column> = Vec::new();
        for (c, column) in columns.iter().enumerate() {
            if c == target_at || Some(c) == protected_at || dropped.contains(&c) {
                continue;
            }
            match column {
                Column::Numeric(_) => {
                    feature_names.push(header[c].clone());
                    numeric.push(true);
                }
                Column::Categorical { levels, .. } => {
                    if levels.len() > MAX_LEVELS {
                        return Err(bad(format!(
                            "column '{}' has {} distinct text values (more than {MAX_LEVELS}): it looks like an \
                             identifier; leave it out with --drop '{}' or encode it as numbers",
                            header[c],
                            levels.len(),
                            header[c]
                        )));
                    }
                    feature_names.extend(levels.iter().map(|l| format!("{}={l}", header[c])));
                    numeric.extend(levels.iter().map(|_| false));
                }
            }
            parts.push(column);
        }
        if feature_names.is_empty() {
            return Err(bad(format!(
                "no input column is left after the target '{}'{}; a model needs at least one input",
                spec.target,
                if protected_at.is_some() || !dropped.is_empty() {
                    ", the protected and the dropped columns"
                } else {
                    ""
                }
            )));
        }
        let features = feature_names.len();
        let mut inputs = Vec::with_capacity(rows * features);
        for r in 0..rows {
            for column in &parts {
                match column {
                    Column::Numeric(v) => inputs.push(v[r]),
                    Column::Categorical { levels, codes } => {
                        inputs.extend((0..levels.len()).map(|l| if codes[r] as usize == l { 1.0 } else { 0.0 }))
                    }
                }
            }
        }
        debug_assert!(columns.iter().all(|c| c.len() == rows));
        let label = |at: usize| LabelColumn { name: header[at].clone(), column: columns[at].clone() };
        Ok(Table {
            path: path.to_path_buf(),
            feature_names,
            numeric,
            inputs,
            target: label(target_at),
            protected: protected_at.map(label),
        })
    }

    pub fn rows(&self) -> usize {
        self.target.column.len()
    }

    pub fn features(&self) -> usize {
        self.feature_names.len()
    }

    /// Row `i`'s inputs.
    pub fn row(&self, i: usize) -> &[f64] {
        let f = self.features();
        &self.inputs[i * f..(i + 1) * f]
    }

    /// The table as a regression set (numeric target), with `splits` random train/test splits
    /// holding out `test_fraction` of the rows each: split `k` shuffles the rows with seed `k`,
    /// as the standard UCI splits do with theirs.
    ///
    /// # Errors
    /// A text target (regression needs numbers); a constant target; a test fraction outside
    /// (0, 1) or one that leaves an empty train or test part; `splits == 0`.
    pub fn regression(&self, splits: usize, test_fraction: f64) -> Result<UciDataset> {
        let targets = match &self.target.column {
            Column::Numeric(v) => v.clone(),
            Column::Categorical { levels, .. } => {
                return Err(DataError::format(
                    &self.path,
                    "CSV table",
                    format!(
                        "the target column '{}' holds text ({} values, e.g. '{}'); regression needs a numeric target",
                        self.target.name,
                        levels.len(),
                        levels[0]
                    ),
                ))
            }
        };
        if targets.iter().all(|&t| t == targets[0]) {
            return Err(DataError::format(
                &self.path,
                "CSV table",
                format!(
                    "the target column '{}' is {} in every row: there is nothing to regress",
                    self.target.name, targets[0]
                ),
            ));
        }
        if splits == 0 {
            return Err(DataError::invalid("splits", splits, "need at least one train/test split"));
        }
        if !(test_fraction > 0.0 && test_fraction < 1.0) {
            return Err(DataError::invalid("test_fraction", test_fraction, "must lie strictly between 0 and 1"));
        }
        let n = self.rows();
        let test_len = ((n as f64) * test_fraction).round() as usize;
        if test_len == 0 || test_len == n {
            return Err(DataError::invalid(
                "test_fraction",
                test_fraction,
                format!("with {n} rows it leaves an empty train or test part; the table needs more rows"),
            ));
        }
        let random_splits = (0..splits)
            .map(|k| {
                let mut order: Vec<usize> = (0..n).collect();
                order.shuffle(&mut ChaCha8Rng::seed_from_u64(k as u64));
                let (test, train) = order.split_at(test_len);
                let (mut train, mut test) = (train.to_vec(), test.to_vec());
                train.sort_unstable();
                test.sort_unstable();
                UciSplit { train, test }
            })
            .collect();
        let name = self.path.file_stem().map_or_else(|| "table".into(), |s| s.to_string_lossy().into_owned());
        Ok(UciDataset::in_memory(name, self.inputs.clone(), targets, self.features(), random_splits))
    }
}

impl Table {
    /// The table as a fairness problem in the shape of [`Adult`]: a two-valued target (class 1:
    /// the larger number, or the later text value in sorted order) and a two-valued protected
    /// column (already out of the inputs), rows split at random (`seed`) with `test_fraction` held
    /// out, numeric inputs standardised with the training rows' mean and standard deviation
    /// (one-hot inputs stay 0/1).
    ///
    /// # Errors
    /// No protected column; a target or protected column without exactly two values (the fix:
    /// recode it); a test fraction leaving either part without rows.
    pub fn fairness(&self, test_fraction: f64, seed: u64) -> Result<Adult> {
        let bad = |what: String| DataError::format(&self.path, "CSV table", what);
        let Some(protected) = &self.protected else {
            return Err(DataError::invalid("protected", "none", "a fairness audit needs --protected COLUMN"));
        };
        let two = |label: &LabelColumn, flag: &str| {
            label.binary().ok_or_else(|| {
                let values = match &label.column {
                    Column::Categorical { levels, .. } => format!("{} text values", levels.len()),
                    Column::Numeric(v) => {
                        let distinct: BTreeSet<u64> = v.iter().map(|x| x.to_bits()).collect();
                        format!("{} distinct numbers", distinct.len())
                    }
                };
                bad(format!(
                    "the {flag} column '{}' has {values}; it must have exactly two (recode it, e.g. income > 50K as \
                     1 and the rest as 0)",
                    label.name
                ))
            })
        };
        let (target, _) = two(&self.target, "--target")?;
        let (group, _) = two(protected, "--protected")?;
        if !(test_fraction > 0.0 && test_fraction < 1.0) {
            return Err(DataError::invalid("test_fraction", test_fraction, "must lie strictly between 0 and 1"));
        }
        let n = self.rows();
        let test_len = ((n as f64) * test_fraction).round() as usize;
        if test_len < 2 || n - test_len < 2 {
            return Err(DataError::invalid(
                "test_fraction",
                test_fraction,
                format!("with {n} rows it leaves fewer than 2 rows to train or to test on; the table needs more rows"),
            ));
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let (test_rows, train_rows) = order.split_at(test_len);
        let f = self.features();
        let moments: Vec<(f64, f64)> = (0..f)
            .map(|j| {
                if !self.numeric[j] {
                    return (0.0, 1.0);
                }
                let m = train_rows.len() as f64;
                let mean = train_rows.iter().map(|&r| self.row(r)[j]).sum::<f64>() / m;
                let var = train_rows.iter().map(|&r| (self.row(r)[j] - mean).powi(2)).sum::<f64>() / m;
                (mean, if var > 0.0 { var.sqrt() } else { 1.0 })
            })
            .collect();
        let encode = |rows: &[usize]| AdultSplit {
            features: rows
                .iter()
                .flat_map(|&r| self.row(r).iter().zip(&moments).map(|(x, (mean, sd))| ((x - mean) / sd) as f32))
                .collect(),
            target: rows.iter().map(|&r| target[r]).collect(),
            protected: rows.iter().map(|&r| group[r]).collect(),
        };
        Ok(Adult { train: encode(train_rows), test: encode(test_rows), feature_names: self.feature_names.clone() })
    }
}

/// Random train/test splits of a user's table: as many as the standard UCI splits have, and
/// their 90/10 proportion.
pub const USER_SPLITS: usize = 20;
/// Test share of each split of a user's table.
pub const USER_TEST_FRACTION: f64 = 0.1;

/// Where a regression set comes from: a standard UCI set under the papers' data root, or a
/// user's CSV table with its target column (split into [`USER_SPLITS`] seeded 90/10 splits).
#[derive(Debug, Clone, PartialEq)]
pub enum RegressionSource {
    /// `uci/<name>`: the folder `<root>/uci/<name>/` (only these need the data root).
    Uci(String),
    /// A CSV file and which column is the target.
    Csv { path: PathBuf, spec: TableSpec },
}

impl RegressionSource {
    /// The source as the commands name it: `uci/<name>`, or the path of a CSV file when `table`
    /// says which column is the target.
    ///
    /// # Errors
    /// A name that is neither (with the two forms it takes).
    pub fn parse(dataset: &str, table: Option<&TableSpec>) -> Result<Self> {
        match (table, dataset.strip_prefix("uci/")) {
            (Some(spec), _) => Ok(RegressionSource::Csv { path: PathBuf::from(dataset), spec: spec.clone() }),
            (None, Some(name)) if !name.is_empty() => Ok(RegressionSource::Uci(name.to_string())),
            _ => Err(DataError::invalid(
                "dataset",
                dataset,
                "expected uci/<name> (e.g. uci/yacht, a folder under the data root's uci/) or, for your own table, \
                 the path of a CSV file given with --data FILE --target COLUMN",
            )),
        }
    }

    /// The UCI set's name (`yacht`); `None` for a user's table.
    pub fn uci_name(&self) -> Option<&str> {
        match self {
            RegressionSource::Uci(name) => Some(name),
            RegressionSource::Csv { .. } => None,
        }
    }

    /// How reports name it: the UCI set's name, or the CSV file's path.
    pub fn label(&self) -> String {
        match self {
            RegressionSource::Uci(name) => name.clone(),
            RegressionSource::Csv { path, .. } => path.display().to_string(),
        }
    }

    /// The set with its splits (a UCI set's standard splits under `root`).
    pub fn load(&self, root: &crate::DataRoot) -> Result<UciDataset> {
        match self {
            RegressionSource::Uci(name) => UciDataset::load(root.dir()?, name),
            RegressionSource::Csv { path, spec } => {
                Table::read_csv(path, spec)?.regression(USER_SPLITS, USER_TEST_FRACTION)
            }
        }
    }
}

/// [`RegressionSource::parse`] then [`RegressionSource::load`]: a regression set named the way
/// the commands take it.
pub fn regression_set(root: &crate::DataRoot, dataset: &str, table: Option<&TableSpec>) -> Result<UciDataset> {
    RegressionSource::parse(dataset, table)?.load(root)
}

/// The largest magnitude a numeric cell may have: its square (1e300), and sums of many such
/// squares, stay within float64's range.
pub const LARGEST_MAGNITUDE: f64 = 1e150;

/// A column is numeric when every cell parses as a finite number, text otherwise; a column
/// mixing the two in a way that looks like a typo (mostly numbers) is refused.
fn parse_column(values: &[String], name: &str, path: &Path) -> Result<Column> {
    let parsed: Vec<Option<f64>> = values.iter().map(|v| v.parse::<f64>().ok()).collect();
    let numbers = parsed.iter().filter(|p| p.is_some()).count();
    if numbers == values.len() {
        if let Some(row) = parsed.iter().position(|p| !p.expect("all parsed").is_finite()) {
            return Err(DataError::format(
                path,
                "CSV table",
                format!(
                    "data row {} (line {}), column '{name}': '{}' is not a finite number; replace it or drop the row",
                    row + 1,
                    row + 2,
                    values[row]
                ),
            ));
        }
        let numbers: Vec<f64> = parsed.into_iter().map(|p| p.expect("all parsed")).collect();
        // Finite, but so large that squares (variances, kernels, losses) overflow: named as what
        // it is, here, rather than as a NaN or a "divergence" several steps later.
        let largest = (0..numbers.len()).max_by(|&a, &b| numbers[a].abs().total_cmp(&numbers[b].abs()));
        if let Some(row) = largest.filter(|&r| numbers[r].abs() > LARGEST_MAGNITUDE) {
            return Err(DataError::format(
                path,
                "CSV table",
                format!(
                    "column '{name}' holds {} (data row {}, line {}, its largest magnitude): finite, but so large \
                     that its square overflows float64 (every value must lie within ±1e150); rescale the column, \
                     e.g. divide it by a power of ten",
                    values[row],
                    row + 1,
                    row + 2
                ),
            ));
        }
        return Ok(Column::Numeric(numbers));
    }
    // Mostly numbers with a few words: a typo or a missing-value marker hedge does not know.
    if numbers * 10 >= values.len() * 9 {
        let row = parsed.iter().position(Option::is_none).expect("some text");
        return Err(DataError::format(
            path,
            "CSV table",
            format!(
                "data row {} (line {}), column '{name}': '{}' is not a number, though {numbers} of {} cells in this \
                 column are; fix the cell or drop the row",
                row + 1,
                row + 2,
                values[row],
                values.len()
            ),
        ));
    }
    let mut index: BTreeMap<&str, u32> = values.iter().map(|v| (v.as_str(), 0)).collect();
    for (i, code) in index.values_mut().enumerate() {
        *code = i as u32;
    }
    let codes = values.iter().map(|v| index[v.as_str()]).collect();
    Ok(Column::Categorical { levels: index.into_keys().map(str::to_string).collect(), codes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, spec: &TableSpec) -> Result<Table> {
        Table::parse_csv(text.as_bytes(), Path::new("t.csv"), spec)
    }

    #[test]
    fn numeric_and_text_columns_become_inputs_with_one_hot_levels() {
        let t = parse("a,colour,y\n1.5,red,10\n2,blue,20\n-3,red,30\n", &TableSpec::new("y")).unwrap();
        assert_eq!(t.feature_names, ["a", "colour=blue", "colour=red"]);
        assert_eq!(t.rows(), 3);
        assert_eq!(t.row(0), [1.5, 0.0, 1.0]);
        assert_eq!(t.row(1), [2.0, 1.0, 0.0]);
        assert_eq!(t.row(2), [-3.0, 0.0, 1.0]);
        assert_eq!(t.target.column, Column::Numeric(vec![10.0, 20.0, 30.0]));
    }

    #[test]
    fn protected_and_dropped_columns_are_not_inputs() {
        let spec = TableSpec::new("y").with_protected("sex").with_drop(["id"]);
        let t = parse("id,x,sex,y\n1,0.5,F,yes\n2,0.7,M,no\n3,0.1,F,no\n", &spec).unwrap();
        assert_eq!(t.feature_names, ["x"]);
        let (sex, levels) = t.protected.as_ref().unwrap().binary().unwrap();
        assert_eq!((sex, levels), (vec![0, 1, 0], ["F".to_string(), "M".to_string()]));
        let (y, _) = t.target.binary().unwrap();
        assert_eq!(y, [1, 0, 0]);
    }

    #[test]
    fn a_missing_value_is_refused_with_its_line_and_column() {
        let err = parse("a,b,y\n1,2,3\n4,,6\n", &TableSpec::new("y")).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("column 'b'") && err.contains("missing value"), "{err}");
        let err = parse("a,b,y\n1,NA,3\n", &TableSpec::new("y")).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("'NA'"), "{err}");
    }

    #[test]
    fn spreadsheet_exports_read_or_say_how_to_fix_them() {
        let t = parse("\u{feff}a,y\n1,2\n3,4\n", &TableSpec::new("y")).unwrap();
        assert_eq!(t.feature_names, ["a"], "the byte-order mark is not part of the first name");
        let err = parse("a;y\n1;2\n", &TableSpec::new("y")).unwrap_err().to_string();
        assert!(err.contains("';'") && err.contains("with commas"), "{err}");
    }

    #[test]
    fn bad_tables_name_what_is_wrong() {
        let cases: [(&str, TableSpec, &str); 7] = [
            ("a,b\n1,2\n", TableSpec::new("y"), "has no column 'y' (given as --target); its columns are: a, b"),
            ("a,y\n1,2\n3\n", TableSpec::new("y"), "line 3 has 1 cells, the header 2"),
            ("a,y\n1,inf\n", TableSpec::new("y"), "'inf' is not a finite number"),
            ("a,a,y\n1,2,3\n", TableSpec::new("y"), "two columns are named 'a'"),
            ("a,y\n", TableSpec::new("y"), "no data rows"),
            ("y\n1\n2\n", TableSpec::new("y"), "no input column is left"),
            (
                "a,y\n1,1\n2,1\n3,1\n4,1\n5,1\n6,1\n7,1\n8,1\n9,1\n1O,1\n",
                TableSpec::new("y"),
                "(line 11), column 'a': '1O' is not a number",
            ),
        ];
        for (text, spec, expected) in cases {
            let err = parse(text, &spec).unwrap_err().to_string();
            assert!(err.contains(expected) && err.contains("t.csv"), "{text:?}: {err}");
        }
    }

    #[test]
    fn regression_splits_are_seeded_disjoint_and_cover_every_row() {
        let mut text = String::from("x,y\n");
        for i in 0..50 {
            text.push_str(&format!("{i},{}\n", i * i));
        }
        let t = parse(&text, &TableSpec::new("y")).unwrap();
        let uci = t.regression(3, 0.2).unwrap();
        assert_eq!((uci.rows(), uci.features, uci.splits), (50, 1, 3));
        let s0 = uci.split(0).unwrap();
        assert_eq!((s0.train.len(), s0.test.len()), (40, 10));
        let mut all: Vec<usize> = s0.train.iter().chain(&s0.test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..50).collect::<Vec<_>>());
        assert_eq!(uci.split(0).unwrap(), s0, "a split is a pure function of its index");
        assert_ne!(uci.split(1).unwrap(), s0);
        assert!(uci.split(3).is_err());
        let text_target = parse("x,y\n1,a\n2,b\n", &TableSpec::new("y")).unwrap();
        assert!(text_target.regression(1, 0.5).unwrap_err().to_string().contains("needs a numeric target"));
    }

    #[test]
    fn a_fairness_split_standardises_numbers_on_training_rows_only() {
        let mut text = String::from("x,colour,sex,y\n");
        for i in 0..20 {
            text.push_str(&format!("{},{},{},{}\n", i * 2, ["red", "blue"][i % 2], ["F", "M"][i % 3 % 2], i % 2));
        }
        let t = parse(&text, &TableSpec::new("y").with_protected("sex")).unwrap();
        let a = t.fairness(0.25, 7).unwrap();
        assert_eq!((a.train.len(), a.test.len()), (15, 5));
        assert_eq!(a.feature_names, ["x", "colour=blue", "colour=red"]);
        let x: Vec<f64> = a.train.features.chunks(3).map(|r| r[0] as f64).collect();
        let mean = x.iter().sum::<f64>() / 15.0;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 15.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-5, "mean {mean}, var {var}");
        assert!(a.train.features.chunks(3).all(|r| r[1] + r[2] == 1.0), "one-hot inputs stay 0/1");
        // Row i has y = i % 2 and colour blue exactly when i is odd.
        assert!(a.train.features.chunks(3).zip(&a.train.target).all(|(r, &y)| (r[1] == 1.0) == (y == 1)));
        let no_group = parse(&text, &TableSpec::new("y")).unwrap();
        assert!(no_group.fairness(0.25, 7).unwrap_err().to_string().contains("--protected"));
        let three = parse("x,g,y\n1,a,0\n2,b,1\n3,c,0\n4,a,1\n", &TableSpec::new("y").with_protected("g")).unwrap();
        let err = three.fairness(0.5, 0).unwrap_err().to_string();
        assert!(err.contains("'g' has 3 text values") && err.contains("exactly two"), "{err}");
    }

    #[test]
    fn identifier_like_text_columns_are_refused() {
        let mut text = String::from("name,y\n");
        for i in 0..(MAX_LEVELS + 1) {
            text.push_str(&format!("person{i},{i}\n"));
        }
        let err = parse(&text, &TableSpec::new("y")).unwrap_err().to_string();
        assert!(err.contains("--drop 'name'"), "{err}");
    }
}

/// The flags by which every command takes a user's own table (`--data FILE --target COL`)
/// instead of one of the papers' datasets.
#[cfg(feature = "clap")]
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TableFlags {
    /// Your own table: a CSV file whose first row names the columns (instead of --dataset).
    /// Numeric columns are inputs as they are, text columns one-hot; a missing value is refused
    /// with its line and column.
    #[arg(long, requires = "target", value_name = "FILE.csv")]
    pub data: Option<PathBuf>,
    /// The column of --data to predict.
    #[arg(long, requires = "data", value_name = "COLUMN")]
    pub target: Option<String>,
    /// Columns of --data to leave out of the inputs (identifiers, leaks), comma-separated.
    #[arg(long, value_delimiter = ',', requires = "data", value_name = "COLUMNS")]
    pub drop: Vec<String>,
}

#[cfg(feature = "clap")]
impl TableFlags {
    /// The table's path (as the dataset name the libraries take) and its column roles; `None`
    /// without --data.
    pub fn spec(&self) -> Option<(String, TableSpec)> {
        let path = self.data.as_ref()?;
        // clap requires --target with --data; a struct built by hand without one names no column.
        let target = self.target.clone().unwrap_or_default();
        // Absolute, so that `--resume` from another folder finds the same file.
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        Some((path.display().to_string(), TableSpec::new(target).with_drop(self.drop.clone())))
    }

    /// The dataset a command names: the table of --data (with its column roles), or else
    /// `dataset` (`--dataset`), which the command's flags then require.
    ///
    /// # Errors
    /// Neither given (clap's `required_unless_present` makes this unreachable from a command line).
    pub fn or_dataset(&self, dataset: Option<&str>) -> Result<(String, Option<TableSpec>)> {
        match (self.spec(), dataset) {
            (Some((path, spec)), _) => Ok((path, Some(spec))),
            (None, Some(name)) => Ok((name.to_string(), None)),
            (None, None) => {
                Err(DataError::invalid("dataset", "none", "give --dataset NAME or --data FILE.csv --target COLUMN"))
            }
        }
    }
}
