//! `hedge agnostic …`: concept-agnostic networks (gradient reversal) and their audit.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use hedge_agnostic::erasure::Removal;
use hedge_agnostic::train::DecisionPenaltyForm;
use hedge_agnostic::{Adversary, ModelConfig, Objective, TrainConfig};
use hedge_data::ContextMnistConfig;
use hedge_lab::agnostic::exp1::Exp1Config;
use hedge_lab::agnostic::sweep::{
    check_method, parse_alphas, DataOptions, NetworkFinished, PreparedData, SweepConfig, SweepDataset,
    TrainingProtocol, UserTable, TABLE_FILE,
};
use hedge_run::Experiment;
use hedge_run::ParamGuard;

#[derive(Subcommand)]
pub enum AgnosticCommand {
    /// Trains one network per α and repeat and audits each. context-mnist: target accuracy on
    /// IID, balanced and reversed tests, G_p, fresh probes, flip rate, mask share, activation
    /// maps; mnist-m: Ganin et al.'s DANN (α = λ's final value, 0 = source only), digit accuracy
    /// on MNIST and MNIST-M, domain probes; adult: income accuracy, parity and odds gaps, sex
    /// probes; --data: the same on your own table. Writes config.json, metrics.jsonl,
    /// summary.json, table.md, PNGs, checkpoints/.
    Sweep(Box<SweepArgs>),
    /// Rebuilds summary.json, table.md and the figures from a sweep directory's metrics.jsonl
    /// (for example after an interrupted sweep).
    Report(ReportArgs),
    /// The paper's Experiment 1 on Context-MNIST: a CNN trained on the target and one trained on
    /// the background, each scored on both test sets during training (Fig. 2 analogue).
    Exp1(Exp1Args),
    /// The Pareto front over finished sweeps of one dataset (every method and strength):
    /// balanced accuracy (Adult: accuracy) against the tuned MLP probe. Writes pareto.json,
    /// pareto.md and pareto.png into --out.
    Pareto(ParetoArgs),
    /// Where G_y's decision looks: Grad-CAM maps of repeat 0's saved networks of finished
    /// Context-MNIST sweeps, their mask share beside the sweep audit's (strongest G_f response),
    /// and a Grad-CAM grid per sweep. Writes maps.json, maps.md and gradcam-SWEEP.png/.npz into --out.
    Maps(ParetoArgs),
}

#[derive(Args)]
pub struct ParetoArgs {
    /// Sweep directories (comma-separated), all on one dataset.
    #[arg(long, value_delimiter = ',', required = true)]
    sweeps: Vec<PathBuf>,
    #[arg(long)]
    out: PathBuf,
    /// Replace the report files an earlier run of this command wrote in --out (never files hedge
    /// did not write).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// A directory written by `hedge agnostic sweep`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum DatasetArg {
    ContextMnist,
    MnistM,
    Adult,
}

impl From<DatasetArg> for SweepDataset {
    fn from(d: DatasetArg) -> Self {
        match d {
            DatasetArg::ContextMnist => SweepDataset::ContextMnist,
            DatasetArg::MnistM => SweepDataset::MnistM,
            DatasetArg::Adult => SweepDataset::Adult,
        }
    }
}

/// `--removal` and its parameters as settings (`inlp` takes `--inlp-iterations`; any eraser
/// takes `--eraser-param KEY=VALUE`).
fn removal_of(kind: &str, inlp_iterations: usize, params: &[String]) -> Result<Removal> {
    if kind == "adversary" {
        if let Some(p) = params.first() {
            bail!("--eraser-param {p}: the adversary takes no eraser parameters (choose an eraser with --removal)");
        }
        return Ok(Removal::Adversary);
    }
    let mut spec = hedge_agnostic::eraser::EraserSpec::new(kind);
    if kind == "inlp" {
        spec = spec.with("iterations", inlp_iterations);
    }
    for p in params {
        let Some((key, value)) = p.split_once('=') else {
            bail!("--eraser-param {p}: write KEY=VALUE");
        };
        let value = serde_json::from_str::<serde_json::Value>(value)
            .ok()
            .filter(serde_json::Value::is_number)
            .unwrap_or_else(|| serde_json::Value::String(value.to_string()));
        spec = spec.with(key, value);
    }
    // An unknown eraser or parameter is refused here, naming the registered ones.
    spec.build().with_context(|| format!("--removal {kind}"))?;
    Ok(Removal::Erase(spec))
}

