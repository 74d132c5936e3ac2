//! A study: a grid of HIB runs that differ in a few settings (a lever study, seeds of two
//! recipes), trained and evaluated in order on hedge's one engine ([`hedge_run::Experiment`]),
//! started by `hedge study F --out DIR` and continued by `--resume DIR`. Each run
//! trains in `runs/<name>/` (resuming from its own checkpoint there), is evaluated on its
//! protocol's test splits (the main one in the table), and is logged to `runs.jsonl`; `summary.json` and `table.md` are
//! written from that log. No shell loop tests for files: an interrupted study resumes from its
//! checkpoint.
//!
//! A plan is TOML: a recipe and settings every run shares, then the runs, listed, as a grid
//! (every combination of the values listed per setting), or both (every listed run crossed with
//! the grid), each with its settings by the names `config.json` writes them:
//!
//! ```toml
//! recipe = "results/hib/recipe.toml"   # optional, relative to the plan
//! steps = 20000                        # optional: every run's length
//! repeats = 1                          # evaluation repeats (the paper: 10)
//! # or: a budget the first run of each lever plans its steps from, which runs that differ
//! # from it only in `same_steps_across` then train exactly
//! # budget_minutes = 20
//! # finish_planned_steps = true
//! # same_steps_across = ["seed"]
//! watch_every = 1000                   # watch validation and the test split (0: never)
//! keep_every = 0                       # keep a copy of the weights every N steps (0: none)
//! [settings]                           # every run
//! digits = 2
//! dim = 2
//! [grid]                               # each listed run at seed 0 and 1
//! seed = [0, 1]
//! [[runs]]                             # runs `soft,seed=0`, `soft,seed=1`, `focal,seed=0`, …
//! name = "soft"
//! [[runs]]
//! name = "focal"
//! settings = { loss = "focal" }
//! [report]                             # optional: what the study's report reads beyond its runs
//! # control_from = { study = "weight-decay", arm = "wd1e-1" }   # an A/B study's control
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::hib::grid::{run_grid, GridSettings, ReproduceData, ReproduceEnv};
use crate::Result;
use hedge_embed::experiment::TrainPlan;
use hedge_embed::report::EvalReport;
use hedge_embed::run_eval::EvalSettings;
use hedge_embed::{HibConfig, HibData, SettingsRequest};
use hedge_run::{Experiment, RunDirectory};

pub use crate::hib::grid::{StudyRun, RUNS_LOG};

/// A study plan as its TOML file says it (see the module's docs).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyPlan {
    /// A HIB recipe every run starts from (a path relative to the plan file).
    #[serde(default)]
    pub recipe: Option<PathBuf>,
    /// Every run's length (default: the recipe's).
    #[serde(default)]
    pub steps: Option<usize>,
    /// Repeats of the sampling-dependent evaluation.
    #[serde(default = "one")]
    pub repeats: usize,
    /// Score on the first this many test images of every class only (quick looks).
    #[serde(default)]
    pub eval_images_per_class: Option<usize>,
    /// Minutes of training per run: without `steps`, a run plans its step count from the speed
    /// of its first steps, unless an earlier run differs from it only in `same_steps_across`:
    /// then it trains exactly that run's planned count.
    #[serde(default)]
    pub budget_minutes: Option<f64>,
    /// With a budget: train every planned step even if the machine slows down after planning.
    #[serde(default)]
    pub finish_planned_steps: bool,
    /// The settings whose values share one planned step count (e.g. `["seed"]`).
    #[serde(default)]
    pub same_steps_across: Vec<String>,
    /// Watch the validation images or classes (where a run holds some out) and the run's test
    /// split every this many steps (0: never); validation chooses the weights that are scored.
    #[serde(default)]
    pub watch_every: usize,
    /// Keep a copy of the weights every this many steps (0: none).
    #[serde(default)]
    pub keep_every: usize,
    /// Settings every run shares, by name.
    #[serde(default)]
    pub settings: Map<String, Value>,
    /// Every combination of these values is a run, named `key=value,…` in key order (crossed
    /// with each listed run, where there are some).
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<Value>>,
    /// Runs by name.
    #[serde(default)]
    pub runs: Vec<PlannedRun>,
    /// What the study's report reads beyond its runs.
    #[serde(default)]
    pub report: StudyReport,
}

/// What a study's report reads beyond its runs, kept with the plan rather than in the report's
/// code.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyReport {
    /// An A/B study whose arms add one setting to an arm of another study: that study and arm,
    /// whose runs its table reads as `control` (absent: the study's own `control` runs).
    #[serde(default)]
    pub control_from: Option<ArmOf>,
}

/// An arm of a study: `{ study = "weight-decay", arm = "wd1e-1" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmOf {
    /// The study's name (its plan `studies/hib/ab-<study>.toml`, its runs in `results/hib/<study>/`).
    pub study: String,
    pub arm: String,
}

