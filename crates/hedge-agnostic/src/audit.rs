//! The audit of a trained network, on data disjoint from its training data: accuracies, worst
//! group accuracy, fresh probes on the frozen features (with a 95 % interval around chance and a
//! mutual-information lower bound), counterfactual flip rate, activation-map mass inside the
//! digit, and the fairness gaps used for Adult.

use hedge_eval::grouped::{self, MetricFrame};
use serde::{Deserialize, Serialize};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

use crate::error::{invalid, Result};
use crate::model::AgnosticNet;

/// Features of `x` in batches of 1,000, without gradients ([`AgnosticNet::frozen_features`]).
pub fn features(net: &AgnosticNet, x: &Tensor) -> Tensor {
    net.frozen_features(x)
}

/// Fraction of rows whose argmax equals the label.
pub fn accuracy(logits: &Tensor, labels: &Tensor) -> f64 {
    logits.argmax(1, false).eq_tensor(labels).to_kind(Kind::Double).mean(Kind::Double).double_value(&[])
}

/// Lowest accuracy over the (target, protected) groups present, from predictions (the
/// minimum of hedge-eval's [`MetricFrame`] of accuracy over those groups).
///
/// # Shapes
/// `predicted`, `target`, `protected`: `[n]` class indices.
pub fn worst_group_accuracy(predicted: &Tensor, target: &Tensor, protected: &Tensor) -> f64 {
    let (p, t, a) = (labels(predicted), labels(target), labels(protected));
    let cells: Vec<(u32, u32)> = t.iter().copied().zip(a).collect();
    MetricFrame::new(&cells, |rows| grouped::accuracy(&p, &t, rows)).map_or(f64::NAN, |f| f.group_min())
}

/// A tensor of class indices as plain labels.
fn labels(t: &Tensor) -> Vec<u32> {
    Vec::<i64>::try_from(t.to_kind(Kind::Int64).flatten(0, -1))
        .expect("an integer tensor")
        .into_iter()
        .map(|v| v as u32)
        .collect()
}

/// Fraction of predictions that change when only the background changes, given the
/// predictions on the original images (which the caller usually has already); `concept_flipped`
/// is each flipped image's concept label (read by an oracle eraser only).
pub fn flip_rate(
    view: &crate::erasure::FeatureView<'_>,
    predicted: &Tensor,
    x_flipped: &Tensor,
    concept_flipped: &Tensor,
) -> f64 {
    let b = view.target_logits(&view.features(x_flipped, concept_flipped)).argmax(1, false);
    predicted.ne_tensor(&b).to_kind(Kind::Double).mean(Kind::Double).double_value(&[])
}

/// Share of activation mass inside the (dilated) digit mask: per image, the strongest response
/// over G_f's last convolution channels, upsampled bilinearly to 28 × 28, mass inside the mask /
/// total mass, averaged over images. `None` for networks without maps.
///
/// # Shapes
/// `x`: `[n, 3, 28, 28]`, `mask`: `[n, 28, 28]` of 0/1.
pub fn mask_share(net: &AgnosticNet, x: &Tensor, mask: &Tensor) -> Option<f64> {
    Some(mask_share_of(&activation_maps(net, x)?, mask))
}

/// Share of non-negative map mass inside the mask, averaged over images.
///
/// # Shapes
/// `maps`: `[n, 28, 28]` (≥ 0), `mask`: `[n, 28, 28]` of 0/1.
pub fn mask_share_of(maps: &Tensor, mask: &Tensor) -> f64 {
    let mask = mask.to_kind(Kind::Float);
    let inside = (maps * &mask).sum_dim_intlist([1, 2].as_slice(), false, Kind::Float);
    let total = maps.sum_dim_intlist([1, 2].as_slice(), false, Kind::Float).clamp_min(1e-12);
    (inside / total).mean(Kind::Double).double_value(&[])
}

/// Per image the channel-wise maximum of G_f's last rectified maps, upsampled to `[n, 28, 28]`.
pub fn activation_maps(net: &AgnosticNet, x: &Tensor) -> Option<Tensor> {
    tch::no_grad(|| {
        let parts: Option<Vec<Tensor>> = x
            .split(1000, 0)
            .iter()
            .map(|b| {
                net.feature_maps(b).map(|m| {
                    // The positive part: with a leaky G_f the maps can be slightly negative.
                    let strongest = m.amax([1].as_slice(), true).clamp_min(0.0);
                    strongest.upsample_bilinear2d([28, 28], false, None, None).squeeze_dim(1)
                })
            })
            .collect();
        parts.map(|p| Tensor::cat(&p, 0))
    })
}

