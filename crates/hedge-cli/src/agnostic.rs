//! `hedge agnostic …`: concept-agnostic networks (gradient reversal) and their audit.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use hedge_lab::agnostic::request::{Exp1Request, SweepRequest};
use hedge_lab::agnostic::sweep::{NetworkFinished, SweepConfig, TABLE_FILE};
use hedge_run::Experiment;

use crate::runlog::ExperimentFolder;

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
    /// The probe ladder (linear, quadratic, RBF kernel, tuned MLP, random forest) on your own
    /// frozen features: fresh probes fitted on the train rows and scored on the test rows, and
    /// with the task classifier's logits the same ladder on those (the decision floor). Reads an
    /// .npz archive (numpy.savez) with train_features, train_concept, test_features,
    /// test_concept and optionally train_decisions, test_decisions; prints a table, or the
    /// audit as JSON.
    Audit(AuditArgs),
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
pub struct AuditArgs {
    /// The .npz archive of features, concepts and (optionally) decisions.
    #[arg(long)]
    arrays: PathBuf,
    /// Adam steps of every gradient-trained probe.
    #[arg(long, default_value_t = 500)]
    steps: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print the audit as JSON (hedge_agnostic::ladder::LadderAudit) instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// A directory written by `hedge agnostic sweep`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
pub struct SweepArgs {
    #[command(flatten)]
    request: SweepRequest,
    /// Intra-op threads for libtorch (0: its default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[command(flatten)]
    folder: ExperimentFolder,
}

#[derive(Args)]
pub struct Exp1Args {
    #[command(flatten)]
    request: Exp1Request,
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
        AgnosticCommand::Audit(args) => {
            anyhow::ensure!(args.steps > 0, "--steps must be at least 1 (the default is 500)");
            let config = hedge_agnostic::ladder::LadderConfig::default().with_steps(args.steps);
            let audit = hedge_agnostic::ladder::audit_arrays_file(&args.arrays, &config, args.seed)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&audit)?);
            } else {
                print!("{}\n{}\n", audit.to_markdown(), audit.verdict(0.01));
            }
            Ok(())
        }
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
    let out = if let Some(dir) = &args.folder.resume {
        SweepConfig::resume(dir, &root, progress)?;
        dir.clone()
    } else {
        let (config, data) = args.request.prepare(crate::command_line(), &root)?;
        let out = args.folder.out();
        // The same sweep started again continues (a study calls it so after an interruption).
        if !args.folder.overwrite && out.join("sealed-config.json").is_file() {
            config.run_or_resume(&root, &out, false, progress)?;
        } else {
            config.run(&data, &out, args.folder.overwrite, progress)?;
        }
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
    let config = args.request.experiment(crate::command_line());
    let spinner = crate::runlog::runs_bar(2, "networks");
    spinner.set_message("target model, then context model");
    let (_, table) = config.run(&hedge_data::data_dir()?, &args.out, args.overwrite)?;
    spinner.finish_and_clear();
    print!("{table}");
    Ok(())
}
