//! The Pareto front of concept removal: every method and strength of several finished sweeps on
//! one dataset, usefulness (balanced accuracy on Context-MNIST, accuracy on Adult) against what
//! the tuned MLP probe still reads, in one table and one figure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hedge_eval::MeanStd;
use hedge_run::RunDirectory;
use serde::{Deserialize, Serialize};

use crate::agnostic::sweep::{SweepAudit, SweepConfig, SweepDataset, CONFIG_FILE, METRICS_FILE};
use crate::error::{invalid, Result};
use hedge_agnostic::erasure::Removal;

/// A mean and sample standard deviation over repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub mean: f64,
    /// `None` (`null`) over one repeat: a spread needs two.
    pub std: Option<f64>,
}

impl Spread {
    fn of(values: &[f64]) -> Self {
        let m = MeanStd::of(values);
        Spread { mean: m.mean, std: (m.n >= 2).then_some(m.std) }
    }
}

/// One method at one strength, over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParetoPoint {
    pub method: String,
    /// α: the adversary's weight, or the erasure strength.
    pub alpha: f64,
    pub runs: usize,
    /// Context-MNIST: balanced-test accuracy; Adult: test accuracy.
    pub usefulness: Spread,
    /// Context-MNIST: worst (digit, background) group accuracy; Adult: worst (income, sex) group.
    pub worst_group_accuracy: Spread,
    pub probe_mlp: Spread,
    /// The tuned MLP probe's information bound H(A) − cross-entropy (bits; 0 = no better than the
    /// label entropy). Absent from summaries written before it was reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_mlp_bits: Option<Spread>,
    pub probe_linear: Spread,
    /// Context-MNIST only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reversed_accuracy: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask_share: Option<Spread>,
    /// Context-MNIST: the tuned MLP probe on G_y's logits (a floor under `probe_mlp` for these
    /// classifiers); absent where an audit predates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_decision: Option<Spread>,
    /// Adult only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistical_parity_difference: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equalised_odds_difference: Option<Spread>,
    /// The probe ladder's worst excess over its decision floor (the largest, over rungs, of a
    /// rung's accuracy on the features minus the same rung's on G_y's logits); absent unless
    /// every repeat was audited with the ladder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder_worst_excess: Option<Spread>,
    /// The method without its strength parameters (an eraser's kind, or the adversary's label):
    /// the points of one family form one curve of `ladder-front.png`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub family: String,
    /// A reference (trained without the shortcut), shown but kept off the front.
    #[serde(default)]
    pub reference: bool,
    /// Whether the MLP probe stayed inside its chance interval in every repeat.
    pub probe_at_chance_every_run: bool,
    /// The sweep folder it came from.
    pub sweep: String,
}

/// `pareto.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParetoSummary {
    pub dataset: String,
    /// The protected concept's majority rate on the probe-test split.
    pub protected_chance: f64,
    pub points: Vec<ParetoPoint>,
    /// Points no other point beats on both axes (higher usefulness, lower MLP probe accuracy).
    pub front: Vec<usize>,
    /// Among the points audited with the probe ladder, those no other beats on usefulness and the
    /// ladder's worst excess over its floor.
    #[serde(default)]
    pub ladder_front: Vec<usize>,
}

/// A sweep's method in words: the adversary (with its extra updates and resets) or the eraser.
pub fn method_label(config: &SweepConfig) -> String {
    if config.removal != Removal::Adversary {
        let t = &config.train;
        return if t.erase_on_alpha > 0.0 {
            format!("{} on {} at α = {}", config.removal.name(), config.adversary_label(), t.erase_on_alpha)
        } else {
            config.removal.name()
        };
    }
    config.adversary_label()
}

/// Reads every sweep in `sweeps` (all on one dataset), writes `pareto.json`, `pareto.md` and
/// `pareto.png` into `out` and returns the summary.
/// The files [`pareto`] writes into its output folder.
pub const PARETO_FILES: [&str; 6] =
    ["pareto.json", "pareto.md", "pareto.png", "parity.png", "odds.png", "ladder-front.png"];

