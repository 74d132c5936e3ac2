//! Hyper-parameters of a HIB model and its training, validated once through [`hedge_run::ParamGuard`] (`check_ref`, or `check` returning [`hedge_run::Checked`]).

use serde::{Deserialize, Serialize};

use crate::{EmbedError, Result};
use hedge_data::NDigitProtocol;
use hedge_run::ParamGuard;

/// What an input is embedded as, by name (reports and config files; [`EmbeddingKind`] holds
/// what each choice needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ModelKind {
    /// A point `z = f(x)` (Section 2.1).
    Point,
    /// One Gaussian with diagonal covariance (the paper's MoG-1).
    Gaussian,
    /// An equal-weight mixture of `components` diagonal Gaussians (MoG-C).
    Mog,
}

/// What an input is embedded as, with the settings only that choice has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "EmbeddingFields", into = "EmbeddingFields")]
pub enum EmbeddingKind {
    /// A point `z = f(x)` (Section 2.1).
    Point,
    /// One Gaussian with diagonal covariance (the paper's MoG-1).
    Gaussian,
    /// An equal-weight mixture of `components` diagonal Gaussians (MoG-C).
    Mixture { components: usize },
}

impl EmbeddingKind {
    /// The paper's MoG-2.
    pub const MOG2: EmbeddingKind = EmbeddingKind::Mixture { components: 2 };

    /// The name of this kind.
    pub fn kind(self) -> ModelKind {
        match self {
            EmbeddingKind::Point => ModelKind::Point,
            EmbeddingKind::Gaussian => ModelKind::Gaussian,
            EmbeddingKind::Mixture { .. } => ModelKind::Mog,
        }
    }

    /// Mixture components: 1 for a point and a Gaussian.
    pub fn components(self) -> usize {
        match self {
            EmbeddingKind::Mixture { components } => components,
            _ => 1,
        }
    }

    /// Whether inputs are embedded as distributions (with η and sampling).
    pub fn is_stochastic(self) -> bool {
        self != EmbeddingKind::Point
    }
}

/// The pair loss: a name registered in [`crate::losses::LOSSES`].
pub use crate::losses::LossKind;

/// Which digit images a run's validation images show (N-digit MNIST).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ValidationDigits {
    /// The held-out images as the table has them: new composites, but nearly all of their
    /// digit images recur in training composites (the table shows each digit image in several).
    #[default]
    Shared,
    /// The held-out images with every digit image redrawn, seeded by `validation_seed`, from the
    /// MNIST training digits no training image uses: new digits, as the test images have.
    Unused,
}

/// How the learning rate moves over training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LrSchedule {
    /// `learning_rate` throughout (the paper states no schedule).
    Constant,
    /// Half a cosine from `learning_rate` down to 0 at `steps`.
    Cosine,
    /// `learning_rate`, divided by 10 at half and again at three quarters of the steps (the
    /// step decay of ResNet-style schedules).
    Step,
}

impl LrSchedule {
    /// The learning rate of step `step` (0-based) of `steps`.
    pub fn at(self, base: f64, step: usize, steps: usize) -> f64 {
        match self {
            LrSchedule::Constant => base,
            LrSchedule::Cosine => 0.5 * base * (1.0 + (std::f64::consts::PI * step as f64 / steps.max(1) as f64).cos()),
            LrSchedule::Step => {
                let passed = [steps / 2, steps * 3 / 4].iter().filter(|&&milestone| step >= milestone).count();
                base * 0.1f64.powi(passed as i32)
            }
        }
    }
}

/// How a training batch is put together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "BatchFields", into = "BatchFields")]
pub enum BatchComposition {
    /// The paper's two-stream sampler: `pairs` independent pairs, half matching, each image
    /// used once (Section 2.3).
    Independent { pairs: usize },
    /// `classes` classes x `per_class` images; every within-class pair plus as many cross-class
    /// pairs are scored, so one step's images give `per_class − 1` times more pairs. Not in the
    /// paper; a lever on time-to-quality.
    Grouped { classes: usize, per_class: usize },
}

impl BatchComposition {
    /// Grouped batches of `spec` = "CLASSESxIMAGES" (e.g. "32x8").
    ///
    /// # Errors
    /// [`hedge_run::RunError::InvalidConfig`] naming `group` when `spec` is not two numbers around an `x`.
    pub fn parse_grouped(spec: &str) -> Result<BatchComposition> {
        let parsed = spec.split_once('x').and_then(|(p, k)| Some((p.trim().parse().ok()?, k.trim().parse().ok()?)));
        let Some((classes, per_class)) = parsed else {
            return Err(EmbedError::invalid("group", format!("'{spec}'"), "expected CLASSESxIMAGES, e.g. 32x8"));
        };
        Ok(BatchComposition::Grouped { classes, per_class })
    }

    /// Images per step.
    pub fn images(self) -> usize {
        match self {
            BatchComposition::Independent { pairs } => 2 * pairs,
            BatchComposition::Grouped { classes, per_class } => classes * per_class,
        }
    }
}

/// [`BatchComposition`] by name, as config files write it (`batch = "grouped"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum BatchKind {
    Independent,
    Grouped,
}

/// Which pairs of a grouped batch the loss scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairSet {
    /// Every within-class pair plus as many random cross-class pairs (half matching).
    Sampled,
    /// Every pair of the batch's images, matching and non-matching terms each weighted 1/2 (the
    /// balanced objective in expectation, with all `n(n − 1)/2` pairs instead of a sample).
    All,
}

/// Normalisation after each convolution of the trunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Norm {
    /// None (the paper's network).
    None,
    /// Batch normalisation (batch statistics in training, running averages at test time).
    Batch,
}

/// How the match head's offset b starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum MatchInit {
    /// `init_a`, `init_b`.
    Fixed,
    /// `init_a`, and b = a · (median distance between the first batch's pair means), so that
    /// p(m) starts at 1/2 where the untrained network puts a typical pair.
    FirstBatch,
}

/// Number format of the two convolutions (the trunk's bulk of arithmetic). The master weights,
/// the head, the losses and the optimiser always stay in f32; `bf16` casts the conv inputs and
/// weights as PyTorch's autocast would, which doubles training speed on CPUs with AVX512-BF16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ConvPrecision {
    /// `HEDGE_CONV_PRECISION` where set; else bf16 on CUDA and on CPUs with native bf16 dot
    /// products, f32 elsewhere.
    Auto,
    F32,
    Bf16,
}

/// The environment variable that decides what `auto` means: `f32`, `bf16` or `auto` (the CPU
/// decides). It forces a precision path where a config cannot be edited (the test suite's
/// fixtures, a notebook's defaults), on any CPU: `bf16` on a CPU without native bf16 runs the
/// casts and convolutions in software, slowly. An explicit `f32` or `bf16` in a config wins.
pub const CONV_PRECISION_ENV: &str = "HEDGE_CONV_PRECISION";

impl ConvPrecision {
    /// Replaces `Auto` by [`CONV_PRECISION_ENV`] where that is set, else by what this machine and
    /// device do best ([`ConvPrecision::for_hardware`]); `F32` and `Bf16` stay as they are.
    ///
    /// # Errors
    /// [`hedge_run::RunError::InvalidConfig`] when the environment variable holds anything but `f32`,
    /// `bf16` or `auto`.
    pub fn resolve(self, device: tch::Device) -> Result<ConvPrecision> {
        Ok(match self {
            ConvPrecision::Auto => forced_conv_precision()?.unwrap_or_else(|| ConvPrecision::for_hardware(device)),
            other => other,
        })
    }

    /// What `auto` means without [`CONV_PRECISION_ENV`]: bf16 on CUDA and on CPUs with native
    /// bf16 dot products, f32 elsewhere.
    pub fn for_hardware(device: tch::Device) -> ConvPrecision {
        if device.is_cuda() || cpu_has_native_bf16() {
            ConvPrecision::Bf16
        } else {
            ConvPrecision::F32
        }
    }
}

/// The precision [`CONV_PRECISION_ENV`] forces on `auto`, if it is set to one (`auto` or empty:
/// none).
///
/// # Errors
/// [`hedge_run::RunError::InvalidConfig`] naming the variable when it holds anything else.
pub fn forced_conv_precision() -> Result<Option<ConvPrecision>> {
    match std::env::var(CONV_PRECISION_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => parse_forced_conv_precision(&raw.to_string_lossy()),
        Ok(value) => parse_forced_conv_precision(&value),
    }
}

