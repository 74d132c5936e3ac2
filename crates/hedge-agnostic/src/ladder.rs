//! The probe ladder: fresh probes of rising capacity, each fitted on one split of frozen features
//! and scored on another, so that "the concept cannot be read" means more than "two probes
//! failed". LEACE guarantees only that no *linear* probe reads the concept, quadratic LEACE
//! that no probe of the first two moments does; the rungs above test what neither promises.
//!
//! | rung | probe | tuned on 20 % of the probe-train rows |
//! |---|---|---|
//! | `linear` | multinomial logistic regression | — |
//! | `quadratic` | logistic regression on degree-2 features: every principal coordinate, its square, and the products of the first [`QuadraticProbe::principal`] | weight decay |
//! | `rbf` | logistic regression on random Fourier features of an RBF kernel (Rahimi & Recht 2007) | bandwidth (× the median heuristic) |
//! | `mlp` | one hidden ReLU layer ([`crate::audit::tuned_mlp_probe`]) | width × weight decay |
//! | `forest` | random forest ([`crate::forest`]) | — |
//!
//! The *decision floor* is the same ladder on the task classifier's logits: a decision that is
//! harder on one concept value tells the concept through its confidence whatever the features
//! do, and a probe of the features can always read what the logits (a function of them) show.
//! The audit passes only when every rung reads at most a margin more from the features than from
//! the logits ([`LadderAudit::worst_excess`]).
//!
//! A new rung is one type implementing [`ProbeFamily`] and one line in [`LadderConfig::rungs`].

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::audit::{self, class_count, score, validation_split, ProbeConfig, ProbeKind, ProbeResult, RungChoice};
use crate::error::{invalid, Result};
use crate::forest::{Forest, ForestConfig};

/// A family of probes: fits one probe (tuning it on a split of the training rows if it has
/// settings) and scores it on the test rows.
pub trait ProbeFamily: Send + Sync {
    /// The rung's name in reports and `summary.json`.
    fn name(&self) -> &'static str;

    /// Fits on `train_f → train_a` and scores on `test_f`, `test_a`; `seed` seeds whatever the
    /// fit draws.
    ///
    /// # Shapes
    /// `train_f`: `[n, d]`, `train_a`: `[n]` i64; the same for test.
    fn fit_and_score(
        &self,
        train_f: &Tensor,
        train_a: &Tensor,
        test_f: &Tensor,
        test_a: &Tensor,
        seed: u64,
    ) -> Result<ProbeResult>;
}

/// The standard rungs' names, lowest first.
pub const RUNGS: [&str; 5] = ["linear", "quadratic", "rbf", "mlp", "forest"];

/// The RBF rung's bandwidth candidates: γ as multiples of 1 / (median squared distance).
pub const RBF_BANDWIDTHS: [f64; 3] = [0.25, 1.0, 4.0];

/// The quadratic rung's weight-decay candidates.
pub const QUADRATIC_WEIGHT_DECAYS: [f64; 2] = [1e-4, 1e-2];

/// How far (accuracy) the tests allow each rung from its scikit-learn counterpart on the same
/// arrays.
pub const REFERENCE_TOLERANCE: f64 = 0.02;

/// Multinomial logistic regression (full-batch Adam on standardised features).
#[derive(Debug, Clone, Copy)]
pub struct LinearProbe {
    pub steps: usize,
}

impl ProbeFamily for LinearProbe {
    fn name(&self) -> &'static str {
        "linear"
    }
    fn fit_and_score(&self, tf: &Tensor, ta: &Tensor, sf: &Tensor, sa: &Tensor, seed: u64) -> Result<ProbeResult> {
        audit::probe(tf, ta, sf, sa, &ProbeConfig { steps: self.steps, seed, ..ProbeConfig::new(ProbeKind::Linear) })
    }
}

/// The tuned one-hidden-layer MLP probe ([`audit::tuned_mlp_probe`]).
#[derive(Debug, Clone, Copy)]
pub struct MlpProbe {
    pub steps: usize,
}

