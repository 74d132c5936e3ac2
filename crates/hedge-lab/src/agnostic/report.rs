//! The concept-agnostic fragments (`results/agnostic/report/<name>.md`), read from the sweeps'
//! `summary.json` ([`SweepSummary`]), `metrics.jsonl` ([`SweepAudit`]), the Pareto summaries
//! ([`ParetoSummary`]), the maps ([`MapsSummary`]) and the papers' values in `reference/`.
//!
//! Tables: `adult` (the paper's GRL on Adult beside 50 adversary updates per step),
//! `pareto-adult` and `pareto-context` (chosen points of the Pareto sweeps), `decision-floor`,
//! `trials-context` and `trials-adult` (single-repeat trials), `levers` (issue 34's levers on the
//! best method), `grl-schedules` (Ganin et al.'s schedule beside Jia et al.'s settings). The
//! others are the sentences of the READMEs that state a measured number.

use std::collections::BTreeMap;

use super::context::ContextAudit;
use super::fairness::FairnessAudit;
use serde::Deserialize;

use super::gradcam::{MapShares, MapsSummary};
use super::pareto::{ParetoPoint, ParetoSummary, Spread};
use super::sweep::{SpreadOverRepeats, SweepAudit, SweepSummary};
use crate::report::format::{fixed, mean_std, num, range, short, span2, table, wrap};
use crate::report::fragment::{at_alpha, missing, Fragment, Results};
use crate::Result;

const AREA: &str = "results/agnostic";

/// Every concept-agnostic fragment.
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    let r = results;
    let jia = jia_settings_sentences(r, "  ")?;
    let pairs: Vec<(&str, String)> = vec![
        ("aif360", aif360(r)?),
        ("adult", adult(r)?),
        ("pareto-adult", pareto_adult(r)?),
        ("pareto-context", pareto_context(r)?),
        ("decision-floor", decision_floor(r)?),
        ("trials-context", trials_context(r)?),
        ("trials-adult", trials_adult(r)?),
        ("levers", levers(r)?),
        ("mnist-m", mnist_m(r)?),
        ("adult-summary", adult_summary(r)?),
        ("context-best", context_best(r)?),
        ("context-best-notes", context_best_notes(r)?),
        ("context-grl", context_grl(r, jia.as_deref())?),
        ("grl-schedules", grl_schedules(r)?),
        ("grl-jia", grl_jia(r)?),
        ("adult-best", adult_best(r)?),
        ("ceiling-and-floor", ceiling_and_floor(r)?),
        ("k20-networks", k20_networks(r)?),
        ("mnist-m-notes", mnist_m_notes(r)?),
        ("adult-audit", adult_audit(r)?),
        ("maps-summary", maps_summary(r)?),
        ("fix-trials", fix_trials(r)?),
        ("adult-chance", adult_chance(r)?),
        ("leace-gap", leace_gap(r)?),
        ("ladder-context", ladder_context(r)?),
        ("ladder-rungs", ladder_rungs()),
        ("ladder-passes", ladder_passes(r)?),
    ];
    Ok(pairs.into_iter().map(|(name, text)| Fragment::new("agnostic", name, text)).collect())
}

// ----- reading -------------------------------------------------------------------------------

/// A sweep's `summary.json` with the file it came from.
struct Sweep {
    file: String,
    summary: SweepSummary,
}

/// One α of a sweep's summary, typed: what the fragments read of it.
struct AtAlpha<'a> {
    file: &'a str,
    alpha: f64,
    reading: AlphaReading,
}

/// A spread a fragment reads at one α, by what it measures (its place in `summary.json` is
/// [`Reading::path`]).
#[derive(Debug, Clone, Copy)]
enum Reading {
    Iid,
    Balanced,
    Reversed,
    MnistM,
    ProbeMlp,
    ProbeLinear,
    ProbeDecision,
    ProtectedHead,
    ProbeBits,
    ProbeExcess,
    Accuracy,
    ParityGap,
    OddsGap,
    ReversedGap,
    FlipRate,
    PlainBackground,
    PhotographBackground,
}

/// One α of `summary.json` as the fragments read it (the same JSON; a spread a sweep does not
/// measure is absent).
#[derive(Debug, Default, Deserialize)]
struct AlphaReading {
    #[serde(default)]
    target_accuracy: TargetAccuracy,
    #[serde(default)]
    probe_accuracy: ProbeAccuracy,
    #[serde(default)]
    accuracy_by_background: ByBackground,
    protected_head_accuracy: Option<SpreadOverRepeats>,
    probe_mutual_information_bits: Option<SpreadOverRepeats>,
    probe_excess_over_decision: Option<SpreadOverRepeats>,
    accuracy: Option<SpreadOverRepeats>,
    demographic_parity_difference: Option<SpreadOverRepeats>,
    equalised_odds_difference: Option<SpreadOverRepeats>,
    reversed_gap: Option<SpreadOverRepeats>,
    flip_rate: Option<SpreadOverRepeats>,
    /// The probe ladder's rungs by name, each on the features and on the decisions.
    #[serde(default)]
    ladder: BTreeMap<String, LadderRung>,
    runs: Option<usize>,
    agnostic_runs: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
struct LadderRung {
    features: Option<SpreadOverRepeats>,
    decision: Option<SpreadOverRepeats>,
}

/// What a ladder rung is read on.
#[derive(Debug, Clone, Copy)]
enum Side {
    Features,
    Decision,
}

#[derive(Debug, Default, Deserialize)]
struct TargetAccuracy {
    iid: Option<SpreadOverRepeats>,
    balanced: Option<SpreadOverRepeats>,
    reversed: Option<SpreadOverRepeats>,
    mnist_m: Option<SpreadOverRepeats>,
}

#[derive(Debug, Default, Deserialize)]
struct ProbeAccuracy {
    mlp: Option<SpreadOverRepeats>,
    linear: Option<SpreadOverRepeats>,
    decision: Option<SpreadOverRepeats>,
}

#[derive(Debug, Default, Deserialize)]
struct ByBackground {
    plain: Option<SpreadOverRepeats>,
    photograph: Option<SpreadOverRepeats>,
}

/// A count a fragment reads at one α.
#[derive(Debug, Clone, Copy)]
enum Count {
    /// Networks trained at the α.
    Runs,
    /// Of them, those whose probes all stayed at chance.
    AgnosticRuns,
}

impl Reading {
    /// Where it sits in `summary.json` (for the message when a sweep lacks it).
    fn path(self) -> &'static str {
        match self {
            Reading::Iid => "target_accuracy.iid",
            Reading::Balanced => "target_accuracy.balanced",
            Reading::Reversed => "target_accuracy.reversed",
            Reading::MnistM => "target_accuracy.mnist_m",
            Reading::ProbeMlp => "probe_accuracy.mlp",
            Reading::ProbeLinear => "probe_accuracy.linear",
            Reading::ProbeDecision => "probe_accuracy.decision",
            Reading::ProtectedHead => "protected_head_accuracy",
            Reading::ProbeBits => "probe_mutual_information_bits",
            Reading::ProbeExcess => "probe_excess_over_decision",
            Reading::Accuracy => "accuracy",
            Reading::ParityGap => "demographic_parity_difference",
            Reading::OddsGap => "equalised_odds_difference",
            Reading::ReversedGap => "reversed_gap",
            Reading::FlipRate => "flip_rate",
            Reading::PlainBackground => "accuracy_by_background.plain",
            Reading::PhotographBackground => "accuracy_by_background.photograph",
        }
    }

    fn of(self, r: &AlphaReading) -> Option<SpreadOverRepeats> {
        match self {
            Reading::Iid => r.target_accuracy.iid,
            Reading::Balanced => r.target_accuracy.balanced,
            Reading::Reversed => r.target_accuracy.reversed,
            Reading::MnistM => r.target_accuracy.mnist_m,
            Reading::ProbeMlp => r.probe_accuracy.mlp,
            Reading::ProbeLinear => r.probe_accuracy.linear,
            Reading::ProbeDecision => r.probe_accuracy.decision,
            Reading::ProtectedHead => r.protected_head_accuracy,
            Reading::ProbeBits => r.probe_mutual_information_bits,
            Reading::ProbeExcess => r.probe_excess_over_decision,
            Reading::Accuracy => r.accuracy,
            Reading::ParityGap => r.demographic_parity_difference,
            Reading::OddsGap => r.equalised_odds_difference,
            Reading::ReversedGap => r.reversed_gap,
            Reading::FlipRate => r.flip_rate,
            Reading::PlainBackground => r.accuracy_by_background.plain,
            Reading::PhotographBackground => r.accuracy_by_background.photograph,
        }
    }
}

impl Sweep {
    fn load(results: &Results, folder: &str) -> Result<Self> {
        let file = format!("{AREA}/{folder}/summary.json");
        Ok(Sweep { summary: results.json(&file)?, file })
    }

    fn at(&self, alpha: f64) -> Result<AtAlpha<'_>> {
        let entry = at_alpha(&self.summary.alphas, alpha, &self.file)?;
        let json = serde_json::to_value(entry).expect("a summary serialises");
        let reading = serde_json::from_value(json)
            .map_err(|e| missing(&self.file, format!("α = {alpha} does not read as a sweep's summary: {e}")))?;
        Ok(AtAlpha { file: &self.file, alpha, reading })
    }

    /// Every α, lowest first.
    fn alphas(&self) -> Vec<f64> {
        let mut alphas: Vec<f64> = self.summary.alphas.keys().filter_map(|k| k.parse().ok()).collect();
        alphas.sort_by(f64::total_cmp);
        alphas
    }

    /// The means of `reading` at every α that `keep` holds for.
    fn means(&self, keep: impl Fn(f64) -> bool, reading: Reading) -> Result<Vec<f64>> {
        self.alphas().into_iter().filter(|&a| keep(a)).map(|a| self.at(a)?.mean(reading)).collect()
    }
}

