//! `hedge hib …`: train, embed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use hedge_data::{verification_pairs, Corruption, NDigitDataset, NDigitSplit};
use hedge_embed::evaluate::{MeanStd, Twin};
use hedge_embed::experiment::{read_plan, train_run, TrainPlan};
use hedge_embed::{
    device_name, embed_dataset, evaluate_model, load_model, parse_device, verification_ap, BatchComposition,
    ConvPrecision, EmbedOptions, EvalOptions, HibConfig, LossKind, LrSchedule, MatchEstimator, MatchInit, ModelEval,
    ModelEvalOptions, ModelKind, Norm, PairSet, RunConfig, RunDir, TrainEvent, Trainer,
};
pub use hedge_embed::{CORRUPT_SEED, PAIR_SEED};
use indicatif::{ProgressBar, ProgressStyle};
use tracing::info;

#[derive(Subcommand)]
pub enum HibCommand {
    /// Train a point, Gaussian or mixture-of-Gaussians embedding (writes a run directory).
    Train(Box<TrainArgs>),
    /// Embed a split with a trained model into an .npz (mean, variance, weights, label, eta).
    Embed(EmbedArgs),
    /// Evaluate a trained model: verification AP, KNN, uncertainty correlations, calibration.
    Eval(EvalArgs),
    /// Quality against training steps, from the checkpoints a run kept (--keep-every).
    Curve(CurveArgs),
    /// Train and evaluate point, MoG-1 and MoG-2; write the paper's tables, summary.json, figures.
    Reproduce(Box<crate::reproduce::ReproduceArgs>),
    /// Quality against training wall-clock of runs trained with --watch-every: when each reached
    /// the paper's Table 1 values (Markdown) and one plot per metric.
    TimeToQuality(TimeToQualityArgs),
}

#[derive(Args)]
pub struct TimeToQualityArgs {
    /// Run directories with a monitor.jsonl (label=DIR or DIR; comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    runs: Vec<String>,
    /// Watched set to report: test_unseen, test_seen or validation.
    #[arg(long, default_value = "test_unseen")]
    set: String,
    /// Output Markdown file; the plots go beside it (<stem>_<metric>.png).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum EstimatorArg {
    Mc,
    Quadrature,
}

#[derive(Args)]
pub struct CurveArgs {
    /// Run directory with a checkpoints/ folder.
    #[arg(long)]
    run: PathBuf,
    /// Repeats of the sampling-dependent evaluation per checkpoint.
    #[arg(long, default_value_t = 1)]
    repeats: usize,
    /// Test split to evaluate on (test_unseen writes curve.json, test_seen curve_test_seen.json).
    #[arg(long, value_enum, default_value = "test-unseen")]
    split: SplitArg,
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

#[derive(Args)]
pub struct EvalArgs {
    /// Run directory written by `hedge hib train`.
    #[arg(long)]
    run: PathBuf,
    /// test_unseen (default; classes never seen in training) or test_seen.
    #[arg(long, default_value = "test_unseen")]
    split: String,
    /// How p(m | x1, x2) is computed for stochastic embeddings.
    #[arg(long, value_enum, default_value = "mc")]
    match_estimator: EstimatorArg,
    /// Monte-Carlo samples per input (Eq. 5).
    #[arg(long, default_value_t = 8)]
    samples: i64,
    /// Gauss-Hermite nodes per dimension (quadrature estimator).
    #[arg(long, default_value_t = 16)]
    points: usize,
    /// Repeats of the sampling-dependent evaluation.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Candidates per probe re-ranked by the match probability in KNN.
    #[arg(long, default_value_t = 100)]
    candidates: usize,
    /// Evaluate this weights file (e.g. RUN_DIR/checkpoints/model-0005000.safetensors) instead
    /// of the run's own weights; the report then goes to stdout only.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModelArg {
    Point,
    Gaussian,
    Mog,
}

#[derive(Clone, Copy, ValueEnum)]
enum LossArg {
    Soft,
    Contrastive,
}

#[derive(Clone, Copy, ValueEnum)]
enum MatchInitArg {
    Fixed,
    FirstBatch,
}

#[derive(Clone, Copy, ValueEnum)]
enum NormArg {
    None,
    Batch,
}

/// A test split on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum SplitArg {
    TestSeen,
    TestUnseen,
}

