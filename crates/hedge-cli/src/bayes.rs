//! `hedge bayes …`: the Bayesian model toolbox from the command line.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use hedge_lab::bayes::experiment::{gp_suite_table, GpSuiteEnv};
use hedge_lab::bayes::request::{GibbsRequest, GpRequest, GpSuiteRequest, LengthscaleRequest, SpikeSlabRequest};
use hedge_run::Experiment;

#[derive(Subcommand)]
pub enum BayesCommand {
    /// GP regression on a UCI set's standard split: test RMSE and NLL, fitted hyper-parameters
    /// (--out: config.json, result.json, predictions.csv).
    Gp(GpArgs),
    /// GP regression on several UCI sets (one split): a run directory per set, `table.md` and
    /// `summary.json`. Finished sets (with a `result.json`) are reused.
    GpSuite(GpSuiteArgs),
    /// The lengthscale study: GP prior samples and posterior mean ± 2σ on a 1-D function for
    /// ℓ ∈ {0.2, 0.5, 1, 2, 5, 10}, as one PNG grid (plus a table of fit quality per ℓ).
    Lengthscales(LengthscaleArgs),
    /// Gibbs sampling of (μ, β) for normal data with known truth: posterior summaries, ESS, R-hat
    /// (--out: config.json, summary.json, draws.npz with mu and beta `[chains, samples]`, trace.png).
    Gibbs(GibbsArgs),
    /// EM for spike-and-slab regression on synthetic sparse data: the recovered support (--out:
    /// config.json, result.json, weights.csv).
    SpikeSlab(SpikeSlabArgs),
}

#[derive(Args)]
pub struct GpSuiteArgs {
    #[command(flatten)]
    request: GpSuiteRequest,
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
    #[command(flatten)]
    request: LengthscaleRequest,
    /// Run directory for lengthscales.png, lengthscales.json, lengthscales.md, config.json.
    #[arg(long)]
    out: PathBuf,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

/// How a demonstration reports, and where it writes.
#[derive(Args)]
pub struct DemoOutput {
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
    /// Also write a run directory (the command's description lists its files).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the files an earlier run wrote in --out (without it, a folder holding files is refused).
    #[arg(long)]
    overwrite: bool,
}

#[derive(Args)]
pub struct GibbsArgs {
    #[command(flatten)]
    request: GibbsRequest,
    #[command(flatten)]
    output: DemoOutput,
}

#[derive(Args)]
pub struct SpikeSlabArgs {
    #[command(flatten)]
    request: SpikeSlabRequest,
    #[command(flatten)]
    output: DemoOutput,
}

#[derive(Args)]
pub struct GpArgs {
    #[command(flatten)]
    request: GpRequest,
    #[command(flatten)]
    output: DemoOutput,
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
    let run = args.request.run()?;
    let DemoOutput { json, out, overwrite } = &args.output;
    if let Some(out) = out {
        // Before the fit, so minutes of optimisation never end in a refused folder.
        hedge_run::atomic::check_output_dir(out, hedge_lab::bayes::experiment::GP_FIT_KIND, *overwrite)?;
    }
    // Read only for the papers' UCI sets: a fit on your own CSV file needs no HEDGE_DATA_DIR.
    let root = hedge_data::DataRoot::from_env();
    let (data, split) = hedge_lab::bayes::experiment::uci_split(&root, &run.dataset, run.table.as_ref(), run.split)?;
    if !json {
        eprintln!(
            "{}: {} training and {} test rows, {} inputs, split {}; fitting {} …",
            data.name,
            split.train_y.len(),
            split.test_y.len(),
            data.features,
            run.split,
            run.sparse.map_or("the exact GP".to_string(), |m| format!("a sparse GP with {m} pseudo-inputs"))
        );
    }
    let bar = fit_spinner(*json);
    let fit = run.fit_split(&data, split, show_progress(&bar))?;
    bar.finish_and_clear();
    if let Some(out) = out {
        fit.write(
            &hedge_run::RunDirectory::create(out, hedge_lab::bayes::experiment::GP_FIT_KIND, *overwrite)?,
            &crate::command_line(),
        )?;
    }
    let r = &fit.report;
    if *json {
        println!("{}", serde_json::to_string(r)?);
        return Ok(());
    }
    let lengthscales: Vec<String> = r.lengthscales.iter().map(|l| format!("{l:.3}")).collect();
    println!("dataset                  {} split {}", run.dataset, run.split);
    println!("model                    {}", r.model);
    println!("test RMSE                {:.4}", r.rmse);
    println!("test NLL (mean)          {:.4}", r.nll);
    println!(
        "log marginal likelihood  {:.3}{}",
        r.log_marginal_likelihood,
        if run.sparse.is_some() { " (sparse objective)" } else { "" }
    );
    println!("signal variance          {:.4}", r.signal_variance);
    println!("noise variance           {:.6}", r.noise_variance);
    println!("lengthscales             {}", lengthscales.join(" "));
    println!("fit seconds              {:.2}", r.fit_seconds);
    Ok(())
}

fn gp_suite_command(args: GpSuiteArgs) -> Result<()> {
    let suite = args.request.suite(crate::command_line());
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
    let (_, table) = args.request.study(&crate::command_line()).run(&args.out, args.overwrite)?;
    print!("{table}");
    println!("wrote {}", args.out.join("lengthscales.png").display());
    Ok(())
}

fn gibbs(args: GibbsArgs) -> Result<()> {
    let demo = args.request.demo(crate::command_line());
    let summary = demo.run(args.output.out.as_deref(), args.output.overwrite)?;
    println!("{}", if args.output.json { serde_json::to_string(&summary)? } else { demo.summary_text(&summary) });
    Ok(())
}

fn spike_slab(args: SpikeSlabArgs) -> Result<()> {
    let demo = args.request.demo(crate::command_line());
    let r = demo.run(args.output.out.as_deref(), args.output.overwrite)?;
    println!("{}", if args.output.json { serde_json::to_string(&r)? } else { demo.result_text(&r) });
    Ok(())
}