pub fn pareto(sweeps: &[PathBuf], out: &Path, overwrite: bool) -> Result<ParetoSummary> {
    if sweeps.is_empty() {
        return Err(invalid("sweeps", "none", "give at least one sweep folder"));
    }
    let mut points = Vec::new();
    let mut dataset: Option<SweepDataset> = None;
    let mut chance = f64::NAN;
    for sweep in sweeps {
        let dir = RunDirectory::open(sweep)?;
        let config: SweepConfig = dir.read_json(CONFIG_FILE)?;
        match dataset {
            Some(d) if d != config.dataset => {
                return Err(invalid(
                    "sweeps",
                    sweep.display(),
                    format!("is a {} sweep; the others are {}", config.dataset.name(), d.name()),
                ))
            }
            _ => dataset = Some(config.dataset),
        }
        let audits: Vec<SweepAudit> = dir.checkpointed_json_lines(METRICS_FILE)?;
        let method = method_label(&config);
        let mut by_alpha: BTreeMap<String, (f64, Vec<&SweepAudit>)> = BTreeMap::new();
        for a in &audits {
            by_alpha.entry(crate::agnostic::sweep::alpha_key(a.alpha())).or_insert((a.alpha(), Vec::new())).1.push(a);
        }
        // An eraser's family: its kind and its settings other than the strength knobs.
        let family = match &config.removal {
            Removal::Erase(spec) => {
                let mut family = spec.kind.clone();
                for (key, value) in spec.params.iter().filter(|(k, _)| !matches!(k.as_str(), "rounds" | "iterations")) {
                    family.push_str(&format!(" {key}={value}"));
                }
                if config.train.erase_on_alpha > 0.0 {
                    family.push_str(&format!(
                        " on {} at α = {}",
                        config.adversary_label(),
                        config.train.erase_on_alpha
                    ));
                }
                family
            }
            Removal::Adversary => method.clone(),
        };
        for (alpha, runs) in by_alpha.into_values() {
            let mut p = point(&method, alpha, &runs, sweep, &mut chance)?;
            p.reference = config.reference_rho().is_some();
            p.family = family.clone();
            points.push(p);
        }
    }
    let dataset = dataset.expect("at least one sweep");
    points.sort_by(|a, b| a.method.cmp(&b.method).then(a.alpha.total_cmp(&b.alpha)));
    let methods: Vec<usize> = (0..points.len()).filter(|&i| !points[i].reference).collect();
    let front: Vec<usize> =
        front(&methods.iter().map(|&i| (points[i].usefulness.mean, points[i].probe_mlp.mean)).collect::<Vec<_>>())
            .into_iter()
            .map(|k| methods[k])
            .collect();
    let laddered: Vec<usize> = methods.iter().copied().filter(|&i| points[i].ladder_worst_excess.is_some()).collect();
    let ladder_front: Vec<usize> = self::front(
        &laddered
            .iter()
            .map(|&i| (points[i].usefulness.mean, points[i].ladder_worst_excess.expect("filtered").mean))
            .collect::<Vec<_>>(),
    )
    .into_iter()
    .map(|k| laddered[k])
    .collect();
    let summary =
        ParetoSummary { dataset: dataset.name().to_string(), protected_chance: chance, points, front, ladder_front };
    // The front is often written beside its sweeps, in a folder hedge did not make: only its own
    // files are replaced there, and only with --overwrite.
    hedge_run::atomic::prepare_report_files(out, &PARETO_FILES, overwrite)?;
    let json = serde_json::to_vec_pretty(&summary).expect("a summary serialises");
    hedge_run::write_atomic(&out.join("pareto.json"), &json)?;
    hedge_run::write_atomic(&out.join("pareto.md"), markdown(&summary, dataset).as_bytes())?;
    // The decision probe (where audited) as its own series beside each method: the floor under
    // the feature probe.
    let decision_names: BTreeMap<&str, String> = summary
        .points
        .iter()
        .filter(|p| p.probe_decision.is_some())
        .map(|p| (p.method.as_str(), format!("{}: probe on G_y's logits", p.method)))
        .collect();
    let mut series: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for p in &summary.points {
        series.entry(&p.method).or_default().push((p.probe_mlp.mean, p.usefulness.mean));
        if let (Some(d), Some(name)) = (&p.probe_decision, decision_names.get(p.method.as_str())) {
            series.entry(name.as_str()).or_default().push((d.mean, p.usefulness.mean));
        }
    }
    let mut series: Vec<(&str, Vec<(f64, f64)>)> = series.into_iter().collect();
    // The chance line spans the points' usefulness only, so the axis keeps their scale.
    let (lo, hi) = summary
        .points
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.usefulness.mean), hi.max(p.usefulness.mean)));
    series.push(("chance (probe)", vec![(chance, lo - 0.01), (chance, hi + 0.01)]));
    let (y_desc, title) = match dataset {
        SweepDataset::Adult => ("test accuracy", "Adult: accuracy against what the tuned MLP probe reads (sex)"),
        SweepDataset::Table => ("test accuracy", "Table: accuracy against what the tuned MLP probe reads (protected)"),
        _ => ("balanced-test accuracy", "Context-MNIST: balanced accuracy against what the tuned MLP probe reads"),
    };
    hedge_plot::line_chart_in(
        &out.join("pareto.png"),
        &series,
        "tuned MLP probe accuracy (lower: less readable)",
        y_desc,
        title,
        (lo - 0.02, hi + 0.02),
        emptiest_corner(&series, (lo - 0.02, hi + 0.02)),
    )?;
    ladder_chart(&summary, y_desc, out)?;
    if matches!(dataset, SweepDataset::Adult | SweepDataset::Table) {
        fairness_chart(&summary, dataset, Gap::Parity, out)?;
        fairness_chart(&summary, dataset, Gap::EqualisedOdds, out)?;
    }
    Ok(summary)
}