impl From<SplitArg> for NDigitSplit {
    fn from(s: SplitArg) -> Self {
        match s {
            SplitArg::TestSeen => NDigitSplit::TestSeen,
            SplitArg::TestUnseen => NDigitSplit::TestUnseen,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ScheduleArg {
    Constant,
    Cosine,
}

impl From<ScheduleArg> for LrSchedule {
    fn from(s: ScheduleArg) -> Self {
        match s {
            ScheduleArg::Constant => LrSchedule::Constant,
            ScheduleArg::Cosine => LrSchedule::Cosine,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PrecisionArg {
    Auto,
    F32,
    Bf16,
}

impl From<PrecisionArg> for ConvPrecision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::Auto => ConvPrecision::Auto,
            PrecisionArg::F32 => ConvPrecision::F32,
            PrecisionArg::Bf16 => ConvPrecision::Bf16,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Variant {
    Clean,
    Corrupt,
}

#[derive(Args)]
pub struct TrainArgs {
    /// TOML file with any HibConfig fields (flags given here override it).
    #[arg(long)]
    config: Option<PathBuf>,
    /// New run directory (must not exist or be empty).
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Continue the run in this directory from its last checkpoint.
    #[arg(long, conflicts_with_all = ["config", "digits", "dim", "model", "components", "loss", "margin", "batch", "group", "beta", "samples", "lr", "lr_schedule", "seed", "precision", "warmup", "head_lr_scale", "match_init", "norm", "ema", "all_pairs", "validation_classes", "budget_minutes", "watch_every", "watch"])]
    resume: Option<PathBuf>,
    /// Digits per image (N).
    #[arg(long)]
    digits: Option<usize>,
    /// Embedding dimension (D).
    #[arg(long)]
    dim: Option<usize>,
    #[arg(long, value_enum)]
    model: Option<ModelArg>,
    /// Mixture components (with --model mog).
    #[arg(long)]
    components: Option<usize>,
    #[arg(long, value_enum)]
    loss: Option<LossArg>,
    /// Margin of the contrastive loss.
    #[arg(long)]
    margin: Option<f64>,
    /// Total optimiser steps (with --resume: the new total).
    #[arg(long)]
    steps: Option<usize>,
    /// Pairs per step (two images each).
    #[arg(long, conflicts_with = "group")]
    batch: Option<usize>,
    /// Grouped batches instead of the paper's independent pairs: CLASSESxIMAGES (e.g. 32x8),
    /// scoring every within-class pair and as many cross-class ones.
    #[arg(long, value_name = "CLASSESxIMAGES")]
    group: Option<String>,
    /// Weight of the KL term.
    #[arg(long)]
    beta: Option<f64>,
    /// Monte-Carlo samples per input.
    #[arg(long)]
    samples: Option<usize>,
    /// Adam learning rate.
    #[arg(long)]
    lr: Option<f64>,
    /// Learning-rate schedule: constant or cosine (decay to 0 at --steps).
    #[arg(long, value_enum)]
    lr_schedule: Option<ScheduleArg>,
    /// Linear learning-rate warm-up over this many steps before the schedule.
    #[arg(long)]
    warmup: Option<usize>,
    /// Learning-rate multiplier of the match head's a and b.
    #[arg(long)]
    head_lr_scale: Option<f64>,
    /// How b starts: fixed (init_b) or first-batch (a times the first batch's median distance).
    #[arg(long, value_enum)]
    match_init: Option<MatchInitArg>,
    /// Normalisation after each convolution.
    #[arg(long, value_enum)]
    norm: Option<NormArg>,
    /// Evaluate an exponential moving average of the weights with this decay (e.g. 0.999).
    #[arg(long)]
    ema: Option<f64>,
    /// Score every pair of a grouped batch (matching and non-matching halves weighted 1/2).
    #[arg(long, requires = "group")]
    all_pairs: bool,
    /// Hold this many training classes out (seeded) to choose the model on unseen classes:
    /// watched as `validation`, the best kept as model_best.safetensors.
    #[arg(long)]
    validation_classes: Option<usize>,
    /// Stop after this many minutes of training (evaluation excluded); without --steps the
    /// step count is planned from the speed of the first steps so schedules end on time.
    #[arg(long)]
    budget_minutes: Option<f64>,
    /// Evaluate the watched sets (validation classes and --watch splits) every N steps.
    #[arg(long, default_value_t = 0)]
    watch_every: usize,
    /// Test splits to watch (comma-separated: test_seen,test_unseen), for curves only.
    #[arg(long, value_delimiter = ',')]
    watch: Vec<String>,
    #[arg(long)]
    seed: Option<u64>,
    /// Number format of the convolutions (auto: bf16 where the hardware has it).
    #[arg(long, value_enum)]
    precision: Option<PrecisionArg>,
    /// cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Intra-op threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Keep a copy of the model every N steps in RUN_DIR/checkpoints/ (0: none).
    #[arg(long, default_value_t = 0)]
    keep_every: usize,
    /// Skip the closing verification check on test_unseen.
    #[arg(long)]
    no_eval: bool,
}

#[derive(Args)]
pub struct EmbedArgs {
    /// Run directory written by `hedge hib train`.
    #[arg(long)]
    run: PathBuf,
    /// train, test_seen or test_unseen.
    #[arg(long, default_value = "test_unseen")]
    split: String,
    #[arg(long, value_enum, default_value = "clean")]
    variant: Variant,
    /// Output .npz file.
    #[arg(long)]
    out: PathBuf,
    /// Monte-Carlo samples per input for eta.
    #[arg(long, default_value_t = 8)]
    samples: i64,
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

pub fn run(command: HibCommand) -> Result<()> {
    match command {
        HibCommand::Train(args) => train(*args),
        HibCommand::Embed(args) => embed(args),
        HibCommand::Eval(args) => eval(args),
        HibCommand::Curve(args) => {
            crate::set_threads(args.threads);
            curve(&args.run, args.repeats, args.split.into(), parse_device(&args.device)?).map(|_| ())
        }
        HibCommand::Reproduce(args) => crate::reproduce::run(*args),
        HibCommand::TimeToQuality(args) => time_to_quality(args),
    }
}

fn time_to_quality(args: TimeToQualityArgs) -> Result<()> {
    use hedge_embed::experiment::{time_to_quality_markdown, RunCurve};
    use hedge_embed::monitor::QuickMetric;
    check_output_path(&args.out)?;
    let mut curves = Vec::new();
    let mut shape = None;
    for spec in &args.runs {
        let (label, dir) = spec.split_once('=').unwrap_or((spec.as_str(), spec.as_str()));
        let run = RunDir::open(Path::new(dir))?;
        let config = run.read_config()?.hib;
        match shape {
            None => shape = Some((config.digits, config.dim)),
            Some(s) if s != (config.digits, config.dim) => {
                bail!(
                    "run '{dir}' is N = {}, D = {}; the others are N = {}, D = {}",
                    config.digits,
                    config.dim,
                    s.0,
                    s.1
                )
            }
            _ => {}
        }
        let curve = RunCurve::read(&run, label)?;
        if !curve.records.iter().any(|r| r.sets.contains_key(&args.set)) {
            bail!(
                "run '{dir}' has no '{}' in its monitor.jsonl; train with --watch-every N --watch {}",
                args.set,
                args.set
            );
        }
        curves.push(curve);
    }
    let (digits, dim) = shape.expect("clap requires at least one run");
    let text = time_to_quality_markdown(&curves, &args.set, digits, dim);
    hedge_data::write_atomic(&args.out, text.as_bytes())?;
    let stem = args.out.with_extension("");
    for metric in QuickMetric::ALL {
        let series: Vec<(String, Vec<(f64, f64)>)> = curves
            .iter()
            .map(|c| {
                let points = c
                    .records
                    .iter()
                    .filter_map(|r| Some((r.train_seconds / 60.0, metric.of(r.sets.get(&args.set)?))))
                    .collect();
                (c.label.clone(), points)
            })
            .collect();
        let named: Vec<(&str, Vec<(f64, f64)>)> = series.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
        let name = format!("{:?}", metric).to_lowercase();
        let path = PathBuf::from(format!("{}_{name}.png", stem.display()));
        crate::figures::line_chart(
            &path,
            &named,
            "training minutes (2 CPU threads)",
            &format!("{}, {}", metric.label(), args.set),
            &format!("N = {digits}, D = {dim}: {} against wall-clock", metric.label()),
        )?;
    }
    println!("{text}");
    Ok(())
}

fn resolve_config(args: &TrainArgs) -> Result<HibConfig> {
    let mut c = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read config '{}'", path.display()))?;
            toml::from_str(&text).with_context(|| format!("config '{}' is not a valid HIB config", path.display()))?
        }
        None => HibConfig::default(),
    };
    if let Some(v) = args.digits {
        c.digits = v;
    }
    if let Some(v) = args.dim {
        c.dim = v;
    }
    if let Some(v) = args.model {
        c.model = match v {
            ModelArg::Point => ModelKind::Point,
            ModelArg::Gaussian => ModelKind::Gaussian,
            ModelArg::Mog => ModelKind::Mog,
        };
    }
    if let Some(v) = args.components {
        c.components = v;
    }
    if let Some(v) = args.loss {
        c.loss = match v {
            LossArg::Soft => LossKind::Soft,
            LossArg::Contrastive => LossKind::Contrastive,
        };
    }
    if let Some(v) = args.margin {
        c.margin = v;
    }
    if let Some(v) = args.steps {
        c.steps = v;
    }
    if let Some(v) = args.batch {
        c.batch_pairs = v;
    }
    if let Some(v) = &args.group {
        c = with_group(c, v)?;
    }
    if let Some(v) = args.beta {
        c.beta = v;
    }
    if let Some(v) = args.samples {
        c.samples = v;
    }
    if let Some(v) = args.lr {
        c.learning_rate = v;
    }
    if let Some(v) = args.seed {
        c.seed = v;
    }
    if let Some(v) = args.lr_schedule {
        c.lr_schedule = v.into();
    }
    if let Some(v) = args.precision {
        c.conv_precision = v.into();
    }
    if let Some(v) = args.warmup {
        c.warmup_steps = v;
    }
    if let Some(v) = args.head_lr_scale {
        c.head_lr_scale = v;
    }
    if let Some(v) = args.match_init {
        c.match_init = match v {
            MatchInitArg::Fixed => MatchInit::Fixed,
            MatchInitArg::FirstBatch => MatchInit::FirstBatch,
        };
    }
    if let Some(v) = args.norm {
        c.norm = match v {
            NormArg::None => Norm::None,
            NormArg::Batch => Norm::Batch,
        };
    }
    if let Some(v) = args.ema {
        c.ema_decay = v;
    }
    if args.all_pairs {
        c.pair_set = PairSet::All;
    }
    if let Some(v) = args.validation_classes {
        c.validation_classes = v;
    }
    if args.budget_minutes.is_some() && args.steps.is_none() {
        // Planned from the measured speed after the first steps; until then effectively open.
        c.steps = PLANNED_STEPS_PLACEHOLDER;
    }
    c.check()?;
    Ok(c)
}

/// `steps` of a budgeted run until its first steps have been timed.
pub const PLANNED_STEPS_PLACEHOLDER: usize = 100_000_000;

/// The watch plan of `hedge hib train`'s flags.
fn train_plan(args: &TrainArgs) -> Result<TrainPlan> {
    if let Some(m) = args.budget_minutes {
        if !(m.is_finite() && m > 0.0) {
            bail!("--budget-minutes {m}: give a positive number of minutes");
        }
    }
    let watch_splits = args
        .watch
        .iter()
        .map(|s| match NDigitSplit::parse(s)? {
            NDigitSplit::Train => bail!("--watch train: watch test_seen or test_unseen (training images say nothing)"),
            split => Ok(split),
        })
        .collect::<Result<Vec<_>>>()?;
    if !watch_splits.is_empty() && args.watch_every == 0 {
        bail!("--watch needs --watch-every N (steps between evaluations)");
    }
    Ok(TrainPlan {
        budget_minutes: args.budget_minutes,
        watch_every: args.watch_every,
        watch_splits,
        keep_every: args.keep_every,
        ..Default::default()
    })
}

/// `config` with grouped batches of `spec` = "CLASSESxIMAGES" (the `--group` flag).
pub fn with_group(config: HibConfig, spec: &str) -> Result<HibConfig> {
    let parsed = spec.split_once('x').and_then(|(p, k)| Some((p.trim().parse().ok()?, k.trim().parse().ok()?)));
    let Some((classes, per_class)) = parsed else {
        bail!("--group '{spec}': expected CLASSESxIMAGES, e.g. 32x8");
    };
    Ok(config.with_batch(BatchComposition::Grouped).with_group_classes(classes).with_group_size(per_class))
}

/// Creates a run directory and writes its resolved `config.json`.
pub fn new_run(out: &Path, config: &HibConfig, device: tch::Device) -> Result<RunDir> {
    let run = RunDir::create(out)?;
    run.write_config(&RunConfig {
        hib: config.clone(),
        device: device_name(device),
        threads: tch::get_num_threads() as i64,
        command: command_line(),
        hedge_version: env!("CARGO_PKG_VERSION").into(),
        libtorch: "2.13.0".into(),
    })?;
    Ok(run)
}

/// MNIST and one N-digit split from `$HEDGE_DATA_DIR`.
pub fn load_split(digits: usize, split: NDigitSplit) -> Result<NDigitDataset> {
    Ok(hedge_embed::load_split(digits, split)?)
}

/// The command as a user would type it from the repository root: argv[0] is normalised, since
/// the binary may run from a copy outside target/.
pub fn command_line() -> String {
    std::iter::once("./target/release/hedge".to_string()).chain(std::env::args().skip(1)).collect::<Vec<_>>().join(" ")
}

fn train(args: TrainArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let device = parse_device(&args.device)?;
    let (run, config, resuming, plan) = match &args.resume {
        Some(path) => {
            let run = RunDir::open(path)?;
            let mut rc = run.read_config()?;
            let mut plan = read_plan(&run)?;
            plan.keep_every = args.keep_every;
            if let Some(steps) = args.steps {
                rc.hib.steps = steps;
                rc.hib.check()?;
                run.write_config(&rc)?;
                // An explicit new total replaces the budget the run was started with.
                plan.budget_minutes = None;
            }
            (run, rc.hib, true, plan)
        }
        None => {
            let mut config = resolve_config(&args)?;
            config.conv_precision = config.conv_precision.resolve(device);
            let plan = train_plan(&args)?;
            let out = args.out.as_ref().expect("clap requires --out without --resume");
            (new_run(out, &config, device)?, config, false, plan)
        }
    };
    let trainer = run_training_planned(&run, &config, device, resuming, &plan)?;
    if !args.no_eval {
        let report = quick_verification(&run, &config, &trainer)?;
        println!("{report}");
    }
    println!("run directory: {}", run.path.display());
    Ok(())
}

/// Trains (or resumes) the run to `config.steps` or the plan's budget, with a progress bar and
/// the watched sets logged, and returns the trainer.
pub fn run_training_planned(
    run: &RunDir,
    config: &HibConfig,
    device: tch::Device,
    resuming: bool,
    plan: &TrainPlan,
) -> Result<Trainer> {
    let batch = match config.batch {
        BatchComposition::Independent => format!("{} independent pairs", config.batch_pairs),
        BatchComposition::Grouped => format!("{} classes x {} images", config.group_classes, config.group_size),
    };
    let length = match plan.budget_minutes {
        Some(m) if config.steps == PLANNED_STEPS_PLACEHOLDER => format!("{m} minutes"),
        _ => format!("{} steps", config.steps),
    };
    info!(
        "training {:?} HIB, D = {}, {}-digit MNIST, {length} of {batch} on {} ({} threads) into {}",
        config.model,
        config.dim,
        config.digits,
        device_name(device),
        tch::get_num_threads(),
        run.path.display()
    );
    let bar = ProgressBar::new(config.steps as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} steps  {msg}  ETA {eta}").expect("valid template"),
    );
    // Without a terminal the bar is hidden; log a line every tenth of the run instead.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut log_every = (config.steps / 10).max(1);
    let trainer = train_run(run, config, device, resuming, plan, |event| match event {
        TrainEvent::Step { metrics: m, planned_steps } => {
            if bar.length() != Some(planned_steps as u64) {
                bar.set_length(planned_steps as u64);
                log_every = (planned_steps / 10).max(1);
            }
            bar.set_position(m.step as u64);
            if !tty && (m.step % log_every == 0 || m.step == planned_steps) {
                info!(
                    "step {}/{}: loss {:.4} kl {:.2} a {:.3} b {:.3} {:.0} pairs/s",
                    m.step, planned_steps, m.loss, m.kl, m.a, m.b, m.pairs_per_s
                );
            }
            if m.step % 10 == 0 || m.step == planned_steps {
                bar.set_message(format!(
                    "loss {:.4} kl {:.2} a {:.2} b {:.2} {:.0} pairs/s",
                    m.loss, m.kl, m.a, m.b, m.pairs_per_s
                ));
            }
        }
        TrainEvent::Planned { steps, seconds_per_step } => {
            info!("budget: {steps} steps planned at {:.1} ms a step", seconds_per_step * 1e3)
        }
        TrainEvent::Monitor(r) => {
            let sets: Vec<String> = r
                .sets
                .iter()
                .map(|(name, q)| {
                    format!(
                        "{name}: AP {:.3}/{:.3} KNN {:.3}/{:.3}",
                        q.ap_clean, q.ap_corrupt, q.knn_clean, q.knn_corrupt
                    )
                })
                .collect();
            bar.suspend(|| info!("step {} ({:.0} s): {}", r.step, r.train_seconds, sets.join("; ")));
        }
        TrainEvent::BudgetReached { step } => info!("budget reached at step {step}"),
        TrainEvent::TargetReached { step, train_seconds } => {
            info!("target reached at step {step} after {:.1} minutes of training", train_seconds / 60.0)
        }
    })?;
    bar.finish();
    info!("wrote {}", run.file(hedge_embed::run::MODEL_FILE).display());
    Ok(trainer)
}

/// Verification AP on `test_unseen` (5,000 + 5,000 pairs), clean and corrupt, written to
/// `verification.json`. The full evaluation (KNN, uncertainty correlations) is `hedge hib eval`.
fn quick_verification(run: &RunDir, config: &HibConfig, trainer: &Trainer) -> Result<String> {
    let test = load_split(config.digits, NDigitSplit::TestUnseen)?;
    let pairs = verification_pairs(&test.labels, 5000, 5000, PAIR_SEED)?;
    let mut out = serde_json::Map::new();
    for (name, corruption) in [("clean", Corruption::Clean), ("corrupt", Corruption::Corrupt { seed: CORRUPT_SEED })] {
        let net = trainer.inference_net();
        let set = embed_dataset(net, &test, &corruption, trainer.device, EmbedOptions::default())?;
        let ap = verification_ap(&net.matcher, &set, &pairs, 8, 0)?;
        let eta = set.eta.mean(tch::Kind::Float).double_value(&[]);
        out.insert(name.into(), serde_json::json!({"verification_ap": ap, "mean_eta": eta}));
    }
    let report = serde_json::json!({
        "split": "test_unseen",
        "pairs": {"matching": 5000, "non_matching": 5000, "seed": PAIR_SEED},
        "step": trainer.step(),
        "variants": out,
    });
    let text = serde_json::to_string_pretty(&report)? + "\n";
    hedge_data::write_atomic(&run.file("verification.json"), text.as_bytes())?;
    Ok(text)
}

fn embed(args: EmbedArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let device = parse_device(&args.device)?;
    let run = RunDir::open(&args.run)?;
    let config = run.read_config()?.hib;
    let split = NDigitSplit::parse(&args.split)?;
    if args.samples < 1 {
        bail!("--samples must be at least 1 (got {})", args.samples);
    }
    check_output_path(&args.out)?;
    let (_vs, net) = load_model(&run, &config, device)?;
    let dataset = load_split(config.digits, split)?;
    let corruption = match args.variant {
        Variant::Clean => Corruption::Clean,
        Variant::Corrupt => Corruption::Corrupt { seed: CORRUPT_SEED },
    };
    let options = EmbedOptions { samples: args.samples, ..Default::default() };
    let set = embed_dataset(&net, &dataset, &corruption, device, options)?;
    set.write_npz(&args.out)?;
    println!(
        "wrote {} ({} images of {}-digit {}, {}; mean eta {:.4})",
        args.out.display(),
        set.len(),
        config.digits,
        split.name(),
        match args.variant {
            Variant::Clean => "clean",
            Variant::Corrupt => "corrupt",
        },
        set.eta.mean(tch::Kind::Float).double_value(&[])
    );
    Ok(())
}

/// The folder of an output file must exist; the file itself is replaced atomically.
fn check_output_path(path: &Path) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            bail!("the folder of --out '{}' does not exist; create it first", path.display());
        }
    }
    Ok(())
}

fn eval(args: EvalArgs) -> Result<()> {
    crate::set_threads(args.threads);
    let device = parse_device(&args.device)?;
    let run = RunDir::open(&args.run)?;
    let split = NDigitSplit::parse(&args.split)?;
    let estimator = match args.match_estimator {
        EstimatorArg::Mc if args.samples < 1 => bail!("--samples must be at least 1"),
        EstimatorArg::Mc => MatchEstimator::MonteCarlo { samples: args.samples },
        EstimatorArg::Quadrature if !(1..=64).contains(&args.points) => bail!("--points must be in 1..=64"),
        EstimatorArg::Quadrature => MatchEstimator::Quadrature { points: args.points },
    };
    let settings = EvalSettings { split, estimator, repeats: args.repeats, candidates: args.candidates };
    let (report, json) = evaluate_run(&run, args.weights.as_deref(), &settings, device, args.weights.is_none())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!("{}", eval_table(&report));
    }
    Ok(())
}

