//! NeuralLinear regression: a small ReLU network whose last hidden layer (plus a constant)
//! becomes the features of a normal–inverse-gamma Bayesian linear model. The network is
//! retrained from scratch whenever the labelled set changes, with one of two recipes:
//!
//! - [`NeuralLinearRecipe::Paper`], Pinsler et al. 2019 (Appendix, and their published
//!   protocol): Linear → BatchNorm → ReLU layers trained end to end by maximising the log
//!   predictive density of minibatch targets under the last layer's NIG posterior computed
//!   from all labelled points ([`nig_predictive_log_density`]); Adam with weight decay on the
//!   linear weights only, cosine-annealed over `epochs` epochs of minibatches of `batch_size`.
//! - [`NeuralLinearRecipe::Mse`], hedge's first recipe: least squares with a separate linear
//!   head, full-batch Adam for `steps` steps, L2 on every weight; the head is then replaced by
//!   the NIG posterior.

use faer::{Mat, MatRef};
use hedge_bayes::linear::{FittedNigLinear, NigLinearConfig};
use hedge_bayes::Prediction;
use serde::{Deserialize, Serialize};
use statrs::function::gamma::ln_gamma;
use tch::nn::{self, Module, ModuleT, OptimizerConfig};
use tch::{Device, Kind, Tensor};

use crate::error::{invalid, ActiveError, Result};
use hedge_run::ParamGuard;

/// How the network under the Bayesian last layer is trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum NeuralLinearRecipe {
    /// Pinsler et al.: the NIG posterior-predictive objective, batch norm, minibatches, cosine
    /// learning rate, weight decay on weights only.
    Paper,
    /// Least squares with a separate head, full batch (hedge's first recipe).
    #[default]
    Mse,
}

impl NeuralLinearRecipe {
    pub fn name(self) -> &'static str {
        match self {
            NeuralLinearRecipe::Paper => "paper",
            NeuralLinearRecipe::Mse => "mse",
        }
    }
}

/// How the hidden layers' parameters start.
///
/// The two differ in scale: tch's `nn::linear` draws weights from U(±√(6/fan_in)) (Kaiming
/// uniform with the ReLU gain), 2.45x PyTorch's U(±1/√fan_in), and tch's `nn::batch_norm1d`
/// draws each unit's scale γ from U(0, 1) where PyTorch starts every γ at 1. Under batch norm the
/// linear weights' scale sets Adam's effective step and how hard weight decay pulls, and γ is the
/// scale of the features the normal–inverse-gamma last layer sees (its prior is on the weights of
/// those features), so the start changes what the paper recipe converges to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LayerInit {
    /// tch's defaults.
    #[default]
    Tch,
    /// PyTorch's `nn.Linear` and `nn.BatchNorm1d` defaults, as the paper's (PyTorch) code gets
    /// them: weights and biases U(±1/√fan_in), γ = 1, β = 0.
    Pytorch,
}

impl LayerInit {
    pub fn name(self) -> &'static str {
        match self {
            LayerInit::Tch => "tch",
            LayerInit::Pytorch => "pytorch",
        }
    }

    fn linear(self, fan_in: i64) -> nn::LinearConfig {
        match self {
            LayerInit::Tch => Default::default(),
            LayerInit::Pytorch => {
                let bound = 1.0 / (fan_in as f64).sqrt();
                nn::LinearConfig {
                    ws_init: nn::Init::Uniform { lo: -bound, up: bound },
                    bs_init: Some(nn::Init::Uniform { lo: -bound, up: bound }),
                    bias: true,
                }
            }
        }
    }

    fn batch_norm(self) -> nn::BatchNormConfig {
        match self {
            LayerInit::Tch => Default::default(),
            LayerInit::Pytorch => nn::BatchNormConfig { ws_init: nn::Init::Const(1.0), ..Default::default() },
        }
    }
}

/// How many labelled points one minibatch of the paper recipe holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Minibatch {
    /// `batch_size` points (all of them when fewer are labelled): hedge's 64, and the authors'
    /// min(labelled, 32) for yacht and power plant with `batch_size = 32`.
    #[default]
    Fixed,
    /// The largest power of two not above half the labelled count (20 → 8, 40 → 16, 64 → 32,
    /// 120 → 32): the authors' rule for Boston housing and energy.
    HalfPowerOfTwo,
}

