//! The JSON files HIB experiments write, typed both ways: `eval.json` ([`EvalReport`]),
//! `verification.json` ([`VerificationReport`]) and `curve.json` ([`CurvePoint`]) (a
//! reproduction's `summary.json` is hedge-lab's). Readers deserialise these structs, so a
//! mistyped metric name is a compile error, not a silent "n/a".
//!
//! Fields are declared in alphabetical order: the files keep the key order they had when they
//! were written as untyped JSON, so committed results do not change byte for byte.

use serde::{Deserialize, Deserializer, Serialize};

use crate::evaluate::{HibMetric, MatchEstimator, ModelEval, Twin};
use crate::{ModelKind, ValidationDigits};
use hedge_data::{NDigitProtocol, NDigitSplit};
use hedge_eval::{MeanStd, ReliabilityDiagram};
use hedge_run::undefined::{explain_nulls, NullReason, Undefined};

/// A metric on the clean and the corrupt variant, each with its spread. `None` where the metric
/// is undefined (the uncertainty correlations of a point embedding). What the spread is depends
/// on the file: over evaluation repeats (population sd, n) in `eval.json`, over seeds (sample
/// sd, n − 1; `None` for one seed) in `summary.json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TwinStats {
    pub clean: Option<f64>,
    pub clean_std: Option<f64>,
    pub corrupt: Option<f64>,
    pub corrupt_std: Option<f64>,
}

impl TwinStats {
    /// The value of `variant` (`"clean"` or `"corrupt"`).
    pub fn get(&self, variant: Variant) -> Option<f64> {
        match variant {
            Variant::Clean => self.clean,
            Variant::Corrupt => self.corrupt,
        }
    }

    /// The spread of `variant`.
    pub fn std(&self, variant: Variant) -> Option<f64> {
        match variant {
            Variant::Clean => self.clean_std,
            Variant::Corrupt => self.corrupt_std,
        }
    }

    /// The means and spreads of `t`; every field `None` when the metric was not computed.
    fn of(t: &Option<Twin<MeanStd>>) -> Self {
        TwinStats {
            clean: t.as_ref().map(|t| t.clean.mean),
            clean_std: t.as_ref().map(|t| t.clean.std),
            corrupt: t.as_ref().map(|t| t.corrupt.mean),
            corrupt_std: t.as_ref().map(|t| t.corrupt.std),
        }
    }

    fn of_optional(t: &Twin<Option<MeanStd>>) -> Self {
        TwinStats {
            clean: t.clean.map(|m| m.mean),
            clean_std: t.clean.map(|m| m.std),
            corrupt: t.corrupt.map(|m| m.mean),
            corrupt_std: t.corrupt.map(|m| m.std),
        }
    }

    /// Mean and sample sd (n − 1) over `runs` of each variant.
    pub fn over(runs: &[TwinStats]) -> Self {
        let clean: Vec<Option<f64>> = runs.iter().map(|t| t.clean).collect();
        let corrupt: Vec<Option<f64>> = runs.iter().map(|t| t.corrupt).collect();
        TwinStats {
            clean: mean(&clean),
            clean_std: sample_std(&clean),
            corrupt: mean(&corrupt),
            corrupt_std: sample_std(&corrupt),
        }
    }
}

/// The clean or the corrupt variant of a test split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Clean,
    Corrupt,
}

impl Variant {
    pub const BOTH: [Variant; 2] = [Variant::Clean, Variant::Corrupt];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Clean => "clean",
            Variant::Corrupt => "corrupt",
        }
    }
}

/// Verification AP: within the clean pairs, within the corrupt pairs, and (beyond the paper)
/// over pairs of one clean and one corrupt image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationStats {
    pub clean: Option<f64>,
    pub clean_std: Option<f64>,
    /// Absent in curves written before mixed pairs were scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_vs_corrupt: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_vs_corrupt_std: Option<f64>,
    pub corrupt: Option<f64>,
    pub corrupt_std: Option<f64>,
}

impl VerificationStats {
    /// The clean and corrupt columns alone.
    pub fn twin(&self) -> TwinStats {
        TwinStats { clean: self.clean, clean_std: self.clean_std, corrupt: self.corrupt, corrupt_std: self.corrupt_std }
    }

