//! `hedge study`: a plan of steps of any command, run by `hedge_lab::study` with this command
//! line as its step runner, or a HIB grid plan (`hedge_lab::hib::study`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser};
use hedge_lab::hib::reproduce::{ReproduceData, ReproduceEnv};
use hedge_lab::hib::study::{study_table, Study, StudyPlan, StudyRecord};
use hedge_lab::study::{self as plan, BoxedError, PlanFile, Runner, StepRecord, StepRunner, StudyStep, STEPS_LOG};
use hedge_run::Experiment;

#[derive(Args)]
pub struct PlanArgs {
    /// The plan: TOML with `[[steps]]` (each a command and its flags), or a HIB grid plan (a
    /// `recipe`, `[settings]` every run shares, a `[grid]` and/or `[[runs]]`).
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    plan: Option<PathBuf>,
    /// The study's folder [default: the plan's `out`]: a new one, or this plan's own, which the
    /// same command given again continues where it stopped.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Start over in an --out that holds an earlier study (its log is replaced; each step's own
    /// folder, and a HIB grid's runs with the same settings, are continued or read back).
    #[arg(long)]
    overwrite: bool,
    /// Continue the study in this folder where it stopped.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Print the steps as command lines (a HIB grid: its runs and their settings) and stop.
    #[arg(long, requires = "plan")]
    dry_run: bool,
    /// A HIB grid's device and threads (a step gives its own).
    #[command(flatten)]
    compute: crate::Compute,
}

pub fn run_plan(args: PlanArgs) -> Result<()> {
    let runner: Runner = std::sync::Arc::new(CommandLineRunner { threads: tch::get_num_threads() });
    let grid = match (&args.resume, &args.plan) {
        (Some(dir), _) => {
            let config: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?)?;
            config.get("runs").is_some()
        }
        (None, Some(path)) => !hedge_lab::study::lists_steps(path)?,
        (None, None) => unreachable!("clap requires PLAN without --resume"),
    };
    if grid {
        return run_grid(&args);
    }
    let (study, out) = match (&args.resume, &args.plan) {
        (Some(dir), _) => (plan::Study::resume(dir, &runner, |_| {})?.0, dir.clone()),
        (_, path) => {
            let path = path.as_ref().expect("clap requires PLAN without --resume");
            let plan = PlanFile::from_toml_file(path)?;
            let study = plan.resolve(path)?;
            if args.dry_run {
                study.check_steps(runner.as_ref())?;
                print!("{}", study.table(&[]));
                return Ok(());
            }
            let out = args.out.clone().or(plan.out).context("the plan names no `out` folder: give --out DIR")?;
            study.run_or_resume(&runner, &out, args.overwrite, |r| tracing::info!("{} finished", r.name))?;
            (study, out)
        }
    };
    let finished = hedge_run::RunDirectory::open(&out)?.read_json_lines::<StepRecord>(STEPS_LOG)?;
    print!("{}", study.table(&finished));
    println!("study log in {}", out.display());
    Ok(())
}

/// A HIB grid plan: its runs trained, evaluated and tabled.
fn run_grid(args: &PlanArgs) -> Result<()> {
    let env = ReproduceEnv { data: hedge_data::DataRoot::from_env(), device: args.compute.apply()? };
    let finished = |r: StudyRecord| tracing::info!("{} finished ({} steps)", r.name, r.steps);
    let (summary, out) = match (&args.resume, &args.plan) {
        (Some(dir), _) => (Study::resume(dir, &env, finished)?.1, dir.clone()),
        (_, plan) => {
            let plan = plan.as_ref().expect("clap requires PLAN without --resume");
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
            let out = args.out.as_ref().context("a HIB grid plan names no folder: give --out DIR")?;
            (study.run_or_resume(&env, out, args.overwrite, finished)?, out.clone())
        }
    };
    print!("{}", study_table(&summary));
    println!("results in {}", out.display());
    Ok(())
}

/// Runs a step as the command it names, in this process.
struct CommandLineRunner {
    /// libtorch's thread count when the study started: each step starts from it, so a step
    /// without `--threads` does not inherit an earlier step's.
    threads: i32,
}

impl CommandLineRunner {
    fn parse(step: &StudyStep) -> std::result::Result<crate::Command, BoxedError> {
        let argv = std::iter::once("hedge").chain(step.command.iter().chain(&step.args).map(String::as_str));
        match crate::Cli::try_parse_from(argv) {
            Ok(crate::Cli { command: crate::Command::Study(_) }) => Err("a study's step cannot be a study".into()),
            Ok(cli) => Ok(cli.command),
            Err(e) => Err(e.render().to_string().trim_end().into()),
        }
    }
}

impl StepRunner for CommandLineRunner {
    fn check(&self, step: &StudyStep) -> std::result::Result<(), BoxedError> {
        match &step.program {
            Some(program) if program.contains('/') && !std::path::Path::new(program).is_file() => {
                Err(format!("program {program} does not exist (a path is read from where hedge runs)").into())
            }
            Some(_) => Ok(()),
            None => Self::parse(step).map(drop),
        }
    }

    fn run(&self, step: &StudyStep) -> std::result::Result<(), BoxedError> {
        if step.runs_apart() {
            return run_apart(step);
        }
        let command = Self::parse(step)?;
        tch::set_num_threads(self.threads);
        *crate::STEP_COMMAND.lock().unwrap_or_else(|p| p.into_inner()) = Some(step.command_line());
        let result = crate::dispatch(command);
        *crate::STEP_COMMAND.lock().unwrap_or_else(|p| p.into_inner()) = None;
        result.map_err(Into::into)
    }
}

/// Runs a step in a process of its own: its program (hedge itself by default) with its
/// environment, its standard output written to its file once it has succeeded.
fn run_apart(step: &StudyStep) -> std::result::Result<(), BoxedError> {
    let program = match &step.program {
        Some(program) => PathBuf::from(program),
        None => std::env::current_exe()?,
    };
    let mut child = std::process::Command::new(&program);
    child.args(step.command.iter().chain(&step.args)).envs(&step.env);
    child.stdout(if step.stdout.is_some() { std::process::Stdio::piped() } else { std::process::Stdio::inherit() });
    let output = child.spawn().map_err(|e| format!("cannot start {}: {e}", program.display()))?.wait_with_output()?;
    if !output.status.success() {
        return Err(format!("{} exited with {} (its messages are above)", step.command_line(), output.status).into());
    }
    if let Some(file) = &step.stdout {
        hedge_run::write_atomic(std::path::Path::new(file), &output.stdout)?;
    }
    Ok(())
}
