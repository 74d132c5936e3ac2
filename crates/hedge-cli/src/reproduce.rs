//! `hedge hib reproduce`: trains point, MoG-1 and MoG-2 embeddings, evaluates them, and writes
//! the paper's Tables 1 and 2 (and optionally 5–7 and Appendix B) with the paper's numbers beside
//! ours, a summary.json and the figures. Finished runs are reused, unfinished ones resumed, so
//! an interrupted reproduction continues where it stopped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use hedge_data::{Corruption, NDigitSplit};
use hedge_embed::experiment::TrainPlan;
use hedge_embed::run::BEST_MODEL_FILE;
use hedge_embed::{
    embed_dataset, load_model, paper, parse_device, EmbedOptions, EmbeddedSet, HibConfig, LossKind, ModelKind, RunDir,
};
use serde_json::{json, Value};
use tracing::info;

use crate::figures;
use crate::hib::{
    embed_twins, eval_file_name, evaluate_run, load_split, new_run, run_training_planned, EvalSettings, SplitArg,
};

#[derive(Args)]
pub struct ReproduceArgs {
    /// Digits per image (N).
    #[arg(long, default_value_t = 2)]
    digits: usize,
    /// Embedding dimension (D).
    #[arg(long, default_value_t = 2)]
    dim: usize,
    /// Training steps per model (default 20,000; with --budget-minutes, planned from speed).
    #[arg(long)]
    steps: Option<usize>,
    /// Minutes of training per model (evaluation excluded): the step count is planned from the
    /// speed of the first steps so that schedules end on time.
    #[arg(long)]
    budget_minutes: Option<f64>,
    /// With --budget-minutes: train every planned step even if the machine slows down after
    /// planning (the budget then fixes the step count, not the stop), so other work beside a
    /// long reproduction changes its wall-clock, not its numbers.
    #[arg(long, requires = "budget_minutes")]
    finish_planned_steps: bool,
    /// TOML recipe (any HibConfig fields: schedule, levers, batch) applied to every model;
    /// the flags below override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The test split Tables 1 and 2 are computed on; the other split is reported beside it
    /// (default test_unseen: the split closer to the paper, results/hib/n2-d2-split/README.md).
    #[arg(long, value_enum, default_value = "test-unseen")]
    split: SplitArg,
    /// Evaluate the validation classes (if the recipe holds some out) and the tables' split
    /// every N steps during training (monitor.jsonl; quality against wall-clock; the
    /// validation classes choose model_best.safetensors).
    #[arg(long, default_value_t = 0)]
    watch_every: usize,
    /// Seeds per model of Table 1 (point, MoG-1, MoG-2; results are averaged).
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Seeds for the extra models: Table 5's beta = 0 and Appendix B's margins (the paper
    /// reports one run of each).
    #[arg(long, default_value_t = 1)]
    extra_seeds: u64,
    /// Repeats of the sampling-dependent evaluation.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Adam learning rate.
    #[arg(long)]
    lr: Option<f64>,
    /// Learning-rate schedule (default: the recipe's, else constant).
    #[arg(long, value_enum)]
    lr_schedule: Option<crate::hib::ScheduleArg>,
    /// Grouped batches CLASSESxIMAGES (e.g. 32x8) instead of the paper's 128 independent pairs.
    #[arg(long, value_name = "CLASSESxIMAGES")]
    group: Option<String>,
    /// Also train MoG-1 with beta = 0 (Table 5).
    #[arg(long)]
    beta_sweep: bool,
    /// Also write Tables 6 and 7 (plurality KNN, gallery/probe variants).
    #[arg(long)]
    appendix_g: bool,
    /// Also train point embeddings with the hard contrastive loss at these margins (Appendix B).
    #[arg(long)]
    appendix_b: bool,
    /// Also evaluate every kept checkpoint (each 1,000 steps) and plot quality against steps.
    #[arg(long)]
    curves: bool,
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Output folder, e.g. results/hib/n2-d2.
    #[arg(long)]
    out: PathBuf,
}

/// Margins of the Appendix B comparison.
const MARGINS: [f64; 4] = [0.5, 1.0, 2.0, 4.0];

/// Tables 1 and 2 of the paper for (N, D) as JSON (per model `verification_ap`,
/// `knn_accuracy`, and for MoG `tau_ap`, `tau_knn`, each `{clean, corrupt}`), plus Table 5's
/// β = 0 and β = 1e-4 columns as `mog1-beta0` and `mog1-beta1e4` where the paper has them.
fn paper(digits: usize, dim: usize) -> Option<Value> {
    let t = paper::table1(digits, dim)?;
    let mut v = json!({"point": t.point, "mog1": t.mog1, "mog2": t.mog2});
    if let Some(t5) = paper::table5(digits, dim) {
        v["mog1-beta0"] = json!(t5.beta0);
        v["mog1-beta1e4"] = json!(t5.beta1e4);
    }
    Some(v)
}

/// One model of the reproduction.
struct Variant {
    key: String,
    label: String,
    config: HibConfig,
    /// Seeds 0..seeds are trained and averaged.
    seeds: u64,
}

fn variants(args: &ReproduceArgs) -> Result<Vec<Variant>> {
    let recipe = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read --config '{}': {e}", path.display()))?;
            toml::from_str::<HibConfig>(&text)
                .map_err(|e| anyhow::anyhow!("--config '{}' is not a valid HIB recipe: {e}", path.display()))?
        }
        None => HibConfig::default(),
    };
    let steps = match (args.steps, args.budget_minutes) {
        (Some(s), _) => s,
        (None, Some(_)) => crate::hib::PLANNED_STEPS_PLACEHOLDER,
        (None, None) if args.config.is_some() => recipe.steps,
        (None, None) => 20_000,
    };
    let base = recipe.with_digits(args.digits).with_dim(args.dim).with_steps(steps);
    let base = match &args.group {
        Some(spec) => crate::hib::with_group(base, spec)?,
        None => base,
    };
    let base = match args.lr {
        Some(lr) => base.with_learning_rate(lr),
        None => base,
    };
    let base = match args.lr_schedule {
        Some(schedule) => base.with_lr_schedule(schedule.into()),
        None => base,
    };
    let mut v = vec![
        Variant {
            key: "point".into(),
            label: "point".into(),
            config: base.clone().with_model(ModelKind::Point),
            seeds: args.seeds,
        },
        Variant {
            key: "mog1".into(),
            label: "MoG-1".into(),
            config: base.clone().with_model(ModelKind::Gaussian),
            seeds: args.seeds,
        },
        Variant {
            key: "mog2".into(),
            label: "MoG-2".into(),
            config: base.clone().with_model(ModelKind::Mog).with_components(2),
            seeds: args.seeds,
        },
    ];
    if args.beta_sweep {
        v.push(Variant {
            key: "mog1-beta0".into(),
            label: "MoG-1, beta = 0".into(),
            config: base.clone().with_model(ModelKind::Gaussian).with_beta(0.0),
            seeds: args.extra_seeds,
        });
    }
    if args.appendix_b {
        for m in MARGINS {
            v.push(Variant {
                key: format!("point-contrastive-m{m}"),
                label: format!("point, contrastive M = {m}"),
                config: base.clone().with_model(ModelKind::Point).with_loss(LossKind::Contrastive).with_margin(m),
                seeds: args.extra_seeds,
            });
        }
    }
    for variant in &v {
        variant.config.check()?;
    }
    Ok(v)
}