impl ProbeFamily for MlpProbe {
    fn name(&self) -> &'static str {
        "mlp"
    }
    fn fit_and_score(&self, tf: &Tensor, ta: &Tensor, sf: &Tensor, sa: &Tensor, seed: u64) -> Result<ProbeResult> {
        audit::tuned_mlp_probe(tf, ta, sf, sa, self.steps, seed)
    }
}

/// A map from features to new features, fitted on the rows a probe learns from.
trait Expansion {
    fn apply(&self, x: &Tensor) -> Tensor;
}

/// Standardisation (train mean and spread) of `x`, in f64.
fn standardiser(x: &Tensor) -> (Tensor, Tensor) {
    let x = x.to_kind(Kind::Double);
    (x.mean_dim(0, true, Kind::Double), x.std_dim(0, false, true).clamp_min(1e-6))
}

/// Degree-2 features in principal coordinates: z = standardised x rotated onto the principal
/// axes (all d of them), then [z, z², z_i z_j for i < j < k] with k the first `principal` axes.
/// With d ≤ k this is every quadratic function of x.
struct Quadratic {
    mean: Tensor,
    std: Tensor,
    axes: Tensor,
    k: i64,
}

impl Quadratic {
    fn fit(x: &Tensor, principal: usize) -> Result<Self> {
        let (mean, std) = standardiser(x);
        let z = (x.to_kind(Kind::Double) - &mean) / &std;
        let covariance = z.transpose(0, 1).matmul(&z) / (z.size()[0] as f64);
        // eigh sorts ascending; the principal axes are the last columns.
        let (_, vectors) = covariance.f_linalg_eigh("L")?;
        let axes = vectors.flip([1]);
        Ok(Quadratic { mean, std, axes, k: (principal as i64).min(x.size()[1]) })
    }
}

impl Expansion for Quadratic {
    fn apply(&self, x: &Tensor) -> Tensor {
        let z = ((x.to_kind(Kind::Double) - &self.mean) / &self.std).matmul(&self.axes);
        let head = z.narrow(1, 0, self.k);
        let products = head.unsqueeze(2) * head.unsqueeze(1);
        let upper = Tensor::triu_indices(self.k, self.k, 1, (Kind::Int64, Device::Cpu));
        let pairs = products.flatten(1, 2).index_select(1, &(upper.get(0) * self.k + upper.get(1)));
        Tensor::cat(&[z.shallow_clone(), z.square(), pairs], 1).to_kind(Kind::Float)
    }
}

/// Random Fourier features of exp(−γ‖x − y‖²) on standardised x: √(2/D) cos(xW + b), W ~
/// N(0, 2γ), b ~ U(0, 2π).
struct Fourier {
    mean: Tensor,
    std: Tensor,
    weights: Tensor,
    offsets: Tensor,
}

impl Fourier {
    fn new(mean: &Tensor, std: &Tensor, gamma: f64, d: i64, features: i64, seed: u64) -> Self {
        let _generator = crate::seeded_generator(seed as i64 + 104_729);
        let options = (Kind::Double, Device::Cpu);
        Fourier {
            mean: mean.shallow_clone(),
            std: std.shallow_clone(),
            weights: Tensor::randn([d, features], options) * (2.0 * gamma).sqrt(),
            offsets: Tensor::rand([features], options) * (2.0 * std::f64::consts::PI),
        }
    }
}

impl Expansion for Fourier {
    fn apply(&self, x: &Tensor) -> Tensor {
        let z = (x.to_kind(Kind::Double) - &self.mean) / &self.std;
        let d = self.weights.size()[1] as f64;
        ((z.matmul(&self.weights) + &self.offsets).cos() * (2.0 / d).sqrt()).to_kind(Kind::Float)
    }
}

/// The median squared distance between standardised rows (at most 2,000 pairs, seeded): the
/// median heuristic's 1/γ.
fn median_squared_distance(x: &Tensor, mean: &Tensor, std: &Tensor, seed: u64) -> f64 {
    let z = (x.to_kind(Kind::Double) - mean) / std;
    let n = z.size()[0];
    let pairs = 2000.min(n * (n - 1) / 2).max(1);
    let _generator = crate::seeded_generator(seed as i64 + 31);
    let a = Tensor::randint(n, [pairs], (Kind::Int64, Device::Cpu));
    let b = (&a + Tensor::randint_low(1, n.max(2), [pairs], (Kind::Int64, Device::Cpu))).remainder(n);
    let d2 =
        (z.index_select(0, &a) - z.index_select(0, &b)).square().sum_dim_intlist([1].as_slice(), false, Kind::Double);
    d2.median().double_value(&[]).max(1e-12)
}

