//! `hedge active …`: Bayesian batch active learning experiments.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use hedge_lab::active::experiment::{
    ClassificationExperiment, Experiment, RegressionExperiment, RunFinished, TABLE_FILE,
};
use hedge_lab::active::request::{ClassificationRequest, RegressionRequest};

use crate::runlog::ExperimentFolder;

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

#[derive(Args)]
pub struct ClassifyArgs {
    #[command(flatten)]
    request: ClassificationRequest,
    /// Intra-op threads for libtorch (0: its default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[command(flatten)]
    folder: ExperimentFolder,
}

#[derive(Args)]
pub struct ReportArgs {
    /// A directory written by `hedge active run` or `hedge active classify`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    request: RegressionRequest,
    #[command(flatten)]
    folder: ExperimentFolder,
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
    let out = if let Some(dir) = &args.folder.resume {
        RegressionExperiment::resume(dir, &root, progress(&bar))?;
        dir.clone()
    } else {
        let experiment = args.request.experiment(crate::command_line())?;
        let out = args.folder.out();
        experiment.run_or_resume(&root, &out, args.folder.overwrite, progress(&bar))?;
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
    let out = if let Some(dir) = &args.folder.resume {
        ClassificationExperiment::resume(dir, &root, progress(&bar))?;
        dir.clone()
    } else {
        let experiment = args.request.experiment(crate::command_line())?;
        let data = experiment.load(&root).with_context(|| {
            format!("--dataset {}: expected the four IDX files under $HEDGE_DATA_DIR/{0}", experiment.dataset)
        })?;
        let out = args.folder.out();
        experiment.run(&data, &out, args.folder.overwrite, progress(&bar))?;
        out
    };
    bar.finish_and_clear();
    print_table(&out)
}