/// A value of [`CONV_PRECISION_ENV`]: `f32` or `bf16` force that path, `auto` or nothing force
/// none (case and surrounding spaces ignored).
///
/// # Errors
/// [`hedge_run::RunError::InvalidConfig`] naming the variable and the values it takes.
pub fn parse_forced_conv_precision(value: &str) -> Result<Option<ConvPrecision>> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(None),
        "f32" => Ok(Some(ConvPrecision::F32)),
        "bf16" => Ok(Some(ConvPrecision::Bf16)),
        _ => Err(EmbedError::invalid(
            CONV_PRECISION_ENV,
            format!("{value:?}"),
            "the environment variable takes f32, bf16 or auto (or unset it to let the CPU decide)",
        )),
    }
}

/// Whether the CPU has AVX512-BF16 or AMX-BF16 (bf16 slower than f32 without them) and
/// libtorch's convolutions may use them: oneDNN's `ONEDNN_MAX_CPU_ISA` (or `DNNL_MAX_CPU_ISA`)
/// set below `AVX512_CORE_BF16` (`AVX2`, `AVX512_CORE`, ...) caps them at an ISA that emulates
/// bf16, as on a CPU without it.
pub fn cpu_has_native_bf16() -> bool {
    let flags = std::fs::read_to_string("/proc/cpuinfo")
        .map(|info| {
            info.lines()
                .find(|l| l.starts_with("flags"))
                .is_some_and(|flags| flags.split_whitespace().any(|f| f == "avx512_bf16" || f == "amx_bf16"))
        })
        .unwrap_or(false);
    let cap = std::env::var("ONEDNN_MAX_CPU_ISA").or_else(|_| std::env::var("DNNL_MAX_CPU_ISA")).ok();
    flags && cap.is_none_or(|isa| onednn_isa_has_bf16(&isa))
}

/// Whether a value of `ONEDNN_MAX_CPU_ISA` admits native bf16 dot products: `ALL`, and the ISAs
/// from `AVX512_CORE_BF16` on (`AVX512_CORE_FP16`, the AMX ones, `AVX10_*`).
pub fn onednn_isa_has_bf16(isa: &str) -> bool {
    let isa = isa.trim().to_ascii_uppercase();
    isa == "ALL"
        || (isa.starts_with("AVX512_CORE_") && ["BF16", "FP16", "AMX"].iter().any(|k| isa.contains(k)))
        || isa.starts_with("AVX10")
}

/// Hyper-parameters of a HIB model and its training, in five sections (model, loss, optimiser,
/// data, schedule) and a seed.
///
/// Config files, `config.json` and overrides by name use one flat serde form: each section's
/// settings by their own names (`learning_rate = 3e-3`, `batch = "grouped"`), never the section's.
/// Absent names keep their defaults; an unknown name is refused with the list of known ones.
///
/// | name | section | default | purpose | range |
/// |---|---|---|---|---|
/// | `model` | model | gaussian | point, gaussian or mog | |
/// | `components` | model | 2 | mixture components C (mog only; gaussian is C = 1) | ≥ 1 |
/// | `dim` | model | 2 | embedding dimension D | ≥ 1 |
/// | `channels` | model | [32, 64] | widths of the two conv layers | ≥ 1 |
/// | `hidden_units` | model | 0 | a fully connected layer of this many units (ReLU) between the trunk and the head (0: none, the paper's "a fully connected layer mapping to D dimensions"; not in the paper) | |
/// | `norm` | model | none | none or batch normalisation after each convolution | |
/// | `dropout` | model | 0 | training only: dropout of the trunk's features before the head, with this probability (0: off, the paper's network; not in the paper) | [0, 1) |
/// | `min_variance` | model | 1e-6 | floor added to softplus variances | > 0 |
/// | `match_init` | model | fixed | fixed (`init_a`, `init_b`) or first_batch (b from the first batch) | |
/// | `init_a`, `init_b` | model | 1, 0 | initial soft-threshold scale a > 0 and offset b | |
/// | `conv_precision` | model | auto | f32, bf16, or auto (`HEDGE_CONV_PRECISION` where set, else bf16 where the hardware has it) | |
/// | `loss` | loss | soft | a name in [`crate::losses::LOSSES`] (`hib train --help` lists them) | each loss's own check: contrastive needs `model = point`; `pair_set = all` needs soft |
/// | `margin` | loss | 1.0 | contrastive margin M | > 0 |
/// | `beta` | loss | 1e-4 | weight of the KL term (Eq. 8) | ≥ 0 |
/// | `samples` | loss | 8 | Monte-Carlo samples K per input (Eq. 5) | ≥ 1, multiple of C |
/// | `learning_rate` | optimiser | 1e-3 | Adam step size | > 0 |
/// | `head_lr_scale` | optimiser | 1 | learning-rate multiplier of the match head's a and b | > 0 |
/// | `weight_decay` | optimiser | 0 | decoupled weight decay (AdamW) of the conv and head weights, per unit of learning rate (0: off, the paper's Adam; biases and the match head never decay) | ≥ 0, `weight_decay · learning_rate` < 1 |
/// | `ema_decay` | optimiser | 0 | decay of an exponential moving average of the weights, evaluated instead of them (0: off) | [0, 1) |
/// | `digits` | data | 2 | N of N-digit MNIST | 2 or 3 |
/// | `protocol` | data | instance | N-digit MNIST tables: instance (the paper's: every class in train and test) or open-set (test classes never trained on) | |
/// | `data` | data | none | a user's images instead of N-digit MNIST ([`OwnImages`]) | |
/// | `batch` | data | independent | independent (paper) or grouped batches | |
/// | `batch_pairs` | data | 128 | pairs per step (2x images), independent batches | ≥ 2 |
/// | `group_classes`, `group_size` | data | 32, 8 | classes per grouped batch, images per class | ≥ 2 |
/// | `pair_set` | data | sampled | grouped batches: sampled pairs or all pairs | |
/// | `occlusion_probability` | data | 0.2 | chance each training digit is occluded | [0, 1] |
/// | `recompose` | data | false | train on images made afresh each step from the training images' own digit images (a class's digits, other images of the same digits; not in the paper) | N-digit MNIST only |
/// | `digit_shift` | data | 0 | training images only: each digit image moved within its 28-pixel cell by up to this many pixels each way (rows and columns drawn uniformly), the space it leaves black (an augmentation; not in the paper) | ≤ 8, N-digit MNIST only |
/// | `validation_classes` | data | 0 | open-set: training classes held out (all their images) to choose models on unseen classes | leaves ≥ 2 |
/// | `validation_fraction` | data | 0 | share of every training class's images held out (seeded) to choose models on seen classes | [0, 0.5] |
/// | `validation_seed` | data | 0 | which classes or images are held out | |
/// | `validation_digits` | data | shared | the held-out images' own digit images, or new ones redrawn from the MNIST training digits no training image uses (unused; not in the paper) | unused: N-digit MNIST, with validation |
/// | `steps` | schedule | 20000 | optimiser steps | ≥ 1 |
/// | `lr_schedule` | schedule | constant | constant, cosine decay to 0, or step (÷10 at 1/2 and 3/4 of the steps) | |
/// | `warmup_steps` | schedule | 0 | linear warm-up from 0 before the schedule starts | < `steps` |
/// | `log_every` | schedule | 50 | steps between metrics lines | ≥ 1 |
/// | `checkpoint_every` | schedule | 1000 | steps between checkpoints | ≥ 1 |
/// | `seed` | | 0 | seed of data order, occlusions, initialisation and noise | |
///
/// (`model` with `components`, and `batch` with `batch_pairs` or `group_classes` and
/// `group_size`, are [`EmbeddingKind`] and [`BatchComposition`] in the struct, so a setting
/// exists only where it applies; a file carries the settings of the choices not taken with their
/// defaults, and they are ignored.)
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Map<String, serde_json::Value>")]
pub struct HibConfig {
    #[serde(flatten)]
    pub model: ModelSettings,
    #[serde(flatten)]
    pub loss: LossSettings,
    #[serde(flatten)]
    pub optimiser: OptimiserSettings,
    #[serde(flatten)]
    pub data: DataSettings,
    #[serde(flatten)]
    pub schedule: ScheduleSettings,
    pub seed: u64,
}

/// The network, and what it embeds an input as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSettings {
    /// `model` and `components` in the serde form.
    #[serde(flatten)]
    pub embedding: EmbeddingKind,
    pub dim: usize,
    pub channels: [usize; 2],
    /// Units of the fully connected layer between the trunk and the head (0: none).
    pub hidden_units: usize,
    pub norm: Norm,
    /// Dropout probability of the trunk's features while training ([`crate::HibNet::forward_t`]).
    pub dropout: f64,
    pub min_variance: f64,
    pub match_init: MatchInit,
    pub init_a: f64,
    pub init_b: f64,
    pub conv_precision: ConvPrecision,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            embedding: EmbeddingKind::Gaussian,
            dim: 2,
            channels: [32, 64],
            hidden_units: 0,
            norm: Norm::None,
            dropout: 0.0,
            min_variance: 1e-6,
            match_init: MatchInit::Fixed,
            init_a: 1.0,
            init_b: 0.0,
            conv_precision: ConvPrecision::Auto,
        }
    }
}

