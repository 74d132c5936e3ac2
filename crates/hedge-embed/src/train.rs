//! Training a HIB model on N-digit MNIST pairs (Section 2.3, Appendix A).

use std::path::Path;
use std::time::Instant;

use hedge_data::{BalancedPairSampler, Corruption, DigitPool, GroupedPairSampler, ImageDataset};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{nn, Device, Kind, Tensor};

use crate::config::{BatchComposition, HibConfig, MatchInit, PairSet, ValidationDigits};
use crate::distribution::{index_tensor, Embedding};
use crate::ema::Ema;
use crate::embed::{images_to_tensor, non_finite_count};
use crate::loss::MatchHead;
use crate::model::HibNet;
use crate::monitor::{split_off_classes, split_off_images, validation_classes, MonitorRecord, QualityTarget, WatchSet};
use crate::optim::Adam;
use crate::pair_loss::{LossInput, PairLoss};
use crate::run::{
    BestModel, RunDir, RunState, StepMetrics, BEST_FILE, BEST_MODEL_FILE, CHECKPOINTS_DIR, EMA_FILE, MODEL_FILE,
    MONITOR_FILE, OPTIMIZER_FILE, STATE_FILE,
};
use crate::{EmbedError, Result};
use hedge_run::{Checked, ParamGuard};

/// Images per validation class at most (the size of a `test_unseen` class).
pub const VALIDATION_PER_CLASS: usize = 333;
/// Steps whose time plans a budgeted run (the first five, which warm caches up, excluded).
pub const CALIBRATION_STEPS: usize = 30;

/// Builds a network with its variables, initialised deterministically from `config.seed`.
pub fn build_model(config: &HibConfig, device: Device) -> Result<(nn::VarStore, HibNet)> {
    config.check_ref()?;
    let _generator = crate::seeded_generator(config.seed as i64);
    let vs = nn::VarStore::new(device);
    let net = HibNet::new(&vs.root(), config);
    Ok((vs, net))
}

/// The weights a run is evaluated with: the averaged weights (`model_ema.safetensors`) when
/// the run kept an average, else `model.safetensors`.
pub fn weights_path(run: &RunDir, config: &HibConfig) -> std::path::PathBuf {
    let ema = run.file(EMA_FILE);
    if config.optimiser.ema_decay > 0.0 && ema.is_file() {
        ema
    } else {
        run.file(MODEL_FILE)
    }
}

/// Loads [`weights_path`] into a freshly built network.
pub fn load_model(run: &RunDir, config: &HibConfig, device: Device) -> Result<(nn::VarStore, HibNet)> {
    let (mut vs, net) = build_model(config, device)?;
    load_weights(&mut vs, &weights_path(run, config), "the run's config.json")?;
    Ok((vs, net))
}

/// [`load_model`], or with `weights` (another file of the same model, such as the one validation
/// chose) loaded instead of the run's own: one load either way. `replacing` says, in an error,
/// where the other weights came from.
pub fn load_model_from(
    run: &RunDir,
    config: &HibConfig,
    weights: Option<&Path>,
    replacing: &str,
    device: Device,
) -> Result<(nn::VarStore, HibNet)> {
    let Some(w) = weights else { return load_model(run, config, device) };
    let (mut vs, net) = build_model(config, device)?;
    load_weights(&mut vs, w, &format!("the run's config.json ({replacing})"))?;
    Ok((vs, net))
}

/// Loads `path` into `vs`, refusing weights that do not fit the model `described_by` describes
/// (libtorch's message, without its C++ trace, and the likely cause) and weights holding NaN or
/// infinity (a diverged training), naming the tensor.
pub fn load_weights(vs: &mut nn::VarStore, path: &Path, described_by: &str) -> Result<()> {
    if !path.is_file() {
        return Err(EmbedError::input(
            path,
            "is not a file of weights (expected a .safetensors file a hedge run wrote)",
        ));
    }
    vs.load(path).map_err(|e| {
        EmbedError::input(
            path,
            format!(
                "cannot be loaded as the weights of the model {described_by} describes ({}); use the \
                 model.safetensors of the same run, and do not edit config.json after training",
                hedge_run::libtorch_message(&e.to_string())
            ),
        )
    })?;
    check_finite_weights(vs, path)
}