/// Network and training settings.
///
/// | name | default ([`Default`]: mse; [`NeuralLinearConfig::paper`]) | purpose |
/// |---|---|---|
/// | `recipe` | mse; paper | objective and optimiser schedule ([`NeuralLinearRecipe`]) |
/// | `hidden` | 30 | units per hidden layer |
/// | `layers` | 2 | hidden layers (ReLU; the paper recipe adds batch norm before each ReLU) |
/// | `steps` | 8000 | mse: full-batch Adam steps (1000 underfits: yacht RMSE 4.5 vs 1.7 at 100 labels) |
/// | `epochs` | 1000 | paper: epochs over the labelled set |
/// | `batch_size` | 64 | paper: targets per minibatch (with `minibatch = fixed`) |
/// | `minibatch` | fixed | paper: `fixed` (`batch_size`) or `half-power-of-two` of the labelled count ([`Minibatch`]) |
/// | `learning_rate` | 1e-2 | Adam step size (paper: the cosine schedule's start; power plant 1e-3) |
/// | `final_learning_rate` | 1e-5 | paper: where the cosine schedule ends |
/// | `weight_decay` | 1e-4; 1.0 | mse: L2 on every weight; paper: Adam's (coupled) weight decay on the linear layers' weights only (power plant 3.0) |
/// | `nig` | λ = 1, a₀ = b₀ = 1 | the Bayesian last layer (paper: power plant b₀ = 3) |
/// | `init` | tch | how the hidden layers start ([`LayerInit`]) |
/// | `seed` | 0 | initialisation and minibatch order |
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NeuralLinearConfig {
    pub recipe: NeuralLinearRecipe,
    pub hidden: i64,
    pub layers: usize,
    pub steps: usize,
    pub epochs: usize,
    pub batch_size: usize,
    pub minibatch: Minibatch,
    pub learning_rate: f64,
    pub final_learning_rate: f64,
    pub weight_decay: f64,
    pub nig: NigLinearConfig,
    pub init: LayerInit,
    pub seed: u64,
}

impl Default for NeuralLinearConfig {
    fn default() -> Self {
        Self {
            recipe: NeuralLinearRecipe::Mse,
            hidden: 30,
            layers: 2,
            steps: 8000,
            epochs: 1000,
            batch_size: 64,
            minibatch: Minibatch::Fixed,
            learning_rate: 1e-2,
            final_learning_rate: 1e-5,
            weight_decay: 1e-4,
            nig: NigLinearConfig::default(),
            init: LayerInit::default(),
            seed: 0,
        }
    }
}

/// A trained network and its Bayesian last layer.
pub struct FittedNeuralLinear {
    body: nn::SequentialT,
    _vs: nn::VarStore,
    /// Posterior of the last layer over [features, 1].
    pub posterior: FittedNigLinear,
}

fn to_tensor(x: MatRef<'_, f64>) -> Tensor {
    let flat: Vec<f32> = (0..x.nrows()).flat_map(|i| (0..x.ncols()).map(move |j| x[(i, j)] as f32)).collect();
    Tensor::from_slice(&flat).reshape([x.nrows() as i64, x.ncols() as i64])
}

impl NeuralLinearConfig {
    /// The paper's recipe with its settings for yacht, Boston housing and energy (hedge-lab's
    /// `active::protocol` sets power plant's).
    pub fn paper() -> Self {
        Self { weight_decay: 1.0, ..Self::default() }.with_recipe(NeuralLinearRecipe::Paper)
    }

