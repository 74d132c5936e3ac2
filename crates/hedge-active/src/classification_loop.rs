//! The pool-based active-learning loop for image classification with the CNN + Laplace
//! last layer: `init` random labels, then batches chosen by an acquisition (Random, MaxEnt,
//! BALD, ACS-FW on random projections, LCMD, least confidence, or a user's own) until `budget`
//! labels; test accuracy and log-likelihood every round.

use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::acquire::{labelled_positions, Acquisition, ClassProbabilities, PoolFeatures, Predictive, Reads};
use crate::acquisition::categorical_entropy;
use crate::classification::{to_vec, CnnLaplaceConfig, FittedCnnLaplace, PoolPredictions};
use crate::error::{invalid, ActiveError, Result};
use crate::frank_wolfe::PoolVectors;
use crate::pool::{run_loop, ActiveModel, LoopState, RoundInfo, Schedule};
use hedge_run::ParamGuard;
use rand_chacha::ChaCha8Rng;

/// Loop settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassLoopConfig {
    pub init: usize,
    pub batch: usize,
    pub budget: usize,
    /// ACS-FW: force `batch` distinct points per round instead of the paper's re-picks.
    pub distinct: bool,
    /// Posterior draws for the MC predictive (MaxEnt, BALD, accuracy, and p̄ in L_n).
    pub samples: i64,
    /// Random projections J for ACS-FW.
    pub projections: i64,
    pub model: CnnLaplaceConfig,
}

impl Default for ClassLoopConfig {
    fn default() -> Self {
        Self {
            init: 20,
            batch: 20,
            budget: 200,
            distinct: false,
            samples: 100,
            projections: 10,
            model: CnnLaplaceConfig::default(),
        }
    }
}

/// One round's measurements (after fitting on `labels` images).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassRoundMetrics {
    pub seed: u64,
    /// The acquisition's name.
    pub method: String,
    pub round: usize,
    pub labels: usize,
    /// Accuracy of the network's own prediction (last layer at its MAP).
    pub test_accuracy: f64,
    /// Accuracy of the MC predictive p̄ (argmax of the posterior-averaged probabilities).
    pub predictive_accuracy: f64,
    /// The last layer's prior precision the Laplace evidence chose.
    pub prior_precision: f64,
    /// Mean log p̄(y | x) of the test labels under the MC predictive.
    pub test_log_likelihood: f64,
    pub fit_seconds: f64,
    /// Seconds spent choosing the batch that follows this round (0 after the last round).
    pub selection_seconds: f64,
    /// Images added after this round.
    pub batch_size: usize,
}

/// Images and labels of one split, already standardised.
pub struct ImageSet<'a> {
    /// `[n, 1, 28, 28]` f32.
    pub images: &'a Tensor,
    /// `[n]` i64.
    pub labels: &'a Tensor,
}

impl ClassLoopConfig {
    pub fn check(&self, pool: usize) -> Result<()> {
        if self.init == 0 || self.batch == 0 {
            return Err(invalid("init/batch", format!("{}/{}", self.init, self.batch), "both must be ≥ 1"));
        }
        if self.budget < self.init || self.budget > pool {
            return Err(invalid("budget", self.budget, format!("must lie in init = {} ..= pool = {pool}", self.init)));
        }
        if self.samples < 2 || self.projections < 1 {
            return Err(invalid(
                "samples/projections",
                format!("{}/{}", self.samples, self.projections),
                "need ≥ 2 predictive draws and ≥ 1 projection",
            ));
        }
        // The pool's predictive draws (samples × pool × 10 classes, f32, with softmax and BALD's
        // intermediates) and its projections (pool × J, f64, with Frank–Wolfe's copies).
        let pool = pool as f64;
        hedge_run::Footprint::new("active classify: the pool's predictive draws and projections", move |v| {
            pool * (v[0] * 10.0 * 4.0 * 4.0 + v[1] * 8.0 * 3.0)
        })
        .knob("--samples", self.samples as f64, 2.0)
        .knob("--projections", self.projections as f64, 1.0)
        .check()?;
        self.model.check_ref()
    }

