//! HIB fragments (`results/hib/report/<name>.md`), read from the runs' typed files:
//! `eval*.json` ([`EvalReport`]), `curve*.json` ([`CurvePoint`]), `state.json` ([`RunState`]),
//! `config.json` ([`RunConfig`]), `metrics.jsonl` ([`StepMetrics`]), a table's `summary.json`
//! (the paper's values it records), identification summaries ([`SearchSummary`]) and search benchmarks
//! ([`SearchBenchRow`]).
//!
//! The first reproduction's experiments (`open-set/paper-recipe-4k/`), the split curves, HIB on
//! a user's own images and identification with abstention (`results/own-data/`), and the
//! paper-schedule GPU run. The tables of the lever studies and the instance tables are still
//! written by `scripts/readme_blocks/hib.py`.

use std::collections::{BTreeMap, BTreeSet};

use hedge_embed::loss::ClosedForm;
use hedge_embed::report::{CurvePoint, EvalReport, TwinStats, VerificationStats};
use hedge_embed::run::{RunConfig, RunState, StepMetrics};
use hedge_embed::OwnSplit;
use hedge_identify::{Abstention, ExactSearchBenchRow, SearchBenchRow, SearchSpace, SearchSummary};
use serde::Deserialize;

use super::paper::{CleanCorrupt, PaperModel};
use crate::report::format::{fixed, table, thousands, thousands_fixed};
use crate::report::fragment::{missing, Fragment, Results};
use crate::Result;

const HIB: &str = "results/hib";
const RECIPE_4K: &str = "results/hib/open-set/paper-recipe-4k";
const EXPERIMENTS: &str = "results/hib/open-set/paper-recipe-4k/n2-d2/experiments";
const IDENT: &str = "results/own-data/identification";
const IDENT_RUNS: [&str; 3] = ["fashion-mnist-d8-split1", "fashion-mnist-d8", "fashion-mnist-d2"];
const CELL_NAMES: [&str; 4] = ["AP clean", "AP corrupt", "KNN clean", "KNN corrupt"];

/// The HIB fragments of this module (the tables' are `report_tables`'s, the side-by-side's
/// `side_by_side`'s; [`crate::report::fragments`] gathers all three).
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    let r = results;
    let pairs: Vec<(&str, String)> = vec![
        ("experiments-4k", experiments_4k(r)?),
        ("grouped-vs-paper", grouped_vs_paper(r)?),
        ("grouped-curves", grouped_curves(r)?),
        ("split-curves", split_curves(r)?),
        ("split-stats", split_stats(r)?),
        ("own-data", own_data(r)?),
        ("identification", identification(r)?),
        ("identification-aurc", identification_aurc(r)?),
        ("bench-search", bench_search(r)?),
        ("bench-search-sentence", bench_search_sentence(r)?),
        ("quadrature-error", quadrature_error(r)?),
        ("paper-schedule-gpu", paper_schedule_gpu(r)?),
        ("paper-schedule-gpu-trend", paper_schedule_gpu_trend(r)?),
        ("head-scale", head_scale(r)?),
        ("which-split", which_split(r)?),
        ("protocol-pairs", protocol_pairs(r)?),
        ("corrupt-drop", corrupt_drop(r)?),
        ("pairing-drop", pairing_drop(r)?),
    ];
    let mut fragments: Vec<Fragment> = pairs.into_iter().map(|(name, text)| Fragment::new("hib", name, text)).collect();
    // `hedge bench exact-search --loss NAME` of every closed form with an exact space, where run.
    for form in hedge_embed::losses::closed_forms() {
        let space = SearchSpace::Exact(form);
        if space != SearchSpace::for_matching(hedge_embed::loss::Matching::ClosedForm(form))
            || !r.path(&exact_search_file(form)).is_file()
        {
            continue;
        }
        let name = format!("bench-{}-search", form.name);
        fragments.push(Fragment::new("hib", &name, bench_exact_search(r, form)?));
        fragments.push(Fragment::new("hib", &format!("{name}-sentence"), bench_exact_search_sentence(r, form)?));
    }
    Ok(fragments)
}

// ----- the four Table 1 numbers --------------------------------------------------------------

/// AP clean, AP corrupt, KNN clean, KNN corrupt of a report, a curve point, a table's model or
/// the paper.
pub(super) fn four(ap: &VerificationStats, knn: &TwinStats) -> [f64; 4] {
    let v = |x: Option<f64>| x.unwrap_or(f64::NAN);
    [v(ap.clean), v(ap.corrupt), v(knn.clean), v(knn.corrupt)]
}

pub(super) fn four_paper(p: &PaperModel) -> [f64; 4] {
    [p.verification_ap.clean, p.verification_ap.corrupt, p.knn_accuracy.clean, p.knn_accuracy.corrupt]
}

pub(super) fn four_eval(e: &EvalReport) -> [f64; 4] {
    four(&e.verification_ap, &e.knn_accuracy)
}

fn four_curve(c: &CurvePoint) -> [f64; 4] {
    four(&c.verification_ap, &c.knn_accuracy)
}

/// The four numbers with three decimals (`dot`: without the leading zero, `.959`).
pub(super) fn cells4(values: [f64; 4], dot: bool) -> Vec<String> {
    values
        .iter()
        .map(|v| {
            let text = fixed(*v, 3);
            if dot {
                text[1..].to_string()
            } else {
                text
            }
        })
        .collect()
}

fn slashed(values: [f64; 4]) -> String {
    cells4(values, true).join(" / ")
}