/// Kind of probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeKind {
    /// Multinomial logistic regression.
    Linear,
    /// One hidden layer of ReLU units (`ProbeConfig::hidden`).
    Mlp,
}

/// Probe training (full-batch Adam on standardised features).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeConfig {
    pub kind: ProbeKind,
    pub steps: usize,
    pub learning_rate: f64,
    pub weight_decay: f64,
    pub seed: u64,
    /// Hidden units of an MLP probe.
    #[serde(default = "default_probe_hidden")]
    pub hidden: i64,
}

fn default_probe_hidden() -> i64 {
    64
}

impl ProbeConfig {
    pub fn new(kind: ProbeKind) -> Self {
        Self { kind, steps: 500, learning_rate: 1e-2, weight_decay: 1e-4, seed: 0, hidden: default_probe_hidden() }
    }
}

/// The MLP probes the audit chooses from: (hidden units, Adam weight decay).
pub const MLP_PROBE_GRID: [(i64, f64); 4] = [(64, 1e-4), (64, 1e-2), (256, 1e-4), (256, 1e-2)];

/// Which MLP probe of [`MLP_PROBE_GRID`] the validation split chose, and its validation accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeChoice {
    pub hidden: i64,
    pub weight_decay: f64,
    pub validation_accuracy: f64,
}

/// What a probe could read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub accuracy: f64,
    /// Majority-class rate of the probe-test labels.
    pub chance: f64,
    /// 95 % interval of a chance-level classifier's accuracy on this many test points.
    pub chance_interval: (f64, f64),
    pub at_chance: bool,
    /// Cross-entropy of the probe on the test split, bits.
    pub cross_entropy_bits: f64,
    /// Entropy H(A) of the test labels, bits.
    pub entropy_bits: f64,
    /// max(0, H(A) − cross-entropy): a lower bound on I(A; features), bits.
    pub mutual_information_bits: f64,
    pub test_points: usize,
    /// The tuned MLP probe's settings (absent for a single probe, and in audits written before
    /// the probe was tuned, whose MLP probe had 64 units and weight decay 1e-4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<ProbeChoice>,
    /// The setting a tuned ladder rung other than the MLP chose on its validation split
    /// (`crate::ladder`); absent for untuned probes and the MLP probe (`chosen`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<RungChoice>,
}

/// What a tuned ladder rung (quadratic, RBF) chose on its validation split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RungChoice {
    /// The logistic regression's weight decay.
    pub weight_decay: f64,
    /// The RBF kernel's γ in exp(−γ‖x − y‖²) on standardised features (RBF rung only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    pub validation_accuracy: f64,
}

/// Trains a probe on (train features → labels) and scores it on the test split.
///
/// # Shapes
/// `train_f`: `[n, d]`, `train_a`: `[n]` i64 in `0..classes`; the same for test.
pub fn probe(
    train_f: &Tensor,
    train_a: &Tensor,
    test_f: &Tensor,
    test_a: &Tensor,
    config: &ProbeConfig,
) -> Result<ProbeResult> {
    check_probe_rows(train_f, train_a, test_f, test_a)?;
    fit_probe(train_f, train_a, class_count(train_a, test_a), config)?.score(test_f, test_a)
}

/// The rows a probe learns from and is scored on, checked before any training: ≥ 2 train rows
/// and ≥ 1 test row, one label each, as many columns on both sides.
pub(crate) fn check_probe_rows(train_f: &Tensor, train_a: &Tensor, test_f: &Tensor, test_a: &Tensor) -> Result<()> {
    let (n, d) = (train_f.size()[0], train_f.size()[1]);
    let m = test_f.size()[0];
    if n < 2 || m < 1 || train_a.size() != [n] || test_a.size() != [m] || test_f.size()[1] != d {
        return Err(invalid(
            "probe data",
            format!("{n} train / {m} test rows"),
            "need ≥ 2 train rows, ≥ 1 test row, one label each",
        ));
    }
    Ok(())
}

/// A probe trained on standardised features ([`fit_probe`]), ready to score other rows: a tuned
/// probe scores the setting its validation rows chose on the test rows without training it again.
pub(crate) struct FittedProbe {
    net: nn::Sequential,
    // The network's parameters live here.
    _vars: nn::VarStore,
    mean: Tensor,
    std: Tensor,
    classes: i64,
}