/// Where the legend hides the fewest points: the box a legend of these series takes (≈ 7 px per
/// character of the longest label and 20 px per entry on the 900 × 560 chart, as a share of the
/// axes) is tried in four corners and at mid-height on either side; ties go to the first, the
/// lower left, where collapsed networks are rarest on these fronts.
fn emptiest_corner(series: &[(&str, Vec<(f64, f64)>)], y_range: (f64, f64)) -> hedge_plot::SeriesLabelPosition {
    use hedge_plot::SeriesLabelPosition as Place;
    let points: Vec<(f64, f64)> = series.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    let (x0, x1) = points.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = y_range;
    let longest = series.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0);
    let w = ((longest * 7 + 50) as f64 / 830.0).min(1.0) * (x1 - x0);
    let h = ((series.len() * 20 + 20) as f64 / 460.0).min(1.0) * (y1 - y0);
    let mid = 0.5 * (y0 + y1);
    // (place, box on the left?, box's vertical span)
    let places = [
        (Place::LowerLeft, true, (y0, y0 + h)),
        (Place::LowerRight, false, (y0, y0 + h)),
        (Place::UpperRight, false, (y1 - h, y1)),
        (Place::UpperLeft, true, (y1 - h, y1)),
        (Place::MiddleRight, false, (mid - h / 2.0, mid + h / 2.0)),
        (Place::MiddleLeft, true, (mid - h / 2.0, mid + h / 2.0)),
    ];
    let covered = |left: bool, (lo, hi): (f64, f64)| {
        points.iter().filter(|(x, y)| (if left { *x <= x0 + w } else { *x >= x1 - w }) && (lo..=hi).contains(y)).count()
    };
    places
        .into_iter()
        .min_by_key(|&(_, left, span)| covered(left, span))
        .map(|(place, _, _)| place)
        .expect("six places")
}

