//! Hyper-parameters of a HIB model and its training, validated once by [`HibConfig::check`].

use serde::{Deserialize, Serialize};

use crate::{EmbedError, Result};

/// What an input is embedded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// A point `z = f(x)` (Section 2.1).
    Point,
    /// One Gaussian with diagonal covariance (the paper's MoG-1).
    Gaussian,
    /// An equal-weight mixture of `components` diagonal Gaussians (MoG-C).
    Mog,
}

/// The pair loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// Soft contrastive loss, −log p(m = m̂ | ·) with p = σ(−a‖z1 − z2‖ + b) (Eqs. 2–3, 5).
    Soft,
    /// Hadsell et al.'s contrastive loss with margin `margin` (Eq. 1); point embeddings only.
    Contrastive,
}

/// How the learning rate moves over training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LrSchedule {
    /// `learning_rate` throughout (the paper states no schedule).
    Constant,
    /// Half a cosine from `learning_rate` down to 0 at `steps`.
    Cosine,
}

impl LrSchedule {
    /// The learning rate of step `step` (0-based) of `steps`.
    pub fn at(self, base: f64, step: usize, steps: usize) -> f64 {
        match self {
            LrSchedule::Constant => base,
            LrSchedule::Cosine => 0.5 * base * (1.0 + (std::f64::consts::PI * step as f64 / steps.max(1) as f64).cos()),
        }
    }
}

/// How a training batch is put together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchComposition {
    /// The paper's two-stream sampler: `batch_pairs` independent pairs, half matching, each
    /// image used once (Section 2.3).
    Independent,
    /// `group_classes` classes x `group_size` images; every within-class pair plus as many
    /// cross-class pairs are scored, so one step's images give `group_size − 1` times more
    /// pairs. Not in the paper; a lever on time-to-quality.
    Grouped,
}

/// Number format of the two convolutions (the trunk's bulk of arithmetic). The master weights,
/// the head, the losses and the optimiser always stay in f32; `bf16` casts the conv inputs and
/// weights as PyTorch's autocast would, which doubles training speed on CPUs with AVX512-BF16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConvPrecision {
    /// bf16 on CUDA and on CPUs with native bf16 dot products, f32 elsewhere.
    Auto,
    F32,
    Bf16,
}

impl ConvPrecision {
    /// Replaces `Auto` by what this machine and device do best.
    pub fn resolve(self, device: tch::Device) -> ConvPrecision {
        match self {
            ConvPrecision::Auto if device.is_cuda() || cpu_has_native_bf16() => ConvPrecision::Bf16,
            ConvPrecision::Auto => ConvPrecision::F32,
            other => other,
        }
    }
}

/// Whether the CPU has AVX512-BF16 or AMX-BF16 (bf16 slower than f32 without them).
pub fn cpu_has_native_bf16() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|info| {
            info.lines()
                .find(|l| l.starts_with("flags"))
                .is_some_and(|flags| flags.split_whitespace().any(|f| f == "avx512_bf16" || f == "amx_bf16"))
        })
        .unwrap_or(false)
}

