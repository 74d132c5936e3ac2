//! What every multi-run experiment command shares: a progress bar over runs, the folder flags.

/// A bar counting `len` runs of what `unit` names ("runs", "networks").
pub fn runs_bar(len: u64, unit: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{bar:30}} {{pos}}/{{len}} {unit} {{elapsed_precise}} ETA {{eta}} {{msg}}"
        ))
        .expect("template"),
    );
    bar
}

use std::path::PathBuf;

use clap::Args;

/// Where an experiment writes, and whether it starts over or continues.
#[derive(Args)]
pub struct ExperimentFolder {
    /// The experiment's folder: a new one, or this experiment's own, which the same command given
    /// again continues where it stopped.
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Start over in an --out that holds an earlier experiment: the files it wrote are replaced
    /// (without it, a folder holding other files or another experiment is refused).
    #[arg(long)]
    pub overwrite: bool,
    /// Continue the experiment in this folder where it stopped (its config.json says what to
    /// run; other flags but --threads are ignored).
    #[arg(long)]
    pub resume: Option<PathBuf>,
}

impl ExperimentFolder {
    /// --out, which clap requires without --resume.
    pub fn out(&self) -> PathBuf {
        self.out.clone().expect("clap requires --out without --resume")
    }
}