impl AtAlpha<'_> {
    fn missing(&self, what: &str) -> crate::LabError {
        missing(self.file, format!("no {what} at α = {}", self.alpha))
    }

    fn spread(&self, reading: Reading) -> Result<SpreadOverRepeats> {
        reading.of(&self.reading).ok_or_else(|| self.missing(reading.path()))
    }

    fn mean(&self, reading: Reading) -> Result<f64> {
        Ok(self.spread(reading)?.mean)
    }

    /// The mean of ladder rung `rung` on `side`.
    fn rung(&self, rung: &str, side: Side) -> Result<f64> {
        let found = self.reading.ladder.get(rung);
        let (spread, name) = match side {
            Side::Features => (found.and_then(|r| r.features), "features"),
            Side::Decision => (found.and_then(|r| r.decision), "decision"),
        };
        spread.map(|s| s.mean).ok_or_else(|| self.missing(&format!("ladder.{rung}.{name}")))
    }

    /// How much more rung `rung` reads from the features than from the decisions.
    fn rung_excess(&self, rung: &str) -> Result<f64> {
        Ok(self.rung(rung, Side::Features)? - self.rung(rung, Side::Decision)?)
    }

    fn count(&self, count: Count) -> Result<usize> {
        let (n, name) = match count {
            Count::Runs => (self.reading.runs, "runs"),
            Count::AgnosticRuns => (self.reading.agnostic_runs, "agnostic_runs"),
        };
        n.ok_or_else(|| self.missing(name))
    }

    /// `mean ± std` of `reading` with three decimals.
    fn ms(&self, reading: Reading) -> Result<String> {
        let s = self.spread(reading)?;
        Ok(mean_std(s.mean, s.std, 3))
    }
}

/// Every Context-MNIST audit of a sweep's `metrics.jsonl`.
fn context_audits(results: &Results, folder: &str) -> Result<Vec<ContextAudit>> {
    let lines: Vec<SweepAudit> = results.json_lines(&format!("{AREA}/{folder}"), "metrics.jsonl")?;
    Ok(lines.into_iter().filter_map(|a| if let SweepAudit::Context(c) = a { Some(c) } else { None }).collect())
}

/// Every Adult audit of a sweep's `metrics.jsonl`.
fn tabular_audits(results: &Results, folder: &str) -> Result<Vec<FairnessAudit>> {
    let lines: Vec<SweepAudit> = results.json_lines(&format!("{AREA}/{folder}"), "metrics.jsonl")?;
    Ok(lines.into_iter().filter_map(|a| if let SweepAudit::Tabular(t) = a { Some(t) } else { None }).collect())
}

fn is(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The network of `audits` at `alpha` and `repeat`.
fn network<'a, T>(
    audits: &'a [T],
    file: &str,
    alpha: f64,
    repeat: u64,
    of: impl Fn(&T) -> (f64, u64),
) -> Result<&'a T> {
    audits
        .iter()
        .find(|a| {
            let (al, re) = of(a);
            is(al, alpha) && re == repeat
        })
        .ok_or_else(|| missing(file, format!("no repeat {repeat} at α = {alpha}")))
}

fn context_network<'a>(audits: &'a [ContextAudit], file: &str, alpha: f64, repeat: u64) -> Result<&'a ContextAudit> {
    network(audits, file, alpha, repeat, |a| (a.alpha, a.repeat))
}

/// The point of `sweep` at `alpha` in `<folder>/pareto.json`.
fn pareto_point(results: &Results, folder: &str, sweep: &str, alpha: f64) -> Result<ParetoPoint> {
    let file = format!("{AREA}/{folder}/pareto.json");
    let pareto: ParetoSummary = results.json(&file)?;
    pareto
        .points
        .into_iter()
        .find(|p| p.sweep.trim_end_matches('/').rsplit('/').next() == Some(sweep) && is(p.alpha, alpha))
        .ok_or_else(|| missing(&file, format!("no point {sweep} at α = {alpha}")))
}

/// An optional spread of a Pareto point that this fragment needs.
fn needed(spread: &Option<Spread>, point: &ParetoPoint, what: &str) -> Result<Spread> {
    (*spread).ok_or_else(|| missing(&point.sweep, format!("no {what} at α = {}", point.alpha)))
}

fn ms(s: &Spread) -> String {
    mean_std(s.mean, s.std, 3)
}

fn n3(x: f64) -> String {
    num(x, 3)
}

// ----- tables --------------------------------------------------------------------------------

/// The published AIF360 adversarial-debiasing demo (`reference/aif360-adversarial-debiasing.json`).
#[derive(Debug, Deserialize)]
struct PublishedDebiasing {
    method: String,
    source: String,
    data: String,
    plain: PublishedOutcome,
    debiased: PublishedOutcome,
}

#[derive(Debug, Deserialize)]
struct PublishedOutcome {
    accuracy: f64,
    parity_difference: f64,
}

fn aif360(results: &Results) -> Result<String> {
    let r: PublishedDebiasing = results.json(&format!("{AREA}/reference/aif360-adversarial-debiasing.json"))?;
    Ok(format!(
        "{}, as published: accuracy {} → {}, parity difference {} → {} (plain → debiased). Source: {}. Data: {}. \
         (`results/agnostic/reference/aif360-adversarial-debiasing.json`)",
        r.method,
        n3(r.plain.accuracy),
        n3(r.debiased.accuracy),
        n3(r.plain.parity_difference),
        n3(r.debiased.parity_difference),
        r.source,
        r.data
    ))
}

fn adult(results: &Results) -> Result<String> {
    let (grl, k50) = (Sweep::load(results, "adult")?, Sweep::load(results, "adult-k50")?);
    let mut rows = Vec::new();
    for a in [0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0] {
        let (g, k) = (grl.at(a)?, k50.at(a)?);
        rows.push(vec![
            fixed(a, 1),
            n3(g.mean(Reading::Accuracy)?),
            n3(g.mean(Reading::ParityGap)?),
            n3(g.mean(Reading::OddsGap)?),
            n3(g.mean(Reading::ProtectedHead)?),
            n3(g.mean(Reading::ProbeLinear)?),
            n3(g.mean(Reading::ProbeMlp)?),
            n3(k.mean(Reading::Accuracy)?),
            n3(k.mean(Reading::ParityGap)?),
            n3(k.mean(Reading::OddsGap)?),
            n3(k.mean(Reading::ProbeLinear)?),
            n3(k.mean(Reading::ProbeMlp)?),
            n3(k.mean(Reading::ProbeBits)?),
        ]);
    }
    Ok(format!(
        "Means over repeats (10 for the GRL, 3 for k = 50):\n\n{}",
        table(
            &[
                "α",
                "accuracy",
                "parity diff.",
                "eq.-odds diff.",
                "G_p",
                "linear probe",
                "MLP probe",
                "k = 50: accuracy",
                "parity diff.",
                "eq.-odds diff.",
                "linear probe",
                "MLP probe",
                "MI bits"
            ],
            &rows
        )
    ))
}

/// `mean ± std (bits)` of a point's tuned MLP probe.
fn probe_with_bits(p: &ParetoPoint) -> Result<String> {
    Ok(format!("{} ({})", ms(&p.probe_mlp), fixed(needed(&p.probe_mlp_bits, p, "probe_mlp_bits")?.mean, 2)))
}

const ADULT_POINTS: [(&str, &str, f64); 11] = [
    ("none (`adult-grl`, α = 0)", "adult-grl", 0.0),
    ("GRL, the paper's (`adult-grl`)", "adult-grl", 0.9),
    ("GRL, 50 G_p updates a step (`adult-grl-k50`)", "adult-grl-k50", 0.9),
    ("GRL, 50 G_p updates a step", "adult-grl-k50", 0.8),
    ("reweighing alone (Kamiran & Calders; `adult-reweigh`)", "adult-reweigh", 0.0),
    ("reweighing + GRL, 50 updates (`adult-rw-grl-k50`)", "adult-rw-grl-k50", 0.7),
    ("HSIC (`adult-hsic`)", "adult-hsic", 0.9),
    ("reweighing + HSIC (`adult-rw-hsic`)", "adult-rw-hsic", 0.9),
    ("GRL, G_p re-initialised every 300 steps (`adult-reset`)", "adult-reset", 0.9),
    ("LEACE (`adult-leace`)", "adult-leace", 1.0),
    ("INLP, 10 rounds (`adult-inlp`)", "adult-inlp", 1.0),
];

fn pareto_adult(results: &Results) -> Result<String> {
    let mut rows = Vec::new();
    for (label, sweep, a) in ADULT_POINTS {
        let p = pareto_point(results, "adult-pareto", sweep, a)?;
        rows.push(vec![
            label.to_string(),
            short(a),
            ms(&p.usefulness),
            ms(&needed(&p.statistical_parity_difference, &p, "statistical_parity_difference")?),
            ms(&needed(&p.equalised_odds_difference, &p, "equalised_odds_difference")?),
            probe_with_bits(&p)?,
            n3(p.probe_linear.mean),
        ]);
    }
    Ok(table(
        &[
            "method (folder)",
            "α",
            "accuracy",
            "parity difference",
            "equalised odds",
            "tuned MLP probe (bits)",
            "linear probe",
        ],
        &rows,
    ))
}

