//! `hedge active …`: Bayesian batch active learning experiments.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use hedge_active::classification_loop::ClassLoopConfig;
use hedge_active::neural_linear::{LayerInit, NeuralLinearConfig};
use hedge_active::regression_loop::{LoopConfig, Surrogate, DEFAULT_PROJECTIONS};
use hedge_lab::active::experiment::{
    ClassificationExperiment, Experiment, RegressionExperiment, RunFinished, TABLE_FILE,
};
use hedge_lab::active::protocol::ActiveProtocol;

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

/// Every registered acquisition, with its summary in `--help`.
fn acquisitions() -> clap::builder::PossibleValuesParser {
    crate::registered(hedge_active::ACQUISITIONS.iter().map(|r| (r.name, r.about)))
}

#[derive(Args)]
pub struct ClassifyArgs {
    /// Folder under $HEDGE_DATA_DIR with the four IDX files: fashion-mnist or mnist.
    #[arg(long, default_value = "fashion-mnist")]
    dataset: String,
    /// Acquisitions to compare (bald and least-confidence read class probabilities).
    #[arg(long, value_delimiter = ',', default_value = "random,maxent,bald,acs-fw", value_parser = acquisitions())]
    method: Vec<String>,
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
    /// The experiment's folder: a new one, or this experiment's own, which the same command given
    /// again continues from its last finished round.
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Start over in an --out that holds an earlier experiment: the files it wrote are replaced
    /// (without it, a folder holding other files or another experiment is refused).
    #[arg(long)]
    overwrite: bool,
    /// Continue the experiment in this directory from its last finished round (its
    /// config.json says what to run; other flags but --threads are ignored).
    #[arg(long)]
    resume: Option<PathBuf>,
}

