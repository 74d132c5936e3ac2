//! `hedge hib reproduce`: the arguments of `hedge_lab::hib::reproduce` (which trains point, MoG-1
//! and MoG-2, evaluates them and writes the paper's tables, summary.json and figures).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use hedge_lab::hib::reproduce::{reproduce, table1, table2, FinishedRun, ReproduceConfig, ReproduceEnv};
use hedge_lab::hib::request::ReproduceRequest;
use hedge_run::Experiment;

#[derive(Args)]
pub struct ReproduceArgs {
    #[command(flatten)]
    request: ReproduceRequest,
    #[command(flatten)]
    compute: crate::Compute,
    /// Output folder, e.g. results/hib/n2-d2 (must not exist or be empty, unless --overwrite).
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Start a new reproduction in a --out that holds an earlier one: its tables, summary and
    /// log are replaced; each run folder in runs/ that holds a run of the same configuration is
    /// continued or read back, not trained again (remove runs/ to retrain).
    #[arg(long, requires = "out")]
    overwrite: bool,
    /// Continue the reproduction in this folder from its last finished run (a run under way
    /// continues from its own last checkpoint).
    #[arg(long, conflicts_with_all = ["config", "steps", "budget_minutes", "finish_planned_steps", "digits", "dim", "protocol", "split", "lr", "lr_schedule", "batch", "group", "beta_sweep", "appendix_g", "appendix_b", "curves", "no_figures", "eval_per_class"])]
    resume: Option<PathBuf>,
}

pub fn run(args: ReproduceArgs) -> Result<()> {
    let env = ReproduceEnv { data: hedge_data::DataRoot::from_env(), device: args.compute.apply()? };
    let finished = |r: FinishedRun| tracing::info!("{} seed {} finished ({} steps)", r.model, r.seed, r.steps);
    let (summary, out) = match &args.resume {
        Some(dir) => (ReproduceConfig::resume(dir, &env, finished)?.1, dir.clone()),
        None => {
            let out = args.out.clone().expect("clap requires --out without --resume");
            (reproduce(&args.request.config(&env.data, crate::command_line())?, &env, &out, args.overwrite)?, out)
        }
    };
    println!("{}", table1(&summary));
    println!("{}", table2(&summary));
    println!("results in {}", out.display());
    Ok(())
}
