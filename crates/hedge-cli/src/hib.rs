//! `hedge hib …`: train, embed.

use std::path::{Path, PathBuf};

use crate::hib_args::{SharedSettingFlags, SplitArg};
use anyhow::{bail, Result};
use clap::{Args, Subcommand, ValueEnum};
use hedge_data::NDigitSplit;
use hedge_embed::experiment::{prepare_resume, start_run, TrainPlan};
use hedge_embed::run_eval::{embed_run, evaluate_run, quick_verification, save_eval, EvalSettings};
use hedge_embed::{ConvPrecision, ModelKind, NDigitProtocol, ValidationDigits};
use hedge_embed::{
    EvalReport, HibData, MatchEstimator, MatchInit, MetricSet, Norm, OwnImagesRequest, RunDir, SettingsRequest,
};
use hedge_lab::hib::run::{curve, train_with_progress};
use serde::Serialize;

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
    /// Train and evaluate a grid of runs from a plan file (a lever study, seeds of recipes):
    /// `runs/<name>/` each, runs.jsonl, summary.json and table.md; --resume continues it.
    Study(Box<crate::study::StudyArgs>),
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

/// Every registered pair loss, with its summary in `--help`.
fn losses() -> clap::builder::PossibleValuesParser {
    crate::registered(hedge_embed::pair_loss::LOSSES.iter().map(|r| (r.name, r.about)))
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
    split: Option<SplitArg>,
    #[arg(long, default_value = "cpu", value_parser = crate::hib_args::device)]
    device: tch::Device,
    #[arg(long, default_value_t = 0)]
    threads: usize,
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
    /// Gauss-Hermite nodes per dimension (quadrature estimator).
    #[arg(long, default_value_t = 16)]
    points: usize,
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
    #[arg(long, default_value = "cpu", value_parser = crate::hib_args::device)]
    device: tch::Device,
    #[arg(long, default_value_t = 0)]
    threads: usize,
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
    /// TOML file with any HibConfig fields (flags given here override it).
    #[arg(long)]
    config: Option<PathBuf>,
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
    #[arg(long, conflicts_with_all = ["config", "digits", "protocol", "dim", "model", "components", "loss", "margin", "batch", "group", "beta", "samples", "lr", "lr_schedule", "seed", "precision", "warmup", "head_lr_scale", "match_init", "norm", "channels", "ema", "weight_decay", "dropout", "all_pairs", "recompose", "digit_shift", "validation_classes", "validation_fraction", "validation_digits", "budget_minutes", "finish_planned_steps", "watch_every", "watch", "data"])]
    resume: Option<PathBuf>,
    /// The settings a flag can override, in HibConfig's serde form.
    #[command(flatten)]
    settings: SettingFlags,
    /// Your own labelled images instead of N-digit MNIST: a folder `ROOT/<label>/<image>.png` (or
    /// .jpg; one sub-folder per class, one image size) or an .npz with `images` `[N, H, W]` or
    /// `[N, C, H, W]` and `labels` `[N]`. The network's input adapts to the images' channels and size.
    #[arg(long, conflicts_with = "digits", value_name = "FOLDER|FILE.npz")]
    data: Option<PathBuf>,
    /// With --data: whole classes held out (seeded) as `test_unseen`, identities the model never
    /// sees [default: a fifth of the classes, at least 2].
    #[arg(long, requires = "data")]
    unseen_classes: Option<usize>,
    /// With --data: share of each remaining class's images held out as `test_seen`.
    #[arg(long, requires = "data", default_value_t = 0.1)]
    seen_test_fraction: f64,
    /// With --data: seed of the class and image splits.
    #[arg(long, requires = "data", default_value_t = 0)]
    split_seed: u64,
    /// Total optimiser steps (with --resume: the new total).
    #[arg(long)]
    steps: Option<usize>,
    /// Stop after this many minutes of training (evaluation excluded); without --steps the
    /// step count is planned from the speed of the first steps so schedules end on time.
    #[arg(long)]
    budget_minutes: Option<f64>,
    /// With --budget-minutes: train every planned step even if the machine slows down after
    /// planning (the budget then fixes the step count from the first steps' speed, not the
    /// stop), so other work beside the run changes its wall-clock, not its result.
    #[arg(long, requires = "budget_minutes")]
    finish_planned_steps: bool,
    /// Evaluate the watched sets (validation classes and --watch splits) every N steps.
    #[arg(long, default_value_t = 0)]
    watch_every: usize,
    /// Test splits to watch (comma-separated: test; or test_seen,test_unseen), for curves only;
    /// they never choose the model.
    #[arg(long, value_delimiter = ',')]
    watch: Vec<String>,
    /// cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "cpu", value_parser = crate::hib_args::device)]
    device: tch::Device,
    /// Intra-op threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Keep a copy of the model every N steps in RUN_DIR/checkpoints/ (0: none) [default: 0;
    /// with --resume: as the run began, saved in its plan.json].
    #[arg(long)]
    keep_every: Option<usize>,
    /// Skip the closing verification check on the protocol's test split.
    #[arg(long)]
    no_eval: bool,
}