/// `clean / corrupt` of a τ with three decimals and a typographic minus.
fn tau(t: &TwinStats) -> String {
    format!("{} / {}", fixed(t.clean.unwrap_or(f64::NAN), 3), fixed(t.corrupt.unwrap_or(f64::NAN), 3)).replace('-', "−")
}

/// `clean / corrupt` of a pair of numbers with three decimals.
fn pair(clean: Option<f64>, corrupt: Option<f64>) -> String {
    format!("{} / {}", fixed(clean.unwrap_or(f64::NAN), 3), fixed(corrupt.unwrap_or(f64::NAN), 3))
}

/// The part of a table's `summary.json` (`hib::summary::ReproduceSummary`) that every version of it holds:
/// the paper's Table 1 entries beside it (the first tables predate fields such as `extra_seeds`).
#[derive(Debug, Deserialize)]
struct TablePaper {
    paper: Option<BTreeMap<String, PaperModel>>,
}

/// The paper's Table 1 entries `folder/summary.json` records, if it records them.
pub(super) fn table_paper(results: &Results, folder: &str) -> Result<Option<BTreeMap<String, PaperModel>>> {
    Ok(results.json::<TablePaper>(&format!("{folder}/summary.json"))?.paper)
}

/// The paper's Table 1 entries a table's `summary.json` records.
fn paper_of(results: &Results, folder: &str) -> Result<BTreeMap<String, PaperModel>> {
    table_paper(results, folder)?.ok_or_else(|| missing(&format!("{folder}/summary.json"), "no paper values"))
}

fn paper_model<'a>(paper: &'a BTreeMap<String, PaperModel>, model: &str) -> Result<&'a PaperModel> {
    paper.get(model).ok_or_else(|| missing("summary.json", format!("no paper values for {model}")))
}

/// The rows of a `curve.json` by step (a later row of the same step replaces an earlier one).
fn curve_by_step(results: &Results, file: &str) -> Result<BTreeMap<usize, CurvePoint>> {
    let rows: Vec<CurvePoint> = results.json(file)?;
    Ok(rows.into_iter().map(|r| (r.step, r)).collect())
}

/// `| step | a / b / c / d | ... |` rows, one column per curve file, over the union of their
/// steps (a column is empty where its run kept no copy).
fn curve_rows(results: &Results, files: &[String]) -> Result<Vec<String>> {
    let columns: Vec<BTreeMap<usize, CurvePoint>> =
        files.iter().map(|f| curve_by_step(results, f)).collect::<Result<_>>()?;
    let steps: BTreeSet<usize> = columns.iter().flat_map(|c| c.keys().copied()).collect();
    Ok(steps
        .iter()
        .map(|s| {
            let cells: Vec<String> =
                columns.iter().map(|c| c.get(s).map(|r| slashed(four_curve(r))).unwrap_or_default()).collect();
            format!("| {} | {} |", thousands(*s as u64), cells.join(" | "))
        })
        .collect())
}

// ----- the first reproduction's experiments ---------------------------------------------------

fn experiments_4k(results: &Results) -> Result<String> {
    let mut rows = Vec::new();
    for (label, file) in [
        ("constant lr 1e-3 (`runs/mog1-seed0`)", format!("{RECIPE_4K}/n2-d2/runs/mog1-seed0/eval.json")),
        ("cosine lr 1e-3 → 0 (`mog1-cosine-4k.*`)", format!("{EXPERIMENTS}/mog1-cosine-4k.eval.json")),
        (
            "constant lr 1e-3, resumed to 8,000 (`mog1-constant-8k.*`)",
            format!("{EXPERIMENTS}/mog1-constant-8k.eval.json"),
        ),
    ] {
        let e: EvalReport = results.json(&file)?;
        let mut row = vec![label.to_string(), thousands(e.steps as u64)];
        row.extend(cells4(four_eval(&e), false));
        row.extend([tau(&e.tau_ap), tau(&e.tau_knn)]);
        rows.push(row);
    }
    let grouped: Vec<CurvePoint> = results.json(&format!("{EXPERIMENTS}/mog1-group32x8-2k.curve.json"))?;
    let g = grouped.last().ok_or_else(|| missing(EXPERIMENTS, "an empty grouped curve"))?;
    let mut row =
        vec!["grouped batches 32 classes x 8 images (`mog1-group32x8-2k.*`)".to_string(), thousands(g.step as u64)];
    row.extend(cells4(four_curve(g), false));
    row.extend([String::new(), String::new()]);
    rows.push(row);
    let paper = paper_of(results, &format!("{RECIPE_4K}/n2-d2"))?;
    let p = paper_model(&paper, "mog1")?;
    let two = |t: &Option<CleanCorrupt>| {
        t.as_ref().map_or_else(String::new, |t| format!("{} / {}", fixed(t.clean, 2), fixed(t.corrupt, 2)))
    };
    let mut row = vec!["paper (500k iterations)".to_string(), String::new()];
    row.extend(cells4(four_paper(p), false));
    row.extend([two(&p.tau_ap), two(&p.tau_knn)]);
    rows.push(row);
    Ok(table(
        &[
            "run",
            "steps",
            "AP clean",
            "AP corrupt",
            "KNN clean",
            "KNN corrupt gallery",
            "tau AP clean / corrupt",
            "tau KNN clean / corrupt",
        ],
        &rows,
    ))
}