/// Refuses weights holding NaN or infinity, naming the first such tensor.
pub fn check_finite_weights(vs: &nn::VarStore, path: &Path) -> Result<()> {
    match first_non_finite(vs) {
        Some((name, bad)) => Err(EmbedError::input(
            path,
            format!(
                "holds {bad} non-finite value(s) (NaN or infinity) in '{name}': the training diverged \
                 before these weights were written. Retrain with a lower --lr, or use an earlier checkpoint \
                 (--keep-every)"
            ),
        )),
        None => Ok(()),
    }
}

/// The first variable of `vs` (in name order) holding NaN or infinity, with its count.
fn first_non_finite(vs: &nn::VarStore) -> Option<(String, i64)> {
    let mut variables: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    variables.sort_by(|a, b| a.0.cmp(&b.0));
    variables.into_iter().map(|(name, t)| (name, non_finite_count(&t))).find(|(_, bad)| *bad > 0)
}

/// Refuses to write weights holding NaN or infinity: the run stops with the step, the tensor
/// and the file that would have held them, and the last good checkpoint stays in place.
fn require_finite_before_write(vs: &nn::VarStore, step: usize, file: &str) -> Result<()> {
    match first_non_finite(vs) {
        Some((tensor, count)) => Err(EmbedError::NonFiniteWeights { step, tensor, count, file: file.to_string() }),
        None => Ok(()),
    }
}

/// Everything one optimiser step needs, drawn from the step's own random stream.
struct StepBatch {
    images: Tensor,
    is_match: Tensor,
    pairs: usize,
    /// Positions of each pair's images in `images` (grouped batches); `None` means the first
    /// `pairs` images are the left ones and the next `pairs` the right ones.
    positions: Option<(Tensor, Tensor)>,
}

/// The pair sampler of a [`BatchComposition`].
enum Sampler {
    /// The sampler and the pairs per step.
    Independent(BalancedPairSampler, usize),
    Grouped(GroupedPairSampler),
}

/// The weight average kept beside the trained weights.
struct Averaged {
    vs: nn::VarStore,
    net: HibNet,
    ema: Ema,
}

/// What [`Trainer::run_with`] does besides training.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Sets evaluated every `watch_every` steps and at the end (`monitor.jsonl`). A set named
    /// `validation` chooses the best model (`model_best.safetensors`, `best.json`).
    pub watch: &'a [WatchSet],
    pub watch_every: usize,
    /// Stop once this much training wall-clock (evaluation excluded) has passed. With
    /// `plan_steps`, the step count is also set from the speed of the first
    /// [`CALIBRATION_STEPS`] steps, so that schedules end at the budget.
    pub budget_seconds: Option<f64>,
    pub plan_steps: bool,
    /// With a budget, train to the planned step count even if the machine slows down later
    /// (the budget only plans the steps): results then do not depend on other work beside the
    /// run, only its wall-clock does.
    pub finish_planned_steps: bool,
    /// Stop (with a checkpoint) at the first watch that reaches every one of these (none: never).
    pub targets: Vec<QualityTarget>,
    /// Asked after every step: `true` stops training there, with a checkpoint at that step, so
    /// the run resumes where it stopped (a notebook's Ctrl-C; none: never asked).
    pub stop: Option<&'a dyn Fn() -> bool>,
}

impl RunOptions<'_> {
    /// Whether training stops now, after `seconds` of training wall-clock, for the budget.
    pub fn budget_reached(&self, seconds: f64) -> bool {
        !self.finish_planned_steps && self.budget_seconds.is_some_and(|b| seconds >= b)
    }
}

/// What [`Trainer::run_with`] reports as it goes.
pub enum TrainEvent<'a> {
    Step {
        metrics: &'a StepMetrics,
        planned_steps: usize,
    },
    Monitor(&'a MonitorRecord),
    /// The step count was planned from the budget.
    Planned {
        steps: usize,
        seconds_per_step: f64,
    },
    /// Training stopped at the wall-clock budget before the planned steps.
    BudgetReached {
        step: usize,
    },
    /// A watch reached every one of [`RunOptions::targets`]; training stopped there.
    TargetReached {
        step: usize,
        train_seconds: f64,
    },
    /// [`RunOptions::stop`] asked to stop; the run's checkpoint is at `step`.
    Stopped {
        step: usize,
    },
}

