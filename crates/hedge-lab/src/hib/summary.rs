//! A reproduction's `summary.json` ([`ReproduceSummary`]): every model of the paper's tables
//! averaged over its seeds, beside the paper's columns, typed both ways.
//!
//! Fields are declared in alphabetical order: the files keep the key order they had when they
//! were written as untyped JSON, so committed results do not change byte for byte.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::hib::paper::PaperModel;
use hedge_data::{NDigitProtocol, NDigitSplit};
use hedge_embed::report::*;
use hedge_run::undefined::{explain_nulls, NullReason, Undefined};

/// One model of a reproduction's `summary.json`, averaged over its seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    pub aurc: Option<f64>,
    pub aurc_uncertainty: Option<String>,
    pub ece: Option<f64>,
    pub knn_accuracy: TwinStats,
    /// KNN with the probe's own image (twin) kept in the gallery, over the seeds; absent where
    /// a run's report lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knn_kept: Option<TwinStats>,
    pub knn_plurality: TwinStats,
    pub label: String,
    pub runs: Vec<String>,
    pub seeds: usize,
    pub tau_ap: TwinStats,
    pub tau_knn: TwinStats,
    pub train_seconds: Vec<f64>,
    /// The seed the validation set chooses (best `validation` score in `best.json`: held-out
    /// images under the instance protocol, classes under open-set) and its metrics, where the
    /// runs held a validation set out and there are several seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_choice: Option<ValidationChoice>,
    pub verification_ap: VerificationStats,
}

impl ModelSummary {
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
}

/// Seed selection on the held-out validation classes (a model choice a user can make without
/// touching a test split): the chosen run and its test metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationChoice {
    pub knn_accuracy: TwinStats,
    pub run: String,
    pub seed: u64,
    /// The chosen run's best validation score (`best.json`: the mean of the four Table 1
    /// numbers on the validation classes).
    pub validation_score: f64,
    pub verification_ap: VerificationStats,
}

/// The other test split's models, reported beside the tables' split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherSplit {
    pub models: BTreeMap<String, ModelSummary>,
    pub split: NDigitSplit,
}

/// `summary.json` of `hedge hib reproduce`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ReproduceSummary {
    /// [`ReproduceSummary::CURRENT`](hedge_run::schema::Schema::CURRENT) when written.
    pub schema: u32,
    pub budget_minutes: Option<f64>,
    pub command: String,
    pub digits: usize,
    pub dim: usize,
    pub extra_seeds: u64,
    /// By key: `point`, `mog1`, `mog2`, and the extras (`mog1-beta0`, `point-contrastive-m…`).
    pub models: BTreeMap<String, ModelSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_split: Option<OtherSplit>,
    /// Which N-digit tables the models trained and were tested on: `instance` (the paper's
    /// tables) or `open-set` (schema 1 summaries without it predate protocols).
    pub protocol: NDigitProtocol,
    /// The paper's columns for this (N, D) (`point`, `mog1`, `mog2`, and Table 5's
    /// `mog1-beta0`, `mog1-beta1e4`), where it has them.
    pub paper: Option<BTreeMap<String, PaperModel>>,
    pub repeats: usize,
    /// Every evaluation used the first this many images of each class only (`--eval-per-class`,
    /// a smoke test or quick look: not comparable with the paper); absent when all were used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_images_per_class: Option<usize>,
    /// Wall-clock of the last invocation that trained or evaluated a run (an invocation that only
    /// reads finished runs back keeps the earlier value).
    pub seconds: f64,
    pub seeds: u64,
    pub split: NDigitSplit,
    pub std_convention: String,
    pub steps: Option<usize>,
    /// Every field this summary leaves `null`, and why (absent when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<Undefined>,
}

/// Schema 2 records `schema`; schema 1 (none) lacks `protocol` where it was written before
/// protocols existed.
impl hedge_run::schema::Schema for ReproduceSummary {
    const CURRENT: u32 = 2;
    const WHAT: &'static str = "a reproduction's summary.json";

    fn upgrade(from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        hedge_embed::report::upgrade_before_protocols(from, form, "protocol")
    }
}

hedge_run::versioned_serde!(ReproduceSummary);