/// What `hedge hib eval` measures, and how.
#[derive(Debug, Clone, Copy)]
pub struct EvalSettings {
    pub split: NDigitSplit,
    pub estimator: MatchEstimator,
    pub repeats: usize,
    pub candidates: usize,
}

impl Default for EvalSettings {
    fn default() -> Self {
        EvalSettings {
            split: NDigitSplit::TestUnseen,
            estimator: MatchEstimator::MonteCarlo { samples: 8 },
            repeats: 10,
            candidates: 100,
        }
    }
}

/// The report `hedge hib eval` writes for a split: `eval.json` (`test_unseen`, the name older
/// runs have) or `eval_<split>.json`.
pub fn eval_file_name(split: NDigitSplit) -> String {
    match split {
        NDigitSplit::TestUnseen => "eval.json".to_string(),
        other => format!("eval_{}.json", other.name()),
    }
}

/// Embeds the split's clean and corrupt twins with the run's model (or `weights`), evaluates,
/// and with `save` writes [`eval_file_name`] into the run.
pub fn evaluate_run(
    run: &RunDir,
    weights: Option<&Path>,
    settings: &EvalSettings,
    device: tch::Device,
    save: bool,
) -> Result<(ModelEval, serde_json::Value)> {
    let config = run.read_config()?.hib;
    if settings.split == NDigitSplit::Train {
        bail!("--split train: evaluate on test_unseen or test_seen");
    }
    let (mut vs, net) = load_model(run, &config, device)?;
    if let Some(w) = weights {
        vs.load(w).with_context(|| format!("cannot load weights '{}'", w.display()))?;
    }
    let test = load_split(config.digits, settings.split)?;
    let started = std::time::Instant::now();
    let (clean, corrupt) = embed_twins(&net, &test, device)?;
    let options = ModelEvalOptions {
        base: EvalOptions { estimator: settings.estimator, candidates: settings.candidates, ..Default::default() },
        repeats: settings.repeats,
        pair_seed: PAIR_SEED,
        ..Default::default()
    };
    let stochastic = config.model != ModelKind::Point;
    let report = evaluate_model(&net.matcher, &clean, &corrupt, stochastic, &options, |m| info!("eval: {m}"))?;
    let json = eval_json(&report, &config, settings, run, weights, started.elapsed().as_secs_f64());
    if save {
        // One report per split, so evaluating test_seen never replaces the test_unseen report.
        let name = eval_file_name(settings.split);
        let text = serde_json::to_string_pretty(&json)? + "\n";
        hedge_data::write_atomic(&run.file(&name), text.as_bytes())?;
        info!("wrote {}", run.file(&name).display());
    }
    Ok((report, json))
}

