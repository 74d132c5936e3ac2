//! `hedge hib reproduce`: the arguments of `hedge_lab::hib::reproduce` (which trains point, MoG-1
//! and MoG-2, evaluates them and writes the paper's tables, summary.json and figures).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use hedge_embed::{HibConfig, NDigitProtocol};
use hedge_lab::hib::reproduce::{reproduce, table1, table2, FinishedRun, ReproduceConfig, ReproduceEnv};
use hedge_run::Experiment;

use crate::hib_args::SplitArg;
use hedge_embed::LrSchedule;

#[derive(Args)]
pub struct ReproduceArgs {
    /// Digits per image (N).
    #[arg(long, default_value_t = 2)]
    digits: usize,
    /// Embedding dimension (D).
    #[arg(long, default_value_t = 2)]
    dim: usize,
    /// Training steps per model (default 20,000; with --budget-minutes, planned from speed).
    #[arg(long)]
    steps: Option<usize>,
    /// Minutes of training per model (evaluation excluded): the step count is planned from the
    /// speed of the first steps so that schedules end on time.
    #[arg(long)]
    budget_minutes: Option<f64>,
    /// With --budget-minutes: train every planned step even if the machine slows down after
    /// planning (the budget then fixes the step count, not the stop), so other work beside a
    /// long reproduction changes its wall-clock, not its numbers.
    #[arg(long, requires = "budget_minutes")]
    finish_planned_steps: bool,
    /// TOML recipe (any HibConfig fields: schedule, levers, batch) applied to every model;
    /// the flags below override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Which N-digit MNIST tables: instance (the paper's tables: every class in training and
    /// in test) or open-set (test_unseen's classes never trained on; hedge's extension)
    /// [default: the recipe's, else instance].
    #[arg(long, value_enum)]
    protocol: Option<NDigitProtocol>,
    /// The test split Tables 1 and 2 are computed on [default: test (instance) or test_unseen
    /// (open-set), test_seen then beside it].
    #[arg(long, value_enum)]
    split: Option<SplitArg>,
    /// Evaluate the validation images or classes (if the recipe holds some out) and the
    /// tables' split every N steps during training (monitor.jsonl; quality against wall-clock;
    /// validation alone chooses model_best.safetensors, which every split is scored with).
    #[arg(long, default_value_t = 0)]
    watch_every: usize,
    /// Seeds per model of Table 1 (point, MoG-1, MoG-2; results are averaged).
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Seeds for the extra models: Table 5's beta = 0 and Appendix B's margins (the paper
    /// reports one run of each).
    #[arg(long, default_value_t = 1)]
    extra_seeds: u64,
    /// Repeats of the sampling-dependent evaluation.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Evaluate on the first N images of every test class only: a smoke test or quick look,
    /// recorded in summary.json and every eval.json (the tables beside the paper use all).
    #[arg(long, value_name = "N")]
    eval_per_class: Option<usize>,
    /// Adam learning rate.
    #[arg(long)]
    lr: Option<f64>,
    /// Learning-rate schedule (default: the recipe's, else constant).
    #[arg(long, value_enum)]
    lr_schedule: Option<LrSchedule>,
    /// Grouped batches CLASSESxIMAGES (e.g. 32x8) instead of the paper's 128 independent pairs.
    #[arg(long, value_name = "CLASSESxIMAGES")]
    group: Option<String>,
    /// Also train MoG-1 with beta = 0 (Table 5).
    #[arg(long)]
    beta_sweep: bool,
    /// Also write Tables 6 and 7 (plurality KNN, gallery/probe variants).
    #[arg(long)]
    appendix_g: bool,
    /// Also train point embeddings with the hard contrastive loss at these margins (Appendix B).
    #[arg(long)]
    appendix_b: bool,
    /// Also evaluate every kept checkpoint (each 1,000 steps) and plot quality against steps.
    #[arg(long)]
    curves: bool,
    /// Leave the figures out (a numbers-only look; the figures take seconds each).
    #[arg(long)]
    no_figures: bool,
    #[arg(long, default_value = "cpu", value_parser = crate::hib_args::device)]
    device: tch::Device,
    #[arg(long, default_value_t = 0)]
    threads: usize,
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
    #[arg(long, conflicts_with_all = ["config", "steps", "budget_minutes", "finish_planned_steps", "protocol", "split", "lr", "lr_schedule", "group", "beta_sweep", "appendix_g", "appendix_b", "curves", "no_figures", "eval_per_class"])]
    resume: Option<PathBuf>,
}

impl ReproduceArgs {
    /// The library's configuration of these arguments (the recipe file read and parsed).
    fn config(&self) -> Result<ReproduceConfig> {
        let recipe = match &self.config {
            Some(path) => Some(HibConfig::from_toml_file(path).context("--config")?),
            None => None,
        };
        let protocol: NDigitProtocol = match (self.protocol, &recipe) {
            (Some(p), _) => p,
            (None, Some(r)) => r.protocol,
            (None, None) => NDigitProtocol::Instance,
        };
        Ok(ReproduceConfig {
            digits: self.digits,
            dim: self.dim,
            steps: self.steps,
            budget_minutes: self.budget_minutes,
            finish_planned_steps: self.finish_planned_steps,
            recipe,
            protocol,
            split: self.split.map_or(protocol.main_test_split(), Into::into),
            watch_every: self.watch_every,
            seeds: self.seeds,
            extra_seeds: self.extra_seeds,
            repeats: self.repeats,
            eval_images_per_class: self.eval_per_class,
            learning_rate: self.lr,
            lr_schedule: self.lr_schedule,
            group: self.group.clone(),
            beta_sweep: self.beta_sweep,
            appendix_g: self.appendix_g,
            appendix_b: self.appendix_b,
            curves: self.curves,
            figures: !self.no_figures,
            command: crate::command_line(),
        })
    }
}

pub fn run(args: ReproduceArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let env = ReproduceEnv { data: hedge_data::DataRoot::from_env(), device: args.device };
    let finished = |r: FinishedRun| tracing::info!("{} seed {} finished ({} steps)", r.model, r.seed, r.steps);
    let (summary, out) = match &args.resume {
        Some(dir) => (ReproduceConfig::resume(dir, &env, finished)?.1, dir.clone()),
        None => {
            let out = args.out.clone().expect("clap requires --out without --resume");
            (reproduce(&args.config()?, &env, &out, args.overwrite)?, out)
        }
    };
    println!("{}", table1(&summary));
    println!("{}", table2(&summary));
    println!("results in {}", out.display());
    Ok(())
}
