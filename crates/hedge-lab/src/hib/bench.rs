//! Benchmarks of HIB: throughput of the default network (training steps and inference, in
//! images per second) and the recipe benchmark (minutes of training until a recipe reaches the
//! paper's N = 2, D = 2 Table 1 value).

use std::path::Path;
use std::time::Instant;

use hedge_data::NDigitSplit;
use hedge_run::undefined::NullReason;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use hedge_embed::config::{ConvPrecision, HibConfig};
use hedge_embed::distribution::Embedding;
use hedge_embed::experiment::{paper_column, train_run, TrainPlan};
use hedge_embed::loss::vib_loss;
use hedge_embed::monitor::{first_reaching, MonitorRecord, QualityTarget, QuickMetric};
use hedge_embed::optim::Adam;
use hedge_embed::train::build_model;
use hedge_embed::train::TrainEvent;

use crate::Result;
use hedge_run::ParamGuard;

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
    let mut adam = Adam::new(&vs, config.optimiser.learning_rate);
    let pairs = (config.data.batch.images() / 2) as i64;
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
            let loss =
                vib_loss(&net.matcher, &left, &right, &is_match, config.effective_samples() as i64, config.loss.beta);
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
        conv_precision: config.model.conv_precision,
        device: hedge_embed::device_name(device),
        infer_batch_images: infer_batch,
        infer_batches_timed: infer_batches,
        infer_images_per_s: infer_ips,
        model: format!(
            "gaussian D={} K={} on {}-digit MNIST, channels {:?}",
            config.model.dim, config.loss.samples, config.data.digits, config.model.channels
        ),
        pairs_per_image_pair: reuse.max(1),
        threads: tch::get_num_threads(),
        train_batch_images: config.data.batch.images(),
        train_images_per_s: train_ips,
        train_pairs_per_s: train_ips / 2.0 * reuse.max(1) as f64,
        train_steps_timed: train_steps,
    })
}

/// The recipe benchmark: train `recipe` (as N = 2, D = 2, on its protocol) on the CPU for at most
/// `budget_minutes`, watching its validation images (or classes) and the protocol's main test
/// split every `watch_every` steps. Training stops early only when the *validation* set reaches
/// all four of the paper's Table 1 values for the recipe's column; the test split is reported
/// (minutes until each paper value, or the best value and when) and never steers training.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeBench {
    pub recipe: HibConfig,
    pub budget_minutes: f64,
    pub watch_every: usize,
}

/// When one watched set first reached one of the paper's values, or the best it reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReachedReport {
    /// Training minutes until the paper's value (`None`: not within the run).
    pub minutes_to_paper: Option<f64>,
    pub step: Option<usize>,
    /// The best value reached, and when.
    pub best: f64,
    pub best_at_minutes: f64,
    pub best_at_step: usize,
}

impl ReachedReport {
    fn of(r: &hedge_embed::monitor::Reached) -> Self {
        ReachedReport {
            minutes_to_paper: r.reached_at_seconds.map(|s| s / 60.0),
            step: r.reached_at_step,
            best: r.best,
            best_at_minutes: r.best_at_seconds / 60.0,
            best_at_step: r.best_at_step,
        }
    }
}

/// One of the four Table 1 numbers in the recipe benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecipeMetricReport {
    pub metric: String,
    pub paper: f64,
    /// On the protocol's main test split (reported, never used to stop).
    pub test: ReachedReport,
    /// On the validation images or classes (the stop rule).
    pub validation: ReachedReport,
}

/// What the recipe benchmark measured (fields in the order of its JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecipeBenchReport {
    /// Where the recipe came from.
    pub config: String,
    /// The four Table 1 numbers: AP clean, AP corrupt, KNN clean, KNN corrupt.
    pub metrics: Vec<RecipeMetricReport>,
    /// The paper's column: point, mog1 or mog2.
    pub model: String,
    pub protocol: hedge_data::NDigitProtocol,
    /// The test split reported.
    pub split: NDigitSplit,
    /// Whether the validation set reached all four paper values (training stopped there).
    pub stopped_on_validation: bool,
    pub threads: i32,
    pub trained_minutes: f64,
    /// Every field left `null`, and why (absent when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<hedge_run::undefined::Undefined>,
}

impl RecipeBenchReport {
    fn with_nulls_explained(mut self) -> Self {
        let why = "the paper's value was not reached within the run";
        self.undefined = hedge_run::undefined::explain_nulls(
            &self,
            &[NullReason::new("metrics[*].*.minutes_to_paper", why), NullReason::new("metrics[*].*.step", why)],
        );
        self
    }

    /// The report as a Markdown table: per paper value, when test and validation reached it.
    pub fn markdown(&self) -> String {
        use std::fmt::Write as _;
        let when = |r: &ReachedReport| match r.minutes_to_paper {
            Some(m) => format!("{m:.1} min (step {})", r.step.unwrap_or(0)),
            None => "not reached".into(),
        };
        let mut t = format!(
            "Recipe benchmark: {} ({}), protocol {}, {:.1} minutes of training on {} threads; {}.\n\n\
             | paper value | {} reached at | {} best (at) | validation reached at | validation best (at) |\n|---|---|---|---|---|\n",
            self.config,
            self.model,
            self.protocol.name(),
            self.trained_minutes,
            self.threads,
            if self.stopped_on_validation {
                "stopped when the validation set reached all four paper values"
            } else {
                "the validation set did not reach all four paper values"
            },
            self.split,
            self.split,
        );
        for m in &self.metrics {
            let _ = writeln!(
                t,
                "| {} {:.3} | {} | {:.3} ({:.1} min) | {} | {:.3} ({:.1} min) |",
                m.metric,
                m.paper,
                when(&m.test),
                m.test.best,
                m.test.best_at_minutes,
                when(&m.validation),
                m.validation.best,
                m.validation.best_at_minutes
            );
        }
        t
    }
}