/// The clean and corrupt twins of a test split, embedded (the library's, with its error type).
pub fn embed_twins(
    net: &hedge_embed::HibNet,
    test: &NDigitDataset,
    device: tch::Device,
) -> Result<(hedge_embed::EmbeddedSet, hedge_embed::EmbeddedSet)> {
    Ok(hedge_embed::monitor::embed_twins(net, test, device)?)
}

/// `eval.json`: the keys of issue 3 (`verification_ap.clean`, `tau_knn.corrupt_std`, …) plus curves.
pub fn eval_json(
    r: &ModelEval,
    config: &HibConfig,
    settings: &EvalSettings,
    run: &RunDir,
    weights: Option<&Path>,
    seconds: f64,
) -> serde_json::Value {
    use serde_json::json;
    let twin = |t: &Twin<MeanStd>| json!({"clean": t.clean.mean, "corrupt": t.corrupt.mean, "clean_std": t.clean.std, "corrupt_std": t.corrupt.std});
    let opt = |t: &Twin<Option<MeanStd>>| {
        json!({"clean": t.clean.map(|m| m.mean), "corrupt": t.corrupt.map(|m| m.mean),
               "clean_std": t.clean.map(|m| m.std), "corrupt_std": t.corrupt.map(|m| m.std)})
    };
    // Beyond the paper's two columns: pairs of one clean and one corrupt image.
    let mut verification_ap = twin(&r.verification_ap);
    verification_ap["clean_vs_corrupt"] = json!(r.verification_ap_mixed.mean);
    verification_ap["clean_vs_corrupt_std"] = json!(r.verification_ap_mixed.std);
    json!({
        "run": run.path.display().to_string(),
        "weights": weights.map(|w| w.display().to_string()),
        "split": settings.split.name(),
        "model": config.model,
        "components": config.effective_components(),
        "digits": config.digits,
        "dim": config.dim,
        "steps": config.steps,
        "match_estimator": settings.estimator,
        "repeats": r.repeats,
        "protocol": "verification: 5,000 matching + 5,000 non-matching pairs within each variant; KNN (K = 5): clean probes against the clean gallery (clean) or the corrupt gallery (corrupt), leave-one-out",
        "verification_ap": verification_ap,
        "knn_accuracy": twin(&r.knn_majority),
        "knn_plurality": twin(&r.knn_plurality),
        "tau_ap": opt(&r.tau_ap),
        "tau_knn": opt(&r.tau_knn),
        "ece": r.ece.mean,
        "ece_std": r.ece.std,
        "ece_by_variant": twin(&r.ece_by_variant),
        // A point embedding has no η: its probes are rejected by the distance to their nearest
        // gallery neighbour instead (the paper's baseline proxy).
        "aurc": r.aurc.mean,
        "aurc_std": r.aurc.std,
        "aurc_uncertainty": if config.model == ModelKind::Point { "nearest_neighbour_distance" } else { "eta" },
        "risk_at_coverage": r.risk_at_coverage,
        "mean_eta": {"clean": r.mean_eta.clean, "corrupt": r.mean_eta.corrupt},
        "gallery_probe": r.gallery_probe.iter().map(|g| json!({
            "gallery": g.gallery, "probe": g.probe,
            "majority": g.majority.mean, "plurality": g.plurality.mean,
            "tau_knn": g.tau_knn.map(|t| t.mean),
        })).collect::<Vec<_>>(),
        "bins": {
            "clean": {"ap": r.bin_ap.clean, "knn": r.bin_knn.clean},
            "corrupt": {"ap": r.bin_ap.corrupt, "knn": r.bin_knn.corrupt},
        },
        "eval_seconds": seconds,
        "command": command_line(),
    })
}