    /// Refuses an acquisition that reads what the network's predictive does not give, before
    /// any network is fitted.
    pub fn check_acquisition(&self, acquisition: &dyn Acquisition) -> Result<()> {
        crate::acquire::check_reads(acquisition, MODEL, OFFERS, FIX)
    }

    /// Runs one seed of `acquisition`: `init` random pool images labelled, then rounds until
    /// `budget`.
    pub fn run(
        &self,
        pool: &ImageSet<'_>,
        test: &ImageSet<'_>,
        classes: i64,
        acquisition: &dyn Acquisition,
        seed: u64,
    ) -> Result<Vec<ClassRoundMetrics>> {
        self.run_from(pool, test, classes, acquisition, seed, None, |_, _| Ok(()))
    }

    /// [`ClassLoopConfig::run`] continued from `resume` (a state an earlier call reported),
    /// calling `on_round` after every round with the state to continue from (`None` after the
    /// last). Returns the rounds this call ran.
    #[allow(clippy::too_many_arguments)]
    pub fn run_from(
        &self,
        pool: &ImageSet<'_>,
        test: &ImageSet<'_>,
        classes: i64,
        acquisition: &dyn Acquisition,
        seed: u64,
        resume: Option<LoopState>,
        on_round: impl FnMut(&ClassRoundMetrics, Option<&LoopState>) -> Result<()>,
    ) -> Result<Vec<ClassRoundMetrics>> {
        let n = pool.labels.size()[0] as usize;
        if pool.images.size()[0] as usize != n || test.images.size()[0] != test.labels.size()[0] {
            return Err(ActiveError::ShapeMismatch {
                what: "images vs labels".into(),
                expected: "one label per image".into(),
                found: format!("pool {:?}/{:?}", pool.images.size(), pool.labels.size()),
            });
        }
        self.check(n)?;
        let model = ImagePool { config: self, pool, test, test_labels: Vec::try_from(test.labels)?, classes };
        let schedule = Schedule { init: self.init, batch: self.batch, budget: self.budget, distinct: self.distinct };
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        run_loop(&model, schedule, acquisition, seed, rng, resume, on_round)
    }
}

const MODEL: &str = "the CNN with a Laplace last layer";
/// What its predictive gives: everything but a regression's mean and variance.
const OFFERS: &[Reads] = &[Reads::Entropy, Reads::ClassProbabilities, Reads::LogPosteriorVectors, Reads::Features];
const FIX: &str = "a classification runs the acquisitions that read class probabilities, entropies, features or \
                   ACS-FW's vectors; drop it from --method";

/// The CNN + Laplace last layer on one seed's pool and test images.
struct ImagePool<'a, 'b> {
    config: &'a ClassLoopConfig,
    pool: &'a ImageSet<'b>,
    test: &'a ImageSet<'b>,
    test_labels: Vec<i64>,
    classes: i64,
}

fn positions(p: &[usize]) -> Tensor {
    Tensor::from_slice(&p.iter().map(|&i| i as i64).collect::<Vec<_>>())
}

impl ActiveModel for ImagePool<'_, '_> {
    type Fitted = FittedCnnLaplace;
    type Round = ClassRoundMetrics;

    fn pool_len(&self) -> usize {
        self.pool.labels.size()[0] as usize
    }

    fn describe(&self) -> String {
        MODEL.into()
    }

    fn offers(&self) -> &[Reads] {
        OFFERS
    }

    fn fix(&self) -> &str {
        FIX
    }

    fn fit(&self, labelled: &[usize], seed: u64) -> Result<FittedCnnLaplace> {
        let idx = positions(labelled);
        self.config.model.with_seed(seed).fit(
            &self.pool.images.index_select(0, &idx),
            &self.pool.labels.index_select(0, &idx),
            self.classes,
        )
    }