const CONTEXT_POINTS: [(&str, &str, f64); 18] = [
    ("none (`ctx-grl`, α = 0)", "ctx-grl", 0.0),
    ("reference: trained at ρ = 0.5, no shortcut to learn (`ctx-rho05`)", "ctx-rho05", 0.0),
    ("GRL, the paper's (`ctx-grl`)", "ctx-grl", 0.3),
    ("GRL", "ctx-grl", 1.0),
    ("GRL, 20 G_p updates a step (`ctx-grl-k20`)", "ctx-grl-k20", 0.4),
    ("GRL, 20 G_p updates a step", "ctx-grl-k20", 0.7),
    ("GRL, G_p re-initialised every 300 steps (`ctx-reset`)", "ctx-reset", 0.7),
    ("GRL on reweighed batches (`ctx-rw-grl`)", "ctx-rw-grl", 0.7),
    ("HSIC on the 768 conv features (`ctx-hsic`)", "ctx-hsic", 0.5),
    ("HSIC on the 768 conv features", "ctx-hsic", 0.9),
    ("LEACE (`ctx-leace`)", "ctx-leace", 1.0),
    ("INLP, 40 rounds (`ctx-inlp`)", "ctx-inlp", 1.0),
    ("reweighing + HSIC + 64-unit bottleneck (`context-mnist/`)", "context-mnist", 0.7),
    ("reweighing + HSIC + 64-unit bottleneck", "context-mnist", 0.8),
    ("reweighing + HSIC + 64-unit bottleneck", "context-mnist", 0.9),
    ("ceiling: twin penalty, twin labelled (`ctx-twin-labelled`)", "ctx-twin-labelled", 0.3),
    ("ceiling: twin labelled + 64-unit bottleneck (`ctx-twin-labelled-b64`)", "ctx-twin-labelled-b64", 0.3),
    ("ceiling: twin labelled + 64-unit bottleneck", "ctx-twin-labelled-b64", 0.5),
];

fn pareto_context(results: &Results) -> Result<String> {
    let mut rows = Vec::new();
    for (label, sweep, a) in CONTEXT_POINTS {
        let p = pareto_point(results, "context-mnist-pareto", sweep, a)?;
        rows.push(vec![
            label.to_string(),
            short(a),
            ms(&p.usefulness),
            n3(needed(&p.reversed_accuracy, &p, "reversed_accuracy")?.mean),
            probe_with_bits(&p)?,
            n3(p.probe_linear.mean),
            n3(needed(&p.mask_share, &p, "mask_share")?.mean),
        ]);
    }
    Ok(table(
        &["method (folder)", "α", "balanced", "reversed", "tuned MLP probe (bits)", "linear probe", "mask share"],
        &rows,
    ))
}

const FLOOR: [(&str, &str, f64); 7] = [
    ("reference: ρ = 0.5, no shortcut, no removal (`ctx-rho05`)", "ctx-rho05", 0.0),
    ("reweighing + HSIC + 64-unit bottleneck (`ctx-rw-hsic-b64`)", "ctx-rw-hsic-b64", 0.0),
    ("the same", "ctx-rw-hsic-b64", 0.7),
    ("the same", "ctx-rw-hsic-b64", 0.8),
    ("the same", "ctx-rw-hsic-b64", 0.9),
    ("ceiling: twin labelled + bottleneck (`ctx-twin-labelled-b64`)", "ctx-twin-labelled-b64", 0.3),
    ("the same", "ctx-twin-labelled-b64", 0.5),
];

fn decision_floor(results: &Results) -> Result<String> {
    let mut rows = Vec::new();
    for (label, sweep, a) in FLOOR {
        let sweep = Sweep::load(results, &format!("decision-floor/{sweep}"))?;
        let s = sweep.at(a)?;
        rows.push(vec![
            label.to_string(),
            short(a),
            s.ms(Reading::Balanced)?,
            format!("{} / {}", n3(s.mean(Reading::PlainBackground)?), n3(s.mean(Reading::PhotographBackground)?)),
            s.ms(Reading::ProbeMlp)?,
            s.ms(Reading::ProbeDecision)?,
            s.ms(Reading::ProbeExcess)?,
        ]);
    }
    Ok(table(
        &[
            "network",
            "α",
            "balanced",
            "plain / photograph background",
            "tuned MLP probe, features",
            "tuned MLP probe, G_y's logits",
            "features − logits",
        ],
        &rows,
    ))
}

fn probe_bits(p: &hedge_agnostic::audit::ProbeResult) -> String {
    format!("{} ({})", n3(p.accuracy), fixed(p.mutual_information_bits, 3))
}

const TRIAL_CONTEXT: [(&str, &str, f64); 14] = [
    ("leace-ctx2", "none (α = 0 network, G_y retrained)", 0.0),
    ("leace-ctx", "LEACE fitted on the context set (digit-less backgrounds)", 1.0),
    ("leace-ctx2", "LEACE, target set, group-balanced weights", 1.0),
    ("leace-ctx3", "the same with covariance shrinkage", 1.0),
    ("leace-ctx5", "the same, applied in double precision", 1.0),
    ("hsic-ctx-plain", "HSIC penalty over the whole batch", 0.5),
    ("hsic-ctx-plain", "HSIC penalty over the whole batch", 0.9),
    ("hsic-ctx", "HSIC within each target class", 0.5),
    ("hsic-ctx", "HSIC within each target class", 0.9),
    ("twin-ctx", "counterfactual-twin penalty (the ceiling)", 0.5),
    ("reset-ctx", "GRL, G_p re-initialised every 300 steps (200 steps alone)", 0.7),
    ("inlp-ctx", "none (α = 0 network, G_y retrained)", 0.0),
    ("inlp-ctx", "INLP, 10 rounds (session 12)", 1.0),
    ("inlp40-ctx", "INLP, 40 rounds (same α = 0 network)", 1.0),
];

fn trials_context(results: &Results) -> Result<String> {
    let mut rows = Vec::new();
    for (folder, label, a) in TRIAL_CONTEXT {
        let path = format!("methods-trial/{folder}");
        let audits = context_audits(results, &path)?;
        let r = context_network(&audits, &path, a, 0)?;
        let t = &r.target_accuracy;
        rows.push(vec![
            format!("`{folder}`"),
            label.to_string(),
            short(a),
            n3(t.iid),
            n3(t.balanced),
            n3(t.reversed),
            n3(r.worst_group_accuracy),
            probe_bits(&r.probe_linear),
            probe_bits(&r.probe_mlp),
            n3(r.protected_head_accuracy),
            n3(r.flip_rate),
            n3(r.mask_share),
        ]);
    }
    Ok(table(
        &[
            "folder",
            "method",
            "α",
            "IID",
            "balanced",
            "reversed",
            "worst group",
            "linear probe (bits)",
            "tuned MLP probe (bits)",
            "G_p",
            "flip rate",
            "mask share",
        ],
        &rows,
    ))
}

const TRIAL_ADULT: [(&str, &str, f64); 4] = [
    ("leace-adult3", "none (α = 0)", 0.0),
    ("leace-adult3", "LEACE (balanced weights, shrinkage)", 1.0),
    ("hsic-adult", "HSIC penalty", 0.5),
    ("hsic-adult", "HSIC penalty", 0.9),
];

fn trials_adult(results: &Results) -> Result<String> {
    let mut rows = Vec::new();
    for (folder, label, a) in TRIAL_ADULT {
        let path = format!("methods-trial/{folder}");
        let audits = tabular_audits(results, &path)?;
        let r = network(&audits, &path, a, 0, |r| (r.alpha, r.repeat))?;
        rows.push(vec![
            format!("`{folder}`"),
            label.to_string(),
            short(a),
            n3(r.accuracy),
            n3(r.demographic_parity_difference),
            n3(r.equalised_odds_difference),
            probe_bits(&r.probe_linear),
            probe_bits(&r.probe_mlp),
        ]);
    }
    Ok(table(
        &[
            "folder",
            "method",
            "α",
            "accuracy",
            "parity difference",
            "equalised odds",
            "linear probe (bits)",
            "tuned MLP probe (bits)",
        ],
        &rows,
    ))
}