/// The flags of `hib train` that set a [`hedge_embed::HibConfig`] field, serialised under the field's name in
/// the config's serde form (`--lr` as `learning_rate`): laid over the recipe as overrides
/// ([`hedge_run::with_overrides`]), so a flag is one line here and nothing else.
#[derive(Args, Serialize)]
pub struct SettingFlags {
    /// Which N-digit MNIST tables: instance (the paper's: every class in training and in test,
    /// splits train and test) or open-set (test_unseen's classes never trained on; test_seen)
    /// [default: the config's, else instance].
    #[arg(long, value_enum, conflicts_with = "data")]
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<NDigitProtocol>,
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<ModelKind>,
    /// Mixture components (with --model mog).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    components: Option<usize>,
    /// The pair loss (a registered name).
    #[arg(long, value_parser = losses())]
    #[serde(skip_serializing_if = "Option::is_none")]
    loss: Option<String>,
    /// Margin of the contrastive loss.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    margin: Option<f64>,
    /// Weight of the KL term.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    beta: Option<f64>,
    /// Monte-Carlo samples per input.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<usize>,
    /// Linear learning-rate warm-up over this many steps before the schedule.
    #[arg(long)]
    #[serde(rename = "warmup_steps", skip_serializing_if = "Option::is_none")]
    warmup: Option<usize>,
    /// Learning-rate multiplier of the match head's a and b.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    head_lr_scale: Option<f64>,
    /// How b starts: fixed (init_b) or first-batch (a times the first batch's median distance).
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    match_init: Option<MatchInit>,
    /// Normalisation after each convolution.
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    norm: Option<Norm>,
    /// Widths of the two convolutions, A,B (the paper's network: 32,64).
    #[arg(long, value_name = "A,B", value_parser = channel_widths)]
    #[serde(skip_serializing_if = "Option::is_none")]
    channels: Option<[usize; 2]>,
    /// The settings `hib reproduce` takes too (--digits, --dim, --lr, --lr-schedule, the batch).
    #[command(flatten)]
    #[serde(flatten)]
    shared: SharedSettingFlags,
    /// Evaluate an exponential moving average of the weights with this decay (e.g. 0.999).
    #[arg(long)]
    #[serde(rename = "ema_decay", skip_serializing_if = "Option::is_none")]
    ema: Option<f64>,
    /// Decoupled weight decay (AdamW) of the conv and head weights, per unit of learning rate
    /// (e.g. 1e-4; 0: off, the paper's plain Adam; biases and the match head never decay; not
    /// in the paper).
    #[arg(long, value_name = "DECAY")]
    #[serde(skip_serializing_if = "Option::is_none")]
    weight_decay: Option<f64>,
    /// Drop the trunk's features out before the head with this probability while training (e.g.
    /// 0.5; 0: off, the paper's network; not in the paper).
    #[arg(long, value_name = "P")]
    #[serde(skip_serializing_if = "Option::is_none")]
    dropout: Option<f64>,
    /// Train on images made afresh each step from the training images' own digit images: each
    /// digit of a sampled image replaced by a random training image of the same digit (more digit
    /// combinations per class; not in the paper). N-digit MNIST only.
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    recompose: bool,
    /// Move each training digit image within its 28-pixel cell by up to N pixels each way,
    /// uniformly each step, the space it leaves black (an augmentation; not in the paper; 0: off,
    /// at most 8). N-digit MNIST only.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    digit_shift: Option<usize>,
    /// Open-set: hold this many training classes out (seeded) to choose the model on unseen
    /// classes: watched as `validation`, the best kept as model_best.safetensors.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_classes: Option<usize>,
    /// Hold this share of every class's training images out (seeded, e.g. 0.05: 50 of each
    /// N = 2 class's 1,000) to choose the model on images it never trained on: watched as
    /// `validation`, the best kept as model_best.safetensors (the instance protocol's model choice).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_fraction: Option<f64>,
    /// The validation images' digit images: shared (the held-out images as the table has them;
    /// their digit images recur in training images) or unused (each digit redrawn, seeded, from
    /// the MNIST training digits no training image uses, so validation meets new digits as the
    /// test images do; not in the paper) [default: the config's, else shared].
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_digits: Option<ValidationDigits>,
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    /// Number format of the convolutions (auto: $HEDGE_CONV_PRECISION where set, else bf16 where
    /// the hardware has it).
    #[arg(long, value_enum)]
    #[serde(rename = "conv_precision", skip_serializing_if = "Option::is_none")]
    precision: Option<ConvPrecision>,
}

