//! The three parts of an agnostic network (Jia et al. 2018, Sec. 3): a shared feature extractor
//! G_f, a target classifier G_y and a protected-concept classifier G_p that sees the features
//! through the gradient reversal layer. Each part has its own variable store, so G_p can also be
//! trained alone (several adversary steps per feature step).

use serde::{Deserialize, Serialize};
use tch::nn::{self, Module};
use tch::{Device, Tensor};

use crate::error::{invalid, AgnosticError, Result};
use hedge_run::ParamGuard;

/// The feature extractor G_f.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExtractorKind {
    /// Ganin et al.'s MNIST network: conv 5×5 32 → ReLU → max-pool 2 → conv 5×5 48 → ReLU →
    /// max-pool 2, features 48 · 4 · 4 = 768, on `[n, channels, 28, 28]` images.
    Cnn { channels: i64 },
    /// Tabular data: `inputs` → `hidden` → `hidden`, ReLU.
    Mlp { inputs: i64, hidden: i64 },
}

/// Network shape.
///
/// | name | default | purpose |
/// |---|---|---|
/// | `extractor` | CNN on 3 channels | G_f |
/// | `head_hidden` | 100 | width of the heads' hidden layers (G_y: 2 layers, G_p: 1, as Ganin's) |
/// | `target_classes` | 2 | outputs of G_y |
/// | `protected_classes` | 2 | outputs of G_p |
/// | `negative_slope` | 0 | G_f's activation: ReLU at 0, leaky ReLU max(x, s·x) above (a dead G_f cannot recover; a leaky one can) |
/// | `bottleneck` | none | a last layer of G_f: linear to this many units, then G_f's activation; the features are its output |
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub extractor: ExtractorKind,
    pub head_hidden: i64,
    pub target_classes: i64,
    pub protected_classes: i64,
    pub negative_slope: f64,
    /// G_f ends in a dense layer of this width (none: the extractor's own output, Ganin's 768
    /// pooled maps). The conv maps hold the background wherever the image shows it; a narrow
    /// dense layer can leave it out.
    pub bottleneck: Option<i64>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            extractor: ExtractorKind::Cnn { channels: 3 },
            head_hidden: 100,
            target_classes: 2,
            protected_classes: 2,
            negative_slope: 0.0,
            bottleneck: None,
        }
    }
}

impl ModelConfig {
    pub fn with_extractor(mut self, extractor: ExtractorKind) -> Self {
        self.extractor = extractor;
        self
    }

    pub fn with_target_classes(mut self, classes: i64) -> Self {
        self.target_classes = classes;
        self
    }

    pub fn with_negative_slope(mut self, slope: f64) -> Self {
        self.negative_slope = slope;
        self
    }

    pub fn with_bottleneck(mut self, width: Option<i64>) -> Self {
        self.bottleneck = width;
        self
    }

    /// Width of G_f's output.
    pub fn feature_dim(&self) -> i64 {
        self.bottleneck.unwrap_or_else(|| self.extractor_dim())
    }

    /// Width of the extractor's own output (before a bottleneck).
    fn extractor_dim(&self) -> i64 {
        match self.extractor {
            ExtractorKind::Cnn { .. } => 48 * 4 * 4,
            ExtractorKind::Mlp { hidden, .. } => hidden,
        }
    }
}

impl ParamGuard for ModelConfig {
    type Error = AgnosticError;