#[derive(Args)]
pub struct SweepArgs {
    #[arg(long, value_enum, default_value = "context-mnist", conflicts_with = "data")]
    dataset: DatasetArg,
    #[command(flatten)]
    table: crate::own_data::TableArgs,
    /// With --data: the protected column (two values; removed from the inputs).
    #[arg(long, requires = "data", value_name = "COLUMN")]
    protected: Option<String>,
    /// With --data: share of the rows held out as the test split (halved for the probes).
    #[arg(long, requires = "data", default_value_t = 0.3)]
    test_fraction: f64,
    /// start:end:step, or a comma-separated list. For mnist-m, α is DANN's λ at the end of the
    /// ramp (Ganin et al.: 1; 0 trains on the source only).
    #[arg(long, default_value = "0:1:0.1")]
    alphas: String,
    /// Networks per α (different initialisation and batches) [default: 3; 10 with --protocol paper].
    #[arg(long)]
    repeats: Option<u64>,
    /// Whose training settings: `hedge` (Ganin-style: SGD 0.01, momentum 0.9, annealing, α
    /// ramped, batches of 64) or `paper` (Jia et al.'s, context-mnist only: 10 epochs of 32, SGD
    /// from 0.001 divided by 10 every 3 epochs, momentum 0.5, weight decay 5e-4, α held).
    #[arg(long, value_enum, default_value = "hedge", conflicts_with_all = ["steps", "batch", "no_ramp"])]
    protocol: TrainingProtocol,
    /// context-mnist: background–target agreement in the target-labelled training set and the IID test.
    #[arg(long, default_value_t = 0.95)]
    rho: f64,
    /// Training images: context-mnist target-labelled set (default 10,000); mnist-m MNIST
    /// digits and as many MNIST-M images (default 60,000).
    #[arg(long)]
    target_train: Option<usize>,
    /// context-mnist: context-labelled training images.
    #[arg(long, default_value_t = 10_000)]
    context_train: usize,
    /// Test images per test set (context-mnist default 4,000; mnist-m 10,000).
    #[arg(long)]
    test: Option<usize>,
    /// SGD steps per network (default: context-mnist 1,500, mnist-m 12,000, adult 4,000).
    #[arg(long)]
    steps: Option<usize>,
    /// Examples per step from each training set [default: 64].
    #[arg(long)]
    batch: Option<i64>,
    /// How G_f hides the concept: the paper's gradient reversal, a confusion loss, or a kernel
    /// independence penalty (HSIC) instead of an adversary.
    #[arg(long, value_enum, default_value = "reversal")]
    adversary: Adversary,
    /// How the concept is removed: `adversary` (during training, --adversary), or post hoc by a
    /// registered eraser on the frozen features of a network trained without one, with G_y
    /// retrained on top: leace (closed-form linear erasure), inlp (iterated null-space
    /// projection), quadratic-leace (an oracle reading each row's concept), mean-difference (a
    /// baseline). Post hoc, α is the erasure strength (0: none, 1: all).
    #[arg(long, default_value = "adversary")]
    removal: String,
    /// INLP's rounds of logistic regression (with --removal inlp).
    #[arg(long, default_value_t = 10)]
    inlp_iterations: usize,
    /// A parameter of the --removal eraser, KEY=VALUE (repeatable; numbers are read as numbers).
    #[arg(long = "eraser-param", value_name = "KEY=VALUE")]
    eraser_params: Vec<String>,
    /// G_p updates per feature update (1: plain GRL).
    #[arg(long, default_value_t = 1)]
    adversary_steps: usize,
    /// Re-initialise G_p every this many steps and train it alone (--adversary-reset-steps)
    /// before G_f sees it again (0: never).
    #[arg(long, default_value_t = 0)]
    adversary_reset_every: usize,
    #[arg(long, default_value_t = 200)]
    adversary_reset_steps: usize,
    /// Draw the target-labelled batches with Kamiran & Calders' reweighing weights
    /// P(y)·P(a)/P(y, a), so that in training the target is independent of the concept.
    #[arg(long)]
    reweigh: bool,
    /// β: also penalise β × the HSIC between G_y's logits and the concept within each target
    /// class (the decision's own dependence on the concept; 0: off).
    #[arg(long, default_value_t = 0.0)]
    decision_penalty: f64,
    /// How --decision-penalty measures that dependence.
    #[arg(long, value_enum, default_value = "aligned")]
    decision_penalty_form: DecisionPenaltyForm,
    /// With --adversary hsic: the kernel's σ² as a multiple of the median heuristic's (below 1: a
    /// local kernel that sees fine structure; above 1: a smooth one).
    #[arg(long, default_value_t = 1.0)]
    hsic_bandwidth: f64,
    /// Keep α fixed instead of ramping it up.
    #[arg(long)]
    no_ramp: bool,
    /// Leaky ReLU slope in G_f (0: Ganin's ReLU). A leaky G_f cannot collapse to all-dead units.
    #[arg(long, default_value_t = 0.0)]
    negative_slope: f64,
    /// End G_f in a dense layer of this many units (its output becomes the audited features;
    /// default: none, Ganin's 768 pooled conv maps).
    #[arg(long)]
    bottleneck: Option<i64>,
    /// Adam steps per probe.
    #[arg(long, default_value_t = 300)]
    probe_steps: usize,
    /// Intra-op threads for libtorch (0: its default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
    /// Continue the sweep in this directory from its last finished network (its config.json
    /// says what to run; other flags but --threads are ignored).
    #[arg(long)]
    resume: Option<PathBuf>,
}

