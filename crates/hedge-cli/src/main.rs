//! `hedge`: hedged instance embeddings, concept-agnostic networks and Bayesian active learning.

mod active;
mod agnostic;
mod bayes;
mod bench;
mod hib;
mod reproduce;
mod runlog;

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
    /// Throughput benchmarks (images per second).
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Hib { command } => hib::run(command),
        Command::Active { command } => active::run(command),
        Command::Agnostic { command } => agnostic::run(command),
        Command::Bayes { command } => bayes::run(command),
        Command::Bench { command } => bench::run(command),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// Applies `--threads` (0 keeps libtorch's default: one per physical core).
pub(crate) fn set_threads(threads: usize) {
    if threads > 0 {
        tch::set_num_threads(threads as i32);
    }
}

/// The command as a user would type it from the repository root, recorded in every artefact:
/// `argv[0]` is normalised, since the binary may run from a copy.
pub(crate) fn command_line() -> String {
    std::iter::once("./target/release/hedge".to_string()).chain(std::env::args().skip(1)).collect::<Vec<_>>().join(" ")
}