/// `--channels A,B`: two conv widths.
fn channel_widths(spec: &str) -> std::result::Result<[usize; 2], String> {
    let widths: Vec<usize> = spec
        .split(',')
        .map(|w| w.trim().parse().map_err(|_| format!("'{w}' is no width")))
        .collect::<std::result::Result<_, _>>()?;
    <[usize; 2]>::try_from(widths.as_slice())
        .map_err(|_| format!("takes two widths, A,B (e.g. 64,128); got {} values", widths.len()))
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
    #[arg(long, default_value = "cpu", value_parser = crate::hib_args::device)]
    device: tch::Device,
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

pub fn run(command: HibCommand) -> Result<()> {
    match command {
        HibCommand::Train(args) => train(*args),
        HibCommand::Embed(args) => embed(args),
        HibCommand::Eval(args) => eval(args),
        HibCommand::Curve(args) => {
            crate::set_threads(args.threads)?;
            let run = RunDir::open(&args.run)?;
            let split = match args.split {
                Some(s) => s.into(),
                None => run.read_config()?.hib.data.protocol.main_test_split(),
            };
            let data = HibData::new(hedge_data::DataRoot::from_env());
            curve(&run, &data, args.repeats, split, args.device, &crate::command_line())?;
            Ok(())
        }
        HibCommand::Reproduce(args) => crate::reproduce::run(*args),
        HibCommand::Study(args) => crate::study::run(*args),
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

/// Where `hib train`'s settings come from: its `--config`, its flags by their names in the
/// config's serde form, `--data`, the length ([`HibData::resolve`] lays them over the defaults).
fn settings_request(args: &TrainArgs) -> Result<SettingsRequest> {
    let serde_json::Value::Object(overrides) = serde_json::to_value(&args.settings)? else {
        unreachable!("a struct of named flags serialises as an object")
    };
    let own_images = args.data.as_ref().map(|path| OwnImagesRequest {
        path: path.clone(),
        unseen_classes: args.unseen_classes,
        seen_test_fraction: args.seen_test_fraction,
        split_seed: args.split_seed,
    });
    Ok(SettingsRequest::new("hib train's flags", overrides)
        .with_recipe(args.config.clone())
        .with_own_images(own_images)
        .with_length(args.steps, args.budget_minutes))
}

/// `hib train --continue` over a run: warns naming each setting the command asks for (a flag
/// given, or a recipe's value other than the default) that differs from the run's own, which it
/// keeps; the length is the new total and is not compared.
fn warn_unapplied_settings(data: &HibData, args: &TrainArgs, own: &hedge_embed::HibConfig, path: &Path) {
    let form = |config: &hedge_embed::HibConfig| match serde_json::to_value(config) {
        Ok(serde_json::Value::Object(form)) => form,
        _ => serde_json::Map::new(),
    };
    let Ok(request) = settings_request(args) else { return };
    let Ok(mut asked) = data.resolve(&request) else { return };
    // A run records the precision `auto` took.
    asked.model.conv_precision = asked.model.conv_precision.resolve(args.device).unwrap_or(asked.model.conv_precision);
    let (asked, own, defaults) = (form(&asked), form(own), form(&hedge_embed::HibConfig::default()));
    let recipe =
        request.recipe.as_deref().and_then(|p| hedge_embed::HibConfig::from_toml_file(p).ok()).map(|r| form(&r));
    let named = |name: &str| {
        request.overrides.contains_key(name) || recipe.as_ref().is_some_and(|r| r.get(name) != defaults.get(name))
    };
    let differing: Vec<String> = asked
        .iter()
        .filter(|(name, value)| name.as_str() != "steps" && named(name) && own.get(name.as_str()) != Some(value))
        .map(|(name, value)| {
            format!("{name} = {value} (the run's: {})", own.get(name).unwrap_or(&serde_json::Value::Null))
        })
        .collect();
    if !differing.is_empty() {
        tracing::warn!(
            "{}: continuing the run with its own settings; not applied: {}",
            path.display(),
            differing.join(", ")
        );
    }
}

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
            NDigitSplit::Train => {
                bail!("--watch train: watch test, test_seen or test_unseen (training images say nothing)")
            }
            NDigitSplit::Validation => {
                bail!("--watch validation: the validation images are watched whenever the run holds some out (--validation-fraction); watch test, test_seen or test_unseen")
            }
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
        keep_every: args.keep_every.unwrap_or(0),
        finish_planned_steps: args.finish_planned_steps,
        ..Default::default()
    })
}