/// The pair loss and the variational bottleneck.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LossSettings {
    /// `loss` in the serde form.
    #[serde(rename = "loss")]
    pub kind: LossKind,
    pub margin: f64,
    pub beta: f64,
    pub samples: usize,
}

impl Default for LossSettings {
    fn default() -> Self {
        LossSettings { kind: LossKind::SOFT, margin: 1.0, beta: 1e-4, samples: 8 }
    }
}

/// The optimiser's step sizes, weight decay and weight average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OptimiserSettings {
    pub learning_rate: f64,
    pub head_lr_scale: f64,
    /// Decoupled weight decay ([`crate::optim::Adam::set_weight_decay`]); 0 is the paper's plain Adam.
    pub weight_decay: f64,
    pub ema_decay: f64,
}

impl Default for OptimiserSettings {
    fn default() -> Self {
        OptimiserSettings { learning_rate: 1e-3, head_lr_scale: 1.0, weight_decay: 0.0, ema_decay: 0.0 }
    }
}

/// What the network trains and is evaluated on, and how batches are drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DataSettings {
    pub digits: usize,
    /// Which N-digit MNIST tables (open-set with `own_images`, whose unseen classes are held
    /// out; [`HibConfig::from_toml`] reads an absent one in a recipe with images as open-set).
    pub protocol: NDigitProtocol,
    /// A user's images instead of N-digit MNIST (`None`: N-digit MNIST with `digits` digits);
    /// `data` in the serde form.
    #[serde(rename = "data", skip_serializing_if = "Option::is_none")]
    pub own_images: Option<OwnImages>,
    /// `batch`, `batch_pairs`, `group_classes` and `group_size` in the serde form.
    #[serde(flatten)]
    pub batch: BatchComposition,
    pub pair_set: PairSet,
    pub occlusion_probability: f64,
    /// Train on images recomposed each step from the training split's digit images
    /// ([`hedge_data::ImageDataset::render_recomposed_batch`]) instead of the table's own.
    pub recompose: bool,
    /// Pixels each training digit image may move each way ([`hedge_data::ImageDataset::render_training_batch`]).
    pub digit_shift: usize,
    pub validation_classes: usize,
    pub validation_fraction: f64,
    pub validation_seed: u64,
    pub validation_digits: ValidationDigits,
}

impl Default for DataSettings {
    fn default() -> Self {
        DataSettings {
            digits: 2,
            protocol: NDigitProtocol::Instance,
            own_images: None,
            batch: BatchComposition::Independent { pairs: DEFAULT_BATCH_PAIRS },
            pair_set: PairSet::Sampled,
            occlusion_probability: 0.2,
            recompose: false,
            digit_shift: 0,
            validation_classes: 0,
            validation_fraction: 0.0,
            validation_seed: 0,
            validation_digits: ValidationDigits::Shared,
        }
    }
}

/// How long training runs, its learning-rate schedule, and how often it logs and checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScheduleSettings {
    pub steps: usize,
    pub lr_schedule: LrSchedule,
    pub warmup_steps: usize,
    pub log_every: usize,
    pub checkpoint_every: usize,
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        ScheduleSettings {
            steps: 20_000,
            lr_schedule: LrSchedule::Constant,
            warmup_steps: 0,
            log_every: 50,
            checkpoint_every: 1000,
        }
    }
}

/// The serde form of [`EmbeddingKind`]: `model` by name, and `components` (used by `mog` only).
#[derive(Serialize, Deserialize)]
#[serde(default)]
struct EmbeddingFields {
    model: ModelKind,
    components: usize,
}

impl Default for EmbeddingFields {
    fn default() -> Self {
        EmbeddingKind::Gaussian.into()
    }
}

impl From<EmbeddingFields> for EmbeddingKind {
    fn from(f: EmbeddingFields) -> Self {
        match f.model {
            ModelKind::Point => EmbeddingKind::Point,
            ModelKind::Gaussian => EmbeddingKind::Gaussian,
            ModelKind::Mog => EmbeddingKind::Mixture { components: f.components },
        }
    }
}

impl From<EmbeddingKind> for EmbeddingFields {
    fn from(e: EmbeddingKind) -> Self {
        let components = match e {
            EmbeddingKind::Mixture { components } => components,
            _ => DEFAULT_COMPONENTS,
        };
        EmbeddingFields { model: e.kind(), components }
    }
}

/// The serde form of [`BatchComposition`]: `batch` by name, `batch_pairs` (independent) and
/// `group_classes`, `group_size` (grouped).
#[derive(Serialize, Deserialize)]
#[serde(default)]
struct BatchFields {
    batch: BatchKind,
    batch_pairs: usize,
    group_classes: usize,
    group_size: usize,
}

impl Default for BatchFields {
    fn default() -> Self {
        BatchComposition::Independent { pairs: DEFAULT_BATCH_PAIRS }.into()
    }
}

impl From<BatchFields> for BatchComposition {
    fn from(f: BatchFields) -> Self {
        match f.batch {
            BatchKind::Independent => BatchComposition::Independent { pairs: f.batch_pairs },
            BatchKind::Grouped => BatchComposition::Grouped { classes: f.group_classes, per_class: f.group_size },
        }
    }
}

impl From<BatchComposition> for BatchFields {
    fn from(b: BatchComposition) -> Self {
        let (pairs, (classes, per_class)) = (DEFAULT_BATCH_PAIRS, DEFAULT_GROUP);
        match b {
            BatchComposition::Independent { pairs } => BatchFields {
                batch: BatchKind::Independent,
                batch_pairs: pairs,
                group_classes: classes,
                group_size: per_class,
            },
            BatchComposition::Grouped { classes, per_class } => BatchFields {
                batch: BatchKind::Grouped,
                batch_pairs: pairs,
                group_classes: classes,
                group_size: per_class,
            },
        }
    }
}

/// The flat form read: every name known, then each section from the names it owns. serde's
/// `flatten` reports a wrongly typed value without its name, so a failing read is retried one
/// name at a time over the defaults to name it.
impl TryFrom<serde_json::Map<String, serde_json::Value>> for HibConfig {
    type Error = String;