#[derive(Args)]
pub struct Exp1Args {
    /// Background–target agreement in the target-labelled training set and the target test.
    #[arg(long, default_value_t = 0.95)]
    rho: f64,
    #[arg(long, default_value_t = 10_000)]
    target_train: usize,
    #[arg(long, default_value_t = 10_000)]
    context_train: usize,
    /// Images in the target test and in the background-only test.
    #[arg(long, default_value_t = 4_000)]
    test: usize,
    #[arg(long, default_value_t = 1500)]
    steps: usize,
    /// Whose training settings: `hedge` (SGD 0.01, momentum 0.9, Ganin's annealing, batches of
    /// 64, --steps) or `paper` (Jia et al.'s Experiment 1: 10 epochs of 32, SGD from 0.01 divided
    /// by 10 every 3 epochs, momentum 0.5, weight decay 5e-4).
    #[arg(long, value_enum, default_value = "hedge", conflicts_with = "steps")]
    protocol: TrainingProtocol,
    /// Evaluate both models every this many steps.
    #[arg(long, default_value_t = 100)]
    every: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long)]
    out: PathBuf,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

pub fn run(command: AgnosticCommand) -> Result<()> {
    match command {
        AgnosticCommand::Sweep(args) => sweep(*args),
        AgnosticCommand::Report(args) => report(args),
        AgnosticCommand::Exp1(args) => exp1(args),
        AgnosticCommand::Pareto(args) => {
            let summary = hedge_lab::agnostic::pareto::pareto(&args.sweeps, &args.out, args.overwrite)?;
            print!("{}", std::fs::read_to_string(args.out.join("pareto.md"))?);
            println!(
                "\n{} points, {} on the front; wrote {}",
                summary.points.len(),
                summary.front.len(),
                args.out.display()
            );
            Ok(())
        }
        AgnosticCommand::Maps(args) => {
            let root = hedge_data::DataRoot::from_env();
            hedge_lab::agnostic::gradcam::class_activation_report(&args.sweeps, &root, &args.out, args.overwrite)?;
            print!("{}", std::fs::read_to_string(args.out.join("maps.md"))?);
            Ok(())
        }
    }
}