/// Issue 34's levers on the best method at α = 0.8 (and the ceiling at α = 0.5): folder under
/// `results/agnostic/` (a sweep with `metrics.jsonl`, or the `.log` of a run that diverged),
/// lever, setting, α.
const LEVERS: [(&str, &str, &str, f64); 16] = [
    (
        "decision-floor/ctx-rw-hsic-b64",
        "none (the best method: reweighing + HSIC + 64-unit bottleneck)",
        "HSIC σ² = median",
        0.8,
    ),
    ("methods-trial/ctx-rw-hsic-bw0.1-b64", "HSIC bandwidth", "σ² = 0.1 × median", 0.8),
    ("methods-trial/ctx-rw-hsic-bw0.3-b64", "HSIC bandwidth", "σ² = 0.3 × median", 0.8),
    ("methods-trial/ctx-rw-hsic-bw3-b64", "HSIC bandwidth", "σ² = 3 × median", 0.8),
    ("methods-trial/ctx-rw-hsic-bw10-b64", "HSIC bandwidth", "σ² = 10 × median", 0.8),
    ("methods-trial/ctx-rw-hsic-b64-dec1", "decision penalty, normalised HSIC", "β = 1", 0.8),
    ("methods-trial/ctx-rw-hsic-b64-dec-un16", "decision penalty, unnormalised HSIC", "β = 16", 0.8),
    ("methods-trial/ctx-rw-hsic-b64-dec-std4", "decision penalty, batch-standardised logits", "β = 4", 0.8),
    ("methods-trial/ctx-rw-hsic-b64-dec-std16-r3", "decision penalty, batch-standardised logits", "β = 16", 0.7),
    ("methods-trial/ctx-rw-hsic-b64-dec-std16-r3", "decision penalty, batch-standardised logits", "β = 16", 0.8),
    ("methods-trial/ctx-rw-hsic-b64-dec-std16-r3", "decision penalty, batch-standardised logits", "β = 16", 0.9),
    ("methods-trial/ctx-rw-hsic-b64-dec-std32", "decision penalty, batch-standardised logits", "β = 32", 0.8),
    ("methods-trial/ctx-rw-hsic-b64-dec-std64", "decision penalty, batch-standardised logits", "β = 64", 0.8),
    ("decision-floor/ctx-twin-labelled-b64", "none (the ceiling: twin labelled + 64-unit bottleneck)", "", 0.5),
    ("methods-trial/ctx-twin-labelled-b64-dec-std16", "ceiling + decision penalty, batch-standardised", "β = 16", 0.5),
    ("methods-trial/ctx-rw-qleace-b64", "quadratic LEACE (oracle labels), post hoc", "strength 1", 1.0),
];

/// The row of a setting whose first network at α diverged: the step its log records.
fn diverged_row(results: &Results, folder: &str, lever: &str, setting: &str, a: f64) -> Result<Vec<String>> {
    let log = format!("{AREA}/{folder}.log");
    let text = results.text(&log)?;
    let marker = "training diverged at step ";
    let step = text
        .find(marker)
        .map(|i| text[i + marker.len()..].chars().take_while(char::is_ascii_digit).collect::<String>())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| missing(&log, format!("no divergence recorded and no network at α = {a}")))?;
    let mut row = vec![lever.to_string(), setting.to_string(), short(a), "0".into()];
    row.push(format!("diverged (NaN loss at step {step})"));
    row.extend(std::iter::repeat_n(String::new(), 5));
    row.push(format!("`{folder}.log`"));
    Ok(row)
}

/// `mean ± sd` over the values (sample sd), the value alone for one.
fn mean_sd(values: &[f64]) -> String {
    let n = values.len() as f64;
    let mu = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return n3(mu);
    }
    let sd = (values.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    format!("{} ± {}", n3(mu), fixed(sd, 3))
}

fn lever_row(results: &Results, folder: &str, lever: &str, setting: &str, a: f64) -> Result<Vec<String>> {
    if !results.exists(&format!("{AREA}/{folder}/metrics.jsonl")) {
        return diverged_row(results, folder, lever, setting, a);
    }
    let runs: Vec<ContextAudit> = context_audits(results, folder)?.into_iter().filter(|r| is(r.alpha, a)).collect();
    if runs.is_empty() {
        // A sweep stops at the network that diverged (its log says where); later α are not run.
        return diverged_row(results, folder, lever, setting, a);
    }
    let stat = |f: &dyn Fn(&ContextAudit) -> f64| mean_sd(&runs.iter().map(f).collect::<Vec<_>>());
    let collapsed = runs.iter().map(|r| r.target_accuracy.balanced).fold(f64::NEG_INFINITY, f64::max) < 0.55;
    let has_decision = runs.iter().all(|r| r.probe_decision.is_some());
    let decision = |r: &ContextAudit| r.probe_decision.as_ref().map_or(f64::NAN, |d| d.accuracy);
    let agnostic = runs.iter().filter(|r| r.is_agnostic()).count();
    Ok(vec![
        lever.to_string(),
        setting.to_string(),
        short(a),
        runs.len().to_string(),
        if collapsed { "collapsed (a constant classifier)".into() } else { stat(&|r| r.target_accuracy.balanced) },
        stat(&|r| r.target_accuracy.reversed),
        stat(&|r| r.probe_mlp.accuracy),
        stat(&|r| r.probe_linear.accuracy),
        if has_decision { stat(&decision) } else { String::new() },
        if has_decision { stat(&|r| r.probe_mlp.accuracy - decision(r)) } else { String::new() },
        format!("`{folder}/` ({agnostic} agnostic)"),
    ])
}

fn levers(results: &Results) -> Result<String> {
    let rows: Vec<Vec<String>> = LEVERS
        .iter()
        .map(|&(folder, lever, setting, a)| lever_row(results, folder, lever, setting, a))
        .collect::<Result<_>>()?;
    Ok(format!(
        "Mean ± sd over the networks at that α (one network: its value); 'agnostic' counts the networks that pass the \
         audit's criterion (features − logits ≤ 0.01, |balanced − reversed| ≤ 0.02, balanced ≥ 0.90):\n\n{}",
        table(
            &[
                "lever",
                "setting",
                "α",
                "networks",
                "balanced",
                "reversed",
                "tuned MLP probe, features",
                "linear probe",
                "tuned MLP probe, G_y's logits",
                "features − logits",
                "folder",
            ],
            &rows
        )
    ))
}

/// The Ganin-style sweep at Jia et al.'s settings beside Ganin et al.'s schedule, per α.
fn grl_schedules(results: &Results) -> Result<String> {
    let Some(jia) = jia_sweep(results)? else {
        return Ok("Jia et al.'s settings: `context-mnist-grl-paper/` is still running; this table is written when \
                   its summary.json exists."
            .into());
    };
    let ganin = Sweep::load(results, "context-mnist-grl")?;
    let mut rows = Vec::new();
    for a in jia.alphas() {
        let (g, j) = (ganin.at(a)?, jia.at(a)?);
        let decision = j.mean(Reading::ProbeDecision).map(n3).unwrap_or_else(|_| "–".into());
        rows.push(vec![
            fixed(a, 1),
            g.ms(Reading::Balanced)?,
            n3(g.mean(Reading::Reversed)?),
            n3(g.mean(Reading::ProtectedHead)?),
            n3(g.mean(Reading::ProbeMlp)?),
            j.ms(Reading::Balanced)?,
            n3(j.mean(Reading::Reversed)?),
            n3(j.mean(Reading::ProtectedHead)?),
            j.ms(Reading::ProbeMlp)?,
            decision,
            format!("{}/{}", j.count(Count::AgnosticRuns)?, j.count(Count::Runs)?),
        ]);
    }
    let runs = |s: &Sweep| -> Result<String> {
        let mut n: Vec<usize> = s.alphas().into_iter().map(|a| s.at(a)?.count(Count::Runs)).collect::<Result<_>>()?;
        n.sort_unstable();
        n.dedup();
        Ok(n.iter().map(usize::to_string).collect::<Vec<_>>().join("/"))
    };
    Ok(format!(
        "Per α: Ganin et al.'s schedule ({} repeats) beside Jia et al.'s settings ({} repeats), mean ± std; probes on \
         held-out rows; the last column counts the networks that pass the audit:\n\n{}",
        runs(&ganin)?,
        runs(&jia)?,
        table(
            &[
                "α",
                "Ganin: balanced",
                "reversed",
                "G_p",
                "MLP probe",
                "Jia: balanced",
                "reversed",
                "G_p",
                "MLP probe",
                "MLP probe on G_y's logits",
                "agnostic",
            ],
            &rows
        )
    ))
}

// ----- sentences -----------------------------------------------------------------------------

/// Ganin et al.'s MNIST → MNIST-M values (`reference/ganin-2016-mnist-m.json`).
#[derive(Debug, Deserialize)]
struct GaninMnistM {
    source_only: f64,
    dann: f64,
}

fn mnist_m(results: &Results) -> Result<String> {
    let sweep = Sweep::load(results, "mnist-m")?;
    let reference: GaninMnistM = results.json(&format!("{AREA}/reference/ganin-2016-mnist-m.json"))?;
    let (plain, dann) = (sweep.at(0.0)?, sweep.at(1.0)?);
    Ok(format!(
        "- MNIST → MNIST-M ({} repeats): source only {} (Ganin et al. {}), DANN\n  {} (Ganin et al. {}; \
         `results/agnostic/reference/ganin-2016-mnist-m.json`).",
        plain.count(Count::Runs)?,
        plain.ms(Reading::MnistM)?,
        short(reference.source_only),
        dann.ms(Reading::MnistM)?,
        short(reference.dann)
    ))
}

/// The first α from which G_p is at chance (its mean within 0.01 of the protected concept's
/// majority rate) in the paper's GRL on Adult, and every α from there on.
fn adult_at_chance(grl: &Sweep) -> Result<Vec<f64>> {
    let chance = grl.summary.protected_chance;
    let mut from = None;
    for a in grl.alphas() {
        if grl.at(a)?.mean(Reading::ProtectedHead)? <= chance + 0.01 {
            from = Some(a);
            break;
        }
    }
    let from = from.ok_or_else(|| missing(&grl.file, "G_p is at chance at no α"))?;
    Ok(grl.alphas().into_iter().filter(|&a| a >= from).collect())
}