    fn check_ref(&self) -> Result<()> {
        if !(0.0..1.0).contains(&self.negative_slope) {
            return Err(invalid("negative_slope", self.negative_slope, "must lie in [0, 1)"));
        }
        if self.bottleneck.is_some_and(|w| w < 1) {
            return Err(invalid("bottleneck", format!("{:?}", self.bottleneck), "give at least one unit"));
        }
        let ok = match self.extractor {
            ExtractorKind::Cnn { channels } => channels >= 1,
            ExtractorKind::Mlp { inputs, hidden } => inputs >= 1 && hidden >= 1,
        };
        if !ok || self.head_hidden < 1 || self.target_classes < 2 || self.protected_classes < 2 {
            return Err(invalid("model", format!("{self:?}"), "need ≥ 1 channel/input/unit and ≥ 2 classes per head"));
        }
        // The dense layers' weights (the bottleneck, both heads' hidden and output layers), each
        // float with its gradient and Adam's two moments; the conv extractor's are a few
        // thousand and left out.
        let (extractor, classes) = (self.extractor_dim() as f64, (self.target_classes + self.protected_classes) as f64);
        let (mlp_inputs, mlp_hidden) = match self.extractor {
            ExtractorKind::Mlp { inputs, hidden } => (inputs as f64, hidden as f64),
            ExtractorKind::Cnn { .. } => (0.0, 0.0),
        };
        hedge_run::Footprint::new("an agnostic network's weights, gradients and Adam moments", move |v| {
            let features = if v[0] > 0.0 { v[0] } else { extractor };
            let params = extractor * v[0] + features * v[1] * 2.0 + v[1] * classes + mlp_inputs * mlp_hidden;
            16.0 * params
        })
        .knob(if self.bottleneck.is_some() { "--bottleneck" } else { "" }, self.bottleneck.unwrap_or(0) as f64, 1.0)
        .knob("head hidden units", self.head_hidden as f64, 1.0)
        .check()?;
        Ok(())
    }
}

/// G_f as layers.
#[derive(Debug)]
enum Extractor {
    Cnn { conv1: Box<nn::Conv2D>, conv2: Box<nn::Conv2D> },
    Mlp { fc1: nn::Linear, fc2: nn::Linear },
}

/// An agnostic network: G_f, G_y, G_p, each with its own variables.
pub struct AgnosticNet {
    pub config: ModelConfig,
    pub extractor_vars: nn::VarStore,
    pub target_vars: nn::VarStore,
    pub protected_vars: nn::VarStore,
    extractor: Extractor,
    bottleneck: Option<nn::Linear>,
    target_head: nn::Sequential,
    protected_head: nn::Sequential,
}

impl AgnosticNet {
    /// A freshly initialised network (seed it with `tch::manual_seed` first).
    pub fn new(config: ModelConfig) -> Result<Self> {
        config.check_ref()?;
        let (ef, tf, pf) =
            (nn::VarStore::new(Device::Cpu), nn::VarStore::new(Device::Cpu), nn::VarStore::new(Device::Cpu));
        let f = ef.root();
        let extractor = match config.extractor {
            ExtractorKind::Cnn { channels } => Extractor::Cnn {
                conv1: Box::new(nn::conv2d(&f / "conv1", channels, 32, 5, Default::default())),
                conv2: Box::new(nn::conv2d(&f / "conv2", 32, 48, 5, Default::default())),
            },
            ExtractorKind::Mlp { inputs, hidden } => Extractor::Mlp {
                fc1: nn::linear(&f / "fc1", inputs, hidden, Default::default()),
                fc2: nn::linear(&f / "fc2", hidden, hidden, Default::default()),
            },
        };
        let bottleneck =
            config.bottleneck.map(|w| nn::linear(&f / "bottleneck", config.extractor_dim(), w, Default::default()));
        let (d, h) = (config.feature_dim(), config.head_hidden);
        let t = tf.root();
        let target_head = nn::seq()
            .add(nn::linear(&t / "fc1", d, h, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&t / "fc2", h, h, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&t / "out", h, config.target_classes, Default::default()));
        let p = pf.root();
        let protected_head = nn::seq()
            .add(nn::linear(&p / "fc1", d, h, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&p / "out", h, config.protected_classes, Default::default()));
        Ok(Self {
            config,
            extractor_vars: ef,
            target_vars: tf,
            protected_vars: pf,
            extractor,
            bottleneck,
            target_head,
            protected_head,
        })
    }

    /// The last convolution's rectified maps before pooling (CNN only), `[n, 48, 8, 8]`: what the
    /// activation-map audit upsamples.
    pub fn feature_maps(&self, x: &Tensor) -> Option<Tensor> {
        match &self.extractor {
            Extractor::Cnn { conv1, conv2 } => {
                Some(self.activate(&self.activate(&x.apply(&**conv1)).max_pool2d_default(2).apply(&**conv2)))
            }
            Extractor::Mlp { .. } => None,
        }
    }

    /// G_f's non-linearity: ReLU, or leaky ReLU with `negative_slope`.
    fn activate(&self, x: &Tensor) -> Tensor {
        if self.config.negative_slope == 0.0 {
            x.relu()
        } else {
            x.maximum(&(x * self.config.negative_slope))
        }
    }

