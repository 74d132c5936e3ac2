//! Point, HIB MoG-1 and the losses with their own match functions side by side (issue 82, item 6): the fragments of
//! `results/hib/side-by-side/` (`studies/hib/side-by-side.toml`), read from every run's typed files:
//! `eval.json` / `eval-quadrature.json` ([`EvalReport`]), `state.json` ([`RunState`]),
//! `identification-<score>/summary.json` ([`SearchSummary`]) and the timing run's
//! `calibration.json` ([`CalibrationRow`]).

use std::collections::BTreeMap;

use hedge_embed::report::EvalReport;
use hedge_embed::run::RunState;
use hedge_eval::{plus_minus, MeanStd};
use hedge_identify::{SearchSummary, UncertaintyScore};
use serde::{Deserialize, Serialize};

use crate::report::format::thousands;
use crate::report::fragment::{Fragment, Results};
use crate::Result;

/// Where the script's runs are collected.
pub const SIDE_BY_SIDE: &str = "results/hib/side-by-side";
/// The seeds of every model and setting.
pub const SEEDS: [u32; 3] = [0, 1, 2];
/// The data settings, with the words the table uses.
pub const SETTINGS: [(&str, &str); 4] = [
    ("mnist-n2-d2", "2-digit MNIST, D = 2 (instance)"),
    ("fashion-d2", "Fashion-MNIST, D = 2"),
    ("fashion-d16", "Fashion-MNIST, D = 16"),
    ("fashion-d64", "Fashion-MNIST, D = 64"),
];
/// The trained models (folder prefix, words): HIB's point and MoG-1, then every registered loss
/// with its own closed-form match probability whose runs are collected (folder prefix: the loss's
/// name; words: its summary up to the colon).
pub fn models(results: &Results) -> Vec<(String, String)> {
    let mut models = vec![("point".to_string(), "point".to_string()), ("mog1".into(), "HIB MoG-1".into())];
    for loss in hedge_embed::losses::LOSSES.iter().filter(|r| r.matching.closed_form().is_some()) {
        if results.path(&run_dir(SETTINGS[0].0, loss.name, SEEDS[0])).is_dir() {
            let words = loss.about.split(':').next().unwrap_or(loss.name);
            models.push((loss.name.to_string(), words.to_string()));
        }
    }
    models
}

/// One model's timing in `calibration.json`: two copies of a short run side by side, and the
/// steps the budget buys at that rate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CalibrationRow {
    pub budget_seconds: f64,
    pub timed_steps: Vec<usize>,
    pub timed_seconds: Vec<f64>,
    pub steps_per_second: f64,
    pub steps: usize,
    /// For a model added after the others were timed, on another machine: the model it was timed
    /// beside, whose committed speed its own is scaled from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerTiming>,
}

/// A later model's timing against a peer's: two copies of each, timed side by side in one
/// session, and the ratio of their speeds. Its `steps_per_second` is the peer's committed speed
/// times `ratio`, so the budget buys the steps it would have bought beside the others.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerTiming {
    /// The peer's folder prefix (a registered loss's name).
    pub model: String,
    /// The peer's two copies' seconds for the same steps, in that session.
    pub timed_seconds: Vec<f64>,
    /// This model's speed over the peer's, in that session.
    pub ratio: f64,
}

/// `calibration.json`: setting → model → timing.
pub type Calibration = BTreeMap<String, BTreeMap<String, CalibrationRow>>;

/// The fragments, once the runs are collected (the `collect` step of `studies/hib/side-by-side.toml`; none before).
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    if !results.path(&format!("{SIDE_BY_SIDE}/runs")).is_dir() {
        return Ok(Vec::new());
    }
    Ok(vec![
        Fragment::new("hib", "side-by-side-calibration", calibration_table(results)?),
        Fragment::new("hib", "side-by-side", quality_table(results)?),
        Fragment::new("hib", "side-by-side-findings", findings(results)?),
        Fragment::new("hib", "side-by-side-identification", identification_table(results)?),
        Fragment::new("hib", "side-by-side-candidate-recall", candidate_recall_table(results)?),
    ])
}