fn grouped_vs_paper(results: &Results) -> Result<String> {
    let grouped = curve_by_step(results, &format!("{EXPERIMENTS}/mog1-group32x8-2k.curve.json"))?;
    let curves: BTreeMap<String, Vec<CurvePoint>> = results.json(&format!("{RECIPE_4K}/n2-d2/curves.json"))?;
    let paper_sampler: BTreeMap<usize, CurvePoint> = curves
        .get("mog1")
        .ok_or_else(|| missing(RECIPE_4K, "no mog1 curve"))?
        .iter()
        .map(|r| (r.step, r.clone()))
        .collect();
    let steps: BTreeSet<usize> = grouped.keys().chain(paper_sampler.keys()).copied().collect();
    let mut rows = vec![
        "| steps (training seconds) | AP clean | AP corrupt | KNN clean | KNN corrupt |".to_string(),
        "|---|---|---|---|---|".into(),
    ];
    for step in steps.into_iter().filter(|s| s % 1000 == 0) {
        for (name, curve) in [("paper sampler", &paper_sampler), ("grouped", &grouped)] {
            if let Some(r) = curve.get(&step) {
                rows.push(format!(
                    "| {} {name} ({} s) | {} |",
                    thousands(step as u64),
                    fixed(r.train_seconds.unwrap_or(f64::NAN), 0),
                    cells4(four_curve(r), false).join(" | ")
                ));
            }
        }
    }
    let e: EvalReport = results.json(&format!("{EXPERIMENTS}/mog1-constant-8k.eval.json"))?;
    rows.push(format!(
        "| {} paper sampler (resumed; eval.json, {} repeats) | {} |",
        thousands(e.steps as u64),
        e.repeats,
        cells4(four_eval(&e), false).join(" | ")
    ));
    Ok(rows.join("\n"))
}

fn grouped_curves(results: &Results) -> Result<String> {
    let curves: BTreeMap<String, Vec<CurvePoint>> = results.json(&format!("{RECIPE_4K}/n2-d2-grouped/curves.json"))?;
    let of = |m: &str| curves.get(m).ok_or_else(|| missing(RECIPE_4K, format!("no {m} curve")));
    let steps: BTreeSet<usize> = of("mog1")?.iter().map(|r| r.step).collect();
    let mut rows = vec!["| steps | point | MoG-1 | MoG-2 |".to_string(), "|---|---|---|---|".into()];
    for step in steps {
        let mut cells = Vec::new();
        for model in ["point", "mog1", "mog2"] {
            let r = of(model)?
                .iter()
                .find(|x| x.step == step)
                .ok_or_else(|| missing(RECIPE_4K, format!("no {model} point at step {step}")))?;
            cells.push(slashed(four_curve(r)));
        }
        rows.push(format!("| {} | {} |", thousands(step as u64), cells.join(" | ")));
    }
    Ok(rows.join("\n"))
}

// ----- the two open-set test splits ----------------------------------------------------------

const SPLIT_RUNS: &str = "results/hib/open-set/n2-d2-split/runs";

fn split_curves(results: &Results) -> Result<String> {
    let files: Vec<String> = ["point", "mog1"]
        .iter()
        .flat_map(|m| ["curve_test_seen.json", "curve.json"].map(|f| format!("{SPLIT_RUNS}/{m}/{f}")))
        .collect();
    let mut rows = curve_rows(results, &files)?;
    let paper = paper_of(results, &format!("{HIB}/open-set/n2-d2"))?;
    rows.push(format!(
        "| paper | {} | | {} | |",
        slashed(four_paper(paper_model(&paper, "point")?)),
        slashed(four_paper(paper_model(&paper, "mog1")?))
    ));
    let mut out = vec![
        "| steps | point, test_seen | point, test_unseen | MoG-1, test_seen | MoG-1, test_unseen |".to_string(),
        "|---|---|---|---|---|".into(),
    ];
    out.extend(rows);
    Ok(out.join("\n"))
}

/// The largest AP gap between the two splits at a shared checkpoint, the range of the KNN gap
/// (test_unseen − test_seen), and the KNN corrupt/clean ratio at each model's last checkpoint.
fn split_stats(results: &Results) -> Result<String> {
    let paper = paper_of(results, &format!("{HIB}/open-set/n2-d2"))?;
    let mut rows = Vec::new();
    for (model, label) in [("point", "point"), ("mog1", "MoG-1")] {
        let seen = curve_by_step(results, &format!("{SPLIT_RUNS}/{model}/curve_test_seen.json"))?;
        let unseen = curve_by_step(results, &format!("{SPLIT_RUNS}/{model}/curve.json"))?;
        let steps: Vec<usize> = seen.keys().filter(|s| unseen.contains_key(s)).copied().collect();
        let mut ap_gap = f64::NEG_INFINITY;
        let mut knn_gap = Vec::new();
        for s in &steps {
            let (a, b) = (four_curve(&seen[s]), four_curve(&unseen[s]));
            ap_gap = ap_gap.max((a[0] - b[0]).abs()).max((a[1] - b[1]).abs());
            knn_gap.extend([b[2] - a[2], b[3] - a[3]]);
        }
        let last = steps.last().ok_or_else(|| missing(SPLIT_RUNS, "no shared checkpoint"))?;
        let ratio = |r: &CurvePoint| {
            let f = four_curve(r);
            f[3] / f[2]
        };
        let p = &paper_model(&paper, model)?.knn_accuracy;
        let (lo, hi) = crate::report::format::range(&knn_gap);
        rows.push(format!(
            "| {label} | {} | {} – {} | {} | {} | {} |",
            fixed(ap_gap, 3),
            fixed(lo, 3),
            fixed(hi, 3),
            fixed(ratio(&seen[last]), 2),
            fixed(ratio(&unseen[last]), 2),
            fixed(p.corrupt / p.clean, 2)
        ));
    }
    let mut out = vec![
        "| model | largest AP gap between the splits (any checkpoint, clean or corrupt) | KNN gap, test_unseen − test_seen \
         (range) | KNN corrupt / clean, test_seen (last checkpoint) | KNN corrupt / clean, test_unseen (last \
         checkpoint) | KNN corrupt / clean, paper |"
            .to_string(),
        "|---|---|---|---|---|---|".into(),
    ];
    out.extend(rows);
    Ok(out.join("\n"))
}

