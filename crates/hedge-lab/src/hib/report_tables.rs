//! HIB fragments of the tables and studies (`results/hib/report/<name>.md`): Table 1 of the
//! open-set and instance settings, the lever and A/B studies, the long run, the acceptance
//! reading, the two N = 3 test sets, the plain-PyTorch reference and the precision each run
//! trained in.
//!
//! Tables moved aside before their setting was retrained on a re-chosen recipe
//! (`scripts/hib-move-table.py`) stay as evidence; [`ASIDE_TABLES`] names them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hedge_embed::report::EvalReport;
use hedge_embed::run::{BestModel, RunConfig, RunState};
use hedge_embed::{MonitorRecord, NDigitProtocol, NDigitSplit, QuickEval};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::paper::{PaperModel, MODELS};
use super::report::{cells4, four, four_eval, four_paper, table_paper, GpuCall};
use super::summary::{ModelSummary, ReproduceSummary};
use crate::report::format::{fixed, range, short, table, thousands, thousands_fixed};
use crate::report::fragment::{missing, Fragment, Results};
use crate::Result;

const HIB: &str = "results/hib";
const SETTINGS: [&str; 4] = ["n2-d2", "n2-d3", "n3-d2", "n3-d3"];
const CELL_NAMES: [&str; 4] = ["AP clean", "AP corrupt", "KNN clean", "KNN corrupt"];
/// What a lever of an instance lever study may change, and what the study fixed for all of
/// its levers: what names a table's recipe.
const LEVER_KEYS: [&str; 11] = [
    "batch",
    "batch_pairs",
    "group_classes",
    "group_size",
    "pair_set",
    "learning_rate",
    "warmup_steps",
    "lr_schedule",
    "norm",
    "ema_decay",
    "channels",
];
const STUDY_KEYS: [&str; 4] = ["protocol", "validation_fraction", "validation_seed", "conv_precision"];
/// An A/B study that trains arms on the shared base recipe, as its plan
/// (`studies/hib/ab-<name>.toml`) says: its arms (the plan's runs other than `control`, in the
/// plan's order) and, where its arms add one setting to an arm of another study, that study and
/// arm (`[report] control_from`), read as its control.
struct AbStudy {
    name: String,
    arms: Vec<String>,
    control_from: Option<(String, String)>,
}

/// Where the A/B studies' plans are.
const AB_PLANS: &str = "studies/hib";

/// Every A/B study's plan (`studies/hib/ab-*.toml`), by name.
fn ab_studies(results: &Results) -> Result<Vec<AbStudy>> {
    let folder = results.path(AB_PLANS);
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .map_err(|e| missing(AB_PLANS, e.to_string()))?
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            file.strip_prefix("ab-").and_then(|f| f.strip_suffix(".toml")).map(str::to_string)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let plan = super::study::StudyPlan::from_toml_file(&folder.join(format!("ab-{name}.toml")))?;
            let arms = plan.runs.iter().map(|r| r.name.clone()).filter(|n| n != "control").collect();
            let control_from = plan.report.control_from.map(|c| (c.study, c.arm));
            Ok(AbStudy { name, arms, control_from })
        })
        .collect()
}

/// The folder of `setting`'s `table`-th table (1: the first), moved aside when the setting was
/// retrained, as its `moved-aside.json` marker names it.
fn aside_table(results: &Results, setting: &str, table: u32) -> Result<String> {
    Asides::read(results)?
        .0
        .into_iter()
        .find(|a| a.1 == setting && a.3 == table)
        .map(|a| a.0)
        .ok_or_else(|| missing(HIB, format!("no folder's moved-aside.json marks table {table} of {setting}")))
}

const RECIPE_STUDY: &str = "instance-levers-f32";

/// What an arm of an A/B study adds to the recipe, with the value a config written before the
/// field existed means (hedge's default, the paper's).
fn ab_keys() -> [(&'static str, Value); 6] {
    [
        ("weight_decay", Value::from(0.0)),
        ("hidden_units", Value::from(0)),
        ("dropout", Value::from(0.0)),
        ("recompose", Value::from(false)),
        ("digit_shift", Value::from(0)),
        ("validation_digits", Value::from("shared")),
    ]
}

/// Every HIB table and study fragment.
pub(crate) fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    let r = results;
    let pairs: Vec<(&str, String)> = vec![
        ("open-set", open_set(r)?),
        ("instance-tables", instance_tables(r)?),
        ("paper-items", paper_items(r)?),
        ("instance-levers", instance_levers(r, "instance-levers")?),
        ("instance-levers-f32", instance_levers(r, "instance-levers-f32")?),
        ("recipe-45min", recipe_45min(r)?),
        ("open-set-ladder", open_set_ladder(r)?),
        ("open-set-seeds", open_set_seeds(r)?),
        ("long-run-cost", long_run_cost(r)?),
        ("long-run-progress", long_run_progress(r)?),
        ("long-run-gallery", long_run_gallery(r)?),
        ("long-run-length", long_run_length(r)?),
        (
            "n2-d2-third-against-second",
            table_against_aside(r, &aside_table(r, "n2-d2", 3)?, &aside_table(r, "n2-d2", 2)?)?,
        ),
        ("n2-d2-against-third", table_against_aside(r, "n2-d2", &aside_table(r, "n2-d2", 3)?)?),
        ("others-against-asides", others_against_asides(r)?),
        ("n2-d2-tables", table_means_against_asides(r, "n2-d2")?),
        ("instance-acceptance", instance_acceptance(r, "n2-d2")?),
        ("instance-acceptance-others", instance_acceptance_others(r)?),
        ("digit-overlap", digit_overlap(r)?),
        ("class-merges", super::class_merges::class_merges(r)?),
        ("test-seen", test_seen(r)?),
        ("n3-levers", n3_levers(r)?),
        ("precision", precision(r)?),
        ("reference", reference(r)?),
        ("reference-levers", reference_levers(r)?),
        ("reference-cross", reference_cross(r)?),
        ("quickstart", quickstart(r)?),
        ("quickstart-schedule", quickstart_schedule(r)?),
        ("f32-peer", f32_peer(r)?),
    ];
    let mut fragments: Vec<Fragment> = pairs.into_iter().map(|(name, text)| Fragment::new("hib", name, text)).collect();
    for study in ab_studies(r)? {
        let arms: Vec<&str> = study.arms.iter().map(String::as_str).collect();
        let control_from = study.control_from.as_ref().map(|(s, a)| (s.as_str(), a.as_str()));
        fragments.push(Fragment::new("hib", &study.name, ab(r, &study.name, &arms, control_from)?));
    }
    Ok(fragments)
}

// ----- folders and names ---------------------------------------------------------------------

/// `moved-aside.json`: the marker `scripts/hib-move-table.py` leaves in a table folder it moves
/// aside before its setting is retrained, so the old table stays as evidence and says what it
/// was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MovedAside {
    /// The setting the folder was (`n2-d2`).
    pub setting: String,
    /// Which of the setting's tables it is, in the order they were trained (1: the first).
    pub table: u32,
}

/// The marker's file name in a moved-aside folder.
pub const MOVED_ASIDE_FILE: &str = "moved-aside.json";

/// Every table folder under `results/hib/` moved aside, as their markers describe them.
/// (folder, setting, "first table", table number).
struct Asides(Vec<(String, String, String, u32)>);

impl Asides {
    /// The markers of `results/hib/*/`.
    fn read(results: &Results) -> Result<Self> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(results.path(HIB)).map_err(|e| missing(HIB, e.to_string()))?.flatten() {
            let folder = entry.file_name().to_string_lossy().into_owned();
            let marker = format!("{HIB}/{folder}/{MOVED_ASIDE_FILE}");
            if results.exists(&marker) {
                let m: MovedAside = results.json(&marker)?;
                found.push((m.table, folder, m.setting));
            }
        }
        // Each setting's newest first.
        found.sort_by(|a, b| (&a.2, b.0).cmp(&(&b.2, a.0)));
        let ordinal = |n: u32| match n {
            1 => "first".to_string(),
            2 => "second".to_string(),
            3 => "third".to_string(),
            n => format!("{n}th"),
        };
        Ok(Asides(
            found
                .into_iter()
                .map(|(n, folder, setting)| (folder, setting, format!("{} table", ordinal(n)), n))
                .collect(),
        ))
    }

    /// The folders moved aside from `setting`, newest first.
    fn of(&self, setting: &str) -> Vec<String> {
        self.0.iter().filter(|a| a.1 == setting).map(|a| a.0.clone()).collect()
    }

    /// A moved-aside folder's setting and how a table row names it ("first table").
    fn get(&self, folder: &str) -> Option<(&str, &str)> {
        self.0.iter().find(|a| a.0 == folder).map(|a| (a.1.as_str(), a.2.as_str()))
    }

    /// Every instance table folder, each setting then the tables moved aside from it; the number
    /// line last.
    fn instance_tables_folders(&self) -> Vec<String> {
        SETTINGS.iter().chain(&["n2-d1"]).flat_map(|s| std::iter::once(s.to_string()).chain(self.of(s))).collect()
    }

    /// The folders of Tables 1 and 2 (all but the number line's).
    fn table_folders(&self) -> Vec<String> {
        self.instance_tables_folders()
            .into_iter()
            .filter(|f| SETTINGS.contains(&self.get(f).map_or(f.as_str(), |a| a.0)))
            .collect()
    }

    /// `n2-d3` → `N = 2, D = 3`; a table moved aside → `N = 2, D = 2 (first table)`.
    fn label(&self, setting: &str) -> String {
        if let Some((of, name)) = self.get(setting) {
            return format!("{} ({name})", self.label(of));
        }
        setting.replace('n', "N = ").replace("-d", ", D = ")
    }
}

/// (lever, seed, folder) of every `<lever>-seed<N>` run folder under `results/hib/<study>`,
/// in name order.
fn lever_runs(results: &Results, study: &str) -> Vec<(String, u64, String)> {
    let base = format!("{HIB}/{study}");
    subfolders(results, &base)
        .into_iter()
        .filter_map(|n| {
            let (lever, seed) = n.rsplit_once("-seed")?;
            if lever.is_empty() || seed.is_empty() || !seed.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            Some((lever.to_string(), seed.parse().ok()?, format!("{base}/{n}")))
        })
        .collect()
}