/// Logistic regression on each candidate expansion (fitted on 80 % of the training rows) ×
/// weight decay; the best on the other 20 % (accuracy, then cross-entropy) is scored on the test
/// rows, its setting recorded.
#[allow(clippy::too_many_arguments)]
fn tuned_logistic(
    train_f: &Tensor,
    train_a: &Tensor,
    test_f: &Tensor,
    test_a: &Tensor,
    steps: usize,
    seed: u64,
    candidates: Vec<(Option<f64>, Box<dyn Expansion>)>,
    weight_decays: &[f64],
) -> Result<ProbeResult> {
    audit::check_probe_rows(train_f, train_a, test_f, test_a)?;
    let ((fit_f, fit_a), (val_f, val_a)) = audit::fit_and_validation_rows(train_f, train_a, seed)?;
    // One class count for every setting and for the test rows: the chosen probe is scored on
    // the test rows as it was trained, not trained again.
    let classes = class_count(train_a, test_a);
    let mut best: Option<(usize, f64, audit::FittedProbe, ProbeResult)> = None;
    for (i, (_, expansion)) in candidates.iter().enumerate() {
        let (ef, ev) = (expansion.apply(&fit_f), expansion.apply(&val_f));
        for &weight_decay in weight_decays {
            let config = ProbeConfig { steps, seed, weight_decay, ..ProbeConfig::new(ProbeKind::Linear) };
            let fitted = audit::fit_probe(&ef, &fit_a, classes, &config)?;
            let r = fitted.score(&ev, &val_a)?;
            if best.as_ref().is_none_or(|(_, _, _, b)| audit::beats(&r, b)) {
                best = Some((i, weight_decay, fitted, r));
            }
        }
    }
    let (i, weight_decay, fitted, on_validation) = best.ok_or_else(|| invalid("probe settings", 0, "no candidate"))?;
    let (gamma, expansion) = &candidates[i];
    let mut result = fitted.score(&expansion.apply(test_f), test_a)?;
    result.setting = Some(RungChoice { weight_decay, gamma: *gamma, validation_accuracy: on_validation.accuracy });
    Ok(result)
}

/// Logistic regression on degree-2 features (every principal coordinate, its square, and the
/// products of the first `principal`), weight decay tuned.
#[derive(Debug, Clone, Copy)]
pub struct QuadraticProbe {
    pub steps: usize,
    /// Principal axes whose pairwise products are features (all d axes give their squares).
    pub principal: usize,
}

impl ProbeFamily for QuadraticProbe {
    fn name(&self) -> &'static str {
        "quadratic"
    }
    fn fit_and_score(&self, tf: &Tensor, ta: &Tensor, sf: &Tensor, sa: &Tensor, seed: u64) -> Result<ProbeResult> {
        let (fit, _) = validation_split(tf.size()[0], seed)?;
        let expansion = Quadratic::fit(&tf.index_select(0, &fit), self.principal)?;
        tuned_logistic(tf, ta, sf, sa, self.steps, seed, vec![(None, Box::new(expansion))], &QUADRATIC_WEIGHT_DECAYS)
    }
}

/// Logistic regression on random Fourier features of an RBF kernel, the bandwidth tuned over
/// multiples of the median heuristic.
#[derive(Debug, Clone)]
pub struct RbfProbe {
    pub steps: usize,
    /// Random features D.
    pub features: i64,
    /// γ candidates as multiples of 1 / (median squared distance).
    pub bandwidths: Vec<f64>,
}