    fn try_from(form: serde_json::Map<String, serde_json::Value>) -> std::result::Result<Self, String> {
        let known = HibConfig::setting_names();
        let unknown: Vec<&str> = form.keys().map(String::as_str).filter(|k| !known.iter().any(|n| n == k)).collect();
        if !unknown.is_empty() {
            return Err(format!(
                "unknown field{} {}, expected one of {}",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
                known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        fn read(form: &serde_json::Map<String, serde_json::Value>) -> serde_json::Result<HibConfig> {
            let value = serde_json::Value::Object(form.clone());
            Ok(HibConfig {
                model: serde_json::from_value(value.clone())?,
                loss: serde_json::from_value(value.clone())?,
                optimiser: serde_json::from_value(value.clone())?,
                data: serde_json::from_value(value.clone())?,
                schedule: serde_json::from_value(value)?,
                seed: form.get("seed").map(|s| serde_json::from_value(s.clone())).transpose()?.unwrap_or_default(),
            })
        }
        read(&form).map_err(|e| {
            let culprit = form.iter().find(|(name, value)| {
                read(&serde_json::Map::from_iter([((*name).clone(), (*value).clone())])).is_err()
            });
            match culprit {
                Some((name, _)) => format!("field `{name}`: {e}"),
                None => e.to_string(),
            }
        })
    }
}

/// A user's image set ([`hedge_data::ImageSet`]) and how it is split: whole classes held out as
/// unseen (the test of identities never trained on), and a share of each remaining class's images
/// held out as the seen-class test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnImages {
    /// The image folder or `.npz` (absolute, so a resumed run finds it from anywhere).
    pub path: std::path::PathBuf,
    /// `[channels, height, width]` of its images, recorded when the run was made.
    pub shape: [usize; 3],
    /// Classes held out as `test_unseen`.
    pub unseen_classes: usize,
    /// Share of each seen class's images held out as `test_seen`.
    pub seen_test_fraction: f64,
    /// Seed of both splits.
    pub split_seed: u64,
}

/// How long a run trains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Steps {
    /// Exactly this many optimiser steps (a plan's budget, if it has one, may stop them sooner).
    Fixed(usize),
    /// This many minutes of training wall-clock (evaluation excluded): the step count is
    /// planned from the speed of the first steps, so that schedules end on time.
    Budget { minutes: f64 },
}

impl Steps {
    /// The length `--steps` and `--budget-minutes` ask for: the steps when given (a budget
    /// beside them only caps the wall-clock), else the budget, else `default` steps.
    pub fn from_flags(steps: Option<usize>, budget_minutes: Option<f64>, default: usize) -> Steps {
        match (steps, budget_minutes) {
            (Some(n), _) => Steps::Fixed(n),
            (None, Some(minutes)) => Steps::Budget { minutes },
            (None, None) => Steps::Fixed(default),
        }
    }
}

/// `steps` of a budgeted run until its first steps have been timed: large enough that the
/// schedule's position is its start (the trainer replaces it by the planned count). Only
/// [`HibConfig::with_training`] writes it and only [`HibConfig::steps_planned`] reads it.
const UNPLANNED_STEPS: usize = 100_000_000;

/// Defaults of the settings that belong to one choice (a mixture's `components`, an
/// independent batch's pairs, a grouped batch's shape); a config file carries them for the
/// choices not taken.
const DEFAULT_COMPONENTS: usize = 2;
const DEFAULT_BATCH_PAIRS: usize = 128;
const DEFAULT_GROUP: (usize, usize) = (32, 8);

/// The largest `digit_shift` accepted (MNIST sets each digit's 20 x 20 box 4 pixels from its cell's
/// edges: a shift of 8 already cuts ink off).
const MAX_DIGIT_SHIFT: usize = 8;

macro_rules! with {
    ($($name:ident: $($field:ident).+: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets `", stringify!($($field).+), "`.")]
            pub fn $name(mut self, value: $ty) -> Self {
                self.$($field).+ = value;
                self
            }
        )*
    };
}

impl HibConfig {
    with!(
        with_model: model.embedding: EmbeddingKind,
        with_dim: model.dim: usize,
        with_channels: model.channels: [usize; 2],
        with_hidden_units: model.hidden_units: usize,
        with_norm: model.norm: Norm,
        with_dropout: model.dropout: f64,
        with_min_variance: model.min_variance: f64,
        with_match_init: model.match_init: MatchInit,
        with_conv_precision: model.conv_precision: ConvPrecision,
        with_loss: loss.kind: LossKind,
        with_margin: loss.margin: f64,
        with_beta: loss.beta: f64,
        with_samples: loss.samples: usize,
        with_learning_rate: optimiser.learning_rate: f64,
        with_head_lr_scale: optimiser.head_lr_scale: f64,
        with_weight_decay: optimiser.weight_decay: f64,
        with_ema_decay: optimiser.ema_decay: f64,
        with_digits: data.digits: usize,
        with_protocol: data.protocol: NDigitProtocol,
        with_batch: data.batch: BatchComposition,
        with_pair_set: data.pair_set: PairSet,
        with_occlusion_probability: data.occlusion_probability: f64,
        with_recompose: data.recompose: bool,
        with_digit_shift: data.digit_shift: usize,
        with_validation_classes: data.validation_classes: usize,
        with_validation_fraction: data.validation_fraction: f64,
        with_validation_seed: data.validation_seed: u64,
        with_validation_digits: data.validation_digits: ValidationDigits,
        with_steps: schedule.steps: usize,
        with_lr_schedule: schedule.lr_schedule: LrSchedule,
        with_warmup_steps: schedule.warmup_steps: usize,
        with_log_every: schedule.log_every: usize,
        with_checkpoint_every: schedule.checkpoint_every: usize,
        with_seed: seed: u64,
    );

    /// The names of the serde form, each setting's own (`learning_rate`, `batch`, `data`, …):
    /// what config files, `config.json` and overrides may name.
    pub fn setting_names() -> Vec<String> {
        let mut names = match serde_json::to_value(HibConfig::default()) {
            Ok(serde_json::Value::Object(form)) => form.keys().cloned().collect(),
            _ => Vec::new(),
        };
        // Written only when set.
        names.push("data".to_string());
        names
    }

    /// Sets `data.own_images` (a user's images instead of N-digit MNIST), whose split holds
    /// unseen classes out: the protocol becomes open-set.
    pub fn with_data(mut self, data: OwnImages) -> Self {
        self.data.own_images = Some(data);
        self.data.protocol = NDigitProtocol::OpenSet;
        self
    }

    /// Sets how long the run trains: `Fixed(n)` steps, or a `Budget` whose step count the
    /// trainer plans from the speed of the first steps (the plan's `budget_minutes` says how
    /// many minutes; [`HibConfig::steps_planned`] is false until then).
    pub fn with_training(mut self, steps: Steps) -> Self {
        self.schedule.steps = match steps {
            Steps::Fixed(n) => n,
            Steps::Budget { .. } => UNPLANNED_STEPS,
        };
        self
    }

    /// Whether `steps` is a step count (given, or planned from a budget's first steps), not a
    /// budget still to be planned.
    pub fn steps_planned(&self) -> bool {
        self.schedule.steps != UNPLANNED_STEPS
    }

    /// A config file's text (TOML, any [`HibConfig`] settings by name; the others keep their
    /// defaults). A file that names no `protocol` is the paper's, `instance` (a run's
    /// `config.json` without one predates protocols and is open-set).
    ///
    /// # Errors
    /// [`hedge_run::RunError::InvalidConfig`] with the parser's message (line, column), or
    /// naming the setting and its line.
    pub fn from_toml(text: &str) -> Result<Self> {
        let invalid = |why: String| EmbedError::invalid("config", "TOML", why);
        let table: toml::Table = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let form = match serde_json::to_value(&table) {
            Ok(serde_json::Value::Object(form)) => form,
            _ => return Err(invalid("not a table of settings".into())),
        };
        let named_protocol = form.contains_key("protocol");
        let mut config = HibConfig::try_from(form).map_err(|why| {
            // The line of the setting the message names, as the TOML parser would give it.
            let line = why.strip_prefix("field `").and_then(|rest| rest.split_once('`')).and_then(|(name, _)| {
                text.lines()
                    .position(|l| l.trim_start().strip_prefix(name).is_some_and(|r| r.trim_start().starts_with('=')))
            });
            match line {
                Some(line) => invalid(format!("line {}: {why}", line + 1)),
                None => invalid(why),
            }
        })?;
        // A user's images are split with unseen classes held out, which is the open-set protocol.
        if !named_protocol && config.data.own_images.is_some() {
            config.data.protocol = NDigitProtocol::OpenSet;
        }
        Ok(config)
    }

    /// A recipe file: [`HibConfig::from_toml`] of the file at `path`, every command's one way to
    /// read `--config`.
    ///
    /// # Errors
    /// [`EmbedError::Io`] naming the file when it cannot be read; [`hedge_run::RunError::InvalidConfig`]
    /// naming it, with the parser's line, column and field, when it is not a HIB recipe.
    pub fn from_toml_file(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| EmbedError::io(path, e))?;
        Self::from_toml(&text).map_err(|e| {
            let why = match e {
                EmbedError::Files(hedge_run::RunError::InvalidConfig { reason, .. }) => reason,
                other => other.to_string(),
            };
            EmbedError::invalid("config", path.display(), format!("not a HIB recipe (TOML of HibConfig fields): {why}"))
        })
    }

    /// `[channels, height, width]` of the network's input: N-digit MNIST's `[1, 28, 28N]`, or
    /// the user's images'.
    pub fn input_shape(&self) -> [usize; 3] {
        self.data.own_images.as_ref().map_or([1, 28, 28 * self.data.digits], |d| d.shape)
    }

    /// Cells of each channel of the trunk's output: the "same" convolutions keep the image's
    /// size and each of the two 2 × 2 max-pools floors it by half. The hidden layer (or the
    /// head) reads this many cells of each of the second convolution's channels.
    pub fn pooled_cells(&self) -> usize {
        let [_, h, w] = self.input_shape();
        (h / 4) * (w / 4)
    }

    /// Mixture components: 1 for point and Gaussian models.
    pub fn effective_components(&self) -> usize {
        self.model.embedding.components()
    }

    /// Pairs one training step scores.
    pub fn pairs_per_step(&self) -> usize {
        match (self.data.batch, self.data.pair_set) {
            (BatchComposition::Independent { pairs }, _) => pairs,
            (BatchComposition::Grouped { classes, per_class }, PairSet::Sampled) => {
                classes.saturating_mul(per_class).saturating_mul(per_class.saturating_sub(1))
            }
            (BatchComposition::Grouped { classes, per_class }, PairSet::All) => {
                let images = classes.saturating_mul(per_class);
                images.saturating_mul(images.saturating_sub(1)) / 2
            }
        }
    }