// ----- a user's own images -------------------------------------------------------------------

/// The value of `--split-seed` in a recorded command (0 where it was not given).
fn split_seed(command: &str) -> String {
    command
        .split("--split-seed ")
        .nth(1)
        .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "0".into())
}

fn own_data(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| run | setting | unseen classes | unseen: verification AP | unseen: KNN | unseen: τ AP | seen: verification AP \
         | seen: KNN |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|".into(),
    ];
    for run in ["fashion-mnist-d2", "fashion-mnist-d8", "fashion-mnist-d8-split1"] {
        let folder = format!("results/own-data/{run}");
        let config: RunConfig = results.json(&format!("{folder}/config.json"))?;
        let split: OwnSplit = results.json(&format!("{folder}/data_split.json"))?;
        let unseen: EvalReport = results.json(&format!("{folder}/eval.json"))?;
        let seen: EvalReport = results.json(&format!("{folder}/eval_test_seen.json"))?;
        rows.push(format!(
            "| `{run}` | D = {}, split seed {} | {} | {} | {} | {} | {} | {} |",
            config.hib.model.dim,
            split_seed(&config.command),
            split.unseen_classes.join(", "),
            pair(unseen.verification_ap.clean, unseen.verification_ap.corrupt),
            pair(unseen.knn_accuracy.clean, unseen.knn_accuracy.corrupt),
            pair(unseen.tau_ap.clean, unseen.tau_ap.corrupt),
            pair(seen.verification_ap.clean, seen.verification_ap.corrupt),
            pair(seen.knn_accuracy.clean, seen.knn_accuracy.corrupt),
        ));
    }
    Ok(rows.join("\n"))
}

/// Target risks whose rule and outcome coincide: the risks, (rule, coverage, accuracy among
/// answered) as the table writes them, and the first risk's summary.
type MergedRisks<'r> = (Vec<&'r str>, (String, String, String), SearchSummary);

fn identification(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| run | held-out classes | top-1 accuracy, full coverage | ANN recall@10 | abstain by | target risk | rule (from \
         validation) | probe coverage | accuracy among answered |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---|".into(),
    ];
    for run in IDENT_RUNS {
        let split: OwnSplit = results.json(&format!("results/own-data/{run}/data_split.json"))?;
        let unseen = split.unseen_classes.join(", ");
        for score in ["eta", "margin"] {
            // Risks whose chosen rule and outcome coincide share a row.
            let mut merged: Vec<MergedRisks> = Vec::new();
            for risk in ["0.05", "0.1", "0.2"] {
                let s: SearchSummary = results.json(&format!("{IDENT}/{run}-{score}-risk{risk}/summary.json"))?;
                let text = match s.rule {
                    Abstention::AbstainAbove { threshold } => format!("abstain above {}", fixed(threshold, 4)),
                    Abstention::AcceptAll => "accept all".into(),
                    Abstention::AbstainAll => "abstain on all".into(),
                };
                let mut answered = s.accuracy_answered.map_or_else(|| "—".to_string(), |a| fixed(a, 3));
                if s.accuracy_answered.is_some() && (s.coverage * s.probes as f64).round() == 1.0 {
                    answered.push_str(" (1 probe)");
                }
                let key = (text, fixed(s.coverage, 3), answered);
                match merged.last_mut() {
                    Some(last) if last.1 == key => last.0.push(risk),
                    _ => merged.push((vec![risk], key, s)),
                }
            }
            for (risks, (text, coverage, answered), s) in merged {
                rows.push(format!(
                    "| `{run}` | {unseen} | {} | {} | {score} | {} | {text} | {coverage} | {answered} |",
                    fixed(s.accuracy, 3),
                    fixed(s.ann_recall_at_10.unwrap_or(f64::NAN), 4),
                    risks.join(", ")
                ));
            }
        }
    }
    Ok(rows.join("\n"))
}