/// The names of the folders in `base`, in name order; none where `base` does not exist.
fn subfolders(results: &Results, base: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(results.path(base))
        .map(|d| {
            d.flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn has(results: &Results, folder: &str, name: &str) -> bool {
    results.exists(&format!("{folder}/{name}"))
}

fn config(results: &Results, folder: &str) -> Result<RunConfig> {
    results.json(&format!("{folder}/config.json"))
}

fn state(results: &Results, folder: &str) -> Result<RunState> {
    results.json(&format!("{folder}/state.json"))
}

fn best(results: &Results, folder: &str) -> Result<BestModel> {
    results.json(&format!("{folder}/best.json"))
}

fn monitor(results: &Results, folder: &str) -> Result<Vec<MonitorRecord>> {
    results.json_lines(folder, "monitor.jsonl")
}

fn summary(results: &Results, folder: &str) -> Result<ReproduceSummary> {
    results.json(&format!("{folder}/summary.json"))
}

// ----- numbers -------------------------------------------------------------------------------

fn v(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

fn four_quick(q: &QuickEval) -> [f64; 4] {
    [q.ap_clean, q.ap_corrupt, q.knn_clean, q.knn_corrupt]
}

fn four_model(m: &ModelSummary) -> [f64; 4] {
    four(&m.verification_ap, &m.knn_accuracy)
}

/// `a / b / c / d` with three decimals (`dot`: `.973` rather than `0.973`).
fn fmt4(values: [f64; 4], dot: bool) -> String {
    cells4(values, dot).join(" / ")
}

fn plus3(x: f64) -> String {
    format!("{x:+.3}").replace('-', "−")
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// A Table 1 cell of a table's model: `value` or `value ± sd`.
fn cell(value: Option<f64>, std: Option<f64>) -> String {
    match std {
        None => fixed(v(value), 3),
        Some(sd) => format!("{} ± {}", fixed(v(value), 3), fixed(sd, 3)),
    }
}

/// The model's cell `k` of Table 1 (`kept`: the KNN cells under the kept-gallery reading).
fn model_cell(m: &ModelSummary, k: usize, kept: bool) -> Option<(Option<f64>, Option<f64>)> {
    let knn = if kept { m.knn_kept.as_ref()? } else { &m.knn_accuracy };
    Some(match k {
        0 => (m.verification_ap.clean, m.verification_ap.clean_std),
        1 => (m.verification_ap.corrupt, m.verification_ap.corrupt_std),
        2 => (knn.clean, knn.clean_std),
        _ => (knn.corrupt, knn.corrupt_std),
    })
}

/// Rows `| setting | model | seeds | AP c | AP k | KNN c | KNN k |`, ours (paper); with `both_knn`
/// the KNN columns under the headline reading (probe kept in the gallery) and then left out.
fn table1_rows(
    results: &Results,
    folder: &str,
    label: &str,
    both_knn: bool,
) -> Result<(ReproduceSummary, Vec<String>)> {
    let s = summary(results, folder)?;
    let mut rows = Vec::new();
    let columns: &[(usize, bool)] = if both_knn {
        &[(0, false), (1, false), (2, true), (3, true), (2, false), (3, false)]
    } else {
        &[(0, false), (1, false), (2, false), (3, false)]
    };
    for (key, name) in MODELS {
        let Some(m) = s.models.get(key) else { continue };
        let paper = s.paper.as_ref().and_then(|p| p.get(key));
        let mut cells = Vec::new();
        for &(k, kept) in columns {
            let Some((value, std)) = model_cell(m, k, kept) else {
                cells.push("not scored".to_string());
                continue;
            };
            let ours = cell(value, std);
            cells.push(match paper {
                Some(p) => format!("{ours} ({})", fixed(four_paper(p)[k], 3)),
                None => ours,
            });
        }
        // An instance table scored on another test set than `test` (N = 3: `test_seen`) says so.
        let split = if s.protocol == NDigitProtocol::Instance && s.split != NDigitSplit::Test {
            format!(", `{}`", split_name(s.split))
        } else {
            String::new()
        };
        rows.push(format!("| {label}{split} | {name} | {} | {} |", m.seeds, cells.join(" | ")));
    }
    Ok((s, rows))
}

fn split_name(split: NDigitSplit) -> String {
    serde_json::to_value(split).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

// ----- Table 1 -------------------------------------------------------------------------------

fn open_set(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let mut out = vec![
        "| N, D | model | seeds | AP clean | AP corrupt | KNN clean | KNN corrupt |".to_string(),
        "|---|---|---|---|---|---|---|".into(),
    ];
    let mut gaps: Vec<(f64, String, f64, f64)> = Vec::new();
    let (mut budgets, mut held_out) = (Vec::<f64>::new(), BTreeSet::new());
    for setting in SETTINGS {
        let folder = format!("{HIB}/open-set/{setting}");
        if !has(results, &folder, "summary.json") {
            continue;
        }
        let (s, rows) = table1_rows(results, &folder, &a.label(setting), false)?;
        out.extend(rows);
        if let Some(b) = s.budget_minutes {
            if !budgets.contains(&b) {
                budgets.push(b);
            }
        }
        for model in s.models.values() {
            for run in &model.runs {
                held_out.insert(config(results, run)?.hib.data.validation_classes);
            }
        }
        if let Some(other) = &s.other_split {
            for (key, name) in MODELS {
                let (a, b) = match (s.models.get(key), other.models.get(key)) {
                    (Some(a), Some(b)) => (four_model(a), four_model(b)),
                    _ => return Err(missing(&folder, format!("no {key} on both splits"))),
                };
                for (k, (metric, variant)) in
                    [("VERIFICATION", "clean"), ("VERIFICATION", "corrupt"), ("KNN", "clean"), ("KNN", "corrupt")]
                        .iter()
                        .enumerate()
                {
                    gaps.push(((a[k] - b[k]).abs(), format!("{setting} {name} {metric} {variant}"), a[k], b[k]));
                }
            }
        }
    }
    budgets.sort_by(f64::total_cmp);
    let budget = budgets.iter().map(|b| short(*b)).collect::<Vec<_>>().join(" or ");
    let classes = held_out.iter().map(usize::to_string).collect::<Vec<_>>().join(" or ");
    let fewest = held_out.iter().next().copied().unwrap_or_default();
    let mut text = vec![
        format!(
            "Open-set tables (hedge's extension, not the paper's Table 1): trained on the \"number\" tables' training \
             classes less {classes} held out as validation classes (at N = 2, {} of 70), scored on `test_unseen` \
             (classes never trained on), {budget} minutes of training a model; ours (paper's Table 1), mean ± sd over \
             seeds where there are several:",
            70 - fewest
        ),
        String::new(),
    ];
    text.extend(out);
    let largest = |kind: &str| {
        gaps.iter()
            .filter(|g| g.1.contains(kind))
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)).then(a.2.total_cmp(&b.2)))
            .cloned()
    };
    if let (Some(ap), Some(knn)) = (largest("VERIFICATION"), largest("KNN")) {
        text.push(String::new());
        text.push(format!(
            "`test_seen` beside `test_unseen` (each folder's `other_split`): verification AP differs by up to {} ({}: {} \
             unseen, {} seen), KNN by up to {} ({}: {} unseen, {} seen).",
            fixed(ap.0, 3),
            ap.1.replace("VERIFICATION", "AP"),
            fixed(ap.2, 3),
            fixed(ap.3, 3),
            fixed(knn.0, 3),
            knn.1,
            fixed(knn.2, 3),
            fixed(knn.3, 3)
        ));
    }
    Ok(text.join("\n"))
}

fn instance_tables(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let mut out = vec![
        "| N, D | model | seeds | AP clean | AP corrupt | KNN clean | KNN corrupt | KNN clean, leave-one-out | KNN \
         corrupt, leave-one-out |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---|".into(),
    ];
    let mut found = false;
    for setting in a.table_folders() {
        let folder = format!("{HIB}/{setting}");
        if !has(results, &folder, "summary.json") || summary(results, &folder)?.protocol != NDigitProtocol::Instance {
            continue;
        }
        found = true;
        out.extend(table1_rows(results, &folder, &a.label(&setting), true)?.1);
    }
    if !found {
        out = vec!["No instance-protocol table has finished yet (`hedge study studies/hib/table.toml` trains them; \
                    `results/hib/time-to-quality.md` says where the study stands)."
            .into()];
    }
    let note =
        "KNN clean and KNN corrupt: each clean test image's K = 5 neighbours in the whole test gallery, its own \
                image (or occluded twin) kept, the headline reading (`results/hib/README.md` says why, under \"KNN \
                accuracy\"); the last two columns leave it out. A table whose runs were scored before the kept \
                reading existed and was not scored again says `not scored`.";
    for line in [note.to_string(), recipes_line(results)?, finished_runs_line(results)?] {
        if !line.is_empty() {
            out.push(String::new());
            out.push(line);
        }
    }
    Ok(out.join("\n"))
}

fn paper_items(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let tables = a.table_folders();
    let with_asides = |s: &str| -> Vec<String> { std::iter::once(s.to_string()).chain(a.of(s)).collect() };
    let items: Vec<(&str, &str, Vec<String>)> = vec![
        ("Table 1: verification AP and KNN accuracy", "table1.md", tables.clone()),
        ("Table 2: Kendall's τ between the η bin and AP or KNN", "table2.md", tables.clone()),
        (
            "Table 5 (Appendix E): β = 0 against β = 1e-4",
            "table5.md",
            with_asides("n2-d2").into_iter().chain(with_asides("n3-d3")).collect(),
        ),
        ("Table 6 (Appendix G): plurality KNN by gallery and probe", "table6.md", tables.clone()),
        ("Table 7 (Appendix G): τ by gallery and probe", "table7.md", tables.clone()),
        (
            "Appendix B (Figure 6): soft against vanilla contrastive loss, four margins",
            "appendix_b.md",
            with_asides("n2-d2"),
        ),
        (
            "Appendix D (Figure 11): the number line, adjacent pairs and run lengths",
            "appendix_d.md",
            with_asides("n2-d1"),
        ),
        ("Figure 5: AP and KNN by η bin (N = 3, D = 3, MoG-1)", "uncertainty_bins_mog1.png", with_asides("n3-d3")),
        ("Figures 3, 7, 8: embeddings of clean and corrupt test images", "embeddings_mog1.png", tables),
    ];
    let mut rows = vec!["| the paper's | written to | still to come |".to_string(), "|---|---|---|".into()];
    for (item, name, folders) in items {
        let exists = |f: &str| results.exists(&format!("{HIB}/{f}/{name}"));
        let have: Vec<String> = folders.iter().filter(|f| exists(f)).map(|f| format!("`{f}/{name}`")).collect();
        let missing_: Vec<&String> = folders.iter().filter(|f| !exists(f) && a.get(f).is_none()).collect();
        let todo = if missing_.is_empty() {
            String::new()
        } else {
            format!(
                "not yet: {}",
                missing_
                    .iter()
                    .map(|f| format!("step `{f}` of `hedge study studies/hib/table.toml`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let have = if have.is_empty() { "—".to_string() } else { have.join(", ") };
        rows.push(format!("| {item} | {have} | {todo} |"));
    }
    Ok(rows.join("\n"))
}

// ----- recipes -------------------------------------------------------------------------------

/// A run's settings by name (the serde form of `HibConfig` every config file records).
type Recipe = Map<String, Value>;

#[derive(Debug, Deserialize)]
struct RunRecipe {
    hib: Recipe,
}

/// A reproduction's `config.json`: its recipe (schema 1), or the settings it laid over its
/// recipe (schema 2, [`crate::hib::reproduce::ReproduceConfig::hib`]).
#[derive(Debug, Deserialize)]
struct TableRecipe {
    #[serde(alias = "hib")]
    recipe: Recipe,
}

fn run_recipe(results: &Results, folder: &str) -> Result<Recipe> {
    Ok(results.json::<RunRecipe>(&format!("{folder}/config.json"))?.hib)
}

fn table_recipe(results: &Results, folder: &str) -> Result<Recipe> {
    Ok(results.json::<TableRecipe>(&format!("{folder}/config.json"))?.recipe)
}

/// Two setting values alike (numbers by value: `0` and `0.0` are one).
fn same_value(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(Some(a), Some(b)))
        }
        _ => a == b,
    }
}

/// A recipe field, an A/B key absent from an older config read as its default.
fn recipe_value(config: &Recipe, key: &str) -> Option<Value> {
    config.get(key).cloned().or_else(|| ab_keys().into_iter().find(|(k, _)| *k == key).map(|(_, d)| d))
}

/// The recipe fields of a config: the lever and study keys less the batch settings its batch
/// composition does not use, then the A/B keys it sets away from their defaults.
fn recipe_keys(config: &Recipe) -> Vec<String> {
    let grouped = config.get("batch").and_then(Value::as_str) == Some("grouped");
    let mut keys: Vec<String> = LEVER_KEYS
        .iter()
        .chain(&STUDY_KEYS)
        .filter(|k| if grouped { **k != "batch_pairs" } else { !["group_classes", "group_size"].contains(k) })
        .map(|k| k.to_string())
        .collect();
    for (key, default) in ab_keys() {
        if !same_value(config.get(key).or(Some(&default)), Some(&default)) {
            keys.push(key.to_string());
        }
    }
    keys
}

fn same_recipe(a: &Recipe, b: &Recipe) -> bool {
    let mut keys = recipe_keys(a);
    for k in recipe_keys(b) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.iter().all(|k| same_value(recipe_value(a, k).as_ref(), recipe_value(b, k).as_ref()))
}

/// The lever of the f32 study whose seed-0 run trained `config`'s recipe, or an A/B study's arm
/// on it (`l-peak1e-2-16x16 + weight-decay/wd1e-1`), or `None`.
fn recipe_lever(results: &Results, config: &Recipe) -> Result<Option<String>> {
    for (lever, seed, folder) in lever_runs(results, RECIPE_STUDY) {
        if seed == 0 && same_recipe(&run_recipe(results, &folder)?, config) {
            return Ok(Some(lever));
        }
    }
    for study in ab_studies(results)? {
        let control_from = study.control_from.as_ref().map(|(s, a)| (s.as_str(), a.as_str()));
        let study = study.name.as_str();
        for (arm, seed, folder, _) in ab_runs(results, study) {
            if seed != 0 || arm == "control" {
                continue;
            }
            let arm_config = run_recipe(results, &folder)?;
            if same_recipe(&arm_config, config) {
                // The arm's recipe less its own settings is a lever's (no arm sets none).
                let mut base = arm_config.clone();
                for (k, d) in ab_keys() {
                    base.insert(k.into(), d);
                }
                let named = recipe_lever(results, &base)?.unwrap_or_else(|| "a recipe of no lever".into());
                let through = match control_from {
                    Some((other, other_arm)) if other_arm != "control" => format!(" + {other}/{other_arm}"),
                    _ => String::new(),
                };
                return Ok(Some(format!("{named}{through} + {study}/{arm}")));
            }
        }
    }
    Ok(None)
}

/// `results/hib/recipe.toml`'s settings.
fn current_recipe(results: &Results) -> Result<Recipe> {
    let file = format!("{HIB}/recipe.toml");
    let text = results.text(&file)?;
    toml::from_str::<Recipe>(&text)
        .map_err(|e| crate::LabError::Run(hedge_run::RunError::format(results.path(&file), "TOML", e.to_string())))
}

/// Which lever's recipe each instance setting trained (its `config.json`).
fn recipes_line(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let current = current_recipe(results)?;
    let mut named = Vec::new();
    for setting in a.instance_tables_folders() {
        let folder = format!("{HIB}/{setting}");
        if !has(results, &folder, "config.json") {
            continue;
        }
        let config = table_recipe(results, &folder)?;
        let lever = recipe_lever(results, &config)?.unwrap_or_else(|| "a recipe of no lever".into());
        let ab: Vec<&str> = ab_keys().iter().map(|(k, _)| *k).collect();
        let today = current.iter().all(|(k, v)| same_value(recipe_value(&config, k).as_ref(), Some(v)))
            && recipe_keys(&config).iter().filter(|k| ab.contains(&k.as_str())).all(|k| current.contains_key(k));
        let mark = if today { " (today's `recipe.toml`)" } else { "" };
        named.push(format!("{} `{lever}`{mark}", a.label(&setting)));
    }
    if named.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "Recipe each setting trained (its `config.json`, named by the `{RECIPE_STUDY}/` lever whose seed 0 trained it, \
         and the arm of an A/B study, `studies/hib/ab-*.toml`, added to it where one was): {}.",
        named.join("; ")
    ))
}

/// `[0, 1, 2, 4]` → `0–2, 4`.
fn seed_ranges(seeds: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut start = None;
    for (i, &seed) in seeds.iter().enumerate() {
        let first = *start.get_or_insert(seed);
        if i + 1 == seeds.len() || seeds[i + 1] != seed + 1 {
            parts.push(if first == seed { seed.to_string() } else { format!("{first}–{seed}") });
            start = None;
        }
    }
    parts.join(", ")
}

/// Which run folders of each instance setting have ended (`runs/*/eval.json`).
fn finished_runs_line(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let mut settings = Vec::new();
    for setting in a.instance_tables_folders() {
        let runs = lever_runs(results, &format!("{setting}/runs"));
        let ended: Vec<&(String, u64, String)> = runs.iter().filter(|r| has(results, &r.2, "eval.json")).collect();
        let mut by_model: Vec<(String, Vec<u64>)> = Vec::new();
        for (model, seed, _) in &ended {
            match by_model.iter_mut().find(|m| &m.0 == model) {
                Some(m) => m.1.push(*seed),
                None => by_model.push((model.clone(), vec![*seed])),
            }
        }
        if by_model.is_empty() {
            continue;
        }
        let count: usize = by_model.iter().map(|m| m.1.len()).sum();
        let models = by_model
            .iter()
            .map(|(model, seeds)| {
                let mut sorted = seeds.clone();
                sorted.sort_unstable();
                format!("`{model}` seed{} {}", if seeds.len() > 1 { "s" } else { "" }, seed_ranges(&sorted))
            })
            .collect::<Vec<_>>()
            .join("; ");
        let mut line = format!("{}, {count} run{} ({models})", a.label(&setting), if count > 1 { "s" } else { "" });
        if !has(results, &format!("{HIB}/{setting}"), "summary.json") {
            // No table row yet: each ended run's own four test numbers.
            let each: Vec<String> = ended
                .iter()
                .map(|(model, seed, folder)| {
                    let e: EvalReport = results.json(&format!("{folder}/eval.json"))?;
                    Ok(format!("`{model}-seed{seed}` {}", fmt4(four_eval(&e), false)))
                })
                .collect::<Result<_>>()?;
            line.push_str(&format!(", test AP clean / AP corrupt / KNN clean / KNN corrupt: {}", each.join("; ")));
        }
        settings.push(line);
    }
    if settings.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "Runs that have ended (`<setting>/runs/*/eval.json`; a table row above comes from its setting's \
         `summary.json`, rewritten only when every run of the folder's reproduction has ended): {}.",
        settings.join("; ")
    ))
}

// ----- lever studies -------------------------------------------------------------------------

/// (lever, mean validation score, runs as (seed, score)) of a study's finished runs, best first.
/// A lever, its mean validation score, and its runs as (seed, score).
type RankedLever = (String, f64, Vec<(u64, f64)>);