    /// Estimated multiply–adds of one training step, forward and backward (about three times the
    /// forward): the two 5 × 5 convolutions of every image (and its hidden layer, if any) and the
    /// Monte-Carlo sample pairs of every pair. What [`hedge_run::Workload`]s of whole trainings count.
    pub fn step_operations(&self) -> f64 {
        let [c, h, w] = self.input_shape().map(|v| v as f64);
        let (c1, c2) = (self.model.channels[0] as f64, self.model.channels[1] as f64);
        let features = c2 * self.pooled_cells() as f64;
        let per_image = 25.0 * (c * c1 * h * w + c1 * c2 * h * w / 4.0) + features * self.model.hidden_units as f64;
        let k = self.effective_samples() as f64;
        3.0 * (self.data.batch.images() as f64 * per_image
            + self.pairs_per_step() as f64 * k * k * (2.0 * self.model.dim as f64 + 8.0))
    }

    /// Estimated bytes of one training step's Monte-Carlo tensors: per pair K² sample pairs,
    /// each with D differences, their squares and about eight scalars (distance, logit, two
    /// log-sigmoids and their intermediates), in f32, about doubled by what autograd keeps for
    /// the backward pass. Part of [`Self::step_footprint`].
    pub fn mc_bytes_per_step(&self) -> u128 {
        let k = self.effective_samples() as u128;
        let per_sample_pair = 2 * self.model.dim as u128 + 8;
        self.pairs_per_step() as u128 * k * k * per_sample_pair * 4 * 2
    }

    /// The memory one training step takes, as a function of the numbers a user sets (batch,
    /// samples, dim, components, channels, hidden units), checked against hedge's memory budget by
    /// [`ParamGuard::check_ref`]: the images' activations (input, two convolutions with what
    /// their activation and pooling keep, in f32; measured: peak memory of `hib train` on 2-digit
    /// MNIST, f32, grows by 633 KB per image from 128 to 4,096 images a step, where this counts
    /// 1.0 MB, a margin for other shapes and precisions), the
    /// parameters with their gradients and Adam moments (x 4, x 5 with a weight average) and the
    /// Monte-Carlo tensors ([`Self::mc_bytes_per_step`]).
    pub fn step_footprint(&self) -> hedge_run::Footprint<'_> {
        let [c, h, w] = self.input_shape().map(|v| v as f64);
        let (hw, features) = (h * w, self.pooled_cells() as f64);
        let stochastic = self.model.embedding != EmbeddingKind::Point;
        let copies = if self.optimiser.ema_decay > 0.0 { 5.0 } else { 4.0 };
        let bytes = move |config: &HibConfig, v: &[f64]| {
            let [batch_a, batch_b, samples, dim, components, c1, c2, hidden] =
                [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
            let (images, pairs) = match (config.data.batch, config.data.pair_set) {
                (BatchComposition::Independent { .. }, _) => (2.0 * batch_a, batch_a),
                (BatchComposition::Grouped { .. }, PairSet::Sampled) => {
                    (batch_a * batch_b, batch_a * batch_b * (batch_b - 1.0))
                }
                (BatchComposition::Grouped { .. }, PairSet::All) => {
                    let n = batch_a * batch_b;
                    (n, n * (n - 1.0) / 2.0)
                }
            };
            let per_image =
                c * hw + 3.0 * c1 * hw + c1 * hw / 4.0 + 3.0 * c2 * hw / 4.0 + 2.0 * c2 * features + 2.0 * hidden;
            let outputs = if stochastic { components * 2.0 * dim } else { dim };
            // The head reads the hidden layer's units where there is one, the trunk's features
            // otherwise; counting both keeps the bytes growing with every knob.
            let parameters = 25.0 * (c * c1 + c1 * c2) + c2 * features * hidden + (c2 * features + hidden) * outputs;
            let k = if stochastic { samples } else { 1.0 };
            images * per_image * 4.0 + parameters * 4.0 * copies + pairs * k * k * (2.0 * dim + 8.0) * 4.0 * 2.0
        };
        let (batch_a, batch_b, flag_a) = match self.data.batch {
            BatchComposition::Independent { pairs } => (pairs, 1, "--batch (pairs)"),
            BatchComposition::Grouped { classes, per_class } => (classes, per_class, "--group CLASSES"),
        };
        let mut footprint = hedge_run::Footprint::new("hib train: one training step", move |v| bytes(self, v)).knob(
            flag_a,
            batch_a as f64,
            2.0,
        );
        footprint = if matches!(self.data.batch, BatchComposition::Grouped { .. }) {
            footprint.knob("--group IMAGES", batch_b as f64, 2.0)
        } else {
            footprint.knob("", 1.0, 1.0)
        };
        footprint = footprint
            .knob("--samples", self.effective_samples() as f64, 1.0)
            .knob("--dim", self.model.dim as f64, 1.0)
            .knob("--components", self.effective_components() as f64, 1.0)
            .knob("channels[0]", self.model.channels[0] as f64, 1.0)
            .knob("channels[1]", self.model.channels[1] as f64, 1.0)
            .knob("--hidden-units", self.model.hidden_units as f64, 1.0);
        footprint
    }

    /// What the pair loss reads of these settings.
    pub fn loss_params(&self) -> crate::pair_loss::LossParams {
        crate::pair_loss::LossParams {
            name: self.loss.kind.name(),
            samples: self.effective_samples(),
            beta: self.loss.beta,
            margin: self.loss.margin,
            stochastic: self.model.embedding != EmbeddingKind::Point,
            all_pairs: self.data.pair_set == PairSet::All,
        }
    }

    /// Monte-Carlo samples actually drawn: 1 for a point embedding (it is its own sample).
    pub fn effective_samples(&self) -> usize {
        match self.model.embedding {
            EmbeddingKind::Point => 1,
            _ => self.loss.samples,
        }
    }

    /// The learning rate of step `step` (0-based): a linear warm-up over `warmup_steps`, then
    /// `lr_schedule` over the remaining steps.
    pub fn learning_rate_at(&self, step: usize) -> f64 {
        if step < self.schedule.warmup_steps {
            return self.optimiser.learning_rate * (step + 1) as f64 / self.schedule.warmup_steps as f64;
        }
        self.schedule.lr_schedule.at(
            self.optimiser.learning_rate,
            step - self.schedule.warmup_steps,
            self.schedule.steps.saturating_sub(self.schedule.warmup_steps),
        )
    }
}

/// Fuzz target for config files: the bytes through the TOML parser and [`ParamGuard::check_ref`];
/// `true` when both accept them. Driven by [`hedge_data::fuzz::fuzz_fn`].
pub fn fuzz_config_file(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else { return false };
    HibConfig::from_toml(text).is_ok_and(|c| c.check_ref().is_ok())
}