/// Trains a `classes`-way probe on (train features → labels), rows as [`check_probe_rows`] checks them.
///
/// # Shapes
/// `train_f`: `[n, d]`, `train_a`: `[n]` i64 in `0..classes`.
pub(crate) fn fit_probe(train_f: &Tensor, train_a: &Tensor, classes: i64, config: &ProbeConfig) -> Result<FittedProbe> {
    if config.steps == 0 {
        // An untrained probe's accuracy would be reported as if it measured something.
        return Err(invalid("probe steps", 0, "a probe needs at least one training step (the audit's default: 500)"));
    }
    let d = train_f.size()[1];
    let mean = train_f.mean_dim(0, true, Kind::Float);
    let std = train_f.std_dim(0, false, true).clamp_min(1e-6);
    let xs = (train_f - &mean) / &std;
    let _generator = crate::seeded_generator(config.seed as i64);
    let vars = nn::VarStore::new(Device::Cpu);
    let root = vars.root();
    let net = match config.kind {
        ProbeKind::Linear => nn::seq().add(nn::linear(&root / "out", d, classes, Default::default())),
        ProbeKind::Mlp => nn::seq()
            .add(nn::linear(&root / "hidden", d, config.hidden, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&root / "out", config.hidden, classes, Default::default())),
    };
    let mut opt = nn::Adam { wd: config.weight_decay, ..Default::default() }
        .build(&vars, config.learning_rate)
        .map_err(|e| invalid("optimiser", e, "could not build Adam"))?;
    for _ in 0..config.steps {
        let loss = net.forward(&xs).cross_entropy_for_logits(train_a);
        opt.backward_step(&loss);
    }
    Ok(FittedProbe { net, _vars: vars, mean, std, classes })
}

impl FittedProbe {
    /// The probe's scores on (features → labels), standardised as its training rows were.
    ///
    /// # Shapes
    /// `f`: `[m, d]`, `a`: `[m]` i64 in `0..classes`.
    pub(crate) fn score(&self, f: &Tensor, a: &Tensor) -> Result<ProbeResult> {
        let logits = tch::no_grad(|| self.net.forward(&((f - &self.mean) / &self.std)));
        score(&logits, a, self.classes)
    }
}

/// What a probe's scores on the test rows tell: accuracy, the chance interval and the
/// information bound. `logits` may be any unnormalised log-probabilities (log-probabilities
/// themselves included).
///
/// # Shapes
/// `logits`: `[m, classes]`, `test_a`: `[m]` i64 in `0..classes`.
pub(crate) fn score(logits: &Tensor, test_a: &Tensor, classes: i64) -> Result<ProbeResult> {
    let m = test_a.size()[0];
    let acc = accuracy(logits, test_a);
    let ce_nats = tch::no_grad(|| logits.cross_entropy_for_logits(test_a)).double_value(&[]);
    let counts = test_a.bincount(None::<Tensor>, classes).to_kind(Kind::Double) / m as f64;
    let probs: Vec<f64> = Vec::try_from(counts).map_err(|e| invalid("probe", e, "copy"))?;
    let chance = probs.iter().copied().fold(0.0, f64::max);
    let entropy_bits = -probs.iter().filter(|&&p| p > 0.0).map(|p| p * p.log2()).sum::<f64>();
    let half = 1.96 * (chance * (1.0 - chance) / m as f64).sqrt();
    let cross_entropy_bits = ce_nats / std::f64::consts::LN_2;
    Ok(ProbeResult {
        accuracy: acc,
        chance,
        chance_interval: (chance - half, chance + half),
        at_chance: acc <= chance + half,
        cross_entropy_bits,
        entropy_bits,
        mutual_information_bits: (entropy_bits - cross_entropy_bits).max(0.0),
        test_points: m as usize,
        chosen: None,
        setting: None,
    })
}

/// The number of concept classes two label tensors imply (at least 2).
pub(crate) fn class_count(train_a: &Tensor, test_a: &Tensor) -> i64 {
    (train_a.max().int64_value(&[]).max(test_a.max().int64_value(&[])) + 1).max(2)
}

/// The share of the probe-train rows a tuned probe holds out to choose its setting on.
pub const VALIDATION_SHARE: f64 = 0.2;

/// Rows `[fit, validation]` of an `n`-row probe-train split: 80 % to fit, [`VALIDATION_SHARE`]
/// to choose a setting on, in an order seeded by `seed`.
pub(crate) fn validation_split(n: i64, seed: u64) -> Result<(Tensor, Tensor)> {
    let fit_rows = n * 4 / 5;
    if fit_rows < 2 || n - fit_rows < 1 {
        return Err(invalid("probe data", n, "need ≥ 3 probe-train rows to hold a validation split out"));
    }
    let order = {
        let _generator = crate::seeded_generator(seed as i64 + 7919);
        Tensor::randperm(n, (Kind::Int64, Device::Cpu))
    };
    Ok((order.narrow(0, 0, fit_rows), order.narrow(0, fit_rows, n - fit_rows)))
}