/// `ladder-front.png`: usefulness against the probe ladder's worst excess over its decision floor,
/// one curve per method family (its strengths in order of the excess), with the audit's bar.
/// Nothing is drawn (and an earlier figure is left out) without laddered points.
fn ladder_chart(summary: &ParetoSummary, y_desc: &str, out: &Path) -> Result<()> {
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in summary.points.iter().filter(|p| !p.reference) {
        if let Some(e) = p.ladder_worst_excess {
            let name = if p.family.is_empty() { p.method.clone() } else { p.family.clone() };
            series.entry(name).or_default().push((e.mean, p.usefulness.mean));
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    let mut series: Vec<(String, Vec<(f64, f64)>)> = series.into_iter().collect();
    for (_, points) in &mut series {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let bar = super::context::criterion::MAX_PROBE_EXCESS;
    series.push((format!("the audit's bar ({bar})"), vec![(bar, lo - 0.01), (bar, hi + 0.01)]));
    let series: Vec<(&str, Vec<(f64, f64)>)> = series.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    hedge_plot::line_chart_in(
        &out.join("ladder-front.png"),
        &series,
        "probe ladder: worst rung's accuracy on the features − on G_y's logits (lower: less beyond the decision)",
        y_desc,
        &format!("{}: usefulness against the probe ladder's worst excess over its floor", summary.dataset),
        (lo - 0.02, hi + 0.02),
        emptiest_corner(&series, (lo - 0.02, hi + 0.02)),
    )?;
    Ok(())
}

/// A fairness gap on the x axis of `parity.png` / `odds.png`.
#[derive(Clone, Copy, PartialEq)]
enum Gap {
    Parity,
    EqualisedOdds,
}

/// `parity.png` and `odds.png`: accuracy against the statistical-parity difference and against
/// the equalised-odds difference, every method and strength, the 0.05 band, and (Adult)
/// AIF360's adversarial debiasing demo before and after (parity only: the demo reports no odds).
fn fairness_chart(summary: &ParetoSummary, dataset: SweepDataset, gap: Gap, out: &Path) -> Result<()> {
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in &summary.points {
        let value = match gap {
            Gap::Parity => &p.statistical_parity_difference,
            Gap::EqualisedOdds => &p.equalised_odds_difference,
        };
        if let Some(value) = value {
            series.entry(p.method.clone()).or_default().push((value.mean, p.usefulness.mean));
        }
    }
    let (lo, hi) = summary
        .points
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.usefulness.mean), hi.max(p.usefulness.mean)));
    let mut series: Vec<(String, Vec<(f64, f64)>)> = series.into_iter().collect();
    let aif360 = dataset == SweepDataset::Adult && gap == Gap::Parity;
    if aif360 {
        series.push(("AIF360 adversarial debiasing (demo)".into(), vec![(-0.221, 0.805), (-0.095, 0.792)]));
    }
    let lo = if aif360 { lo.min(0.79) } else { lo };
    let (file, x_desc, band, title) = match gap {
        Gap::Parity => (
            "parity.png",
            "statistical-parity difference P(ŷ = 1 | protected = 1) − P(ŷ = 1 | protected = 0)",
            "|parity difference| = 0.05",
            "accuracy against the statistical-parity difference",
        ),
        Gap::EqualisedOdds => (
            "odds.png",
            "equalised-odds difference (the larger gap in true- or false-positive rate)",
            "equalised-odds difference = 0.05",
            "accuracy against the equalised-odds difference",
        ),
    };
    series.push((band.into(), vec![(0.05, lo - 0.01), (0.05, hi + 0.01)]));
    if gap == Gap::Parity {
        series.push((String::new(), vec![(-0.05, lo - 0.01), (-0.05, hi + 0.01)]));
    }
    let series: Vec<(&str, Vec<(f64, f64)>)> = series.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    hedge_plot::line_chart_in(
        &out.join(file),
        &series,
        x_desc,
        "test accuracy",
        title,
        (lo - 0.01, hi + 0.01),
        hedge_plot::SeriesLabelPosition::MiddleRight,
    )?;
    Ok(())
}

/// Indices of the points (usefulness, probe accuracy) that no other point dominates: at least
/// as useful and at most as readable, and strictly better in one of the two.
pub fn front(points: &[(f64, f64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (u, r) = points[i];
            !points.iter().any(|&(qu, qr)| qu >= u && qr <= r && (qu > u || qr < r))
        })
        .collect()
}