impl RecipeBench {
    /// Runs the benchmark on `data`'s N = 2 MNIST into a new run directory `out` (its
    /// `monitor.jsonl` is the curve);
    /// `source` names the recipe in the report, `on_event` sees the training.
    ///
    /// # Errors
    /// A recipe that holds no validation images or classes out (the stop rule needs them), and
    /// the errors of training.
    pub fn run(
        &self,
        data: &hedge_embed::HibData,
        out: &Path,
        source: &str,
        command: &str,
        on_event: impl FnMut(TrainEvent),
    ) -> Result<RecipeBenchReport> {
        let device = Device::Cpu;
        let steps = hedge_embed::Steps::Budget { minutes: self.budget_minutes };
        let mut config = self.recipe.clone().with_digits(2).with_dim(2).with_training(steps);
        config.model.conv_precision = config.model.conv_precision.resolve(device)?;
        config.check_ref()?;
        if config.data.validation_fraction == 0.0 && config.data.validation_classes == 0 {
            return Err(crate::error::invalid(
                "validation_fraction",
                0,
                "the benchmark stops on validation, never on test: hold images out (validation_fraction = 0.05, \
                 instance) or classes (validation_classes = 10, open-set)",
            ));
        }
        let column = paper_column(&config).ok_or_else(|| {
            crate::error::invalid(
                "model",
                format!("{:?}", config.model.embedding),
                "the paper reports point, MoG-1 and MoG-2 only",
            )
        })?;
        let paper = crate::hib::paper::table1(2, 2)
            .and_then(|t| t.model(column).copied())
            .ok_or_else(|| crate::error::invalid("model", column, "the paper has no such column"))?;
        let split: NDigitSplit = config.data.protocol.main_test_split();
        let plan = TrainPlan {
            budget_minutes: Some(self.budget_minutes),
            watch_every: self.watch_every,
            watch_splits: vec![split],
            targets: QuickMetric::ALL
                .iter()
                .map(|&metric| QualityTarget {
                    set: "validation".into(),
                    metric,
                    value: crate::hib::paper::quick_metric_value(&paper, metric),
                })
                .collect(),
            ..Default::default()
        };
        let run = hedge_embed::experiment::new_run(out, false, &config, &plan, device, command)?;
        let trainer = train_run(&run, data, &config, device, false, &plan, on_event)?;
        let records: Vec<MonitorRecord> = run.read_json_lines(hedge_embed::run::MONITOR_FILE)?;
        let no_watch =
            || crate::error::invalid("watch_every", self.watch_every, "no evaluation ran; lower --watch-every");
        let mut metrics = Vec::new();
        for metric in QuickMetric::ALL {
            let target = crate::hib::paper::quick_metric_value(&paper, metric);
            let test = first_reaching(&records, split.name(), metric, target).ok_or_else(no_watch)?;
            let validation = first_reaching(&records, "validation", metric, target).ok_or_else(no_watch)?;
            metrics.push(RecipeMetricReport {
                metric: metric.label().to_string(),
                paper: target,
                test: ReachedReport::of(&test),
                validation: ReachedReport::of(&validation),
            });
        }
        let last = records.last().ok_or_else(no_watch)?;
        Ok(RecipeBenchReport {
            config: source.to_string(),
            metrics,
            model: column.to_string(),
            protocol: config.data.protocol,
            split,
            stopped_on_validation: plan.targets.iter().all(|t| t.reached(last)),
            threads: tch::get_num_threads(),
            trained_minutes: trainer.seconds() / 60.0,
            undefined: Vec::new(),
        }
        .with_nulls_explained())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33: the benchmark used to stop when a test split reached the paper's value. Now it
    /// stops on validation only, so a recipe without validation images or classes is refused
    /// before anything is written.
    #[test]
    fn the_recipe_benchmark_needs_a_validation_set_and_writes_nothing_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let bench = RecipeBench { recipe: HibConfig::default(), budget_minutes: 1.0, watch_every: 100 };
        let data = hedge_embed::HibData::new(hedge_data::DataRoot::from_env());
        let e = bench.run(&data, &out, "test", "test", |_| {}).unwrap_err().to_string();
        assert!(e.contains("stops on validation, never on test") && e.contains("validation_fraction"), "{e}");
        assert!(!out.exists());
    }

    #[test]
    fn the_recipe_report_says_when_test_and_validation_reached_each_paper_value() {
        let reached = |minutes: Option<f64>, best: f64| ReachedReport {
            minutes_to_paper: minutes,
            step: minutes.map(|m| (m * 100.0) as usize),
            best,
            best_at_minutes: 40.0,
            best_at_step: 4000,
        };
        let report = RecipeBenchReport {
            config: "recipe.toml".into(),
            metrics: vec![RecipeMetricReport {
                metric: "verification AP, clean".into(),
                paper: 0.989,
                test: reached(None, 0.971),
                validation: reached(Some(12.5), 0.990),
            }],
            model: "mog1".into(),
            protocol: hedge_data::NDigitProtocol::Instance,
            split: NDigitSplit::Test,
            stopped_on_validation: false,
            threads: 2,
            trained_minutes: 45.0,
            undefined: Vec::new(),
        }
        .with_nulls_explained();
        let t = report.markdown();
        assert!(t.contains("| verification AP, clean 0.989 | not reached | 0.971 (40.0 min) | 12.5 min (step 1250) | 0.990 (40.0 min) |"), "{t}");
        assert!(report.undefined.iter().any(|u| u.fields.iter().any(|f| f == "metrics[0].test.minutes_to_paper")));
        let back: RecipeBenchReport = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        assert_eq!(back, report);
    }
}
