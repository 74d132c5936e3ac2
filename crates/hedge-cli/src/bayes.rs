//! `hedge bayes …`: the Bayesian model toolbox from the command line.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use hedge_bayes::gibbs::{GibbsConfig, MeanPrior};
use hedge_bayes::spike_slab::SpikeSlabConfig;
use hedge_bayes::{KernelKind, SparseMethod};
use hedge_lab::bayes::experiment::{
    gp_suite_table, GibbsDemo, GpRun, GpSuite, GpSuiteEnv, LengthscaleStudy, SpikeSlabDemo,
};
use hedge_run::Experiment;

#[derive(Subcommand)]
pub enum BayesCommand {
    /// GP regression on a UCI set's standard split: test RMSE and NLL, fitted hyper-parameters.
    Gp(GpArgs),
    /// GP regression on several UCI sets (one split): a run directory per set, `table.md` and
    /// `summary.json`. Finished sets (with a `result.json`) are reused.
    GpSuite(GpSuiteArgs),
    /// The lengthscale study: GP prior samples and posterior mean ± 2σ on a 1-D function for
    /// ℓ ∈ {0.2, 0.5, 1, 2, 5, 10}, as one PNG grid (plus a table of fit quality per ℓ).
    Lengthscales(LengthscaleArgs),
    /// Gibbs sampling of (μ, β) for normal data with known truth: posterior summaries, ESS, R-hat.
    Gibbs(GibbsArgs),
    /// EM for spike-and-slab regression on synthetic sparse data: the recovered support.
    SpikeSlab(SpikeSlabArgs),
}

#[derive(Args)]
pub struct GpSuiteArgs {
    /// UCI set names (folders under $HEDGE_DATA_DIR/uci).
    #[arg(long, value_delimiter = ',', default_value = "yacht,bostonHousing,concrete,kin8nm")]
    datasets: Vec<String>,
    #[arg(long, default_value_t = 0)]
    split: usize,
    /// Sparse GP with this many pseudo-inputs instead of the exact GP.
    #[arg(long)]
    sparse: Option<usize>,
    #[arg(long, value_enum, default_value = "fitc")]
    method: SparseMethod,
    #[arg(long)]
    restarts: Option<usize>,
    #[arg(long, default_value_t = 200)]
    max_iters: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Results directory: a new one, or this suite's own, which the command continues from its
    /// last finished fit.
    #[arg(long)]
    out: PathBuf,
    /// Start over in an --out that holds an earlier suite (its files are replaced; other files
    /// are left alone).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Args)]
pub struct LengthscaleArgs {
    /// Run directory for lengthscales.png, lengthscales.json, lengthscales.md, config.json.
    #[arg(long)]
    out: PathBuf,
    /// Training points drawn uniformly on [−5, 5].
    #[arg(long, default_value_t = 12)]
    points: usize,
    /// Standard deviation of the observation noise.
    #[arg(long, default_value_t = 0.1)]
    noise: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum MeanPriorArg {
    /// μ ~ N(0, 100) independent of β (the notes' semi-conjugate model).
    Independent,
    /// μ | β ~ N(0, 1/(0.01 β)): the posterior is known exactly and printed alongside.
    Conjugate,
}

#[derive(Args)]
pub struct GibbsArgs {
    /// Observations drawn from N(true_mean, true_sd²).
    #[arg(long, default_value_t = 50)]
    n: usize,
    #[arg(long, default_value_t = 2.0)]
    true_mean: f64,
    #[arg(long, default_value_t = 0.5)]
    true_sd: f64,
    #[arg(long, value_enum, default_value = "independent")]
    prior: MeanPriorArg,
    #[arg(long, default_value_t = 4)]
    chains: usize,
    /// Kept draws per chain.
    #[arg(long, default_value_t = 2000)]
    samples: usize,
    #[arg(long, default_value_t = 500)]
    burn_in: usize,
    #[arg(long, default_value_t = 1)]
    thin: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long)]
    json: bool,
    /// Run directory: config.json, summary.json, draws.npz (mu, beta: [chains, samples]), trace.png.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Args)]
pub struct SpikeSlabArgs {
    /// Rows of the design matrix (standard normal inputs).
    #[arg(long, default_value_t = 200)]
    n: usize,
    /// Columns (candidate weights).
    #[arg(long, default_value_t = 30)]
    d: usize,
    /// Non-zero true weights (magnitudes 1–3, random signs and positions).
    #[arg(long, default_value_t = 5)]
    nonzero: usize,
    /// Standard deviation of the observation noise.
    #[arg(long, default_value_t = 0.5)]
    noise: f64,
    /// v₀, the spike's variance relative to σ².
    #[arg(long, default_value_t = 1e-2)]
    spike_variance: f64,
    /// v₁, the slab's variance relative to σ².
    #[arg(long, default_value_t = 10.0)]
    slab_variance: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long)]
    json: bool,
    /// Run directory: config.json, result.json, weights.csv.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Args, Clone)]