fn one() -> usize {
    1
}

/// One listed run of a plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedRun {
    pub name: String,
    #[serde(default)]
    pub settings: Map<String, Value>,
}

impl StudyPlan {
    /// The plan in the TOML file at `path`.
    ///
    /// # Errors
    /// [`crate::LabError`] naming the file when it cannot be read or is no plan.
    pub fn from_toml_file(path: &Path) -> Result<StudyPlan> {
        let text =
            std::fs::read_to_string(path).map_err(|e| hedge_run::RunError::Io { path: path.into(), source: e })?;
        let mut plan: StudyPlan = toml::from_str(&text).map_err(|e| {
            crate::error::invalid("plan", path.display(), format!("not a study plan (see `hedge study --help`): {e}"))
        })?;
        if let Some(recipe) = &plan.recipe {
            plan.recipe = Some(path.parent().unwrap_or(Path::new(".")).join(recipe));
        }
        Ok(plan)
    }

    /// Every run's name and overrides: each listed run crossed with the grid's combinations
    /// (the listed runs alone without a grid, the grid alone without listed runs).
    fn named_overrides(&self) -> Vec<(String, Map<String, Value>)> {
        let mut combos: Vec<(Vec<String>, Map<String, Value>)> = vec![(Vec::new(), Map::new())];
        for (key, values) in &self.grid {
            combos = combos
                .into_iter()
                .flat_map(|(name, settings)| {
                    values.iter().map(move |v| {
                        let shown = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
                        let mut settings = settings.clone();
                        settings.insert(key.clone(), v.clone());
                        let mut name = name.clone();
                        name.push(format!("{key}={shown}"));
                        (name, settings)
                    })
                })
                .collect();
        }
        let listed: Vec<(Vec<String>, Map<String, Value>)> = if self.runs.is_empty() {
            vec![(Vec::new(), Map::new())]
        } else {
            self.runs.iter().map(|r| (vec![r.name.clone()], r.settings.clone())).collect()
        };
        if self.runs.is_empty() && self.grid.is_empty() {
            return Vec::new();
        }
        listed
            .iter()
            .flat_map(|(run_name, run_settings)| {
                combos.iter().map(move |(combo_name, combo_settings)| {
                    let mut settings = run_settings.clone();
                    settings.extend(combo_settings.clone());
                    ([run_name.as_slice(), combo_name.as_slice()].concat().join(","), settings)
                })
            })
            .collect()
    }

    /// The study of this plan: every run's settings resolved and checked now, so a mistake in
    /// the last run is refused before the first one trains.
    ///
    /// # Errors
    /// A plan without runs, two runs of one name, a name that is no folder name, and every
    /// error of [`HibData::resolve`] naming the run.
    pub fn resolve(&self, data: &HibData, command: &str) -> Result<Study> {
        if let Some(m) = self.budget_minutes {
            if !(m.is_finite() && m > 0.0) {
                return Err(crate::error::invalid("budget_minutes", m, "give a positive number of minutes"));
            }
        } else if self.finish_planned_steps {
            return Err(crate::error::invalid("finish_planned_steps", true, "needs a budget (budget_minutes)"));
        }
        let mut runs: Vec<StudyRun> = Vec::new();
        // Each run's overrides less the settings that share a step count: the first run of each
        // plans, the later ones train its count.
        let mut planners: Vec<(Map<String, Value>, String)> = Vec::new();
        for (name, overrides) in self.named_overrides() {
            if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
                return Err(crate::error::invalid("runs.name", format!("'{name}'"), "give a folder name"));
            }
            if runs.iter().any(|r| r.name == name) {
                return Err(crate::error::invalid("runs.name", format!("'{name}'"), "two runs have this name"));
            }
            let mut lever = overrides.clone();
            lever.retain(|k, _| !self.same_steps_across.contains(k));
            let planner = planners.iter().find(|(l, _)| *l == lever).map(|(_, n)| n.clone());
            if planner.is_none() {
                planners.push((lever, name.clone()));
            }
            let mut settings = self.settings.clone();
            settings.extend(overrides);
            let request = SettingsRequest::new(format!("study run '{name}'"), settings)
                .with_recipe(self.recipe.clone())
                .with_length(self.steps, self.budget_minutes);
            let steps_from = planner.filter(|_| self.budget_minutes.is_some() && self.steps.is_none());
            runs.push(StudyRun { hib: data.resolve(&request)?, name, steps_from });
        }
        if runs.is_empty() {
            return Err(crate::error::invalid("runs", 0, "a plan lists runs ([[runs]]) or a grid ([grid])"));
        }
        Ok(Study {
            runs,
            repeats: self.repeats,
            eval_images_per_class: self.eval_images_per_class,
            budget_minutes: self.budget_minutes,
            finish_planned_steps: self.finish_planned_steps,
            watch_every: self.watch_every,
            keep_every: self.keep_every,
            command: command.into(),
        })
    }
}

