//! UCI Adult (census income) from `$HEDGE_DATA_DIR/adult/{adult.data, adult.test}`, encoded for
//! a fairness experiment: target = income > 50K, protected = sex (1 = Female, the group AIF360
//! calls unprivileged), and **sex removed from the inputs** (relationship and marital status
//! still carry it). Rows with a missing value (`?`) are dropped, as AIF360 does (30,162 train,
//! 15,060 test rows). Continuous columns are standardised with training statistics (capital gain
//! and loss after log1p); categorical columns are one-hot over the categories seen in training (an
//! unseen test category encodes as all zeros).

use std::path::Path;

use crate::datadir::{read_bytes, require_file};
use crate::{DataError, Result};

/// The 15 columns of the original files.
pub const COLUMNS: [&str; 15] = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
];

const CONTINUOUS: [usize; 6] = [0, 2, 4, 10, 11, 12];
const CATEGORICAL: [usize; 7] = [1, 3, 5, 6, 7, 8, 13];
const SEX: usize = 9;
const INCOME: usize = 14;

/// One encoded split.
#[derive(Debug, Clone, Default)]
pub struct AdultSplit {
    /// `[n, features]` row-major, f32.
    pub features: Vec<f32>,
    /// 1 when income > 50K.
    pub target: Vec<u8>,
    /// 1 = Female, 0 = Male (not among the features).
    pub protected: Vec<u8>,
}

impl AdultSplit {
    pub fn len(&self) -> usize {
        self.target.len()
    }

    pub fn is_empty(&self) -> bool {
        self.target.is_empty()
    }
}

/// Both splits and the names of the encoded features.
#[derive(Debug, Clone)]
pub struct Adult {
    pub train: AdultSplit,
    pub test: AdultSplit,
    pub feature_names: Vec<String>,
}

pub(crate) type Row = Vec<String>;

fn parse(path: &Path) -> Result<Vec<Row>> {
    require_file(path, "download adult.data and adult.test from UCI (see $HEDGE_DATA_DIR/adult/SOURCE.md)")?;
    parse_rows(read_bytes(path)?, path)
}

/// The complete rows of an Adult CSV file's bytes (`path` names it in errors; the fuzz
/// targets' entry).
pub(crate) fn parse_rows(bytes: Vec<u8>, path: &Path) -> Result<Vec<Row>> {
    let text = String::from_utf8(bytes).map_err(|_| DataError::format(path, "Adult CSV", "not UTF-8"))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        // adult.test opens with "|1x3 Cross validator"; both files end with a blank line.
        if line.is_empty() || line.starts_with('|') {
            continue;
        }
        let cells: Row = line.split(',').map(|c| c.trim().trim_end_matches('.').to_string()).collect();
        if cells.len() != COLUMNS.len() {
            return Err(DataError::format(
                path,
                "Adult CSV",
                format!("line {}: {} columns, expected {} ({})", i + 1, cells.len(), COLUMNS.len(), COLUMNS.join(", ")),
            ));
        }
        if cells.iter().any(|c| c == "?") {
            continue;
        }
        for &c in &CONTINUOUS {
            // Rust parses "nan" and "inf" as numbers; they would surface only as a diverged
            // training run far from the line that caused it.
            if !cells[c].parse::<f64>().is_ok_and(f64::is_finite) {
                return Err(DataError::format(
                    path,
                    "Adult CSV",
                    format!("line {}, column '{}': '{}' is not a finite number", i + 1, COLUMNS[c], cells[c]),
                ));
            }
        }
        if !matches!(cells[INCOME].as_str(), "<=50K" | ">50K") || !matches!(cells[SEX].as_str(), "Male" | "Female") {
            return Err(DataError::format(
                path,
                "Adult CSV",
                format!(
                    "line {}: income '{}' / sex '{}' not among <=50K, >50K / Male, Female",
                    i + 1,
                    cells[INCOME],
                    cells[SEX]
                ),
            ));
        }
        rows.push(cells);
    }
    if rows.is_empty() {
        return Err(DataError::format(path, "Adult CSV", "no complete rows"));
    }
    Ok(rows)
}

