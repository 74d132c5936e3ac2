//! The value enums and flags `hedge hib` and `hedge hib reproduce` share (both modules import
//! them from here, so neither imports the other's).

use clap::{Args, ValueEnum};
use hedge_data::NDigitSplit;
use hedge_embed::{BatchComposition, LrSchedule, PairSet};
use serde::Serialize;

/// A test split on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum SplitArg {
    Test,
    TestSeen,
    TestUnseen,
}

impl From<SplitArg> for NDigitSplit {
    fn from(s: SplitArg) -> Self {
        match s {
            SplitArg::Test => NDigitSplit::Test,
            SplitArg::TestSeen => NDigitSplit::TestSeen,
            SplitArg::TestUnseen => NDigitSplit::TestUnseen,
        }
    }
}

/// `--device`: cpu, cuda, cuda:N or auto, parsed once by clap into the device every command
/// passes down (an unknown name or an absent GPU is refused with the usage line).
pub fn device(s: &str) -> Result<tch::Device, String> {
    hedge_embed::parse_device(s).map_err(|e| e.to_string())
}

/// The setting flags `hib train` and `hib reproduce` share, serialised under their names in
/// the config's serde form (`--lr` as `learning_rate`).
#[derive(Args, Serialize)]
pub struct SharedSettingFlags {
    /// Digits per image (N).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    digits: Option<usize>,
    /// Embedding dimension (D).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    dim: Option<usize>,
    /// Adam learning rate.
    #[arg(long)]
    #[serde(rename = "learning_rate", skip_serializing_if = "Option::is_none")]
    lr: Option<f64>,
    /// Learning-rate schedule: constant, cosine (decay to 0 at --steps) or step (÷10 at 1/2 and 3/4)
    /// [default: the recipe's, else constant].
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    lr_schedule: Option<LrSchedule>,
    /// How a step's pairs are drawn (--batch, --group, --all-pairs; default: the paper's 128
    /// independent pairs).
    #[command(flatten)]
    #[serde(flatten)]
    batch: BatchFlags,
}

/// The batch flags of `hib train` and `hib reproduce`, serialised as the config's batch fields: `--batch N` as
/// `batch = "independent"`, `batch_pairs = N`; `--group AxB` as `batch = "grouped"`,
/// `group_classes = A`, `group_size = B`; `--all-pairs` as `pair_set = "all"`.
#[derive(Args)]
struct BatchFlags {
    /// Pairs per step (two images each) of the paper's independent batches (replaces a
    /// config's grouped batches).
    #[arg(long, conflicts_with = "group")]
    batch: Option<usize>,
    /// Grouped batches instead of the paper's independent pairs: CLASSESxIMAGES (e.g. 32x8),
    /// scoring every within-class pair and as many cross-class ones.
    #[arg(long, value_name = "CLASSESxIMAGES", value_parser = group_shape)]
    group: Option<BatchComposition>,
    /// Score every pair of a grouped batch (matching and non-matching halves weighted 1/2).
    #[arg(long, requires = "group")]
    all_pairs: bool,
}

impl Serialize for BatchFlags {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if let Some(pairs) = self.batch {
            map.serialize_entry("batch", "independent")?;
            map.serialize_entry("batch_pairs", &pairs)?;
        }
        if let Some(BatchComposition::Grouped { classes, per_class }) = self.group {
            map.serialize_entry("batch", "grouped")?;
            map.serialize_entry("group_classes", &classes)?;
            map.serialize_entry("group_size", &per_class)?;
        }
        if self.all_pairs {
            map.serialize_entry("pair_set", &PairSet::All)?;
        }
        map.end()
    }
}

fn group_shape(spec: &str) -> std::result::Result<BatchComposition, String> {
    BatchComposition::parse_grouped(spec).map_err(|e| e.to_string())
}
