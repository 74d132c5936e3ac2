//! `hedge`: hedged instance embeddings, concept-agnostic networks and Bayesian active learning.

mod active;
mod agnostic;
mod bayes;
mod bench;
mod data;
mod hib;
mod identification;
mod report;
mod reproduce;
mod runlog;
mod study;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "hedge", version, about = "Machine learning that knows when it is unsure")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Hedged instance embeddings on N-digit MNIST.
    Hib {
        #[command(subcommand)]
        command: hib::HibCommand,
    },
    /// Bayesian batch active learning (ACS-FW and baselines) on UCI regression sets.
    Active {
        #[command(subcommand)]
        command: active::ActiveCommand,
    },
    /// Concept-agnostic networks: gradient reversal, the α sweep and the audit.
    Agnostic {
        #[command(subcommand)]
        command: agnostic::AgnosticCommand,
    },
    /// Bayesian models: GP and sparse GP regression on UCI sets, Gibbs sampling, spike-and-slab EM.
    Bayes {
        #[command(subcommand)]
        command: bayes::BayesCommand,
    },
    /// Your own data: check a folder, .npz or CSV as the --data flags read it; export MNIST or
    /// Fashion-MNIST as an image folder.
    Data {
        #[command(subcommand)]
        command: data::DataCommand,
    },
    /// Throughput benchmarks (images per second).
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Runs a study plan: steps of any command (trainings, sweeps, experiments, evaluations,
    /// index and search), in order, resumable, each step continuing itself after an interruption.
    Study(study::PlanArgs),
    /// Writes the tables and measured sentences the READMEs include (results/<area>/report/)
    /// from the result files.
    Report(report::ReportArgs),
}

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    restart_with_malloc_tunables();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            // The HNSW crate logs every construction parameter at info level.
            "info".into()
        }))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let cli = Cli::parse();
    if let Err(e) = dispatch(cli.command) {
        eprintln!("error: {}", error_message(&e));
        std::process::exit(1);
    }
}

/// Calls the command.
fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Hib { command } => hib::run(command),
        Command::Active { command } => active::run(command),
        Command::Agnostic { command } => agnostic::run(command),
        Command::Bayes { command } => bayes::run(command),
        Command::Data { command } => data::run(command),
        Command::Bench { command } => bench::run(command),
        Command::Report(args) => report::run(args),
        Command::Study(args) => study::run_plan(args),
    }
}

/// glibc's malloc settings for hedge: no `mmap` below 1 GiB, no trimming below 4 GiB, 64 MiB of
/// top pad.
const MALLOC_TUNABLES: &str =
    "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296:glibc.malloc.top_pad=67108864";

/// Starts `hedge` once more, the same arguments, with [`MALLOC_TUNABLES`] in `GLIBC_TUNABLES`.
///
/// Why: glibc hands a freed block above its mmap threshold straight back to the kernel, so the
/// tens of megabytes of activations libtorch allocates and frees every training step are mapped
/// and faulted in anew each step. Measured with `/usr/bin/time -v` on `hib train` (3-digit
/// MNIST, D = 3, point, 40 steps, one thread): 7.6 million page faults and 19 s in the kernel
/// beside 29 s of computing under glibc's defaults; 0.14 million and 0.7 s with these settings,
/// for 80 MB more peak memory. glibc reads them only when a process starts, hence the restart
/// (the same process id: `exec`). A `GLIBC_TUNABLES` or `MALLOC_*_` variable the user set is
/// left as it is, and so is a failed `exec` (hedge then runs on glibc's defaults).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn restart_with_malloc_tunables() {
    use std::os::unix::process::CommandExt;
    let user_set = std::env::vars_os().any(|(key, _)| {
        let key = key.to_string_lossy();
        key == "GLIBC_TUNABLES" || (key.starts_with("MALLOC_") && key.ends_with('_'))
    });
    if user_set {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(exe);
    if let Some(argv0) = args.next() {
        command.arg0(argv0);
    }
    // `exec` returns only when it failed.
    let _failed = command.args(args).env("GLIBC_TUNABLES", MALLOC_TUNABLES).exec();
}

/// The error and its causes, each once (a cause whose text its parent already shows, as a
/// wrapped libtorch error's is, is not repeated), without libtorch's C++ stack trace.
fn error_message(e: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in e.chain() {
        let text = hedge_run::libtorch_message(&cause.to_string());
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// The most libtorch threads `--threads` may ask for: past a few per core they only contend,
/// and 100,000 overflowed the stack inside libtorch's thread pool.
pub(crate) const MAX_THREADS: usize = 256;

/// Applies `--threads` (0 keeps libtorch's default: one per physical core).
///
/// # Errors
/// More than [`MAX_THREADS`], refused before libtorch sees it.
pub(crate) fn set_threads(threads: usize) -> anyhow::Result<()> {
    if threads > MAX_THREADS {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        anyhow::bail!(
            "--threads {threads} is over the limit of {MAX_THREADS} (this machine has {cores} cores; \
             more threads than cores only contend): use --threads {cores} or 0 for libtorch's default"
        );
    }
    if threads > 0 {
        tch::set_num_threads(threads as i32);
    }
    Ok(())
}

/// The command as a user would type it from the repository root, recorded in every artefact:
/// `argv[0]` is normalised, since the binary may run from a copy.
/// A study's step is recorded as the step's command, not the study's.
pub(crate) fn command_line() -> String {
    if let Some(step) = STEP_COMMAND.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        return step;
    }
    std::iter::once("./target/release/hedge".to_string()).chain(std::env::args().skip(1)).collect::<Vec<_>>().join(" ")
}

/// Where a command computes: `--device` and `--threads`.
#[derive(clap::Args)]
pub(crate) struct Compute {
    /// cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "cpu", value_parser = device)]
    pub device: tch::Device,
    /// Intra-op threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

impl Compute {
    /// Applies `--threads` ([`set_threads`]) and gives the device.
    pub fn apply(&self) -> anyhow::Result<tch::Device> {
        set_threads(self.threads)?;
        Ok(self.device)
    }
}

/// The command line of the study step under way (`hedge study`).
pub(crate) static STEP_COMMAND: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// `--device`: cpu, cuda, cuda:N or auto, parsed once by clap into the device every command
/// passes down (an unknown name or an absent GPU is refused with the usage line).
pub(crate) fn device(s: &str) -> Result<tch::Device, String> {
    hedge_embed::parse_device(s).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    /// The flags the library requests bring in and the ones the commands add around them form
    /// consistent commands: every flag a `requires`, `conflicts_with` or
    /// `required_unless_present` names exists in its command, and no two share a name.
    #[test]
    fn every_command_names_only_flags_it_has() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