impl Adult {
    /// Loads and encodes `<dir>/adult.data` (train) and `<dir>/adult.test` (test).
    ///
    /// # Errors
    /// Missing files, rows without 15 columns, non-numeric continuous cells and unknown labels,
    /// each naming the file and line.
    pub fn load(dir: &Path) -> Result<Self> {
        let train_rows = parse(&dir.join("adult.data"))?;
        let test_rows = parse(&dir.join("adult.test"))?;
        let value = |row: &Row, c: usize| -> f64 {
            let v: f64 = row[c].parse().unwrap_or(0.0);
            if c == 10 || c == 11 {
                v.ln_1p()
            } else {
                v
            }
        };
        let n = train_rows.len() as f64;
        let moments: Vec<(f64, f64)> = CONTINUOUS
            .iter()
            .map(|&c| {
                let mean = train_rows.iter().map(|r| value(r, c)).sum::<f64>() / n;
                let var = train_rows.iter().map(|r| (value(r, c) - mean).powi(2)).sum::<f64>() / n;
                (mean, var.sqrt().max(1e-12))
            })
            .collect();
        let categories: Vec<Vec<String>> = CATEGORICAL
            .iter()
            .map(|&c| {
                let mut v: Vec<String> = train_rows.iter().map(|r| r[c].clone()).collect();
                v.sort();
                v.dedup();
                v
            })
            .collect();
        let mut feature_names: Vec<String> = CONTINUOUS.iter().map(|&c| COLUMNS[c].to_string()).collect();
        for (k, &c) in CATEGORICAL.iter().enumerate() {
            feature_names.extend(categories[k].iter().map(|v| format!("{}={v}", COLUMNS[c])));
        }
        let encode = |rows: &[Row]| -> AdultSplit {
            let mut split = AdultSplit::default();
            for row in rows {
                for (k, &c) in CONTINUOUS.iter().enumerate() {
                    split.features.push(((value(row, c) - moments[k].0) / moments[k].1) as f32);
                }
                for (k, &c) in CATEGORICAL.iter().enumerate() {
                    split.features.extend(categories[k].iter().map(|v| if *v == row[c] { 1.0f32 } else { 0.0 }));
                }
                split.target.push(u8::from(row[INCOME] == ">50K"));
                split.protected.push(u8::from(row[SEX] == "Female"));
            }
            split
        };
        Ok(Adult { train: encode(&train_rows), test: encode(&test_rows), feature_names })
    }

    pub fn features(&self) -> usize {
        self.feature_names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_rows_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let good = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n";
        std::fs::write(dir.path().join("adult.data"), format!("{good}{good}39, State-gov\n")).unwrap();
        std::fs::write(dir.path().join("adult.test"), good).unwrap();
        let e = Adult::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("adult.data") && e.contains("line 3") && e.contains("2 columns"), "{e}");
        std::fs::write(dir.path().join("adult.data"), good.replace("77516", "many")).unwrap();
        let e = Adult::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("fnlwgt") && e.contains("'many'"), "{e}");
        // NaN and infinity parse as f64; they used to reach training and read as divergence.
        for bad in ["nan", "inf", "-inf", "NaN"] {
            std::fs::write(dir.path().join("adult.data"), format!("{good}{}", good.replace("2174", bad))).unwrap();
            let e = Adult::load(dir.path()).unwrap_err().to_string();
            assert!(e.contains("adult.data") && e.contains("line 2") && e.contains("capital-gain"), "{e}");
        }
        std::fs::write(dir.path().join("adult.data"), good).unwrap();
        std::fs::remove_file(dir.path().join("adult.test")).unwrap();
        assert!(Adult::load(dir.path()).unwrap_err().to_string().contains("adult.test"));
    }
}