fn adult_summary(results: &Results) -> Result<String> {
    let (grl, k50) = (Sweep::load(results, "adult")?, Sweep::load(results, "adult-k50")?);
    let chance = grl.summary.protected_chance;
    let later = adult_at_chance(&grl)?;
    let mut probes = Vec::new();
    for &a in &later {
        probes.push(grl.at(a)?.mean(Reading::ProbeLinear)?);
        probes.push(grl.at(a)?.mean(Reading::ProbeMlp)?);
    }
    let bits = later
        .iter()
        .map(|&a| k50.at(a)?.mean(Reading::ProbeBits))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .fold(f64::NEG_INFINITY, f64::max);
    let (zero, strong) = (grl.at(0.0)?, grl.at(0.9)?);
    let (lo, hi) = range(&probes);
    Ok(format!(
        "- Adult (sex removed from the inputs, {} repeats): the parity difference goes from {}\n  (accuracy {}) to {} \
         at α = 0.9 (accuracy {}); AIF360's published adversarial-debiasing demo, on other features, is quoted beside \
         it with its\n  source in `results/agnostic/README.md`. G_p falls to chance ({}) from α = {}, fresh probes \
         still\n  read sex at {}–{}; with 50 adversary updates per step the linear probe is at chance\n  (≤ {} bits) \
         and the MLP probe drops to {}, still above its interval.",
        zero.count(Count::Runs)?,
        n3(zero.mean(Reading::ParityGap)?),
        n3(zero.mean(Reading::Accuracy)?),
        n3(strong.mean(Reading::ParityGap)?),
        n3(strong.mean(Reading::Accuracy)?),
        fixed(chance, 2),
        short(later[0]),
        fixed(lo, 2),
        fixed(hi, 2),
        fixed(bits, 2),
        fixed(k50.at(0.9)?.mean(Reading::ProbeMlp)?, 2),
    ))
}

/// A repeat whose balanced accuracy is this close to one half predicts (nearly) one class:
/// collapsed.
const COLLAPSED_BELOW: f64 = 0.6;

/// The repeats of the best Context-MNIST sweep (`context-mnist/`) at `alpha` that collapsed.
fn collapsed_repeats(results: &Results, alpha: f64) -> Result<usize> {
    let audits = context_audits(results, "context-mnist")?;
    Ok(audits.iter().filter(|r| is(r.alpha, alpha) && r.target_accuracy.balanced < COLLAPSED_BELOW).count())
}

/// `, D of N repeats collapsed to one class` where D > 0.
fn collapsed_note(dead: usize, runs: usize) -> String {
    if dead > 0 {
        format!(", {dead} of {runs} repeats collapsed to one class")
    } else {
        String::new()
    }
}

fn context_best(results: &Results) -> Result<String> {
    let sweep = Sweep::load(results, "context-mnist")?;
    let alphas = sweep.alphas();
    let (top, below) = (alphas[alphas.len() - 1], alphas[alphas.len() - 2]);
    let (t, b) = (sweep.at(top)?, sweep.at(below)?);
    let dead = collapsed_repeats(results, top)?;
    Ok(format!(
        "reweighing + HSIC + a 64-unit bottleneck (`results/agnostic/context-mnist/`): probe {} ({} bits) at balanced \
         {} (α = {}{}), or {} at {} (α = {}), reversed {} and {}.",
        t.ms(Reading::ProbeMlp)?,
        fixed(t.mean(Reading::ProbeBits)?, 0),
        n3(t.mean(Reading::Balanced)?),
        short(top),
        collapsed_note(dead, t.count(Count::Runs)?),
        n3(b.mean(Reading::ProbeMlp)?),
        n3(b.mean(Reading::Balanced)?),
        short(below),
        n3(t.mean(Reading::Reversed)?),
        n3(b.mean(Reading::Reversed)?),
    ))
}

/// The one repeat of a `methods-trial/` folder.
fn trial(results: &Results, folder: &str) -> Result<ContextAudit> {
    let path = format!("methods-trial/{folder}");
    context_audits(results, &path)?.into_iter().next().ok_or_else(|| missing(&path, "no network"))
}

fn context_best_notes(results: &Results) -> Result<String> {
    let sweep = Sweep::load(results, "context-mnist")?;
    let grl = Sweep::load(results, "context-mnist-grl")?;
    let grl_reversed = grl.means(|a| a > 0.0, Reading::Reversed)?;
    let zero = sweep.at(0.0)?;
    let mut parts = Vec::new();
    for a in sweep.alphas().into_iter().filter(|&a| a > 0.0) {
        let v = sweep.at(a)?;
        parts.push(format!(
            "α = {}: probe {} ({} bits; linear {}) at balanced {}, reversed {}{}",
            short(a),
            n3(v.mean(Reading::ProbeMlp)?),
            fixed(v.mean(Reading::ProbeBits)?, 2),
            n3(v.mean(Reading::ProbeLinear)?),
            n3(v.mean(Reading::Balanced)?),
            n3(v.mean(Reading::Reversed)?),
            collapsed_note(collapsed_repeats(results, a)?, v.count(Count::Runs)?),
        ));
    }
    let mut levers = Vec::new();
    for (folder, label) in [
        ("rw-hsic-b64-08-s3k", "3,000 steps"),
        ("rw-hsic-b64-08-s6k", "6,000 steps"),
        ("rw-hsic-b128-09", "a 128-unit bottleneck"),
        ("rw-hsic-b64-09-batch128", "batches of 128"),
        ("rw-hsic-b64-09-leaky", "a leaky ReLU"),
    ] {
        let t = trial(results, folder)?;
        levers.push(format!(
            "{label} (α = {}) {} at {}",
            short(t.alpha),
            n3(t.probe_accuracy.mlp),
            n3(t.target_accuracy.balanced)
        ));
    }
    let mut dead = Vec::new();
    for (folder, label) in [("rw-hsic-b64-09-s4k", "4,000 steps"), ("rw-hsic-b16", "a 16-unit bottleneck")] {
        let t = trial(results, folder)?;
        if t.target_accuracy.balanced < COLLAPSED_BELOW {
            dead.push(format!("{label} (α = {})", short(t.alpha)));
        }
    }
    let (lo, hi) = range(&grl_reversed);
    Ok(format!(
        "- **What works best: reweighing + HSIC + a 64-unit bottleneck** (`context-mnist/`, {} repeats). Reweighing \
         (Kamiran & Calders) makes target and background independent in the training batches, so the target loss \
         stops rewarding the shortcut (alone, the α = 0 row: reversed {} against IID {}); a dense bottleneck gives \
         G_f a place where the background *can* be dropped while the conv maps still see it; HSIC drives it out \
         there. {} — no longer shortcut-driven: the GRL's reversed accuracy is {}–{} (`context-mnist-grl/`). \
         Single-repeat levers on it (`methods-trial/`, probe at balanced): {}; {} collapse. Each network that pushes \
         the probe lower loses accuracy or collapses: HSIC on batches of 64 with one median bandwidth runs out of \
         power while dependence remains, and the one way the penalty can always be satisfied is a dead bottleneck.",
        zero.count(Count::Runs)?,
        n3(zero.mean(Reading::Reversed)?),
        n3(zero.mean(Reading::Iid)?),
        parts.join("; "),
        fixed(lo, 2),
        fixed(hi, 2),
        levers.join("; "),
        dead.join(" and "),
    ))
}

/// The probe ladder's rungs as `hedge_agnostic::ladder` builds them (its defaults and grids),
/// with the tolerance its tests hold each rung to against scikit-learn and the audit's bar.
fn ladder_rungs() -> String {
    use hedge_agnostic::audit::{MLP_PROBE_GRID, VALIDATION_SHARE};
    use hedge_agnostic::forest::ForestConfig;
    use hedge_agnostic::ladder::{LadderConfig, QUADRATIC_WEIGHT_DECAYS, RBF_BANDWIDTHS, REFERENCE_TOLERANCE};
    let c = LadderConfig::default();
    let forest = ForestConfig::default();
    let list = |v: &[String]| v.join(" or ");
    let decays = list(&QUADRATIC_WEIGHT_DECAYS.map(|w| format!("{w:e}")));
    let bandwidths = list(&RBF_BANDWIDTHS.map(short));
    let mut widths: Vec<String> = MLP_PROBE_GRID.iter().map(|(h, _)| h.to_string()).collect();
    let mut mlp_decays: Vec<String> = MLP_PROBE_GRID.iter().map(|(_, w)| format!("{w:e}")).collect();
    widths.dedup();
    mlp_decays.sort();
    mlp_decays.dedup();
    let grid = format!("{} units × weight decay {}", list(&widths), list(&mlp_decays));
    let rows = [
        ["`linear`", "multinomial logistic regression", "—", "`LogisticRegression`"].map(String::from),
        [
            "`quadratic`".into(),
            format!(
                "logistic regression on every principal coordinate, its square, and the products of the first {}",
                c.quadratic_principal
            ),
            format!("weight decay {decays}"),
            "`PolynomialFeatures(2)` + `LogisticRegression`".into(),
        ],
        [
            "`rbf`".into(),
            format!("logistic regression on {} random Fourier features of an RBF kernel", c.fourier_features),
            format!("bandwidth: γ = {bandwidths} over the median squared distance"),
            "`SVC(kernel=\"rbf\")`, γ by cross-validation over the same grid".into(),
        ],
        ["`mlp`".into(), "one hidden ReLU layer".into(), grid, "`MLPClassifier` at the chosen width and decay".into()],
        [
            "`forest`".into(),
            format!(
                "random forest: {} trees grown to purity, √d candidate features a split, {} quantile bins a feature",
                c.forest_trees, forest.bins
            ),
            "—".into(),
            format!("`RandomForestClassifier({})`", c.forest_trees),
        ],
    ];
    let mut md = table(
        &[
            "rung",
            "probe",
            &format!("tuned on {} % of the probe-train rows", num(100.0 * VALIDATION_SHARE, 0)),
            "checked against (scikit-learn)",
        ],
        &rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>(),
    );
    md.push_str(&format!(
        "\n\nGradient-trained rungs take full-batch Adam steps, {} by default (`hedge agnostic audit --steps`, Python's \
         `steps`; a sweep's `--probe-steps`). Each rung's accuracy is \
         within {} of its scikit-learn counterpart on the same arrays (the tests). The audit passes only where every \
         rung reads at most {} more from the features than the same rung reads from G_y's logits.",
        c.steps,
        num(REFERENCE_TOLERANCE, 2),
        num(super::context::criterion::MAX_PROBE_EXCESS, 2),
    ));
    md
}