fn point(method: &str, alpha: f64, runs: &[&SweepAudit], sweep: &Path, chance: &mut f64) -> Result<ParetoPoint> {
    let of = |f: &dyn Fn(&SweepAudit) -> f64| Spread::of(&runs.iter().map(|a| f(a)).collect::<Vec<_>>());
    let mlp = |a: &SweepAudit| match a {
        SweepAudit::Context(c) => c.probe_mlp,
        SweepAudit::Tabular(t) => t.probe_mlp,
        SweepAudit::Domain(d) => d.probe_mlp,
    };
    let linear = |a: &SweepAudit| match a {
        SweepAudit::Context(c) => c.probe_linear.accuracy,
        SweepAudit::Tabular(t) => t.probe_linear.accuracy,
        SweepAudit::Domain(d) => d.probe_linear.accuracy,
    };
    *chance = mlp(runs[0]).chance;
    // A Context-MNIST number over the runs: None unless every run is a Context-MNIST audit that
    // has it (older audits lack the numbers added later).
    let context_if = |f: &dyn Fn(&super::context::ContextAudit) -> Option<f64>| {
        let v: Option<Vec<f64>> =
            runs.iter().map(|a| if let SweepAudit::Context(c) = a { f(c) } else { None }).collect();
        v.map(|v| Spread::of(&v))
    };
    let context = |f: &dyn Fn(&super::context::ContextAudit) -> f64| context_if(&|c| Some(f(c)));
    let tabular = |f: &dyn Fn(&super::fairness::FairnessAudit) -> f64| {
        let v: Option<Vec<f64>> =
            runs.iter().map(|a| if let SweepAudit::Tabular(t) = a { Some(f(t)) } else { None }).collect();
        v.map(|v| Spread::of(&v))
    };
    let usefulness = context(&|c| c.target_accuracy.balanced)
        .or_else(|| tabular(&|t| t.accuracy))
        .ok_or_else(|| invalid("sweep", sweep.display(), "MNIST -> MNIST-M sweeps have no Pareto front here"))?;
    let worst = context(&|c| c.worst_group_accuracy).or_else(|| tabular(&|t| t.worst_group_accuracy)).expect("checked");
    Ok(ParetoPoint {
        method: method.to_string(),
        alpha,
        runs: runs.len(),
        usefulness,
        worst_group_accuracy: worst,
        probe_mlp: of(&|a| mlp(a).accuracy),
        probe_mlp_bits: Some(of(&|a| mlp(a).mutual_information_bits)),
        probe_linear: of(&linear),
        reversed_accuracy: context(&|c| c.target_accuracy.reversed),
        mask_share: context(&|c| c.mask_share),
        probe_decision: context_if(&|c| c.probe_decision.map(|p| p.accuracy)),
        ladder_worst_excess: {
            let v: Option<Vec<f64>> = runs
                .iter()
                .map(|a| match a {
                    SweepAudit::Context(c) => c.ladder_worst_excess(),
                    SweepAudit::Tabular(t) => t.ladder.as_ref().and_then(|l| l.worst_excess()),
                    SweepAudit::Domain(_) => None,
                })
                .collect();
            v.map(|v| Spread::of(&v))
        },
        family: String::new(),
        statistical_parity_difference: tabular(&|t| t.demographic_parity_difference),
        equalised_odds_difference: tabular(&|t| t.equalised_odds_difference),
        reference: false,
        probe_at_chance_every_run: runs.iter().all(|a| mlp(a).at_chance),
        sweep: sweep.display().to_string(),
    })
}

fn cell(s: &Spread) -> String {
    hedge_eval::plus_minus(s.mean, s.std, 3, false, "1 repeat")
}