/// A study as its `config.json` holds it: every run's resolved settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    pub runs: Vec<StudyRun>,
    pub repeats: usize,
    pub eval_images_per_class: Option<usize>,
    pub budget_minutes: Option<f64>,
    pub finish_planned_steps: bool,
    pub watch_every: usize,
    pub keep_every: usize,
    /// The command that started the study.
    pub command: String,
}

/// The line `runs.jsonl` logs for every finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyRecord {
    pub name: String,
    /// Steps the run trained.
    pub steps: usize,
    /// On its protocol's main test split.
    pub eval: EvalReport,
    /// On the protocol's other test split, if it has one (open-set: `test_seen`).
    pub other: Option<EvalReport>,
}

/// `summary.json`: one row per finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudySummary {
    pub rows: Vec<StudyRow>,
}

/// A run's headline numbers (the full evaluation is its line of `runs.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyRow {
    pub name: String,
    pub steps: usize,
    pub verification_ap_clean: Option<f64>,
    pub verification_ap_corrupt: Option<f64>,
    pub knn_clean: Option<f64>,
    pub knn_corrupt: Option<f64>,
}

impl StudyRow {
    fn of(r: &StudyRecord) -> Self {
        let ap = r.eval.verification_ap.twin();
        StudyRow {
            name: r.name.clone(),
            steps: r.steps,
            verification_ap_clean: ap.clean,
            verification_ap_corrupt: ap.corrupt,
            knn_clean: r.eval.knn_accuracy.clean,
            knn_corrupt: r.eval.knn_accuracy.corrupt,
        }
    }
}

/// `table.md` of a summary.
pub fn study_table(summary: &StudySummary) -> String {
    let cell = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.3}"));
    let mut out =
        String::from("| run | steps | AP clean | AP corrupt | KNN clean | KNN corrupt |\n|---|---|---|---|---|---|\n");
    for r in &summary.rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.name,
            r.steps,
            cell(r.verification_ap_clean),
            cell(r.verification_ap_corrupt),
            cell(r.knn_clean),
            cell(r.knn_corrupt)
        );
    }
    out
}

impl Study {
    /// The training plan of a run of the study.
    fn train_plan(&self, config: &HibConfig) -> TrainPlan {
        TrainPlan {
            budget_minutes: self.budget_minutes,
            finish_planned_steps: self.finish_planned_steps,
            watch_every: self.watch_every,
            watch_splits: if self.watch_every > 0 { vec![config.data.protocol.main_test_split()] } else { vec![] },
            keep_every: self.keep_every,
            ..Default::default()
        }
    }
}

impl Experiment for Study {
    type Data = ReproduceData;
    type Root = ReproduceEnv;
    type Summary = StudySummary;
    type Finished = StudyRecord;
    type Error = crate::LabError;