/// A model being trained, with its optimiser, data and position.
///
/// Training is deterministic for a seed on the CPU. libtorch's generator is process-wide, so
/// two trainings interleaved in one process (threads) disturb each other's noise; run them in
/// turn or in separate processes.
pub struct Trainer {
    pub config: HibConfig,
    pub device: Device,
    pub vs: nn::VarStore,
    pub net: HibNet,
    adam: Adam,
    dataset: ImageDataset,
    sampler: Sampler,
    step: usize,
    seconds: f64,
    keep_every: Option<usize>,
    averaged: Option<Averaged>,
    validation: Option<ImageDataset>,
    held_out: Vec<u32>,
    /// Every pair of a grouped batch (`pair_set = all`): left and right positions, and which
    /// ones match.
    all_pairs: Option<(Tensor, Tensor, Tensor)>,
    /// The training images' digit images, when each step's images are recomposed from them
    /// (`recompose`).
    recomposition: Option<DigitPool>,
}

/// The training images split for a run: what it trains on, its validation images and the
/// classes they came from, and the batch sampler over the training images.
struct SplitData {
    train: ImageDataset,
    validation: Option<ImageDataset>,
    held_out: Vec<u32>,
    sampler: Sampler,
}

/// Checks `dataset` against `config` and splits it as [`Trainer::new`] trains on it.
fn split_data(config: &HibConfig, dataset: ImageDataset) -> Result<SplitData> {
    if dataset.shape() != config.input_shape() {
        return Err(EmbedError::invalid(
            "digits",
            format!("{:?}", config.input_shape()),
            format!(
                "the dataset's images are {:?} (channels, height, width); train on a matching dataset or set digits \
                 / data to match",
                dataset.shape()
            ),
        ));
    }
    let held_out = if config.data.validation_classes > 0 {
        validation_classes(&dataset, config.data.validation_classes, config.data.validation_seed)?
    } else {
        Vec::new()
    };
    let (train, validation) = if !held_out.is_empty() {
        let (train, val) = split_off_classes(&dataset, &held_out, VALIDATION_PER_CLASS);
        (train, Some(val))
    } else if config.data.validation_fraction > 0.0 {
        let (train, val) = split_off_images(&dataset, config.data.validation_fraction, config.data.validation_seed)?;
        (train, Some(val))
    } else {
        (dataset, None)
    };
    let validation = match (validation, config.data.validation_digits) {
        (Some(held_out_images), ValidationDigits::Unused) => {
            let pool = train.unused_digits()?;
            let mut rng = ChaCha8Rng::seed_from_u64(config.data.validation_seed);
            Some(held_out_images.with_digits_redrawn(&pool, &mut rng)?)
        }
        (validation, _) => validation,
    };
    let sampler = match config.data.batch {
        BatchComposition::Independent { pairs } => {
            Sampler::Independent(BalancedPairSampler::new(&train.labels)?, pairs)
        }
        BatchComposition::Grouped { classes, per_class } => {
            Sampler::Grouped(GroupedPairSampler::new(&train.labels, classes, per_class)?)
        }
    };
    Ok(SplitData { train, validation, held_out, sampler })
}

/// The images a run with `config` holds out of its training split `train` to choose models on
/// ([`Trainer::validation_set`]), drawn as training draws them; `None` when it holds none out.
pub fn validation_images(config: &HibConfig, train: ImageDataset) -> Result<Option<ImageDataset>> {
    split_data(config, train).map(|split| split.validation)
}

impl Trainer {
    /// `dataset` is the whole training split; with `validation_classes > 0` those classes, with
    /// `validation_fraction > 0` that share of every class's images, are taken out of it first
    /// ([`Trainer::validation_set`]).
    ///
    /// # Errors
    /// A dataset whose image shape differs from the config's input (`digits`, or the user's
    /// images' shape; the settings themselves were validated by [`ParamGuard::check`]).
    pub fn new(config: Checked<HibConfig>, dataset: ImageDataset, device: Device) -> Result<Self> {
        let mut config = config.into_inner();
        config.model.conv_precision = config.model.conv_precision.resolve(device)?;
        let SplitData { train: dataset, validation, held_out, sampler } = split_data(&config, dataset)?;
        let (vs, net) = build_model(&config, device)?;
        let mut adam = Adam::new(&vs, config.optimiser.learning_rate);
        adam.scale_learning_rate("match.", config.optimiser.head_lr_scale);
        if config.optimiser.weight_decay > 0.0 {
            adam.set_weight_decay(config.optimiser.weight_decay, HibNet::is_decayed);
        }
        let averaged = if config.optimiser.ema_decay > 0.0 {
            let (mut shadow, shadow_net) = build_model(&config, device)?;
            Ema::reset(&mut shadow, &vs)?;
            Some(Averaged { vs: shadow, net: shadow_net, ema: Ema::new(config.optimiser.ema_decay) })
        } else {
            None
        };
        let all_pairs = match config.data.batch {
            BatchComposition::Grouped { classes, per_class } if config.data.pair_set == PairSet::All => {
                Some(all_pairs(classes, per_class, device))
            }
            _ => None,
        };
        let recomposition = if config.data.recompose { Some(dataset.digit_pool()?) } else { None };
        Ok(Trainer {
            config,
            device,
            vs,
            net,
            adam,
            dataset,
            sampler,
            step: 0,
            seconds: 0.0,
            keep_every: None,
            averaged,
            validation,
            held_out,
            all_pairs,
            recomposition,
        })
    }

