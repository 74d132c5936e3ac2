//! Benchmarks of HIB: throughput of the default network (training steps and inference, in
//! images per second) and the recipe benchmark (minutes of training until a recipe reaches the
//! paper's N = 2, D = 2 Table 1 value).

use std::path::Path;
use std::time::Instant;

use hedge_data::undefined::NullReason;
use hedge_data::NDigitSplit;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::config::{ConvPrecision, HibConfig};
use crate::distribution::Embedding;
use crate::experiment::{paper_column, train_run, TrainPlan};
use crate::loss::vib_loss;
use crate::monitor::{first_reaching, MonitorRecord, QualityTarget, QuickMetric};
use crate::optim::Adam;
use crate::train::build_model;
use crate::train::TrainEvent;
use crate::{EmbedError, Result};
use hedge_data::ParamGuard;

/// Steady-state training throughput in images/s: forward of the batch's images, the VIB
/// loss with K samples, backward and an Adam step, timed over `steps` steps after `warmup`
/// untimed ones. Inputs are uniform noise of the right shape (the arithmetic does not depend
/// on the pixels).
///
/// With `reuse = R > 1` each step scores `R` times half the images as pairs from the same embeddings
/// (round r pairs left image i with right image (i + r) mod B), so pairs/s grows while images/s
/// stays: the measure of what reusing an image's embedding in several pairs would buy.
pub fn train_images_per_s(
    config: &HibConfig,
    device: Device,
    warmup: usize,
    steps: usize,
    reuse: usize,
) -> Result<f64> {
    let (vs, net) = build_model(config, device)?;
    let mut adam = Adam::new(&vs, config.learning_rate);
    let pairs = (config.batch.images() / 2) as i64;
    let [c, h, w] = config.input_shape().map(|v| v as i64);
    let x = Tensor::rand([2 * pairs, c, h, w], (Kind::Float, device));
    let is_match = Tensor::arange(pairs, (Kind::Int64, device)).remainder(2).eq(0);
    let rounds = reuse.max(1) as i64;
    let mut step = || {
        let e = net.forward(&x);
        let left = e.narrow(0, pairs);
        let mut total = Tensor::zeros([], (Kind::Float, device));
        for r in 0..rounds {
            // Rotating the right half pairs each left image with another partner.
            let right = e.narrow(pairs, pairs);
            let right = Embedding {
                mean: right.mean.roll([r].as_slice(), [0i64].as_slice()),
                variance: right.variance.map(|v| v.roll([r].as_slice(), [0i64].as_slice())),
            };
            let loss = vib_loss(&net.matcher, &left, &right, &is_match, config.effective_samples() as i64, config.beta);
            total += loss.total;
        }
        adam.zero_grad();
        total.backward();
        adam.step();
        // Reading the loss waits for the device, so the clock measures finished work.
        total.double_value(&[])
    };
    for _ in 0..warmup {
        step();
    }
    let t = Instant::now();
    for _ in 0..steps {
        step();
    }
    Ok((2 * pairs) as f64 * steps as f64 / t.elapsed().as_secs_f64())
}

/// Inference throughput: embedding (means, variances) of `batch` images per forward pass.
pub fn infer_images_per_s(
    config: &HibConfig,
    device: Device,
    batch: usize,
    warmup: usize,
    batches: usize,
) -> Result<f64> {
    let (_vs, net) = build_model(config, device)?;
    let [c, h, w] = config.input_shape().map(|v| v as i64);
    let x = Tensor::rand([batch as i64, c, h, w], (Kind::Float, device));
    let run = || tch::no_grad(|| net.forward(&x).mean.sum(Kind::Float).double_value(&[]));
    for _ in 0..warmup {
        run();
    }
    let t = Instant::now();
    for _ in 0..batches {
        run();
    }
    Ok((batch * batches) as f64 / t.elapsed().as_secs_f64())
}

/// What `hedge bench train|embed` prints (fields in the order of its JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputReport {
    pub conv_precision: ConvPrecision,
    pub device: String,
    pub infer_batch_images: usize,
    pub infer_batches_timed: usize,
    pub infer_images_per_s: f64,
    pub model: String,
    /// Pairs scored per pair of embedded images (1: the paper's independent pairs).
    pub pairs_per_image_pair: usize,
    pub threads: i32,
    pub train_batch_images: usize,
    pub train_images_per_s: f64,
    pub train_pairs_per_s: f64,
    pub train_steps_timed: usize,
}

