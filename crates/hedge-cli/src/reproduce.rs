//! `hedge hib reproduce`: the arguments of `hedge_lab::hib::reproduce` (which trains point, MoG-1
//! and MoG-2, evaluates them and writes the paper's tables, summary.json and figures).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use hedge_embed::{HibData, NDigitProtocol, SettingsRequest};
use hedge_lab::hib::reproduce::{reproduce, table1, table2, FinishedRun, ReproduceConfig, ReproduceEnv};
use hedge_run::Experiment;
use serde::Serialize;

use crate::hib_args::{SharedSettingFlags, SplitArg};

#[derive(Args)]
pub struct ReproduceArgs {
    /// The settings every model shares, by their names in the config's serde form.
    #[command(flatten)]
    settings: ReproduceSettingFlags,
    /// Training steps per model [default: the recipe's, else 20,000; with --budget-minutes,
    /// planned from speed].
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
    #[arg(long, conflicts_with_all = ["config", "steps", "budget_minutes", "finish_planned_steps", "digits", "dim", "protocol", "split", "lr", "lr_schedule", "batch", "group", "beta_sweep", "appendix_g", "appendix_b", "curves", "no_figures", "eval_per_class"])]
    resume: Option<PathBuf>,
}

/// The settings of `hib reproduce` that every model shares, serialised under their names in the
/// config's serde form and laid over `--config` ([`SettingsRequest`]).
#[derive(Args, Serialize)]
struct ReproduceSettingFlags {
    /// Which N-digit MNIST tables: instance (the paper's tables: every class in training and
    /// in test) or open-set (test_unseen's classes never trained on; hedge's extension)
    /// [default: the recipe's, else instance].
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<NDigitProtocol>,
    #[command(flatten)]
    #[serde(flatten)]
    shared: SharedSettingFlags,
}

impl ReproduceArgs {
    /// The library's configuration of these arguments: the settings resolved and checked once
    /// (defaults ← `--config` ← the setting flags ← the length).
    fn config(&self, data: &hedge_data::DataRoot) -> Result<ReproduceConfig> {
        let serde_json::Value::Object(overrides) = serde_json::to_value(&self.settings)? else {
            unreachable!("a struct of named flags serialises as an object")
        };
        let request = SettingsRequest::new("hib reproduce's flags", overrides)
            .with_recipe(self.config.clone())
            .with_length(self.steps, self.budget_minutes);
        let hib = HibData::new(data.clone()).resolve(&request)?;
        Ok(ReproduceConfig {
            split: self.split.map_or(hib.data.protocol.main_test_split(), Into::into),
            hib,
            budget_minutes: self.budget_minutes,
            finish_planned_steps: self.finish_planned_steps,
            watch_every: self.watch_every,
            seeds: self.seeds,
            extra_seeds: self.extra_seeds,
            repeats: self.repeats,
            eval_images_per_class: self.eval_per_class,
            beta_sweep: self.beta_sweep,
            appendix_g: self.appendix_g,
            appendix_b: self.appendix_b,
            curves: self.curves,
            figures: !self.no_figures,
            command: crate::command_line(),
            ..Default::default()
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
            (reproduce(&args.config(&env.data)?, &env, &out, args.overwrite)?, out)
        }
    };
    println!("{}", table1(&summary));
    println!("{}", table2(&summary));
    println!("results in {}", out.display());
    Ok(())
}