/// Hyper-parameters of a HIB model and its training.
///
/// | name | default | purpose | range |
/// |---|---|---|---|
/// | `digits` | 2 | N of N-digit MNIST | 2 or 3 |
/// | `dim` | 2 | embedding dimension D | ≥ 1 |
/// | `model` | gaussian | point, gaussian or mog | |
/// | `components` | 2 | mixture components C (mog only; gaussian is C = 1) | ≥ 1 |
/// | `loss` | soft | soft or contrastive | contrastive needs `model = point` |
/// | `margin` | 1.0 | contrastive margin M | > 0 |
/// | `steps` | 20000 | optimiser steps | ≥ 1 |
/// | `batch_pairs` | 128 | pairs per step (2x images), independent batches | ≥ 2 |
/// | `batch` | independent | independent (paper) or grouped batches | |
/// | `group_classes`, `group_size` | 32, 8 | classes per grouped batch, images per class | ≥ 2 |
/// | `beta` | 1e-4 | weight of the KL term (Eq. 8) | ≥ 0 |
/// | `samples` | 8 | Monte-Carlo samples K per input (Eq. 5) | ≥ 1, multiple of C |
/// | `learning_rate` | 1e-3 | Adam step size | > 0 |
/// | `lr_schedule` | constant | constant or cosine decay to 0 | |
/// | `channels` | [32, 64] | widths of the two conv layers | ≥ 1 |
/// | `occlusion_probability` | 0.2 | chance each training digit is occluded | [0, 1] |
/// | `min_variance` | 1e-6 | floor added to softplus variances | > 0 |
/// | `init_a`, `init_b` | 1, 0 | initial soft-threshold scale a > 0 and offset b | |
/// | `conv_precision` | auto | f32, bf16, or auto (bf16 where the hardware has it) | |
/// | `seed` | 0 | seed of data order, occlusions, initialisation and noise | |
/// | `log_every` | 50 | steps between metrics lines | ≥ 1 |
/// | `checkpoint_every` | 1000 | steps between checkpoints | ≥ 1 |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HibConfig {
    pub digits: usize,
    pub dim: usize,
    pub model: ModelKind,
    pub components: usize,
    pub loss: LossKind,
    pub margin: f64,
    pub steps: usize,
    pub batch_pairs: usize,
    pub batch: BatchComposition,
    pub group_classes: usize,
    pub group_size: usize,
    pub beta: f64,
    pub samples: usize,
    pub learning_rate: f64,
    pub lr_schedule: LrSchedule,
    pub channels: [usize; 2],
    pub occlusion_probability: f64,
    pub min_variance: f64,
    pub init_a: f64,
    pub init_b: f64,
    pub conv_precision: ConvPrecision,
    pub seed: u64,
    pub log_every: usize,
    pub checkpoint_every: usize,
}

impl Default for HibConfig {
    fn default() -> Self {
        HibConfig {
            digits: 2,
            dim: 2,
            model: ModelKind::Gaussian,
            components: 2,
            loss: LossKind::Soft,
            margin: 1.0,
            steps: 20_000,
            batch_pairs: 128,
            batch: BatchComposition::Independent,
            group_classes: 32,
            group_size: 8,
            beta: 1e-4,
            samples: 8,
            learning_rate: 1e-3,
            lr_schedule: LrSchedule::Constant,
            channels: [32, 64],
            occlusion_probability: 0.2,
            min_variance: 1e-6,
            init_a: 1.0,
            init_b: 0.0,
            conv_precision: ConvPrecision::Auto,
            seed: 0,
            log_every: 50,
            checkpoint_every: 1000,
        }
    }
}

macro_rules! with {
    ($($name:ident: $field:ident: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets `", stringify!($field), "`.")]
            pub fn $name(mut self, value: $ty) -> Self {
                self.$field = value;
                self
            }
        )*
    };
}

impl HibConfig {
    with!(
        with_digits: digits: usize,
        with_dim: dim: usize,
        with_model: model: ModelKind,
        with_components: components: usize,
        with_loss: loss: LossKind,
        with_margin: margin: f64,
        with_steps: steps: usize,
        with_batch_pairs: batch_pairs: usize,
        with_batch: batch: BatchComposition,
        with_group_classes: group_classes: usize,
        with_group_size: group_size: usize,
        with_beta: beta: f64,
        with_samples: samples: usize,
        with_learning_rate: learning_rate: f64,
        with_lr_schedule: lr_schedule: LrSchedule,
        with_channels: channels: [usize; 2],
        with_occlusion_probability: occlusion_probability: f64,
        with_min_variance: min_variance: f64,
        with_conv_precision: conv_precision: ConvPrecision,
        with_seed: seed: u64,
        with_log_every: log_every: usize,
        with_checkpoint_every: checkpoint_every: usize,
    );

    /// Mixture components actually used: 1 for point and gaussian models.
    pub fn effective_components(&self) -> usize {
        match self.model {
            ModelKind::Mog => self.components,
            _ => 1,
        }
    }

    /// Monte-Carlo samples actually drawn: 1 for a point embedding (it is its own sample).
    pub fn effective_samples(&self) -> usize {
        match self.model {
            ModelKind::Point => 1,
            _ => self.samples,
        }
    }