pub fn eval_table(r: &ModelEval) -> String {
    let f = |m: MeanStd| format!("{:.3} ± {:.3}", m.mean, m.std);
    let o = |m: Option<MeanStd>| m.map_or("n/a".to_string(), f);
    let mut t = String::from("| metric | clean | corrupt |\n|---|---|---|\n");
    t += &format!("| verification AP | {} | {} |\n", f(r.verification_ap.clean), f(r.verification_ap.corrupt));
    t += &format!("| verification AP, clean vs corrupt pairs | {} | |\n", f(r.verification_ap_mixed));
    t += &format!("| KNN accuracy (majority) | {} | {} |\n", f(r.knn_majority.clean), f(r.knn_majority.corrupt));
    t += &format!("| KNN accuracy (plurality) | {} | {} |\n", f(r.knn_plurality.clean), f(r.knn_plurality.corrupt));
    t += &format!("| tau AP | {} | {} |\n", o(r.tau_ap.clean), o(r.tau_ap.corrupt));
    t += &format!("| tau KNN | {} | {} |\n", o(r.tau_knn.clean), o(r.tau_knn.corrupt));
    t += &format!("| ECE | {} | {} |\n", f(r.ece_by_variant.clean), f(r.ece_by_variant.corrupt));
    t += &format!("| mean eta | {:.4} | {:.4} |\n\n", r.mean_eta.clean, r.mean_eta.corrupt);
    t += "| gallery | probe | majority | plurality | tau KNN |\n|---|---|---|---|---|\n";
    for g in &r.gallery_probe {
        t += &format!("| {} | {} | {} | {} | {} |\n", g.gallery, g.probe, f(g.majority), f(g.plurality), o(g.tau_knn));
    }
    t += &format!(
        "\npooled ECE {:.4}, AURC (clean + corrupt probes, clean gallery) {:.4}; {} repeats",
        r.ece.mean, r.aurc.mean, r.repeats
    );
    t
}