    /// Refuses training images `config` cannot train on (another image shape; fewer classes or
    /// images than its batches or validation split need) without building a network: the check
    /// a command makes before it creates a run folder.
    pub fn check_data(config: &Checked<HibConfig>, dataset: ImageDataset) -> Result<()> {
        split_data(config, dataset).map(|_| ())
    }

    /// The held-out validation images: the classes of `validation_classes > 0` (at most
    /// [`VALIDATION_PER_CLASS`] images each), or `validation_fraction` of every class's images.
    pub fn validation_set(&self) -> Option<&ImageDataset> {
        self.validation.as_ref()
    }

    /// The training classes held out for validation (sorted; empty without validation).
    pub fn held_out_classes(&self) -> &[u32] {
        &self.held_out
    }

    /// The network to evaluate: the weight average when one is kept, else the trained weights.
    pub fn inference_net(&self) -> &HibNet {
        self.averaged.as_ref().map_or(&self.net, |a| &a.net)
    }

    /// The variables of [`Trainer::inference_net`].
    pub fn inference_vars(&self) -> &nn::VarStore {
        self.averaged.as_ref().map_or(&self.vs, |a| &a.vs)
    }

    /// Training wall-clock so far, in seconds.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// Also keep a copy of the model every `every` steps as
    /// `checkpoints/model-<step>.safetensors` (for quality-vs-steps curves).
    pub fn keep_checkpoints_every(&mut self, every: usize) {
        self.keep_every = (every > 0).then_some(every);
    }

    /// Steps taken so far.
    pub fn step(&self) -> usize {
        self.step
    }

    /// Restores model, optimiser and position from a run's last checkpoint.
    pub fn resume_from(&mut self, run: &RunDir) -> Result<()> {
        load_weights(&mut self.vs, &run.file(MODEL_FILE), "the run's config.json")?;
        self.adam.load(&run.file(OPTIMIZER_FILE))?;
        let state = run.read_state()?;
        if state.step as i64 != self.adam.steps_taken() {
            return Err(EmbedError::run(
                &run.path,
                format!("state.json says step {} but the optimizer state has {}", state.step, self.adam.steps_taken()),
            ));
        }
        if let Some(avg) = &mut self.averaged {
            load_weights(&mut avg.vs, &run.file(EMA_FILE), "the run's config.json")?;
            avg.ema.set_updates(state.step as i64);
        }
        self.step = state.step;
        self.seconds = state.seconds;
        Ok(())
    }

    /// Writes model, optimiser (and weight average) and state of the current step.
    ///
    /// The files are staged and committed together by `checkpoint.json`, so a run killed
    /// while writing them resumes from this checkpoint or the previous one, never a mix.
    pub fn checkpoint(&self, run: &RunDir) -> Result<()> {
        require_finite_before_write(&self.vs, self.step, MODEL_FILE)?;
        if let Some(avg) = &self.averaged {
            require_finite_before_write(&avg.vs, self.step, EMA_FILE)?;
        }
        let mut checkpoint = run.directory().checkpoint(self.step as u64);
        checkpoint.stage_with(MODEL_FILE, |p| Ok::<_, EmbedError>(self.vs.save(p)?))?;
        if let Some(avg) = &self.averaged {
            checkpoint.stage_with(EMA_FILE, |p| Ok::<_, EmbedError>(avg.vs.save(p)?))?;
        }
        checkpoint.stage_with(OPTIMIZER_FILE, |p| self.adam.save(p))?;
        checkpoint.stage_json(STATE_FILE, &RunState { step: self.step, seconds: self.seconds })?;
        checkpoint.commit()?;
        Ok(())
    }