#[derive(Args)]
pub struct ReportArgs {
    /// A directory written by `hedge active run` or `hedge active classify`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
pub struct RunArgs {
    /// `uci/<name>` under $HEDGE_DATA_DIR.
    #[arg(long, required_unless_present_any = ["resume", "data"], conflicts_with = "data")]
    dataset: Option<String>,
    #[command(flatten)]
    table: crate::own_data::TableArgs,
    /// Acquisitions to compare (a regression runs those that read entropies, features or
    /// ACS-FW's vectors).
    #[arg(long, value_delimiter = ',', default_value = "random,maxent,acs-fw", value_parser = acquisitions())]
    method: Vec<String>,
    /// Seeds 0..S (each its own pool/test split and initial labels).
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    #[arg(long, default_value_t = 20)]
    init: usize,
    #[arg(long, default_value_t = 10)]
    batch: usize,
    /// Labels after the last round [default: the protocol's, init + 100 (paper) or 100 (hedge)].
    #[arg(long)]
    budget: Option<usize>,
    /// Whose experiment settings: `paper` (the authors' scripts: init + 100 labels, their
    /// minibatch rule for yacht, bostonHousing, energy and power-plant) or `hedge` (100 labels,
    /// minibatches of 64: results/active/hedge-protocol/) [default: paper on those four sets,
    /// hedge on any other data].
    #[arg(long, value_enum)]
    protocol: Option<ActiveProtocol>,
    /// ACS-FW: force `batch` distinct points per round (the paper allows re-picks).
    #[arg(long)]
    distinct: bool,
    /// Share of each seed's points held out for testing (the paper: 0.2); the rest is the pool.
    #[arg(long, default_value_t = hedge_active::regression_loop::PAPER_TEST_FRACTION)]
    test_fraction: f64,
    /// The labels targets are standardised on before each fit.
    #[arg(long, value_enum, default_value = "initial")]
    target_scaling: hedge_active::regression_loop::TargetScaling,
    /// ACS-FW on J random projections of the posterior (O(pool·J) per step) [default: 10, the
    /// form that scored lower than the closed form on all four UCI sets].
    #[arg(long, conflicts_with = "closed_form")]
    projections: Option<usize>,
    /// ACS-FW on the closed-form pool × pool inner products of the NIG last layer instead of
    /// random projections (the paper's form for NeuralLinear; O(pool²) memory).
    #[arg(long)]
    closed_form: bool,
    /// How the network under the Bayesian last layer is trained: `paper` (Pinsler et al.: the NIG
    /// posterior-predictive objective, batch norm, minibatches of 64 or, under --protocol paper,
    /// the authors' rule, cosine learning rate over --epochs; the default: at or near the paper's
    /// RMSE, 2–3x faster than mse) or `mse` (hedge's first recipe: least squares with a separate
    /// head, full batch, --steps).
    #[arg(long, value_enum, default_value = "paper")]
    recipe: hedge_active::neural_linear::NeuralLinearRecipe,
    /// The model fitted every round: `neural-linear` (the paper's) or `gp` (an exact GP with an
    /// ARD RBF kernel fitted by marginal likelihood: a reference for what the same labels allow;
    /// random and maxent only).
    #[arg(long, value_enum, default_value = "neural-linear")]
    surrogate: Surrogate,
    /// Also fit that GP on every round's labels and report its RMSE beside the acquiring model's
    /// (`gp_test_rmse` in rounds.jsonl; a column in the table): what each acquisition's labels
    /// allow a smooth model, seed by seed. Adds a GP fit per round (≈ 0.1–1 s at ≤ 100 labels).
    #[arg(long)]
    score_with_gp: bool,
    /// NeuralLinear fits per round from different starts, used as one equal-weight mixture by
    /// the prediction and every acquisition (not the paper's recipe, which fits one; costs K
    /// fits per round).
    #[arg(long, default_value_t = 1)]
    ensemble: usize,
    /// mse recipe: full-batch Adam steps per network fit.
    #[arg(long, default_value_t = 8000)]
    steps: usize,
    /// paper recipe: epochs per network fit.
    #[arg(long, default_value_t = 1000)]
    epochs: usize,
    /// Adam learning rate of the network (paper recipe: the cosine schedule's start) [default:
    /// 1e-2; paper recipe on power-plant 1e-3].
    #[arg(long)]
    lr: Option<f64>,
    /// mse: L2 penalty on every weight; paper: Adam weight decay on the linear weights [default:
    /// mse 1e-4; paper 1.0, on power-plant 3.0].
    #[arg(long)]
    weight_decay: Option<f64>,
    /// The last layer's inverse-gamma prior scale b₀ on the noise variance [default: 1; paper
    /// recipe on power-plant 3].
    #[arg(long)]
    b0: Option<f64>,
    /// How the network's layers start: `tch` (tch's defaults: weights U(±√(6/fan_in)), batch-norm
    /// scale U(0, 1)) or `pytorch` (PyTorch's: weights U(±1/√fan_in), batch-norm scale 1)
    /// [default: the recipe's].
    #[arg(long, value_enum)]
    layer_init: Option<LayerInit>,
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
    /// Continue the experiment in this directory from its last finished round (its
    /// config.json says what to run; other flags are ignored).
    #[arg(long)]
    resume: Option<PathBuf>,
}

pub fn run(command: ActiveCommand) -> Result<()> {
    match command {
        ActiveCommand::Run(args) => run_experiment(args),
        ActiveCommand::Report(args) => report(args),
        ActiveCommand::Classify(args) => classify(args),
    }
}

/// A bar over the experiment's loops, advanced as each finishes.
fn progress(bar: &indicatif::ProgressBar) -> impl FnMut(RunFinished) + '_ {
    |done: RunFinished| {
        bar.set_length(done.runs as u64);
        bar.set_position(done.index as u64 + 1);
        bar.set_message(format!("{} seed {} done", done.method, done.seed));
    }
}