/// The probe-train rows split by [`validation_split`]: `((fit features, fit labels),
/// (validation features, validation labels))`.
pub(crate) fn fit_and_validation_rows(
    train_f: &Tensor,
    train_a: &Tensor,
    seed: u64,
) -> Result<((Tensor, Tensor), (Tensor, Tensor))> {
    let (fit, val) = validation_split(train_f.size()[0], seed)?;
    Ok((
        (train_f.index_select(0, &fit), train_a.index_select(0, &fit)),
        (train_f.index_select(0, &val), train_a.index_select(0, &val)),
    ))
}

/// Whether validation result `r` beats `best`: higher accuracy, then lower cross-entropy.
pub(crate) fn beats(r: &ProbeResult, best: &ProbeResult) -> bool {
    r.accuracy > best.accuracy || (r.accuracy == best.accuracy && r.cross_entropy_bits < best.cross_entropy_bits)
}

/// The strongest MLP probe of [`MLP_PROBE_GRID`], so that "at chance" cannot come from a weak
/// probe: each setting learns on 80 % of the probe-train rows (a split seeded by `seed`), the
/// best on the other 20 % (accuracy, then lower cross-entropy) is scored on the test split.
///
/// # Shapes
/// As [`probe`].
pub fn tuned_mlp_probe(
    train_f: &Tensor,
    train_a: &Tensor,
    test_f: &Tensor,
    test_a: &Tensor,
    steps: usize,
    seed: u64,
) -> Result<ProbeResult> {
    check_probe_rows(train_f, train_a, test_f, test_a)?;
    let ((fit_f, fit_a), (val_f, val_a)) = fit_and_validation_rows(train_f, train_a, seed)?;
    // One class count for every setting and for the test rows: the chosen probe is scored on
    // the test rows as it was trained, not trained again.
    let classes = class_count(train_a, test_a);
    let mut best: Option<(ProbeConfig, FittedProbe, ProbeResult)> = None;
    for (hidden, weight_decay) in MLP_PROBE_GRID {
        let config = ProbeConfig { steps, seed, hidden, weight_decay, ..ProbeConfig::new(ProbeKind::Mlp) };
        let fitted = fit_probe(&fit_f, &fit_a, classes, &config)?;
        let r = fitted.score(&val_f, &val_a)?;
        if best.as_ref().is_none_or(|(_, _, b)| beats(&r, b)) {
            best = Some((config, fitted, r));
        }
    }
    let (config, fitted, on_validation) = best.expect("a non-empty grid");
    let mut result = fitted.score(test_f, test_a)?;
    result.chosen = Some(ProbeChoice {
        hidden: config.hidden,
        weight_decay: config.weight_decay,
        validation_accuracy: on_validation.accuracy,
    });
    Ok(result)
}

/// A linear probe and the tuned MLP probe ([`tuned_mlp_probe`]) with `steps` Adam steps, seeded
/// by `seed`: `(linear, mlp)`.
///
/// # Shapes
/// As [`probe`].
pub fn probe_pair(
    train_f: &Tensor,
    train_a: &Tensor,
    test_f: &Tensor,
    test_a: &Tensor,
    steps: usize,
    seed: u64,
) -> Result<(ProbeResult, ProbeResult)> {
    let linear =
        probe(train_f, train_a, test_f, test_a, &ProbeConfig { steps, seed, ..ProbeConfig::new(ProbeKind::Linear) })?;
    Ok((linear, tuned_mlp_probe(train_f, train_a, test_f, test_a, steps, seed)?))
}

/// P(ŷ = 1 | A = 1) − P(ŷ = 1 | A = 0) (AIF360's statistical parity difference with A = 1 the
/// unprivileged group): the signed gap of hedge-eval's [`MetricFrame`] of the selection rate
/// (NaN when a group has no row).
///
/// # Shapes
/// `predicted`, `protected`: `[n]` class indices.
pub fn demographic_parity_difference(predicted: &Tensor, protected: &Tensor) -> f64 {
    let (p, a) = (labels(predicted), labels(protected));
    MetricFrame::new(&a, |rows| grouped::selection_rate(&p, rows))
        .ok()
        .and_then(|f| f.difference_between(&1, &0))
        .unwrap_or(f64::NAN)
}

