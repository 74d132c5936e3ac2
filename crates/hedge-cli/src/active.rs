//! `hedge active …`: Bayesian batch active learning experiments.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use faer::Mat;
use hedge_active::classification_loop::{
    images_tensor, labels_tensor, pixel_moments, ClassLoopConfig, ClassMethod, ClassRoundMetrics, ImageSet,
};
use hedge_active::regression_loop::{LoopConfig, Method, RoundMetrics};
use hedge_data::UciDataset;
use serde_json::json;

#[derive(Subcommand)]
pub enum ActiveCommand {
    /// Pool-based active learning with NeuralLinear on a UCI regression set: per-round metrics,
    /// summary.json, table.md and rmse_vs_labels.png in the output directory.
    Run(RunArgs),
    /// Rebuilds summary.json, table.md and rmse_vs_labels.png from a run directory's rounds.jsonl.
    Report(ReportArgs),
    /// Pool-based active learning on Fashion-MNIST (or MNIST) with a small CNN and a Laplace
    /// (Gaussian) last layer: Random, MaxEnt, BALD and ACS-FW with random projections. Writes
    /// rounds.jsonl, summary.json, table.md and accuracy_vs_labels.png.
    Classify(ClassifyArgs),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ClassMethodArg {
    Random,
    Maxent,
    Bald,
    AcsFw,
}

impl From<ClassMethodArg> for ClassMethod {
    fn from(m: ClassMethodArg) -> Self {
        match m {
            ClassMethodArg::Random => ClassMethod::Random,
            ClassMethodArg::Maxent => ClassMethod::Maxent,
            ClassMethodArg::Bald => ClassMethod::Bald,
            ClassMethodArg::AcsFw => ClassMethod::AcsFw,
        }
    }
}

#[derive(Args)]
pub struct ClassifyArgs {
    /// Folder under $HEDGE_DATA_DIR with the four IDX files: fashion-mnist or mnist.
    #[arg(long, default_value = "fashion-mnist")]
    dataset: String,
    #[arg(long, value_enum, value_delimiter = ',', default_value = "random,maxent,bald,acs-fw")]
    method: Vec<ClassMethodArg>,
    /// Seeds 0..S (each its own pool, test subset, initial labels and networks).
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Pool size, drawn per seed from the training split.
    #[arg(long, default_value_t = 5000)]
    pool: usize,
    /// Test images, drawn per seed from the test split.
    #[arg(long, default_value_t = 2000)]
    test: usize,
    #[arg(long, default_value_t = 20)]
    init: usize,
    #[arg(long, default_value_t = 20)]
    batch: usize,
    #[arg(long, default_value_t = 200)]
    budget: usize,
    /// ACS-FW: force `batch` distinct images per round.
    #[arg(long)]
    distinct: bool,
    /// Adam steps per CNN fit (64 images per step).
    #[arg(long, default_value_t = 300)]
    steps: usize,
    /// Posterior draws of the last layer for the predictive, MaxEnt and BALD.
    #[arg(long, default_value_t = 100)]
    samples: i64,
    /// Random projections J for ACS-FW.
    #[arg(long, default_value_t = 10)]
    projections: i64,
    /// Intra-op threads for libtorch (0: its default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long)]
    out: PathBuf,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// A directory written by `hedge active run`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum MethodArg {
    Random,
    Maxent,
    AcsFw,
}

impl From<MethodArg> for Method {
    fn from(m: MethodArg) -> Self {
        match m {
            MethodArg::Random => Method::Random,
            MethodArg::Maxent => Method::Maxent,
            MethodArg::AcsFw => Method::AcsFw,
        }
    }
}

#[derive(Args)]
pub struct RunArgs {
    /// `uci/<name>` under $HEDGE_DATA_DIR.
    #[arg(long)]
    dataset: String,
    /// Acquisition methods to compare.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "random,maxent,acs-fw")]
    method: Vec<MethodArg>,
    /// Seeds 0..S (each its own pool/test split and initial labels).
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    #[arg(long, default_value_t = 20)]
    init: usize,
    #[arg(long, default_value_t = 10)]
    batch: usize,
    #[arg(long, default_value_t = 100)]
    budget: usize,
    /// ACS-FW: force `batch` distinct points per round (the paper allows re-picks).
    #[arg(long)]
    distinct: bool,
    /// Adam steps per network fit.
    #[arg(long, default_value_t = 8000)]
    steps: usize,
    /// Adam learning rate of the network.
    #[arg(long, default_value_t = 1e-2)]
    lr: f64,
    /// L2 penalty on the network's weights.
    #[arg(long, default_value_t = 1e-4)]
    weight_decay: f64,
    #[arg(long)]
    out: PathBuf,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

pub fn run(command: ActiveCommand) -> Result<()> {
    match command {
        ActiveCommand::Run(args) => run_experiment(args),
        ActiveCommand::Report(args) => report(args),
        ActiveCommand::Classify(args) => classify(args),
    }
}

fn run_experiment(args: RunArgs) -> Result<()> {
    // The networks see at most a few hundred rows: one thread beats libtorch's pool overhead.
    tch::set_num_threads(1);
    let data_dir = hedge_data::data_dir()?;
    let name = args
        .dataset
        .strip_prefix("uci/")
        .ok_or_else(|| anyhow!("--dataset '{}': expected uci/<name>, e.g. uci/yacht", args.dataset))?;
    let data = UciDataset::load(&data_dir, name)?;
    let x = Mat::from_fn(data.rows(), data.features, |i, j| data.row(i)[j]);
    let mut config = LoopConfig {
        init: args.init,
        batch: args.batch,
        budget: args.budget,
        distinct: args.distinct,
        ..Default::default()
    };
    config.model.steps = args.steps;
    config.model.learning_rate = args.lr;
    config.model.weight_decay = args.weight_decay;
    // Refuse impossible settings before creating anything.
    config.check(data.rows() - data.rows() / 5)?;
    hedge_data::prepare_output_dir(&args.out, args.overwrite)?;
    let total = args.seeds * args.method.len() as u64;
    let bar = crate::runlog::runs_bar(total, "runs");
    let mut all: Vec<RoundMetrics> = Vec::new();
    let mut log = crate::runlog::JsonLines::new(&args.out.join("rounds.jsonl"));
    for seed in 0..args.seeds {
        for &m in &args.method {
            let method: Method = m.into();
            bar.set_message(format!("{} seed {seed}", method.name()));
            let rounds = config.run(&x, &data.targets, method, seed)?;
            log.append(&rounds)?;
            all.extend(rounds);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let config_json = json!({ "command": crate::command_line(), "dataset": args.dataset, "seeds": args.seeds, "loop": config,
        "protocol": "per seed: 80/20 pool/test split, inputs standardised on the pool, targets on the initial labels, RMSE on the original scale" });
    hedge_data::write_atomic(&args.out.join("config.json"), serde_json::to_string_pretty(&config_json)?.as_bytes())?;
    let spec = ReportSpec {
        out: args.out.clone(),
        dataset: args.dataset.clone(),
        seeds: args.seeds,
        methods: args.method.iter().map(|&m| m.into()).collect(),
        init: args.init,
        batch: args.batch,
        budget: args.budget,
        command: crate::command_line(),
    };
    write_report(&spec, &all)
}

/// What a report needs besides the rounds.
struct ReportSpec {
    out: PathBuf,
    dataset: String,
    seeds: u64,
    methods: Vec<Method>,
    init: usize,
    batch: usize,
    budget: usize,
    command: String,
}

/// summary.json, table.md and rmse_vs_labels.png from the rounds of every run.
fn write_report(spec: &ReportSpec, all: &[RoundMetrics]) -> Result<()> {
    let mut methods = serde_json::Map::new();
    let mut md = format!(
        "{}: NeuralLinear (2 × 30 ReLU + NIG last layer), {} seeds, {} initial labels, batches of {}, budget {}.\n\n\
         | method | final RMSE (mean ± se) | final test log-likelihood | acquisition rounds | selection s / round |\n|---|---|---|---|---|\n",
        spec.dataset, spec.seeds, spec.init, spec.batch, spec.budget
    );
    let mut curves: Vec<crate::bayes_plots::MeanCurve> = Vec::new();
    for &m in &spec.methods {
        let method: Method = m;
        let runs: Vec<Vec<&RoundMetrics>> =
            (0..spec.seeds).map(|s| all.iter().filter(|r| r.method == method && r.seed == s).collect()).collect();
        let finals: Vec<f64> = runs.iter().filter_map(|r| r.last().map(|x| x.test_rmse)).collect();
        let final_ll: Vec<f64> = runs.iter().filter_map(|r| r.last().map(|x| x.test_log_likelihood)).collect();
        let rounds: Vec<f64> = runs.iter().map(|r| r.len().saturating_sub(1) as f64).collect();
        let selections: Vec<f64> =
            runs.iter().flatten().filter(|r| r.batch_size > 0).map(|r| r.selection_seconds).collect();
        let (rm, rse) = mean_se(&finals);
        let (llm, llse) = mean_se(&final_ll);
        let (roundm, _) = mean_se(&rounds);
        let (selm, _) = mean_se(&selections);
        methods.insert(
            method.name().into(),
            json!({ "final_rmse": {"mean": rm, "se": rse}, "final_log_likelihood": {"mean": llm, "se": llse},
                    "rounds": {"mean": roundm}, "selection_seconds": {"mean": selm} }),
        );
        md.push_str(&format!(
            "| {} | {rm:.3} ± {rse:.3} | {llm:.3} ± {llse:.3} | {roundm:.1} | {selm:.4} |\n",
            method.name()
        ));
        let per_seed: Vec<Vec<(usize, f64)>> =
            runs.iter().map(|run| run.iter().map(|r| (r.labels, r.test_rmse)).collect()).collect();
        curves.push((method.name().to_string(), grid_curve(&per_seed, spec.init, spec.batch, spec.budget)));
    }
    md.push_str(&paired_differences(spec.seeds, &spec.methods, all));
    let summary = json!({ "dataset": spec.dataset.strip_prefix("uci/").unwrap_or(&spec.dataset), "seeds": spec.seeds, "methods": methods });
    hedge_data::write_atomic(&spec.out.join("summary.json"), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    md.push_str(&format!("\nCommand: `{}`\n", spec.command));
    hedge_data::write_atomic(&spec.out.join("table.md"), md.as_bytes())?;
    crate::bayes_plots::curves_with_error(
        &spec.out.join("rmse_vs_labels.png"),
        &curves,
        "labels",
        "test RMSE (mean ± se over seeds)",
        &format!("{}: RMSE vs labels", spec.dataset),
    )?;
    print!("{md}");
    Ok(())
}

fn report(args: ReportArgs) -> Result<()> {
    let read = |f: &str| -> Result<String> {
        let path = args.out.join(f);
        std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {} (is this an `hedge active run` directory?)", path.display()))
    };
    let config: serde_json::Value = serde_json::from_str(&read("config.json")?)?;
    let all: Vec<RoundMetrics> = read("rounds.jsonl")?
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("rounds.jsonl line {}", i + 1)))
        .collect::<Result<_>>()?;
    let methods = [Method::Random, Method::Maxent, Method::AcsFw]
        .into_iter()
        .filter(|m| all.iter().any(|r| r.method == *m))
        .collect();
    let field = |k: &str| {
        config["loop"][k].as_u64().map(|v| v as usize).ok_or_else(|| anyhow!("config.json: missing loop.{k}"))
    };
    let spec = ReportSpec {
        out: args.out.clone(),
        dataset: config["dataset"].as_str().unwrap_or_default().to_string(),
        seeds: config["seeds"].as_u64().ok_or_else(|| anyhow!("config.json: missing seeds"))?,
        methods,
        init: field("init")?,
        batch: field("batch")?,
        budget: field("budget")?,
        command: config["command"].as_str().unwrap_or_default().to_string(),
    };
    write_report(&spec, &all)
}

/// Paired comparison of final RMSEs: every seed shares its split and initial labels across
/// methods, so per-seed differences cancel the split-to-split variance that dominates the
/// unpaired standard errors.
fn paired_differences(seeds: u64, methods: &[Method], all: &[RoundMetrics]) -> String {
    let final_of = |m: Method, s: u64| all.iter().rfind(|r| r.method == m && r.seed == s).map(|r| r.test_rmse);
    let mut md = String::from(
        "\nPaired differences of final RMSE (same split and initial labels per seed):\n\n\
         | A − B | mean ± se | seeds where A is better |\n|---|---|---|\n",
    );
    for (i, &a) in methods.iter().enumerate() {
        for &b in &methods[i + 1..] {
            let diffs: Vec<f64> = (0..seeds).filter_map(|s| Some(final_of(a, s)? - final_of(b, s)?)).collect();
            let (m, se) = mean_se(&diffs);
            let wins = diffs.iter().filter(|d| **d < 0.0).count();
            md.push_str(&format!("| {} − {} | {m:+.3} ± {se:.3} | {wins}/{} |\n", a.name(), b.name(), diffs.len()));
        }
    }
    md
}

/// Mean ± se over seeds on a common label grid (init, init + batch, …, budget), each seed
/// contributing its latest round at or below each grid point, so that runs whose label counts
/// differ (ACS-FW's smaller batches) average point by point.
fn grid_curve(per_seed: &[Vec<(usize, f64)>], init: usize, batch: usize, budget: usize) -> Vec<(f64, f64, f64)> {
    let grid: std::collections::BTreeSet<usize> =
        (init..=budget).step_by(batch.max(1)).chain(std::iter::once(budget)).collect();
    let mut by_labels: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for run in per_seed {
        for &g in &grid {
            if let Some(&(_, v)) = run.iter().rev().find(|(labels, _)| *labels <= g) {
                by_labels.entry(g).or_default().push(v);
            }
        }
    }
    by_labels
        .into_iter()
        .map(|(l, v)| {
            let (m, se) = mean_se(&v);
            (l as f64, m, se)
        })
        .collect()
}

fn classify(args: ClassifyArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let data_dir = hedge_data::data_dir()?;
    let data = hedge_data::Mnist::load(&data_dir.join(&args.dataset)).with_context(|| {
        format!("--dataset {}: expected the four IDX files under $HEDGE_DATA_DIR/{0}", args.dataset)
    })?;
    if args.pool > data.train.len() || args.test > data.test.len() || args.pool == 0 || args.test == 0 {
        return Err(anyhow!(
            "--pool {} / --test {}: must lie in 1..={} / 1..={} (the split sizes)",
            args.pool,
            args.test,
            data.train.len(),
            data.test.len()
        ));
    }
    let mut config = ClassLoopConfig {
        init: args.init,
        batch: args.batch,
        budget: args.budget,
        distinct: args.distinct,
        samples: args.samples,
        projections: args.projections,
        ..Default::default()
    };
    config.model = config.model.with_steps(args.steps);
    config.check(args.pool)?;
    hedge_data::prepare_output_dir(&args.out, args.overwrite)?;
    let bar = crate::runlog::runs_bar(args.seeds * args.method.len() as u64, "runs");
    let subset = |split: &hedge_data::MnistSplit, size: usize, seed: u64| -> (Vec<u8>, Vec<u8>) {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let idx = rand::seq::index::sample(&mut rng, split.len(), size).into_vec();
        (idx.iter().flat_map(|&i| split.image(i).to_vec()).collect(), idx.iter().map(|&i| split.labels[i]).collect())
    };
    let mut all: Vec<ClassRoundMetrics> = Vec::new();
    let mut log = crate::runlog::JsonLines::new(&args.out.join("rounds.jsonl"));
    for seed in 0..args.seeds {
        let (pool_pixels, pool_labels) = subset(&data.train, args.pool, seed);
        let (test_pixels, test_labels) = subset(&data.test, args.test, seed + 1_000_000);
        let (mean, std) = pixel_moments(&pool_pixels);
        let (pool_images, pool_y) = (images_tensor(&pool_pixels, mean, std), labels_tensor(&pool_labels));
        let (test_images, test_y) = (images_tensor(&test_pixels, mean, std), labels_tensor(&test_labels));
        for &m in &args.method {
            let method: ClassMethod = m.into();
            bar.set_message(format!("{} seed {seed}", method.name()));
            let rounds = config.run(
                &ImageSet { images: &pool_images, labels: &pool_y },
                &ImageSet { images: &test_images, labels: &test_y },
                10,
                method,
                seed,
            )?;
            log.append(&rounds)?;
            all.extend(rounds);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let config_json = json!({ "command": crate::command_line(), "dataset": args.dataset, "seeds": args.seeds,
        "pool": args.pool, "test": args.test, "loop": config, "threads": tch::get_num_threads(),
        "protocol": "per seed: pool drawn from the training split, test images from the test split, pixels standardised on the pool; the CNN is retrained from scratch every round" });
    hedge_data::write_atomic(&args.out.join("config.json"), serde_json::to_string_pretty(&config_json)?.as_bytes())?;
    let methods: Vec<ClassMethod> = args.method.iter().map(|&m| m.into()).collect();
    write_class_report(&args.out, &args.dataset, args.seeds, &methods, &config, &all)
}

/// summary.json, table.md and accuracy_vs_labels.png for `hedge active classify`.
fn write_class_report(
    out: &std::path::Path,
    dataset: &str,
    seeds: u64,
    methods: &[ClassMethod],
    config: &ClassLoopConfig,
    all: &[ClassRoundMetrics],
) -> Result<()> {
    let mut summary_methods = serde_json::Map::new();
    let mut md = format!(
        "{dataset}: CNN + Laplace last layer, {seeds} seeds, {} initial labels, batches of {}, budget {}, J = {} projections.\n\n\
         Accuracy: the network's prediction (last layer at its MAP); MC accuracy and log-likelihood: the posterior predictive.\n\n\
         | method | final accuracy (mean ± se) | final MC accuracy | final test log-likelihood | acquisition rounds | selection s / round |\n|---|---|---|---|---|---|\n",
        config.init, config.batch, config.budget, config.projections
    );
    let mut curves: Vec<crate::bayes_plots::MeanCurve> = Vec::new();
    for &method in methods {
        let runs: Vec<Vec<&ClassRoundMetrics>> =
            (0..seeds).map(|s| all.iter().filter(|r| r.method == method && r.seed == s).collect()).collect();
        let finals: Vec<f64> = runs.iter().filter_map(|r| r.last().map(|x| x.test_accuracy)).collect();
        let final_ll: Vec<f64> = runs.iter().filter_map(|r| r.last().map(|x| x.test_log_likelihood)).collect();
        let final_mc: Vec<f64> = runs.iter().filter_map(|r| r.last().map(|x| x.predictive_accuracy)).collect();
        let rounds: Vec<f64> = runs.iter().map(|r| r.len().saturating_sub(1) as f64).collect();
        let selections: Vec<f64> =
            runs.iter().flatten().filter(|r| r.batch_size > 0).map(|r| r.selection_seconds).collect();
        let (am, ase) = mean_se(&finals);
        let (mcm, mcse) = mean_se(&final_mc);
        let (llm, llse) = mean_se(&final_ll);
        let (roundm, _) = mean_se(&rounds);
        let (selm, _) = mean_se(&selections);
        let per_seed: Vec<Vec<(usize, f64)>> =
            runs.iter().map(|run| run.iter().map(|r| (r.labels, r.test_accuracy)).collect()).collect();
        let curve = grid_curve(&per_seed, config.init, config.batch, config.budget);
        let by_labels: serde_json::Map<String, serde_json::Value> =
            curve.iter().map(|&(l, m, se)| (format!("{l}"), json!({"mean": m, "se": se}))).collect();
        summary_methods.insert(
            method.name().into(),
            json!({ "final_accuracy": {"mean": am, "se": ase}, "final_predictive_accuracy": {"mean": mcm, "se": mcse},
                    "final_log_likelihood": {"mean": llm, "se": llse},
                    "rounds": {"mean": roundm}, "selection_seconds": {"mean": selm}, "accuracy_by_labels": by_labels }),
        );
        md.push_str(&format!(
            "| {} | {am:.4} ± {ase:.4} | {mcm:.4} ± {mcse:.4} | {llm:.3} ± {llse:.3} | {roundm:.1} | {selm:.3} |\n",
            method.name()
        ));
        curves.push((method.name().to_string(), curve));
    }
    let summary = json!({ "dataset": dataset, "seeds": seeds, "methods": summary_methods });
    hedge_data::write_atomic(&out.join("summary.json"), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    md.push_str(&format!("\nCommand: `{}`\n", crate::command_line()));
    hedge_data::write_atomic(&out.join("table.md"), md.as_bytes())?;
    crate::bayes_plots::curves_with_error(
        &out.join("accuracy_vs_labels.png"),
        &curves,
        "labels",
        "test accuracy (mean ± se over seeds)",
        &format!("{dataset}: accuracy vs labels"),
    )?;
    print!("{md}");
    Ok(())
}

fn mean_se(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}