fn run_experiment(args: RunArgs) -> Result<()> {
    // The networks see at most a few hundred rows: one thread beats libtorch's pool overhead.
    tch::set_num_threads(1);
    let root = hedge_data::DataRoot::from_env();
    let bar = crate::runlog::runs_bar(0, "runs");
    let out = if let Some(dir) = &args.resume {
        RegressionExperiment::resume(dir, &root, progress(&bar))?;
        dir.clone()
    } else {
        let (dataset, table) = match args.table.spec() {
            Some((path, spec)) => (path, Some(spec)),
            None => (args.dataset.clone().expect("clap requires --dataset without --resume or --data"), None),
        };
        let source = hedge_data::RegressionSource::parse(&dataset, table.as_ref())?;
        let active_protocol = args.protocol.unwrap_or(ActiveProtocol::default_for(&source));
        // Only a run with ACS-FW records a form for it.
        let projections = match (args.method.iter().any(|m| m == "acs-fw"), args.closed_form) {
            (true, false) => Some(args.projections.unwrap_or(DEFAULT_PROJECTIONS)),
            _ => None,
        };
        let mut loop_config = LoopConfig {
            init: args.init,
            batch: args.batch,
            budget: args.budget.unwrap_or(active_protocol.budget(args.init)),
            distinct: args.distinct,
            projections,
            test_fraction: args.test_fraction,
            target_scaling: args.target_scaling,
            surrogate: args.surrogate,
            score_with_gp: args.score_with_gp,
            ensemble: args.ensemble,
            ..Default::default()
        };
        let model = match args.recipe {
            hedge_active::neural_linear::NeuralLinearRecipe::Paper => {
                active_protocol.paper_recipe(&source).with_context(|| {
                    format!(
                        "--protocol paper with --dataset {dataset}: the authors' settings cover their four UCI sets"
                    )
                })?
            }
            hedge_active::neural_linear::NeuralLinearRecipe::Mse => NeuralLinearConfig::default(),
        };
        loop_config.model = NeuralLinearConfig {
            steps: args.steps,
            epochs: args.epochs,
            learning_rate: args.lr.unwrap_or(model.learning_rate),
            weight_decay: args.weight_decay.unwrap_or(model.weight_decay),
            nig: model.nig.with_prior(model.nig.a0, args.b0.unwrap_or(model.nig.b0)),
            init: args.layer_init.map_or(model.init, LayerInit::from),
            ..model
        };
        let protocol = RegressionExperiment::protocol_for(&loop_config);
        let experiment = RegressionExperiment {
            command: crate::command_line(),
            dataset,
            table,
            methods: args.method.clone(),
            loop_config,
            protocol,
            active_protocol,
            seeds: args.seeds,
        };
        let out = args.out.clone().expect("clap requires --out without --resume");
        experiment.run_or_resume(&root, &out, args.overwrite, progress(&bar))?;
        out
    };
    bar.finish_and_clear();
    print_table(&out)
}

fn print_table(out: &std::path::Path) -> Result<()> {
    let path = out.join(TABLE_FILE);
    print!("{}", std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?);
    Ok(())
}

fn report(args: ReportArgs) -> Result<()> {
    let config = args.out.join(hedge_lab::active::experiment::CONFIG_FILE);
    let text = std::fs::read_to_string(&config)
        .with_context(|| format!("cannot read {} (is this an `hedge active` run directory?)", config.display()))?;
    // A classification experiment's config.json names its pool; a regression one does not.
    if serde_json::from_str::<ClassificationExperiment>(&text).is_ok() {
        ClassificationExperiment::report(&args.out)?;
    } else {
        RegressionExperiment::report(&args.out)?;
    }
    print_table(&args.out)
}

fn classify(args: ClassifyArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let root = hedge_data::DataRoot::from_env();
    let bar = crate::runlog::runs_bar(0, "runs");
    let out = if let Some(dir) = &args.resume {
        ClassificationExperiment::resume(dir, &root, progress(&bar))?;
        dir.clone()
    } else {
        let mut loop_config = ClassLoopConfig {
            init: args.init,
            batch: args.batch,
            budget: args.budget,
            distinct: args.distinct,
            samples: args.samples,
            projections: args.projections,
            ..Default::default()
        };
        loop_config.model = loop_config.model.with_steps(args.steps);
        let experiment = ClassificationExperiment {
            command: crate::command_line(),
            dataset: args.dataset.clone(),
            loop_config,
            methods: args.method.clone(),
            pool: args.pool,
            protocol: ClassificationExperiment::PROTOCOL.into(),
            seeds: args.seeds,
            test: args.test,
            threads: tch::get_num_threads(),
        };
        let data = experiment.load(&root).with_context(|| {
            format!("--dataset {}: expected the four IDX files under $HEDGE_DATA_DIR/{0}", args.dataset)
        })?;
        let out = args.out.clone().expect("clap requires --out without --resume");
        experiment.run(&data, &out, args.overwrite, progress(&bar))?;
        out
    };
    bar.finish_and_clear();
    print_table(&out)
}