/// Full-coverage risk and, per score, the AURC (mean over k of the error rate among the k most
/// confident probes) and the risk at 50 % coverage, from the probes' `search.csv` (confidence:
/// low η; a high margin between the best two identities).
fn risk_coverage(results: &Results, run: &str) -> Result<(f64, [(f64, f64); 2])> {
    let file = format!("{IDENT}/{run}-eta-risk0.05/search.csv");
    let text = results.text(&file)?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let column =
        |name: &str| header.iter().position(|h| *h == name).ok_or_else(|| missing(&file, format!("no {name}")));
    let (label, identity, eta, margin) = (column("label")?, column("identity_1")?, column("eta")?, column("margin")?);
    let mut wrong = Vec::new();
    let mut scores = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let number = |i: usize| cells.get(i).and_then(|c| c.parse::<f64>().ok()).unwrap_or(f64::NAN);
        wrong.push(cells.get(identity) != cells.get(label));
        scores.push((number(eta), 1.0 - number(margin)));
    }
    let n = wrong.len();
    let risk = wrong.iter().filter(|w| **w).count() as f64 / n as f64;
    let mut out = [(0.0, 0.0); 2];
    for (k, slot) in out.iter_mut().enumerate() {
        let doubt: Vec<f64> = scores.iter().map(|s| if k == 0 { s.0 } else { s.1 }).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|a, b| doubt[*a].total_cmp(&doubt[*b]));
        let (mut errors, mut area) = (0usize, 0.0);
        for (i, &j) in order.iter().enumerate() {
            errors += usize::from(wrong[j]);
            area += errors as f64 / (i + 1) as f64;
        }
        let half = n / 2;
        *slot = (area / n as f64, order[..half].iter().filter(|&&j| wrong[j]).count() as f64 / half as f64);
    }
    Ok((risk, out))
}

fn identification_aurc(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| run | full-coverage risk | AURC by eta | AURC by margin | risk at 50 % coverage, eta / margin |".to_string(),
        "|---|---|---|---|---|".into(),
    ];
    for run in IDENT_RUNS {
        let (risk, [eta, margin]) = risk_coverage(results, run)?;
        rows.push(format!(
            "| `{run}` | {} | {} | {} | {} / {} |",
            fixed(risk, 3),
            fixed(eta.0, 3),
            fixed(margin.0, 3),
            fixed(eta.1, 3),
            fixed(margin.1, 3)
        ));
    }
    Ok(rows.join("\n"))
}

fn search_rows(results: &Results) -> Result<Vec<SearchBenchRow>> {
    let mut rows = Vec::new();
    for dim in [2, 3, 16] {
        let file: Vec<SearchBenchRow> = results.json(&format!("{IDENT}/bench-search-d{dim}.json"))?;
        rows.extend(file);
    }
    Ok(rows)
}

const MIB: f64 = 1048576.0;

fn bench_search(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| D | points | build s | inserts/s | queries/s (k = 10) | recall@10 | build RSS MiB | index files MiB | exact \
         search s (1,000 queries) |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---|".into(),
    ];
    for b in search_rows(results)? {
        let points = if b.points == 1_000_000 { "10⁶".to_string() } else { thousands(b.points as u64) };
        rows.push(format!(
            "| {} | {points} | {} | {} | {} | {} | {} | {} | {} |",
            b.dim,
            fixed(b.build_seconds, 0),
            thousands_fixed(b.inserts_per_second, 0),
            thousands_fixed(b.queries_per_second, 0),
            fixed(b.recall_at_10, 4),
            thousands_fixed(b.build_rss_bytes.unwrap_or_default() as f64 / MIB, 0),
            thousands_fixed(b.dump_bytes as f64 / MIB, 0),
            fixed(b.exact_seconds, 1)
        ));
    }
    Ok(rows.join("\n"))
}

/// The search benchmark at 10⁶ means in one sentence (the range over D = 2, 3, 16).
fn bench_search_sentence(results: &Results) -> Result<String> {
    let rows: Vec<SearchBenchRow> = search_rows(results)?.into_iter().filter(|b| b.points == 1_000_000).collect();
    let mut dims: Vec<usize> = rows.iter().map(|b| b.dim).collect();
    dims.sort_unstable();
    let range =
        |f: &dyn Fn(&SearchBenchRow) -> f64| crate::report::format::range(&rows.iter().map(f).collect::<Vec<_>>());
    let minutes = range(&|b| b.build_seconds / 60.0);
    let queries = range(&|b| (b.queries_per_second / 100.0).round() * 100.0);
    let rss = range(&|b| b.build_rss_bytes.unwrap_or_default() as f64 / 1073741824.0);
    let recall = range(&|b| b.recall_at_10).0;
    Ok(format!(
        "builds in {}–{} minutes (D = {} to {}), answers\n{}–{} ten-neighbour queries a second at recall@10 ≥ {}, and \
         takes {}–{} GiB while building — so a",
        fixed(minutes.0, 0),
        fixed(minutes.1, 0),
        dims[0],
        dims[dims.len() - 1],
        thousands_fixed(queries.0, 0),
        thousands_fixed(queries.1, 0),
        fixed(recall, 4),
        fixed(rss.0, 1),
        fixed(rss.1, 1)
    ))
}

/// Where `hedge bench exact-search --loss NAME` writes its rows for `form`.
fn exact_search_file(form: &ClosedForm) -> String {
    format!("{IDENT}/bench-{}-search.json", form.name)
}

fn gallery_size(points: usize) -> String {
    match points {
        1_000_000 => "10⁶".into(),
        100_000 => "10⁵".into(),
        n => thousands(n as u64),
    }
}

/// `hedge bench exact-search`: both ways of finding a closed-form model's candidates, side by side.
fn bench_exact_search(results: &Results, form: &ClosedForm) -> Result<String> {
    let rows: Vec<ExactSearchBenchRow> = results.json(&exact_search_file(form))?;
    let label = form.name.to_uppercase();
    let mut out = vec![
        format!(
            "| D | gallery | candidates found by | build s | queries/s (k = 10) | recall@10 of the exact {label} top 10 \
             | graph MiB |"
        ),
        "|---|---|---|---|---|---|---|".into(),
    ];
    for b in &rows {
        let found_by = match b.space {
            SearchSpace::Means => format!("means ({} re-ranked by {label})", b.candidates),
            SearchSpace::Exact(_) => format!("{label} (its exact space, D′ = {})", b.space.point_dim(b.dim)),
        };
        out.push(format!(
            "| {} | {} | {found_by} | {} | {} | {} | {} |",
            b.dim,
            gallery_size(b.points),
            fixed(b.build_seconds, 1),
            thousands_fixed(b.queries_per_second, 0),
            fixed(b.recall_at_10, 4),
            thousands_fixed(b.memory_bytes as f64 / MIB, 0)
        ));
    }
    Ok(out.join("\n"))
}

