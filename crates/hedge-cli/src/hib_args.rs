//! The value enums `hedge hib` and `hedge hib reproduce` share (both modules import them from
//! here, so neither imports the other's).

use clap::ValueEnum;
use hedge_data::NDigitSplit;

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