    /// Mean and sample sd (n − 1) over runs; the mixed pairs' mean only.
    pub fn over(runs: &[VerificationStats]) -> Self {
        let twins: Vec<TwinStats> = runs.iter().map(VerificationStats::twin).collect();
        let t = TwinStats::over(&twins);
        VerificationStats {
            clean: t.clean,
            clean_std: t.clean_std,
            clean_vs_corrupt: mean(&runs.iter().map(|r| r.clean_vs_corrupt).collect::<Vec<_>>()),
            clean_vs_corrupt_std: None,
            corrupt: t.corrupt,
            corrupt_std: t.corrupt_std,
        }
    }
}

/// Mean of the defined values, `None` where none is.
pub fn mean(values: &[Option<f64>]) -> Option<f64> {
    MeanStd::of_defined(values).map(|m| m.mean)
}

/// Sample standard deviation (n − 1 in the denominator) of the defined values; `None` with
/// fewer than two.
pub fn sample_std(values: &[Option<f64>]) -> Option<f64> {
    MeanStd::of_defined(values).filter(|m| m.n >= 2).map(|m| m.std)
}

/// Per-bin values that may hold NaN (an empty bin), written as `null` and read back as NaN.
fn nan_for_null<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let v: Vec<Option<f64>> = Vec::deserialize(d)?;
    Ok(v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
}

/// A number that may be NaN, written as `null` and read back as NaN.
fn nan_for_null_one<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// AP and KNN accuracy per η bin (bin 0 = most certain) of one variant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BinCurves {
    #[serde(deserialize_with = "nan_for_null")]
    pub ap: Vec<f64>,
    #[serde(deserialize_with = "nan_for_null")]
    pub knn: Vec<f64>,
}

/// One gallery/probe combination of Appendix G (means over repeats).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GalleryProbeReport {
    pub gallery: String,
    #[serde(deserialize_with = "nan_for_null_one")]
    pub majority: f64,
    #[serde(deserialize_with = "nan_for_null_one")]
    pub plurality: f64,
    pub probe: String,
    pub tau_knn: Option<f64>,
}

/// Mean η of each variant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CleanCorruptValue {
    #[serde(deserialize_with = "nan_for_null_one")]
    pub clean: f64,
    #[serde(deserialize_with = "nan_for_null_one")]
    pub corrupt: f64,
}

/// `eval.json` (test_unseen) or `eval_<split>.json`: the whole evaluation of one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct EvalReport {
    /// [`EVAL_SCHEMA`] when written ([`hedge_run::schema`]).
    pub schema: u32,
    /// Area under the risk–coverage curve of KNN identification.
    #[serde(deserialize_with = "nan_for_null_one")]
    pub aurc: f64,
    #[serde(deserialize_with = "nan_for_null_one")]
    pub aurc_std: f64,
    /// What rejects probes in the AURC: `eta`, or `nearest_neighbour_distance` for a point
    /// embedding (absent in reports written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aurc_uncertainty: Option<String>,
    /// ROC AUC and average precision of that uncertainty for the same probes' identification
    /// errors (mean and sd over repeats); absent where not computed (every answer right or every
    /// one wrong, or a report from before the metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_auroc: Option<MeanStd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_auprc: Option<MeanStd>,
    pub bins: Twin<BinCurves>,
    pub command: String,
    pub components: usize,
    pub digits: usize,
    pub dim: usize,
    /// Pooled ECE of p(m | x1, x2) over the clean and corrupt verification pairs.
    #[serde(deserialize_with = "nan_for_null_one")]
    pub ece: f64,
    pub ece_by_variant: TwinStats,
    #[serde(deserialize_with = "nan_for_null_one")]
    pub ece_std: f64,
    /// The reliability diagram behind the ECE: p(m | x1, x2) of the clean and corrupt
    /// verification pairs of every repeat, 10 equal-width bins (absent in reports written
    /// before it was recorded, or where ECE was not computed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reliability: Option<ReliabilityDiagram>,
    /// AURC of selective verification (clean and corrupt pairs; a match where p ≥ ½), the
    /// least confident decisions (1 − max(p, 1 − p)) rejected first: defined for every model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_aurc: Option<MeanStd>,
    /// The same, the pairs with the larger η of their two images rejected first (stochastic
    /// embeddings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_aurc_eta: Option<MeanStd>,
    pub eval_seconds: f64,
    pub gallery_probe: Vec<GalleryProbeReport>,
    /// Majority-vote KNN (K = 5): clean probes against the clean (`clean`) or the corrupt
    /// (`corrupt`) gallery.
    pub knn_accuracy: TwinStats,
    /// The same KNN with the gallery read as the whole test set: the probe's own image kept in
    /// the clean gallery, its occluded twin in the corrupt one (absent in reports written
    /// before this reading was computed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knn_kept: Option<TwinStats>,
    pub knn_plurality: TwinStats,
    pub match_estimator: MatchEstimator,
    pub mean_eta: CleanCorruptValue,
    pub model: ModelKind,
    /// How the metrics are computed ([`EVAL_PROTOCOL`]).
    pub protocol: String,
    /// Which N-digit tables the run trained and is tested on (`instance` or `open-set`; schema 1
    /// reports without it were written before protocols existed, and are open-set).
    pub data_protocol: NDigitProtocol,
    pub repeats: usize,
    #[serde(deserialize_with = "nan_for_null")]
    pub risk_at_coverage: Vec<f64>,
    /// The run directory the report belongs to.
    pub run: String,
    pub split: NDigitSplit,
    /// With `split = validation`: whether its images showed their own digit images (`shared`)
    /// or new ones (`unused`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_digits: Option<ValidationDigits>,
    pub steps: usize,
    pub tau_ap: TwinStats,
    pub tau_knn: TwinStats,
    pub verification_ap: VerificationStats,
    /// The weights scored when not the run's own `model.safetensors`.
    pub weights: Option<String>,
    /// The metrics computed, where not all of them (the others are null or empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<HibMetric>>,
    /// Evaluated on the first this many images of every class only (`--per-class`, a quick
    /// look); absent when every image of the split was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images_per_class: Option<usize>,
    /// What every `_std` over repeats is ([`REPEAT_STD_CONVENTION`]); absent in reports written
    /// before it was recorded, whose spreads divide by n instead of n − 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std_convention: Option<String>,
    /// Every field this report leaves `null`, and why (absent when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<Undefined>,
}

