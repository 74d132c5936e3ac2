//! Training a HIB model on N-digit MNIST pairs (Section 2.3, Appendix A).

use std::time::Instant;

use hedge_data::{BalancedPairSampler, Corruption, GroupedPairSampler, NDigitDataset};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{nn, Device, Kind, Tensor};

use crate::config::{BatchComposition, HibConfig, LossKind};
use crate::distribution::index_tensor;
use crate::loss::{contrastive, vib_loss};
use crate::model::HibNet;
use crate::optim::Adam;
use crate::run::{save_atomically, RunDir, RunState, StepMetrics, CHECKPOINTS_DIR, MODEL_FILE, OPTIMIZER_FILE};
use crate::{EmbedError, Result};

/// Builds a network with its variables, initialised deterministically from `config.seed`.
pub fn build_model(config: &HibConfig, device: Device) -> Result<(nn::VarStore, HibNet)> {
    config.check()?;
    tch::manual_seed(config.seed as i64);
    let vs = nn::VarStore::new(device);
    let net = HibNet::new(&vs.root(), config);
    Ok((vs, net))
}

/// Loads `model.safetensors` of a run into a freshly built network.
pub fn load_model(run: &RunDir, config: &HibConfig, device: Device) -> Result<(nn::VarStore, HibNet)> {
    let (mut vs, net) = build_model(config, device)?;
    vs.load(run.file(MODEL_FILE))?;
    Ok((vs, net))
}

/// Turns rendered images into a network input.
///
/// # Shapes
/// `pixels`: `[n * 28 * width]`; returns `[n, 1, 28, width]` on `device`.
pub fn images_to_tensor(pixels: &[f32], n: usize, width: usize, device: Device) -> Tensor {
    Tensor::from_slice(pixels).reshape([n as i64, 1, 28, width as i64]).to_device(device)
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
    Independent(BalancedPairSampler),
    Grouped(GroupedPairSampler),
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
    dataset: NDigitDataset,
    sampler: Sampler,
    step: usize,
    seconds: f64,
    keep_every: Option<usize>,
}

impl Trainer {
    /// # Errors
    /// Invalid hyper-parameters, or a dataset whose digit count differs from `config.digits`.
    pub fn new(mut config: HibConfig, dataset: NDigitDataset, device: Device) -> Result<Self> {
        config.conv_precision = config.conv_precision.resolve(device);
        if dataset.digits != config.digits {
            return Err(EmbedError::config(
                "digits",
                format!("the config says {} but the dataset has {}-digit images", config.digits, dataset.digits),
            ));
        }
        let (vs, net) = build_model(&config, device)?;
        let adam = Adam::new(&vs, config.learning_rate);
        let sampler = match config.batch {
            BatchComposition::Independent => Sampler::Independent(BalancedPairSampler::new(&dataset.labels)?),
            BatchComposition::Grouped => {
                Sampler::Grouped(GroupedPairSampler::new(&dataset.labels, config.group_classes, config.group_size)?)
            }
        };
        Ok(Trainer { config, device, vs, net, adam, dataset, sampler, step: 0, seconds: 0.0, keep_every: None })
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
        self.vs.load(run.file(MODEL_FILE))?;
        self.adam.load(&run.file(OPTIMIZER_FILE))?;
        let state = run.read_state()?;
        if state.step as i64 != self.adam.steps_taken() {
            return Err(EmbedError::run(
                &run.path,
                format!("state.json says step {} but the optimizer state has {}", state.step, self.adam.steps_taken()),
            ));
        }
        self.step = state.step;
        self.seconds = state.seconds;
        Ok(())
    }

    /// Writes model, optimiser and state of the current step.
    pub fn checkpoint(&self, run: &RunDir) -> Result<()> {
        save_atomically(&run.file(MODEL_FILE), |p| Ok(self.vs.save(p)?))?;
        save_atomically(&run.file(OPTIMIZER_FILE), |p| self.adam.save(p))?;
        run.write_state(&RunState { step: self.step, seconds: self.seconds })
    }

    /// The pairs, occlusions and images of step `step`. Each step has its own random stream
    /// (seed, step), so a resumed run sees exactly the data an uninterrupted one would.
    fn batch(&self, step: usize) -> StepBatch {
        let mut rng = ChaCha8Rng::seed_from_u64(self.config.seed);
        rng.set_stream(step as u64);
        let corruption = Corruption::Random { probability: self.config.occlusion_probability };
        let (order, pairs, positions) = match &self.sampler {
            Sampler::Independent(sampler) => {
                let pairs = sampler.sample(self.config.batch_pairs, &mut rng);
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
        let pixels = self.dataset.render_batch(&order, &corruption, &mut rng);
        StepBatch {
            images: images_to_tensor(&pixels, order.len(), self.dataset.width(), self.device),
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
        tch::manual_seed((self.config.seed as i64).wrapping_mul(1_000_003).wrapping_add(self.step as i64));
        let embedding = self.net.forward(&batch.images);
        let (left, right) = match &batch.positions {
            Some((l, r)) => (embedding.select_rows(l), embedding.select_rows(r)),
            None => {
                let b = batch.pairs as i64;
                (embedding.narrow(0, b), embedding.narrow(b, b))
            }
        };
        let (total, pair, kl) = match self.config.loss {
            LossKind::Soft => {
                let l = vib_loss(
                    &self.net.matcher,
                    &left,
                    &right,
                    &batch.is_match,
                    self.config.effective_samples() as i64,
                    self.config.beta,
                );
                (l.total, l.pair, l.kl)
            }
            LossKind::Contrastive => {
                let l =
                    contrastive(&left.mean.select(1, 0), &right.mean.select(1, 0), &batch.is_match, self.config.margin)
                        .mean(Kind::Float);
                let zero = l.zeros_like();
                (l.shallow_clone(), l, zero)
            }
        };
        self.adam.learning_rate = self.config.lr_schedule.at(self.config.learning_rate, self.step, self.config.steps);
        self.adam.zero_grad();
        total.backward();
        self.adam.step();
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
            pairs_per_s: batch.pairs as f64 / seconds,
            pairs: batch.pairs,
        })
    }

    /// Trains up to `config.steps`, logging every `log_every` steps to `run` (when given) and to
    /// `on_step` (every step), and checkpointing every `checkpoint_every` steps and at the end.
    pub fn run(&mut self, run: Option<&RunDir>, mut on_step: impl FnMut(&StepMetrics)) -> Result<()> {
        while self.step < self.config.steps {
            let m = self.train_step()?;
            on_step(&m);
            if let Some(run) = run {
                if m.step % self.config.log_every == 0 || m.step == self.config.steps {
                    run.append_metrics(&m)?;
                }
                if m.step % self.config.checkpoint_every == 0 || m.step == self.config.steps {
                    self.checkpoint(run)?;
                }
                if self.keep_every.is_some_and(|k| m.step % k == 0) {
                    let dir = run.file(CHECKPOINTS_DIR);
                    std::fs::create_dir_all(&dir).map_err(|e| EmbedError::io(&dir, e))?;
                    let path = dir.join(format!("model-{:07}.safetensors", m.step));
                    save_atomically(&path, |p| Ok(self.vs.save(p)?))?;
                }
            }
        }
        Ok(())
    }

    /// The dataset being trained on.
    pub fn dataset(&self) -> &NDigitDataset {
        &self.dataset
    }
}