/// Training and inference throughput of `config`'s network on `device` (inference in batches
/// of 1,000 images).
pub fn throughput(
    config: &HibConfig,
    device: Device,
    warmup: usize,
    train_steps: usize,
    infer_batches: usize,
    reuse: usize,
) -> Result<ThroughputReport> {
    let infer_batch = 1000;
    let train_ips = train_images_per_s(config, device, warmup, train_steps, reuse)?;
    let infer_ips = infer_images_per_s(config, device, infer_batch, warmup.min(3), infer_batches)?;
    Ok(ThroughputReport {
        conv_precision: config.conv_precision,
        device: crate::device_name(device),
        infer_batch_images: infer_batch,
        infer_batches_timed: infer_batches,
        infer_images_per_s: infer_ips,
        model: format!(
            "gaussian D={} K={} on {}-digit MNIST, channels {:?}",
            config.dim, config.samples, config.digits, config.channels
        ),
        pairs_per_image_pair: reuse.max(1),
        threads: tch::get_num_threads(),
        train_batch_images: config.batch.images(),
        train_images_per_s: train_ips,
        train_pairs_per_s: train_ips / 2.0 * reuse.max(1) as f64,
        train_steps_timed: train_steps,
    })
}

/// The recipe benchmark: train `recipe` (as N = 2, D = 2) on the CPU, evaluate `split` every
/// `watch_every` steps, stop when `metric` reaches the paper's value for the recipe's column
/// or after `budget_minutes` of training.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeBench {
    pub recipe: HibConfig,
    pub metric: QuickMetric,
    pub split: NDigitSplit,
    pub budget_minutes: f64,
    pub watch_every: usize,
}

/// What the recipe benchmark measured (fields in the order of its JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecipeBenchReport {
    /// The best value reached, and when.
    pub best: f64,
    pub best_at_minutes: f64,
    /// Where the recipe came from.
    pub config: String,
    pub metric: String,
    /// Training minutes until the paper's value (`None`: not within the budget).
    pub minutes_to_paper: Option<f64>,
    /// The paper's column: point, mog1 or mog2.
    pub model: String,
    pub paper: f64,
    pub reached: bool,
    pub split: String,
    pub step: Option<usize>,
    pub threads: i32,
    pub trained_minutes: f64,
    /// Every field left `null`, and why (absent when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<hedge_data::undefined::Undefined>,
}

impl RecipeBenchReport {
    fn with_nulls_explained(mut self) -> Self {
        let why = "the paper's value was not reached within the budget (reached: false)";
        self.undefined = hedge_data::undefined::explain_nulls(
            &self,
            &[NullReason::new("minutes_to_paper", why), NullReason::new("step", why)],
        );
        self
    }
}

impl RecipeBench {
    /// Runs the benchmark into a new run directory `out` (its `monitor.jsonl` is the curve);
    /// `source` names the recipe in the report, `on_event` sees the training.
    pub fn run(
        &self,
        out: &Path,
        source: &str,
        command: &str,
        on_event: impl FnMut(TrainEvent),
    ) -> Result<RecipeBenchReport> {
        if self.split == NDigitSplit::Train {
            return Err(EmbedError::invalid("split", "train", "the benchmark measures test_seen or test_unseen"));
        }
        let device = Device::Cpu;
        let mut config =
            self.recipe.clone().with_digits(2).with_dim(2).with_steps(crate::run_eval::PLANNED_STEPS_PLACEHOLDER);
        config.conv_precision = config.conv_precision.resolve(device);
        config.check_ref()?;
        let column = paper_column(&config).ok_or_else(|| {
            EmbedError::invalid("model", format!("{:?}", config.model), "the paper reports point, MoG-1 and MoG-2 only")
        })?;
        let paper = crate::paper::table1(2, 2)
            .and_then(|t| t.model(column).copied())
            .ok_or_else(|| EmbedError::invalid("model", column, "the paper has no such column"))?;
        let target = self.metric.paper_value(&paper);
        let plan = TrainPlan {
            budget_minutes: Some(self.budget_minutes),
            watch_every: self.watch_every,
            watch_splits: vec![self.split],
            target: Some(QualityTarget { set: self.split.name().into(), metric: self.metric, value: target }),
            ..Default::default()
        };
        let run = crate::run_eval::new_run(out, false, &config, &plan, device, command)?;
        let trainer = train_run(&run, &config, device, false, &plan, on_event)?;
        let records: Vec<MonitorRecord> = run.read_json_lines(crate::run::MONITOR_FILE)?;
        let r = first_reaching(&records, self.split.name(), self.metric, target).ok_or_else(|| {
            EmbedError::invalid("watch_every", self.watch_every, "no evaluation ran; lower --watch-every")
        })?;
        Ok(RecipeBenchReport {
            best: r.best,
            best_at_minutes: r.best_at_seconds / 60.0,
            config: source.to_string(),
            metric: self.metric.label().to_string(),
            minutes_to_paper: r.reached_at_seconds.map(|s| s / 60.0),
            model: column.to_string(),
            paper: target,
            reached: r.reached_at_seconds.is_some(),
            split: self.split.name().to_string(),
            step: r.reached_at_step,
            threads: tch::get_num_threads(),
            trained_minutes: trainer.seconds() / 60.0,
            undefined: Vec::new(),
        }
        .with_nulls_explained())
    }
}
