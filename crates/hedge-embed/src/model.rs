//! The HIB network of Section 4.1: a small CNN trunk and a point, Gaussian or mixture head.

use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use crate::config::{ConvPrecision, HibConfig, ModelKind, Norm};
use crate::distribution::Embedding;
use crate::loss::MatchHead;

/// conv 5x5 → ReLU → max-pool 2 → conv 5x5 → ReLU → max-pool 2 → fully connected head
/// (with `norm = batch`: conv → max-pool → batch norm → ReLU, twice; with `hidden_units = H`:
/// a fully connected layer of H units and a ReLU before the head).
///
/// Convolutions are padded ("same"), so a 28 x 28N input leaves `channels[1] x 7 x 7N` features.
/// The mixture's C branches ("one linear layer per branch") are stored as one linear layer with
/// C·2D outputs: each branch owns its own rows of the weight matrix, which is the same model and
/// one matrix product instead of C.
#[derive(Debug)]
pub struct HibNet {
    conv1: nn::Conv2D,
    conv2: nn::Conv2D,
    /// Batch normalisation after each convolution (`norm = batch`).
    norms: Option<[nn::BatchNorm; 2]>,
    /// The fully connected layer between the trunk and the head (`hidden_units > 0`).
    hidden: Option<nn::Linear>,
    head: nn::Linear,
    pub matcher: MatchHead,
    kind: ModelKind,
    components: i64,
    pub(crate) dim: i64,
    min_variance: f64,
    /// Dropout probability of the trunk's features while training (`config.dropout`).
    dropout: f64,
    bf16: bool,
}

impl HibNet {
    /// Builds the network's variables under `vs` (names: `trunk.conv1`, `trunk.conv2`, `head`,
    /// `match.a_raw`, `match.b`; with batch norm also `trunk.norm1`, `trunk.norm2`; with hidden
    /// units also `hidden`). `config` must have passed [`crate::ParamGuard::check_ref`].
    pub fn new(vs: &nn::Path, config: &HibConfig) -> Self {
        let [c1, c2] = config.model.channels.map(|c| c as i64);
        let conv = nn::ConvConfig { padding: 2, ..Default::default() };
        let trunk = vs / "trunk";
        let in_channels = config.input_shape()[0] as i64;
        let features = c2 * config.pooled_cells() as i64;
        let dim = config.model.dim as i64;
        let components = config.effective_components() as i64;
        let outputs = match config.model.embedding.kind() {
            ModelKind::Point => dim,
            _ => components * 2 * dim,
        };
        let hidden_units = config.model.hidden_units as i64;
        let hidden = (hidden_units > 0).then(|| nn::linear(vs / "hidden", features, hidden_units, Default::default()));
        let head_inputs = if hidden_units > 0 { hidden_units } else { features };
        HibNet {
            conv1: nn::conv2d(&trunk / "conv1", in_channels, c1, 5, conv),
            conv2: nn::conv2d(&trunk / "conv2", c1, c2, 5, conv),
            norms: (config.model.norm == Norm::Batch).then(|| {
                [
                    nn::batch_norm2d(&trunk / "norm1", c1, Default::default()),
                    nn::batch_norm2d(&trunk / "norm2", c2, Default::default()),
                ]
            }),
            hidden,
            head: nn::linear(vs / "head", head_inputs, outputs, Default::default()),
            matcher: MatchHead::new(vs / "match", config.model.init_a, config.model.init_b)
                .with_matching(crate::pair_loss::PairLoss::matching(config.loss.kind.loss())),
            kind: config.model.embedding.kind(),
            components,
            dim,
            min_variance: config.model.min_variance,
            dropout: config.model.dropout,
            // `check_ref` refused a bad HEDGE_CONV_PRECISION, so the fallback is never taken.
            bf16: config
                .model
                .conv_precision
                .resolve(vs.device())
                .unwrap_or_else(|_| ConvPrecision::for_hardware(vs.device()))
                == ConvPrecision::Bf16,
        }
    }