/// Why a point embedding's uncertainty correlations are `null`.
pub const POINT_HAS_NO_ETA: &str = "a point embedding has no uncertainty (eta), so Kendall's tau between uncertainty \
     bins and performance does not exist";
/// Why a stochastic embedding's uncertainty correlation can be `null`.
pub const TAU_UNDEFINED: &str =
    "Kendall's tau is undefined: fewer than two eta bins have a score, or all their scores \
     are equal (a constant has no rank order)";

impl EvalReport {
    /// Why this report's `null`s are `null` (the rules of [`explain_nulls`]).
    fn null_reasons(&self) -> Vec<NullReason> {
        let tau = if self.model == ModelKind::Point { POINT_HAS_NO_ETA } else { TAU_UNDEFINED };
        let mut v = vec![
            NullReason::new("tau_*", tau),
            NullReason::new("gallery_probe[*].tau_knn", tau),
            NullReason::new("bins.*", "an eta bin holding no matching pair (AP) or no probe (KNN) has no score"),
            NullReason::new("reliability.bins[*].*", "a p(match) bin holding no pair has no mean"),
            NullReason::new("weights", "the run's own model.safetensors was scored (a path, not a number)"),
        ];
        if self.metrics.is_some() {
            v.push(NullReason::new("*", "not computed: this evaluation computed only the metrics under `metrics`"));
        }
        v
    }

    /// The report with its `undefined` list filled in (what every writer saves).
    pub fn with_nulls_explained(mut self) -> Self {
        self.undefined = Vec::new();
        self.undefined = explain_nulls(&self, &self.null_reasons());
        self
    }
}

/// The spread convention of every `_std` in a new `eval.json`.
pub const REPEAT_STD_CONVENTION: &str = "sample standard deviation over repeats (n - 1); 0 for one repeat";

/// The protocol line every `eval.json` carries. The paper does not spell out its KNN protocol;
/// this is hedge's reading.
pub const EVAL_PROTOCOL: &str = "verification: 5,000 matching + 5,000 non-matching pairs within each variant; KNN (K = 5, majority; hedge's reading, the paper does not say): clean probes against the clean gallery (clean) or the corrupt gallery (corrupt), leave-one-out (the probe's own occluded twin is left out of the corrupt gallery) in knn_accuracy, the probe's own image (twin) kept in knn_kept, the 100 candidates nearest by mean distance re-ranked by the Monte-Carlo match probability";