/// The plan of the ladder's sweeps and fronts: a step's label is its row in the ladder table.
const LADDER_PLAN: &str = "studies/agnostic/ladder-front.toml";

/// The ladder table's sweeps, from [`LADDER_PLAN`]: for each front in the plan's order, the best
/// method's sweep (the front's first, labelled by the front) and then the plan's sweeps it
/// lists, each labelled by its step; with the numbers the table shows for its dataset.
fn ladder_sweeps(results: &Results) -> Result<Vec<(String, String, [Reading; 2])>> {
    const CONTEXT: [Reading; 2] = [Reading::Balanced, Reading::Reversed];
    const ADULT: [Reading; 2] = [Reading::Accuracy, Reading::ParityGap];
    let path = results.path(LADDER_PLAN);
    let steps = crate::study::PlanFile::from_toml_file(&path)?.resolve(&path)?.steps;
    let prefix = format!("{AREA}/");
    let folder = |out: &str| out.strip_prefix(&prefix).unwrap_or(out).to_string();
    let mut sweeps = Vec::new();
    for front in steps.iter().filter(|s| s.command == ["agnostic", "pareto"]) {
        let listed: Vec<&str> = front.flag("sweeps").unwrap_or_default().split(',').collect();
        let step_of =
            |out: &str| steps.iter().find(|s| s.command == ["agnostic", "sweep"] && s.flag("out") == Some(out));
        let context = listed.iter().filter_map(|out| step_of(out)).any(|s| s.flag("dataset") == Some("context-mnist"));
        let readings = if context { CONTEXT } else { ADULT };
        for (i, out) in listed.iter().enumerate() {
            let label = match (i, step_of(out)) {
                (0, _) => front.label.clone(),
                (_, Some(step)) => step.label.clone(),
                (_, None) => None,
            };
            let label = label.ok_or_else(|| missing(LADDER_PLAN, format!("no label for {out}")))?;
            sweeps.push((folder(out), label, readings));
        }
    }
    Ok(sweeps)
}

/// Which rungs each method passes: per sweep with the ladder and α, the task numbers, the rungs
/// within the audit's bar of their floor, and the rung that reads most beyond its floor (means
/// over repeats).
fn ladder_passes(results: &Results) -> Result<String> {
    use hedge_agnostic::ladder::RUNGS;
    let bar = super::context::criterion::MAX_PROBE_EXCESS;
    let sweeps = ladder_sweeps(results)?;
    let mut rows = Vec::new();
    for (folder, label, [first, second]) in sweeps {
        let sweep = Sweep::load(results, &folder)?;
        for alpha in sweep.alphas() {
            let at = sweep.at(alpha)?;
            let mut excesses = Vec::new();
            for rung in RUNGS {
                excesses.push((rung, at.rung_excess(rung)?));
            }
            let within: Vec<&str> = excesses.iter().filter(|(_, e)| *e <= bar).map(|(r, _)| *r).collect();
            let (worst, e) = excesses.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)).expect("five rungs");
            rows.push(vec![
                format!("{label} (`{folder}/`)"),
                short(alpha),
                format!("{} / {}", n3(at.mean(first)?), n3(at.mean(second)?)),
                if within.is_empty() { "none".to_string() } else { within.join(", ") },
                format!("{worst} (+{})", n3(e)),
            ]);
        }
    }
    Ok(table(
        &[
            "method (folder)",
            "α",
            "balanced / reversed (Adult: accuracy / parity difference)",
            &format!("rungs within {bar} of their floor"),
            "rung furthest above its floor",
        ],
        &rows,
    ))
}

/// The probe ladder on the best method's sweep (`context-mnist/`): per α the worst rung and its
/// excess over its floor, which rungs are within the bar, and the forest's floor beside the MLP's.
fn ladder_context(results: &Results) -> Result<String> {
    use hedge_agnostic::ladder::RUNGS;
    let sweep = Sweep::load(results, "context-mnist")?;
    let bar = super::context::criterion::MAX_PROBE_EXCESS;
    let mut worst = Vec::new();
    let mut within = Vec::new();
    for alpha in sweep.alphas() {
        let at = sweep.at(alpha)?;
        let mut excesses = Vec::new();
        for rung in RUNGS {
            let e = at.rung_excess(rung)?;
            if e <= bar {
                within.push(format!("{rung} at α = {}", short(alpha)));
            }
            excesses.push((rung, e));
        }
        let (rung, e) = excesses.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)).expect("five rungs");
        worst.push(format!("{} ({rung}) at α = {}", n3(e), short(alpha)));
    }
    let top = *sweep.alphas().last().expect("a swept α");
    let t = sweep.at(top)?;
    let read = |rung: &str, side: Side| t.rung(rung, side);
    Ok(format!(
        "With the probe ladder no network of the best method's sweep passes either (`context-mnist/`, its ladder \
         table above; the excess of each rung over the same rung on G_y's logits, mean over repeats): the worst rung \
         reads {} more from the features than from the decision. Rungs within {bar} of their floor: {}. At α = {} \
         the linear rung reads {} and the forest {} from the features, and on the logits the forest reads {} where \
         the MLP reads {}: held to the strongest floor (the MLP's) rather than its own, the forest's excess would be \
         {}.",
        worst.join(", "),
        if within.is_empty() { "none".to_string() } else { within.join(", ") },
        short(top),
        n3(read("linear", Side::Features)?),
        n3(read("forest", Side::Features)?),
        n3(read("forest", Side::Decision)?),
        n3(read("mlp", Side::Decision)?),
        n3(read("forest", Side::Features)? - read("mlp", Side::Decision)?),
    ))
}

fn context_grl(results: &Results, jia: Option<&str>) -> Result<String> {
    let grl = Sweep::load(results, "context-mnist-grl")?;
    let plain = grl.at(0.0)?;
    let reversed = grl.means(|a| a >= 0.7, Reading::Reversed)?;
    let probes = grl.means(|a| a >= 0.7, Reading::ProbeMlp)?;
    let k20 = context_audits(results, "context-mnist-k20")?;
    // The first of the highest (as Python's max keeps the first).
    let mut best: Option<&ContextAudit> = None;
    for r in k20.iter().filter(|r| is(r.alpha, 0.7)) {
        if best.is_none_or(|b| r.target_accuracy.reversed > b.target_accuracy.reversed) {
            best = Some(r);
        }
    }
    let best = best.ok_or_else(|| missing("context-mnist-k20", "no network at α = 0.7"))?;
    let t = &best.target_accuracy;
    Ok(format!(
        "- Context-MNIST, the GRL with Ganin et al.'s schedule (α = 0 … 1, {} repeats; Jia et al.'s own\n  settings: \
         `results/agnostic/context-mnist-grl-paper/`{}): α = 0 leans on the background (IID\n  {}, reversed {}, flip \
         rate {}); at α ≥ 0.7 G_p is at chance but fresh MLP probes read\n  the background at {} and the reversed \
         accuracy drops to {} — the GRL's known\n  failure mode, exposed by the audit. With 20 adversary updates per \
         feature update, networks\n  either stay as before or collapse (dead features); one α = 0.7 network reaches \
         reversed {} against\n  balanced {} with flip rate {} and probes at {}/{} — better, still not at chance.{}",
        plain.count(Count::Runs)?,
        if jia.is_some() { ", below" } else { ", under way" },
        n3(plain.mean(Reading::Iid)?),
        n3(plain.mean(Reading::Reversed)?),
        n3(plain.mean(Reading::FlipRate)?),
        span2(&probes),
        span2(&reversed),
        n3(t.reversed),
        n3(t.balanced),
        n3(best.flip_rate),
        fixed(best.probe_accuracy.linear, 2),
        fixed(best.probe_accuracy.mlp, 2),
        jia.map(|j| format!("\n  {j}")).unwrap_or_default(),
    ))
}

/// The GRL sweep at Jia et al.'s settings (`context-mnist-grl-paper/`); `None` while it runs
/// (the sweep writes its summary when every network has finished).
fn jia_sweep(results: &Results) -> Result<Option<Sweep>> {
    if !results.exists(&format!("{AREA}/context-mnist-grl-paper/summary.json")) {
        return Ok(None);
    }
    Sweep::load(results, "context-mnist-grl-paper").map(Some)
}