    const KIND: &'static str = "hib study";
    const FILES: &'static [&'static str] = &[RUNS_LOG, "summary.json", "table.md"];

    fn is_started_as(&self, started: &Self) -> bool {
        Self { command: started.command.clone(), ..self.clone() } == *started
    }

    fn load(&self, root: &ReproduceEnv) -> Result<ReproduceData> {
        Ok(ReproduceData::new(root))
    }

    fn check(&self, _data: &ReproduceData) -> Result<()> {
        for run in &self.runs {
            hedge_run::ParamGuard::check_ref(&run.hib)?;
        }
        Ok(())
    }

    fn continue_in(
        &self,
        dir: &RunDirectory,
        data: &ReproduceData,
        progress: &mut dyn FnMut(StudyRecord),
    ) -> Result<StudySummary> {
        let grid = GridSettings {
            plan: &|run| self.train_plan(&run.hib),
            eval: &|run| EvalSettings {
                split: run.hib.data.protocol.main_test_split(),
                repeats: self.repeats,
                images_per_class: self.eval_images_per_class,
                ..Default::default()
            },
            command: &self.command,
        };
        run_grid(
            dir,
            data,
            &self.runs,
            &grid,
            |index, steps, evals| StudyRecord {
                name: self.runs[index].name.clone(),
                steps,
                eval: evals.main,
                other: evals.other,
            },
            |r: &StudyRecord| (r.name.clone(), r.steps),
            progress,
        )?;
        self.report_in(dir)
    }

    fn report_in(&self, dir: &RunDirectory) -> Result<StudySummary> {
        let finished: Vec<StudyRecord> = dir.checkpointed_json_lines(RUNS_LOG)?;
        let summary = StudySummary { rows: finished.iter().map(StudyRow::of).collect() };
        dir.write_json("summary.json", &summary)?;
        dir.write_bytes("table.md", study_table(&summary).as_bytes())?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_names_every_combination_in_key_order_crossed_with_the_listed_runs() {
        let names = |text: &str| -> Vec<String> {
            toml::from_str::<StudyPlan>(text).unwrap().named_overrides().into_iter().map(|(n, _)| n).collect()
        };
        let grid = "[grid]\nseed = [0, 1]\nmodel = [\"point\", \"gaussian\"]\n";
        assert_eq!(
            names(grid),
            ["model=point,seed=0", "model=point,seed=1", "model=gaussian,seed=0", "model=gaussian,seed=1"]
        );
        let runs = "[[runs]]\nname = \"soft\"\n[[runs]]\nname = \"focal\"\nsettings = { loss = \"focal\" }\n";
        assert_eq!(names(runs), ["soft", "focal"]);
        let both = format!("{runs}[grid]\nseed = [0, 1]\n");
        assert_eq!(names(&both), ["soft,seed=0", "soft,seed=1", "focal,seed=0", "focal,seed=1"]);
        let plan: StudyPlan = toml::from_str(&both).unwrap();
        let focal1 = &plan.named_overrides()[3].1;
        assert_eq!((focal1["loss"].as_str(), focal1["seed"].as_u64()), (Some("focal"), Some(1)));
    }

    #[test]
    fn with_a_budget_runs_that_differ_only_in_seed_train_the_first_one_s_steps() {
        let data = HibData::new(hedge_data::DataRoot::at("/nonexistent"));
        let text = "budget_minutes = 5\nsame_steps_across = [\"seed\"]\n[grid]\nseed = [0, 1]\n[[runs]]\nname = \"a\"\n[[runs]]\nname = \"b\"\nsettings = { dim = 3 }\n";
        let study = toml::from_str::<StudyPlan>(text).unwrap().resolve(&data, "t").unwrap();
        let from: Vec<(&str, Option<&str>)> =
            study.runs.iter().map(|r| (r.name.as_str(), r.steps_from.as_deref())).collect();
        assert_eq!(
            from,
            [("a,seed=0", None), ("a,seed=1", Some("a,seed=0")), ("b,seed=0", None), ("b,seed=1", Some("b,seed=0"))]
        );
        assert!(study.runs.iter().all(|r| !r.hib.steps_planned()));
        let e = toml::from_str::<StudyPlan>("finish_planned_steps = true\n[[runs]]\nname = \"a\"\n")
            .unwrap()
            .resolve(&data, "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("budget_minutes"), "{e}");
    }

    #[test]
    fn the_shipped_plans_resolve() {
        let data = HibData::new(hedge_data::DataRoot::at("/nonexistent"));
        let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../studies/hib");
        let mut seen = 0;
        for entry in std::fs::read_dir(&plans).unwrap().flatten() {
            if crate::study::lists_steps(&entry.path()).unwrap() {
                continue;
            }
            let study = StudyPlan::from_toml_file(&entry.path()).unwrap().resolve(&data, "t");
            let study = study.unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
            assert!(study.runs.len() >= 4, "{}", entry.path().display());
            seen += 1;
        }
        assert!(seen >= 5, "{seen} plans in {}", plans.display());
    }

    #[test]
    fn every_run_is_resolved_and_checked_before_any_trains() {
        let data = HibData::new(hedge_data::DataRoot::at("/nonexistent"));
        let plan: StudyPlan = toml::from_str(
            "steps = 7\n[settings]\ndim = 3\n[[runs]]\nname = \"a\"\nsettings = { model = \"point\" }\n[[runs]]\nname = \"b\"\nsettings = { learning_rte = 1 }\n",
        )
        .unwrap();
        let e = plan.resolve(&data, "test").unwrap_err().to_string();
        assert!(e.contains("study run 'b'") && e.contains("learning_rte"), "{e}");
        let plan: StudyPlan = toml::from_str(
            "steps = 7\n[settings]\ndim = 3\n[[runs]]\nname = \"a\"\nsettings = { model = \"point\" }\n",
        )
        .unwrap();
        let study = plan.resolve(&data, "test").unwrap();
        let want = HibConfig::default().with_dim(3).with_model(hedge_embed::EmbeddingKind::Point).with_steps(7);
        assert_eq!(study.runs, vec![StudyRun { name: "a".into(), hib: want, steps_from: None }]);
        let twice: StudyPlan = toml::from_str("[[runs]]\nname = \"a\"\n[[runs]]\nname = \"a\"\n").unwrap();
        assert!(twice.resolve(&data, "t").unwrap_err().to_string().contains("two runs have this name"));
        assert!(StudyPlan::default().resolve(&data, "t").unwrap_err().to_string().contains("[[runs]]"));
    }
}