fn markdown(s: &ParetoSummary, dataset: SweepDataset) -> String {
    let adult = matches!(dataset, SweepDataset::Adult | SweepDataset::Table);
    let mut md = format!(
        "Pareto front, {}: every method and strength (mean ± std over repeats). Usefulness: {}; \
         probes read the protected concept from the features on disjoint rows (chance {:.3}); \
         the MLP probe is the best of a hidden-size × weight-decay grid chosen on a validation split. \
         ★: on the front (no other point is both more useful and less readable).\n\n",
        s.dataset,
        if adult { "test accuracy" } else { "balanced-test accuracy" },
        s.protected_chance
    );
    md.push_str(if adult {
        "| method | α | runs | accuracy | worst group | MLP probe | MLP probe bits | linear probe | parity difference | equalised odds | front |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    } else {
        "| method | α | runs | balanced | reversed | worst group | MLP probe | MLP probe bits | linear probe | MLP probe on G_y's logits | mask share | front |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    });
    let laddered = s.points.iter().any(|p| p.ladder_worst_excess.is_some());
    if laddered {
        // The ladder's column goes before the front's, in the header and its rule.
        let at = md.rfind("| front |").expect("a header");
        md.replace_range(at..at + "| front |".len(), "| ladder: worst excess over the floor | front |");
        let rule_end = md.len() - 1;
        md.insert_str(rule_end, "---|");
    }
    for (i, p) in s.points.iter().enumerate() {
        let star = if s.front.contains(&i) { "★" } else { "" };
        let chance_mark = if p.probe_at_chance_every_run { " (at chance)" } else { "" };
        let opt = |o: &Option<Spread>| o.as_ref().map_or("–".to_string(), cell);
        let probe = format!("{}{chance_mark}", cell(&p.probe_mlp));
        let cells: Vec<String> = if adult {
            vec![
                cell(&p.usefulness),
                cell(&p.worst_group_accuracy),
                probe,
                opt(&p.probe_mlp_bits),
                cell(&p.probe_linear),
                opt(&p.statistical_parity_difference),
                opt(&p.equalised_odds_difference),
            ]
        } else {
            vec![
                cell(&p.usefulness),
                opt(&p.reversed_accuracy),
                cell(&p.worst_group_accuracy),
                probe,
                opt(&p.probe_mlp_bits),
                cell(&p.probe_linear),
                opt(&p.probe_decision),
                opt(&p.mask_share),
            ]
        };
        let mut cells = cells;
        if laddered {
            cells.push(opt(&p.ladder_worst_excess));
        }
        md.push_str(&format!("| {} | {} | {} | {} | {star} |\n", p.method, p.alpha, p.runs, cells.join(" | ")));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use hedge_agnostic::train::Adversary;
    use hedge_agnostic::TrainConfig;

    #[test]
    fn the_front_keeps_only_undominated_points() {
        // (usefulness, probe accuracy): 1 dominates 0; 2 and 3 trade off; 4 ties 3 exactly.
        let points = [(0.80, 0.99), (0.85, 0.95), (0.90, 0.97), (0.70, 0.60), (0.70, 0.60), (0.60, 0.70)];
        assert_eq!(front(&points), vec![1, 2, 3, 4]);
    }

    /// A sweep's settings with `train` and `removal` as given, the rest defaults.
    fn sweep_config(train: TrainConfig, removal: Removal) -> SweepConfig {
        let mut config: SweepConfig =
            serde_json::from_str(include_str!("../../../../results/agnostic/kernel-front/ctx-kernel-r2/config.json"))
                .unwrap();
        config.train = train;
        config.removal = removal;
        config
    }

    /// An eraser alone is named by its kind and parameters; stacked on an adversarially trained
    /// network, by the network's method and α too; and a sweep's config written before the
    /// setting existed reads as a plain network (α 0).
    #[test]
    fn a_stacked_eraser_names_the_network_it_erases() {
        let kernel = Removal::Erase(hedge_agnostic::eraser::EraserSpec::new("kernel").with("rounds", 2));
        let plain = sweep_config(TrainConfig::default().with_reweighing(true), kernel.clone());
        assert_eq!(plain.train.erase_on_alpha, 0.0, "the committed sweep predates the setting");
        assert_eq!(method_label(&plain), "kernel-2");
        let stacked =
            TrainConfig::default().with_adversary(Adversary::Hsic).with_reweighing(true).with_erase_on_alpha(0.9);
        let label = method_label(&sweep_config(stacked, kernel));
        assert_eq!(label, "kernel-2 on hsic, reweighed, 64-unit bottleneck at α = 0.9");
    }
}