/// One evaluated model of a setting: its rows' words and each seed's report.
struct Evaluated {
    words: String,
    steps: String,
    reports: Vec<EvalReport>,
}

fn run_dir(setting: &str, model: &str, seed: u32) -> String {
    format!("{SIDE_BY_SIDE}/runs/{setting}/{model}-seed{seed}")
}

/// Mean ± sd over seeds of `values`; "—" where none is defined.
fn over_seeds(values: &[Option<f64>], decimals: usize) -> String {
    let defined: Vec<f64> = values.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    if defined.is_empty() {
        return "—".into();
    }
    let m = MeanStd::of(&defined);
    let spread = (m.n > 1).then_some(m.std);
    plus_minus(m.mean, spread, decimals, false, "1 seed")
}

fn evaluated(results: &Results, calibration: &Calibration, setting: &str) -> Result<Vec<Evaluated>> {
    let mut out = Vec::new();
    for (model, words) in models(results) {
        let (model, words) = (model.as_str(), words.as_str());
        let row = &calibration[setting][model];
        let mut steps = Vec::new();
        for seed in SEEDS {
            let state: RunState = results.json(&format!("{}/state.json", run_dir(setting, model, seed)))?;
            steps.push(state.step);
        }
        // Every seed trains the calibrated steps; a run cut short would show here.
        let steps = if steps.iter().all(|&s| s == row.steps) {
            thousands(row.steps as u64)
        } else {
            steps.iter().map(|&s| thousands(s as u64)).collect::<Vec<_>>().join(" / ")
        };
        let mut files =
            vec![("eval.json", if model == "mog1" { format!("{words}, Monte Carlo") } else { words.into() })];
        if model == "mog1" && results.exists(&format!("{}/eval-quadrature.json", run_dir(setting, model, 0))) {
            files.push(("eval-quadrature.json", format!("{words}, quadrature")));
        }
        for (file, words) in files {
            let reports = SEEDS
                .iter()
                .map(|&seed| results.json::<EvalReport>(&format!("{}/{file}", run_dir(setting, model, seed))))
                .collect::<Result<Vec<_>>>()?;
            out.push(Evaluated { words, steps: steps.clone(), reports });
        }
    }
    Ok(out)
}

/// The equal-time budget: each model's measured speed (two copies side by side, one thread each)
/// and the steps every seed of it trains.
fn calibration_table(results: &Results) -> Result<String> {
    let calibration: Calibration = results.json(&format!("{SIDE_BY_SIDE}/calibration.json"))?;
    let mut rows = vec![
        "| data | model | budget per run | measured steps/s | steps every seed trains |".to_string(),
        "|---|---|---|---|---|".into(),
    ];
    for (setting, data) in SETTINGS {
        for (model, words) in models(results) {
            let row = &calibration[setting][&model];
            let speed = match &row.peer {
                Some(peer) => {
                    format!("{:.2} ({:.3} × {}'s, timed beside it later)", row.steps_per_second, peer.ratio, peer.model)
                }
                None => format!("{:.2}", row.steps_per_second),
            };
            rows.push(format!(
                "| {data} | {words} | {} s | {speed} | {} |",
                row.budget_seconds,
                thousands(row.steps as u64)
            ));
        }
    }
    Ok(rows.join("\n"))
}

/// Accuracy and uncertainty quality of every model and setting, mean ± sd over the seeds.
fn quality_table(results: &Results) -> Result<String> {
    let calibration: Calibration = results.json(&format!("{SIDE_BY_SIDE}/calibration.json"))?;
    let mut rows = vec![
        "| data | model | steps in the budget | verification AP clean / corrupt | KNN clean / corrupt | ECE of p(match) \
         | identification AURC | its uncertainty's error AUROC | verification AURC, by confidence / by η |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---|".into(),
    ];
    for (setting, data) in SETTINGS {
        for e in evaluated(results, &calibration, setting)? {
            let col =
                |f: &dyn Fn(&EvalReport) -> Option<f64>, d| over_seeds(&e.reports.iter().map(f).collect::<Vec<_>>(), d);
            let nan = |x: f64| x.is_finite().then_some(x);
            rows.push(format!(
                "| {data} | {} | {} | {} / {} | {} / {} | {} | {} | {} | {} / {} |",
                e.words,
                e.steps,
                col(&|r| r.verification_ap.clean, 3),
                col(&|r| r.verification_ap.corrupt, 3),
                col(&|r| r.knn_accuracy.clean, 3),
                col(&|r| r.knn_accuracy.corrupt, 3),
                col(&|r| nan(r.ece), 3),
                col(&|r| nan(r.aurc), 3),
                col(&|r| r.error_auroc.map(|m| m.mean), 3),
                col(&|r| r.verification_aurc.map(|m| m.mean), 3),
                col(&|r| r.verification_aurc_eta.map(|m| m.mean), 3),
            ));
        }
    }
    Ok(rows.join("\n"))
}