/// Valid config files to start fuzzing from: the tables' recipe and the fields a user sets most.
pub fn config_fuzz_seeds() -> Vec<Vec<u8>> {
    [
        "model = \"gaussian\"\nbatch = \"grouped\"\ngroup_classes = 32\ngroup_size = 8\nlearning_rate = 0.001\n\
         lr_schedule = \"constant\"\nprotocol = \"open-set\"\nvalidation_classes = 10\n",
        "model = \"gaussian\"\nbatch = \"grouped\"\nlearning_rate = 0.003\nwarmup_steps = 200\n\
         lr_schedule = \"cosine\"\nvalidation_fraction = 0.05\n",
        "model = \"mog\"\ncomponents = 2\nsamples = 8\ndim = 3\nbeta = 0.0001\nsteps = 4000\n",
        "model = \"point\"\nloss = \"contrastive\"\nmargin = 1.0\nbatch_pairs = 64\ndigits = 3\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// The largest embedding dimension accepted: the paper uses 2 and 3, metric-learning
/// embeddings rarely exceed 512, and `--dim 100000000` made libtorch panic.
pub const MAX_DIM: usize = 4096;
/// The largest |b| accepted for the match offset: sigmoid saturates in f32 past about ±17, so
/// ±100 leaves every sensible start and refuses the absurd.
pub const MAX_INIT_B: f64 = 100.0;
/// The most mixture components accepted (the paper: 1 and 2).
pub const MAX_COMPONENTS: usize = 256;

impl ParamGuard for HibConfig {
    type Error = EmbedError;

    /// Validates every hyper-parameter; call once before building a model.
    ///
    /// # Errors
    /// [`hedge_run::RunError::InvalidConfig`] naming the field, its value and what it may be.
    fn check_ref(&self) -> Result<()> {
        if self.model.conv_precision == ConvPrecision::Auto {
            // Refused here, once, rather than where the network is built.
            forced_conv_precision()?;
        }
        fn fail(field: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> Result<()> {
            Err(EmbedError::invalid(field, value, reason))
        }
        match &self.data.own_images {
            None if !(2..=3).contains(&self.data.digits) => {
                return fail("digits", self.data.digits, "N-digit MNIST has standard tables for 2 and 3");
            }
            None => {}
            Some(own) => {
                let [c, h, w] = own.shape;
                if !(c == 1 || c == 3) {
                    return fail("data.shape", c, "images have 1 (grey) or 3 (RGB) channels");
                }
                if !(4..=hedge_data::images::MAX_SIDE).contains(&h) || !(4..=hedge_data::images::MAX_SIDE).contains(&w)
                {
                    return fail(
                        "data.shape",
                        format!("{h} x {w}"),
                        format!("each image side must lie in 4..={}", hedge_data::images::MAX_SIDE),
                    );
                }
                if own.unseen_classes < 2 {
                    return fail("unseen_classes", own.unseen_classes, "hold out at least 2 classes as unseen");
                }
                if !(own.seen_test_fraction > 0.0 && own.seen_test_fraction < 1.0) {
                    return fail("seen_test_fraction", own.seen_test_fraction, "must lie strictly between 0 and 1");
                }
            }
        }
        if self.model.dim == 0 {
            return fail("dim", 0, "the embedding needs at least one dimension");
        }
        if self.model.dim > MAX_DIM {
            return fail(
                "dim",
                self.model.dim,
                format!("at most {MAX_DIM} (the paper embeds in 2 or 3 dimensions; a larger head would not fit a 28 x 28 input's network sensibly)"),
            );
        }
        if self.model.embedding == (EmbeddingKind::Mixture { components: 0 }) {
            return fail("components", 0, "a mixture needs at least one component");
        }
        if self.effective_components() > MAX_COMPONENTS {
            return fail(
                "components",
                self.effective_components(),
                format!("at most {MAX_COMPONENTS} mixture components (the paper uses 1 and 2)"),
            );
        }
        // What the loss itself cannot train with (contrastive: point embeddings only).
        crate::pair_loss::PairLoss::check(self.loss.kind.loss(), &self.loss_params())?;
        if !(self.loss.margin.is_finite() && self.loss.margin > 0.0) {
            return fail("margin", self.loss.margin, "the contrastive margin must be > 0");
        }
        if self.schedule.steps == 0 {
            return fail("steps", 0, "train for at least one step");
        }
        match self.data.batch {
            BatchComposition::Independent { pairs } if pairs < 2 => {
                return fail("batch_pairs", pairs, "a balanced batch needs at least 2 pairs");
            }
            BatchComposition::Grouped { classes, per_class } if classes < 2 || per_class < 2 => {
                return fail(
                    "group_classes",
                    format!("{classes} classes x {per_class} images"),
                    "a grouped batch needs at least 2 classes of at least 2 images",
                );
            }
            _ => {}
        }
        if !(self.loss.beta.is_finite() && self.loss.beta >= 0.0) {
            return fail("beta", self.loss.beta, "the KL weight must be finite and >= 0");
        }
        let c = self.effective_components();
        if self.model.embedding != EmbeddingKind::Point
            && (self.loss.samples == 0 || !self.loss.samples.is_multiple_of(c))
        {
            return fail(
                "samples",
                self.loss.samples,
                format!("stratified sampling draws the same number from each of the {c} components, so use a positive multiple of {c}"),
            );
        }
        if !(self.optimiser.learning_rate.is_finite() && self.optimiser.learning_rate > 0.0) {
            return fail("learning_rate", self.optimiser.learning_rate, "must be > 0");
        }
        if self.schedule.warmup_steps >= self.schedule.steps {
            return fail(
                "warmup_steps",
                self.schedule.warmup_steps,
                format!("the warm-up must end before training does ({} steps)", self.schedule.steps),
            );
        }
        if !(self.optimiser.head_lr_scale.is_finite() && self.optimiser.head_lr_scale > 0.0) {
            return fail(
                "head_lr_scale",
                self.optimiser.head_lr_scale,
                "the match head's learning-rate multiplier must be > 0",
            );
        }
        if !(0.0..1.0).contains(&self.optimiser.ema_decay) {
            return fail("ema_decay", self.optimiser.ema_decay, "use 0 (off) or a decay in (0, 1) such as 0.999");
        }
        if !(0.0..1.0).contains(&self.model.dropout) {
            return fail("dropout", self.model.dropout, "use 0 (off) or a probability in (0, 1) such as 0.5");
        }
        // Each step multiplies a decayed weight by 1 − learning rate · weight_decay: at 1 or more
        // the weights would vanish or flip sign in one step.
        if !(self.optimiser.weight_decay.is_finite()
            && self.optimiser.weight_decay >= 0.0
            && self.optimiser.weight_decay * self.optimiser.learning_rate < 1.0)
        {
            return fail(
                "weight_decay",
                self.optimiser.weight_decay,
                format!(
                    "use 0 (off) or a decay ≥ 0 whose product with the learning rate ({}) is below 1, such as 1e-4",
                    self.optimiser.learning_rate
                ),
            );
        }
        if self.data.pair_set == PairSet::All && !matches!(self.data.batch, BatchComposition::Grouped { .. }) {
            return fail("pair_set", "all", "all pairs needs grouped batches (--group CLASSESxIMAGES)");
        }
        if self.data.recompose && self.data.own_images.is_some() {
            return fail(
                "recompose",
                true,
                "recomposing images from their digits needs N-digit MNIST; leave it off with your own images (data)",
            );
        }
        if self.data.digit_shift > MAX_DIGIT_SHIFT {
            return fail(
                "digit_shift",
                self.data.digit_shift,
                format!("move a digit at most {MAX_DIGIT_SHIFT} pixels of its 28 (2 is a usual augmentation)"),
            );
        }
        if self.data.digit_shift > 0 && self.data.own_images.is_some() {
            return fail(
                "digit_shift",
                self.data.digit_shift,
                "shifting digit images needs N-digit MNIST; leave it 0 with your own images (data)",
            );
        }
        if self.data.own_images.is_some() && self.data.protocol == NDigitProtocol::Instance {
            return fail(
                "protocol",
                "instance",
                "your own images (data) are split with unseen classes held out; the protocol is open-set",
            );
        }
        if !(self.data.validation_fraction.is_finite() && (0.0..=0.5).contains(&self.data.validation_fraction)) {
            return fail(
                "validation_fraction",
                self.data.validation_fraction,
                "hold out a share in [0, 0.5] of each class's training images (e.g. 0.05)",
            );
        }
        if self.data.validation_classes > 0 && self.data.validation_fraction > 0.0 {
            return fail(
                "validation_classes",
                self.data.validation_classes,
                "choose models on held-out classes (validation_classes) or on held-out images of every class \
                 (validation_fraction), not both",
            );
        }
        if self.data.validation_classes > 0
            && self.data.protocol == NDigitProtocol::Instance
            && self.data.own_images.is_none()
        {
            return fail(
                "validation_classes",
                self.data.validation_classes,
                "the instance protocol tests the training classes: choose models on held-out images of every class \
                 (--validation-fraction, e.g. 0.05), or use --protocol open-set",
            );
        }
        if self.data.validation_digits == ValidationDigits::Unused {
            if self.data.own_images.is_some() {
                return fail(
                    "validation_digits",
                    "unused",
                    "new digit images exist only for N-digit MNIST; leave it shared with your own images (data)",
                );
            }
            if self.data.validation_fraction == 0.0 && self.data.validation_classes == 0 {
                return fail(
                    "validation_digits",
                    "unused",
                    "there are no validation images to redraw; hold some out (validation_fraction, e.g. 0.05)",
                );
            }
        }
        if self.model.channels.contains(&0) {
            return fail(
                "channels",
                format!("{:?}", self.model.channels),
                "each conv layer needs at least one channel",
            );
        }
        if !(0.0..=1.0).contains(&self.data.occlusion_probability) {
            return fail("occlusion_probability", self.data.occlusion_probability, "a probability lies in [0, 1]");
        }
        if !(self.model.min_variance.is_finite() && self.model.min_variance > 0.0) {
            return fail("min_variance", self.model.min_variance, "the variance floor must be > 0");
        }
        if !(self.model.init_a.is_finite() && self.model.init_a > 0.0) {
            return fail("init_a", self.model.init_a, "the distance scale a must be > 0");
        }
        if !(self.model.init_b.is_finite() && self.model.init_b.abs() <= MAX_INIT_B) {
            return fail(
                "init_b",
                self.model.init_b,
                format!(
                    "give a finite offset within ±{MAX_INIT_B}: past it sigmoid(−a·d + b) is 0 or 1 for every pair, \
                     the loss is infinite and nothing trains (the default is 0)"
                ),
            );
        }
        if self.schedule.log_every == 0 {
            return fail("log_every", 0, "log at least every step (>= 1)");
        }
        if self.schedule.checkpoint_every == 0 {
            return fail("checkpoint_every", 0, "checkpoint at least every step (>= 1)");
        }
        // Last: every number it reads has passed its own check.
        self.step_footprint().check()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What HEDGE_CONV_PRECISION may hold, and what it leaves alone (the variable itself is set
    /// only in subprocesses, by the CLI tests: a test thread setting it would change what
    /// `auto` means for the tests running beside it).
    #[test]
    fn the_forced_precision_is_parsed_and_never_overrides_an_explicit_one() {
        assert_eq!(parse_forced_conv_precision("bf16").unwrap(), Some(ConvPrecision::Bf16));
        assert_eq!(parse_forced_conv_precision(" F32 ").unwrap(), Some(ConvPrecision::F32));
        assert_eq!(parse_forced_conv_precision("auto").unwrap(), None);
        assert_eq!(parse_forced_conv_precision("").unwrap(), None);
        let e = parse_forced_conv_precision("fp16").unwrap_err().to_string();
        assert!(e.contains(CONV_PRECISION_ENV) && e.contains("\"fp16\"") && e.contains("f32, bf16 or auto"), "{e}");
        for explicit in [ConvPrecision::F32, ConvPrecision::Bf16] {
            assert_eq!(explicit.resolve(tch::Device::Cpu).unwrap(), explicit);
        }
        for (isa, native) in [
            ("ALL", true),
            ("avx512_core_bf16", true),
            ("AVX512_CORE_AMX", true),
            ("AVX10_1_512", true),
            ("AVX2", false),
            ("AVX512_CORE", false),
            ("AVX512_CORE_VNNI", false),
            ("AVX2_VNNI_2", false),
        ] {
            assert_eq!(onednn_isa_has_bf16(isa), native, "{isa}");
        }
        let hardware = if cpu_has_native_bf16() { ConvPrecision::Bf16 } else { ConvPrecision::F32 };
        assert_eq!(ConvPrecision::for_hardware(tch::Device::Cpu), hardware);
        assert_eq!(ConvPrecision::for_hardware(tch::Device::Cuda(0)), ConvPrecision::Bf16);
    }

    #[test]
    fn defaults_are_valid_and_round_trip_through_json() {
        let c = HibConfig::default();
        c.check_ref().unwrap();
        let back: HibConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn impossible_values_name_their_field() {
        let cases = [
            (HibConfig::default().with_digits(5), "digits"),
            (HibConfig::default().with_beta(-1.0), "beta"),
            (HibConfig::default().with_model(EmbeddingKind::Mixture { components: 3 }).with_samples(8), "samples"),
            (HibConfig::default().with_model(EmbeddingKind::Mixture { components: 0 }), "components"),
            (HibConfig::default().with_loss(LossKind::CONTRASTIVE), "loss"),
            (HibConfig::default().with_batch(BatchComposition::Grouped { classes: 8, per_class: 1 }), "group_classes"),
            (HibConfig::default().with_batch(BatchComposition::Independent { pairs: 1 }), "batch_pairs"),
            (HibConfig::default().with_occlusion_probability(1.5), "occlusion_probability"),
            (HibConfig::default().with_learning_rate(f64::NAN), "learning_rate"),
            (HibConfig::default().with_steps(100).with_warmup_steps(100), "warmup_steps"),
            (HibConfig::default().with_head_lr_scale(0.0), "head_lr_scale"),
            (HibConfig::default().with_ema_decay(1.0), "ema_decay"),
            (HibConfig::default().with_weight_decay(-1e-4), "weight_decay"),
            (HibConfig::default().with_dropout(1.0), "dropout"),
            (HibConfig::default().with_learning_rate(0.01).with_weight_decay(100.0), "weight_decay"),
            (HibConfig::default().with_pair_set(PairSet::All), "pair_set"),
            (HibConfig::default().with_validation_fraction(0.6), "validation_fraction"),
            (HibConfig::default().with_validation_classes(10), "validation_classes"),
            (
                HibConfig::default()
                    .with_protocol(NDigitProtocol::OpenSet)
                    .with_validation_classes(10)
                    .with_validation_fraction(0.05),
                "validation_classes",
            ),
            (
                HibConfig::default()
                    .with_data(OwnImages {
                        path: "/images".into(),
                        shape: [1, 28, 28],
                        unseen_classes: 2,
                        seen_test_fraction: 0.2,
                        split_seed: 0,
                    })
                    .with_recompose(true),
                "recompose",
            ),
            (HibConfig::default().with_validation_digits(ValidationDigits::Unused), "validation_digits"),
            (HibConfig::default().with_digit_shift(9), "digit_shift"),
        ];
        for (c, field) in cases {
            let msg = c.check_ref().unwrap_err().to_string();
            assert!(msg.contains(&format!("'{field}'")), "{msg}");
        }
    }

    /// Config files through the mutation fuzzer for a few seconds: every seed is accepted and no
    /// mutant panics (`hedge bench fuzz --target toml` runs longer campaigns).
    #[test]
    fn config_files_fuzz_without_a_panic() {
        let seeds = config_fuzz_seeds();
        assert!(seeds.iter().all(|s| fuzz_config_file(s)), "a seed config is rejected");
        let report = hedge_data::fuzz::fuzz_fn(
            "toml",
            fuzz_config_file,
            true,
            &seeds,
            std::time::Duration::from_secs(4),
            u64::MAX,
            5,
        );
        println!("fuzz {}", report.markdown_row());
        assert!(report.executions > 50 && report.accepted > 0, "{report:?}");
        assert_eq!(
            report.panic_count,
            0,
            "panicked on {:?}",
            report.panics.first().map(|b| String::from_utf8_lossy(b).into_owned())
        );
    }

    /// Sizes that crashed before they had limits (issue 17): `--dim 100000000` panicked inside
    /// libtorch and `--components 100000 --samples 100000` was killed by the out-of-memory
    /// killer; each is now refused with its limit, and the paper's settings stay far inside.
    #[test]
    fn sizes_past_their_limits_are_refused_with_the_limit() {
        let gaussian = || HibConfig::default().with_model(EmbeddingKind::Gaussian);
        let cases = [
            (gaussian().with_dim(100_000_000), "'dim'", "at most 4096"),
            (
                gaussian().with_model(EmbeddingKind::Mixture { components: 100_000 }).with_samples(100_000),
                "'components'",
                "at most 256",
            ),
            (gaussian().with_samples(100_000), "--samples", "memory budget"),
        ];
        for (c, field, limit) in cases {
            let msg = c.check_ref().unwrap_err().to_string();
            assert!(msg.contains(field) && msg.contains(limit), "{msg}");
        }
        // 128 pairs x 100,000² samples x (2·2 + 8) values x 4 bytes x 2.
        assert_eq!(gaussian().with_samples(100_000).mc_bytes_per_step(), 128 * 100_000u128.pow(2) * 12 * 8);
        // The rest of a step's footprint: 256 images of 1 x 28 x 56 (values kept per image:
        // input, conv1 x 3, pooled conv1, conv2 x 3 at half size, pooled conv2 x 2) in f32;
        // parameters x 4 (weights, gradients, two Adam moments).
        let g = gaussian();
        // Two 2 x 2 pools of 28 x 56: 7 x 14 cells a channel.
        assert_eq!(g.pooled_cells(), 7 * 14);
        let (hw, features) = (28.0 * 56.0, 7.0 * 14.0);
        let per_image = hw + 3.0 * 32.0 * hw + 32.0 * hw / 4.0 + 3.0 * 64.0 * hw / 4.0 + 2.0 * 64.0 * features;
        let parameters = 25.0 * (32.0 + 32.0 * 64.0) + 64.0 * features * 4.0;
        let expected = 256.0 * per_image * 4.0 + parameters * 16.0 + g.mc_bytes_per_step() as f64;
        let fp = g.step_footprint();
        let values: Vec<f64> = fp.knobs.iter().map(|k| k.value).collect();
        assert_eq!((fp.bytes)(&values), expected);
        // A batch of 100,000 pairs (20 GB of convolution): refused naming the largest batch that fits.
        let huge = gaussian().with_batch(BatchComposition::Independent { pairs: 100_000 });
        let e = hedge_run::MemoryBudget { bytes: 4e9, source: "test".into() }.check(&huge.step_footprint());
        let e = e.unwrap_err().to_string();
        assert!(e.contains("--batch (pairs) 1,9") && e.contains("hib train") && !e.contains("(unused)"), "{e}");
        // The paper's MoG-2 (8 samples, D = 3) and the widest grouped all-pairs batch hedge uses.
        let paper = gaussian().with_model(EmbeddingKind::Mixture { components: 2 }).with_dim(3);
        paper.check_ref().unwrap();
        let all_pairs =
            paper.with_batch(BatchComposition::Grouped { classes: 32, per_class: 8 }).with_pair_set(PairSet::All);
        assert_eq!(all_pairs.pairs_per_step(), 256 * 255 / 2);
        all_pairs.check_ref().unwrap();
    }

    #[test]
    fn cosine_schedule_starts_at_the_base_rate_and_ends_at_zero() {
        assert_eq!(LrSchedule::Cosine.at(1e-3, 0, 100), 1e-3);
        assert!((LrSchedule::Cosine.at(1e-3, 50, 100) - 5e-4).abs() < 1e-15);
        assert!(LrSchedule::Cosine.at(1e-3, 100, 100).abs() < 1e-15);
        assert_eq!(LrSchedule::Constant.at(1e-3, 70, 100), 1e-3);
    }

    #[test]
    fn step_schedule_divides_by_ten_at_a_half_and_three_quarters() {
        let at = |step| LrSchedule::Step.at(1e-2, step, 100);
        assert_eq!((at(0), at(49)), (1e-2, 1e-2));
        assert!((at(50) - 1e-3).abs() < 1e-18 && (at(74) - 1e-3).abs() < 1e-18);
        assert!((at(75) - 1e-4).abs() < 1e-18 && (at(99) - 1e-4).abs() < 1e-18);
    }

    #[test]
    fn warm_up_rises_linearly_then_hands_over_to_the_schedule() {
        let c = HibConfig::default()
            .with_learning_rate(1e-2)
            .with_steps(110)
            .with_warmup_steps(10)
            .with_lr_schedule(LrSchedule::Cosine);
        assert!((c.learning_rate_at(0) - 1e-3).abs() < 1e-15);
        assert!((c.learning_rate_at(9) - 1e-2).abs() < 1e-15);
        assert!((c.learning_rate_at(10) - 1e-2).abs() < 1e-15);
        assert!((c.learning_rate_at(60) - 5e-3).abs() < 1e-15);
        assert!(c.learning_rate_at(110).abs() < 1e-15);
        // Without warm-up the schedule is the old one.
        let plain = c.clone().with_warmup_steps(0);
        assert_eq!(plain.learning_rate_at(55), LrSchedule::Cosine.at(1e-2, 55, 110));
    }

    /// Config files stay flat (`model = "mog"`, `components = 3`, `batch = "grouped"`,
    /// `group_classes`, `group_size`): every committed `config.json` and recipe reads into the
    /// sum types and writes back as it was.
    #[test]
    fn config_files_are_flat_and_read_into_the_sum_types() {
        let c: HibConfig = toml::from_str(
            "model = \"mog\"\ncomponents = 3\nsamples = 9\nbatch = \"grouped\"\ngroup_classes = 16\ngroup_size = 4\n",
        )
        .unwrap();
        assert_eq!(c.model.embedding, EmbeddingKind::Mixture { components: 3 });
        assert_eq!(c.data.batch, BatchComposition::Grouped { classes: 16, per_class: 4 });
        c.check_ref().unwrap();
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["model"], "mog");
        assert_eq!(json["components"], 3);
        assert_eq!(json["batch"], "grouped");
        assert_eq!((json["group_classes"].as_u64(), json["group_size"].as_u64()), (Some(16), Some(4)));
        // A Gaussian ignores `components`, an independent batch the group shape, as before.
        let g: HibConfig = toml::from_str("model = \"gaussian\"\ncomponents = 5\nbatch_pairs = 64\n").unwrap();
        assert_eq!(g.model.embedding, EmbeddingKind::Gaussian);
        assert_eq!(g.data.batch, BatchComposition::Independent { pairs: 64 });
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/hib");
        let mut checked = 0;
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n == "config.json") {
                    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                    let Some(hib) = v.get("hib") else { continue };
                    let back = serde_json::to_value(serde_json::from_value::<HibConfig>(hib.clone()).unwrap()).unwrap();
                    // Fields older files lack read as their defaults.
                    let same = |key: &str| {
                        if let Some(original) = hib.get(key) {
                            assert_eq!(&back[key], original, "{}: {key}", p.display());
                        }
                    };
                    for key in ["model", "batch", "digits", "dim", "steps", "beta", "learning_rate", "seed"] {
                        same(key);
                    }
                    match (back["model"].as_str(), back["batch"].as_str()) {
                        (Some("mog"), _) => same("components"),
                        (_, Some("grouped")) => {
                            same("group_classes");
                            same("group_size");
                        }
                        _ => same("batch_pairs"),
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked >= 10, "only {checked} committed run configs");
    }

    /// A config file without `protocol` is the paper's instance protocol; a run's config.json
    /// without one was written before protocols existed, when every run was open-set, and must
    /// keep evaluating on the tables it was trained on.
    /// `--steps` wins over a budget (which then only caps the wall-clock); a budget alone is
    /// planned; neither gives the default. A budgeted config is unplanned until the trainer
    /// sets its count.
    #[test]
    fn steps_are_fixed_or_a_budget_to_plan() {
        assert_eq!(Steps::from_flags(Some(5), Some(2.0), 9), Steps::Fixed(5));
        assert_eq!(Steps::from_flags(None, Some(2.0), 9), Steps::Budget { minutes: 2.0 });
        assert_eq!(Steps::from_flags(None, None, 9), Steps::Fixed(9));
        let budget = HibConfig::default().with_training(Steps::Budget { minutes: 2.0 });
        assert!(!budget.steps_planned() && budget.check_ref().is_ok());
        let fixed = budget.with_training(Steps::Fixed(300));
        assert!(fixed.steps_planned() && fixed.schedule.steps == 300);
    }

    /// Every command reads `--config` through one function: a missing file and a bad field are
    /// both named with the file.
    #[test]
    fn a_recipe_file_is_read_with_its_name_in_every_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recipe.toml");
        let e = HibConfig::from_toml_file(&path).unwrap_err().to_string();
        assert!(e.contains("recipe.toml"), "{e}");
        std::fs::write(&path, "dim = \"x\"\n").unwrap();
        let e = HibConfig::from_toml_file(&path).unwrap_err().to_string();
        assert!(e.contains("recipe.toml") && e.contains("line 1") && e.contains("not a HIB recipe"), "{e}");
        std::fs::write(&path, "dim = 3\n").unwrap();
        assert_eq!(HibConfig::from_toml_file(&path).unwrap().model.dim, 3);
    }

    #[test]
    fn an_absent_protocol_is_instance_in_a_config_file_and_open_set_in_an_old_run() {
        assert_eq!(HibConfig::from_toml("dim = 3\n").unwrap().data.protocol, NDigitProtocol::Instance);
        let open = HibConfig::from_toml("protocol = \"open-set\"\nvalidation_classes = 10\n").unwrap();
        assert_eq!(open.data.protocol, NDigitProtocol::OpenSet);
        open.check_ref().unwrap();
        // A run's config.json of schema 1 (no `schema`) without a protocol was written when every
        // run was open-set; a schema 2 one names its protocol.
        let old_run = r#"{"hib": {"dim": 2, "validation_classes": 10}, "device": "cpu", "threads": 1,
            "command": "", "hedge_version": "0.1.0", "libtorch": "2.13.0"}"#;
        let old: crate::RunConfig = serde_json::from_str(old_run).unwrap();
        assert_eq!((old.schema, old.hib.data.protocol), (crate::run::RUN_SCHEMA, NDigitProtocol::OpenSet));
        let written = serde_json::to_value(&old).unwrap();
        assert_eq!((&written["schema"], &written["hib"]["protocol"]), (&2.into(), &"open-set".into()));
        let json = serde_json::to_value(HibConfig::default()).unwrap();
        assert_eq!(json["protocol"], "instance");
        let e = HibConfig::from_toml("protocol = \"closed\"\n").unwrap_err().to_string();
        assert!(e.contains("closed") && e.contains("open-set"), "{e}");
    }

    #[test]
    fn unknown_fields_in_a_config_file_are_refused() {
        let err = serde_json::from_str::<HibConfig>(r#"{"dims": 3}"#).unwrap_err().to_string();
        assert!(err.contains("dims"), "{err}");
    }
}