/// Jia et al.'s reported outcome (`reference/jia-2018-experiment-2.json`).
#[derive(Debug, Deserialize)]
struct JiaExperiment2 {
    target_accuracy_after_removal: f64,
}

/// What the GRL does at Jia et al.'s own settings, beside Ganin et al.'s schedule and the
/// paper's reported outcome, wrapped at 100 columns; `None` while the sweep runs.
fn jia_settings_sentences(results: &Results, indent: &str) -> Result<Option<String>> {
    let Some(jia) = jia_sweep(results)? else { return Ok(None) };
    let ganin = Sweep::load(results, "context-mnist-grl")?;
    let paper: JiaExperiment2 = results.json(&format!("{AREA}/reference/jia-2018-experiment-2.json"))?;
    let alphas = jia.alphas();
    let each = |reading: Reading| jia.means(|_| true, reading);
    let iid = each(Reading::Iid)?;
    let gap = each(Reading::ReversedGap)?;
    let head = each(Reading::ProtectedHead)?;
    let balanced = each(Reading::Balanced)?;
    let probes = each(Reading::ProbeMlp)?;
    let excess = each(Reading::ProbeExcess)?;
    // The first lowest and the first highest, as Python's min and max keep them.
    let first_best = |values: &[f64], better: fn(f64, f64) -> bool| {
        (1..values.len()).fold(0, |best, i| if better(values[i], values[best]) { i } else { best })
    };
    let low = first_best(&head, |a, b| a < b);
    let best = first_best(&balanced, |a, b| a > b);
    let ganin_head = ganin.means(|a| a >= 0.7, Reading::ProtectedHead)?;
    let mut passed = (0, 0);
    let mut fewest_runs = usize::MAX;
    for &a in &alphas {
        let at = jia.at(a)?;
        passed.0 += at.count(Count::AgnosticRuns)?;
        passed.1 += at.count(Count::Runs)?;
        fewest_runs = fewest_runs.min(at.count(Count::Runs)?);
    }
    let text = format!(
        "At Jia et al.'s own settings ({fewest_runs} repeats) the target falls as α grows, as in their Fig. 3: IID {} \
         at α = 0, {} at α = 1 (they report {} on their own data once G_p is near chance). But G_p never gets there: \
         its lowest mean is {} (α = {}), where Ganin et al.'s schedule holds it at {} from α = 0.7 on. The best \
         balanced accuracy is {} (α = {}); fresh MLP probes read the background at {} at every α, {} above the same \
         probe on G_y's logits; {} of {} networks pass the audit. The classifier leans less on the background as α \
         grows (balanced − reversed {} at α = 0, {} at α = 1) only as it loses the digit too. The slower schedule \
         trades the GRL's failure mode (G_p fooled, the background kept) for a weaker adversary that leaves the \
         background in the features while the target is lost.",
        n3(iid[0]),
        n3(iid[iid.len() - 1]),
        fixed(paper.target_accuracy_after_removal, 2),
        n3(head[low]),
        fixed(alphas[low], 1),
        span2(&ganin_head),
        n3(balanced[best]),
        fixed(alphas[best], 1),
        span2(&probes),
        span2(&excess),
        passed.0,
        passed.1,
        n3(gap[0]),
        n3(gap[gap.len() - 1]),
    );
    Ok(Some(wrap(&text, 100, indent)))
}

fn grl_jia(results: &Results) -> Result<String> {
    Ok(jia_settings_sentences(results, "")?.unwrap_or_else(|| {
        "Jia et al.'s settings: `context-mnist-grl-paper/` is still running; this paragraph is written when its \
         summary.json exists."
            .into()
    }))
}

fn adult_best(results: &Results) -> Result<String> {
    let k50 = pareto_point(results, "adult-pareto", "adult-grl-k50", 0.9)?;
    let rw = pareto_point(results, "adult-pareto", "adult-reweigh", 0.0)?;
    let audits = tabular_audits(results, "adult-pareto/adult-grl-k50")?;
    let intervals: Vec<(f64, f64)> =
        audits.iter().filter(|a| is(a.alpha, 0.9)).map(|a| a.probe_mlp.chance_interval).collect();
    let low = intervals.iter().map(|i| i.0).fold(f64::INFINITY, f64::min);
    let high = intervals.iter().map(|i| i.1).fold(f64::NEG_INFINITY, f64::max);
    let rw_parity = needed(&rw.statistical_parity_difference, &rw, "statistical_parity_difference")?;
    Ok(format!(
        "Adult: the GRL with 50 G_p updates at α = 0.9 reaches parity\n  difference {} at accuracy {} with the tuned \
         MLP probe at {} bits (its\n  accuracy {}, still above the {}–{} chance interval); reweighing alone gives {}\n  \
         at {} without touching the features.",
        ms(&needed(&k50.statistical_parity_difference, &k50, "statistical_parity_difference")?),
        ms(&k50.usefulness),
        fixed(needed(&k50.probe_mlp_bits, &k50, "probe_mlp_bits")?.mean, 0),
        n3(k50.probe_mlp.mean),
        fixed(low, 3),
        fixed(high, 3),
        n3(rw_parity.mean),
        n3(rw.usefulness.mean),
    ))
}

fn ceiling_and_floor(results: &Results) -> Result<String> {
    let twin = [
        pareto_point(results, "context-mnist-pareto", "ctx-twin-labelled-b64", 0.3)?,
        pareto_point(results, "context-mnist-pareto", "ctx-twin-labelled-b64", 0.5)?,
    ];
    let mut sweeps: Vec<&str> = FLOOR.iter().map(|f| f.1).collect();
    sweeps.sort_unstable();
    sweeps.dedup();
    let mut good: Vec<(&str, ContextAudit)> = Vec::new();
    for sweep in sweeps {
        for r in context_audits(results, &format!("decision-floor/{sweep}"))? {
            if r.target_accuracy.balanced >= 0.90 {
                good.push((sweep, r));
            }
        }
    }
    let decision = |r: &ContextAudit| r.probe_decision.as_ref().map_or(f64::NAN, |d| d.accuracy);
    let shortcut: Vec<f64> = good.iter().filter(|(s, _)| *s != "ctx-rho05").map(|(_, r)| decision(r)).collect();
    let plain: Vec<f64> = good.iter().filter(|(s, _)| *s == "ctx-rho05").map(|(_, r)| decision(r)).collect();
    let background = |i: usize| -> Result<Vec<f64>> {
        good.iter()
            .map(|(s, r)| {
                r.accuracy_by_background
                    .map(|b| b[i])
                    .ok_or_else(|| missing(&format!("decision-floor/{s}"), "no accuracy by background"))
            })
            .collect()
    };
    Ok(format!(
        "The ceiling (twin\n  pairs, bottleneck) reaches balanced {} with the probe still at {}. Why: a probe\n  on \
         G_y's two logits alone reads the background at ≥ {} in every network with balanced\n  accuracy ≥ 0.90 ({} for \
         one trained without any shortcut, ρ = 0.5) — photographs make the\n  digit harder ({} vs {}) and the \
         decision's confidence shows it",
        span2(&twin.iter().map(|p| p.usefulness.mean).collect::<Vec<_>>()),
        span2(&twin.iter().map(|p| p.probe_mlp.mean).collect::<Vec<_>>()),
        fixed(range(&shortcut).0, 3),
        fixed(plain.iter().sum::<f64>() / plain.len() as f64, 2),
        span2(&background(1)?),
        span2(&background(0)?),
    ))
}

fn k20_networks(results: &Results) -> Result<String> {
    let file = "context-mnist-k20";
    let rows = context_audits(results, file)?;
    let plain: Vec<&ContextAudit> = rows.iter().filter(|r| r.alpha == 0.0).collect();
    let flip0 = plain.iter().map(|r| r.flip_rate).sum::<f64>() / plain.len() as f64;
    let best = context_network(&rows, file, 0.7, 0)?;
    let (x, y) = (context_network(&rows, file, 0.4, 0)?, context_network(&rows, file, 0.4, 2)?);
    let t = &best.target_accuracy;
    let (lo, hi) = best.probe_mlp.chance_interval;
    Ok([
        format!(
            "- α = 0.7, repeat 0: IID {}, balanced {}, **reversed {}** (reversed ≈ balanced ≈ IID:",
            n3(t.iid),
            n3(t.balanced),
            n3(t.reversed)
        ),
        format!(
            "  the prediction no longer follows the background), flip rate {} (α = 0: {}), mask share",
            n3(best.flip_rate),
            n3(flip0)
        ),
        format!(
            "  {} (α = 0: {}), G_p {}, but probes {} (linear) and {} (MLP): not at chance",
            n3(best.mask_share),
            n3(context_network(&rows, file, 0.0, 0)?.mask_share),
            n3(best.protected_head_accuracy),
            n3(best.probe_accuracy.linear),
            n3(best.probe_accuracy.mlp)
        ),
        format!("  (interval {}–{}).", fixed(lo, 3), fixed(hi, 3)),
        format!(
            "- α = 0.4, repeats 0 and 2: balanced {} / {} (the best of all runs), reversed {} / {},",
            n3(x.target_accuracy.balanced),
            n3(y.target_accuracy.balanced),
            n3(x.target_accuracy.reversed),
            n3(y.target_accuracy.reversed)
        ),
        format!(
            "  flip rate {} / {}, MLP probes {} / {}.",
            fixed(x.flip_rate, 2),
            fixed(y.flip_rate, 2),
            fixed(x.probe_accuracy.mlp, 2),
            fixed(y.probe_accuracy.mlp, 2)
        ),
    ]
    .join("\n"))
}