/// For the models scored by a closed form whose candidates the index finds by the means: the
/// share of the closed form's exact top 10 among each probe's 100 candidates, mean ± sd over seeds.
fn candidate_recall_table(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| D | model | exact top 10 among the candidates (η index) | (margin index) |".to_string(),
        "|---|---|---|---|".into(),
    ];
    for (setting, _) in SETTINGS.iter().filter(|(s, _)| s.starts_with("fashion")) {
        for (model, words) in models(results) {
            let recall = |score: &str| -> Result<Option<String>> {
                let file = |seed| format!("{}/identification-{score}/summary.json", run_dir(setting, &model, seed));
                if !results.exists(&file(0)) {
                    return Ok(None);
                }
                let values = SEEDS
                    .iter()
                    .map(|&seed| Ok(results.json::<SearchSummary>(&file(seed))?.candidate_recall_at_10))
                    .collect::<Result<Vec<_>>>()?;
                Ok(values.iter().any(Option::is_some).then(|| over_seeds(&values, 3)))
            };
            if let (Some(eta), margin) = (recall("eta")?, recall("margin")?) {
                let dim = setting.trim_start_matches("fashion-d");
                rows.push(format!("| {dim} | {words} | {eta} | {} |", margin.unwrap_or_else(|| "—".into())));
            }
        }
    }
    Ok(rows.join("\n"))
}

/// Open-set identification of the held-out Fashion-MNIST classes, abstaining at the target
/// risk, mean ± sd over the seeds.
fn identification_table(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| D | model | abstain by | top-1 accuracy, full coverage | coverage at target risk 0.1 / 0.3 | accuracy among \
         answered at 0.1 / 0.3 | AURC | error AUROC |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|".into(),
    ];
    for (setting, _) in SETTINGS.iter().filter(|(s, _)| s.starts_with("fashion")) {
        let dim = setting.trim_start_matches("fashion-d");
        for (model, words) in models(results) {
            let (model, words) = (model.as_str(), words.as_str());
            for score in [UncertaintyScore::Eta, UncertaintyScore::Margin] {
                let file =
                    |seed| format!("{}/identification-{}/summary.json", run_dir(setting, model, seed), score.name());
                if !results.exists(&file(0)) {
                    continue;
                }
                let loose = |seed| {
                    format!("{}/identification-{}-risk0.3/summary.json", run_dir(setting, model, seed), score.name())
                };
                let summaries =
                    SEEDS.iter().map(|&seed| results.json::<SearchSummary>(&file(seed))).collect::<Result<Vec<_>>>()?;
                let loose = SEEDS
                    .iter()
                    .map(|&seed| results.json::<SearchSummary>(&loose(seed)))
                    .collect::<Result<Vec<_>>>()?;
                let loose_col =
                    |f: &dyn Fn(&SearchSummary) -> Option<f64>| over_seeds(&loose.iter().map(f).collect::<Vec<_>>(), 3);
                let quality = |s: &SearchSummary| s.selective.iter().find(|q| q.score == score).cloned();
                let col = |f: &dyn Fn(&SearchSummary) -> Option<f64>, d| {
                    over_seeds(&summaries.iter().map(f).collect::<Vec<_>>(), d)
                };
                rows.push(format!(
                    "| {dim} | {words} | {} | {} | {} / {} | {} / {} | {} | {} |",
                    score.name(),
                    col(&|s| Some(s.accuracy), 3),
                    col(&|s| Some(s.coverage), 3),
                    loose_col(&|s| Some(s.coverage)),
                    col(&|s| s.accuracy_answered, 3),
                    loose_col(&|s| s.accuracy_answered),
                    col(&|s| quality(s).map(|q| q.aurc), 3),
                    col(&|s| quality(s).and_then(|q| q.error_detection).map(|d| d.auroc), 3),
                ));
            }
        }
    }
    Ok(rows.join("\n"))
}