fn sweep(args: SweepArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let root = hedge_data::DataRoot::from_env();
    let bar = crate::runlog::runs_bar(0, "networks");
    let progress = |done: NetworkFinished| {
        bar.set_length(done.networks as u64);
        bar.set_position(done.index as u64 + 1);
        bar.set_message(format!("α = {}, repeat {} done", done.alpha, done.repeat));
    };
    let out = if let Some(dir) = &args.resume {
        SweepConfig::resume(dir, &root, progress)?;
        dir.clone()
    } else {
        let dataset = if args.table.data.is_some() { SweepDataset::Table } else { args.dataset.into() };
        let adversary = args.adversary;
        let protocol: TrainingProtocol = args.protocol;
        let schedule = match protocol {
            TrainingProtocol::Paper => {
                if dataset != SweepDataset::ContextMnist {
                    anyhow::bail!(
                        "--protocol paper: Jia et al.'s settings are reproduced on the context-mnist analogue only; \
                         use --protocol hedge for {}",
                        dataset.name()
                    );
                }
                TrainConfig::jia(args.target_train.unwrap_or(ContextMnistConfig::default().target_train), 1e-3)
            }
            TrainingProtocol::Hedge => TrainConfig {
                ramp: !args.no_ramp,
                steps: args.steps.unwrap_or(SweepDataset::default_steps(dataset)),
                batch: args.batch.unwrap_or(64),
                ..Default::default()
            },
        };
        let train = TrainConfig {
            objective: if dataset == SweepDataset::MnistM { Objective::Dann } else { Objective::Paper },
            adversary,
            adversary_steps: args.adversary_steps,
            reset_every: args.adversary_reset_every,
            reset_steps: args.adversary_reset_steps,
            reweigh: args.reweigh,
            decision_penalty: args.decision_penalty,
            decision_penalty_form: args.decision_penalty_form,
            hsic_bandwidth: args.hsic_bandwidth,
            ..schedule
        };
        let repeats = args.repeats.unwrap_or(match protocol {
            TrainingProtocol::Paper => 10,
            TrainingProtocol::Hedge => 3,
        });
        let options = DataOptions {
            rho: args.rho,
            target_train: args.target_train,
            context_train: args.context_train,
            test: args.test,
            table: match args.table.spec() {
                Some((path, spec)) => {
                    let Some(protected) = args.protected.clone() else {
                        anyhow::bail!("--data needs --protected COLUMN: the concept to remove and audit");
                    };
                    Some(UserTable {
                        path: path.into(),
                        spec: spec.with_protected(protected),
                        test_fraction: args.test_fraction,
                        split_seed: 0,
                    })
                }
                None => None,
            },
        };
        let alphas = parse_alphas(&args.alphas).with_context(|| format!("--alphas '{}'", args.alphas))?;
        let removal = removal_of(&args.removal, args.inlp_iterations, &args.eraser_params)?;
        // Settings are checked before the data is built, the data before --out is touched.
        train.with_alpha(alphas[0]).check_ref()?;
        check_method(&removal, adversary, dataset)?;
        let model = ModelConfig::default().with_negative_slope(args.negative_slope).with_bottleneck(args.bottleneck);
        model.check_ref()?;
        let (data, description, model) = PreparedData::build(dataset, &options, model, &root)?;
        let config = SweepConfig {
            alphas,
            command: crate::command_line(),
            data: description,
            dataset,
            measured_agreement: None,
            model,
            probe_steps: args.probe_steps,
            repeats,
            threads: tch::get_num_threads(),
            train,
            removal,
            protocol,
        };
        let out = args.out.clone().expect("clap requires --out without --resume");
        config.run(&data, &out, args.overwrite, progress)?;
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
    hedge_lab::agnostic::sweep::report(&args.out)?;
    print_table(&args.out)
}

fn exp1(args: Exp1Args) -> Result<()> {
    crate::set_threads(args.threads)?;
    let config = Exp1Config {
        command: crate::command_line(),
        context_test: Exp1Config::CONTEXT_TEST.into(),
        data: ContextMnistConfig {
            rho: args.rho,
            target_train: args.target_train,
            context_train: args.context_train,
            test: args.test,
            seed: args.seed,
            ..Default::default()
        },
        every: args.every,
        model: ModelConfig::default(),
        threads: tch::get_num_threads(),
        train: match args.protocol {
            TrainingProtocol::Paper => TrainConfig { seed: args.seed, ..TrainConfig::jia(args.target_train, 1e-2) },
            TrainingProtocol::Hedge => TrainConfig { steps: args.steps, seed: args.seed, ..Default::default() },
        },
    };
    let spinner = crate::runlog::runs_bar(2, "networks");
    spinner.set_message("target model, then context model");
    let (_, table) = config.run(&hedge_data::data_dir()?, &args.out, args.overwrite)?;
    spinner.finish_and_clear();
    print!("{table}");
    Ok(())
}