/// The evaluations of one run: on the tables' split and on the other one.
struct RunEvals {
    main: Value,
    other: Value,
}

/// Trains (or resumes, or reuses) one run and returns its evaluation on both test splits
/// (`eval.json` for test_unseen, `eval_test_seen.json`). On test_unseen a run that held
/// validation classes out is evaluated with the weights they chose (`model_best.safetensors`);
/// on test_seen with its final weights.
fn train_and_eval(
    dir: &Path,
    config: &HibConfig,
    device: tch::Device,
    settings: &EvalSettings,
    plan: &TrainPlan,
) -> Result<RunEvals> {
    let budgeted = plan.budget_minutes.is_some();
    let (run, resuming) = if dir.join("config.json").is_file() {
        let run = RunDir::open(dir)?;
        let stored = run.read_config()?.hib;
        let mut want = config.clone();
        want.conv_precision = stored.conv_precision;
        if budgeted {
            // A budgeted run plans its own step count.
            want.steps = stored.steps;
        }
        if stored != want {
            bail!("'{}' holds a run with another configuration; remove it or choose another --out", dir.display());
        }
        (run, true)
    } else {
        let mut c = config.clone();
        c.conv_precision = c.conv_precision.resolve(device);
        (new_run(dir, &c, device)?, false)
    };
    let stored = run.read_config()?.hib;
    let state = run.read_state()?;
    let done = plan.finished(state.step, stored.steps, state.seconds);
    if !done {
        run_training_planned(&run, &stored, device, resuming && state.step > 0, plan)?;
    }
    let other_split = match settings.split {
        NDigitSplit::TestSeen => NDigitSplit::TestUnseen,
        _ => NDigitSplit::TestSeen,
    };
    let mut evals = Vec::new();
    for split in [settings.split, other_split] {
        let name = eval_file_name(split);
        if let (true, Ok(text)) = (done, std::fs::read_to_string(run.file(&name))) {
            info!("reusing {}", run.file(&name).display());
            evals.push(serde_json::from_str(&text)?);
            continue;
        }
        let best = run.file(BEST_MODEL_FILE);
        let weights = (split == NDigitSplit::TestUnseen && best.is_file()).then_some(best.as_path());
        let (_, mut json) = evaluate_run(&run, weights, &EvalSettings { split, ..*settings }, device, false)?;
        // The run's own report, whichever weights it scored.
        json["run"] = json!(run.path.display().to_string());
        hedge_data::write_atomic(&run.file(&name), (serde_json::to_string_pretty(&json)? + "\n").as_bytes())?;
        evals.push(json);
    }
    let other = evals.pop().expect("two evaluations");
    let main = evals.pop().expect("two evaluations");
    Ok(RunEvals { main, other })
}