impl ProbeFamily for RbfProbe {
    fn name(&self) -> &'static str {
        "rbf"
    }
    fn fit_and_score(&self, tf: &Tensor, ta: &Tensor, sf: &Tensor, sa: &Tensor, seed: u64) -> Result<ProbeResult> {
        let (fit, _) = validation_split(tf.size()[0], seed)?;
        let fit_f = tf.index_select(0, &fit);
        let (mean, std) = standardiser(&fit_f);
        let median = median_squared_distance(&fit_f, &mean, &std, seed);
        let d = tf.size()[1];
        let candidates = self
            .bandwidths
            .iter()
            .map(|&c| {
                let gamma = c / median;
                let expansion: Box<dyn Expansion> = Box::new(Fourier::new(&mean, &std, gamma, d, self.features, seed));
                (Some(gamma), expansion)
            })
            .collect();
        tuned_logistic(tf, ta, sf, sa, self.steps, seed, candidates, &[1e-4])
    }
}

/// A random forest ([`crate::forest`]) on the raw features.
#[derive(Debug, Clone, Copy)]
pub struct ForestProbe {
    pub config: ForestConfig,
}

/// A float tensor's values, row-major.
fn values_f32(t: &Tensor) -> Result<Vec<f32>> {
    Ok(Vec::<f32>::try_from(t.to_kind(Kind::Float).contiguous().flatten(0, -1))?)
}

impl ProbeFamily for ForestProbe {
    fn name(&self) -> &'static str {
        "forest"
    }
    fn fit_and_score(&self, tf: &Tensor, ta: &Tensor, sf: &Tensor, sa: &Tensor, seed: u64) -> Result<ProbeResult> {
        let classes = class_count(ta, sa);
        let labels = Vec::<i64>::try_from(ta.to_kind(Kind::Int64))?;
        let forest = Forest::fit(
            &values_f32(tf)?,
            tf.size()[1] as usize,
            &labels,
            classes as usize,
            &self.config.with_seed(seed),
        )?;
        let p = forest.predict_proba(&values_f32(sf)?)?;
        // A leaf's frequencies can be 0: mixed with 0.1 % of the uniform distribution the
        // probabilities stay a distribution and the cross-entropy finite.
        let p = Tensor::from_slice(&p).reshape([sf.size()[0], classes]) * 0.999 + 0.001 / classes as f64;
        score(&p.log(), sa, classes)
    }
}

/// Which probes the ladder runs, with what effort.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LadderConfig {
    /// Adam steps of every gradient-trained probe.
    pub steps: usize,
    /// Random Fourier features of the RBF rung.
    pub fourier_features: i64,
    /// Principal axes whose pairwise products the quadratic rung uses.
    pub quadratic_principal: usize,
    /// Trees of the forest rung.
    pub forest_trees: usize,
}

impl Default for LadderConfig {
    fn default() -> Self {
        LadderConfig { steps: 500, fourier_features: 1024, quadratic_principal: 32, forest_trees: 100 }
    }
}

impl LadderConfig {
    pub fn with_steps(mut self, steps: usize) -> Self {
        self.steps = steps;
        self
    }

    /// The rungs, lowest first (names in [`RUNGS`]).
    pub fn rungs(&self) -> Vec<Box<dyn ProbeFamily>> {
        vec![
            Box::new(LinearProbe { steps: self.steps }),
            Box::new(QuadraticProbe { steps: self.steps, principal: self.quadratic_principal }),
            Box::new(RbfProbe {
                steps: self.steps,
                features: self.fourier_features,
                bandwidths: RBF_BANDWIDTHS.to_vec(),
            }),
            Box::new(MlpProbe { steps: self.steps }),
            Box::new(ForestProbe { config: ForestConfig::default().with_trees(self.forest_trees) }),
        ]
    }
}

/// One rung on the features, and on the decisions where they were given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungAudit {
    pub rung: String,
    pub features: ProbeResult,
    /// The same probe on the task classifier's logits (the floor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ProbeResult>,
}

impl RungAudit {
    /// Accuracy on the features minus accuracy on the decisions.
    pub fn excess(&self) -> Option<f64> {
        self.decision.as_ref().map(|d| self.features.accuracy - d.accuracy)
    }
}

/// Every rung's reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderAudit {
    pub rungs: Vec<RungAudit>,
}

impl LadderAudit {
    /// The rung called `name`.
    pub fn rung(&self, name: &str) -> Option<&RungAudit> {
        self.rungs.iter().find(|r| r.rung == name)
    }