impl ReproduceSummary {
    /// The summary with its `undefined` list filled in (what `hedge hib reproduce` writes).
    pub fn with_nulls_explained(mut self) -> Self {
        let point_tau = |prefix: &str| NullReason::new(format!("{prefix}models.point*.tau_*"), POINT_HAS_NO_ETA);
        let reasons = [
            point_tau(""),
            point_tau("other_split."),
            NullReason::new("paper.*", "the paper reports no value for this model and metric"),
            NullReason::new(
                "paper",
                "the paper reports no Table 1 for this N and D (its D = 1 runs are Appendix D's number line only)",
            ),
            NullReason::new(
                "*_std",
                "a sample standard deviation over seeds needs two seeds with a defined value (n - 1 = 0)",
            ),
            NullReason::new("*tau_*", TAU_UNDEFINED),
            NullReason::new("steps", "each run trained its own step count (see runs/*/config.json)"),
            NullReason::new("budget_minutes", "no budget: the step count was given (not a measurement)"),
            NullReason::new("*aurc", "no run of this model computed the AURC"),
            NullReason::new("*ece", "no run of this model computed the ECE"),
        ];
        self.undefined = Vec::new();
        self.undefined = explain_nulls(&self, &reasons);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hedge_embed::report::{CurvePoint, EvalReport};
    use std::collections::BTreeMap;

    /// A summary of a setting the paper has no Table 1 for (N = 2, D = 1, Appendix D) says why
    /// `paper` is null, as every other null is explained: read from the committed first
    /// Appendix D table, its `undefined` list rebuilt.
    #[test]
    fn a_setting_without_a_paper_table_explains_its_null_paper() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../results/hib/n2-d1-l-peak1e-2-16x16/summary.json");
        let summary: ReproduceSummary = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!((summary.digits, summary.dim), (2, 1));
        assert!(summary.paper.is_none());
        let explained = summary.with_nulls_explained();
        let paper = explained.undefined.iter().find(|u| u.fields == ["paper"]).expect("`paper` listed");
        assert!(paper.why.contains("no Table 1"), "{}", paper.why);
        assert!(
            explained.undefined.iter().all(|u| u.why != hedge_run::undefined::UNEXPLAINED),
            "{:?}",
            explained.undefined
        );
    }

    /// Every `eval*.json`, `curve*.json` and HIB `summary.json` committed under `results/`
    /// reads as its type and writes back to the same JSON value (the typed reader loses nothing).
    #[test]
    fn committed_reports_round_trip_through_their_types() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/hib");
        let mut files = Vec::new();
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    files.push(p);
                }
            }
        }
        let mut checked = 0;
        for path in files {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
            if !name.ends_with(".json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let original: serde_json::Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) => continue,
            };
            let again = if name.starts_with("eval") && name.ends_with(".json") {
                serde_json::to_value(
                    serde_json::from_str::<EvalReport>(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
                )
            } else if name == "curves.json" {
                serde_json::to_value(
                    serde_json::from_str::<BTreeMap<String, Vec<CurvePoint>>>(&text)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
                )
            } else if name.starts_with("curve") && name.ends_with(".json") {
                serde_json::to_value(
                    serde_json::from_str::<Vec<CurvePoint>>(&text)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
                )
            } else if name == "summary.json" && original.get("std_convention").is_some() {
                serde_json::to_value(
                    serde_json::from_str::<ReproduceSummary>(&text)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
                )
            } else {
                continue;
            }
            .unwrap();
            // Files of schema 1 name no schema; they write back as the current one. Those written
            // before protocols existed name none either; they read as open-set, which is what
            // they were.
            let mut again = again;
            if original.get("schema").is_none() {
                if let Some(schema) = again.as_object_mut().and_then(|form| form.remove("schema")) {
                    assert_eq!(schema, serde_json::json!(2), "{}", path.display());
                }
            }
            for key in ["protocol", "data_protocol"] {
                if original.get(key).is_none() && again.get(key) == Some(&serde_json::json!("open-set")) {
                    again.as_object_mut().expect("a report is an object").remove(key);
                }
            }
            assert_eq!(again, original, "{}", path.display());
            checked += 1;
        }
        assert!(checked >= 3, "found only {checked} reports under results/hib");
    }
}