    /// The pairs, occlusions and images of step `step`. Each step has its own random stream
    /// (seed, step), so a resumed run sees exactly the data an uninterrupted one would.
    fn batch(&self, step: usize) -> StepBatch {
        let mut rng = ChaCha8Rng::seed_from_u64(self.config.seed);
        rng.set_stream(step as u64);
        let corruption = Corruption::Random { probability: self.config.data.occlusion_probability };
        let (order, pairs, positions) = match &self.sampler {
            Sampler::Independent(sampler, count) => {
                let pairs = sampler.sample(*count, &mut rng);
                // Left images first, then right ones: one forward pass embeds both.
                let order: Vec<usize> = pairs.left.iter().chain(&pairs.right).copied().collect();
                (order, pairs, None)
            }
            Sampler::Grouped(sampler) => {
                let batch = sampler.sample(&mut rng);
                let index = |p: &[usize]| index_tensor(p).to_device(self.device);
                let positions = (index(&batch.pairs.left), index(&batch.pairs.right));
                (batch.images, batch.pairs, Some(positions))
            }
        };
        let pixels = self.dataset.render_training_batch(
            &order,
            self.recomposition.as_ref(),
            self.config.data.digit_shift,
            &corruption,
            &mut rng,
        );
        StepBatch {
            images: images_to_tensor(&pixels, order.len(), self.dataset.shape(), self.device),
            is_match: Tensor::from_slice(&pairs.is_match).to_device(self.device),
            pairs: pairs.len(),
            positions,
        }
    }

    /// One optimiser step; returns the metrics of the step.
    pub fn train_step(&mut self) -> Result<StepMetrics> {
        let started = Instant::now();
        let batch = self.batch(self.step);
        // The reparameterisation noise of this step, reproducible on resume.
        let _generator =
            crate::seeded_generator((self.config.seed as i64).wrapping_mul(1_000_003).wrapping_add(self.step as i64));
        let embedding = self.net.forward_t(&batch.images, true);
        let (left, right) = match &batch.positions {
            Some((l, r)) => (embedding.select_rows(l), embedding.select_rows(r)),
            None => {
                let b = batch.pairs as i64;
                (embedding.narrow(0, b), embedding.narrow(b, b))
            }
        };
        if self.step == 0 && self.config.model.match_init == MatchInit::FirstBatch {
            init_offset_from_distances(&self.net.matcher, &left, &right);
        }
        let all_pairs = self.all_pairs.as_ref().map(|(l, r, m)| (l, r, m));
        let terms = self.config.loss.kind.loss().loss(&LossInput {
            matcher: &self.net.matcher,
            embedding: &embedding,
            left: &left,
            right: &right,
            is_match: &batch.is_match,
            all_pairs,
            params: self.config.loss_params(),
        });
        let (total, pair, kl, scored_pairs) = (terms.total, terms.pair, terms.kl, terms.pairs);
        self.adam.learning_rate = self.config.learning_rate_at(self.step);
        self.adam.zero_grad();
        total.backward();
        self.adam.step();
        if let Some(avg) = &mut self.averaged {
            avg.ema.update(&avg.vs, &self.vs);
        }
        self.step += 1;
        let seconds = started.elapsed().as_secs_f64();
        self.seconds += seconds;
        let loss = total.double_value(&[]);
        if !loss.is_finite() {
            return Err(EmbedError::Diverged { step: self.step, loss });
        }
        Ok(StepMetrics {
            step: self.step,
            loss,
            pair_loss: pair.double_value(&[]),
            kl: kl.double_value(&[]),
            a: self.net.matcher.a().double_value(&[]),
            b: self.net.matcher.b.double_value(&[]),
            seconds: self.seconds,
            pairs_per_s: scored_pairs as f64 / seconds,
            pairs: scored_pairs,
        })
    }

    /// Trains up to `config.steps`, logging every `log_every` steps to `run` (when given) and to
    /// `on_step` (every step), and checkpointing every `checkpoint_every` steps and at the end.
    pub fn run(&mut self, run: Option<&RunDir>, mut on_step: impl FnMut(&StepMetrics)) -> Result<()> {
        self.run_with(run, &RunOptions::default(), |event| {
            if let TrainEvent::Step { metrics, .. } = event {
                on_step(metrics)
            }
        })
    }