/// What an [`EvalReport`] records besides the evaluation itself.
#[derive(Debug, Clone)]
pub struct EvalContext {
    pub run: String,
    pub weights: Option<String>,
    pub data_protocol: NDigitProtocol,
    pub split: NDigitSplit,
    pub model: ModelKind,
    pub components: usize,
    pub digits: usize,
    pub dim: usize,
    pub steps: usize,
    pub match_estimator: MatchEstimator,
    pub eval_seconds: f64,
    pub command: String,
    pub images_per_class: Option<usize>,
    /// The validation images' digits (`split = validation` only).
    pub validation_digits: Option<ValidationDigits>,
}

impl EvalReport {
    /// The report of evaluation `r` in `context`.
    pub fn new(r: &ModelEval, context: EvalContext) -> Self {
        let ap = TwinStats::of(&r.verification_ap);
        let verification_ap = VerificationStats {
            clean: ap.clean,
            clean_std: ap.clean_std,
            clean_vs_corrupt: r.verification_ap_mixed.map(|m| m.mean),
            clean_vs_corrupt_std: r.verification_ap_mixed.map(|m| m.std),
            corrupt: ap.corrupt,
            corrupt_std: ap.corrupt_std,
        };
        let nan = f64::NAN;
        EvalReport {
            schema: EVAL_SCHEMA,
            aurc: r.aurc.map_or(nan, |m| m.mean),
            aurc_std: r.aurc.map_or(nan, |m| m.std),
            // A point embedding has no η: its probes are rejected by the distance to their
            // nearest gallery neighbour instead (the paper's baseline proxy).
            aurc_uncertainty: Some(
                if context.model == ModelKind::Point { "nearest_neighbour_distance" } else { "eta" }.to_string(),
            ),
            error_auroc: r.error_auroc,
            error_auprc: r.error_auprc,
            bins: Twin {
                clean: BinCurves { ap: r.bin_ap.clean.clone(), knn: r.bin_knn.clean.clone() },
                corrupt: BinCurves { ap: r.bin_ap.corrupt.clone(), knn: r.bin_knn.corrupt.clone() },
            },
            command: context.command,
            components: context.components,
            digits: context.digits,
            dim: context.dim,
            ece: r.ece.map_or(nan, |m| m.mean),
            ece_by_variant: TwinStats::of(&r.ece_by_variant),
            ece_std: r.ece.map_or(nan, |m| m.std),
            reliability: r.reliability.clone(),
            verification_aurc: r.verification_aurc,
            verification_aurc_eta: r.verification_aurc_eta,
            eval_seconds: context.eval_seconds,
            gallery_probe: r
                .gallery_probe
                .iter()
                .map(|g| GalleryProbeReport {
                    gallery: g.gallery.clone(),
                    majority: g.majority.mean,
                    plurality: g.plurality.mean,
                    probe: g.probe.clone(),
                    tau_knn: g.tau_knn.map(|t| t.mean),
                })
                .collect(),
            knn_accuracy: TwinStats::of(&r.knn_majority),
            knn_kept: r.knn_majority_kept.is_some().then(|| TwinStats::of(&r.knn_majority_kept)),
            knn_plurality: TwinStats::of(&r.knn_plurality),
            match_estimator: context.match_estimator,
            mean_eta: CleanCorruptValue { clean: r.mean_eta.clean, corrupt: r.mean_eta.corrupt },
            model: context.model,
            protocol: EVAL_PROTOCOL.to_string(),
            data_protocol: context.data_protocol,
            repeats: r.repeats,
            risk_at_coverage: r.risk_at_coverage.clone(),
            run: context.run,
            split: context.split,
            validation_digits: context.validation_digits,
            steps: context.steps,
            tau_ap: TwinStats::of_optional(&r.tau_ap),
            tau_knn: TwinStats::of_optional(&r.tau_knn),
            verification_ap,
            weights: context.weights,
            metrics: (!r.metrics.is_all()).then(|| r.metrics.iter().collect()),
            images_per_class: context.images_per_class,
            std_convention: Some(REPEAT_STD_CONVENTION.to_string()),
            undefined: Vec::new(),
        }
        .with_nulls_explained()
    }

    /// The metric a table row names.
    pub fn metric(&self, metric: Metric) -> TwinStats {
        metric.pick([
            &self.verification_ap.twin(),
            &self.knn_accuracy,
            &self.knn_plurality,
            &self.tau_ap,
            &self.tau_knn,
        ])
    }

