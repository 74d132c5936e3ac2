//! The value enums `hedge hib` and `hedge hib reproduce` share (both modules import them from
//! here, so neither imports the other's).

use clap::ValueEnum;
use hedge_data::{NDigitProtocol, NDigitSplit};
use hedge_embed::{ConvPrecision, LrSchedule};

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

/// Which N-digit MNIST tables on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum ProtocolArg {
    /// The paper's tables: every class in training and in test, disjoint images.
    Instance,
    /// Test classes never seen in training (test_seen, test_unseen): hedge's extension.
    OpenSet,
}

impl From<ProtocolArg> for NDigitProtocol {
    fn from(p: ProtocolArg) -> Self {
        match p {
            ProtocolArg::Instance => NDigitProtocol::Instance,
            ProtocolArg::OpenSet => NDigitProtocol::OpenSet,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ScheduleArg {
    Constant,
    Cosine,
    /// Divided by 10 at half and at three quarters of the steps.
    Step,
}

impl From<ScheduleArg> for LrSchedule {
    fn from(s: ScheduleArg) -> Self {
        match s {
            ScheduleArg::Constant => LrSchedule::Constant,
            ScheduleArg::Cosine => LrSchedule::Cosine,
            ScheduleArg::Step => LrSchedule::Step,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PrecisionArg {
    Auto,
    F32,
    Bf16,
}

impl From<PrecisionArg> for ConvPrecision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::Auto => ConvPrecision::Auto,
            PrecisionArg::F32 => ConvPrecision::F32,
            PrecisionArg::Bf16 => ConvPrecision::Bf16,
        }
    }
}

/// `--device`: cpu, cuda, cuda:N or auto, parsed once by clap into the device every command
/// passes down (an unknown name or an absent GPU is refused with the usage line).
pub fn device(s: &str) -> Result<tch::Device, String> {
    hedge_embed::parse_device(s).map_err(|e| e.to_string())
}