pub fn run(args: ReproduceArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let device = parse_device(&args.device)?;
    if args.seeds == 0 || args.extra_seeds == 0 {
        bail!("--seeds and --extra-seeds must be at least 1");
    }
    if let Some(m) = args.budget_minutes {
        if !(m.is_finite() && m > 0.0) {
            bail!("--budget-minutes {m}: give a positive number of minutes");
        }
    }
    let variants = variants(&args)?;
    std::fs::create_dir_all(&args.out)?;
    let split: NDigitSplit = args.split.into();
    let settings = EvalSettings { split, repeats: args.repeats, ..Default::default() };
    let plan = TrainPlan {
        budget_minutes: args.budget_minutes,
        watch_every: args.watch_every,
        // The tables' split beside the validation classes: a third set would add ~1/3 to each
        // watch, and the other split is evaluated at the end anyway.
        watch_splits: if args.watch_every > 0 { vec![split] } else { vec![] },
        keep_every: 1000,
        finish_planned_steps: args.finish_planned_steps,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let mut results: Vec<(Variant, Vec<Value>)> = Vec::new();
    let mut other: Vec<(Variant, Vec<Value>)> = Vec::new();
    for v in variants {
        let (mut evals, mut others) = (Vec::new(), Vec::new());
        for seed in 0..v.seeds {
            let dir = args.out.join("runs").join(format!("{}-seed{seed}", v.key));
            info!("{}: seed {seed} in {}", v.label, dir.display());
            let e = train_and_eval(&dir, &v.config.clone().with_seed(seed), device, &settings, &plan)?;
            evals.push(e.main);
            others.push(e.other);
        }
        other.push((
            Variant { key: v.key.clone(), label: v.label.clone(), config: v.config.clone(), seeds: v.seeds },
            others,
        ));
        results.push((v, evals));
    }
    let mut summary = summarise(&args, &results, started.elapsed().as_secs_f64());
    summary["other_split"] = json!({
        "split": if split == NDigitSplit::TestSeen { "test_unseen" } else { "test_seen" },
        "models": summarise(&args, &other, 0.0)["models"],
    });
    write(&args.out.join("summary.json"), &(serde_json::to_string_pretty(&summary)? + "\n"))?;
    write(&args.out.join("table1.md"), &table1(&summary))?;
    write(&args.out.join("table2.md"), &table2(&summary))?;
    if args.beta_sweep {
        write(&args.out.join("table5.md"), &table5(&summary))?;
    }
    if args.appendix_g {
        let split_name = split.name();
        write(&args.out.join("table6.md"), &table67(&args, split_name, &results, false))?;
        write(&args.out.join("table7.md"), &table67(&args, split_name, &results, true))?;
    }
    if args.appendix_b {
        write(&args.out.join("appendix_b.md"), &appendix_b(&summary))?;
    }
    draw_figures(&args, split, &results, device)?;
    if args.curves {
        draw_curves(&args, &results, device)?;
    }
    write(&args.out.join("README.md"), &readme(&args, &summary))?;
    println!("{}", table1(&summary));
    println!("{}", table2(&summary));
    println!("results in {}", args.out.display());
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    hedge_data::write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// Mean over seeds of `eval[key][variant]`, `None` where undefined.
fn mean_of(evals: &[Value], key: &str, variant: &str) -> Option<f64> {
    let v: Vec<f64> = evals.iter().filter_map(|e| e[key][variant].as_f64()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Sample standard deviation over seeds (n − 1 in the denominator) of `eval[key][variant]`;
/// `None` with fewer than two seeds.
fn std_of(evals: &[Value], key: &str, variant: &str) -> Option<f64> {
    let v: Vec<f64> = evals.iter().filter_map(|e| e[key][variant].as_f64()).collect();
    if v.len() < 2 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    Some((v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt())
}

/// `{clean, corrupt, clean_std, corrupt_std}` of a metric over seeds.
fn over_seeds(evals: &[Value], key: &str) -> Value {
    json!({
        "clean": mean_of(evals, key, "clean"),
        "corrupt": mean_of(evals, key, "corrupt"),
        "clean_std": std_of(evals, key, "clean"),
        "corrupt_std": std_of(evals, key, "corrupt"),
    })
}

/// Mean over seeds of a top-level number of the evaluations, `None` where none has it.
fn mean_field(evals: &[Value], key: &str) -> Option<f64> {
    let v: Vec<f64> = evals.iter().filter_map(|e| e[key].as_f64()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn summarise(args: &ReproduceArgs, results: &[(Variant, Vec<Value>)], seconds: f64) -> Value {
    let mut models = serde_json::Map::new();
    for (v, evals) in results {
        let metric = |key: &str| over_seeds(evals, key);
        let train_seconds: Vec<f64> = evals
            .iter()
            .filter_map(|e| e["run"].as_str())
            .filter_map(|r| RunDir::open(Path::new(r)).ok()?.read_state().ok())
            .map(|s| s.seconds)
            .collect();
        models.insert(
            v.key.clone(),
            json!({
                "label": v.label,
                "verification_ap": {
                    "clean": mean_of(evals, "verification_ap", "clean"),
                    "corrupt": mean_of(evals, "verification_ap", "corrupt"),
                    "clean_std": std_of(evals, "verification_ap", "clean"),
                    "corrupt_std": std_of(evals, "verification_ap", "corrupt"),
                    "clean_vs_corrupt": mean_of(evals, "verification_ap", "clean_vs_corrupt"),
                },
                "knn_accuracy": metric("knn_accuracy"),
                "knn_plurality": metric("knn_plurality"),
                "tau_ap": metric("tau_ap"),
                "tau_knn": metric("tau_knn"),
                "ece": mean_field(evals, "ece"),
                "aurc": mean_field(evals, "aurc"),
                "aurc_uncertainty": evals.first().map(|e| e["aurc_uncertainty"].clone()),
                "seeds": evals.len(),
                "train_seconds": train_seconds,
                "runs": evals.iter().map(|e| e["run"].clone()).collect::<Vec<_>>(),
            }),
        );
    }
    json!({
        "digits": args.digits,
        "dim": args.dim,
        "split": evals_split(results),
        "std_convention": "sample standard deviation over seeds (n - 1); null for one seed",
        "models": models,
        "paper": paper(args.digits, args.dim),
        "steps": args.steps,
        "budget_minutes": args.budget_minutes,
        "seeds": args.seeds,
        "extra_seeds": args.extra_seeds,
        "repeats": args.repeats,
        "seconds": seconds,
        "command": crate::hib::command_line(),
    })
}

/// The split the evaluations were computed on (from the first one).
fn evals_split(results: &[(Variant, Vec<Value>)]) -> Value {
    results.iter().flat_map(|(_, e)| e.first()).map(|e| e["split"].clone()).next().unwrap_or(Value::Null)
}

/// "0.912 ± 0.004 (0.880)": ours (± sd over seeds when there are several) and the paper's, or "n/a".
fn cell(summary: &Value, model: &str, key: &str, variant: &str) -> String {
    let ours = summary["models"][model][key][variant].as_f64();
    let sd = summary["models"][model][key][format!("{variant}_std")].as_f64();
    let paper = summary["paper"][model][key][variant].as_f64();
    let ours = match (ours, sd) {
        (Some(o), Some(sd)) => format!("{o:.3} ± {sd:.3}"),
        (Some(o), None) => format!("{o:.3}"),
        _ => return "n/a".into(),
    };
    match paper {
        Some(p) => format!("{ours} ({p:.3})"),
        None => ours,
    }
}

/// Ours only (no paper value), for the other split's columns.
fn plain(summary: &Value, model: &str, key: &str, variant: &str) -> String {
    summary["other_split"]["models"][model][key][variant].as_f64().map_or("n/a".into(), |v| format!("{v:.3}"))
}

fn split_name(s: &Value) -> &str {
    s["split"].as_str().unwrap_or("?")
}

fn table1(s: &Value) -> String {
    let other = s["other_split"]["split"].as_str();
    let mut t = format!(
        "Table 1, N = {}, D = {}, {}, ours (paper){}. KNN: K = 5, majority; corrupt = clean probes against the corrupt gallery.\n\n",
        s["digits"],
        s["dim"],
        split_name(s),
        if s["seeds"].as_u64().unwrap_or(1) > 1 { " as mean ± sd over seeds" } else { "" },
    );
    match other {
        Some(o) => {
            let _ = writeln!(
                t,
                "| | point | MoG-1 | MoG-2 | point, {o} | MoG-1, {o} | MoG-2, {o} |\n|---|---|---|---|---|---|---|"
            );
        }
        None => t.push_str("| | point | MoG-1 | MoG-2 |\n|---|---|---|---|\n"),
    }
    let mut row = |name: String, key: &str, variant: &str| {
        let _ = write!(
            t,
            "| {name} | {} | {} | {} |",
            cell(s, "point", key, variant),
            cell(s, "mog1", key, variant),
            cell(s, "mog2", key, variant)
        );
        if other.is_some() {
            let _ = write!(
                t,
                " {} | {} | {} |",
                plain(s, "point", key, variant),
                plain(s, "mog1", key, variant),
                plain(s, "mog2", key, variant)
            );
        }
        t.push('\n');
    };
    for (key, name) in [("verification_ap", "Verification AP"), ("knn_accuracy", "KNN accuracy")] {
        for variant in ["clean", "corrupt"] {
            row(format!("{name}, {variant}"), key, variant);
        }
    }
    if ["point", "mog1", "mog2"].iter().any(|m| s["models"][m]["verification_ap"]["clean_vs_corrupt"].is_number()) {
        row("Verification AP, clean vs corrupt pairs (not in the paper)".into(), "verification_ap", "clean_vs_corrupt");
    }
    t
}

fn table2(s: &Value) -> String {
    let other = s["other_split"]["split"].as_str();
    let mut t = format!(
        "Table 2, N = {}, D = {}, {}: Kendall's tau between uncertainty bin and performance (sign inverted), ours (paper).\n\n",
        s["digits"],
        s["dim"],
        split_name(s)
    );
    match other {
        Some(o) => {
            let _ = writeln!(t, "| | MoG-1 | MoG-2 | MoG-1, {o} | MoG-2, {o} |\n|---|---|---|---|---|");
        }
        None => t.push_str("| | MoG-1 | MoG-2 |\n|---|---|---|\n"),
    }
    for (key, name) in [("tau_ap", "AP correlation"), ("tau_knn", "KNN correlation")] {
        for variant in ["clean", "corrupt"] {
            let _ = write!(
                t,
                "| {name}, {variant} | {} | {} |",
                cell(s, "mog1", key, variant),
                cell(s, "mog2", key, variant)
            );
            if other.is_some() {
                let _ = write!(t, " {} | {} |", plain(s, "mog1", key, variant), plain(s, "mog2", key, variant));
            }
            t.push('\n');
        }
    }
    t
}

/// Table 5 (Appendix E of arXiv v1): MoG-1 with β = 0 and β = 1e-4, ours beside the paper's
/// own Table 5 columns (its β = 1e-4 column is a different run from its Table 1 MoG-1).
fn table5(s: &Value) -> String {
    let has_paper = s["paper"]["mog1-beta0"].is_object();
    let mut t = format!(
        "Table 5 (Appendix E), N = {}, D = {}, {}: MoG-1 with beta = 0 and beta = 1e-4.\n\n",
        s["digits"],
        s["dim"],
        split_name(s)
    );
    if has_paper {
        t.push_str(
            "| | ours, beta = 0 | ours, beta = 1e-4 | paper, beta = 0 | paper, beta = 1e-4 |\n|---|---|---|---|---|\n",
        );
    } else {
        t.push_str("| | ours, beta = 0 | ours, beta = 1e-4 |\n|---|---|---|\n");
    }
    let ours = |model: &str, key: &str, variant: &str| {
        let v = s["models"][model][key][variant].as_f64();
        let sd = s["models"][model][key][format!("{variant}_std")].as_f64();
        match (v, sd) {
            (Some(v), Some(sd)) => format!("{v:.3} ± {sd:.3}"),
            (Some(v), None) => format!("{v:.3}"),
            _ => "n/a".into(),
        }
    };
    let paper = |model: &str, key: &str, variant: &str| {
        s["paper"][model][key][variant].as_f64().map_or("n/a".into(), |v| format!("{v:.3}"))
    };
    for (key, name) in [
        ("verification_ap", "Verification AP"),
        ("knn_accuracy", "KNN accuracy"),
        ("tau_ap", "AP correlation"),
        ("tau_knn", "KNN correlation"),
    ] {
        for variant in ["clean", "corrupt"] {
            let _ = write!(
                t,
                "| {name}, {variant} | {} | {} |",
                ours("mog1-beta0", key, variant),
                ours("mog1", key, variant)
            );
            if has_paper {
                let _ = write!(t, " {} | {} |", paper("mog1-beta0", key, variant), paper("mog1-beta1e4", key, variant));
            }
            t.push('\n');
        }
    }
    let seeds = |model: &str| s["models"][model]["seeds"].as_u64().unwrap_or(0);
    let _ = writeln!(
        t,
        "\nSeeds: beta = 0 {}, beta = 1e-4 {} (the Table 1 MoG-1 runs; ± is the sd over seeds).",
        seeds("mog1-beta0"),
        seeds("mog1")
    );
    if !has_paper {
        t.push_str("\nThe paper reports Table 5 for (N, D) = (2, 2) and (3, 3) only.\n");
    }
    t
}

/// Table 6 (plurality KNN by gallery/probe) or Table 7 (τ by gallery/probe), point and MoG-1,
/// ours (paper). The paper's Table 6 "point" is its contrastive-loss point embedding.
fn table67(args: &ReproduceArgs, split: &str, results: &[(Variant, Vec<Value>)], tau: bool) -> String {
    let paper_rows = paper::tables6_7(args.digits, args.dim);
    let mut t = if tau {
        format!(
            "Table 7 (Appendix G), N = {}, D = {}, {split}: KNN correlation with uncertainty by gallery/probe, MoG-1, ours (paper).\n\n| gallery | probe | MoG-1 |\n|---|---|---|\n",
            args.digits, args.dim
        )
    } else {
        format!(
            "Table 6 (Appendix G), N = {}, D = {}, {split}: plurality KNN accuracy by gallery/probe, ours (paper).\n\n| gallery | probe | point | MoG-1 |\n|---|---|---|---|\n",
            args.digits, args.dim
        )
    };
    let rows = |key: &str| -> Vec<(String, String, f64)> {
        let Some((_, evals)) = results.iter().find(|(v, _)| v.key == key) else { return Vec::new() };
        let Some(first) = evals.first() else { return Vec::new() };
        first["gallery_probe"]
            .as_array()
            .map(|a| {
                a.iter()
                    .enumerate()
                    .map(|(i, g)| {
                        let field = if tau { "tau_knn" } else { "plurality" };
                        let vals: Vec<f64> =
                            evals.iter().filter_map(|e| e["gallery_probe"][i][field].as_f64()).collect();
                        let mean =
                            if vals.is_empty() { f64::NAN } else { vals.iter().sum::<f64>() / vals.len() as f64 };
                        (
                            g["gallery"].as_str().unwrap_or("").to_string(),
                            g["probe"].as_str().unwrap_or("").to_string(),
                            mean,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let paper_of =
        |g: &str, p: &str| paper_rows.and_then(|rows| rows.into_iter().find(|r| r.gallery == g && r.probe == p));
    let with_paper = |ours: String, paper: Option<f64>| match paper {
        Some(p) => format!("{ours} ({p:.3})"),
        None => ours,
    };
    let (point, mog) = (rows("point"), rows("mog1"));
    for (i, (g, p, m)) in mog.iter().enumerate() {
        let pr = paper_of(g, p);
        if tau {
            let _ = writeln!(t, "| {g} | {p} | {} |", with_paper(format!("{m:.3}"), pr.map(|r| r.mog1_tau_knn)));
        } else {
            let pt = point.get(i).map_or("n/a".into(), |r| format!("{:.3}", r.2));
            let _ = writeln!(
                t,
                "| {g} | {p} | {} | {} |",
                with_paper(pt, pr.map(|r| r.point_plurality)),
                with_paper(format!("{m:.3}"), pr.map(|r| r.mog1_plurality))
            );
        }
    }
    t
}

fn appendix_b(s: &Value) -> String {
    let mut t = String::from("Appendix B: point embeddings, soft contrastive vs contrastive loss at several margins.\n\n| loss | AP clean | AP corrupt | KNN clean | KNN corrupt |\n|---|---|---|---|---|\n");
    let mut keys = vec![("point".to_string(), "soft contrastive".to_string())];
    keys.extend(MARGINS.iter().map(|m| (format!("point-contrastive-m{m}"), format!("contrastive, M = {m}"))));
    for (k, name) in keys {
        let _ = writeln!(
            t,
            "| {name} | {} | {} | {} | {} |",
            cell(s, &k, "verification_ap", "clean"),
            cell(s, &k, "verification_ap", "corrupt"),
            cell(s, &k, "knn_accuracy", "clean"),
            cell(s, &k, "knn_accuracy", "corrupt")
        );
    }
    t
}

fn draw_figures(
    args: &ReproduceArgs,
    split: NDigitSplit,
    results: &[(Variant, Vec<Value>)],
    device: tch::Device,
) -> Result<()> {
    let test = load_split(args.digits, split)?;
    for (v, evals) in results.iter().filter(|(v, _)| ["point", "mog1", "mog2"].contains(&v.key.as_str())) {
        let Some(run_path) = evals.first().and_then(|e| e["run"].as_str()) else { continue };
        let run = RunDir::open(Path::new(run_path))?;
        let config = run.read_config()?.hib;
        let (_vs, net) = load_model(&run, &config, device)?;
        let (clean, corrupt) = embed_twins(&net, &test, device)?;
        let title = format!("{} embeddings, N = {}, D = {}", v.label, args.digits, args.dim);
        if args.dim >= 2 {
            figures::embedding_ellipses(
                &args.out.join(format!("embeddings_{}.png", v.key)),
                &clean,
                &corrupt,
                400,
                &title,
            )?;
        } else {
            // Appendix D orders the centroids of all classes: the seen and unseen test classes.
            let seen = load_split(args.digits, NDigitSplit::TestSeen)?;
            let seen = embed_dataset(
                &net,
                &seen,
                &Corruption::Clean,
                device,
                EmbedOptions { samples: 1, ..Default::default() },
            )?;
            let all = EmbeddedSet::concat(&[&seen, &clean]);
            let (order, score, run_len) =
                figures::centroid_line(&args.out.join(format!("number_line_{}.png", v.key)), &all, &title)?;
            write(
                &args.out.join(format!("number_line_{}.json", v.key)),
                &(serde_json::to_string_pretty(
                    &json!({"order": order, "adjacent_sharing_a_digit": score, "out_of": order.len().saturating_sub(1), "mean_run_length": run_len}),
                )? + "\n"),
            )?;
        }
        if v.key != "point" {
            let e = &evals[0];
            let series = |variant: &str, key: &str| -> Vec<f64> {
                e["bins"][variant][key]
                    .as_array()
                    .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect())
                    .unwrap_or_default()
            };
            let (ap_c, ap_k, knn_c, knn_k) =
                (series("clean", "ap"), series("corrupt", "ap"), series("clean", "knn"), series("corrupt", "knn"));
            figures::uncertainty_bins(
                &args.out.join(format!("uncertainty_bins_{}.png", v.key)),
                &[
                    ("AP, clean", &ap_c),
                    ("AP, corrupt", &ap_k),
                    ("KNN, clean", &knn_c),
                    ("KNN, corrupt gallery", &knn_k),
                ],
                &format!("{title}: performance vs uncertainty (Fig. 5)"),
            )?;
        }
    }
    Ok(())
}

fn readme(args: &ReproduceArgs, s: &Value) -> String {
    // Training time of each model (mean over seeds), from its run's state: a re-invocation that
    // reuses finished runs still reports what the training cost.
    let train_times: Vec<String> = s["models"]
        .as_object()
        .map(|models| {
            models
                .values()
                .filter_map(|m| {
                    let secs: Vec<f64> = m["train_seconds"].as_array()?.iter().filter_map(Value::as_f64).collect();
                    let mean = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
                    Some(format!("{} {:.0} s", m["label"].as_str()?, mean))
                })
                .collect()
        })
        .unwrap_or_default();
    let length = match (args.budget_minutes, args.steps) {
        (Some(m), _) if args.finish_planned_steps => format!(
            "a budget of {m} minutes of training per model: the steps were planned from the speed of the first \
             steps and all of them trained, however long that took"
        ),
        (Some(m), _) => {
            format!("a budget of {m} minutes of training per model (steps planned from the measured speed)")
        }
        (None, Some(steps)) => format!("{steps} training steps per model"),
        (None, None) => "the recipe's training steps".to_string(),
    };
    format!(
        "# HIB reproduction, N = {}, D = {}\n\nCommand:\n\n```sh\n{}\n```\n\n{length}; recipe (fields that differ from the paper's \
         defaults: Adam, lr 1e-3 constant, 128 independent pairs, beta 1e-4): {}; {} seed(s) per Table 1 model ({} for the extra models); tables on `{}`, the other split beside \
         them; {} repeats of the sampling-dependent metrics. Training time per model: {}. \
         Wall-clock of the last invocation: {:.0} s (finished runs are reused, not retrained).\n\n{}\n{}\n\
         Files: `summary.json` (every number, with the paper's), `table*.md`, figures `*.png`, runs in `runs/` \
         (config.json, plan.json, metrics.jsonl, monitor.jsonl when watched, model.safetensors, eval.json for test_unseen, \
         eval_test_seen.json; checkpoints every 1,000 steps in `runs/*/checkpoints/`).\n",
        args.digits,
        args.dim,
        s["command"].as_str().unwrap_or(""),
        recipe_changes(s),
        args.seeds,
        args.extra_seeds,
        split_name(s),
        args.repeats,
        train_times.join(", "),
        s["seconds"].as_f64().unwrap_or(0.0),
        table1(s),
        table2(s),
    )
}

/// The MoG-1 seed-0 run's hyper-parameters that differ from `HibConfig::default()` (besides
/// digits, dim, model, steps and seed), as `name = value` pairs.
fn recipe_changes(s: &Value) -> String {
    let Some(run) = s["models"]["mog1"]["runs"][0].as_str() else { return "n/a".into() };
    let Ok(config) = RunDir::open(Path::new(run)).and_then(|r| r.read_config()) else { return "n/a".into() };
    let ours = serde_json::to_value(&config.hib).unwrap_or(Value::Null);
    let defaults = serde_json::to_value(HibConfig::default()).unwrap_or(Value::Null);
    let skip = ["digits", "dim", "model", "components", "steps", "seed", "conv_precision"];
    let changes: Vec<String> = ours
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| !skip.contains(&k.as_str()) && defaults.get(k.as_str()) != Some(v))
        .map(|(k, v)| format!("`{k} = {v}`"))
        .collect();
    if changes.is_empty() {
        "none".into()
    } else {
        changes.join(", ")
    }
}

/// Per model and metric, the training time (seconds on this machine) of the first kept
/// checkpoint at or above the paper's value, or the best value reached if none is.
fn time_to_quality(
    args: &ReproduceArgs,
    curves: &serde_json::Map<String, Value>,
    results: &[(Variant, Vec<Value>)],
) -> String {
    let paper = paper(args.digits, args.dim).unwrap_or(Value::Null);
    let mut t = format!(
        "Time to quality, N = {}, D = {}: training wall-clock (2 threads, this machine) until a kept checkpoint \
         reaches the paper's value on test_unseen (one Monte-Carlo repeat per checkpoint).\n\n\
         | model | metric | paper | reached at | best so far |\n|---|---|---|---|---|\n",
        args.digits, args.dim
    );
    for (v, _) in results {
        let Some(rows) = curves.get(&v.key).and_then(Value::as_array) else { continue };
        for (key, variant, name) in [
            ("verification_ap", "clean", "AP clean"),
            ("verification_ap", "corrupt", "AP corrupt"),
            ("knn_accuracy", "clean", "KNN clean"),
            ("knn_accuracy", "corrupt", "KNN corrupt"),
        ] {
            let Some(target) = paper[&v.key][key][variant].as_f64() else { continue };
            let points: Vec<(u64, f64, f64)> = rows
                .iter()
                .filter_map(|r| Some((r["step"].as_u64()?, r["train_seconds"].as_f64()?, r[key][variant].as_f64()?)))
                .collect();
            let reached = points.iter().find(|p| p.2 >= target);
            let best = points.iter().max_by(|a, b| a.2.total_cmp(&b.2));
            let _ = writeln!(
                t,
                "| {} | {name} | {target:.3} | {} | {} |",
                v.label,
                reached.map_or("not reached".to_string(), |p| format!("{} s (step {})", p.1.round(), p.0)),
                best.map_or("n/a".to_string(), |p| format!("{:.3} at step {} ({} s)", p.2, p.0, p.1.round())),
            );
        }
    }
    t
}

/// AP and KNN against training steps for the seed-0 run of point, MoG-1 and MoG-2:
/// `curves.json` and `quality_vs_steps.png`.
fn draw_curves(args: &ReproduceArgs, results: &[(Variant, Vec<Value>)], device: tch::Device) -> Result<()> {
    let mut all = serde_json::Map::new();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (v, evals) in results.iter().filter(|(v, _)| ["point", "mog1", "mog2"].contains(&v.key.as_str())) {
        let Some(run_path) = evals.first().and_then(|e| e["run"].as_str()) else { continue };
        let rows = crate::hib::curve(Path::new(run_path), 1, NDigitSplit::TestUnseen, device)?;
        for (key, variant, what) in [
            ("verification_ap", "clean", "AP clean"),
            ("verification_ap", "corrupt", "AP corrupt"),
            ("knn_accuracy", "corrupt", "KNN corrupt"),
        ] {
            series.push((
                format!("{} {what}", v.label),
                rows.iter().filter_map(|r| Some((r["step"].as_f64()?, r[key][variant].as_f64()?))).collect(),
            ));
        }
        all.insert(v.key.clone(), Value::Array(rows));
    }
    write(&args.out.join("curves.json"), &(serde_json::to_string_pretty(&Value::Object(all.clone()))? + "\n"))?;
    write(&args.out.join("time_to_quality.md"), &time_to_quality(args, &all, results))?;
    let named: Vec<(&str, Vec<(f64, f64)>)> = series.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
    figures::line_chart(
        &args.out.join("quality_vs_steps.png"),
        &named,
        "training steps",
        "test_unseen",
        &format!("N = {}, D = {}: quality vs training steps", args.digits, args.dim),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary with the given models, every metric of model k equal to 0.1·(k + 1).
    fn summary(models: &[&str]) -> Value {
        let mut m = serde_json::Map::new();
        for (k, name) in models.iter().enumerate() {
            let x = 0.1 * (k + 1) as f64;
            let twin = json!({"clean": x, "corrupt": x});
            m.insert(
                name.to_string(),
                json!({"verification_ap": twin, "knn_accuracy": twin, "tau_ap": twin, "tau_knn": twin}),
            );
        }
        json!({"digits": 2, "dim": 2, "models": m, "paper": paper(2, 2)})
    }

    #[test]
    fn appendix_b_lists_soft_then_every_margin() {
        let t = appendix_b(&summary(&[
            "point",
            "point-contrastive-m0.5",
            "point-contrastive-m1",
            "point-contrastive-m2",
            "point-contrastive-m4",
        ]));
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| loss")).collect();
        assert_eq!(rows.len(), 5, "{t}");
        assert!(rows[0].starts_with("| soft contrastive | 0.100 (0.987) |"), "{}", rows[0]);
        assert!(rows[4].starts_with("| contrastive, M = 4 | 0.500 |"), "{}", rows[4]);
    }

    #[test]
    fn table5_puts_ours_beside_the_papers_table_5_not_table_1() {
        let t = table5(&summary(&["mog1", "mog1-beta0"]));
        // Paper Table 5, N = 2, D = 2: AP clean 0.986 (beta = 0) and 0.988 (beta = 1e-4; Table 1 has 0.989).
        assert!(t.contains("| Verification AP, clean | 0.200 | 0.100 | 0.986 | 0.988 |"), "{t}");
        assert!(t.contains("| KNN correlation, corrupt | 0.200 | 0.100 | 0.636 | 0.609 |"), "{t}");
        // The beta = 0 model is an extra (one seed by default), the beta = 1e-4 one a Table 1 model.
        let mut s = summary(&["mog1", "mog1-beta0"]);
        s["models"]["mog1"]["seeds"] = json!(3);
        s["models"]["mog1-beta0"]["seeds"] = json!(1);
        assert!(table5(&s).contains("Seeds: beta = 0 1, beta = 1e-4 3"), "{}", table5(&s));
        // (2, 3) has no Table 5 in the paper: ours only, and a note.
        let mut s = summary(&["mog1", "mog1-beta0"]);
        s["paper"] = paper(2, 3).unwrap();
        let t = table5(&s);
        assert!(t.contains("| Verification AP, clean | 0.200 | 0.100 |\n"), "{t}");
        assert!(t.contains("(3, 3) only"), "{t}");
    }

    #[test]
    fn table1_cells_carry_the_sd_over_seeds_and_the_other_split() {
        let mut s = summary(&["point", "mog1", "mog2"]);
        s["split"] = json!("test_seen");
        s["models"]["mog1"]["verification_ap"]["clean_std"] = json!(0.004);
        s["other_split"] = json!({"split": "test_unseen", "models": {"point": {"verification_ap": {"clean": 0.9}}}});
        let t = table1(&s);
        assert!(t.contains("test_seen"), "{t}");
        assert!(t.contains("| point, test_unseen |"), "{t}");
        assert!(t.contains("| Verification AP, clean | 0.100 (0.987) | 0.200 ± 0.004 (0.989) | 0.300 (0.990) | 0.900 | n/a | n/a |"), "{t}");
    }

    #[test]
    fn sd_over_seeds_uses_n_minus_one() {
        let evals = vec![json!({"m": {"clean": 1.0}}), json!({"m": {"clean": 3.0}})];
        assert_eq!(mean_of(&evals, "m", "clean"), Some(2.0));
        assert_eq!(std_of(&evals, "m", "clean"), Some(2f64.sqrt()));
        assert_eq!(std_of(&evals[..1], "m", "clean"), None);
    }

    #[test]
    fn paper_values_exist_for_the_four_settings_only() {
        assert_eq!(paper(3, 3).unwrap()["mog2"]["knn_accuracy"]["corrupt"], 0.598);
        assert_eq!(paper(2, 3).unwrap()["mog1"]["tau_ap"]["corrupt"], 0.86);
        assert!(paper(2, 1).is_none());
    }
}