    fn evaluate(&self, model: &FittedCnnLaplace, info: RoundInfo<'_>) -> Result<ClassRoundMetrics> {
        let test_phi = model.features(self.test.images);
        let predictive = to_vec(&model.predict(&test_phi, self.config.samples).mean)?;
        let map_logits = to_vec(&test_phi.matmul(&model.mean.tr()))?;
        let c = self.classes as usize;
        let argmax = |p: &[f64]| (0..c).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap_or(0) as i64;
        let (mut correct, mut correct_mc, mut ll) = (0usize, 0usize, 0.0);
        for (i, &y) in self.test_labels.iter().enumerate() {
            let p = &predictive[i * c..(i + 1) * c];
            correct += usize::from(argmax(&map_logits[i * c..(i + 1) * c]) == y);
            correct_mc += usize::from(argmax(p) == y);
            ll += p[y as usize].max(1e-300).ln();
        }
        let n = self.test_labels.len().max(1) as f64;
        Ok(ClassRoundMetrics {
            seed: info.seed,
            method: info.method.to_string(),
            round: info.round,
            labels: info.labels,
            test_accuracy: correct as f64 / n,
            predictive_accuracy: correct_mc as f64 / n,
            prior_precision: model.prior_precision,
            test_log_likelihood: ll / n,
            fit_seconds: info.fit_seconds,
            selection_seconds: 0.0,
            batch_size: 0,
        })
    }

    fn predictive<'a>(&'a self, fitted: &'a FittedCnnLaplace, unlabelled: &'a [usize]) -> Box<dyn Predictive + 'a> {
        Box::new(ImagePredictive {
            pool: self,
            model: fitted,
            unlabelled,
            phi: std::cell::OnceCell::new(),
            draws: std::cell::OnceCell::new(),
        })
    }

    fn record_selection(round: &mut ClassRoundMetrics, seconds: f64, batch_size: usize) {
        round.selection_seconds = seconds;
        round.batch_size = batch_size;
    }
}

/// What a round's network predicts about the unlabelled pool images. The last-layer features
/// and the MC predictive are made once, on first use, in the order the acquisitions always
/// asked for them (so libtorch's random stream, and with it every batch, stays as it was).
struct ImagePredictive<'a, 'b> {
    pool: &'a ImagePool<'a, 'b>,
    model: &'a FittedCnnLaplace,
    /// Pool positions, ascending.
    unlabelled: &'a [usize],
    /// `[unlabelled, features + 1]`.
    phi: std::cell::OnceCell<Tensor>,
    /// The MC predictive of [`ClassLoopConfig::samples`] draws.
    draws: std::cell::OnceCell<PoolPredictions>,
}

impl ImagePredictive<'_, '_> {
    fn phi(&self) -> &Tensor {
        self.phi
            .get_or_init(|| self.model.features(&self.pool.pool.images.index_select(0, &positions(self.unlabelled))))
    }

    fn draws(&self) -> &PoolPredictions {
        self.draws.get_or_init(|| self.model.predict(self.phi(), self.pool.config.samples))
    }
}

impl Predictive for ImagePredictive<'_, '_> {
    fn len(&self) -> usize {
        self.unlabelled.len()
    }

    fn entropy(&self) -> Result<Vec<f64>> {
        Ok(categorical_entropy(&to_vec(&self.draws().mean)?, self.pool.classes as usize))
    }

    fn class_probabilities(&self) -> Result<ClassProbabilities> {
        let draws = self.draws();
        Ok(ClassProbabilities {
            samples: self.pool.config.samples as usize,
            points: self.unlabelled.len(),
            classes: self.pool.classes as usize,
            draws: to_vec(&draws.probabilities)?,
            mean: to_vec(&draws.mean)?,
        })
    }

    /// J random projections, drawn by libtorch from the network's posterior (not from `rng`).
    fn log_posterior_vectors(&self, _rng: &mut ChaCha8Rng) -> Result<Box<dyn PoolVectors>> {
        Ok(Box::new(self.model.projections(self.phi(), &self.draws().mean, self.pool.config.projections)?))
    }