fn train(args: TrainArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let device = args.device;
    // Every image this command reads comes through here, read once.
    let data = HibData::new(hedge_data::DataRoot::from_env());
    let started = args.out.as_ref().filter(|out| args.continue_run && out.join("config.json").is_file());
    let (run, config, resuming, plan) = match args.resume.as_ref().or(started) {
        Some(path) => {
            let run = RunDir::open_to_resume(path)?;
            let (rc, plan) = prepare_resume(&run, args.steps, args.keep_every)?;
            if started.is_some() {
                warn_unapplied_settings(&data, &args, &rc.hib, path);
            }
            (run, rc.hib, true, plan)
        }
        None => {
            let config = data.resolve(&settings_request(&args)?)?;
            let plan = train_plan(&args)?;
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
    crate::set_threads(args.threads)?;
    let device = args.device;
    let run = RunDir::open(&args.run)?;
    let split = split_or_main(args.split.as_deref(), &run)?;
    check_output_path(&args.out, args.overwrite, is_embedding_npz)?;
    let corrupt = matches!(args.variant, Variant::Corrupt);
    let data = HibData::new(hedge_data::DataRoot::from_env());
    let set = embed_run(&run, &data, split, corrupt, args.samples, device)?;
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
    crate::set_threads(args.threads)?;
    let device = args.device;
    let run = RunDir::open(&args.run)?;
    let estimator = match args.match_estimator {
        EstimatorArg::Mc => MatchEstimator::MonteCarlo { samples: args.samples },
        EstimatorArg::Quadrature => MatchEstimator::Quadrature { points: args.points },
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
    let (eval, report) = evaluate_run(&run, &data, args.weights.as_deref(), &settings, device, &crate::command_line())?;
    // A report on other weights, of some metrics, of a subset of images or of validation images
    // with other digits than the run's goes to stdout only: the run's eval.json holds the whole
    // evaluation of its own model.
    let run_digits = run.read_config()?.hib.data.validation_digits;
    let own_digits = args.validation_digits.is_none_or(|d| d == run_digits);
    if args.weights.is_none() && metrics.is_all() && args.per_class.is_none() && own_digits {
        save_eval(&run, &report)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", EvalReport::markdown(&eval));
    }
    Ok(())
}