    /// [`Trainer::run`] with watched sets, model choice on validation classes and a wall-clock
    /// budget (see [`RunOptions`]). With a budget and `plan_steps`, `config.steps` is replaced
    /// by the planned count (and `config.json` of `run` rewritten) after the calibration steps.
    pub fn run_with(
        &mut self,
        run: Option<&RunDir>,
        options: &RunOptions,
        mut on_event: impl FnMut(TrainEvent),
    ) -> Result<()> {
        let mut calibration_start = None;
        while self.step < self.config.schedule.steps {
            let m = self.train_step()?;
            on_event(TrainEvent::Step { metrics: &m, planned_steps: self.config.schedule.steps });
            if m.step == 5 {
                calibration_start = Some(self.seconds);
            }
            if let (Some(budget), true, Some(t0)) = (options.budget_seconds, options.plan_steps, calibration_start) {
                if m.step == CALIBRATION_STEPS {
                    let per_step = (self.seconds - t0) / (CALIBRATION_STEPS - 5) as f64;
                    let rest = ((budget - self.seconds) / per_step).floor().max(0.0) as usize;
                    self.config.schedule.steps = (self.step + rest).max(self.config.schedule.warmup_steps + 1);
                    if let Some(run) = run {
                        let mut rc = run.read_config()?;
                        rc.hib.schedule.steps = self.config.schedule.steps;
                        run.write_config(&rc)?;
                    }
                    on_event(TrainEvent::Planned { steps: self.config.schedule.steps, seconds_per_step: per_step });
                }
            }
            let budget_hit = options.budget_reached(self.seconds) && self.step < self.config.schedule.steps;
            let last = m.step == self.config.schedule.steps || budget_hit;
            // Everything a step writes comes before its checkpoint: a run killed after the
            // checkpoint has written all of it, one killed before redoes the step.
            if let Some(run) = run {
                if m.step % self.config.schedule.log_every == 0 || last {
                    run.append_metrics(&m)?;
                }
                if self.keep_every.is_some_and(|k| m.step % k == 0) {
                    let name = format!("{CHECKPOINTS_DIR}/model-{:07}.safetensors", m.step);
                    require_finite_before_write(self.inference_vars(), self.step, &name)?;
                    run.write_with(&name, |p| Ok(self.inference_vars().save(p)?))?;
                }
            }
            let watch_now = options.watch_every > 0 && (m.step % options.watch_every == 0 || last);
            let mut target_reached = false;
            if !options.watch.is_empty() && watch_now {
                let record = self.watch(options.watch)?;
                if let Some(run) = run {
                    run.append_json_line(MONITOR_FILE, &record)?;
                    self.keep_if_best(run, &record)?;
                }
                on_event(TrainEvent::Monitor(&record));
                target_reached = !options.targets.is_empty() && options.targets.iter().all(|t| t.reached(&record));
            }
            let stop = !last && options.stop.is_some_and(|stop| stop());
            if let Some(run) = run {
                if m.step % self.config.schedule.checkpoint_every == 0 || last || target_reached || stop {
                    self.checkpoint(run)?;
                }
            }
            if stop {
                on_event(TrainEvent::Stopped { step: self.step });
                break;
            }
            if target_reached {
                on_event(TrainEvent::TargetReached { step: self.step, train_seconds: self.seconds });
                break;
            }
            if budget_hit {
                on_event(TrainEvent::BudgetReached { step: self.step });
                break;
            }
        }
        Ok(())
    }

