//! Adult income with sex as the protected concept (removed from the inputs): an MLP agnostic
//! network audited with the fairness gaps AIF360 reports (statistical-parity and equalised-odds
//! differences) and with fresh probes that try to read sex back from the features.

use hedge_data::{Adult, AdultSplit};
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::context::{labels, ProbeAccuracy};
use crate::Result;
use hedge_agnostic::audit::{self, ProbeResult};
use hedge_agnostic::erasure::{fit_with_removal, FeatureView, Removal};
use hedge_agnostic::ladder::{probe_ladder, LadderAudit, LadderConfig};
use hedge_agnostic::model::{AgnosticNet, ModelConfig};
use hedge_agnostic::train::{TrainConfig, TrainingData};

/// One Adult split as tensors.
pub struct TabularSet {
    /// `[n, features]` f32.
    pub x: Tensor,
    /// `[n]` i64: income > 50K.
    pub target: Tensor,
    /// `[n]` i64: 1 = Female.
    pub protected: Tensor,
}

impl TabularSet {
    fn new(split: &AdultSplit, features: usize) -> Self {
        Self {
            x: Tensor::from_slice(&split.features).reshape([split.len() as i64, features as i64]),
            target: labels(&split.target),
            protected: labels(&split.protected),
        }
    }

    fn rows(&self, index: &Tensor) -> Self {
        Self {
            x: self.x.index_select(0, index),
            target: self.target.index_select(0, index),
            protected: self.protected.index_select(0, index),
        }
    }
}

/// Adult's training split, and its test split cut in two at random (seeded) for the probes:
/// they learn on `probe_train` and are scored on `probe_test`; the network's own numbers use
/// the whole test split. None of it is seen in training.
pub struct TabularTensors {
    pub train: TabularSet,
    pub test: TabularSet,
    pub probe_train: TabularSet,
    pub probe_test: TabularSet,
    pub features: usize,
}

impl TabularTensors {
    pub fn new(adult: &Adult, seed: u64) -> Self {
        let features = adult.features();
        let test = TabularSet::new(&adult.test, features);
        let _generator = hedge_run::torch::seeded_generator(seed as i64);
        let order = Tensor::randperm(adult.test.len() as i64, (Kind::Int64, tch::Device::Cpu));
        let half = adult.test.len() as i64 / 2;
        Self {
            train: TabularSet::new(&adult.train, features),
            probe_train: test.rows(&order.narrow(0, 0, half)),
            probe_test: test.rows(&order.narrow(0, half, adult.test.len() as i64 - half)),
            test,
            features,
        }
    }
}

/// What one Adult network achieves and leaks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FairnessAudit {
    pub alpha: f64,
    pub repeat: u64,
    /// Income accuracy on the test split.
    pub accuracy: f64,
    /// Income accuracy of the worst (income, sex) group.
    pub worst_group_accuracy: f64,
    /// P(ŷ = 1 | female) − P(ŷ = 1 | male), AIF360's statistical parity difference.
    pub demographic_parity_difference: f64,
    /// max(|ΔTPR|, |ΔFPR|) between the sexes.
    pub equalised_odds_difference: f64,
    /// Rate of predicted income > 50K.
    pub positive_rate: f64,
    /// G_p's accuracy at sex on the test split (chance: the majority rate, male).
    pub protected_head_accuracy: f64,
    pub probe_accuracy: ProbeAccuracy,
    pub probe_linear: ProbeResult,
    pub probe_mlp: ProbeResult,
    pub train_seconds: f64,
    /// The probe ladder (`hedge_agnostic::ladder`) on the features and on G_y's logits (the
    /// decision floor); its `linear` and `mlp` rungs are `probe_linear` and `probe_mlp`. Absent
    /// from audits written before the ladder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<LadderAudit>,
}

/// Trains one MLP agnostic network on Adult (no context-labelled set: every training row has
/// both labels) and audits it on the test split.
pub fn run_tabular(
    data: &TabularTensors,
    model: ModelConfig,
    config: &TrainConfig,
    removal: Removal,
    probe_steps: usize,
    repeat: u64,
) -> Result<(FairnessAudit, AgnosticNet)> {
    let empty_x = Tensor::zeros([0, data.features as i64], (Kind::Float, tch::Device::Cpu));
    let empty_p = Tensor::zeros([0], (Kind::Int64, tch::Device::Cpu));
    let training = TrainingData {
        target_x: &data.train.x,
        target_y: &data.train.target,
        target_p: &data.train.protected,
        context_x: &empty_x,
        context_p: &empty_p,
        target_twin_x: None,
    };
    let (net, erased, train_seconds) = fit_with_removal(model, &training, config, &removal)?;
    let view = FeatureView { net: &net, erased: erased.as_ref() };
    let f = view.features(&data.test.x, &data.test.protected);
    let predicted = view.target_logits(&f).argmax(1, false);
    let (t, a) = (&data.test.target, &data.test.protected);
    let probe_train = view.features(&data.probe_train.x, &data.probe_train.protected);
    let probe_test = view.features(&data.probe_test.x, &data.probe_test.protected);
    let (pt, pa) = (&data.probe_train.protected, &data.probe_test.protected);
    let ladder = probe_ladder(
        &LadderConfig::default().with_steps(probe_steps).rungs(),
        &probe_train,
        pt,
        &probe_test,
        pa,
        Some((&view.target_logits(&probe_train), &view.target_logits(&probe_test))),
        repeat,
    )?;
    let (probe_linear, probe_mlp, _) = super::context::ladder_pair(&ladder)?;
    let audit = FairnessAudit {
        alpha: config.alpha,
        repeat,
        accuracy: predicted.eq_tensor(t).to_kind(Kind::Double).mean(Kind::Double).double_value(&[]),
        worst_group_accuracy: audit::worst_group_accuracy(&predicted, t, a),
        demographic_parity_difference: audit::demographic_parity_difference(&predicted, a),
        equalised_odds_difference: audit::equalised_odds_difference(&predicted, t, a),
        positive_rate: predicted.to_kind(Kind::Double).mean(Kind::Double).double_value(&[]),
        protected_head_accuracy: audit::accuracy(&net.protected_logits(&f), a),
        probe_accuracy: ProbeAccuracy { linear: probe_linear.accuracy, mlp: probe_mlp.accuracy },
        probe_linear,
        probe_mlp,
        train_seconds,
        ladder: Some(ladder),
    };
    Ok((audit, net))
}