pub struct GpArgs {
    /// `uci/<name>`, a folder under $HEDGE_DATA_DIR (e.g. uci/yacht).
    #[arg(long, required_unless_present = "data", conflicts_with = "data")]
    dataset: Option<String>,
    #[command(flatten)]
    table: crate::own_data::TableArgs,
    /// Split index: a standard split (index_train_K.txt / index_test_K.txt), or with --data the
    /// K-th of 20 seeded 90/10 splits of your table.
    #[arg(long, default_value_t = 0)]
    split: usize,
    /// Use a sparse GP with this many pseudo-inputs instead of the exact GP.
    #[arg(long)]
    sparse: Option<usize>,
    /// Sparse objective.
    #[arg(long, value_enum, default_value = "fitc")]
    method: SparseMethod,
    #[arg(long, value_enum, default_value = "ard")]
    kernel: KernelKind,
    /// Extra L-BFGS runs from random starts (default: 2 for the exact GP, 0 for sparse).
    #[arg(long)]
    restarts: Option<usize>,
    /// L-BFGS iterations per run.
    #[arg(long, default_value_t = 200)]
    max_iters: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
    /// Also write a run directory: config.json, result.json, predictions.csv.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

pub fn run(command: BayesCommand) -> Result<()> {
    match command {
        BayesCommand::Gp(args) => gp(args),
        BayesCommand::GpSuite(args) => gp_suite_command(args),
        BayesCommand::Lengthscales(args) => lengthscales(args),
        BayesCommand::Gibbs(args) => gibbs(args),
        BayesCommand::SpikeSlab(args) => spike_slab(args),
    }
}

/// A spinner that shows the hyper-parameter search as it goes (hidden with `--json`).
fn fit_spinner(hidden: bool) -> indicatif::ProgressBar {
    let bar = if hidden { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new_spinner() };
    bar.set_style(indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}").expect("template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    bar
}

fn show_progress(bar: &indicatif::ProgressBar) -> impl FnMut(hedge_bayes::gp::FitProgress) + '_ {
    |p| {
        bar.set_message(format!(
            "run {} iteration {}: objective {:.4} (standardised targets)",
            p.run, p.iteration, p.log_marginal_likelihood
        ))
    }
}

