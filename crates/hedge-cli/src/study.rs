//! `hedge study`: a plan of any commands, run by `hedge_lab::study` with this command line as its
//! step runner; and `hedge hib study`: a grid of HIB runs (`hedge_lab::hib::study`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser};
use hedge_lab::hib::reproduce::{ReproduceData, ReproduceEnv};
use hedge_lab::hib::study::{study_table, Study, StudyPlan, StudyRecord};
use hedge_lab::study::{self as plan, BoxedError, PlanFile, Runner, StepRecord, StepRunner, StudyStep, STEPS_LOG};
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

/// `hedge study`: a plan of steps of any command, or a HIB grid plan.
#[derive(Args)]
pub struct PlanArgs {
    /// The plan: TOML with `[[steps]]` (each a command and its flags), or a HIB grid plan (as
    /// `hedge hib study --plan` takes).
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    plan: Option<PathBuf>,
    /// The study's folder [default: the plan's `out`]: a new one, or this plan's own, which the
    /// same command given again continues at its first unfinished step.
    #[command(flatten)]
    folder: OptionalFolder,
    /// Print every step as a command line and stop.
    #[arg(long, requires = "plan")]
    dry_run: bool,
}

#[derive(Args)]
struct OptionalFolder {
    #[arg(long)]
    out: Option<PathBuf>,
    /// Start over in an --out that holds an earlier study (its log is replaced; each step's own
    /// folder is continued or refused by the step itself).
    #[arg(long)]
    overwrite: bool,
    /// Continue the study in this folder at its first unfinished step.
    #[arg(long)]
    resume: Option<PathBuf>,
}

/// Runs a step as the command it names, in this process.
struct CommandLineRunner;

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
        *crate::STEP_COMMAND.lock().unwrap_or_else(|p| p.into_inner()) = Some(step.command_line());
        let result = crate::dispatch(command);
        *crate::STEP_COMMAND.lock().unwrap_or_else(|p| p.into_inner()) = None;
        result.map_err(Into::into)
    }
}

pub fn run_plan(args: PlanArgs) -> Result<()> {
    let runner: Runner = std::sync::Arc::new(CommandLineRunner);
    let folder = &args.folder;
    let (study, out) = match (&folder.resume, &args.plan) {
        (Some(dir), _) => (plan::Study::resume(dir, &runner, |_| {})?.0, dir.clone()),
        (None, Some(path)) => {
            if !hedge_lab::study::lists_steps(path)? {
                // A HIB grid plan: one step of `hedge hib study`.
                let mut words: Vec<String> = vec!["--plan".into(), path.display().to_string()];
                match (&folder.out, args.dry_run) {
                    (_, true) => words.push("--dry-run".into()),
                    (Some(out), false) => words.extend(["--out".into(), out.display().to_string()]),
                    (None, false) => {
                        anyhow::bail!("{}: a HIB grid plan names no folder: give --out DIR", path.display())
                    }
                }
                words.extend(folder.overwrite.then(|| "--overwrite".to_string()));
                let step = StudyStep {
                    name: "hib study".into(),
                    command: vec!["hib".into(), "study".into()],
                    args: words,
                    ..Default::default()
                };
                println!("{}", step.command_line());
                return runner.run(&step).map_err(anyhow::Error::from_boxed);
            }
            let plan = PlanFile::from_toml_file(path)?;
            let study = plan.resolve(path)?;
            if args.dry_run {
                study.check_steps(runner.as_ref())?;
                print!("{}", study.table(&[]));
                return Ok(());
            }
            let out = folder.out.clone().or(plan.out).context("the plan names no `out` folder: give --out DIR")?;
            study.run_or_resume(&runner, &out, folder.overwrite, |r| tracing::info!("{} finished", r.name))?;
            (study, out)
        }
        (None, None) => unreachable!("clap requires PLAN without --resume"),
    };
    let finished = hedge_run::RunDirectory::open(&out)?.read_json_lines::<StepRecord>(STEPS_LOG)?;
    print!("{}", study.table(&finished));
    println!("study log in {}", out.display());
    Ok(())
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