fn mnist_m_notes(results: &Results) -> Result<String> {
    let lines: Vec<SweepAudit> = results.json_lines(&format!("{AREA}/mnist-m"), "metrics.jsonl")?;
    let mut dann: Vec<f64> = lines
        .iter()
        .filter_map(|a| match a {
            SweepAudit::Domain(d) if d.alpha == 1.0 => Some(d.target_accuracy.mnist_m),
            _ => None,
        })
        .collect();
    dann.sort_by(f64::total_cmp);
    let sweep = Sweep::load(results, "mnist-m")?;
    let d = sweep.at(1.0)?;
    Ok(format!(
        "(runs {}). Our MNIST-M is rebuilt from the 200 BSDS500 training photographs with our\nown crops, not Ganin's \
         file, which is one reason the numbers need not agree exactly. DANN's\ndomain head is near chance ({}) while \
         a fresh MLP probe still tells the domains apart at\n{} — the features are better aligned, not domain-free.",
        dann.iter().map(|v| fixed(*v, 3)).collect::<Vec<_>>().join(", "),
        fixed(d.mean(Reading::ProtectedHead)?, 2),
        fixed(d.mean(Reading::ProbeMlp)?, 2),
    ))
}

fn adult_audit(results: &Results) -> Result<String> {
    let (grl, k50) = (Sweep::load(results, "adult")?, Sweep::load(results, "adult-k50")?);
    let later = adult_at_chance(&grl)?;
    let of =
        |s: &Sweep, reading: Reading| -> Result<Vec<f64>> { later.iter().map(|&a| s.at(a)?.mean(reading)).collect() };
    let (lin, mlp) = (range(&of(&grl, Reading::ProbeLinear)?), range(&of(&grl, Reading::ProbeMlp)?));
    let k_lin = range(&of(&k50, Reading::ProbeLinear)?);
    let bits = range(&of(&k50, Reading::ProbeBits)?).1;
    let high = tabular_audits(results, "adult-k50")?
        .iter()
        .map(|a| a.probe_mlp.chance_interval.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let (k_first, k_last) = (k50.at(0.0)?.mean(Reading::ProbeMlp)?, k50.at(0.9)?.mean(Reading::ProbeMlp)?);
    let start = short(later[0]);
    Ok(format!(
        "What the audit adds: G_p is at chance from α = {start} on, yet with one adversary update per step\nfresh \
         probes still read sex at {}–{} (linear) and {}–{} (MLP) — relationship and marital\nstatus carry it, and the \
         GRL only hides it from G_p. With k = 50 the **linear probe is at chance**\nfrom α = {start} ({}–{}, inside \
         the interval; information bound ≤ {} bits) and the MLP probe\nfalls from {} to {} (α = 0.9) — still {} above \
         the interval: a non-linear trace remains.",
        fixed(lin.0, 2),
        fixed(lin.1, 2),
        fixed(mlp.0, 2),
        fixed(mlp.1, 2),
        fixed(k_lin.0, 3),
        fixed(k_lin.1, 3),
        fixed(bits, 2),
        fixed(k_first, 2),
        fixed(k_last, 2),
        fixed(k_last - high, 2),
    ))
}

fn maps_summary(results: &Results) -> Result<String> {
    let file = format!("{AREA}/context-mnist-pareto/maps/maps.json");
    let m: MapsSummary = results.json(&file)?;
    let uniform = m.uniform_mask_share;
    let alive: Vec<&MapShares> = m.networks.iter().filter(|n| n.activation_mask_share >= uniform / 2.0).collect();
    const TWINS: [&str; 2] = ["ctx-twin-labelled-b64", "ctx-twin-labelled"];
    let of = |sweep: &str| alive.iter().copied().filter(|n| n.sweep == sweep).collect::<Vec<_>>();
    let rest: Vec<&MapShares> = alive.iter().copied().filter(|n| !TWINS.contains(&n.sweep.as_str())).collect();
    let rho = of("ctx-rho05").first().copied().ok_or_else(|| missing(&file, "no living ctx-rho05 network"))?;
    let activation = |nets: &[&MapShares]| nets.iter().map(|n| n.activation_mask_share).collect::<Vec<_>>();
    let gradcam = |nets: &[&MapShares]| nets.iter().map(|n| n.gradcam_mask_share).collect::<Vec<_>>();
    let twin_b64 = of(TWINS[0]);
    let both: Vec<f64> = twin_b64.iter().flat_map(|n| [n.activation_mask_share, n.gradcam_mask_share]).collect();
    Ok(format!(
        "The audit's mask share (strongest G_f response) stays at {} for every method\nthat did not collapse; \
         Grad-CAM of G_y's decision, which would show a classifier turning from\nbackground to digit, stays at {} as \
         well, against {} for a map that ignores where the\ndigit is (the masks' area): no network, including the ρ = \
         0.5 reference ({}) and the twin\nceiling ({} with the bottleneck, {} without), concentrates on the digit.",
        span2(&activation(&rest)),
        span2(&gradcam(&rest)),
        fixed(uniform, 3),
        fixed(rho.gradcam_mask_share, 3),
        span2(&both),
        span2(&gradcam(&of(TWINS[1]))),
    ))
}

/// The single network of a `context-mnist-fix-trials/<folder>` sweep at α.
fn fix_trial(results: &Results, folder: &str, alpha: f64) -> Result<ContextAudit> {
    let path = format!("context-mnist-fix-trials/{folder}");
    context_audits(results, &path)?
        .into_iter()
        .find(|r| is(r.alpha, alpha))
        .ok_or_else(|| missing(&path, format!("no network at α = {alpha}")))
}

fn fix_trials(results: &Results) -> Result<String> {
    let k10 = fix_trial(results, "reversal-k10", 0.7)?;
    let c3 = fix_trial(results, "confusion-k3", 0.3)?;
    let mut leaky = Vec::new();
    for folder in ["leaky0.1-k5", "leaky0.1-k20"] {
        for a in [0.5, 0.7] {
            leaky.push(fix_trial(results, folder, a)?);
        }
    }
    let probes = range(&leaky.iter().map(|r| r.probe_accuracy.mlp).collect::<Vec<_>>());
    Ok(format!(
        "The other fixes tried on single networks (`context-mnist-fix-trials/`) fall on the same two\nsides: k = 10 at \
         α = 0.7 (adversary wins, G_p {}), k = 50 at α = 0.7 and the confusion loss\nwith k = 10 at α = 0.5/0.7 or k = \
         3 at α = 0.5/0.7 (collapse), the confusion loss with k = 3 at\nα = 0.3 (IID {}, reversed {}, probes {}), k = 50 \
         at α = 0.3 (adversary wins). A leaky\nG_f (`--negative-slope 0.1`, k = 5 or 20, α = 0.5/0.7) never collapses \
         but the background stays\nreadable (MLP probes {}–{}, reversed {}): the collapse was the only way these\n\
         adversaries reached chance.",
        fixed(k10.protected_head_accuracy, 2),
        fixed(c3.target_accuracy.iid, 2),
        fixed(c3.target_accuracy.reversed, 2),
        fixed(c3.probe_accuracy.mlp, 2),
        fixed(probes.0, 3),
        fixed(probes.1, 3),
        span2(&leaky.iter().map(|r| r.target_accuracy.reversed).collect::<Vec<_>>()),
    ))
}

fn adult_chance(results: &Results) -> Result<String> {
    let chance = Sweep::load(results, "adult")?.summary.protected_chance;
    let first =
        tabular_audits(results, "adult-k50")?.into_iter().next().ok_or_else(|| missing("adult-k50", "no network"))?;
    let (lo, hi) = first.probe_mlp.chance_interval;
    Ok(format!("{}\n(interval {}–{}).", fixed(chance, 3), fixed(lo, 3), fixed(hi, 3)))
}

/// LEACE's effect on the two backgrounds' feature means, from the held-out rows of
/// `methods-trial/leace-ctx5/class-mean-gap.log` (before erasure, then after).
fn leace_gap(results: &Results) -> Result<String> {
    let file = format!("{AREA}/methods-trial/leace-ctx5/class-mean-gap.log");
    let text = results.text(&file)?;
    let number = |s: &str| -> Option<f64> {
        s.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect::<String>().parse().ok()
    };
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(i) = line.find("held-out rows ") else { continue };
        let rest = &line[i + "held-out rows ".len()..];
        let gap = number(rest);
        let spread = rest.find("(feature spread ").and_then(|j| number(&rest[j + "(feature spread ".len()..]));
        if let (Some(g), Some(s)) = (gap, spread) {
            found.push((g, s));
        }
    }
    let [(before, _), (after, spread)] = found[..] else {
        return Err(missing(&file, "not two lines of held-out rows (before and after erasure)"));
    };
    Ok(format!(
        "from {} to {} (feature spread {}, i.e. {} % of the mean difference gone).",
        fixed(before, 2),
        fixed(after, 2),
        fixed(spread, 1),
        fixed(100.0 * (1.0 - after / before), 0)
    ))
}