    /// Points per minibatch when `labelled` points are labelled.
    pub fn minibatch_size(&self, labelled: usize) -> usize {
        match self.minibatch {
            Minibatch::Fixed => self.batch_size.min(labelled).max(1),
            Minibatch::HalfPowerOfTwo => {
                let half = (labelled / 2).max(1);
                1 << (usize::BITS - 1 - half.leading_zeros())
            }
        }
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn with_init(mut self, init: LayerInit) -> Self {
        self.init = init;
        self
    }

    pub fn with_recipe(mut self, recipe: NeuralLinearRecipe) -> Self {
        self.recipe = recipe;
        self
    }

    /// Trains the network on `(x, y)` and fits the Bayesian last layer on its features.
    ///
    /// # Shapes
    /// `x`: `[n, d]` (standardised), `y`: `[n]` (standardised).
    pub fn fit(&self, x: MatRef<'_, f64>, y: &[f64]) -> Result<FittedNeuralLinear> {
        self.check_ref()?;
        if x.nrows() != y.len() || y.is_empty() {
            return Err(ActiveError::ShapeMismatch {
                what: "NeuralLinear inputs vs targets".into(),
                expected: format!("{} rows, at least one", y.len()),
                found: format!("{} rows", x.nrows()),
            });
        }
        let _generator = hedge_run::torch::seeded_generator(self.seed as i64);
        let vs = nn::VarStore::new(Device::Cpu);
        let body = match self.recipe {
            NeuralLinearRecipe::Mse => self.train_mse(&vs, x, y)?,
            NeuralLinearRecipe::Paper => self.train_paper(&vs, x, y)?,
        };
        let phi = features_of(&body, x);
        let posterior = self.nig.fit(phi.as_ref(), y)?;
        Ok(FittedNeuralLinear { body, _vs: vs, posterior })
    }

    /// The hidden layers: Linear → ReLU, or Linear → BatchNorm → ReLU with `batch_norm`.
    fn body(&self, vs: &nn::VarStore, inputs: i64, batch_norm: bool) -> nn::SequentialT {
        let root = vs.root();
        let mut body = nn::seq_t();
        let mut width = inputs;
        for l in 0..self.layers {
            body = body.add(nn::linear(&root / format!("hidden{l}"), width, self.hidden, self.init.linear(width)));
            if batch_norm {
                body = body.add(nn::batch_norm1d(&root / format!("norm{l}"), self.hidden, self.init.batch_norm()));
            }
            body = body.add_fn(|t| t.relu());
            width = self.hidden;
        }
        body
    }

    fn train_mse(&self, vs: &nn::VarStore, x: MatRef<'_, f64>, y: &[f64]) -> Result<nn::SequentialT> {
        let body = self.body(vs, x.ncols() as i64, false);
        let head = nn::linear(vs.root() / "head", self.hidden, 1, self.init.linear(self.hidden));
        let mut opt = nn::Adam::default().build(vs, self.learning_rate)?;
        let xt = to_tensor(x);
        let yt = Tensor::from_slice(&y.iter().map(|&v| v as f32).collect::<Vec<_>>()).reshape([-1, 1]);
        for _ in 0..self.steps {
            let pred = head.forward(&body.forward_t(&xt, true));
            let mse = (pred - &yt).square().mean(Kind::Float);
            let l2: Tensor = vs.trainable_variables().iter().map(|v| v.square().sum(Kind::Float)).sum();
            let loss = mse + l2 * self.weight_decay;
            opt.backward_step(&loss);
        }
        Ok(body)
    }

    /// Every step forwards all labelled points (their batch statistics normalise, and their NIG
    /// posterior scores the minibatch), so the running statistics used at prediction time are
    /// those of the labelled set.
    fn train_paper(&self, vs: &nn::VarStore, x: MatRef<'_, f64>, y: &[f64]) -> Result<nn::SequentialT> {
        let body = self.body(vs, x.ncols() as i64, true);
        // Adam's coupled weight decay (PyTorch's `weight_decay`) on the linear weights only is
        // the gradient of (wd / 2)·‖W‖² added to the loss.
        let decayed: Vec<Tensor> = vs
            .variables()
            .into_iter()
            .filter(|(name, _)| name.starts_with("hidden") && name.ends_with(".weight"))
            .map(|(_, v)| v)
            .collect();
        let mut opt = nn::Adam::default().build(vs, self.learning_rate)?;
        let n = y.len() as i64;
        let xt = to_tensor(x);
        let yt = Tensor::from_slice(y).to_kind(Kind::Double);
        for epoch in 0..self.epochs {
            // PyTorch's CosineAnnealingLR with T_max = epochs, stepped once per epoch.
            let progress = epoch as f64 / self.epochs as f64;
            opt.set_lr(
                self.final_learning_rate
                    + 0.5
                        * (self.learning_rate - self.final_learning_rate)
                        * (1.0 + (std::f64::consts::PI * progress).cos()),
            );
            let order = Tensor::randperm(n, (Kind::Int64, Device::Cpu));
            for batch in order.split(self.minibatch_size(y.len()) as i64, 0) {
                let phi = with_constant(&body.forward_t(&xt, true));
                let log_density = nig_predictive_log_density(
                    &phi,
                    &yt,
                    &phi.index_select(0, &batch),
                    &yt.index_select(0, &batch),
                    &self.nig,
                )?;
                let l2: Tensor = decayed.iter().map(|w| w.square().sum(Kind::Float)).sum();
                let loss = -log_density.mean(Kind::Double) + l2.to_kind(Kind::Double) * (0.5 * self.weight_decay);
                opt.backward_step(&loss);
            }
        }
        Ok(body)
    }
}

/// Features `[n, k]` with a constant column appended, in double precision: `[n, k + 1]`.
fn with_constant(h: &Tensor) -> Tensor {
    let h = h.to_kind(Kind::Double);
    Tensor::cat(&[&h, &Tensor::ones([h.size()[0], 1], (Kind::Double, h.device()))], 1)
}

/// log p(y* | φ*, Φ, y): the Student-t posterior predictive of the normal–inverse-gamma linear
/// model ([`NigLinearConfig`]: w | σ² ~ N(0, σ²λ⁻¹I), σ² ~ IG(a₀, b₀)) whose posterior is
/// computed from `(phi, y)`, evaluated at each query point, differentiable in every input.
///
/// Λ = ΦᵀΦ + λI, μ = Λ⁻¹Φᵀy, ã = a₀ + n/2, b̃ = b₀ + (yᵀy − μᵀΦᵀy)/2;
/// y* ~ St(φ*ᵀμ, (b̃/ã)(1 + φ*ᵀΛ⁻¹φ*), 2ã).
///
/// # Shapes
/// `phi`: `[n, k]`, `y`: `[n]`, `query_phi`: `[m, k]`, `query_y`: `[m]` → `[m]` (all double).
pub fn nig_predictive_log_density(
    phi: &Tensor,
    y: &Tensor,
    query_phi: &Tensor,
    query_y: &Tensor,
    prior: &NigLinearConfig,
) -> Result<Tensor> {
    prior.check_ref()?;
    let (n, k) = (phi.size()[0], phi.size()[1]);
    if y.size() != [n] || query_phi.size().get(1) != Some(&k) || query_y.size() != [query_phi.size()[0]] {
        return Err(ActiveError::ShapeMismatch {
            what: "NIG predictive: features vs targets".into(),
            expected: format!("phi [n, k], y [n], query_phi [m, k], query_y [m] with n = {n}, k = {k}"),
            found: format!("y {:?}, query_phi {:?}, query_y {:?}", y.size(), query_phi.size(), query_y.size()),
        });
    }
    let opts = (Kind::Double, phi.device());
    let precision = phi.transpose(0, 1).matmul(phi) + Tensor::eye(k, opts) * prior.prior_precision;
    let chol = precision.f_linalg_cholesky(false).map_err(|_| non_finite_features(phi))?;
    let phity = phi.transpose(0, 1).matmul(&y.unsqueeze(1)); // [k, 1]
    let mean = phity.cholesky_solve(&chol, false); // [k, 1]
    let a = prior.a0 + 0.5 * n as f64;
    let b = (y.dot(y) - mean.squeeze_dim(1).dot(&phity.squeeze_dim(1))) * 0.5 + prior.b0;
    let location = query_phi.matmul(&mean).squeeze_dim(1);
    // φ*ᵀΛ⁻¹φ* = ‖L⁻¹φ*‖² with Λ = LLᵀ.
    let v = chol.linalg_solve_triangular(&query_phi.transpose(0, 1), false, true, false);
    let leverage = v.square().sum_dim_intlist(0, false, Kind::Double);
    let scale_squared = (leverage + 1.0) * (b / a);
    let dof = 2.0 * a;
    let z2 = (query_y - location).square() / &scale_squared;
    let constant = ln_gamma((dof + 1.0) / 2.0) - ln_gamma(dof / 2.0) - 0.5 * (dof * std::f64::consts::PI).ln();
    Ok(-(scale_squared.log() * 0.5) - (z2 / dof).log1p() * ((dof + 1.0) / 2.0) + constant)
}

impl ParamGuard for NeuralLinearConfig {
    type Error = ActiveError;

