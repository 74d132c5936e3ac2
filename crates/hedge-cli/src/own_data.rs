//! The flags by which every pillar takes a user's own table (`--data FILE --target COL`).

use std::path::PathBuf;

use clap::Args;
use hedge_data::TableSpec;

/// A user's table instead of one of the papers' datasets.
#[derive(Args, Clone, Debug, Default)]
pub struct TableArgs {
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

impl TableArgs {
    /// The table's path (as the dataset name the libraries take) and its column roles; `None`
    /// without --data.
    pub fn spec(&self) -> Option<(String, TableSpec)> {
        let path = self.data.as_ref()?;
        let target = self.target.clone().expect("clap requires --target with --data");
        // Absolute, so that `--resume` from another folder finds the same file.
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        Some((path.display().to_string(), TableSpec::new(target).with_drop(self.drop.clone())))
    }
}