/// A metric the findings compare models by: its words, whether higher is better, and its value
/// in a report.
type Criterion = (&'static str, bool, fn(&EvalReport) -> Option<f64>);

const CRITERIA: [Criterion; 6] = [
    ("verification AP (clean)", true, |r| r.verification_ap.clean),
    ("KNN accuracy (clean)", true, |r| r.knn_accuracy.clean),
    ("calibration of p(match) (ECE)", false, |r| r.ece.is_finite().then_some(r.ece)),
    ("identification AURC", false, |r| r.aurc.is_finite().then_some(r.aurc)),
    ("finding its own identification errors (error AUROC)", true, |r| r.error_auroc.map(|m| m.mean)),
    ("verification AURC (by confidence)", false, |r| r.verification_aurc.map(|m| m.mean)),
];

/// Per setting and criterion, which model is best by the mean over seeds, and whether its lead
/// over the runner-up is larger than the two seed spreads together ("clearly") or not ("within
/// the seed spread"): the README's prose, generated from the same files as the table.
fn findings(results: &Results) -> Result<String> {
    let calibration: Calibration = results.json(&format!("{SIDE_BY_SIDE}/calibration.json"))?;
    let mut lines = Vec::new();
    for (setting, data) in SETTINGS {
        let all = evaluated(results, &calibration, setting)?;
        // The three models, MoG-1 by its training estimator (Monte Carlo); quadrature against
        // Monte Carlo is a line of its own below.
        let models: Vec<&Evaluated> = all.iter().filter(|e| !e.words.ends_with("quadrature")).collect();
        let mut parts = Vec::new();
        for (words, higher, value) in CRITERIA {
            let mut scored: Vec<(&str, MeanStd)> = models
                .iter()
                .filter_map(|e| {
                    let v: Vec<f64> = e.reports.iter().filter_map(value).filter(|x| x.is_finite()).collect();
                    (v.len() == e.reports.len()).then(|| (e.words.as_str(), MeanStd::of(&v)))
                })
                .collect();
            if scored.len() < 2 {
                continue;
            }
            scored.sort_by(|a, b| if higher { b.1.mean.total_cmp(&a.1.mean) } else { a.1.mean.total_cmp(&b.1.mean) });
            let (best, runner) = (&scored[0], &scored[1]);
            let clear = (best.1.mean - runner.1.mean).abs() > best.1.std + runner.1.std;
            parts.push(format!(
                "{words}: {} ({:.3} against {}'s {:.3}, {})",
                best.0,
                best.1.mean,
                runner.0,
                runner.1.mean,
                if clear { "clearly" } else { "within the seed spread" }
            ));
        }
        lines.push(format!("- **{data}** — best {}.", parts.join("; ")));
        if let (Some(mc), Some(quadrature)) = (
            all.iter().find(|e| e.words.ends_with("Monte Carlo")),
            all.iter().find(|e| e.words.ends_with("quadrature")),
        ) {
            let differences: Vec<String> = CRITERIA
                .iter()
                .filter_map(|(words, _, value)| {
                    let d: Vec<f64> = mc
                        .reports
                        .iter()
                        .zip(&quadrature.reports)
                        .filter_map(|(m, q)| Some(value(q)? - value(m)?))
                        .collect();
                    (d.len() == mc.reports.len()).then(|| {
                        let m = MeanStd::of(&d);
                        format!("{words} {:+.3} ± {:.3}", m.mean, m.std)
                    })
                })
                .collect();
            lines.push(format!(
                "  - HIB MoG-1 scored by quadrature instead of Monte Carlo (the same weights; quadrature minus Monte \
                 Carlo, mean ± sd over seeds): {}.",
                differences.join("; ")
            ));
        }
    }
    Ok(lines.join("\n"))
}