    fn check_ref(&self) -> Result<()> {
        if self.hidden < 1 || self.layers < 1 {
            return Err(invalid(
                "hidden/layers",
                format!("{}/{}", self.hidden, self.layers),
                "need at least one unit and one layer",
            ));
        }
        match self.recipe {
            NeuralLinearRecipe::Mse if self.steps == 0 => {
                return Err(invalid("steps", 0, "the mse recipe needs at least one training step"));
            }
            NeuralLinearRecipe::Paper if self.epochs == 0 => {
                return Err(invalid("epochs", 0, "the paper recipe needs at least one epoch"));
            }
            NeuralLinearRecipe::Paper if self.batch_size == 0 => {
                return Err(invalid("batch_size", 0, "minibatches need at least one target"));
            }
            _ => {}
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return Err(invalid("learning_rate", self.learning_rate, "must be a finite number > 0"));
        }
        if !(self.final_learning_rate > 0.0 && self.final_learning_rate <= self.learning_rate) {
            return Err(invalid(
                "final_learning_rate",
                self.final_learning_rate,
                format!("the cosine schedule ends at a rate > 0 and ≤ learning_rate = {}", self.learning_rate),
            ));
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return Err(invalid("weight_decay", self.weight_decay, "must be a finite number ≥ 0"));
        }
        self.nig.check_ref()?;
        Ok(())
    }
}

fn features_of(body: &nn::SequentialT, x: MatRef<'_, f64>) -> Mat<f64> {
    let h = tch::no_grad(|| body.forward_t(&to_tensor(x), false)).to_kind(Kind::Float);
    let (n, k) = (h.size()[0] as usize, h.size()[1] as usize);
    let flat: Vec<f32> = Vec::try_from(h.flatten(0, -1)).unwrap_or_default();
    Mat::from_fn(n, k + 1, |i, j| if j == k { 1.0 } else { f64::from(flat[i * k + j]) })
}

impl FittedNeuralLinear {
    /// Last-hidden-layer features with a constant column appended.
    ///
    /// # Shapes
    /// `x`: `[n, d]` → `[n, hidden + 1]`.
    pub fn features(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        features_of(&self.body, x)
    }