    fn features(&self) -> Result<PoolFeatures> {
        let labelled = labelled_positions(self.pool.pool_len(), self.unlabelled);
        let labelled = self.model.features(&self.pool.pool.images.index_select(0, &positions(&labelled)));
        Ok(PoolFeatures { labelled: to_mat(&labelled)?, unlabelled: to_mat(self.phi())? })
    }
}

/// A `[n, k]` tensor as an f64 matrix.
fn to_mat(t: &Tensor) -> Result<faer::Mat<f64>> {
    let (n, k) = (t.size()[0] as usize, t.size()[1] as usize);
    let values = to_vec(t)?;
    Ok(faer::Mat::from_fn(n, k, |i, j| values[i * k + j]))
}

/// Standardises raw 28 × 28 uint8 images with the pool's mean and standard deviation.
///
/// # Shapes
/// `pixels`: `n · 784` bytes → `[n, 1, 28, 28]` f32.
pub fn images_tensor(pixels: &[u8], mean: f64, std: f64) -> Tensor {
    let n = (pixels.len() / 784) as i64;
    (Tensor::from_slice(pixels).to_kind(Kind::Float) / 255.0 - mean).divide_scalar(std).reshape([n, 1, 28, 28])
}

/// Mean and standard deviation of pixel/255 over `pixels`.
pub fn pixel_moments(pixels: &[u8]) -> (f64, f64) {
    let n = pixels.len().max(1) as f64;
    let mean = pixels.iter().map(|&p| f64::from(p) / 255.0).sum::<f64>() / n;
    let var = pixels.iter().map(|&p| (f64::from(p) / 255.0 - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt().max(1e-12))
}

/// Labels as an i64 tensor on the CPU.
pub fn labels_tensor(labels: &[u8]) -> Tensor {
    Tensor::from_slice(&labels.iter().map(|&l| i64::from(l)).collect::<Vec<_>>()).to_device(Device::Cpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquisitions::ACQUISITIONS;

    /// Synthetic 3-class images (class = which third of the image is bright): every method
    /// reaches the budget, and 60 labels classify better than 6.
    #[test]
    fn loop_runs_to_budget_and_learns() {
        let n = 300;
        let labels: Vec<u8> = (0..n).map(|i| (i % 3) as u8).collect();
        let mut pixels = vec![0u8; n * 784];
        let mut state = 12345u64;
        for (i, &l) in labels.iter().enumerate() {
            for r in 0..28 {
                for c in 0..28 {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let noise = (state >> 58) as u8; // 0..63
                    let bright = (c / 10) as u8 == l;
                    pixels[i * 784 + r * 28 + c] = if bright { 150 + noise } else { noise * 2 };
                }
            }
        }
        let (m, s) = pixel_moments(&pixels);
        let images = images_tensor(&pixels, m, s);
        let lab = labels_tensor(&labels);
        let pool_idx = Tensor::arange(200, (Kind::Int64, Device::Cpu));
        let test_idx = Tensor::arange_start(200, 300, (Kind::Int64, Device::Cpu));
        let (pi, pl) = (images.index_select(0, &pool_idx), lab.index_select(0, &pool_idx));
        let (ti, tl) = (images.index_select(0, &test_idx), lab.index_select(0, &test_idx));
        let config = ClassLoopConfig {
            init: 6,
            batch: 18,
            budget: 60,
            samples: 20,
            model: CnnLaplaceConfig { steps: 40, channels: (4, 8), features: 8, ..Default::default() },
            ..Default::default()
        };
        for method in ACQUISITIONS {
            let rounds = config
                .run(&ImageSet { images: &pi, labels: &pl }, &ImageSet { images: &ti, labels: &tl }, 3, method, 0)
                .unwrap();
            let last = rounds.last().unwrap();
            assert_eq!(last.labels, 60, "{}", method.name);
            assert!(last.test_accuracy > 0.9, "{}: accuracy {}", method.name, last.test_accuracy);
            assert!(rounds.iter().all(|r| r.test_log_likelihood.is_finite() && r.test_log_likelihood <= 0.0));
        }
    }
}