/// Evaluates every kept checkpoint of a run on a test split; writes `curve.json` and
/// `curve.png` (test_unseen) or `curve_<split>.{json,png}` (step, training seconds, AP and KNN,
/// clean and corrupt).
pub fn curve(
    run_dir: &Path,
    repeats: usize,
    split: NDigitSplit,
    device: tch::Device,
) -> Result<Vec<serde_json::Value>> {
    let (json_name, png_name) = match split {
        NDigitSplit::TestUnseen => ("curve.json".to_string(), "curve.png".to_string()),
        other => (format!("curve_{}.json", other.name()), format!("curve_{}.png", other.name())),
    };
    let run = RunDir::open(run_dir)?;
    let dir = run.file(hedge_embed::run::CHECKPOINTS_DIR);
    let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(&dir)
        .with_context(|| format!("'{}' has no checkpoints; train with --keep-every N", dir.display()))?
        .filter_map(|e| {
            let p = e.ok()?.path();
            let step = p.file_stem()?.to_str()?.strip_prefix("model-")?.parse().ok()?;
            Some((step, p))
        })
        .collect();
    files.sort();
    // A curve.json over exactly these checkpoints and repeats is reused (evaluating again costs
    // minutes); rows without `repeats` predate the field and used 1.
    if let Ok(text) = std::fs::read_to_string(run.file(&json_name)) {
        if let Ok(rows) = serde_json::from_str::<Vec<serde_json::Value>>(&text) {
            let steps: Vec<usize> = rows.iter().filter_map(|r| r["step"].as_u64().map(|s| s as usize)).collect();
            let same_repeats = rows.iter().all(|r| r["repeats"].as_u64().unwrap_or(1) == repeats as u64);
            if same_repeats && steps == files.iter().map(|f| f.0).collect::<Vec<_>>() {
                info!("reusing {}", run.file(&json_name).display());
                return Ok(rows);
            }
        }
    }
    let seconds_at: std::collections::BTreeMap<usize, f64> =
        run.read_metrics()?.iter().map(|m| (m.step, m.seconds)).collect();
    let settings = EvalSettings { repeats, split, ..Default::default() };
    let mut rows = Vec::new();
    for (step, path) in &files {
        info!("curve: step {step}");
        let (_, j) = evaluate_run(&run, Some(path), &settings, device, false)?;
        rows.push(serde_json::json!({
            "step": step,
            "train_seconds": seconds_at.get(step),
            "repeats": repeats,
            "verification_ap": j["verification_ap"],
            "knn_accuracy": j["knn_accuracy"],
        }));
    }
    let text = serde_json::to_string_pretty(&rows)? + "\n";
    hedge_data::write_atomic(&run.file(&json_name), text.as_bytes())?;
    let series = |key: &str, variant: &str| -> Vec<(f64, f64)> {
        rows.iter().filter_map(|r| Some((r["step"].as_f64()?, r[key][variant].as_f64()?))).collect()
    };
    crate::figures::line_chart(
        &run.file(&png_name),
        &[
            ("verification AP, clean", series("verification_ap", "clean")),
            ("verification AP, corrupt", series("verification_ap", "corrupt")),
            ("KNN accuracy, clean", series("knn_accuracy", "clean")),
            ("KNN accuracy, corrupt gallery", series("knn_accuracy", "corrupt")),
        ],
        "training steps",
        split.name(),
        &format!("{}: quality vs training steps", run.path.display()),
    )?;
    Ok(rows)
}