/// max(|TPR₁ − TPR₀|, |FPR₁ − FPR₀|) between the protected groups
/// ([`grouped::equalised_odds_difference`], fairlearn's `equalized_odds_difference`).
///
/// # Shapes
/// `predicted`, `target`, `protected`: `[n]` class indices.
pub fn equalised_odds_difference(predicted: &Tensor, target: &Tensor, protected: &Tensor) -> f64 {
    grouped::equalised_odds_difference(&labels(predicted), &labels(target), &labels(protected)).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Features that carry no protected information by construction (independent noise) leave
    /// both probes inside the chance interval with a near-zero information bound; features that
    /// contain A let them read it.
    #[test]
    fn probes_are_at_chance_on_independent_features_and_read_leaks() {
        let _generator = crate::seeded_generator(3);
        let (n, m) = (2000, 2000);
        let a_train = Tensor::randint(2, [n], (Kind::Int64, Device::Cpu));
        let a_test = Tensor::randint(2, [m], (Kind::Int64, Device::Cpu));
        let noise_train = Tensor::randn([n, 20], (Kind::Float, Device::Cpu));
        let noise_test = Tensor::randn([m, 20], (Kind::Float, Device::Cpu));
        for kind in [ProbeKind::Linear, ProbeKind::Mlp] {
            let config = ProbeConfig { steps: 300, ..ProbeConfig::new(kind) };
            let r = probe(&noise_train, &a_train, &noise_test, &a_test, &config).unwrap();
            assert!(r.at_chance, "{kind:?} on noise: {r:?}");
            assert!(r.mutual_information_bits < 0.02, "{kind:?}: {r:?}");
            assert!((r.entropy_bits - 1.0).abs() < 0.01);
            // A leaked through one noisy coordinate.
            let leak = |f: &Tensor, a: &Tensor| {
                let col = a.to_kind(Kind::Float) * 2.0 - 1.0 + f.narrow(1, 0, 1).squeeze_dim(1) * 0.5;
                Tensor::cat(&[col.unsqueeze(1), f.narrow(1, 1, 19)], 1)
            };
            let r =
                probe(&leak(&noise_train, &a_train), &a_train, &leak(&noise_test, &a_test), &a_test, &config).unwrap();
            assert!(r.accuracy > 0.95 && !r.at_chance && r.mutual_information_bits > 0.5, "{kind:?}: {r:?}");
        }
    }

    /// A concept that is the XOR of two coordinates' signs: no linear probe reads it, the tuned
    /// MLP probe does, and it records which setting the validation split chose.
    #[test]
    fn the_tuned_mlp_probe_reads_a_non_linear_leak() {
        let _generator = crate::seeded_generator(5);
        let xor = |f: &Tensor| f.select(1, 0).gt(0.0).logical_xor(&f.select(1, 1).gt(0.0)).to_kind(Kind::Int64);
        let (train, test) = (
            Tensor::randn([3000, 8], (Kind::Float, Device::Cpu)),
            Tensor::randn([2000, 8], (Kind::Float, Device::Cpu)),
        );
        let (linear, mlp) = probe_pair(&train, &xor(&train), &test, &xor(&test), 300, 0).unwrap();
        assert!(linear.at_chance, "{linear:?}");
        assert!(mlp.accuracy > 0.9, "{mlp:?}");
        let chosen = mlp.chosen.expect("the tuned probe says what it chose");
        assert!(MLP_PROBE_GRID.contains(&(chosen.hidden, chosen.weight_decay)));
        assert!(chosen.validation_accuracy > 0.9, "{chosen:?}");
        assert!(linear.chosen.is_none());
    }

    #[test]
    fn fairness_gaps_match_hand_counts() {
        // A = 1: predictions 1,1,0,0 (targets 1,0,1,0); A = 0: 1,0,0,0 (targets 1,1,0,0).
        let predicted = Tensor::from_slice(&[1i64, 1, 0, 0, 1, 0, 0, 0]);
        let target = Tensor::from_slice(&[1i64, 0, 1, 0, 1, 1, 0, 0]);
        let protected = Tensor::from_slice(&[1i64, 1, 1, 1, 0, 0, 0, 0]);
        assert!((demographic_parity_difference(&predicted, &protected) - 0.25).abs() < 1e-12);
        // TPR: A=1 1/2, A=0 1/2; FPR: A=1 1/2, A=0 0/2 → 0.5.
        assert!((equalised_odds_difference(&predicted, &target, &protected) - 0.5).abs() < 1e-12);
        // Groups (y, a): (1,1) 1/2, (0,1) 1/2, (1,0) 1/2, (0,0) 2/2.
        assert!((worst_group_accuracy(&predicted, &target, &protected) - 0.5).abs() < 1e-12);
    }
}