    /// The Markdown table `hedge hib eval` prints (rows of the metrics computed).
    pub fn markdown(r: &ModelEval) -> String {
        let f = |m: MeanStd| format!("{:.3} ± {:.3}", m.mean, m.std);
        let o = |m: Option<MeanStd>| m.map_or("n/a".to_string(), f);
        let twin = |t: &Option<Twin<MeanStd>>| {
            t.as_ref().map_or_else(|| "n/a | n/a".to_string(), |t| format!("{} | {}", f(t.clean), f(t.corrupt)))
        };
        let has = |m| r.metrics.contains(m);
        let mut t = String::from("| metric | clean | corrupt |\n|---|---|---|\n");
        if has(HibMetric::VerificationAp) {
            t += &format!("| verification AP | {} |\n", twin(&r.verification_ap));
        }
        if has(HibMetric::VerificationApMixed) {
            t += &format!("| verification AP, clean vs corrupt pairs | {} | |\n", o(r.verification_ap_mixed));
        }
        if has(HibMetric::KnnAccuracy) {
            t += &format!("| KNN accuracy (majority) | {} |\n", twin(&r.knn_majority));
        }
        if has(HibMetric::KnnPlurality) {
            t += &format!("| KNN accuracy (plurality) | {} |\n", twin(&r.knn_plurality));
        }
        if has(HibMetric::KnnKept) {
            t += &format!("| KNN accuracy (majority), probe kept in the gallery | {} |\n", twin(&r.knn_majority_kept));
        }
        if has(HibMetric::TauAp) {
            t += &format!("| tau AP | {} | {} |\n", o(r.tau_ap.clean), o(r.tau_ap.corrupt));
        }
        if has(HibMetric::TauKnn) {
            t += &format!("| tau KNN | {} | {} |\n", o(r.tau_knn.clean), o(r.tau_knn.corrupt));
        }
        if has(HibMetric::Ece) {
            t += &format!("| ECE | {} |\n", twin(&r.ece_by_variant));
        }
        t += &format!("| mean eta | {:.4} | {:.4} |\n\n", r.mean_eta.clean, r.mean_eta.corrupt);
        if has(HibMetric::GalleryProbe) {
            t += "| gallery | probe | majority | plurality | tau KNN |\n|---|---|---|---|---|\n";
            for g in &r.gallery_probe {
                t += &format!(
                    "| {} | {} | {} | {} | {} |\n",
                    g.gallery,
                    g.probe,
                    f(g.majority),
                    f(g.plurality),
                    o(g.tau_knn)
                );
            }
            t += "\n";
        }
        if let Some(ece) = r.ece {
            t += &format!("pooled ECE {:.4}; ", ece.mean);
        }
        if let Some(aurc) = r.aurc {
            t += &format!("AURC (clean + corrupt probes, clean gallery) {:.4}; ", aurc.mean);
        }
        if let Some(v) = r.verification_aurc {
            t += &format!("verification AURC (by the decision's confidence) {:.4}", v.mean);
            match r.verification_aurc_eta {
                Some(e) => t += &format!(", by the pair's eta {:.4}; ", e.mean),
                None => t += "; ",
            }
        }
        if let (Some(auroc), Some(auprc)) = (r.error_auroc, r.error_auprc) {
            t += &format!(
                "its uncertainty against the identification errors: AUROC {:.4}, AUPRC {:.4}; ",
                auroc.mean, auprc.mean
            );
        }
        t += &format!("{} repeats; ± is the sample sd over repeats", r.repeats);
        if let Some(d) = &r.reliability {
            t += &format!(
                "\n\nreliability of p(match) over the clean and corrupt pairs of every repeat ({} pairs):\n\n",
                d.count()
            );
            t += "| p(match) bin | pairs | mean p(match) | share matching |\n|---|---|---|---|\n";
            for b in d.bins.iter().filter(|b| b.count > 0) {
                t += &format!(
                    "| [{:.1}, {:.1}{} | {} | {:.3} | {:.3} |\n",
                    b.lower,
                    b.upper,
                    if b.upper >= 1.0 { "]" } else { ")" },
                    b.count,
                    b.mean_probability,
                    b.observed_frequency
                );
            }
        }
        t
    }
}