    /// Validates every hyper-parameter; call once before building a model.
    ///
    /// # Errors
    /// [`EmbedError::Config`] naming the field, what it is and what it may be.
    pub fn check(&self) -> Result<()> {
        let fail = |field, what: String| Err(EmbedError::config(field, what));
        if !(2..=3).contains(&self.digits) {
            return fail("digits", format!("{}; N-digit MNIST has standard tables for 2 and 3", self.digits));
        }
        if self.dim == 0 {
            return fail("dim", "0; the embedding needs at least one dimension".into());
        }
        if self.model == ModelKind::Mog && self.components == 0 {
            return fail("components", "0; a mixture needs at least one component".into());
        }
        if self.loss == LossKind::Contrastive && self.model != ModelKind::Point {
            return fail(
                "loss",
                "contrastive is defined for point embeddings (Eq. 1); use --loss soft for stochastic ones".into(),
            );
        }
        if !(self.margin.is_finite() && self.margin > 0.0) {
            return fail("margin", format!("{}; the contrastive margin must be > 0", self.margin));
        }
        if self.steps == 0 {
            return fail("steps", "0; train for at least one step".into());
        }
        if self.batch_pairs < 2 {
            return fail("batch_pairs", format!("{}; a balanced batch needs at least 2 pairs", self.batch_pairs));
        }
        if self.batch == BatchComposition::Grouped && (self.group_classes < 2 || self.group_size < 2) {
            return fail(
                "group_classes",
                format!(
                    "{} classes x {} images; a grouped batch needs at least 2 classes of at least 2 images",
                    self.group_classes, self.group_size
                ),
            );
        }
        if !(self.beta.is_finite() && self.beta >= 0.0) {
            return fail("beta", format!("{}; the KL weight must be finite and >= 0", self.beta));
        }
        let c = self.effective_components();
        if self.model != ModelKind::Point && (self.samples == 0 || !self.samples.is_multiple_of(c)) {
            return fail(
                "samples",
                format!("{}; stratified sampling draws the same number from each of the {c} components, so use a positive multiple of {c}", self.samples),
            );
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return fail("learning_rate", format!("{}; must be > 0", self.learning_rate));
        }
        if self.channels.contains(&0) {
            return fail("channels", format!("{:?}; each conv layer needs at least one channel", self.channels));
        }
        if !(0.0..=1.0).contains(&self.occlusion_probability) {
            return fail(
                "occlusion_probability",
                format!("{}; a probability lies in [0, 1]", self.occlusion_probability),
            );
        }
        if !(self.min_variance.is_finite() && self.min_variance > 0.0) {
            return fail("min_variance", format!("{}; the variance floor must be > 0", self.min_variance));
        }
        if !(self.init_a.is_finite() && self.init_a > 0.0) {
            return fail("init_a", format!("{}; the distance scale a must be > 0", self.init_a));
        }
        if !self.init_b.is_finite() {
            return fail("init_b", format!("{}; must be finite", self.init_b));
        }
        if self.log_every == 0 || self.checkpoint_every == 0 {
            return fail("log_every", "log_every and checkpoint_every must be >= 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_round_trip_through_json() {
        let c = HibConfig::default();
        c.check().unwrap();
        let back: HibConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn impossible_values_name_their_field() {
        let cases = [
            (HibConfig::default().with_digits(5), "digits"),
            (HibConfig::default().with_beta(-1.0), "beta"),
            (HibConfig::default().with_model(ModelKind::Mog).with_components(3).with_samples(8), "samples"),
            (HibConfig::default().with_loss(LossKind::Contrastive), "loss"),
            (HibConfig::default().with_batch(BatchComposition::Grouped).with_group_size(1), "group_classes"),
            (HibConfig::default().with_occlusion_probability(1.5), "occlusion_probability"),
            (HibConfig::default().with_learning_rate(f64::NAN), "learning_rate"),
        ];
        for (c, field) in cases {
            let msg = c.check().unwrap_err().to_string();
            assert!(msg.contains(&format!("'{field}'")), "{msg}");
        }
    }

    #[test]
    fn cosine_schedule_starts_at_the_base_rate_and_ends_at_zero() {
        assert_eq!(LrSchedule::Cosine.at(1e-3, 0, 100), 1e-3);
        assert!((LrSchedule::Cosine.at(1e-3, 50, 100) - 5e-4).abs() < 1e-15);
        assert!(LrSchedule::Cosine.at(1e-3, 100, 100).abs() < 1e-15);
        assert_eq!(LrSchedule::Constant.at(1e-3, 70, 100), 1e-3);
    }

    #[test]
    fn unknown_fields_in_a_config_file_are_refused() {
        let err = serde_json::from_str::<HibConfig>(r#"{"dims": 3}"#).unwrap_err().to_string();
        assert!(err.contains("dims"), "{err}");
    }
}