    /// The features of `x` in batches of 1,000, without gradients (for audits and erasers on
    /// a frozen network).
    ///
    /// # Shapes
    /// `x`: the network's input `[n, …]` → `[n, d]`.
    pub fn frozen_features(&self, x: &Tensor) -> Tensor {
        tch::no_grad(|| {
            let parts: Vec<Tensor> = x.split(1000, 0).iter().map(|b| self.features(b)).collect();
            Tensor::cat(&parts, 0)
        })
    }

    /// G_f.
    ///
    /// # Shapes
    /// `x`: `[n, channels, 28, 28]` or `[n, inputs]` → `[n, feature_dim]`.
    pub fn features(&self, x: &Tensor) -> Tensor {
        match &self.extractor {
            Extractor::Cnn { .. } => self.features_from_maps(&self.feature_maps(x).expect("a CNN has maps")),
            Extractor::Mlp { fc1, fc2 } => {
                self.through_bottleneck(self.activate(&self.activate(&x.apply(fc1)).apply(fc2)))
            }
        }
    }

    /// The rest of a CNN's G_f after [`AgnosticNet::feature_maps`]: max-pool, flatten, and the
    /// bottleneck if there is one (what a class-activation map differentiates through).
    ///
    /// # Shapes
    /// `maps`: `[n, 48, 8, 8]` → `[n, feature_dim]`.
    pub fn features_from_maps(&self, maps: &Tensor) -> Tensor {
        self.through_bottleneck(maps.max_pool2d_default(2).flatten(1, -1))
    }

    fn through_bottleneck(&self, out: Tensor) -> Tensor {
        match &self.bottleneck {
            Some(layer) => self.activate(&out.apply(layer)),
            None => out,
        }
    }

    /// A network saved by [`AgnosticNet::save`] under `stem` in `dir`, built with `config`.
    ///
    /// # Errors
    /// A missing or unreadable part, or one whose variables do not fit `config`, named.
    pub fn load(config: ModelConfig, dir: &std::path::Path, stem: &str) -> Result<Self> {
        let mut net = Self::new(config)?;
        for (part, vars) in [
            ("extractor", &mut net.extractor_vars),
            ("target", &mut net.target_vars),
            ("protected", &mut net.protected_vars),
        ] {
            let path = dir.join(format!("{stem}-{part}.safetensors"));
            vars.load(&path)
                .map_err(|e| invalid("checkpoint", path.display(), format!("cannot be read into this network: {e}")))?;
        }
        Ok(net)
    }

