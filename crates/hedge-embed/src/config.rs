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
pub enum Norm {
    /// None (the paper's network).
    None,
    /// Batch normalisation (batch statistics in training, running averages at test time).
    Batch,
}

/// How the match head's offset b starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
/// | `warmup_steps` | 0 | linear warm-up from 0 before the schedule starts | < `steps` |
/// | `head_lr_scale` | 1 | learning-rate multiplier of the match head's a and b | > 0 |
/// | `match_init` | fixed | fixed (`init_a`, `init_b`) or first_batch (b from the first batch) | |
/// | `norm` | none | none or batch normalisation after each convolution | |
/// | `ema_decay` | 0 | decay of an exponential moving average of the weights, evaluated instead of them (0: off) | [0, 1) |
/// | `pair_set` | sampled | grouped batches: sampled pairs or all pairs | |
/// | `validation_classes` | 0 | training classes held out (all their images) to choose models on unseen classes | leaves ≥ 2 |
/// | `validation_seed` | 0 | which classes are held out | |
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
    pub warmup_steps: usize,
    pub head_lr_scale: f64,
    pub match_init: MatchInit,
    pub norm: Norm,
    pub ema_decay: f64,
    pub pair_set: PairSet,
    pub validation_classes: usize,
    pub validation_seed: u64,
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
            warmup_steps: 0,
            head_lr_scale: 1.0,
            match_init: MatchInit::Fixed,
            norm: Norm::None,
            ema_decay: 0.0,
            pair_set: PairSet::Sampled,
            validation_classes: 0,
            validation_seed: 0,
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
        with_warmup_steps: warmup_steps: usize,
        with_head_lr_scale: head_lr_scale: f64,
        with_match_init: match_init: MatchInit,
        with_norm: norm: Norm,
        with_ema_decay: ema_decay: f64,
        with_pair_set: pair_set: PairSet,
        with_validation_classes: validation_classes: usize,
        with_validation_seed: validation_seed: u64,
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

    /// The learning rate of step `step` (0-based): a linear warm-up over `warmup_steps`, then
    /// `lr_schedule` over the remaining steps.
    pub fn learning_rate_at(&self, step: usize) -> f64 {
        if step < self.warmup_steps {
            return self.learning_rate * (step + 1) as f64 / self.warmup_steps as f64;
        }
        self.lr_schedule.at(self.learning_rate, step - self.warmup_steps, self.steps.saturating_sub(self.warmup_steps))
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
        if self.warmup_steps >= self.steps {
            return fail(
                "warmup_steps",
                format!("{} with {} steps; the warm-up must end before training does", self.warmup_steps, self.steps),
            );
        }
        if !(self.head_lr_scale.is_finite() && self.head_lr_scale > 0.0) {
            return fail(
                "head_lr_scale",
                format!("{}; the match head's learning-rate multiplier must be > 0", self.head_lr_scale),
            );
        }
        if !(0.0..1.0).contains(&self.ema_decay) {
            return fail("ema_decay", format!("{}; use 0 (off) or a decay in (0, 1) such as 0.999", self.ema_decay));
        }
        if self.pair_set == PairSet::All && self.batch != BatchComposition::Grouped {
            return fail("pair_set", "all pairs needs grouped batches (--group CLASSESxIMAGES)".into());
        }
        if self.pair_set == PairSet::All && self.loss != LossKind::Soft {
            return fail("pair_set", "all pairs is implemented for the soft contrastive loss; use --loss soft".into());
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
            (HibConfig::default().with_steps(100).with_warmup_steps(100), "warmup_steps"),
            (HibConfig::default().with_head_lr_scale(0.0), "head_lr_scale"),
            (HibConfig::default().with_ema_decay(1.0), "ema_decay"),
            (HibConfig::default().with_pair_set(PairSet::All), "pair_set"),
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

    #[test]
    fn unknown_fields_in_a_config_file_are_refused() {
        let err = serde_json::from_str::<HibConfig>(r#"{"dims": 3}"#).unwrap_err().to_string();
        assert!(err.contains("dims"), "{err}");
    }
}