fn ranked_levers(results: &Results, study: &str) -> Result<Vec<RankedLever>> {
    let mut scores: Vec<(String, Vec<(u64, f64)>)> = Vec::new();
    for (lever, seed, folder) in lever_runs(results, study) {
        if has(results, &folder, "done") {
            let score = best(results, &folder)?.score;
            match scores.iter_mut().find(|s| s.0 == lever) {
                Some(s) => s.1.push((seed, score)),
                None => scores.push((lever, vec![(seed, score)])),
            }
        }
    }
    let mut ranked: Vec<RankedLever> = scores
        .into_iter()
        .map(|(lever, runs)| {
            let m = mean(&runs.iter().map(|r| r.1).collect::<Vec<_>>());
            (lever, m, runs)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(ranked)
}

fn instance_levers(results: &Results, study: &str) -> Result<String> {
    let mut out = vec![
        "| lever | seed | steps | training min (recorded) | chosen at step | validation (chosen) | test (chosen) | test \
         (last watch) |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|".into(),
    ];
    for (lever, seed, folder) in lever_runs(results, study) {
        if !has(results, &folder, "done") {
            continue;
        }
        let steps = config(results, &folder)?.hib.schedule.steps;
        let records = monitor(results, &folder)?;
        let b = best(results, &folder)?;
        let chosen = records
            .iter()
            .find(|r| r.step == b.step)
            .ok_or_else(|| missing(&folder, format!("no watch at step {}", b.step)))?;
        let last = records.last().ok_or_else(|| missing(&folder, "an empty monitor.jsonl"))?;
        let set = |r: &MonitorRecord, name: &str| -> Result<String> {
            Ok(fmt4(four_quick(r.sets.get(name).ok_or_else(|| missing(&folder, format!("no {name} watch")))?), false))
        };
        out.push(format!(
            "| {lever} | {seed} | {steps} | {} | {} | {} | {} | {} |",
            fixed(state(results, &folder)?.seconds / 60.0, 1),
            b.step,
            set(chosen, "validation")?,
            set(chosen, "test")?,
            set(last, "test")?
        ));
    }
    let ranked = ranked_levers(results, study)?;
    if ranked.is_empty() {
        return Ok("No lever run has finished yet.".into());
    }
    out.extend([
        String::new(),
        "| lever | seeds | mean validation score (mean of the four numbers at the chosen step) | by seed |".into(),
        "|---|---|---|---|".into(),
    ]);
    for (lever, m, mut runs) in ranked {
        runs.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let by_seed = runs.iter().map(|r| fixed(r.1, 4)).collect::<Vec<_>>().join(" / ");
        out.push(format!("| {lever} | {} | {} | {by_seed} |", runs.len(), fixed(m, 4)));
    }
    Ok(out.join("\n"))
}

/// The paper's Table 1 MoG-1 values at N = 2, D = 2 (as the open-set summary records them).
fn paper_mog1_n2d2(results: &Results) -> Result<[f64; 4]> {
    paper_model(results, &format!("{HIB}/open-set/n2-d2"), "mog1")
}

fn paper_model(results: &Results, folder: &str, model: &str) -> Result<[f64; 4]> {
    table_paper(results, folder)?
        .and_then(|p| p.get(model).map(four_paper))
        .ok_or_else(|| missing(&format!("{folder}/summary.json"), format!("no paper {model}")))
}

fn recipe_45min(results: &Results) -> Result<String> {
    let folder = format!("{HIB}/open-set/recipe-45min");
    let records = monitor(results, &folder)?;
    let best_step = best(results, &folder)?.step;
    let mut rows = vec![
        "| minutes | step | validation score | test_unseen AP clean / corrupt | KNN clean / corrupt |".to_string(),
        "|---|---|---|---|---|".into(),
    ];
    for (i, r) in records.iter().enumerate() {
        let end = i + 1 == records.len();
        if ![2000, 4000, 5000, 7000, 9000].contains(&r.step) && r.step != best_step && !end {
            continue;
        }
        let get = |n: &str| r.sets.get(n).ok_or_else(|| missing(&folder, format!("no {n} watch")));
        let (val, t) = (four_quick(get("validation")?), four_quick(get("test_unseen")?));
        let mut label = fixed(r.train_seconds / 60.0, 1);
        if r.step == best_step {
            label.push_str(" (best on validation)");
        }
        if end {
            label.push_str(" (end of the budget)");
        }
        rows.push(format!(
            "| {label} | {} | {} | {} / {} | {} / {} |",
            thousands(r.step as u64),
            fixed(val.iter().sum::<f64>() / 4.0, 3),
            fixed(t[0], 3),
            fixed(t[1], 3),
            fixed(t[2], 3),
            fixed(t[3], 3)
        ));
    }
    let p = paper_mog1_n2d2(results)?;
    rows.push(format!(
        "| paper, 500k steps | | | {} / {} | {} / {} |",
        fixed(p[0], 3),
        fixed(p[1], 3),
        fixed(p[2], 3),
        fixed(p[3], 3)
    ));
    Ok(rows.join("\n"))
}

const OPEN_SET_LEVERS: &str = "results/hib/open-set/levers";

/// A finished open-set lever run's last watch: step, minutes, ms a step, and each set's four.
struct LeverWatch {
    step: usize,
    minutes: f64,
    ms: f64,
    sets: BTreeMap<String, [f64; 4]>,
}

impl LeverWatch {
    fn set(&self, name: &str) -> [f64; 4] {
        self.sets.get(name).copied().unwrap_or([f64::NAN; 4])
    }
}

fn open_set_lever(results: &Results, folder: &str) -> Result<Option<LeverWatch>> {
    let path = format!("{OPEN_SET_LEVERS}/{folder}");
    if !has(results, &path, "done") {
        return Ok(None);
    }
    let records = monitor(results, &path)?;
    let record = records.last().ok_or_else(|| missing(&path, "an empty monitor.jsonl"))?;
    let seconds = state(results, &path)?.seconds;
    Ok(Some(LeverWatch {
        step: record.step,
        minutes: seconds / 60.0,
        ms: 1000.0 * seconds / record.step as f64,
        sets: record.sets.iter().map(|(k, q)| (k.clone(), four_quick(q))).collect(),
    }))
}

fn slash(values: [f64; 4]) -> String {
    fmt4(values, false)
}

fn open_set_ladder(results: &Results) -> Result<String> {
    let ladder = [
        ("a-baseline", "Adam 1e-3 constant (the committed grouped recipe)"),
        ("b-cosine", "cosine decay from 1e-3"),
        ("c-lr3e-3-warmup", "peak 3e-3, 200 warm-up steps, cosine"),
        ("d-head", "+ a, b at 30x the learning rate, b from the first batch"),
        ("e-bn", "+ batch norm after each conv"),
        ("f-allpairs", "+ all 32,640 pairs of the 256 images"),
        ("g-ema", "+ EMA of the weights, decay 0.999"),
    ];
    let mut rows = vec![
        "| run | levers added | steps | min | ms/step | validation (AP c / AP k / KNN c / KNN k) | val. score | \
         test_unseen | test_seen |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---|".into(),
    ];
    for (run, levers) in ladder {
        let r =
            open_set_lever(results, run)?.ok_or_else(|| missing(OPEN_SET_LEVERS, format!("{run} has not finished")))?;
        let val = r.set("validation");
        rows.push(format!(
            "| {run} | {levers} | {} | {} | {} | {} | {} | {} | {} |",
            r.step,
            fixed(r.minutes, 1),
            fixed(r.ms, 0),
            slash(val),
            fixed(val.iter().sum::<f64>() / 4.0, 3),
            slash(r.set("test_unseen")),
            slash(r.set("test_seen"))
        ));
    }
    rows.push(format!("| paper (500k steps) | | | | | | | {} (Table 1, MoG-1) | |", slash(paper_mog1_n2d2(results)?)));
    Ok(rows.join("\n"))
}

fn open_set_seeds(results: &Results) -> Result<String> {
    let mut runs = subfolders(results, OPEN_SET_LEVERS);
    runs.retain(|d| d.rsplit_once("-seed").is_none_or(|(_, s)| s.is_empty() || !s.chars().all(|c| c.is_ascii_digit())));
    let mut out = vec![
        "| run | seed | steps | min | validation | val. score | score − seed 0's | test_unseen | test_seen |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---|".into(),
    ];
    for run in runs {
        let mut rows: Vec<LeverWatch> = Vec::new();
        for seed in 0..10 {
            let folder = if seed == 0 { run.clone() } else { format!("{run}-seed{seed}") };
            let Some(r) = open_set_lever(results, &folder)? else { continue };
            let score = r.set("validation").iter().sum::<f64>() / 4.0;
            // Against the first run found (seed 0's where it has finished; this one otherwise).
            let first = rows.first().unwrap_or(&r).set("validation").iter().sum::<f64>() / 4.0;
            let gap = if seed > 0 { format!("{:+.3}", score - first).replace('-', "−") } else { String::new() };
            out.push(format!(
                "| {run} | {seed} | {} | {} | {} | {} | {gap} | {} | {} |",
                r.step,
                fixed(r.minutes, 1),
                slash(r.set("validation")),
                fixed(score, 3),
                slash(r.set("test_unseen")),
                slash(r.set("test_seen"))
            ));
            rows.push(r);
        }
        if rows.len() > 1 {
            let mean_of = |name: &str| {
                let mut m = [0.0; 4];
                for (i, slot) in m.iter_mut().enumerate() {
                    *slot = rows.iter().map(|r| r.set(name)[i]).sum::<f64>() / rows.len() as f64;
                }
                m
            };
            let val = mean_of("validation");
            out.push(format!(
                "| **{run}** | mean of {} | | | {} | **{}** | | {} | {} |",
                rows.len(),
                slash(val),
                fixed(val.iter().sum::<f64>() / 4.0, 3),
                slash(mean_of("test_unseen")),
                slash(mean_of("test_seen"))
            ));
        }
    }
    Ok(out.join("\n"))
}

// ----- the long run --------------------------------------------------------------------------

const LONG_RUN_STEPS: f64 = 100_000.0;
const LONG_RUN: &str = "results/hib/long-run";

fn gpu_calls(results: &Results) -> Result<Vec<GpuCall>> {
    results.json_lines(&format!("{HIB}/paper-schedule-gpu"), "sessions.jsonl")
}

fn long_run_cost(results: &Results) -> Result<String> {
    let n2d2_first = aside_table(results, "n2-d2", 1)?;
    let mut rows = vec![
        format!("| where | run measured | ms a training step | {} steps |", thousands(LONG_RUN_STEPS as u64)),
        "|---|---|---|---|".into(),
    ];
    for (study, place) in [
        ("instance-levers", "CPU with native bf16, 2 threads (bf16 study)"),
        ("instance-levers-f32", "AVX2-only CPU, 2 threads (f32 study)"),
    ] {
        let runs: Vec<(String, u64, String)> =
            lever_runs(results, study).into_iter().filter(|r| r.1 == 0 && has(results, &r.2, "done")).collect();
        let Some((lever, _, folder)) =
            ["b-cosine", "a-constant"].iter().find_map(|name| runs.iter().find(|r| r.0 == *name))
        else {
            continue;
        };
        let st = state(results, folder)?;
        let per_step = st.seconds / st.step as f64;
        rows.push(format!(
            "| {place} | 32 x 8 images, {lever} seed 0 | {} | {} h |",
            fixed(per_step * 1e3, 0),
            fixed(per_step * LONG_RUN_STEPS / 3600.0, 1)
        ));
    }
    // The long run trains the first N = 2, D = 2 table's recipe (f32 convolutions), so that
    // table's own MoG-1 seeds give its cost most directly.
    let mut per_step: Vec<f64> = Vec::new();
    for (lever, _, folder) in lever_runs(results, &format!("{n2d2_first}/runs")) {
        if lever == "mog1" && has(results, &folder, "eval.json") {
            let st = state(results, &folder)?;
            per_step.push(st.seconds / st.step as f64);
        }
    }
    if !per_step.is_empty() {
        let (lo, hi) = range(&per_step);
        rows.push(format!(
            "| CPU with native bf16, 2 threads, f32 (the first N = 2, D = 2 table) | 32 x 8 images, the recipe's MoG-1, {} \
             seed{} | {}–{} | {}–{} h |",
            per_step.len(),
            if per_step.len() > 1 { "s" } else { "" },
            fixed(lo * 1e3, 0),
            fixed(hi * 1e3, 0),
            fixed(lo * LONG_RUN_STEPS / 3600.0, 1),
            fixed(hi * LONG_RUN_STEPS / 3600.0, 1)
        ));
    }
    if let Some(last) = gpu_calls(results)?.last() {
        let r = last.runs.get("gaussian-seed0").ok_or_else(|| missing(HIB, "a GPU call without gaussian-seed0"))?;
        let per_step = (r.to_seconds - r.from_seconds) / (r.to_step - r.from_step) as f64;
        rows.push(format!(
            "| {} ({}, beside the point run) | 128 pairs, MoG-1 of `paper-schedule-gpu/` | {} | {} min |",
            last.device,
            last.date,
            fixed(per_step * 1e3, 1),
            fixed(per_step * LONG_RUN_STEPS / 60.0, 0)
        ));
    }
    Ok(rows.join("\n"))
}

/// The distinct step counts the run folders `runs` planned, lowest first.
fn planned_steps(results: &Results, runs: &[String]) -> Result<Vec<usize>> {
    let steps: BTreeSet<usize> =
        runs.iter().map(|r| Ok(config(results, r)?.hib.schedule.steps)).collect::<Result<_>>()?;
    Ok(steps.into_iter().collect())
}

fn steps_or(steps: &[usize]) -> String {
    steps.iter().map(|n| thousands(*n as u64)).collect::<Vec<_>>().join(" or ")
}

fn first_table_mog1(results: &Results) -> Result<ModelSummary> {
    let n2d2_first = aside_table(results, "n2-d2", 1)?;
    let s = summary(results, &format!("{HIB}/{n2d2_first}"))?;
    s.models.get("mog1").cloned().ok_or_else(|| missing(&n2d2_first, "no mog1"))
}

fn long_run_progress(results: &Results) -> Result<String> {
    let n2d2_first = aside_table(results, "n2-d2", 1)?;
    if !has(results, LONG_RUN, "state.json") {
        return Ok("Not started.".into());
    }
    let st = state(results, LONG_RUN)?;
    let steps = config(results, LONG_RUN)?.hib.schedule.steps;
    let mut out = vec![format!(
        "Trained so far (`long-run/state.json`, where `--resume` starts): {} of {} steps, {} minutes of training.",
        thousands(st.step as u64),
        thousands(steps as u64),
        fixed(st.seconds / 60.0, 1)
    )];
    let watches: Vec<MonitorRecord> = if has(results, LONG_RUN, "monitor.jsonl") {
        monitor(results, LONG_RUN)?.into_iter().filter(|w| w.step <= st.step).collect()
    } else {
        Vec::new()
    };
    if !watches.is_empty() {
        out.extend([
            String::new(),
            "| step | training min | test: AP clean / corrupt / KNN clean / corrupt | validation: the same |".into(),
            "|---|---|---|---|".into(),
        ]);
        for w in &watches {
            let set = |n: &str| w.sets.get(n).map(|q| fmt4(four_quick(q), true)).unwrap_or_default();
            out.push(format!(
                "| {} | {} | {} | {} |",
                thousands(w.step as u64),
                fixed(w.train_seconds / 60.0, 1),
                set("test"),
                set("validation")
            ));
        }
    }
    if has(results, LONG_RUN, "curve.json") {
        let curve: Vec<hedge_embed::report::CurvePoint> = results.json(&format!("{LONG_RUN}/curve.json"))?;
        let paper = paper_model(results, &format!("{HIB}/{n2d2_first}"), "mog1")?;
        out.extend([
            String::new(),
            format!(
                "The kept copies on the test split (`long-run/curve.json`, `hib curve`, {} Monte-Carlo repeats), beside \
                 the table's MoG-1 and the paper:",
                curve.first().and_then(|c| c.repeats).map_or_else(|| "None".into(), |r| r.to_string())
            ),
            String::new(),
            "| step | training min | AP clean / corrupt / KNN clean / corrupt |".into(),
            "|---|---|---|".into(),
        ]);
        for r in &curve {
            out.push(format!(
                "| {} | {} | {} |",
                thousands(r.step as u64),
                fixed(v(r.train_seconds) / 60.0, 1),
                fmt4(four(&r.verification_ap, &r.knn_accuracy), true)
            ));
        }
        let mog1 = first_table_mog1(results)?;
        let steps = planned_steps(results, &mog1.runs)?;
        let minutes: Vec<f64> =
            mog1.runs.iter().map(|r| Ok(state(results, r)?.seconds / 60.0)).collect::<Result<_>>()?;
        let (lo, hi) = range(&minutes);
        out.push(format!(
            "| the first N = 2, D = 2 table's MoG-1 (`{n2d2_first}/`, {} seeds of {} steps, its cosine ended) | {}–{} | {} |",
            mog1.seeds,
            steps_or(&steps),
            fixed(lo, 0),
            fixed(hi, 0),
            fmt4(four_model(&mog1), true)
        ));
        out.push(format!("| paper, 500,000 | | {} |", fmt4(paper, true)));
    }
    Ok(out.join("\n"))
}

/// `digit-overlap.json` (`scripts/hib-digit-overlap.py`).
#[derive(Debug, Deserialize)]
struct DigitOverlap {
    held_out_per_class: usize,
    draws: usize,
    validation_all_digits_trained: f64,
    validation_all_digits_trained_std: f64,
    validation_any_digit_trained: f64,
    train_composites: u64,
    distinct_training_digit_images: u64,
    test_composites: u64,
}

fn long_run_gallery(results: &Results) -> Result<String> {
    let n2d2_first = aside_table(results, "n2-d2", 1)?;
    let path = format!("{LONG_RUN}/eval_test_50_per_class.json");
    if !results.exists(&path) {
        return Ok("Not measured yet.".into());
    }
    let cut: EvalReport = results.json(&path)?;
    let curve: Vec<hedge_embed::report::CurvePoint> = results.json(&format!("{LONG_RUN}/curve.json"))?;
    let last = curve.last().ok_or_else(|| missing(LONG_RUN, "an empty curve.json"))?;
    let watch = monitor(results, LONG_RUN)?
        .into_iter()
        .rfind(|w| w.step == last.step)
        .ok_or_else(|| missing(LONG_RUN, format!("no watch at step {}", last.step)))?;
    let weights_ok =
        cut.weights.as_deref().is_some_and(|w| w.ends_with(&format!("model-{:07}.safetensors", last.step)));
    if !weights_ok || cut.split != NDigitSplit::Test {
        return Err(missing(&path, format!("not the test report of curve.json's last kept copy (step {})", last.step)));
    }
    let validation = watch.sets.get("validation").ok_or_else(|| missing(LONG_RUN, "no validation watch"))?;
    let per_class = results.json::<DigitOverlap>(&format!("{HIB}/digit-overlap.json"))?.held_out_per_class;
    let images = cut.images_per_class.map_or_else(|| "None".into(), |n| n.to_string());
    let validation_cells =
        four_quick(validation).iter().map(|x| fixed(*x, 3).trim_start_matches('0').to_string()).collect::<Vec<_>>();
    Ok(format!(
        "| step {} | gallery | AP clean / corrupt / KNN clean / corrupt |\n|---|---|---|\n| test split (`curve.json`, {} \
         repeats) | 100 images a class | {} |\n| test split, first {images} images a class \
         (`eval_test_50_per_class.json`, {} repeats) | {images} a class | {} |\n| validation images (`monitor.jsonl`, 1 \
         repeat) | {per_class} a class | {} |\n| paper, MoG-1 (Table 1, its test split, 500,000 steps) | 100 a class | \
         {} |",
        thousands(last.step as u64),
        last.repeats.map_or_else(|| "None".into(), |r| r.to_string()),
        fmt4(four(&last.verification_ap, &last.knn_accuracy), true),
        cut.repeats,
        fmt4(four_eval(&cut), true),
        validation_cells.join(" / "),
        fmt4(paper_model(results, &format!("{HIB}/{n2d2_first}"), "mog1")?, true)
    ))
}

/// A gain under this many of the table's seed standard deviations is not told apart from noise.
const SPREAD: f64 = 2.0;
/// A projection past this many steps (a hundred times the paper's schedule) is not worth a number.
const FAR_STEPS: f64 = 50_000_000.0;

/// What length alone bought once the long run ended: its last kept copy against the first
/// N = 2, D = 2 table's MoG-1 (the same recipe over fewer steps), as a gain per doubling of the
/// steps, and the steps and hours each paper value would need at that gain.
fn long_run_length(results: &Results) -> Result<String> {
    let n2d2_first = aside_table(results, "n2-d2", 1)?;
    if !has(results, LONG_RUN, "curve.json") {
        return Ok("The long run has not ended yet (no `curve.json`).".into());
    }
    let steps = config(results, LONG_RUN)?.hib.schedule.steps;
    let curve: Vec<hedge_embed::report::CurvePoint> = results.json(&format!("{LONG_RUN}/curve.json"))?;
    let last = curve.last().ok_or_else(|| missing(LONG_RUN, "an empty curve.json"))?;
    if last.step < steps {
        return Ok(format!(
            "The long run's kept copies reach {} of {} steps; it has not ended yet.",
            thousands(last.step as u64),
            thousands(steps as u64)
        ));
    }
    let st = state(results, LONG_RUN)?;
    let seconds_a_step = st.seconds / st.step as f64;
    let mog1 = first_table_mog1(results)?;
    let paper = paper_model(results, &format!("{HIB}/{n2d2_first}"), "mog1")?;
    let table_steps = planned_steps(results, &mog1.runs)?;
    let doublings = (steps as f64 / *table_steps.last().unwrap_or(&1) as f64).log2();
    let long = four(&last.verification_ap, &last.knn_accuracy);
    let short_ = four_model(&mog1);
    let stds = [
        v(mog1.verification_ap.clean_std),
        v(mog1.verification_ap.corrupt_std),
        v(mog1.knn_accuracy.clean_std),
        v(mog1.knn_accuracy.corrupt_std),
    ];
    let mut rows = Vec::new();
    for (k, name) in CELL_NAMES.iter().enumerate() {
        let (long_value, short_value, short_std, target) = (long[k], short_[k], stds[k], paper[k]);
        let gain = (long_value - short_value) / doublings;
        // Doublings still needed, compared in log space: a small gain makes 2^doublings overflow.
        let still = if gain > 0.0 { (target - long_value) / gain } else { f64::INFINITY };
        let needed = if long_value >= target {
            "reached".to_string()
        } else if long_value - short_value <= SPREAD * short_std {
            "no gain beyond the seeds' spread".into()
        } else if still > (FAR_STEPS / steps as f64).log2() {
            format!("beyond {} steps", thousands(FAR_STEPS as u64))
        } else {
            let at = steps as f64 * 2f64.powf(still);
            format!("{} steps, {} h", thousands_fixed(at, 0), thousands_fixed(at * seconds_a_step / 3600.0, 0))
        };
        rows.push(format!(
            "| {name} | {} ± {} | {} | {} | {} | {needed} |",
            fixed(short_value, 3),
            fixed(short_std, 3),
            fixed(long_value, 3),
            plus3(gain),
            fixed(target, 3)
        ));
    }
    Ok(format!(
        "The same recipe with its cosine laid over {} steps instead of {} ({} doublings): the first N = 2, D = 2 table's \
         MoG-1 (`{n2d2_first}/`, mean ± std of {} seeds) against the long run's last kept copy (seed 0, {} Monte-Carlo \
         repeats), the gain per doubling of the steps, and, were that gain to hold, the steps (and hours at the long \
         run's {} ms a step) each paper value would need (a gain under {} of the table's standard deviations counts as \
         none):\n\n| number | table, end of its cosine | long run, end of its cosine | gain per doubling | paper | \
         paper reached at |\n|---|---|---|---|---|---|\n{}",
        thousands(steps as u64),
        steps_or(&table_steps),
        fixed(doublings, 1),
        mog1.seeds,
        last.repeats.map_or_else(|| "None".into(), |r| r.to_string()),
        fixed(seconds_a_step * 1000.0, 0),
        short(SPREAD),
        rows.join("\n")
    ))
}

// ----- A/B studies ---------------------------------------------------------------------------

/// The finished runs of an A/B study: `(arm, seed, run folder, its test-split report)`, from
/// the shell loop's layout (`<arm>-seed<N>/` with `<arm>-seed<N>.test.json` beside it) and from
/// `hedge study`'s (`runs/<arm>,seed=<N>/` with its `eval.json`).
fn ab_runs(results: &Results, study: &str) -> Vec<(String, u64, String, String)> {
    let mut runs: Vec<(String, u64, String, String)> = lever_runs(results, study)
        .into_iter()
        .map(|(arm, seed, folder)| {
            let test = format!("{folder}.test.json");
            (arm, seed, folder, test)
        })
        .collect();
    let base = format!("{HIB}/{study}/runs");
    for name in subfolders(results, &base) {
        let Some((arm, seed)) = name.rsplit_once(",seed=") else { continue };
        let Ok(seed) = seed.parse() else { continue };
        let folder = format!("{base}/{name}");
        let test = format!("{folder}/eval.json");
        runs.push((arm.to_string(), seed, folder, test));
    }
    runs.into_iter().filter(|r| results.exists(&r.3)).collect()
}

/// An A/B study's table (`studies/hib/ab-<study>.toml`): each finished run's steps, the
/// validation images at the step it chose and the test split with those weights, then each of
/// `levers` − control seed by seed and over the run. The control runs are the study's own
/// `control` runs, or `control_from`'s (a study and the arm of it that this study's arms add one
/// setting to, read as `control`).
fn ab(results: &Results, study: &str, levers: &[&str], control_from: Option<(&str, &str)>) -> Result<String> {
    let mut order: Vec<&str> = vec!["control"];
    order.extend(levers);
    let rank = |arm: &str| order.iter().position(|a| *a == arm).unwrap_or(order.len());
    let mut runs: Vec<((String, u64), String)> = Vec::new();
    let mut test_files: BTreeMap<(String, u64), String> = BTreeMap::new();
    let mut put = |key: (String, u64), folder: String, test: String| {
        test_files.insert(key.clone(), test);
        match runs.iter_mut().find(|r| r.0 == key) {
            Some(r) => r.1 = folder,
            None => runs.push((key, folder)),
        }
    };
    for (arm, seed, folder, test) in ab_runs(results, study) {
        if control_from.is_none() || levers.contains(&arm.as_str()) {
            put((arm, seed), folder, test);
        }
    }
    if let Some((control_study, control_arm)) = control_from {
        for (arm, seed, folder, test) in ab_runs(results, control_study) {
            if arm == control_arm {
                put(("control".to_string(), seed), folder, test);
            }
        }
    }
    if runs.is_empty() || (control_from.is_some() && !runs.iter().any(|r| levers.contains(&r.0 .0.as_str()))) {
        return Ok(format!("Not run yet (`hedge study studies/hib/ab-{study}.toml`)."));
    }
    let mut tests: BTreeMap<(String, u64), EvalReport> = BTreeMap::new();
    let mut digits = BTreeSet::new();
    for (key, folder) in &runs {
        tests.insert(key.clone(), results.json(&test_files[key])?);
        let recipe = run_recipe(results, folder)?;
        digits.insert(recipe.get("validation_digits").and_then(Value::as_str).unwrap_or("shared").to_string());
    }
    let digits: Vec<String> = digits.into_iter().collect();
    let mut out = vec![
        format!(
            "| arm | seed | steps | chosen at step | validation, {} digits (chosen) | test (chosen weights) |",
            digits.join(" / ")
        ),
        "|---|---|---|---|---|---|".into(),
    ];
    let mut sorted = runs.clone();
    sorted.sort_by_key(|((arm, seed), _)| (*seed, rank(arm)));
    for ((arm, seed), folder) in &sorted {
        let steps = config(results, folder)?.hib.schedule.steps;
        let b = best(results, folder)?;
        out.push(format!(
            "| {arm} | {seed} | {} | {} | {} | {} |",
            thousands(steps as u64),
            thousands(b.step as u64),
            fmt4(four_quick(&b.validation), true),
            fmt4(four_eval(&tests[&(arm.clone(), *seed)]), true)
        ));
    }
    let mut arms: Vec<String> = runs.iter().map(|r| r.0 .0.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    arms.sort_by_key(|a| rank(a));
    out.extend([
        String::new(),
        "| arm | seeds | validation score, mean over seeds | test, mean over seeds | test, seed range (max − min) |"
            .into(),
        "|---|---|---|---|---|".into(),
    ]);
    let mut by_key = runs.clone();
    by_key.sort_by(|a, b| a.0.cmp(&b.0));
    for arm in &arms {
        let of_arm: Vec<[f64; 4]> = tests.iter().filter(|(k, _)| &k.0 == arm).map(|(_, t)| four_eval(t)).collect();
        let scores: Vec<f64> = by_key
            .iter()
            .filter(|(k, _)| &k.0 == arm)
            .map(|(_, folder)| Ok(best(results, folder)?.score))
            .collect::<Result<_>>()?;
        let mut means = [0.0; 4];
        let mut ranges = [0.0; 4];
        for k in 0..4 {
            let column: Vec<f64> = of_arm.iter().map(|t| t[k]).collect();
            means[k] = mean(&column);
            let (lo, hi) = range(&column);
            ranges[k] = hi - lo;
        }
        let spread = if of_arm.len() > 1 {
            ranges.iter().map(|x| fixed(*x, 3)).collect::<Vec<_>>().join(" / ")
        } else {
            "—".into()
        };
        out.push(format!(
            "| {arm} | {} | {} | {} | {spread} |",
            of_arm.len(),
            fixed(mean(&scores), 4),
            fmt4(means, true)
        ));
    }
    for lever in levers {
        let mut pairs: Vec<u64> = runs
            .iter()
            .filter(|((arm, seed), _)| arm == lever && runs.iter().any(|r| r.0 == ("control".to_string(), *seed)))
            .map(|((_, seed), _)| *seed)
            .collect();
        pairs.sort_unstable();
        if pairs.is_empty() {
            continue;
        }
        let per_seed: Vec<String> = pairs
            .iter()
            .map(|seed| {
                let (a, c) =
                    (four_eval(&tests[&(lever.to_string(), *seed)]), four_eval(&tests[&("control".into(), *seed)]));
                format!("seed {seed}: {}", (0..4).map(|k| plus3(a[k] - c[k])).collect::<Vec<_>>().join(" / "))
            })
            .collect();
        out.extend([
            String::new(),
            format!(
                "{lever} − control on the test split, seed by seed (AP clean / AP corrupt / KNN clean / KNN corrupt): \
                 {}.",
                per_seed.join("; ")
            ),
            String::new(),
        ]);
        let folder_of = |arm: &str, seed: u64| -> String {
            runs.iter().find(|r| r.0 == (arm.to_string(), seed)).map(|r| r.1.clone()).unwrap_or_default()
        };
        out.extend(ab_gap_over_run(results, lever, &pairs, &folder_of)?);
    }
    Ok(out.join("\n"))
}

/// `lever` − control on the test split at the watches both arms of a seed share (every 1,000
/// steps and the last; a step a resumed run watched twice reads its last record).
fn ab_gap_over_run(
    results: &Results,
    lever: &str,
    pairs: &[u64],
    folder_of: &dyn Fn(&str, u64) -> String,
) -> Result<Vec<String>> {
    let mut watched: BTreeMap<usize, BTreeMap<u64, [f64; 3]>> = BTreeMap::new();
    for &seed in pairs {
        let mut by_arm: Vec<BTreeMap<usize, [f64; 4]>> = Vec::new();
        for arm in ["control", lever] {
            let records = monitor(results, &folder_of(arm, seed))?;
            by_arm.push(records.iter().filter_map(|w| w.sets.get("test").map(|q| (w.step, four_quick(q)))).collect());
        }
        let last_of = |m: &BTreeMap<usize, [f64; 4]>| m.keys().next_back().copied().unwrap_or_default();
        let last = last_of(&by_arm[0]).min(last_of(&by_arm[1]));
        for (step, control) in &by_arm[0] {
            let Some(arm) = by_arm[1].get(step) else { continue };
            if step % 1000 == 0 || *step == last {
                watched
                    .entry(*step)
                    .or_default()
                    .insert(seed, [arm[1] - control[1], arm[2] - control[2], arm[3] - control[3]]);
            }
        }
    }
    let head = pairs.iter().map(|s| format!("seed {s}")).collect::<Vec<_>>().join(" | ");
    let mut out = vec![
        format!(
            "{lever} − control on the test split over the run (AP corrupt / KNN clean / KNN corrupt at each watch both \
             arms share, `monitor.jsonl`, 1 repeat):"
        ),
        String::new(),
        format!("| step | {head} |"),
        format!("|---|{}", "---|".repeat(pairs.len())),
    ];
    for (step, gaps) in &watched {
        let cells: Vec<String> = pairs
            .iter()
            .map(|seed| {
                gaps.get(seed).map_or_else(
                    || "—".to_string(),
                    // A gap that rounds to zero prints as +0.000, not −0.000.
                    |g| g.iter().map(|x| plus3(*x + 0.0).replace("−0.000", "+0.000")).collect::<Vec<_>>().join(" / "),
                )
            })
            .collect();
        out.push(format!("| {} | {} |", thousands(*step as u64), cells.join(" | ")));
    }
    Ok(out)
}

// ----- tables moved aside --------------------------------------------------------------------

/// Each run of a table under way that has ended beside the same model and seed of the table
/// moved aside before it.
fn table_against_aside(results: &Results, setting: &str, aside_folder: &str) -> Result<String> {
    let mut rows = Vec::new();
    for (name, seed, folder) in lever_runs(results, &format!("{setting}/runs")) {
        let old = format!("{HIB}/{aside_folder}/runs/{name}-seed{seed}");
        if !(has(results, &folder, "eval.json") && has(results, &old, "eval.json")) {
            continue;
        }
        let new_eval: EvalReport = results.json(&format!("{folder}/eval.json"))?;
        let old_eval: EvalReport = results.json(&format!("{old}/eval.json"))?;
        let (a, b) = (four_eval(&new_eval), four_eval(&old_eval));
        rows.push(format!(
            "| {name} | {seed} | {} / {} | {} | {} | {} |",
            thousands(config(results, &folder)?.hib.schedule.steps as u64),
            thousands(config(results, &old)?.hib.schedule.steps as u64),
            fmt4(a, true),
            fmt4(b, true),
            (0..4).map(|k| plus3(a[k] - b[k])).collect::<Vec<_>>().join(" / ")
        ));
    }
    if rows.is_empty() {
        return Ok(format!("No run of `{setting}/` has ended yet."));
    }
    let mut out = vec![
        format!(
            "| model | seed | steps (`{setting}/` / `{aside_folder}/`) | `{setting}/`, test | `{aside_folder}/`, test | \
             difference |"
        ),
        "|---|---|---|---|---|---|".into(),
    ];
    out.extend(rows);
    Ok(out.join("\n"))
}

fn others_against_asides(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let mut out = Vec::new();
    for setting in SETTINGS[1..].iter().chain(&["n2-d1"]) {
        if let Some(newest) = a.of(setting).first() {
            out.extend([
                format!("**{}.**", a.label(setting)),
                String::new(),
                table_against_aside(results, setting, newest)?,
                String::new(),
            ]);
        }
    }
    let text = out.join("\n").trim_end_matches('\n').to_string();
    Ok(if text.is_empty() { "No other setting has been moved aside.".into() } else { text })
}

/// A setting's table beside every table moved aside from it, model by model, and its gain over
/// each that has as many seeds of the model. While the setting is being retrained (no
/// `summary.json` yet) the newest table moved aside heads the comparison, said in a lead line.
fn table_means_against_asides(results: &Results, setting: &str) -> Result<String> {
    let a = Asides::read(results)?;
    let folders: Vec<String> = std::iter::once(setting.to_string())
        .chain(a.of(setting))
        .filter(|f| has(results, &format!("{HIB}/{f}"), "summary.json"))
        .collect();
    let Some(head) = folders.first().cloned() else {
        return Ok(format!("`{setting}/` has no `summary.json` yet."));
    };
    let name_of =
        |f: &str| if f == setting { "this table".to_string() } else { a.get(f).map_or("", |a| a.1).to_string() };
    let mut summaries = BTreeMap::new();
    let mut recipes = BTreeMap::new();
    for f in &folders {
        summaries.insert(f.clone(), summary(results, &format!("{HIB}/{f}"))?);
        let lever = recipe_lever(results, &table_recipe(results, &format!("{HIB}/{f}"))?)?;
        recipes.insert(f.clone(), lever.unwrap_or_else(|| "a recipe of no lever".into()));
    }
    let (mut rows, mut gains) = (Vec::new(), Vec::new());
    for (key, name) in MODELS {
        let Some(own) = summaries[&head].models.get(key) else { continue };
        for f in &folders {
            let Some(m) = summaries[f].models.get(key) else { continue };
            let steps = planned_steps(results, &m.runs)?;
            rows.push(format!(
                "| {name} | {} (`{}`) | {} | {} | {} |",
                name_of(f),
                recipes[f],
                m.seeds,
                steps.iter().map(|s| thousands(*s as u64)).collect::<Vec<_>>().join(", "),
                fmt4(four_model(m), false)
            ));
            if *f != head && m.seeds == own.seeds {
                let (mine, theirs) = (four_model(own), four_model(m));
                let gap = (0..4).map(|k| plus3(mine[k] - theirs[k])).collect::<Vec<_>>().join(" / ");
                let seeds = if m.seeds == 1 { "1 seed".to_string() } else { format!("{} seeds", m.seeds) };
                gains.push(format!("{name} over the {} ({seeds} each): {gap}", name_of(f)));
            }
        }
    }
    let mut out = Vec::new();
    if head != setting {
        out.push(retraining_lead(setting, &name_of(&head), &head, "heads this comparison"));
        out.push(String::new());
    }
    out.extend([
        "| model | table (recipe) | seeds | steps a run | test, mean over seeds: AP clean / AP corrupt / KNN clean / KNN \
         corrupt |"
            .to_string(),
        "|---|---|---|---|---|".into(),
    ]);
    out.extend(rows);
    if !gains.is_empty() {
        out.push(String::new());
        let whose = if head == setting { "This table's".to_string() } else { format!("The {}'s", name_of(&head)) };
        out.push(format!(
            "{whose} gain, mean against mean (AP clean / AP corrupt / KNN clean / KNN corrupt): {}.",
            gains.join("; ")
        ));
    }
    Ok(out.join("\n"))
}

/// The line that says a setting's table is being retrained and which moved-aside table (`name`,
/// in `folder`) stands in for it meanwhile, doing `what`.
fn retraining_lead(setting: &str, name: &str, folder: &str, what: &str) -> String {
    format!(
        "`{setting}/` is being retrained on today's `recipe.toml` (no `summary.json` yet); until it ends, the {name}, \
         `{folder}/`, {what}:"
    )
}

// ----- issue 33's acceptance -----------------------------------------------------------------

const ACCEPTANCE_GAP: f64 = 0.03;

/// The folder, summary and lead-in lines the acceptance of `setting` is read from: its own
/// instance summary, or, until the retrained table's exists, the newest table moved aside.
fn acceptance_source(results: &Results, setting: &str) -> Result<Option<(String, ReproduceSummary, Vec<String>)>> {
    let a = Asides::read(results)?;
    for folder in std::iter::once(setting.to_string()).chain(a.of(setting)) {
        let path = format!("{HIB}/{folder}");
        if !has(results, &path, "summary.json") {
            continue;
        }
        let s = summary(results, &path)?;
        if s.protocol != NDigitProtocol::Instance {
            continue;
        }
        let lead = if folder == setting {
            Vec::new()
        } else {
            vec![
                retraining_lead(setting, a.get(&folder).map_or("", |a| a.1), &folder, "on its earlier recipe"),
                String::new(),
            ]
        };
        return Ok(Some((folder.to_string(), s, lead)));
    }
    Ok(None)
}

fn instance_acceptance(results: &Results, setting: &str) -> Result<String> {
    let Some((setting, s, lead)) = acceptance_source(results, setting)? else {
        return Ok(format!("No instance-protocol summary in `{setting}/` yet."));
    };
    let models: Vec<(&str, &str)> = MODELS.iter().copied().filter(|(k, _)| s.models.contains_key(*k)).collect();
    let kept = models.iter().all(|(k, _)| s.models[*k].knn_kept.is_some());
    let knn = if kept { "KNN clean | KNN corrupt" } else { "KNN clean, leave-one-out | KNN corrupt, leave-one-out" };
    let mut out =
        vec![format!("| model | seeds | AP clean | AP corrupt | {knn} |"), "|---|---|---|---|---|---|".into()];
    let mut within = 0;
    let mut worst_head = (0.0, String::new());
    let mut worst_loo = (0.0, String::new());
    let paper = s.paper.clone().unwrap_or_default();
    for (key, name) in &models {
        let m = &s.models[*key];
        let p = four_paper(paper.get(*key).ok_or_else(|| missing(&setting, format!("no paper {key}")))?);
        let loo = four_model(m);
        let head = match &m.knn_kept {
            Some(k) => [loo[0], loo[1], v(k.clean), v(k.corrupt)],
            None => [loo[0], loo[1], f64::NAN, f64::NAN],
        };
        let mut cells = Vec::new();
        for k in 0..4 {
            let label = format!("{name} {}", CELL_NAMES[k]);
            let l = loo[k] - p[k];
            if l.abs() > worst_loo.0 {
                worst_loo = (l.abs(), label.clone());
            }
            let gap = if kept { head[k] - p[k] } else { l };
            if gap.abs() > worst_head.0 {
                worst_head = (gap.abs(), label);
            }
            let ok = gap.abs() <= ACCEPTANCE_GAP;
            within += usize::from(ok);
            cells.push(format!("{:+.3} {}", gap, if ok { "within" } else { "out" }));
        }
        out.push(format!("| {name} | {} | {} |", m.seeds, cells.join(" | ")));
    }
    let kept_note = if kept && worst_head.1.contains("KNN") { ", the kept-gallery KNN reading" } else { "" };
    let largest = format!(
        "Largest distance to the paper: {} ({}{kept_note}){}",
        fixed(worst_head.0, 3),
        worst_head.1,
        if kept {
            format!("; with KNN left one out, {} ({}).", fixed(worst_loo.0, 3), worst_loo.1)
        } else {
            ".".into()
        }
    );
    let point = s.models.get("point");
    let (mut checks, mut held) = (Vec::new(), 0);
    for (key, name) in &models {
        let Some(point) = point.filter(|_| *key != "point") else { continue };
        for (k, label) in [(1, "AP"), (3, "KNN")] {
            let (hib, base) = (four_model(&s.models[*key])[k], four_model(point)[k]);
            held += usize::from(hib >= base);
            checks.push(format!(
                "{name} {label} corrupt {} {} point {}",
                fixed(hib, 3),
                if hib >= base { "≥" } else { "<" },
                fixed(base, 3)
            ));
        }
    }
    let seeds: BTreeSet<usize> = models.iter().map(|(k, _)| s.models[*k].seeds).collect();
    let seeds_text = seeds.iter().map(usize::to_string).collect::<Vec<_>>().join(" or ");
    let mut text = lead;
    text.push(format!(
        "Ours − paper for `{setting}/summary.json` ({seeds_text} seed{} a model; `within` when the distance is at most \
         {}):",
        if seeds.len() == 1 && seeds.contains(&1) { "" } else { "s" },
        short(ACCEPTANCE_GAP)
    ));
    text.push(String::new());
    text.extend(out);
    text.push(String::new());
    text.push(format!(
        "{within} of {} cells within {} of the paper. {largest} HIB at least the point model on corrupt inputs in {held} \
         of {} comparisons: {}.",
        4 * models.len(),
        short(ACCEPTANCE_GAP),
        checks.len(),
        checks.join("; ")
    ));
    Ok(text.join("\n"))
}

fn instance_acceptance_others(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let mut out = Vec::new();
    for setting in &SETTINGS[1..] {
        if acceptance_source(results, setting)?.is_some() {
            out.push(format!("**{}.** {}", a.label(setting), instance_acceptance(results, setting)?));
        } else {
            out.push(format!(
                "**{}.** Not ended yet (step `{setting}` of `hedge study studies/hib/table.toml`).",
                a.label(setting)
            ));
        }
        out.push(String::new());
    }
    Ok(out.join("\n").trim_end_matches('\n').to_string())
}

fn digit_overlap(results: &Results) -> Result<String> {
    let path = format!("{HIB}/digit-overlap.json");
    if !results.exists(&path) {
        return Ok("Not measured yet (`.venv/bin/python scripts/hib-digit-overlap.py`).".into());
    }
    let d: DigitOverlap = results.json(&path)?;
    Ok(format!(
        "Of the {} training images held out per class for validation, {} % (± {}) have every digit image also in a \
         training composite and {} % at least one ({} draws of the hold-out rule, `digit-overlap.json`; the train \
         table's {} composites use {} distinct MNIST training digits). The {} test images are built from MNIST test \
         digits, none of them trained on.",
        d.held_out_per_class,
        fixed(100.0 * d.validation_all_digits_trained, 1),
        fixed(100.0 * d.validation_all_digits_trained_std, 1),
        fixed(100.0 * d.validation_any_digit_trained, 1),
        d.draws,
        thousands(d.train_composites),
        thousands(d.distinct_training_digit_images),
        thousands(d.test_composites)
    ))
}

// ----- the two N = 3 test sets ---------------------------------------------------------------

/// The paper's Table 1 values for an instance table folder's setting: from its own summary,
/// else the open-set one (the paper's values are the same under either protocol).
fn paper_values(results: &Results, folder: &str) -> Result<BTreeMap<String, PaperModel>> {
    let a = Asides::read(results)?;
    let of = a.get(folder).map_or(folder, |a| a.0);
    for path in [format!("{HIB}/{folder}"), format!("{HIB}/open-set/{of}")] {
        if has(results, &path, "summary.json") {
            if let Some(p) = table_paper(results, &path)? {
                if !p.is_empty() {
                    return Ok(p);
                }
            }
        }
    }
    Ok(BTreeMap::new())
}

/// An eval report's four numbers with the kept-gallery KNN where it has it, else the
/// leave-one-out KNN marked `(l-o-o)`.
fn headline_four(e: &EvalReport) -> String {
    match &e.knn_kept {
        Some(k) if k.clean.is_some() || k.corrupt.is_some() => {
            fmt4([v(e.verification_ap.clean), v(e.verification_ap.corrupt), v(k.clean), v(k.corrupt)], false)
        }
        _ => format!("{} (l-o-o)", fmt4(four_eval(e), false)),
    }
}

fn test_seen(results: &Results) -> Result<String> {
    let a = Asides::read(results)?;
    let mut rows = Vec::new();
    let folders: Vec<String> =
        ["n3-d2", "n3-d3"].iter().flat_map(|s| std::iter::once(s.to_string()).chain(a.of(s))).collect();
    for setting in folders {
        let paper = paper_values(results, &setting)?;
        for (key, name) in MODELS {
            let run = format!("{HIB}/{setting}/runs/{key}-seed0");
            let seen_path = format!("{HIB}/test-seen/{setting}/{key}-seed0.json");
            if !(has(results, &run, "eval.json") && results.exists(&seen_path)) {
                continue;
            }
            let test: EvalReport = results.json(&format!("{run}/eval.json"))?;
            let seen: EvalReport = results.json(&seen_path)?;
            if seen.weights != test.weights || seen.split != NDigitSplit::TestSeen {
                return Err(missing(
                    &seen_path,
                    format!("not the test_seen report of the weights {run}/eval.json scored"),
                ));
            }
            let p = paper.get(key).map_or_else(|| "—".into(), |p| fmt4(four_paper(p), false));
            rows.push(format!(
                "| {} | {name} | {} | {} | {p} |",
                a.label(&setting),
                headline_four(&test),
                headline_four(&seen)
            ));
        }
    }
    if rows.is_empty() {
        return Ok(
            "Not measured yet (`hedge study studies/hib/test-seen.toml` once an N = 3 table's runs have ended).".into(),
        );
    }
    let mut out = vec![
        "| N, D | model (seed 0) | `test`: 1,000 classes x 10 images | `test_seen`: 100 classes x 100 images | paper |"
            .to_string(),
        "|---|---|---|---|---|".into(),
    ];
    out.extend(rows);
    out.push(String::new());
    out.push(
        "Each cell: AP clean / AP corrupt / KNN clean / KNN corrupt, the same weights (the ones the table scored) on \
         both test sets; KNN with the probe's own image (twin) kept in the gallery, the headline reading, or left out \
         where a report was written before that reading existed (marked l-o-o)."
            .into(),
    );
    Ok(out.join("\n"))
}

/// The classes and images of a grouped batch.
fn group_shape(batch: &hedge_embed::config::BatchComposition) -> Option<(String, String)> {
    match batch {
        hedge_embed::config::BatchComposition::Grouped { classes, per_class } => {
            Some((classes.to_string(), per_class.to_string()))
        }
        _ => None,
    }
}

/// A run folder's training milliseconds a step so far (`state.json`; watches left out).
fn ms_a_step(results: &Results, run: &str) -> Result<f64> {
    let st = state(results, run)?;
    Ok(1000.0 * st.seconds / st.step as f64)
}

/// The batch shapes of `studies/hib/n3-levers.toml` at N = 3, D = 2 beside the first N = 3,
/// D = 2 table's MoG-1 and the paper.
fn n3_levers(results: &Results) -> Result<String> {
    let root = format!("{HIB}/n3-levers");
    let (mut rows, mut pending) = (Vec::new(), Vec::new());
    for lever in ["16x16", "32x8", "64x4", "128x2"] {
        let run = format!("{root}/{lever}-seed0");
        let reports = [format!("{root}/{lever}-seed0.test.json"), format!("{root}/{lever}-seed0.test_seen.json")];
        if !reports.iter().all(|p| results.exists(p)) {
            if has(results, &run, "state.json") {
                let st = state(results, &run)?;
                let steps = config(results, &run)?.hib.schedule.steps;
                pending.push(format!(
                    "{lever} (committed at step {} of {})",
                    thousands(st.step as u64),
                    thousands(steps as u64)
                ));
            } else {
                pending.push(format!("{lever} (not started)"));
            }
            continue;
        }
        let test: EvalReport = results.json(&reports[0])?;
        let seen: EvalReport = results.json(&reports[1])?;
        let b = best(results, &run)?;
        if test.weights != seen.weights || test.split != NDigitSplit::Test || seen.split != NDigitSplit::TestSeen {
            return Err(missing(&run, "its two reports do not score the same weights on test and test_seen"));
        }
        let hib = config(results, &run)?.hib;
        let (classes, images) = lever.split_once('x').unwrap_or((lever, ""));
        if group_shape(&hib.data.batch) != Some((classes.to_string(), images.to_string())) {
            return Err(missing(&run, format!("config.json: not {lever} classes x images")));
        }
        rows.push(format!(
            "| {classes} x {images} | {} ({} ms) | {} | {} | {} | {} |",
            thousands(hib.schedule.steps as u64),
            fixed(ms_a_step(results, &run)?, 0),
            thousands(b.step as u64),
            fixed(b.score, 4),
            fmt4(four_eval(&test), false),
            fmt4(four_eval(&seen), false)
        ));
    }
    if rows.is_empty() {
        return Ok("No run has ended yet (`hedge study studies/hib/n3-levers.toml`).".into());
    }
    // The table the study set out from (trained before it, on the recipe without weight decay).
    let table = "n3-d2-l-peak1e-2-16x16";
    let table_run = format!("{HIB}/{table}/runs/mog1-seed0");
    let seen_path = format!("{HIB}/test-seen/{table}/mog1-seed0.json");
    if has(results, &table_run, "eval.json") && results.exists(&seen_path) {
        let hib = config(results, &table_run)?.hib;
        let (classes, images) = group_shape(&hib.data.batch).unwrap_or_default();
        let test: EvalReport = results.json(&format!("{table_run}/eval.json"))?;
        let seen: EvalReport = results.json(&seen_path)?;
        rows.push(format!(
            "| the first N = 3, D = 2 table's MoG-1 (`{table}/`, {classes} x {images}) | {} ({} ms) | | | {} | {} |",
            thousands(hib.schedule.steps as u64),
            fixed(ms_a_step(results, &table_run)?, 0),
            fmt4(four_eval(&test), false),
            fmt4(four_eval(&seen), false)
        ));
    }
    if let Some(p) = paper_values(results, table)?.get("mog1") {
        rows.push(format!("| paper (500,000 steps of 128 pairs) | | | | {} | |", fmt4(four_paper(p), false)));
    }
    let mut out = vec![
        "| classes x images a step | steps (pace) | chosen step | validation score | `test`: 1,000 classes x 10 | \
         `test_seen`: 100 classes x 100 |"
            .to_string(),
        "|---|---|---|---|---|---|".into(),
    ];
    out.extend(rows);
    out.push(String::new());
    out.push(
        "Each cell: AP clean / AP corrupt / KNN clean / KNN corrupt of the weights the validation images chose; \
         validation score: the mean of the same four on the validation images at that step (`best.json`), what chose \
         it; 256 images a step in every run; pace: training seconds a step (`state.json`), watches left out."
            .into(),
    );
    if !pending.is_empty() {
        out.push(String::new());
        out.push(format!("Still to end: {}.", pending.join("; ")));
    }
    Ok(out.join("\n"))
}

// ----- precision, the reference, the quickstart, the f32 peer ---------------------------------

/// What a `config.json` of a HIB run records of its precision (other config files lack `hib`).
#[derive(Debug, Deserialize)]
struct PrecisionOf {
    hib: HibPrecision,
    #[serde(default)]
    device: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HibPrecision {
    conv_precision: String,
}

/// Every folder under `dir` holding a `config.json`.
fn folders_with_config(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    if dir.join("config.json").is_file() {
        found.push(dir.to_path_buf());
    }
    for e in entries {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            folders_with_config(&e.path(), found);
        }
    }
}

/// Which convolution precision trained each committed HIB run, per result folder, and on which
/// devices.
fn precision(results: &Results) -> Result<String> {
    let mut folders: BTreeMap<String, (usize, usize, BTreeSet<String>)> = BTreeMap::new();
    let base = results.path("results");
    for top in ["hib", "own-data"] {
        let mut found = Vec::new();
        folders_with_config(&base.join(top), &mut found);
        for dir in found {
            let text = std::fs::read_to_string(dir.join("config.json")).unwrap_or_default();
            // Config files of other kinds (a table's, a sweep's) record no `hib` section.
            let Ok(config) = serde_json::from_str::<PrecisionOf>(&text) else { continue };
            let rel: Vec<String> = dir
                .strip_prefix(&base)
                .unwrap_or(&dir)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let folder = rel.iter().take(2).cloned().collect::<Vec<_>>().join("/");
            let counts = folders.entry(folder).or_default();
            match config.hib.conv_precision.as_str() {
                "bf16" => counts.0 += 1,
                _ => counts.1 += 1,
            }
            counts.2.insert(config.device.unwrap_or_else(|| "cpu".into()));
        }
    }
    let mut rows =
        vec!["| result folder | runs in bf16 | runs in f32 | device |".to_string(), "|---|---|---|---|".into()];
    for (folder, (bf16, f32, devices)) in folders {
        rows.push(format!(
            "| `results/{folder}/` | {bf16} | {f32} | {} |",
            devices.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(rows.join("\n"))
}

const REFERENCE: &str = "results/hib/reference/runs";
/// Two means agree when they lie within this of each other or within the larger seed range.
const REFERENCE_TOLERANCE: f64 = 0.01;
const REFERENCE_CELLS: [&str; 6] =
    ["AP clean", "AP corrupt", "KNN clean", "KNN corrupt", "KNN clean, leave-one-out", "KNN corrupt, leave-one-out"];

/// The plain-PyTorch reference's `reference_eval.json` (its own schema).
#[derive(Debug, Deserialize)]
struct ReferenceEval {
    ap_clean: f64,
    ap_corrupt: f64,
    knn_clean_kept: f64,
    knn_corrupt_kept: f64,
    knn_clean_loo: f64,
    knn_corrupt_loo: f64,
}

/// Per seed, the six numbers of a scored run of `implementation` (`ref` or `hedge`).
fn reference_values(
    results: &Results,
    implementation: &str,
    recipe: &str,
    model: &str,
) -> Result<Vec<(u64, [Option<f64>; 6])>> {
    let mut out = Vec::new();
    for seed in 0..10 {
        let folder = format!("{REFERENCE}/{implementation}-{recipe}-{model}-seed{seed}");
        if implementation == "ref" {
            let path = format!("{folder}/reference_eval.json");
            if !results.exists(&path) {
                continue;
            }
            let r: ReferenceEval = results.json(&path)?;
            out.push((
                seed,
                [r.ap_clean, r.ap_corrupt, r.knn_clean_kept, r.knn_corrupt_kept, r.knn_clean_loo, r.knn_corrupt_loo]
                    .map(Some),
            ));
        } else {
            let path = format!("{folder}/eval-final.json");
            if !results.exists(&path) {
                continue;
            }
            let e: EvalReport = results.json(&path)?;
            let kept = e.knn_kept.as_ref();
            out.push((
                seed,
                [
                    e.verification_ap.clean,
                    e.verification_ap.corrupt,
                    kept.and_then(|k| k.clean),
                    kept.and_then(|k| k.corrupt),
                    e.knn_accuracy.clean,
                    e.knn_accuracy.corrupt,
                ],
            ));
        }
    }
    Ok(out)
}

/// hedge against the plain-PyTorch reference at equal steps: per recipe and model, each
/// number's mean over the seeds that ended (range in brackets) for both, and whether they agree.
fn reference(results: &Results) -> Result<String> {
    let mut rows = vec![
        "| recipe | model | number | reference (seeds) | hedge (seeds) | hedge − reference | agree |".to_string(),
        "|---|---|---|---|---|---|---|".into(),
    ];
    let (mut verdicts, mut pending) = (Vec::new(), Vec::new());
    for recipe in ["plain", "hedge"] {
        for (model, name) in [("mog1", "MoG-1"), ("point", "point")] {
            let reference = reference_values(results, "ref", recipe, model)?;
            let ours = reference_values(results, "hedge", recipe, model)?;
            if reference.is_empty() || ours.is_empty() {
                pending.push(format!("{recipe} {name}"));
                continue;
            }
            for (k, label) in REFERENCE_CELLS.iter().enumerate() {
                let a: Vec<f64> = reference.iter().filter_map(|r| r.1[k]).collect();
                let b: Vec<f64> = ours.iter().filter_map(|r| r.1[k]).collect();
                if a.is_empty() || b.is_empty() {
                    continue;
                }
                let (ma, mb) = (mean(&a), mean(&b));
                let width = |x: &[f64]| {
                    let (lo, hi) = range(x);
                    hi - lo
                };
                let agree = (mb - ma).abs() <= REFERENCE_TOLERANCE.max(width(&a).max(width(&b)));
                verdicts.push(agree);
                let show = |values: &[f64], seeds: &[(u64, [Option<f64>; 6])]| {
                    let (lo, hi) = range(values);
                    let tail =
                        if values.len() > 1 { format!(" [{}, {}]", fixed(lo, 3), fixed(hi, 3)) } else { String::new() };
                    let mut s: Vec<u64> = seeds.iter().map(|x| x.0).collect();
                    s.sort_unstable();
                    format!(
                        "{}{tail} ({})",
                        fixed(mean(values), 3),
                        s.iter().map(u64::to_string).collect::<Vec<_>>().join("/")
                    )
                };
                rows.push(format!(
                    "| {recipe} | {name} | {label} | {} | {} | {:+.3} | {} |",
                    show(&a, &reference),
                    show(&b, &ours),
                    mb - ma,
                    if agree { "yes" } else { "no" }
                ));
            }
        }
    }
    if verdicts.is_empty() {
        return Ok(
            "No pair of a reference run and a hedge run has ended yet (`hedge study studies/hib/reference.toml`)."
                .into(),
        );
    }
    rows.push(String::new());
    rows.push(format!(
        "{} of {} numbers agree (means within {} of each other, or within the larger of the two seed ranges).",
        verdicts.iter().filter(|a| **a).count(),
        verdicts.len(),
        short(REFERENCE_TOLERANCE)
    ));
    if !pending.is_empty() {
        rows.push(format!("Not ended yet: {}.", pending.join(", ")));
    }
    Ok(rows.join("\n"))
}

/// Two numbers of hedge's evaluation: clean and corrupt.
#[derive(Debug, Deserialize)]
struct CleanCorrupt {
    clean: f64,
    corrupt: f64,
}

/// hedge's evaluation as `reference/hib/cross_evaluate.py` records it.
#[derive(Debug, Deserialize)]
struct HedgeSide {
    verification_ap: CleanCorrupt,
    knn_leave_one_out: CleanCorrupt,
    knn_kept: CleanCorrupt,
}

impl HedgeSide {
    /// The six numbers in [`REFERENCE_CELLS`]' order.
    fn six(&self) -> [f64; 6] {
        [
            self.verification_ap.clean,
            self.verification_ap.corrupt,
            self.knn_kept.clean,
            self.knn_kept.corrupt,
            self.knn_leave_one_out.clean,
            self.knn_leave_one_out.corrupt,
        ]
    }
}

/// One weight file scored by both evaluations (`reference_eval_of_hedge.json` in a hedge run,
/// `hedge_eval_of_reference.json` in a reference run).
#[derive(Debug, Deserialize)]
struct CrossEval {
    reference_evaluation: ReferenceEval,
    hedge_evaluation: HedgeSide,
}

impl ReferenceEval {
    /// The six numbers in [`REFERENCE_CELLS`]' order.
    fn six(&self) -> [f64; 6] {
        [
            self.ap_clean,
            self.ap_corrupt,
            self.knn_clean_kept,
            self.knn_corrupt_kept,
            self.knn_clean_loo,
            self.knn_corrupt_loo,
        ]
    }
}

/// Cross-evaluation: each weight file scored by both evaluations, and the mean shift the
/// reference's evaluation makes on the same weights (what of a disagreement is evaluation, not
/// training).
fn reference_cross(results: &Results) -> Result<String> {
    let mut rows = vec![
        format!("| recipe | model | weights | seed | evaluation | {} |", REFERENCE_CELLS.join(" | ")),
        "|---|---|---|---|---|---|---|---|---|---|---|".into(),
    ];
    let mut shifts: Vec<[f64; 6]> = Vec::new();
    for recipe in ["plain", "hedge"] {
        for (model, name) in [("mog1", "MoG-1"), ("point", "point")] {
            for (implementation, weights, file) in [
                ("hedge", "hedge", "reference_eval_of_hedge.json"),
                ("ref", "reference", "hedge_eval_of_reference.json"),
            ] {
                for seed in 0..10 {
                    let path = format!("{REFERENCE}/{implementation}-{recipe}-{model}-seed{seed}/{file}");
                    if !results.exists(&path) {
                        continue;
                    }
                    let c: CrossEval = results.json(&path)?;
                    let (h, r) = (c.hedge_evaluation.six(), c.reference_evaluation.six());
                    for (evaluation, values) in [("hedge's", h), ("the reference's", r)] {
                        rows.push(format!(
                            "| {recipe} | {name} | {weights} | {seed} | {evaluation} | {} |",
                            values.map(|v| fixed(v, 3)).join(" | ")
                        ));
                    }
                    shifts.push(std::array::from_fn(|k| r[k] - h[k]));
                }
            }
        }
    }
    if shifts.is_empty() {
        return Ok("No run has been scored by both evaluations yet (`reference/hib/cross_evaluate.py`).".into());
    }
    let mean_shift: [f64; 6] = std::array::from_fn(|k| mean(&shifts.iter().map(|s| s[k]).collect::<Vec<_>>()));
    rows.push(format!(
        "| | | mean shift, the reference's evaluation − hedge's, over the {} weight files | | | {} |",
        shifts.len(),
        mean_shift.map(|v| format!("{v:+.3}")).join(" | ")
    ));
    Ok(rows.join("\n"))
}

const REFERENCE_LEVERS: &str = "results/hib/reference/levers";
/// The plan of the reference's levers: its entries in order, each a lever (its steps
/// `<lever>-seed<N>`) whose label says what it changes in the control (the paper's plain recipe
/// on the reference).
const REFERENCE_LEVER_PLAN: &str = "studies/hib/reference-levers.toml";

/// Every lever of [`REFERENCE_LEVER_PLAN`] in its order, with what it changes.
fn reference_lever_names(results: &Results) -> Result<Vec<(String, String)>> {
    let path = results.path(REFERENCE_LEVER_PLAN);
    let steps = crate::study::PlanFile::from_toml_file(&path)?.resolve(&path)?.steps;
    let mut levers: Vec<(String, String)> = Vec::new();
    for step in &steps {
        let lever = step.name.rsplit_once("-seed").map_or(step.name.as_str(), |(lever, _)| lever);
        if !levers.iter().any(|(l, _)| l == lever) {
            let change =
                step.label.clone().ok_or_else(|| missing(REFERENCE_LEVER_PLAN, format!("no label for {lever}")))?;
            levers.push((lever.to_string(), change));
        }
    }
    Ok(levers)
}

const FOUR_KEPT: [&str; 4] = ["AP clean", "AP corrupt", "KNN clean", "KNN corrupt"];

/// A lever run's `reference_eval.json`: the test numbers, the test-time occlusion reading
/// (`_p20`: every digit occluded with probability 0.2, as in training) and the validation
/// numbers that choose.
#[derive(Debug, Deserialize)]
struct ReferenceLeverEval {
    step: u64,
    #[serde(flatten)]
    test: ReferenceEval,
    ap_corrupt_p20: f64,
    knn_corrupt_p20_kept: f64,
    validation: ReferenceEval,
}

impl ReferenceEval {
    /// AP clean, AP corrupt, KNN clean, KNN corrupt, the probe kept (the headline reading).
    fn four_kept(&self) -> [f64; 4] {
        [self.ap_clean, self.ap_corrupt, self.knn_clean_kept, self.knn_corrupt_kept]
    }
}

/// The batch settings of a reference run's `config.json`: the images of one training step.
#[derive(Debug, Deserialize)]
struct ReferenceBatch {
    /// `pairs` (independent pairs) or `grouped` (classes of images, every pair among them).
    batch: String,
    pairs: u64,
    group_classes: u64,
    group_size: u64,
}

impl ReferenceBatch {
    fn images_per_step(&self) -> u64 {
        if self.batch == "pairs" {
            2 * self.pairs
        } else {
            self.group_classes * self.group_size
        }
    }
}

/// A line of a reference run's `metrics.jsonl`: a training line carries the images per second
/// of the steps since the line before; an evaluation line has none.
#[derive(Debug, Deserialize)]
struct ReferenceLogLine {
    images_per_s: Option<f64>,
}

/// The minutes a reference run's steps take at the median throughput of its logged windows. Its
/// `training_seconds` sums the steps' clocks as they ran, and so counts any time the process
/// spent stopped (the lever runs were paused with SIGSTOP while CI was timed on the same cores)
/// or crowded; the median window does not.
fn reference_run_minutes(results: &Results, run: &str, steps: u64) -> Result<(f64, f64)> {
    let batch: ReferenceBatch = results.json(&format!("{REFERENCE_LEVERS}/{run}/config.json"))?;
    let lines: Vec<ReferenceLogLine> = results.json_lines(&format!("{REFERENCE_LEVERS}/{run}"), "metrics.jsonl")?;
    let mut rates: Vec<f64> = lines.iter().filter_map(|l| l.images_per_s).collect();
    if rates.is_empty() {
        return Err(crate::LabError::Run(hedge_run::RunError::format(
            results.path(&format!("{REFERENCE_LEVERS}/{run}/metrics.jsonl")),
            "JSON lines",
            "no training line with images_per_s",
        )));
    }
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let median = if n % 2 == 1 { rates[n / 2] } else { (rates[n / 2 - 1] + rates[n / 2]) / 2.0 };
    Ok((steps as f64 * batch.images_per_step() as f64 / median / 60.0, median))
}

/// A lever's finished runs as (seed, evaluation, (minutes, median images/s)).
type LeverRuns = Vec<(u64, ReferenceLeverEval, (f64, f64))>;

/// The mean of each of four numbers over runs.
fn mean4(runs: &[[f64; 4]]) -> [f64; 4] {
    std::array::from_fn(|k| mean(&runs.iter().map(|r| r[k]).collect::<Vec<_>>()))
}

fn slash4(x: [f64; 4]) -> String {
    x.map(|v| fixed(v, 3)).join(" / ")
}

/// The lever table of issue 79 item 2: each lever's runs on the reference at equal steps, its
/// validation numbers (which choose), the cells it moves past the control's seeds, its test
/// numbers beside them (which never choose), and the test-time occlusion reading.
fn reference_levers(results: &Results) -> Result<String> {
    let names = reference_lever_names(results)?;
    let mut finished: Vec<(&str, &str, LeverRuns)> = Vec::new();
    for (lever, change) in &names {
        let (lever, change) = (lever.as_str(), change.as_str());
        let mut runs = Vec::new();
        for seed in 0..10 {
            let path = format!("{REFERENCE_LEVERS}/{lever}-seed{seed}/reference_eval.json");
            if results.exists(&path) {
                let eval = results.json::<ReferenceLeverEval>(&path)?;
                let speed = reference_run_minutes(results, &format!("{lever}-seed{seed}"), eval.step)?;
                runs.push((seed, eval, speed));
            }
        }
        finished.push((lever, change, runs));
    }
    let Some(control) = finished.iter().find(|f| f.0 == "control" && !f.2.is_empty()) else {
        return Ok(
            "No control run of the lever study has ended yet (`hedge study studies/hib/reference-levers.toml`).".into(),
        );
    };
    let score = |r: &ReferenceLeverEval| mean(&r.validation.four_kept());
    let control_scores: Vec<f64> = control.2.iter().map(|r| score(&r.1)).collect();
    let (control_lo, control_hi) = range(&control_scores);
    let control_cells: Vec<[f64; 4]> = control.2.iter().map(|r| r.1.validation.four_kept()).collect();
    let mut rows = vec![
        "| lever | what it changes | seeds | steps | min / run (img/s) | validation: AP c / AP k / KNN c / KNN k | \
         val. score | − control | cells it moves (validation) | verdict | test: AP c / AP k / KNN c / KNN k |"
            .to_string(),
        "|---|---|---|---|---|---|---|---|---|---|---|".into(),
    ];
    let mut pending = Vec::new();
    for (lever, change, runs) in &finished {
        if runs.is_empty() {
            pending.push(*lever);
            continue;
        }
        let seeds = runs.iter().map(|r| r.0.to_string()).collect::<Vec<_>>().join("/");
        let steps: BTreeSet<u64> = runs.iter().map(|r| r.1.step).collect();
        let steps = steps.iter().map(|s| thousands(*s)).collect::<Vec<_>>().join(", ");
        let minutes = mean(&runs.iter().map(|r| r.2 .0).collect::<Vec<_>>());
        let rate = mean(&runs.iter().map(|r| r.2 .1).collect::<Vec<_>>());
        let cells: Vec<[f64; 4]> = runs.iter().map(|r| r.1.validation.four_kept()).collect();
        let scores: Vec<f64> = runs.iter().map(|r| score(&r.1)).collect();
        let m = mean(&scores);
        // A cell moves when every seed of the lever lies beyond every seed of the control, on
        // one side; the same rule on the validation score gives the verdict.
        let moved = if *lever == "control" {
            "—".to_string()
        } else {
            let mut moved = Vec::new();
            for (k, name) in FOUR_KEPT.iter().enumerate() {
                let (lo, hi) = range(&control_cells.iter().map(|c| c[k]).collect::<Vec<_>>());
                if cells.iter().all(|c| c[k] > hi) {
                    moved.push(format!("{name} ↑"));
                } else if cells.iter().all(|c| c[k] < lo) {
                    moved.push(format!("{name} ↓"));
                }
            }
            if moved.is_empty() {
                "none".into()
            } else {
                moved.join(", ")
            }
        };
        let verdict = if *lever == "control" {
            "—"
        } else if runs.len() < 2 || control.2.len() < 2 {
            "one seed: undecided"
        } else if scores.iter().all(|s| *s > control_hi) {
            "better on validation"
        } else if scores.iter().all(|s| *s < control_lo) {
            "worse on validation"
        } else {
            "within seed noise"
        };
        let tests: Vec<[f64; 4]> = runs.iter().map(|r| r.1.test.four_kept()).collect();
        rows.push(format!(
            "| {lever} | {change} | {seeds} | {steps} | {} ({}) | {} | {} | {} | {moved} | {verdict} | {} |",
            fixed(minutes, 0),
            fixed(rate, 0),
            slash4(mean4(&cells)),
            fixed(m, 4),
            if *lever == "control" { "—".to_string() } else { format!("{:+.4}", m - mean(&control_scores)) },
            slash4(mean4(&tests)),
        ));
    }
    rows.push(String::new());
    rows.push(
        "Minutes per run: its steps at the median images/s of its logged windows (every 100 steps), \
         which a pause or a stretch of other work on the same cores does not move. A run crowded for \
         most of its windows still reads slow: every lever but `widths` costs about the control's arithmetic \
         per step, and a lower rate among them is the machine's load, not the lever's cost."
            .into(),
    );
    rows.push(String::new());
    rows.push(
        "Test-time occlusion, read on every run's final weights (no training of its own): the corrupt \
         gallery with every digit occluded (the protocol of the tables) against each digit occluded with \
         probability 0.2, as in training."
            .into(),
    );
    rows.push(String::new());
    rows.push("| lever | seeds | AP corrupt: every digit / 20 % | KNN corrupt: every digit / 20 % |".into());
    rows.push("|---|---|---|---|".into());
    for (lever, _, runs) in &finished {
        if runs.is_empty() {
            continue;
        }
        let avg = |f: &dyn Fn(&ReferenceLeverEval) -> f64| mean(&runs.iter().map(|r| f(&r.1)).collect::<Vec<_>>());
        rows.push(format!(
            "| {lever} | {} | {} / {} | {} / {} |",
            runs.len(),
            fixed(avg(&|r| r.test.ap_corrupt), 3),
            fixed(avg(&|r| r.ap_corrupt_p20), 3),
            fixed(avg(&|r| r.test.knn_corrupt_kept), 3),
            fixed(avg(&|r| r.knn_corrupt_p20_kept), 3),
        ));
    }
    if !pending.is_empty() {
        rows.push(String::new());
        rows.push(format!("Not ended yet: {}.", pending.join(", ")));
    }
    Ok(rows.join("\n"))
}

/// `studies/hib/quickstart-timing.toml`'s measurement (`results/hib/quickstart/<setting>.json`).
#[derive(Debug, Deserialize)]
struct QuickstartTiming {
    cpu: String,
    train_seconds: f64,
    steps: u64,
    conv_precision: String,
    ap_clean: f64,
    ap_corrupt: f64,
    /// The width of the layer between the convolutions and the head (0: none). Measurements
    /// from before the timing script recorded it trained the main job without one.
    #[serde(default)]
    hidden_units: u64,
}

/// The main job's training time and AP, with oneDNN and ATen held to AVX2 and as the machine is.
fn quickstart(results: &Results) -> Result<String> {
    // (CPU, what was measured on it), in the order of the settings; each CPU gets one sentence.
    let mut by_cpu: Vec<(String, Vec<String>)> = Vec::new();
    for (setting, name) in [
        ("avx2", "with oneDNN and ATen held to AVX2 (no bf16 dot products: f32 convolutions)"),
        ("native", "as this CPU is"),
        ("no-bf16", "as this CPU is, which has no native bf16 (AVX2 only)"),
    ] {
        let path = format!("{HIB}/quickstart/{setting}.json");
        if !results.exists(&path) {
            continue;
        }
        let r: QuickstartTiming = results.json(&path)?;
        let part = format!(
            "{name}: {} minutes of training ({} steps, {} convolutions, {}), verification AP {} on clean and {} on \
             occluded test pairs",
            fixed(r.train_seconds / 60.0, 1),
            thousands(r.steps),
            r.conv_precision,
            match r.hidden_units {
                0 => "no hidden layer".to_string(),
                n => format!("a hidden layer of {n} units"),
            },
            fixed(r.ap_clean, 3),
            fixed(r.ap_corrupt, 3)
        );
        match by_cpu.iter_mut().find(|c| c.0 == r.cpu) {
            Some(c) => c.1.push(part),
            None => by_cpu.push((r.cpu, vec![part])),
        }
    }
    if by_cpu.is_empty() {
        return Ok("Not measured yet (`studies/hib/quickstart-timing.toml`).".into());
    }
    Ok(by_cpu
        .into_iter()
        .map(|(cpu, parts)| {
            format!(
                "Measured on {cpu}, 2 cores (`studies/hib/quickstart-timing.toml`, `results/hib/quickstart/`): {}.",
                parts.join("; ")
            )
        })
        .collect::<Vec<_>>()
        .join(" "))
}

/// One trial of `studies/hib/quickstart-schedule.toml` (`results/hib/quickstart/schedule.jsonl`).
#[derive(Debug, Deserialize)]
struct ScheduleTrial {
    steps: u64,
    hidden_units: u64,
    seed: u64,
    ap_clean: f64,
    ap_corrupt: f64,
}

/// The main job's schedule trials: verification AP by step count and hidden layer, a value a
/// seed, against the bar the main job has to keep.
fn quickstart_schedule(results: &Results) -> Result<String> {
    let file = format!("{HIB}/quickstart/schedule.jsonl");
    if !results.exists(&file) {
        return Ok("No schedule trials yet (`hedge study studies/hib/quickstart-schedule.toml`).".into());
    }
    let trials: Vec<ScheduleTrial> = results.json_lines(&format!("{HIB}/quickstart"), "schedule.jsonl")?;
    let mut arms: BTreeMap<(u64, u64), Vec<&ScheduleTrial>> = BTreeMap::new();
    for t in &trials {
        arms.entry((t.steps, t.hidden_units)).or_default().push(t);
    }
    let mut rows = Vec::new();
    for ((steps, hidden), mut runs) in arms {
        runs.sort_by_key(|t| t.seed);
        let join = |f: fn(&ScheduleTrial) -> f64| runs.iter().map(|t| fixed(f(t), 3)).collect::<Vec<_>>().join(" / ");
        rows.push(vec![
            thousands(steps),
            if hidden == 0 { "none".to_string() } else { format!("{hidden} units") },
            runs.iter().map(|t| t.seed.to_string()).collect::<Vec<_>>().join(", "),
            join(|t| t.ap_clean),
            join(|t| t.ap_corrupt),
        ]);
    }
    Ok(format!(
        "The main job's schedule trials (`hedge study studies/hib/quickstart-schedule.toml`, `{file}`: \
         `scripts/quickstart-recipe.toml` at each step count, with and without its hidden layer, f32 convolutions, \
         verification AP on the instance test split, one value a seed; the bar is {}, the AP on clean pairs of \
         the 2,000 steps of 128 independent pairs the main job trained before):\n\n{}",
        fixed(QUICKSTART_BAR, 3),
        table(&["steps", "hidden layer", "seeds", "AP clean", "AP corrupt"], &rows)
    ))
}

/// The verification AP on clean test pairs that the main job's earlier recipe (2,000 steps of
/// 128 independent pairs) reached, which issue 79 asks the faster main job to keep.
const QUICKSTART_BAR: f64 = 0.946;

/// `studies/bench/f32-peer.toml`'s measurement (`results/bench/hib-f32-peer.json`).
#[derive(Debug, Deserialize)]
struct F32Peer {
    tries: Vec<F32PeerTry>,
    cpu: String,
    torch: String,
    command: String,
}

#[derive(Debug, Deserialize)]
struct F32PeerTry {
    setting: String,
    hedge: f64,
    pytorch: f64,
    pytorch_channels_last: f64,
}

/// hedge's f32 training images/s beside PyTorch's: the median over tries, and hedge's ratio, on
/// each CPU measured (`studies/bench/f32-peer.toml`; a CPU without native bf16 in a file of its own).
fn f32_peer(results: &Results) -> Result<String> {
    let files = ["results/bench/hib-f32-peer.json", "results/bench/hib-f32-peer-no-bf16.json"];
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    let mut out = vec![
        "| CPU | setting | tries | hedge f32 | PyTorch f32, contiguous | PyTorch f32, channels-last | hedge against \
         the faster PyTorch |"
            .to_string(),
        "|---|---|---|---|---|---|---|".into(),
    ];
    let mut sources = Vec::new();
    for path in files {
        if !results.exists(path) {
            continue;
        }
        let d: F32Peer = results.json(path)?;
        for (setting, name) in [("avx2", "oneDNN and ATen held to AVX2"), ("native", "as the CPU is")] {
            let tries: Vec<&F32PeerTry> = d.tries.iter().filter(|t| t.setting == setting).collect();
            if tries.is_empty() {
                continue;
            }
            let h = median(tries.iter().map(|t| t.hedge).collect());
            let p = median(tries.iter().map(|t| t.pytorch).collect());
            let c = median(tries.iter().map(|t| t.pytorch_channels_last).collect());
            out.push(format!(
                "| {} | {name} | {} | {} img/s | {} img/s | {} img/s | {}x |",
                d.cpu,
                tries.len(),
                thousands_fixed(h, 0),
                thousands_fixed(p, 0),
                thousands_fixed(c, 0),
                fixed(h / p.max(c), 2)
            ));
        }
        sources.push(format!("torch {} on {} (`{}`)", d.torch, d.cpu, d.command));
    }
    if sources.is_empty() {
        return Ok("Not measured yet (`studies/bench/f32-peer.toml`).".into());
    }
    out.push(String::new());
    out.push(format!(
        "Training images/s, medians over the tries, MoG-1, 256 images a step, 2 threads; {} (the PyTorch side is \
         `reference/hib/hib_reference.py --bench`).",
        sources.join("; ")
    ));
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables moved aside are found by their markers alone: each setting's newest first,
    /// named by their place ("second table"), and labelled after their setting.
    #[test]
    fn moved_aside_tables_are_found_and_named_by_their_markers() {
        let root = tempfile::tempdir().unwrap();
        let hib = root.path().join(HIB);
        for (folder, marker) in [
            ("n2-d2", None),
            ("n2-d2-old", Some(r#"{"setting": "n2-d2", "table": 1}"#)),
            ("n2-d2-older-recipe-b", Some(r#"{"setting": "n2-d2", "table": 2}"#)),
            ("n3-d3-x", Some(r#"{"setting": "n3-d3", "table": 1}"#)),
        ] {
            std::fs::create_dir_all(hib.join(folder)).unwrap();
            if let Some(text) = marker {
                std::fs::write(hib.join(folder).join(MOVED_ASIDE_FILE), text).unwrap();
            }
        }
        let a = Asides::read(&Results::new(root.path())).unwrap();
        assert_eq!(a.of("n2-d2"), ["n2-d2-older-recipe-b", "n2-d2-old"]);
        assert_eq!(a.get("n2-d2-old"), Some(("n2-d2", "first table")));
        assert_eq!(a.label("n2-d2-older-recipe-b"), "N = 2, D = 2 (second table)");
        assert_eq!(a.label("n3-d3"), "N = 3, D = 3");
        let folders = a.table_folders();
        assert_eq!(folders[..3], ["n2-d2", "n2-d2-older-recipe-b", "n2-d2-old"]);
        assert!(folders.contains(&"n3-d3-x".to_string()));
        std::fs::write(hib.join("n3-d3-x").join(MOVED_ASIDE_FILE), r#"{"setting": "n3-d3"}"#).unwrap();
        let e = Asides::read(&Results::new(root.path())).err().unwrap().to_string();
        assert!(e.contains("moved-aside.json") && e.contains("table"), "{e}");
    }

    /// The cross-evaluation table reads both files' schemas and reports the shift as the
    /// reference's evaluation minus hedge's, averaged over the weight files scored both ways.
    #[test]
    fn the_cross_evaluation_shift_is_the_reference_minus_hedge_on_the_same_weights() {
        let root = tempfile::tempdir().unwrap();
        let runs = root.path().join(REFERENCE);
        let hedge_side = |knn_kept_clean: f64| {
            format!(
                r#"{{"verification_ap": {{"clean": 0.96, "corrupt": 0.79, "clean_std": 0.001}},
                   "knn_leave_one_out": {{"clean": 0.37, "corrupt": 0.17}},
                   "knn_kept": {{"clean": {knn_kept_clean}, "corrupt": 0.18}}}}"#
            )
        };
        let reference_side = |knn_clean_kept: f64| {
            format!(
                r#"{{"ap_clean": 0.96, "ap_corrupt": 0.79, "knn_clean_kept": {knn_clean_kept},
                   "knn_corrupt_kept": 0.18, "knn_clean_loo": 0.37, "knn_corrupt_loo": 0.17, "step": 20000}}"#
            )
        };
        for (folder, file, hedge, reference) in [
            ("hedge-plain-mog1-seed0", "reference_eval_of_hedge.json", 0.46, 0.48),
            ("ref-plain-mog1-seed1", "hedge_eval_of_reference.json", 0.50, 0.51),
        ] {
            std::fs::create_dir_all(runs.join(folder)).unwrap();
            let text = format!(
                r#"{{"hedge_evaluation": {}, "reference_evaluation": {}}}"#,
                hedge_side(hedge),
                reference_side(reference)
            );
            std::fs::write(runs.join(folder).join(file), text).unwrap();
        }
        let table = reference_cross(&Results::new(root.path())).unwrap();
        assert!(table.contains("| plain | MoG-1 | hedge | 0 | the reference's | 0.960 | 0.790 | 0.480 |"), "{table}");
        assert!(table.contains("| plain | MoG-1 | reference | 1 | hedge's | 0.960 | 0.790 | 0.500 |"), "{table}");
        // KNN clean: ((.48 − .46) + (.51 − .50)) / 2 = +.015; the others do not move.
        assert!(table.contains("over the 2 weight files | | | +0.000 | +0.000 | +0.015 | +0.000 |"), "{table}");
    }

    /// A lever run's `reference_eval.json` whose four kept numbers (test and validation alike)
    /// are `four`.
    fn lever_eval(four: [f64; 4]) -> String {
        let scores = format!(
            r#""ap_clean": {}, "ap_corrupt": {}, "knn_clean_kept": {}, "knn_corrupt_kept": {},
               "knn_clean_loo": 0.1, "knn_corrupt_loo": 0.1"#,
            four[0], four[1], four[2], four[3]
        );
        format!(
            r#"{{"step": 5000, "training_seconds": 600.0, {scores}, "ap_corrupt_p20": 0.9,
               "knn_corrupt_p20_kept": 0.4, "knn_corrupt_p20_loo": 0.3, "validation": {{{scores}}}}}"#
        )
    }

    /// An A/B study's finished runs are found in both layouts it may have: the shell loop's
    /// (`<arm>-seed<N>/` with `.test.json` beside it) and `hedge study`'s (`runs/<arm>,seed=<N>/`
    /// with its `eval.json`); a run without its test report has not finished and is left out.
    #[test]
    fn an_ab_studys_runs_are_read_from_the_loops_layout_and_the_study_engines() {
        let root = tempfile::tempdir().unwrap();
        let study = root.path().join(HIB).join("hidden");
        for folder in ["control-seed0", "wd1e-1-seed1", "runs/hid256,seed=0", "runs/hid256,seed=1"] {
            std::fs::create_dir_all(study.join(folder)).unwrap();
        }
        std::fs::write(study.join("control-seed0.test.json"), "{}").unwrap();
        std::fs::write(study.join("runs/hid256,seed=1/eval.json"), "{}").unwrap();
        let results = Results::new(root.path());
        let found = ab_runs(&results, "hidden");
        let base = format!("{HIB}/hidden");
        assert_eq!(
            found,
            [
                ("control".into(), 0, format!("{base}/control-seed0"), format!("{base}/control-seed0.test.json")),
                (
                    "hid256".into(),
                    1,
                    format!("{base}/runs/hid256,seed=1"),
                    format!("{base}/runs/hid256,seed=1/eval.json")
                ),
            ]
        );
    }

    /// The lever table's verdicts follow its stated rule: better only when every seed of the
    /// lever beats every seed of the control on validation, a cell moves only when every seed
    /// lies beyond the control's on that cell, and one seed decides nothing.
    #[test]
    fn a_lever_is_better_only_when_each_seed_beats_each_control_seed_on_validation() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(REFERENCE_LEVERS);
        let write = |run: &str, four: [f64; 4]| {
            std::fs::create_dir_all(base.join(run)).unwrap();
            std::fs::write(base.join(run).join("reference_eval.json"), lever_eval(four)).unwrap();
            std::fs::write(
                base.join(run).join("config.json"),
                r#"{"batch": "pairs", "pairs": 128, "group_classes": 16, "group_size": 16}"#,
            )
            .unwrap();
            // A first window slowed by a pause, then 320 and 400 images/s: the median is 320.
            std::fs::write(
                base.join(run).join("metrics.jsonl"),
                "{\"step\": 100, \"images_per_s\": 9.5}\n{\"step\": 200, \"images_per_s\": 400.0}\n\
                 {\"step\": 200, \"eval\": {}}\n{\"step\": 300, \"images_per_s\": 320.0}\n",
            )
            .unwrap();
        };
        // The levers and their order come from the shipped plan.
        let plan = root.path().join(REFERENCE_LEVER_PLAN);
        std::fs::create_dir_all(plan.parent().unwrap()).unwrap();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(REFERENCE_LEVER_PLAN);
        std::fs::copy(shipped, &plan).unwrap();
        let results = Results::new(root.path());
        assert!(reference_levers(&results).unwrap().starts_with("No control run"));
        write("control-seed0", [0.96, 0.78, 0.40, 0.20]);
        write("control-seed1", [0.96, 0.78, 0.44, 0.20]);
        // Both seeds above the control's best KNN clean (.44), the rest equal: better, KNN clean up.
        write("widths-seed0", [0.96, 0.78, 0.50, 0.20]);
        write("widths-seed1", [0.96, 0.78, 0.46, 0.20]);
        // One seed above, one below the control: noise.
        write("sgd-seed0", [0.96, 0.78, 0.50, 0.20]);
        write("sgd-seed1", [0.96, 0.78, 0.30, 0.20]);
        // Both below on AP corrupt: worse, AP corrupt down.
        write("expvar-seed0", [0.96, 0.70, 0.42, 0.20]);
        write("expvar-seed1", [0.96, 0.71, 0.42, 0.20]);
        write("hidden-seed0", [0.99, 0.90, 0.60, 0.40]);
        let table = reference_levers(&results).unwrap();
        let row = |lever: &str| table.lines().find(|l| l.starts_with(&format!("| {lever} |"))).unwrap().to_string();
        assert!(row("widths").contains("| KNN clean ↑ | better on validation |"), "{}", row("widths"));
        assert!(row("sgd").contains("| none | within seed noise |"), "{}", row("sgd"));
        assert!(row("expvar").contains("| AP corrupt ↓ | worse on validation |"), "{}", row("expvar"));
        assert!(row("hidden").contains("one seed: undecided"), "{}", row("hidden"));
        // The validation score is the mean of the four: control (.585 + .595) / 2 = .59.
        assert!(row("control").contains("| 0.5900 | — |"), "{}", row("control"));
        assert!(row("widths").contains("+0.0150"), "{}", row("widths"));
        assert!(table.contains("Not ended yet: glorot, share25, meanlog."), "{table}");
        // 5,000 steps of 256 images at the median 320 images/s: 66.7 minutes, whatever the
        // paused window read.
        assert!(row("control").contains("| 5,000 | 67 (320) |"), "{}", row("control"));
    }
}