    /// Writes the three parts as `<stem>-extractor.safetensors`, `<stem>-target.safetensors` and
    /// `<stem>-protected.safetensors` in `dir` (each written to a temporary name, then renamed).
    pub fn save(&self, dir: &std::path::Path, stem: &str) -> Result<()> {
        for (part, vars) in
            [("extractor", &self.extractor_vars), ("target", &self.target_vars), ("protected", &self.protected_vars)]
        {
            let path = dir.join(format!("{stem}-{part}.safetensors"));
            let mut variables: Vec<_> = vars.variables().into_iter().collect();
            variables.sort_by(|a, b| a.0.cmp(&b.0));
            if let Some((name, _)) =
                variables.iter().find(|(_, t)| t.isfinite().logical_not().any().int64_value(&[]) != 0)
            {
                return Err(AgnosticError::NonFinite {
                    what: format!("the {part} weight '{name}'"),
                    file: path.display().to_string(),
                    fix: "the training diverged; lower the learning rate".into(),
                });
            }
            let tmp = dir.join(format!(".{stem}-{part}.partial.safetensors"));
            let fail = |e: String| AgnosticError::Write { path: path.display().to_string(), what: e };
            vars.save(&tmp).map_err(|e| fail(e.to_string()))?;
            std::fs::rename(&tmp, &path).map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    }

    /// G_y logits `[n, target_classes]` from features.
    pub fn target_logits(&self, features: &Tensor) -> Tensor {
        self.target_head.forward(features)
    }

    /// Draws G_p's weights afresh, as `nn::linear` initialises them (uniform in ±1/√fan_in for
    /// weights and biases), from the process's generator (seed it first).
    pub fn reset_protected_head(&self) {
        tch::no_grad(|| {
            let variables = self.protected_vars.variables();
            // In name order: the draws, and so the weights, depend on the seed alone.
            let mut names: Vec<&String> = variables.keys().collect();
            names.sort();
            for name in names {
                let mut t = variables[name].shallow_clone();
                // A bias takes the fan-in of its layer's weight.
                let weight = name.strip_suffix(".bias").map(|layer| format!("{layer}.weight"));
                let fan_in = match weight.as_ref().and_then(|w| variables.get(w)) {
                    Some(w) => w.size()[1],
                    None => t.size().get(1).copied().unwrap_or(1),
                };
                let bound = 1.0 / (fan_in as f64).sqrt();
                let _ = t.uniform_(-bound, bound);
            }
        });
    }

    /// G_p logits `[n, protected_classes]` from features (apply the GRL before, when training).
    pub fn protected_logits(&self, features: &Tensor) -> Tensor {
        self.protected_head.forward(features)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ReLU features are never negative; a leaky G_f passes s·x for x < 0, so its features and
    /// gradients stay alive where a ReLU G_f would be dead. Slopes outside [0, 1) are refused.
    #[test]
    fn leaky_extractor_keeps_negative_responses() {
        let mlp = ExtractorKind::Mlp { inputs: 3, hidden: 8 };
        let x = Tensor::from_slice(&[-5.0f32, -4.0, -3.0, 2.0, 1.0, 0.5]).reshape([2, 3]);
        let _generator = crate::seeded_generator(0);
        let relu = AgnosticNet::new(ModelConfig::default().with_extractor(mlp)).unwrap();
        assert!(relu.features(&x).min().double_value(&[]) >= 0.0);
        let _generator = crate::seeded_generator(0);
        let leaky = AgnosticNet::new(ModelConfig::default().with_extractor(mlp).with_negative_slope(0.1)).unwrap();
        // Same weights (same seed): the first layers' positive parts agree; only the leaky one
        // has negative outputs.
        let (r, l) = (relu.features(&x), leaky.features(&x));
        assert!(l.min().double_value(&[]) < 0.0, "{l}");
        let first_layer = |net: &AgnosticNet| {
            net.activate(&x.apply(match &net.extractor {
                Extractor::Mlp { fc1, .. } => fc1,
                Extractor::Cnn { .. } => unreachable!("an MLP"),
            }))
        };
        let (hr, hl) = (first_layer(&relu), first_layer(&leaky));
        assert!((hl.relu() - &hr).abs().max().double_value(&[]) < 1e-6);
        assert!(r.min().double_value(&[]) >= 0.0);
        assert!(ModelConfig::default().with_negative_slope(1.0).check_ref().is_err());
    }

    /// A reset draws new G_p weights within nn::linear's bounds, the same ones for the same
    /// seed, and leaves G_f alone.
    #[test]
    fn resetting_the_adversary_redraws_only_its_weights() {
        let mlp = ExtractorKind::Mlp { inputs: 3, hidden: 8 };
        let _generator = crate::seeded_generator(0);
        let net = AgnosticNet::new(ModelConfig::default().with_extractor(mlp)).unwrap();
        let snapshot = |vars: &nn::VarStore| {
            let mut v: Vec<(String, Tensor)> = vars.variables().into_iter().map(|(k, t)| (k, t.copy())).collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        let (before_p, before_f) = (snapshot(&net.protected_vars), snapshot(&net.extractor_vars));
        let redraw = |seed: i64| {
            let _generator = crate::seeded_generator(seed);
            net.reset_protected_head();
            snapshot(&net.protected_vars)
        };
        let (first, again) = (redraw(1), redraw(1));
        for ((name, a), (_, b)) in first.iter().zip(&again) {
            assert!(a.equal(b), "{name}: same seed, same draw");
        }
        for ((name, a), (_, b)) in first.iter().zip(&before_p) {
            assert!(!a.equal(b), "{name} was redrawn");
            let layer_weight = format!("{}.weight", name.rsplit_once('.').unwrap().0);
            let fan_in = first.iter().find(|(n, _)| *n == layer_weight).unwrap().1.size()[1];
            let bound = 1.0 / (fan_in as f64).sqrt();
            assert!(a.abs().max().double_value(&[]) <= bound + 1e-7, "{name} within ±{bound}");
        }
        for ((name, a), (_, b)) in snapshot(&net.extractor_vars).iter().zip(&before_f) {
            assert!(a.equal(b), "{name}: G_f untouched");
        }
        assert!(ModelConfig::default().with_negative_slope(-0.1).check_ref().is_err());
    }
}