/// The metrics of the paper's Tables 1, 2 and 6 that summaries average over seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    VerificationAp,
    KnnAccuracy,
    KnnPlurality,
    TauAp,
    TauKnn,
}

impl Metric {
    /// This metric out of the five in [`Metric`]'s order (AP, KNN, plurality KNN, τ AP, τ KNN).
    pub fn pick(self, all: [&TwinStats; 5]) -> TwinStats {
        *all[self as usize]
    }

    pub fn label(self) -> &'static str {
        match self {
            Metric::VerificationAp => "Verification AP",
            Metric::KnnAccuracy => "KNN accuracy",
            Metric::KnnPlurality => "KNN accuracy (plurality)",
            Metric::TauAp => "AP correlation",
            Metric::TauKnn => "KNN correlation",
        }
    }
}

/// `verification.json`: the quick check `hedge hib train` ends with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct VerificationReport {
    /// [`EVAL_SCHEMA`] when written ([`hedge_run::schema`]).
    pub schema: u32,
    pub pairs: PairCounts,
    /// Which N-digit tables (schema 1 files without it predate protocols: open-set).
    pub data_protocol: NDigitProtocol,
    pub split: NDigitSplit,
    pub step: usize,
    pub variants: Twin<QuickVerification>,
    /// Why the trained model is unusable, where it is ([`crate::run_eval::collapse_warning`]):
    /// a training that collapsed ends with this warning, in the log and here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The verification pairs of a [`VerificationReport`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairCounts {
    pub matching: usize,
    pub non_matching: usize,
    pub seed: u64,
}

/// AP and mean η of one variant in a [`VerificationReport`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuickVerification {
    pub mean_eta: f64,
    pub verification_ap: f64,
}

/// One row of `curve.json`: a kept checkpoint's quality.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub knn_accuracy: TwinStats,
    /// Evaluation repeats (rows written before the field existed used 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<usize>,
    pub step: usize,
    /// Training wall-clock at the checkpoint, where the run's metrics record it.
    pub train_seconds: Option<f64>,
    pub verification_ap: VerificationStats,
}

/// The schema of `eval*.json` and `verification.json`: 2 records `schema`; 1 (no `schema`)
/// lacks `data_protocol` where it was written before protocols existed.
pub const EVAL_SCHEMA: u32 = 2;

/// Schema 1 → 2 of a result that names its N-digit protocol under `key`: a file without one
/// was written before protocols existed, when every run was open-set. `eval*.json` and
/// `verification.json` (`data_protocol`), a reproduction's `summary.json` (`protocol`).
///
/// # Errors
/// None in practice; the protocol's serde form as a message if it had one.
pub fn upgrade_before_protocols(
    from: u32,
    form: &mut serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> std::result::Result<(), String> {
    if from == 1 && !form.contains_key(key) {
        let open_set = serde_json::to_value(NDigitProtocol::before_protocols()).map_err(|e| e.to_string())?;
        form.insert(key.into(), open_set);
    }
    Ok(())
}

impl hedge_run::schema::Schema for EvalReport {
    const CURRENT: u32 = EVAL_SCHEMA;
    const WHAT: &'static str = "an evaluation (eval.json)";

    fn upgrade(from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        upgrade_before_protocols(from, form, "data_protocol")
    }
}

impl hedge_run::schema::Schema for VerificationReport {
    const CURRENT: u32 = EVAL_SCHEMA;
    const WHAT: &'static str = "a training's check (verification.json)";

    fn upgrade(from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        upgrade_before_protocols(from, form, "data_protocol")
    }
}

hedge_run::versioned_serde!(EvalReport);
hedge_run::versioned_serde!(VerificationReport);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_sd_uses_n_minus_one_and_needs_two_values() {
        let v = [Some(1.0), None, Some(3.0)];
        assert_eq!(mean(&v), Some(2.0));
        assert_eq!(sample_std(&v), Some(2f64.sqrt()));
        assert_eq!(sample_std(&v[..2]), None);
        assert_eq!(mean(&[None]), None);
    }

    #[test]
    fn null_bins_read_back_as_nan_and_write_as_null() {
        let b: BinCurves = serde_json::from_str(r#"{"ap": [0.5, null], "knn": []}"#).unwrap();
        assert!(b.ap[1].is_nan());
        assert_eq!(serde_json::to_string(&b).unwrap(), r#"{"ap":[0.5,null],"knn":[]}"#);
    }
}
