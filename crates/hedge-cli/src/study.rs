//! `hedge hib study`: the arguments of `hedge_lab::hib::study` (a grid of HIB runs from a plan
//! file, trained, evaluated and tabled on hedge's resumable engine).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use hedge_lab::hib::reproduce::{ReproduceData, ReproduceEnv};
use hedge_lab::hib::study::{study_table, Study, StudyPlan, StudyRecord};
use hedge_run::Experiment;

#[derive(Args)]
pub struct StudyArgs {
    /// The plan: TOML with an optional `recipe`, `steps`, `repeats`, `[settings]` every run
    /// shares, a `[grid]` of values per setting and/or `[[runs]]` by name (settings by the names
    /// a run's config.json writes).
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    plan: Option<PathBuf>,
    /// The study's folder: a new one, or this plan's own, which the command continues from its
    /// last finished run (the same command given again after any interruption).
    #[arg(long, required_unless_present_any = ["resume", "dry_run"], conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Start a new study in an --out that holds an earlier one (its files are replaced; run
    /// folders under runs/ with the same settings are continued or read back).
    #[arg(long, requires = "out")]
    overwrite: bool,
    /// Continue the study in this folder from its last finished run.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "cpu", value_parser = crate::device)]
    device: tch::Device,
    /// Print the runs the plan resolves to (name, the run whose planned steps it trains, its
    /// settings) and stop.
    #[arg(long, requires = "plan")]
    dry_run: bool,
    /// Intra-op threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

pub fn run(args: StudyArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let env = ReproduceEnv { data: hedge_data::DataRoot::from_env(), device: args.device };
    let finished = |r: StudyRecord| tracing::info!("{} finished ({} steps)", r.name, r.steps);
    let (summary, out) = match (&args.resume, &args.plan, &args.out) {
        (Some(dir), _, _) => (Study::resume(dir, &env, finished)?.1, dir.clone()),
        (None, Some(plan), out) => {
            let data = ReproduceData::new(&env);
            let study = StudyPlan::from_toml_file(plan)?.resolve(&data.images, &crate::command_line())?;
            if args.dry_run {
                for run in &study.runs {
                    let steps = match &run.steps_from {
                        Some(planner) => format!("{planner}'s planned steps"),
                        None if !run.hib.steps_planned() => "planned from its budget".into(),
                        None => format!("{} steps", run.hib.schedule.steps),
                    };
                    println!("{}: {steps}\n  {}", run.name, serde_json::to_string(&run.hib)?);
                }
                return Ok(());
            }
            let out = out.as_ref().expect("clap requires --out with --plan");
            (study.run_or_resume(&env, out, args.overwrite, finished)?, out.clone())
        }
        (None, None, _) => unreachable!("clap requires --plan without --resume"),
    };
    print!("{}", study_table(&summary));
    println!("results in {}", out.display());
    Ok(())
}