/// Where means-first search loses the closed form's nearest items, in one sentence per gallery
/// size and dimension.
fn bench_exact_search_sentence(results: &Results, form: &ClosedForm) -> Result<String> {
    let rows: Vec<ExactSearchBenchRow> = results.json(&exact_search_file(form))?;
    let label = form.name.to_uppercase();
    let mut lines = Vec::new();
    for means in rows.iter().filter(|b| b.space == SearchSpace::Means) {
        let Some(exact) =
            rows.iter().find(|b| b.space != SearchSpace::Means && (b.dim, b.points) == (means.dim, means.points))
        else {
            continue;
        };
        lines.push(format!(
            "- D = {}, {} items: recall@10 {} by {label} against {} by means then {label}, at {} times the query rate.",
            means.dim,
            gallery_size(means.points),
            fixed(exact.recall_at_10, 4),
            fixed(means.recall_at_10, 4),
            fixed(exact.queries_per_second / means.queries_per_second.max(1e-9), 2)
        ));
    }
    Ok(lines.join("\n"))
}

const QUADRATURE: &str = "results/hib/quadrature-error.json";

/// `hedge bench quadrature`: the worst relative error of each rule by dimension and node count,
/// then the node count hedge uses.
fn quadrature_error(results: &Results) -> Result<String> {
    let study: super::quadrature::QuadratureStudy = results.json(QUADRATURE)?;
    let mut rules: Vec<String> = Vec::new();
    for r in &study.rows {
        if !rules.contains(&r.rule) {
            rules.push(r.rule.clone());
        }
    }
    let name = |rule: &str| match rule {
        "gauss-hermite" => "Gauss–Hermite product".to_string(),
        "polar" => "polar".to_string(),
        switch => format!("hedge, polar below {}", switch.trim_start_matches("switch-")),
    };
    let mut header = vec!["D".to_string(), "points per axis".into()];
    header.extend(rules.iter().map(|r| name(r)));
    let mut out = vec![format!("| {} |", header.join(" | ")), format!("|{}", "---|".repeat(header.len()))];
    let mut keys: Vec<(usize, usize)> = study.rows.iter().map(|r| (r.dim, r.points)).collect();
    keys.sort_unstable();
    keys.dedup();
    for (dim, n) in keys {
        let mut cells = vec![dim.to_string(), n.to_string()];
        for rule in &rules {
            cells.push(
                study
                    .rows
                    .iter()
                    .find(|r| (r.dim, r.points) == (dim, n) && &r.rule == rule)
                    .map_or("-".to_string(), |r| format!("{:.1e}", r.max_relative_error)),
            );
        }
        out.push(format!("| {} |", cells.join(" | ")));
    }
    let chosen: Vec<String> = study.chosen.iter().map(|(dim, n)| format!("{n} points per axis at D = {dim}")).collect();
    out.push(String::new());
    out.push(format!(
        "Worst relative error (on probabilities of 1 % and more) over {} Gaussian pairs per dimension, against the polar rule at {} points per \
         axis. hedge takes the polar rule below a squared Mahalanobis distance of {}; within {} it needs {}.",
        study.pairs_per_dim,
        study.reference_points,
        study.polar_below,
        study.tolerance,
        if chosen.is_empty() { "more points than measured".to_string() } else { chosen.join(", ") }
    ));
    Ok(out.join("\n"))
}

// ----- the paper's schedule on a GPU ---------------------------------------------------------

const GPU: &str = "results/hib/paper-schedule-gpu";
const GPU_RUNS: [(&str, &str, &str); 2] = [("point-seed0", "point", "point"), ("gaussian-seed0", "MoG-1", "mog1")];

/// One call on a GPU machine (`scripts/gpu/hib-paper-schedule.sh` appends it to `sessions.jsonl`).
#[derive(Debug, Deserialize)]
pub(super) struct GpuCall {
    pub(super) date: String,
    pub(super) device: String,
    torch: String,
    pub(super) runs: BTreeMap<String, GpuCallRun>,
}

#[derive(Debug, Deserialize)]
pub(super) struct GpuCallRun {
    pub(super) from_step: usize,
    pub(super) from_seconds: f64,
    pub(super) to_step: usize,
    pub(super) to_seconds: f64,
}

