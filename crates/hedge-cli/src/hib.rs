//! `hedge hib …`: train, embed.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use hedge_data::NDigitSplit;
use hedge_embed::experiment::{prepare_resume, start_run};
use hedge_embed::run_eval::{embed_run, evaluate_run, quick_verification, save_eval, EvalSettings};
use hedge_embed::ValidationDigits;
use hedge_embed::{EvalReport, HibData, MatchEstimator, MetricSet, RunDir};
use hedge_lab::hib::request::{TestSplit, TrainRequest};
use hedge_lab::hib::run::{curve, train_with_progress};

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
    /// Embed a gallery of identities with a trained model and build an ANN index over the means,
    /// with the eta threshold for a target risk chosen on validation probes.
    Index(Box<crate::identification::IndexArgs>),
    /// Identify probe images against an index: top-k identities with match probabilities and eta,
    /// abstaining above the index's threshold (JSON lines, CSV, summary.json).
    Search(crate::identification::SearchArgs),
}

#[derive(Args)]
pub struct TimeToQualityArgs {
    /// Run directories with a monitor.jsonl (label=DIR or DIR; comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    runs: Vec<String>,
    /// Watched set to report: test (instance protocol), test_unseen, test_seen or validation.
    #[arg(long, default_value = "test")]
    set: String,
    /// Output Markdown file; the plots go beside it (`<stem>_<metric>.png`).
    #[arg(long)]
    out: PathBuf,
    /// Replace --out (and its plots) when it exists.
    #[arg(long)]
    overwrite: bool,
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
    /// Test split to evaluate on [default: the protocol's, test or test_unseen, written to
    /// curve.json; test_seen writes curve_test_seen.json].
    #[arg(long, value_enum)]
    split: Option<TestSplit>,
    #[command(flatten)]
    compute: crate::Compute,
}

#[derive(Args)]
pub struct EvalArgs {
    /// Run directory written by `hedge hib train`.
    #[arg(long)]
    run: PathBuf,
    /// test (instance protocol: the training classes' test images), test_unseen (open-set:
    /// classes never seen in training) or test_seen (the number tables' test images of
    /// training classes, under either protocol; at N = 3, 100 classes of 100 images), or
    /// validation (the images the run held out of train to choose models on; `eval_validation.json`)
    /// [default: the run's protocol's, test or test_unseen].
    #[arg(long)]
    split: Option<String>,
    /// How p(m | x1, x2) is computed for stochastic embeddings.
    #[arg(long, value_enum, default_value = "mc")]
    match_estimator: EstimatorArg,
    /// Monte-Carlo samples per input (Eq. 5).
    #[arg(long, default_value_t = 8)]
    samples: i64,
    /// Quadrature nodes per axis (quadrature estimator: the polar rule near the kink up to
    /// D = 3, the Gauss-Hermite product rule elsewhere); default: the fewest measured within a
    /// relative error of 1e-3 for the run's D (`hedge bench quadrature`).
    #[arg(long)]
    points: Option<usize>,
    /// Repeats of the sampling-dependent evaluation.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Candidates per probe re-ranked by the match probability in KNN.
    #[arg(long, default_value_t = 100)]
    candidates: usize,
    /// Evaluate on the first N images of every class of the split only (a quick look); the
    /// report then goes to stdout only.
    #[arg(long, value_name = "N")]
    per_class: Option<usize>,
    /// Evaluate this weights file (e.g. RUN_DIR/checkpoints/model-0005000.safetensors) instead
    /// of the run's own weights; the report then goes to stdout only.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Compute only these metrics (comma-separated: verification_ap, verification_ap_mixed,
    /// knn_accuracy, knn_plurality, tau_ap, tau_knn, ece, aurc, gallery_probe, knn_kept); every metric by
    /// default. A partial report goes to stdout only; its numbers equal the full evaluation's.
    #[arg(long, default_value = "")]
    metrics: String,
    /// Leave these metrics out (comma-separated, as --metrics).
    #[arg(long, default_value = "")]
    exclude_metrics: String,
    /// With --split validation: score the held-out images with these digit images instead of the
    /// run's own choice (e.g. unused: new digits, for a run that validated on shared ones); the
    /// report then goes to stdout only.
    #[arg(long, value_enum)]
    validation_digits: Option<ValidationDigits>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the report as JSON to this file (replacing only a report hedge wrote there).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    #[command(flatten)]
    compute: crate::Compute,
}