    /// The largest excess of a rung on the features over the same rung on the decisions
    /// (`None` without decisions).
    pub fn worst_excess(&self) -> Option<f64> {
        self.rungs.iter().map(RungAudit::excess).try_fold(f64::NEG_INFINITY, |m, e| e.map(|e| m.max(e)))
    }

    /// The rung with the largest excess, and that excess.
    pub fn worst_rung(&self) -> Option<(&str, f64)> {
        self.rungs.iter().filter_map(|r| r.excess().map(|e| (r.rung.as_str(), e))).max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// One sentence on the audit at the bar `max_excess`: the worst rung and its excess over
    /// the decision floor, or, without decisions, how many rungs read the concept above chance.
    pub fn verdict(&self, max_excess: f64) -> String {
        match self.worst_rung() {
            Some((rung, excess)) => format!(
                "worst rung: {rung}, {excess:+.4} over the decision floor ({} at the audit's bar of {max_excess})",
                if excess <= max_excess { "passes" } else { "fails" }
            ),
            None => format!(
                "no decisions given: {} rung(s) outside the chance interval",
                self.rungs.iter().filter(|r| !r.features.at_chance).count()
            ),
        }
    }

    /// Whether every rung reads at most `max_excess` more from the features than from the
    /// decisions; without decisions, whether every rung stayed inside its chance interval.
    pub fn passes(&self, max_excess: f64) -> bool {
        match self.worst_excess() {
            Some(e) => e <= max_excess,
            None => self.rungs.iter().all(|r| r.features.at_chance),
        }
    }
}

/// Runs `rungs` on the features and, given `decisions` (train and test logits of the task
/// classifier, one row per feature row), on the decisions too.
///
/// # Shapes
/// `train_f`: `[n, d]`, `train_a`: `[n]` i64, `test_f`: `[m, d]`, `test_a`: `[m]`;
/// decisions `[n, c]` and `[m, c]`.
pub fn probe_ladder(
    rungs: &[Box<dyn ProbeFamily>],
    train_f: &Tensor,
    train_a: &Tensor,
    test_f: &Tensor,
    test_a: &Tensor,
    decisions: Option<(&Tensor, &Tensor)>,
    seed: u64,
) -> Result<LadderAudit> {
    if let Some((td, sd)) = decisions {
        if td.size()[0] != train_f.size()[0] || sd.size()[0] != test_f.size()[0] || td.size()[1] != sd.size()[1] {
            return Err(invalid(
                "decisions",
                format!("{:?} / {:?}", td.size(), sd.size()),
                "need one row of logits per feature row, train and test, of one width",
            ));
        }
    }
    let rungs = rungs
        .iter()
        .map(|family| {
            let features = family.fit_and_score(train_f, train_a, test_f, test_a, seed)?;
            let decision = decisions.map(|(td, sd)| family.fit_and_score(td, train_a, sd, test_a, seed)).transpose()?;
            tracing::info!(
                "probe ladder: {} reads {:.4} from the features{}",
                family.name(),
                features.accuracy,
                decision.as_ref().map_or(String::new(), |d| format!(", {:.4} from the decisions", d.accuracy))
            );
            Ok(RungAudit { rung: family.name().to_string(), features, decision })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(LadderAudit { rungs })
}

/// The arrays [`audit_arrays_file`] reads from an `.npz` archive: features and concept labels of
/// the probes' training and test rows, and optionally the task classifier's logits on both.
pub const ARRAY_NAMES: [&str; 6] =
    ["train_features", "train_concept", "test_features", "test_concept", "train_decisions", "test_decisions"];

/// The ladder on a user's arrays: `path` is an `.npz` archive holding float `train_features`
/// `[n, d]` and `test_features` `[m, d]`, int64 `train_concept` `[n]` and `test_concept` `[m]`,
/// and optionally float `train_decisions` `[n, c]` and `test_decisions` `[m, c]` (the task
/// classifier's logits: the decision floor). `numpy.savez(path, train_features=…, …)` writes it.
pub fn audit_arrays_file(path: &std::path::Path, config: &LadderConfig, seed: u64) -> Result<LadderAudit> {
    let arrays = hedge_data::npy::read_npz_members(path, &ARRAY_NAMES)?;
    let shown = path.display();
    let get = |name: &str| arrays.iter().find(|(n, _)| n == name).map(|(_, a)| a);
    let floats = |name: &'static str, required: bool| -> Result<Option<Tensor>> {
        let Some(a) = get(name) else {
            return if required {
                Err(invalid(
                    "audit arrays",
                    format!("{shown} has no '{name}'"),
                    format!("save it with numpy.savez(…, {name}=…); the archive needs {}", ARRAY_NAMES[..4].join(", ")),
                ))
            } else {
                Ok(None)
            };
        };
        let values: Vec<f32> = match &a.data {
            hedge_data::NpyData::F32(v) => v.clone(),
            hedge_data::NpyData::F64(v) => v.iter().map(|&x| x as f32).collect(),
            _ => {
                return Err(invalid(
                    "audit arrays",
                    format!("{shown}: '{name}'"),
                    "must hold float32 or float64 values",
                ))
            }
        };
        if a.shape.len() != 2 || values.iter().any(|v| !v.is_finite()) {
            return Err(invalid(
                "audit arrays",
                format!("{shown}: '{name}' of shape {:?}", a.shape),
                "must be a 2-D array [rows, columns] of finite values",
            ));
        }
        Ok(Some(Tensor::from_slice(&values).reshape([a.shape[0] as i64, a.shape[1] as i64])))
    };
    let labels = |name: &'static str| -> Result<Tensor> {
        let a = get(name).ok_or_else(|| {
            invalid(
                "audit arrays",
                format!("{shown} has no '{name}'"),
                format!("save it with numpy.savez(…, {name}=…)"),
            )
        })?;
        let v = a.as_i64().map_err(|e| {
            invalid(
                "audit arrays",
                format!("{shown}: '{name}'"),
                format!("{} (concept labels are int64 class indices)", e.0),
            )
        })?;
        if a.shape.len() != 1 || v.iter().any(|&c| c < 0) {
            return Err(invalid(
                "audit arrays",
                format!("{shown}: '{name}'"),
                "must be a 1-D array of class indices ≥ 0",
            ));
        }
        Ok(Tensor::from_slice(v))
    };
    let (tf, sf) =
        (floats("train_features", true)?.expect("required"), floats("test_features", true)?.expect("required"));
    let (ta, sa) = (labels("train_concept")?, labels("test_concept")?);
    if ta.size()[0] != tf.size()[0] || sa.size()[0] != sf.size()[0] || tf.size()[1] != sf.size()[1] {
        return Err(invalid(
            "audit arrays",
            format!("{shown}: features {:?} / {:?}, concepts {:?} / {:?}", tf.size(), sf.size(), ta.size(), sa.size()),
            "need one concept label per feature row, and train and test features of one width",
        ));
    }
    let decisions = match (floats("train_decisions", false)?, floats("test_decisions", false)?) {
        (Some(t), Some(s)) => Some((t, s)),
        (None, None) => None,
        _ => {
            return Err(invalid(
                "audit arrays",
                shown,
                "holds one of train_decisions / test_decisions: give both or neither",
            ))
        }
    };
    probe_ladder(&config.rungs(), &tf, &ta, &sf, &sa, decisions.as_ref().map(|(t, s)| (t, s)), seed)
}

impl LadderAudit {
    /// A Markdown table: per rung, accuracy on the features, its chance interval, the information
    /// bound, and (with decisions) accuracy on the decisions and the excess.
    pub fn to_markdown(&self) -> String {
        let mut md = String::from(
            "| rung | features | chance interval | bits | decisions (floor) | excess |\n|---|---|---|---|---|---|\n",
        );
        for r in &self.rungs {
            let f = &r.features;
            md.push_str(&format!(
                "| {} | {:.4} | {:.4}–{:.4} | {:.3} | {} | {} |\n",
                r.rung,
                f.accuracy,
                f.chance_interval.0,
                f.chance_interval.1,
                f.mutual_information_bits,
                r.decision.map_or("–".into(), |d| format!("{:.4}", d.accuracy)),
                r.excess().map_or("–".into(), |e| format!("{e:+.4}")),
            ));
        }
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: the generator the scikit-learn reference (reference/agnostic/probe_ladder.py)
    /// reproduces exactly, so that both fit the same arrays.
    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `n` rows of 6 standard normal coordinates (Box–Muller on splitmix64 uniforms) and the
    /// concept 1{x0² + x1² − 2·x2·x3 + 0.5·x4 + 0.5·noise > 1.5}: quadratic in x, not linear.
    fn quadratic_concept(n: usize, seed: u64) -> (Tensor, Tensor) {
        let mut state = seed;
        let mut uniform = || ((splitmix(&mut state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let mut normal = || {
            let (u, v) = (uniform(), uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        };
        let (mut x, mut a) = (Vec::with_capacity(n * 6), Vec::with_capacity(n));
        for _ in 0..n {
            let row: Vec<f64> = (0..7).map(|_| normal()).collect();
            let s = row[0] * row[0] + row[1] * row[1] - 2.0 * row[2] * row[3] + 0.5 * row[4] + 0.5 * row[6];
            a.push(i64::from(s > 1.5));
            x.extend(row[..6].iter().map(|&v| v as f32));
        }
        (Tensor::from_slice(&x).reshape([n as i64, 6]), Tensor::from_slice(&a))
    }

    /// Each rung against its scikit-learn counterpart on the same arrays (3,000 train rows of
    /// seed 1, 2,000 test rows of seed 2): accuracy within 0.02. The reference accuracies come
    /// from `python3 reference/agnostic/probe_ladder.py` (scikit-learn 1.9.1, NumPy 2.4.6):
    /// LogisticRegression; PolynomialFeatures(2) + LogisticRegression; SVC(rbf) with γ chosen by
    /// cross-validation over the rung's multiples of the median heuristic; MLPClassifier with
    /// width and α chosen over the MLP rung's grid; RandomForestClassifier(100).
    #[test]
    fn every_rung_agrees_with_scikit_learn() {
        let (tf, ta) = quadratic_concept(3000, 1);
        let (sf, sa) = quadratic_concept(2000, 2);
        let reference =
            [("linear", 0.5770), ("quadratic", 0.9275), ("rbf", 0.9225), ("mlp", 0.9250), ("forest", 0.8975)];
        let ladder = probe_ladder(&LadderConfig::default().rungs(), &tf, &ta, &sf, &sa, None, 0).unwrap();
        for (name, expected) in reference {
            let r = ladder.rung(name).unwrap();
            assert!(
                (r.features.accuracy - expected).abs() <= 0.02,
                "{name}: {} against {expected}",
                r.features.accuracy
            );
        }
        assert!(ladder.rung("rbf").unwrap().features.setting.unwrap().gamma.is_some());
        assert!(ladder.worst_excess().is_none() && !ladder.passes(0.01));
    }

    /// The floor: probing the logits of a classifier that reads the concept itself leaves no
    /// excess (the features are the logits), and a concept the logits do not show is excess.
    #[test]
    fn the_excess_is_measured_against_the_same_rung_on_the_decisions() {
        let (tf, ta) = quadratic_concept(1500, 3);
        let (sf, sa) = quadratic_concept(1000, 4);
        let rungs = LadderConfig::default().with_steps(200).rungs();
        let same = probe_ladder(&rungs, &tf, &ta, &sf, &sa, Some((&tf, &sf)), 0).unwrap();
        assert_eq!(same.worst_excess(), Some(0.0));
        assert!(same.passes(0.01));
        // Decisions that are pure noise: every non-linear rung reads the concept from the
        // features far beyond the floor.
        let _generator = crate::seeded_generator(5);
        let noise = |n: i64| Tensor::randn([n, 2], (Kind::Float, Device::Cpu));
        let leaky = probe_ladder(&rungs, &tf, &ta, &sf, &sa, Some((&noise(1500), &noise(1000))), 0).unwrap();
        let (worst, excess) = leaky.worst_rung().unwrap();
        assert!(excess > 0.2 && worst != "linear" && !leaky.passes(0.01), "{worst}: {excess}");
    }
}