fn paper_schedule_gpu(results: &Results) -> Result<String> {
    let files: Vec<String> = GPU_RUNS.iter().map(|(run, _, _)| format!("{GPU}/{run}/curve.json")).collect();
    let paper = paper_of(results, &format!("{HIB}/open-set/n2-d2"))?;
    let mut out = vec!["| step | point: AP clean / corrupt / KNN clean / corrupt | MoG-1: the same |".to_string()];
    out.push("|---|---|---|".into());
    out.extend(curve_rows(results, &files)?);
    out.push(format!(
        "| paper, 500,000 | {} | {} |",
        slashed(four_paper(paper_model(&paper, "point")?)),
        slashed(four_paper(paper_model(&paper, "mog1")?))
    ));
    let mut trained = Vec::new();
    for (run, name, _) in GPU_RUNS {
        let state: RunState = results.json(&format!("{GPU}/{run}/state.json"))?;
        trained.push(format!(
            "{name}: {} steps in {} minutes of training",
            thousands(state.step as u64),
            fixed(state.seconds / 60.0, 1)
        ));
    }
    let calls: Vec<GpuCall> = results.json_lines(GPU, "sessions.jsonl")?;
    out.extend([
        String::new(),
        format!(
            "Trained so far (state.json): {}. Each call on a GPU (sessions.jsonl; both runs side by side, speeds in \
             training steps per second of each run's own clock):",
            trained.join("; ")
        ),
        String::new(),
        "| date | GPU | libtorch | point steps | MoG-1 steps |".into(),
        "|---|---|---|---|---|".into(),
    ]);
    for c in &calls {
        let mut cells = Vec::new();
        for (run, _, _) in GPU_RUNS {
            let r = c.runs.get(run).ok_or_else(|| missing(GPU, format!("a call without {run}")))?;
            let steps = (r.to_step - r.from_step) as f64;
            cells.push(format!(
                "{} → {} ({} steps/s)",
                thousands(r.from_step as u64),
                thousands(r.to_step as u64),
                fixed(steps / (r.to_seconds - r.from_seconds), 0)
            ));
        }
        out.push(format!("| {} | {} | torch {} | {} |", c.date, c.device, c.torch, cells.join(" | ")));
    }
    Ok(out.join("\n"))
}

/// From this step on, the kept copies lie on the line the trend fits.
const TREND_FROM: usize = 50_000;

/// How far length alone goes: per run and Table 1 number, a least-squares line of the value
/// against log₂(step) over the kept copies from [`TREND_FROM`] steps on, its gain per doubling of
/// the steps, and the line read at the paper's 500,000 steps, beside the paper.
fn paper_schedule_gpu_trend(results: &Results) -> Result<String> {
    let paper = paper_of(results, &format!("{HIB}/open-set/n2-d2"))?;
    // The values as the tables print them (three decimals), as the line was first fitted.
    let printed =
        |v: [f64; 4]| -> Vec<f64> { cells4(v, false).iter().map(|c| c.parse().unwrap_or(f64::NAN)).collect() };
    let (mut rows, mut last_steps) = (Vec::new(), Vec::new());
    for (run, name, key) in GPU_RUNS {
        let curve: Vec<CurvePoint> = results.json(&format!("{GPU}/{run}/curve.json"))?;
        let points: Vec<&CurvePoint> = curve.iter().filter(|r| r.step >= TREND_FROM).collect();
        let last = points.last().ok_or_else(|| missing(GPU, format!("{run}: no kept copy from {TREND_FROM} steps")))?;
        last_steps.push(last.step);
        let xs: Vec<f64> = points.iter().map(|r| (r.step as f64).log2()).collect();
        let target = printed(four_paper(paper_model(&paper, key)?));
        let values: Vec<Vec<f64>> = points.iter().map(|r| printed(four_curve(r))).collect();
        for (i, metric) in CELL_NAMES.iter().enumerate() {
            let ys: Vec<f64> = values.iter().map(|v| v[i]).collect();
            let n = xs.len() as f64;
            let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
            let slope = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum::<f64>()
                / xs.iter().map(|x| (x - mx).powi(2)).sum::<f64>();
            let at = my + slope * (500_000f64.log2() - mx);
            rows.push(format!(
                "| {name} | {metric} | {} | {} | {} |",
                format!("{slope:+.3}").replace('-', "−"),
                fixed(at, 3),
                fixed(target[i], 3)
            ));
        }
    }
    let lo = last_steps.iter().min().copied().unwrap_or_default();
    let hi = last_steps.iter().max().copied().unwrap_or_default();
    Ok(format!(
        "A line through the kept copies from {} steps on (least squares against log₂ of the step, up to {}–{} steps), \
         read at the paper's 500,000:\n\n| model | number | gain per doubling of steps | the line at 500,000 | paper \
         |\n|---|---|---|---|---|\n{}",
        thousands(TREND_FROM as u64),
        thousands(lo as u64),
        thousands(hi as u64),
        rows.join("\n")
    ))
}

// ----- the open-set ladder and the first reproduction's readings -----------------------------

/// How the match head's a and b move in the open-set ladder: b at the network's learning rate
/// (`a-baseline`) against 30x (`d-head`), from each run's `metrics.jsonl`.
fn head_scale(results: &Results) -> Result<String> {
    let rows = |run: &str| -> Result<Vec<StepMetrics>> {
        results.json_lines(&format!("{HIB}/open-set/levers/{run}"), "metrics.jsonl")
    };
    let (base, fast) = (rows("a-baseline")?, rows("d-head")?);
    let (first, last) = match (base.first(), base.last(), fast.first(), fast.last()) {
        (Some(f), Some(l), Some(_), Some(_)) => (f, l),
        _ => return Err(missing("results/hib/open-set/levers", "an empty metrics.jsonl")),
    };
    let mut marks: Vec<&StepMetrics> = base.iter().filter(|r| (r.step - first.step) % 500 == 0).collect();
    if !marks.last().is_some_and(|m| std::ptr::eq(*m, last)) {
        marks.push(last);
    }
    let at_550 = fast.iter().find(|r| r.step >= 550).ok_or_else(|| missing("d-head", "no step 550"))?;
    let fast_last = &fast[fast.len() - 1];
    let late: Vec<f64> = fast.iter().filter(|r| r.step as f64 >= fast_last.step as f64 / 2.0).map(|r| r.b).collect();
    Ok(format!(
        "with\n  the network's rate, b climbs almost linearly ({} at steps {},\n  {}, …, {}) and is still moving at the \
         end; at 30x it reaches {} by step {} and settles\n  near {} (a {} → {}).",
        marks.iter().map(|r| fixed(r.b, 2)).collect::<Vec<_>>().join(", "),
        marks[0].step,
        marks[1].step,
        thousands(marks[marks.len() - 1].step as u64),
        fixed(at_550.b, 1),
        at_550.step,
        fixed(late.iter().sum::<f64>() / late.len() as f64, 1),
        fixed(fast[0].a, 1),
        fixed(fast_last.a, 1)
    ))
}