    /// Whether `weight_decay` applies to the variable of this name: the two convolutions', the
    /// hidden layer's and the head's weight matrices. Biases, batch norm's scale and shift and the match head's a
    /// and b are left alone, as AdamW is usually set up (decaying them only moves an offset).
    pub fn is_decayed(name: &str) -> bool {
        matches!(name, "trunk.conv1.weight" | "trunk.conv2.weight" | "hidden.weight" | "head.weight")
    }

    /// Shared trunk features (batch norm, if any, in inference mode).
    ///
    /// # Shapes
    /// `x`: `[B, 1, 28, 28N]` in [0, 1]; returns `[B, channels[1] * 7 * 7N]`.
    pub fn features(&self, x: &Tensor) -> Tensor {
        self.features_t(x, false)
    }

    /// Shared trunk features; `train` selects batch statistics (and updates the running ones)
    /// in the batch-norm layers.
    ///
    /// # Shapes
    /// `x`: `[B, 1, 28, 28N]` in [0, 1]; returns `[B, channels[1] * 7 * 7N]`.
    pub fn features_t(&self, x: &Tensor, train: bool) -> Tensor {
        let h = match &self.norms {
            None => {
                let h = self.conv(x, &self.conv1).relu().max_pool2d_default(2);
                self.conv(&h, &self.conv2).relu().max_pool2d_default(2)
            }
            // Pooling before the norm: a quarter of the values to normalise (batch norm in f32
            // on the full-resolution maps nearly doubled the step time on 2 CPU cores).
            Some([n1, n2]) => {
                let h = self.conv(x, &self.conv1).max_pool2d_default(2).to_kind(Kind::Float).apply_t(n1, train).relu();
                self.conv(&h, &self.conv2).max_pool2d_default(2).to_kind(Kind::Float).apply_t(n2, train).relu()
            }
        };
        h.flatten(1, -1).to_kind(Kind::Float)
    }

    /// A 5x5 "same" convolution, in bf16 when so configured (the casts are differentiable, so
    /// gradients reach the f32 weights as under autocast).
    fn conv(&self, x: &Tensor, layer: &nn::Conv2D) -> Tensor {
        if !self.bf16 {
            return x.apply(layer);
        }
        let bf = Kind::BFloat16;
        let bias = layer.bs.as_ref().map(|b| b.to_kind(bf));
        x.to_kind(bf).conv2d(&layer.ws.to_kind(bf), bias.as_ref(), [1, 1], [2, 2], [1, 1], 1)
    }

    /// Embeds a batch of images (inference mode). Variances are softplus(raw) + `min_variance`: positive, smooth,
    /// and bounded away from 0 without clipping gradients.
    ///
    /// # Shapes
    /// `x`: `[B, 1, 28, 28N]`; returns means (and variances) `[B, C, D]`.
    pub fn forward(&self, x: &Tensor) -> Embedding {
        self.forward_t(x, false)
    }

    /// Embeds a batch of images; `train` as in [`HibNet::features_t`], and with `train` the
    /// trunk's features are dropped out with probability `config.dropout` (scaled by 1 / (1 − p),
    /// so inference needs no change; the mask comes from libtorch's generator, which training
    /// seeds every step).
    ///
    /// # Shapes
    /// `x`: `[B, 1, 28, 28N]`; returns means (and variances) `[B, C, D]`.
    pub fn forward_t(&self, x: &Tensor, train: bool) -> Embedding {
        let features = self.features_t(x, train);
        let features = if train && self.dropout > 0.0 { features.dropout(self.dropout, true) } else { features };
        let features = match &self.hidden {
            Some(hidden) => hidden.forward(&features).relu(),
            None => features,
        };
        let out = self.head.forward(&features);
        match self.kind {
            ModelKind::Point => Embedding::point(out),
            _ => {
                let out = out.reshape([-1, self.components, 2, self.dim]);
                Embedding { mean: out.select(2, 0), variance: Some(out.select(2, 1).softplus() + self.min_variance) }
            }
        }
    }
}