    /// Student-t predictive at `x`.
    pub fn predict(&self, x: MatRef<'_, f64>) -> Result<Prediction> {
        Ok(self.posterior.predict(self.features(x).as_ref())?)
    }
}

/// The last layer's posterior could not be factorised: the network's features are not finite
/// (or so large that ΦᵀΦ is not positive-definite in f64), which a diverged fit gives.
fn non_finite_features(phi: &Tensor) -> ActiveError {
    let finite = phi.isfinite().all().int64_value(&[]) == 1;
    let largest = phi.abs().max().double_value(&[]);
    ActiveError::NonFinite {
        what: format!(
            "the NeuralLinear fit diverged: its last-layer features are {} (largest |φ| = {largest:e}), so the \
             Bayesian last layer's posterior cannot be formed",
            if finite { "huge" } else { "NaN or infinite" }
        ),
        fix: "lower --lr (the paper recipe's is 1e-3) or --steps".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed minibatch holds `batch_size` points, or every labelled point when fewer are.
    #[test]
    fn a_fixed_minibatch_takes_its_size_or_every_label() {
        let fixed = NeuralLinearConfig { minibatch: Minibatch::Fixed, batch_size: 64, ..NeuralLinearConfig::paper() };
        assert_eq!((fixed.minibatch_size(120), fixed.minibatch_size(64), fixed.minibatch_size(20)), (64, 64, 20));
    }

    /// The paper recipe's objective against SciPy's Student-t on a fixed feature matrix.
    /// Reference (scipy 1.17.1, numpy; the posterior written out independently, with
    /// μᵀΛμ where the implementation uses μᵀΦᵀy):
    ///
    /// ```python
    /// import numpy as np
    /// from scipy import stats
    /// phi = np.array([[0.5, -1.0, 1.0], [1.5, 0.3, 1.0], [-0.7, 0.8, 1.0], [0.2, 2.0, 1.0], [-1.2, -0.4, 1.0], [0.9, -0.6, 1.0]])
    /// y = np.array([0.3, 1.2, -0.5, 0.8, -1.1, 0.4])
    /// query = np.array([phi[1], phi[4], [0.1, 0.1, 1.0]])
    /// query_y = np.array([y[1], y[4], 2.0])
    /// for lam, a0, b0 in [(1.0, 1.0, 1.0), (2.0, 2.0, 3.0)]:
    ///     precision = phi.T @ phi + lam * np.eye(3)
    ///     mu = np.linalg.solve(precision, phi.T @ y)
    ///     a = a0 + len(y) / 2
    ///     b = b0 + 0.5 * (y @ y - mu @ precision @ mu)
    ///     scale = np.sqrt(b / a * (1 + np.einsum("ij,ij->i", query @ np.linalg.inv(precision), query)))
    ///     print(stats.t.logpdf(query_y, df=2 * a, loc=query @ mu, scale=scale).tolist())
    /// ```
    #[test]
    fn objective_is_the_nig_posterior_predictive_log_density_scipy_computes() {
        let phi = Tensor::from_slice(&[
            0.5, -1.0, 1.0, 1.5, 0.3, 1.0, -0.7, 0.8, 1.0, 0.2, 2.0, 1.0, -1.2, -0.4, 1.0, 0.9, -0.6, 1.0,
        ])
        .reshape([6, 3]);
        let y = Tensor::from_slice(&[0.3, 1.2, -0.5, 0.8, -1.1, 0.4]);
        let query = Tensor::cat(
            &[
                phi.index_select(0, &Tensor::from_slice(&[1i64, 4])),
                Tensor::from_slice(&[0.1, 0.1, 1.0]).reshape([1, 3]),
            ],
            0,
        );
        let query_y = Tensor::from_slice(&[1.2, -1.1, 2.0]);
        let cases = [
            (NigLinearConfig::default(), [-0.6058357383033326, -0.6640192262493441, -3.9735390127280006]),
            (
                NigLinearConfig::default().with_prior_precision(2.0).with_prior(2.0, 3.0),
                [-0.9753924091634952, -1.022884274029597, -2.876370088812277],
            ),
        ];
        for (prior, want) in cases {
            let got = nig_predictive_log_density(&phi, &y, &query, &query_y, &prior).unwrap();
            let got: Vec<f64> = Vec::try_from(got).unwrap();
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
            }
        }
    }

    #[test]
    fn the_objective_refuses_features_and_targets_that_disagree() {
        let phi = Tensor::ones([4, 2], (Kind::Double, Device::Cpu));
        let y = Tensor::ones([3], (Kind::Double, Device::Cpu));
        let err = nig_predictive_log_density(&phi, &y, &phi, &y, &NigLinearConfig::default()).unwrap_err();
        assert!(matches!(err, ActiveError::ShapeMismatch { .. }), "{err}");
    }

    /// Gradients reach the features (the network is trained through the posterior): a finite
    /// difference of the summed log density matches autograd.
    #[test]
    fn the_objective_is_differentiable_in_the_features() {
        let phi0 = [0.5, -1.0, 1.0, 1.5, 0.3, 1.0, -0.7, 0.8, 1.0, 0.2, 2.0, 1.0];
        let y = Tensor::from_slice(&[0.3, 1.2, -0.5, 0.8]);
        let total = |phi: &Tensor| {
            nig_predictive_log_density(phi, &y, phi, &y, &NigLinearConfig::default()).unwrap().sum(Kind::Double)
        };
        let phi = Tensor::from_slice(&phi0).reshape([4, 3]).set_requires_grad(true);
        total(&phi).backward();
        let grad: Vec<f64> = Vec::try_from(phi.grad().flatten(0, -1)).unwrap();
        let h = 1e-6;
        for i in [0, 4, 7] {
            let mut up = phi0;
            up[i] += h;
            let mut down = phi0;
            down[i] -= h;
            let fd = (total(&Tensor::from_slice(&up).reshape([4, 3])).double_value(&[])
                - total(&Tensor::from_slice(&down).reshape([4, 3])).double_value(&[]))
                / (2.0 * h);
            assert!((fd - grad[i]).abs() < 1e-6, "element {i}: finite difference {fd}, autograd {}", grad[i]);
        }
    }

    #[test]
    fn the_paper_recipe_and_a_bad_final_rate() {
        let paper = NeuralLinearConfig::paper();
        assert_eq!(
            (paper.recipe, paper.learning_rate, paper.weight_decay, paper.nig.b0),
            (NeuralLinearRecipe::Paper, 1e-2, 1.0, 1.0)
        );
        let bad = NeuralLinearConfig { final_learning_rate: 0.1, ..NeuralLinearConfig::paper() };
        assert!(matches!(
            bad.check_ref(),
            Err(ActiveError::Run(hedge_run::RunError::InvalidConfig { field: "final_learning_rate", .. }))
        ));
    }

    /// PyTorch's start: every weight and bias of a layer inside ±1/√fan_in, every batch-norm
    /// scale 1 (torch.nn.Linear.reset_parameters, torch.nn.BatchNorm1d.reset_parameters); tch's
    /// start reaches past that bound and draws the scales from U(0, 1).
    #[test]
    fn pytorch_init_starts_the_layers_as_pytorch_does() {
        let extremes = |init: LayerInit| {
            let _generator = hedge_run::torch::seeded_generator(3);
            let vs = nn::VarStore::new(Device::Cpu);
            let config = NeuralLinearConfig::paper().with_init(init);
            let _body = config.body(&vs, 8, true);
            let mut largest_over_bound: f64 = 0.0;
            let mut scales = Vec::new();
            for (name, v) in vs.variables() {
                if name.starts_with("hidden") {
                    let fan_in = if name.starts_with("hidden0") { 8.0 } else { 30.0 };
                    let largest = v.abs().max().double_value(&[]);
                    largest_over_bound = largest_over_bound.max(largest * f64::sqrt(fan_in));
                } else if name.ends_with(".weight") {
                    scales.extend(Vec::<f32>::try_from(v.flatten(0, -1)).unwrap());
                }
            }
            (largest_over_bound, scales)
        };
        let (torch_ratio, torch_scales) = extremes(LayerInit::Pytorch);
        assert!(torch_ratio <= 1.0 + 1e-6, "a weight beyond 1/√fan_in: {torch_ratio}");
        assert_eq!(torch_scales.len(), 60);
        assert!(torch_scales.iter().all(|&g| g == 1.0), "{torch_scales:?}");
        let (tch_ratio, tch_scales) = extremes(LayerInit::Tch);
        assert!(tch_ratio > 1.5, "tch's Kaiming bound is √6 ≈ 2.45 times PyTorch's: {tch_ratio}");
        assert!(tch_scales.iter().all(|&g| (0.0..1.0).contains(&g)), "{tch_scales:?}");
    }

    /// The paper recipe learns a smooth function of one input from 60 points: held-out RMSE far
    /// below the targets' spread, and the predictive scale of the right size.
    #[test]
    fn the_paper_recipe_fits_a_smooth_function() {
        let xs = |n: usize, offset: f64| -> Vec<f64> {
            (0..n).map(|i| -2.0 + 4.0 * (i as f64 + offset) / n as f64).collect()
        };
        let f = |x: f64| (2.0 * x).sin();
        let (train, test) = (xs(60, 0.0), xs(40, 0.5));
        let x = Mat::from_fn(train.len(), 1, |i, _| train[i]);
        let y: Vec<f64> = train.iter().map(|&v| f(v)).collect();
        let config = NeuralLinearConfig { epochs: 500, ..NeuralLinearConfig::paper() };
        let fitted = config.fit(x.as_ref(), &y).unwrap();
        let p = fitted.predict(Mat::from_fn(test.len(), 1, |i, _| test[i]).as_ref()).unwrap();
        let rmse = (test.iter().zip(&p.mean).map(|(t, m)| (f(*t) - m).powi(2)).sum::<f64>() / test.len() as f64).sqrt();
        // sd of sin(2x) on [-2, 2] is ~0.7.
        assert!(rmse < 0.15, "held-out RMSE {rmse}");
        let scale = (p.observed_variance().iter().sum::<f64>() / p.mean.len() as f64).sqrt();
        assert!(scale < 0.5, "predictive scale {scale}");
    }
}