fn open_set_4k<T: serde::de::DeserializeOwned>(results: &Results, rel: &str) -> Result<T> {
    results.json(&format!("{RECIPE_4K}/{rel}"))
}

/// The 4,000-step point model (N = 2, D = 2) on test_unseen and test_seen.
fn which_split(results: &Results) -> Result<String> {
    let unseen: EvalReport = open_set_4k(results, "n2-d2/runs/point-seed0/eval.json")?;
    let seen: EvalReport = open_set_4k(results, "n2-d2/runs/point-seed0/eval_test_seen.json")?;
    let text = |e: &EvalReport| {
        let f = four_eval(e);
        format!("AP {} /\n  {}, KNN {} / {}", fixed(f[0], 3), fixed(f[1], 3), fixed(f[2], 3), fixed(f[3], 3))
    };
    Ok(format!("test_unseen (30 classes) {}; test_seen (70 classes) {}.", text(&unseen), text(&seen)))
}

/// `protocol_pairs.py`'s output: verification AP of three pairings.
#[derive(Debug, Deserialize)]
struct ProtocolPairs {
    ap: PairingAp,
}

#[derive(Debug, Deserialize)]
struct PairingAp {
    #[serde(rename = "clean-clean")]
    clean_clean: f64,
    #[serde(rename = "corrupt-corrupt")]
    corrupt_corrupt: f64,
    #[serde(rename = "clean-corrupt")]
    clean_corrupt: f64,
}

/// `protocol_pairs.py`'s three APs per point model beside the paper's corrupt AP.
fn protocol_pairs(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| point model | clean–clean | corrupt–corrupt | clean–corrupt | paper corrupt |".to_string(),
        "|---|---|---|---|---|".into(),
    ];
    for setting in ["n2-d2", "n2-d3"] {
        let p: ProtocolPairs = open_set_4k(results, &format!("n2-d2/experiments/protocol-pairs-{setting}.json"))?;
        let paper = paper_of(results, &format!("{RECIPE_4K}/{setting}"))?;
        rows.push(format!(
            "| {setting} (4,000 steps) | {} | {} | {} | {} |",
            fixed(p.ap.clean_clean, 3),
            fixed(p.ap.corrupt_corrupt, 3),
            fixed(p.ap.clean_corrupt, 3),
            fixed(paper_model(&paper, "point")?.verification_ap.corrupt, 3)
        ));
    }
    Ok(rows.join("\n"))
}

/// How much AP the corrupt reading loses against clean: the paper's three models and hedge's
/// point model (N = 2, D = 2).
fn corrupt_drop(results: &Results) -> Result<String> {
    let paper = paper_of(results, &format!("{RECIPE_4K}/n2-d2"))?;
    let drops: Vec<f64> = ["point", "mog1", "mog2"]
        .iter()
        .map(|m| paper_model(&paper, m).map(|p| p.verification_ap.clean - p.verification_ap.corrupt))
        .collect::<Result<_>>()?;
    let point = &paper_model(&paper, "point")?.verification_ap;
    let ours: EvalReport = open_set_4k(results, "n2-d2/runs/point-seed0/eval.json")?;
    let (lo, hi) = crate::report::format::range(&drops);
    let f = four_eval(&ours);
    Ok(format!(
        "The paper's corrupt AP loses only {}–{}\n  against clean ({} → {} for point); ours loses {} that way.",
        fixed(lo, 2),
        fixed(hi, 2),
        fixed(point.clean, 3),
        fixed(point.corrupt, 3),
        fixed(f[0] - f[1], 2)
    ))
}

/// The drop from clean to corrupt with the clean–corrupt pairing against the paper's.
fn pairing_drop(results: &Results) -> Result<String> {
    let p: ProtocolPairs = open_set_4k(results, "n2-d2/experiments/protocol-pairs-n2-d2.json")?;
    let paper = paper_of(results, &format!("{RECIPE_4K}/n2-d2"))?;
    let ap = &paper_model(&paper, "point")?.verification_ap;
    let signed2 = |x: f64| format!("{}{}", if x < 0.0 { "−" } else { "+" }, fixed(x.abs(), 2));
    Ok(format!(
        "The clean–corrupt reading brings the drop from clean to corrupt close to the paper's ({} vs\n  {} for N = 2, D \
         = 2; both corrupt: {}).",
        signed2(p.ap.clean_corrupt - p.ap.clean_clean),
        signed2(ap.corrupt - ap.clean),
        signed2(p.ap.corrupt_corrupt - p.ap.clean_clean)
    ))
}