    /// Evaluates the inference network on every watched set.
    pub fn watch(&self, sets: &[WatchSet]) -> Result<MonitorRecord> {
        let started = Instant::now();
        let stochastic = self.config.model.embedding.is_stochastic();
        let mut out = std::collections::BTreeMap::new();
        for set in sets {
            out.insert(set.name.clone(), set.evaluate(self.inference_net(), self.device, stochastic)?);
        }
        Ok(MonitorRecord {
            step: self.step,
            train_seconds: self.seconds,
            ema: self.averaged.is_some(),
            sets: out,
            eval_seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Keeps the inference weights as `model_best.safetensors` when the `validation` set's
    /// score beats the best so far (`best.json`).
    fn keep_if_best(&self, run: &RunDir, record: &MonitorRecord) -> Result<()> {
        let Some(q) = record.sets.get("validation") else {
            return Ok(());
        };
        let best: Option<BestModel> = run.read_json_if_present(BEST_FILE)?;
        if best.is_some_and(|b| b.score >= q.score() && b.step != record.step) {
            return Ok(());
        }
        // Weights first, then best.json: a run killed between the two re-evaluates this step
        // when it resumes and writes both again.
        require_finite_before_write(self.inference_vars(), self.step, BEST_MODEL_FILE)?;
        run.write_with(BEST_MODEL_FILE, |p| Ok(self.inference_vars().save(p)?))?;
        run.write_json(
            BEST_FILE,
            &BestModel { step: record.step, train_seconds: record.train_seconds, score: q.score(), validation: *q },
        )
    }

    /// The dataset being trained on.
    pub fn dataset(&self) -> &ImageDataset {
        &self.dataset
    }
}

/// Positions of every pair `i < j` of a grouped batch of `classes x per_class` images, and
/// whether each matches (same group).
///
/// # Shapes
/// returns three `[n(n − 1)/2]` tensors (two Int64, one Bool), n = classes · per_class.
fn all_pairs(classes: usize, per_class: usize, device: Device) -> (Tensor, Tensor, Tensor) {
    let n = classes * per_class;
    let (mut l, mut r, mut m) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        for j in i + 1..n {
            l.push(i as i64);
            r.push(j as i64);
            m.push(i / per_class == j / per_class);
        }
    }
    (
        Tensor::from_slice(&l).to_device(device),
        Tensor::from_slice(&r).to_device(device),
        Tensor::from_slice(&m).to_device(device),
    )
}

/// Sets b = a · median‖μ1 − μ2‖ over the pairs (first components), so p(m) = 1/2 at the
/// typical distance of the untrained network.
fn init_offset_from_distances(matcher: &MatchHead, left: &Embedding, right: &Embedding) {
    tch::no_grad(|| {
        let d = (left.mean.select(1, 0) - right.mean.select(1, 0))
            .square()
            .sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
            .sqrt();
        let median = d.median().double_value(&[]);
        let b = matcher.a().double_value(&[]) * median;
        let _ = matcher.b.shallow_clone().fill_(b);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EmbeddingKind;

    #[test]
    fn all_pairs_of_a_grouped_batch() {
        let (l, r, m) = all_pairs(3, 2, Device::Cpu);
        assert_eq!(l.size(), [15]);
        let l: Vec<i64> = Vec::try_from(l).unwrap();
        let r: Vec<i64> = Vec::try_from(r).unwrap();
        let m: Vec<bool> = Vec::try_from(m).unwrap();
        // Matches are exactly (0,1), (2,3), (4,5).
        let matched: Vec<(i64, i64)> = (0..15).filter(|&i| m[i]).map(|i| (l[i], r[i])).collect();
        assert_eq!(matched, vec![(0, 1), (2, 3), (4, 5)]);
        assert!(l.iter().zip(&r).all(|(a, b)| a < b));
    }

    #[test]
    fn first_batch_offset_is_a_times_the_median_distance() {
        let vs = nn::VarStore::new(Device::Cpu);
        let head = MatchHead::new(vs.root() / "match", 2.0, 0.0);
        // Pair distances 5 (a 3-4-5 triangle), 1 and 10: median 5, so b = 2 · 5.
        let left = Embedding::point(Tensor::from_slice(&[0.0f32, 0.0, 1.0, 1.0, 0.0, 0.0]).reshape([3, 2]));
        let right = Embedding::point(Tensor::from_slice(&[3.0f32, 4.0, 1.0, 2.0, 6.0, 8.0]).reshape([3, 2]));
        init_offset_from_distances(&head, &left, &right);
        assert!((head.b.double_value(&[]) - 10.0).abs() < 1e-5, "{}", head.b.double_value(&[]));
    }

    /// `weight_decay` reaches exactly the two convolutions' and the head's weight matrices of a
    /// built network (with batch norm, whose scales must not decay), so a renamed layer cannot
    /// silently turn the decay off.
    #[test]
    fn weight_decay_applies_to_the_conv_and_head_weights_only() {
        // Initialising weights draws from the process's one generator: hold it (tests run beside each other).
        let _generator = crate::seeded_generator(0);
        let config = HibConfig::default().with_norm(crate::config::Norm::Batch).with_weight_decay(1e-3);
        let (vs, _net) = build_model(&config, Device::Cpu).unwrap();
        let mut decayed: Vec<String> = vs
            .variables()
            .into_iter()
            .filter(|(name, t)| t.requires_grad() && HibNet::is_decayed(name))
            .map(|(name, _)| name)
            .collect();
        decayed.sort();
        assert_eq!(decayed, ["head.weight", "trunk.conv1.weight", "trunk.conv2.weight"]);
        let mut adam = Adam::new(&vs, config.optimiser.learning_rate);
        assert_eq!(adam.set_weight_decay(config.optimiser.weight_decay, HibNet::is_decayed), 3);
    }

    /// `hidden_units = H` puts a fully connected layer of H units and a ReLU between the trunk
    /// and the head: the network's embedding is head(relu(hidden(features))) computed by hand
    /// from its own variables, the head reads H inputs, and weight decay reaches the new matrix.
    #[test]
    fn hidden_units_put_a_relu_layer_between_the_trunk_and_the_head() {
        // Initialising weights draws from the process's one generator: hold it (tests run beside each other).
        let _generator = crate::seeded_generator(0);
        let config = HibConfig::default().with_model(EmbeddingKind::Point).with_hidden_units(5);
        let (vs, net) = build_model(&config, Device::Cpu).unwrap();
        let vars = vs.variables();
        let features = 64 * 7 * 14;
        assert_eq!(vars["hidden.weight"].size(), [5, features]);
        assert_eq!(vars["head.weight"].size(), [2, 5]);
        let x = Tensor::rand([3, 1, 28, 56], (Kind::Float, Device::Cpu));
        let by_hand = net
            .features(&x)
            .linear(&vars["hidden.weight"], Some(&vars["hidden.bias"]))
            .relu()
            .linear(&vars["head.weight"], Some(&vars["head.bias"]));
        let embedded = net.forward(&x).mean.squeeze_dim(1);
        assert!(embedded.allclose(&by_hand, 1e-5, 1e-6, false), "{embedded} against {by_hand}");
        let mut decayed: Vec<&str> = vars.keys().map(String::as_str).filter(|name| HibNet::is_decayed(name)).collect();
        decayed.sort();
        assert_eq!(decayed, ["head.weight", "hidden.weight", "trunk.conv1.weight", "trunk.conv2.weight"]);
        // Without it the head reads the trunk's features directly, as the paper's network does.
        let (plain, _) = build_model(&HibConfig::default().with_model(EmbeddingKind::Point), Device::Cpu).unwrap();
        assert!(!plain.variables().contains_key("hidden.weight"));
        assert_eq!(plain.variables()["head.weight"].size(), [2, features]);
    }

    /// Dropout acts while training only: at inference a network with dropout embeds exactly as
    /// the same weights without it, while training it drops features (and a network without
    /// dropout or batch norm trains on what it infers).
    #[test]
    fn dropout_acts_while_training_only() {
        let _turn = hedge_run::lock_generator();
        let plain = HibConfig::default();
        let (_vs, without) = build_model(&plain, Device::Cpu).unwrap();
        let (_vs2, with) = build_model(&plain.clone().with_dropout(0.5), Device::Cpu).unwrap();
        let x = Tensor::rand([4, 1, 28, 56], (Kind::Float, Device::Cpu));
        let infer = without.forward(&x).mean;
        assert!(with.forward(&x).mean.equal(&infer));
        assert!(without.forward_t(&x, true).mean.equal(&infer));
        let trained = with.forward_t(&x, true).mean;
        assert!((trained - &infer).abs().max().double_value(&[]) > 1e-3);
    }

    /// The all-pairs loss of point embeddings equals the balanced average computed by hand.
    #[test]
    fn all_pair_loss_balances_matching_and_non_matching_pairs() {
        let vs = nn::VarStore::new(Device::Cpu);
        let head = MatchHead::new(vs.root() / "match", 1.0, 0.5);
        // Four images on a line at 0, 1, 3, 6; groups {0, 1}, {2, 3}.
        let z = Tensor::from_slice(&[0.0f32, 1.0, 3.0, 6.0]).reshape([4, 1, 1]);
        let e = Embedding::point(z.reshape([4, 1]));
        let pairs = all_pairs(2, 2, Device::Cpu);
        let (total, pair, kl) = crate::loss::all_pair_loss(&head, &e, (&pairs.0, &pairs.1, &pairs.2), 1, 1e-4);
        let sig = |t: f64| 1.0 / (1.0 + (-t).exp());
        let p = |d: f64| sig(-d + 0.5);
        let matching = (-(p(1.0)).ln() - (p(3.0)).ln()) / 2.0;
        let non = [3.0, 6.0, 2.0, 5.0].iter().map(|&d| -(1.0 - p(d)).ln()).sum::<f64>() / 4.0;
        let want = 0.5 * (matching + non);
        assert!((pair.double_value(&[]) - want).abs() < 1e-5, "{} vs {want}", pair.double_value(&[]));
        assert_eq!(kl.double_value(&[]), 0.0);
        assert!((total.double_value(&[]) - want).abs() < 1e-5);
    }
}