/// The split a command names, or the protocol's main test split of the run's config.
pub fn split_or_main(split: Option<&str>, run: &RunDir) -> Result<NDigitSplit> {
    Ok(match split {
        Some(s) => NDigitSplit::parse(s)?,
        None => run.read_config()?.hib.data.protocol.main_test_split(),
    })
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Variant {
    Clean,
    Corrupt,
}

#[derive(Args)]
pub struct TrainArgs {
    /// New run directory (must not exist or be empty, unless --overwrite).
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Start a new run in a --out that holds an earlier run: the run's files there are replaced
    /// (other files are left alone).
    #[arg(long, requires = "out")]
    overwrite: bool,
    /// Start the run in --out, or continue it there from its last checkpoint if --out holds one
    /// hedge started: a continued run keeps its own settings and watches (its config.json and
    /// plan.json; --steps is then the new total), and a setting flag that differs from them is
    /// named in a warning, not applied. One command that a study script repeats until it is done.
    #[arg(long = "continue", requires = "out", conflicts_with = "overwrite")]
    continue_run: bool,
    /// Continue the run in this directory from its last checkpoint.
    #[arg(long, conflicts_with_all = ["config", "digits", "protocol", "dim", "model", "components", "loss", "margin", "batch", "group", "beta", "samples", "lr", "lr_schedule", "seed", "precision", "warmup", "head_lr_scale", "match_init", "norm", "channels", "hidden_units", "ema", "weight_decay", "dropout", "all_pairs", "recompose", "digit_shift", "validation_classes", "validation_fraction", "validation_digits", "budget_minutes", "finish_planned_steps", "watch_every", "watch", "data"])]
    resume: Option<PathBuf>,
    #[command(flatten)]
    request: TrainRequest,
    #[command(flatten)]
    compute: crate::Compute,
    /// Skip the closing verification check on the protocol's test split.
    #[arg(long)]
    no_eval: bool,
}

#[derive(Args)]
pub struct EmbedArgs {
    /// Run directory written by `hedge hib train`.
    #[arg(long)]
    run: PathBuf,
    /// train, test or test_seen (instance), train, test_seen or test_unseen (open-set)
    /// [default: the run's protocol's test split].
    #[arg(long)]
    split: Option<String>,
    #[arg(long, value_enum, default_value = "clean")]
    variant: Variant,
    /// Output .npz file.
    #[arg(long)]
    out: PathBuf,
    /// Replace --out when it exists.
    #[arg(long)]
    overwrite: bool,
    /// Monte-Carlo samples per input for eta.
    #[arg(long, default_value_t = 8)]
    samples: i64,
    /// Embed with this weights file of the same model instead of the run's own final weights:
    /// RUN_DIR/model_best.safetensors (the weights validation chose, which the run's evaluation
    /// scores) or a kept copy in RUN_DIR/checkpoints/.
    #[arg(long)]
    weights: Option<PathBuf>,
    #[command(flatten)]
    compute: crate::Compute,
}

pub fn run(command: HibCommand) -> Result<()> {
    match command {
        HibCommand::Train(args) => train(*args),
        HibCommand::Embed(args) => embed(args),
        HibCommand::Eval(args) => eval(args),
        HibCommand::Curve(args) => {
            let device = args.compute.apply()?;
            let run = RunDir::open(&args.run)?;
            let split = match args.split {
                Some(s) => s.into(),
                None => run.read_config()?.hib.data.protocol.main_test_split(),
            };
            let data = HibData::new(hedge_data::DataRoot::from_env());
            curve(&run, &data, args.repeats, split, device, &crate::command_line())?;
            Ok(())
        }
        HibCommand::Reproduce(args) => crate::reproduce::run(*args),
        HibCommand::TimeToQuality(args) => time_to_quality(args),
        HibCommand::Index(args) => crate::identification::index(*args),
        HibCommand::Search(args) => crate::identification::search(args),
    }
}

fn time_to_quality(args: TimeToQualityArgs) -> Result<()> {
    check_output_path(&args.out, args.overwrite, is_time_to_quality_report)?;
    let runs: Vec<(String, PathBuf)> = args
        .runs
        .iter()
        .map(|spec| {
            let (label, dir) = spec.split_once('=').unwrap_or((spec.as_str(), spec.as_str()));
            (label.to_string(), PathBuf::from(dir))
        })
        .collect();
    let text = hedge_lab::hib::time_to_quality::time_to_quality_report(&runs, &args.set, &args.out)?;
    println!("{text}");
    Ok(())
}

fn train(args: TrainArgs) -> Result<()> {
    let device = args.compute.apply()?;
    // Every image this command reads comes through here, read once.
    let data = HibData::new(hedge_data::DataRoot::from_env());
    let started = args.out.as_ref().filter(|out| args.continue_run && out.join("config.json").is_file());
    let (run, config, resuming, plan) = match args.resume.as_ref().or(started) {
        Some(path) => {
            let run = RunDir::open_to_resume(path)?;
            let (rc, plan) = prepare_resume(&run, args.request.steps, args.request.keep_every)?;
            let unapplied = started.map(|_| args.request.unapplied_settings(&data, &rc.hib, device));
            if let Some(unapplied) = unapplied.filter(|u| !u.is_empty()) {
                let (path, unapplied) = (path.display(), unapplied.join(", "));
                tracing::warn!("{path}: continuing the run with its own settings; not applied: {unapplied}");
            }
            (run, rc.hib, true, plan)
        }
        None => {
            let config = data.resolve(&args.request.settings()?)?;
            let plan = args.request.plan()?;
            let out = args.out.as_ref().expect("clap requires --out without --resume");
            let (run, config) = start_run(&data, config, &plan, device, out, args.overwrite, &crate::command_line())?;
            (run, config, false, plan)
        }
    };
    let trainer = train_with_progress(&run, &data, &config, device, resuming, &plan)?;
    if !args.no_eval {
        let report = quick_verification(&run, &data, &trainer)?;
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    println!("run directory: {}", run.path.display());
    Ok(())
}

fn embed(args: EmbedArgs) -> Result<()> {
    let device = args.compute.apply()?;
    let run = RunDir::open(&args.run)?;
    let split = split_or_main(args.split.as_deref(), &run)?;
    check_output_path(&args.out, args.overwrite, is_embedding_npz)?;
    let corrupt = matches!(args.variant, Variant::Corrupt);
    let data = HibData::new(hedge_data::DataRoot::from_env());
    let set = embed_run(&run, &data, split, corrupt, args.samples, args.weights.as_deref(), device)?;
    set.write_npz(&args.out)?;
    println!(
        "wrote {} ({} images of {}, {}; mean eta {:.4})",
        args.out.display(),
        set.len(),
        split.name(),
        if corrupt { "corrupt" } else { "clean" },
        set.eta.mean(tch::Kind::Float).double_value(&[])
    );
    Ok(())
}

/// The folder of an output file must exist, and the file must not, unless `overwrite` (then it
/// is replaced atomically).
fn check_output_path(path: &Path, overwrite: bool, hedge_wrote: impl Fn(&Path) -> bool) -> Result<()> {
    Ok(hedge_run::atomic::check_output_file(path, "--out", overwrite, hedge_wrote)?)
}

/// An embedding `.npz` as `hib embed` writes it: exactly these arrays.
fn is_embedding_npz(path: &Path) -> bool {
    hedge_data::npy::npz_member_names(path).is_ok_and(|mut names| {
        names.sort();
        names == ["eta", "label", "mean", "variance", "weights"]
    })
}

/// A report `hib time-to-quality` wrote (its first words).
fn is_time_to_quality_report(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.starts_with("Time to quality, N = "))
}

fn eval(args: EvalArgs) -> Result<()> {
    let device = args.compute.apply()?;
    let run = RunDir::open(&args.run)?;
    let estimator = match args.match_estimator {
        EstimatorArg::Mc => MatchEstimator::MonteCarlo { samples: args.samples },
        EstimatorArg::Quadrature => MatchEstimator::Quadrature {
            points: match args.points {
                Some(points) => points,
                None => hedge_embed::evaluate::quadrature_points(run.read_config()?.hib.model.dim),
            },
        },
    };
    let split = split_or_main(args.split.as_deref(), &run)?;
    let metrics = MetricSet::parse(&args.metrics, &args.exclude_metrics)?;
    let settings = EvalSettings {
        split,
        estimator,
        repeats: args.repeats,
        candidates: args.candidates,
        metrics,
        images_per_class: args.per_class,
        validation_digits: args.validation_digits,
    };
    let data = HibData::new(hedge_data::DataRoot::from_env());
    if let Some(path) = &args.report {
        let is_report = |p: &Path| std::fs::read(p).is_ok_and(|b| serde_json::from_slice::<EvalReport>(&b).is_ok());
        hedge_run::atomic::check_output_file(path, "--report", true, is_report)?;
    }
    let (eval, report) = evaluate_run(&run, &data, args.weights.as_deref(), &settings, device, &crate::command_line())?;
    if let Some(path) = &args.report {
        hedge_run::write_atomic(path, (serde_json::to_string_pretty(&report)? + "\n").as_bytes())?;
    }
    // A report on other weights, of some metrics, of a subset of images or of validation images
    // with other digits than the run's goes to stdout only: the run's eval.json holds the whole
    // evaluation of its own model.
    let run_digits = run.read_config()?.hib.data.validation_digits;
    let own_digits = args.validation_digits.is_none_or(|d| d == run_digits);
    if args.weights.is_none() && metrics.is_all() && args.per_class.is_none() && own_digits {
        save_eval(&run, &report)?;
        if let Some(diagram) = &report.reliability {
            let figure = run.file(&hedge_embed::run_eval::reliability_file_name(report.split));
            let title = format!("Reliability of p(match), {} ({})", report.split.name(), report.match_estimator.name());
            hedge_lab::hib::figures::reliability_figure(&figure, &[("clean + corrupt pairs", diagram)], &title)?;
            tracing::info!("wrote {}", figure.display());
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", EvalReport::markdown(&eval));
    }
    Ok(())
}