fn gp(args: GpArgs) -> Result<()> {
    let (dataset, table) = match args.table.spec() {
        Some((path, spec)) => (path, Some(spec)),
        None => (args.dataset.clone().expect("clap requires --dataset without --data"), None),
    };
    let run = GpRun {
        dataset,
        table,
        split: args.split,
        sparse: args.sparse,
        method: args.method,
        kernel: args.kernel,
        restarts: args.restarts,
        max_iters: args.max_iters,
        seed: args.seed,
    };
    if let Some(out) = &args.out {
        // Before the fit, so minutes of optimisation never end in a refused folder.
        hedge_run::atomic::check_output_dir(out, hedge_lab::bayes::experiment::GP_FIT_KIND, args.overwrite)?;
    }
    // Read only for the papers' UCI sets: a fit on your own CSV file needs no HEDGE_DATA_DIR.
    let root = hedge_data::DataRoot::from_env();
    let (data, split) = hedge_lab::bayes::experiment::uci_split(&root, &run.dataset, run.table.as_ref(), run.split)?;
    if !args.json {
        eprintln!(
            "{}: {} training and {} test rows, {} inputs, split {}; fitting {} …",
            data.name,
            split.train_y.len(),
            split.test_y.len(),
            data.features,
            args.split,
            args.sparse.map_or("the exact GP".to_string(), |m| format!("a sparse GP with {m} pseudo-inputs"))
        );
    }
    let bar = fit_spinner(args.json);
    let fit = run.fit_split(&data, split, show_progress(&bar))?;
    bar.finish_and_clear();
    if let Some(out) = &args.out {
        fit.write(
            &hedge_run::RunDirectory::create(out, hedge_lab::bayes::experiment::GP_FIT_KIND, args.overwrite)?,
            &crate::command_line(),
        )?;
    }
    let r = &fit.report;
    if args.json {
        println!("{}", serde_json::to_string(r)?);
        return Ok(());
    }
    let lengthscales: Vec<String> = r.lengthscales.iter().map(|l| format!("{l:.3}")).collect();
    println!("dataset                  {} split {}", run.dataset, args.split);
    println!("model                    {}", r.model);
    println!("test RMSE                {:.4}", r.rmse);
    println!("test NLL (mean)          {:.4}", r.nll);
    println!(
        "log marginal likelihood  {:.3}{}",
        r.log_marginal_likelihood,
        if args.sparse.is_some() { " (sparse objective)" } else { "" }
    );
    println!("signal variance          {:.4}", r.signal_variance);
    println!("noise variance           {:.6}", r.noise_variance);
    println!("lengthscales             {}", lengthscales.join(" "));
    println!("fit seconds              {:.2}", r.fit_seconds);
    Ok(())
}

fn gp_suite_command(args: GpSuiteArgs) -> Result<()> {
    let suite = GpSuite {
        datasets: args.datasets,
        split: args.split,
        sparse: args.sparse,
        method: args.method,
        restarts: args.restarts,
        max_iters: args.max_iters,
        seed: args.seed,
        command: crate::command_line(),
    };
    let bar = fit_spinner(false);
    let shown = bar.clone();
    let observer =
        std::rc::Rc::new(std::cell::RefCell::new(move |p: hedge_bayes::gp::FitProgress| show_progress(&shown)(p)));
    let env = GpSuiteEnv { data: hedge_data::DataRoot::from_env(), observer };
    let reports = suite.run_or_resume(&env, &args.out, args.overwrite, |r| {
        bar.suspend(|| eprintln!("{}: fitted ({:.1} s)", r.dataset, r.fit_seconds))
    })?;
    bar.finish_and_clear();
    print!("{}", gp_suite_table(suite.split, &reports, &suite.command));
    Ok(())
}

fn lengthscales(args: LengthscaleArgs) -> Result<()> {
    let study = LengthscaleStudy::new(args.points, args.noise, args.seed, &crate::command_line());
    let (_, table) = study.run(&args.out, args.overwrite)?;
    print!("{table}");
    println!("wrote {}", args.out.join("lengthscales.png").display());
    Ok(())
}

fn gibbs(args: GibbsArgs) -> Result<()> {
    let prior = match args.prior {
        MeanPriorArg::Independent => MeanPrior::Independent { mean: 0.0, variance: 100.0 },
        MeanPriorArg::Conjugate => MeanPrior::Conjugate { mean: 0.0, kappa: 0.01 },
    };
    let demo = GibbsDemo {
        command: crate::command_line(),
        n: args.n,
        sampler: GibbsConfig::default()
            .with_mean_prior(prior)
            .with_gamma_prior(1.0, 1.0)
            .with_chains(args.chains)
            .with_samples(args.samples, args.burn_in, args.thin)
            .with_seed(args.seed),
        true_mean: args.true_mean,
        true_sd: args.true_sd,
    };
    let summary = demo.run(args.out.as_deref(), args.overwrite)?;
    println!("{}", if args.json { serde_json::to_string(&summary)? } else { demo.summary_text(&summary) });
    Ok(())
}

fn spike_slab(args: SpikeSlabArgs) -> Result<()> {
    let demo = SpikeSlabDemo {
        command: crate::command_line(),
        d: args.d,
        em: SpikeSlabConfig::default().with_variances(args.spike_variance, args.slab_variance),
        n: args.n,
        noise_sd: args.noise,
        nonzero: args.nonzero,
        seed: args.seed,
    };
    let r = demo.run(args.out.as_deref(), args.overwrite)?;
    println!("{}", if args.json { serde_json::to_string(&r)? } else { demo.result_text(&r) });
    Ok(())
}
