//! `hedge bayes …`: the Bayesian model toolbox from the command line.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use faer::Mat;
use hedge_bayes::gp::{GpConfig, Prediction};
use hedge_bayes::sparse::{SparseGpConfig, SparseMethod};
use hedge_bayes::KernelKind;
use hedge_data::UciDataset;
use serde_json::json;

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
    method: SparseMethodArg,
    #[arg(long)]
    restarts: Option<usize>,
    #[arg(long, default_value_t = 200)]
    max_iters: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Results directory.
    #[arg(long)]
    out: PathBuf,
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

#[derive(Clone, Copy, ValueEnum)]
pub enum KernelArg {
    /// One lengthscale per input (automatic relevance determination).
    Ard,
    /// One shared lengthscale.
    Rbf,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SparseMethodArg {
    Fitc,
    Vfe,
}

#[derive(Args, Clone)]
pub struct GpArgs {
    /// `uci/<name>`, a folder under $HEDGE_DATA_DIR (e.g. uci/yacht).
    #[arg(long)]
    dataset: String,
    /// Standard split index (index_train_K.txt / index_test_K.txt).
    #[arg(long, default_value_t = 0)]
    split: usize,
    /// Use a sparse GP with this many pseudo-inputs instead of the exact GP.
    #[arg(long)]
    sparse: Option<usize>,
    /// Sparse objective.
    #[arg(long, value_enum, default_value = "fitc")]
    method: SparseMethodArg,
    #[arg(long, value_enum, default_value = "ard")]
    kernel: KernelArg,
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
        BayesCommand::GpSuite(args) => gp_suite(args),
        BayesCommand::Lengthscales(args) => lengthscales(args),
        BayesCommand::Gibbs(args) => gibbs(args),
        BayesCommand::SpikeSlab(args) => spike_slab(args),
    }
}

/// Inputs standardised with the training split's mean and standard deviation.
pub struct Standardised {
    pub train_x: Mat<f64>,
    pub test_x: Mat<f64>,
    pub train_y: Vec<f64>,
    pub test_y: Vec<f64>,
    /// Standard deviation of each input on the training split (1 for constant columns).
    pub x_scale: Vec<f64>,
}

/// Loads `uci/<name>` split `k` and standardises its inputs on the training rows.
pub fn load_uci_split(data_dir: &Path, dataset: &str, k: usize) -> Result<(UciDataset, Standardised)> {
    let name = dataset.strip_prefix("uci/").ok_or_else(|| {
        anyhow!("--dataset '{dataset}': expected uci/<name>, e.g. uci/yacht (folders under {}/uci)", data_dir.display())
    })?;
    let data = UciDataset::load(data_dir, name)?;
    let split = data.split(k)?;
    let x = Mat::from_fn(data.rows(), data.features, |i, j| data.row(i)[j]);
    let standardiser = hedge_bayes::Standardiser::fit(x.as_ref(), &split.train);
    let take = |rows: &[usize]| standardiser.transform(x.as_ref(), rows);
    let std = Standardised {
        train_x: take(&split.train),
        test_x: take(&split.test),
        train_y: split.train.iter().map(|&i| data.targets[i]).collect(),
        test_y: split.test.iter().map(|&i| data.targets[i]).collect(),
        x_scale: standardiser.scale.clone(),
    };
    Ok((data, std))
}

fn gp(args: GpArgs) -> Result<()> {
    let report = fit_report(&args)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let r = &report;
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        let lengthscales: Vec<String> = r["lengthscales"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| format!("{:.3}", l.as_f64().unwrap_or(f64::NAN)))
            .collect();
        println!("dataset                  {} split {}", args.dataset, args.split);
        println!("model                    {}", r["model"].as_str().unwrap_or_default());
        println!("test RMSE                {:.4}", f("rmse"));
        println!("test NLL (mean)          {:.4}", f("nll"));
        println!(
            "log marginal likelihood  {:.3}{}",
            f("log_marginal_likelihood"),
            if args.sparse.is_some() { " (sparse objective)" } else { "" }
        );
        println!("signal variance          {:.4}", f("signal_variance"));
        println!("noise variance           {:.6}", f("noise_variance"));
        println!("lengthscales             {}", lengthscales.join(" "));
        println!("fit seconds              {:.2}", f("fit_seconds"));
    }
    Ok(())
}

fn gp_suite(args: GpSuiteArgs) -> Result<()> {
    // The suite resumes: a dataset whose result.json exists is reused, the others are fitted.
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut reports = Vec::new();
    for name in &args.datasets {
        let run = args.out.join(name);
        let existing = run.join("result.json");
        let report: serde_json::Value = if existing.is_file() {
            eprintln!("{name}: reusing {}", existing.display());
            serde_json::from_str(&std::fs::read_to_string(&existing)?)
                .with_context(|| format!("cannot parse {}", existing.display()))?
        } else {
            fit_report(&GpArgs {
                dataset: format!("uci/{name}"),
                split: args.split,
                sparse: args.sparse,
                method: args.method,
                kernel: KernelArg::Ard,
                restarts: args.restarts,
                max_iters: args.max_iters,
                seed: args.seed,
                json: false,
                out: Some(run),
                // The suite owns its datasets' folders (a result.json-less one is a failed fit).
                overwrite: true,
            })?
        };
        reports.push(report);
    }
    let mut md = format!(
        "GP regression, ARD-RBF kernel, standard split {} (inputs standardised on the training rows; \
         RMSE and mean test NLL on the original target scale).\n\n\
         | dataset | model | train | test | RMSE | NLL | log marginal likelihood | noise variance | fit s |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        args.split
    );
    for r in &reports {
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.4} | {:.3} | {:.1} | {:.3e} | {:.1} |\n",
            r["dataset"].as_str().unwrap_or_default(),
            r["model"].as_str().unwrap_or_default(),
            r["train_rows"],
            r["test_rows"],
            f("rmse"),
            f("nll"),
            f("log_marginal_likelihood"),
            f("noise_variance"),
            f("fit_seconds")
        ));
    }
    md.push_str(&format!("\nCommand: `{}`\n", command_line()));
    hedge_data::write_atomic(&args.out.join("table.md"), md.as_bytes())?;
    write_json(&args.out.join("summary.json"), &json!(reports))?;
    print!("{md}");
    Ok(())
}

/// Fits one GP as `args` asks and returns the report (writing the run directory if asked).
fn fit_report(args: &GpArgs) -> Result<serde_json::Value> {
    let data_dir = hedge_data::data_dir()?;
    let (data, s) = load_uci_split(&data_dir, &args.dataset, args.split)?;
    if let Some(out) = &args.out {
        // Before the fit, so minutes of optimisation never end in a refused folder.
        hedge_data::prepare_output_dir(out, args.overwrite)?;
    }
    let kernel = match args.kernel {
        KernelArg::Ard => KernelKind::Ard,
        KernelArg::Rbf => KernelKind::Rbf,
    };
    let gp_config = GpConfig::default()
        .with_kernel(kernel)
        .with_restarts(args.restarts.unwrap_or(if args.sparse.is_some() { 0 } else { 2 }))
        .with_max_iters(args.max_iters)
        .with_seed(args.seed);
    if !args.json {
        eprintln!(
            "{}: {} training and {} test rows, {} inputs, split {}; fitting {} …",
            data.name,
            s.train_y.len(),
            s.test_y.len(),
            data.features,
            args.split,
            args.sparse.map_or("the exact GP".to_string(), |m| format!("a sparse GP with {m} pseudo-inputs"))
        );
    }
    let bar = if args.json { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new_spinner() };
    bar.set_style(indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}").expect("template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    let mut observer = |p: hedge_bayes::gp::FitProgress| {
        bar.set_message(format!(
            "run {} iteration {}: objective {:.4} (standardised targets)",
            p.run, p.iteration, p.log_marginal_likelihood
        ));
    };
    let start = Instant::now();
    let fit_seconds;
    let (prediction, lml, hyper, signal, noise, runs, config_json): (Prediction, f64, _, f64, f64, _, _) =
        match args.sparse {
            None => {
                let fitted = gp_config.fit_observed(s.train_x.as_ref(), &s.train_y, &mut observer)?;
                fit_seconds = start.elapsed().as_secs_f64();
                let p = fitted.predict(s.test_x.as_ref())?;
                let runs = serde_json::to_value(&fitted.runs)?;
                (
                    p,
                    fitted.log_marginal_likelihood(),
                    fitted.hyper.clone(),
                    fitted.signal_variance(),
                    fitted.noise_variance(),
                    runs,
                    serde_json::to_value(&gp_config)?,
                )
            }
            Some(m) => {
                let method = match args.method {
                    SparseMethodArg::Fitc => SparseMethod::Fitc,
                    SparseMethodArg::Vfe => SparseMethod::Vfe,
                };
                let config = SparseGpConfig::default().with_gp(gp_config.clone()).with_inducing(m).with_method(method);
                let fitted = config.fit_observed(s.train_x.as_ref(), &s.train_y, &mut observer)?;
                fit_seconds = start.elapsed().as_secs_f64();
                let p = fitted.predict(s.test_x.as_ref())?;
                let runs = serde_json::to_value(&fitted.runs)?;
                (
                    p,
                    fitted.objective(),
                    fitted.hyper.clone(),
                    fitted.signal_variance(),
                    fitted.noise_variance(),
                    runs,
                    serde_json::to_value(&config)?,
                )
            }
        };
    bar.finish_and_clear();
    // Lengthscales in the units of the original inputs (the model sees standardised inputs).
    let lengthscales: Vec<f64> = match kernel {
        KernelKind::Ard => hyper.kernel.lengthscales.iter().zip(&s.x_scale).map(|(l, sd)| l * sd).collect(),
        KernelKind::Rbf => hyper.kernel.lengthscales.clone(),
    };
    let report = json!({
        "dataset": args.dataset,
        "split": args.split,
        "model": args.sparse.map_or("exact".to_string(), |m| format!("{}-{m}", match args.method { SparseMethodArg::Fitc => "fitc", SparseMethodArg::Vfe => "vfe" })),
        "train_rows": s.train_y.len(),
        "test_rows": s.test_y.len(),
        "rmse": prediction.rmse(&s.test_y),
        "nll": prediction.mean_nll(&s.test_y),
        "log_marginal_likelihood": lml,
        "lengthscales": lengthscales,
        "lengthscales_standardised_inputs": hyper.kernel.lengthscales,
        "signal_variance": signal,
        "noise_variance": noise,
        "fit_seconds": fit_seconds,
        "optimisation": runs,
    });
    if let Some(out) = &args.out {
        write_gp_run(out, &config_json, &report, &prediction, &s.test_y)?;
    }
    Ok(report)
}

fn write_gp_run(
    out: &Path,
    config: &serde_json::Value,
    report: &serde_json::Value,
    p: &Prediction,
    y: &[f64],
) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create run directory {}", out.display()))?;
    let config = json!({ "command": command_line(), "model": config });
    hedge_data::write_atomic(&out.join("config.json"), serde_json::to_string_pretty(&config)?.as_bytes())?;
    hedge_data::write_atomic(&out.join("result.json"), serde_json::to_string_pretty(report)?.as_bytes())?;
    let mut csv = String::from("target,mean,latent_variance,predictive_variance\n");
    for (i, t) in y.iter().enumerate() {
        csv.push_str(&format!(
            "{t},{},{},{}\n",
            p.mean[i],
            p.latent_variance[i],
            p.latent_variance[i] + p.noise_variance
        ));
    }
    hedge_data::write_atomic(&out.join("predictions.csv"), csv.as_bytes())?;
    if report["rmse"].as_f64().is_none_or(|v| !v.is_finite()) {
        bail!("the fit produced a non-finite RMSE; see {}", out.display());
    }
    Ok(())
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    hedge_data::write_atomic(path, serde_json::to_string_pretty(value)?.as_bytes())?;
    Ok(())
}

fn command_line() -> String {
    crate::command_line()
}

/// The study's true function.
fn study_function(x: f64) -> f64 {
    x.sin() + 0.5 * (2.3 * x).sin()
}

fn lengthscales(args: LengthscaleArgs) -> Result<()> {
    use hedge_bayes::gp::{fit_with, GpHyperParameters};
    use hedge_bayes::linalg::Cholesky;
    use hedge_bayes::RbfKernel;
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    if args.points == 0 || args.noise.is_nan() || args.noise <= 0.0 {
        bail!("--points must be ≥ 1 and --noise > 0 (got {} and {})", args.points, args.noise);
    }
    hedge_data::prepare_output_dir(&args.out, args.overwrite)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
    let train_x: Vec<f64> = (0..args.points).map(|_| -5.0 + 10.0 * rng.random::<f64>()).collect();
    let train_y: Vec<f64> =
        train_x.iter().map(|&x| study_function(x) + args.noise * rng.sample::<f64, _>(StandardNormal)).collect();
    let grid: Vec<f64> = (0..201).map(|i| -5.0 + 0.05 * i as f64).collect();
    let truth: Vec<f64> = grid.iter().map(|&x| study_function(x)).collect();
    let xg = Mat::from_fn(grid.len(), 1, |i, _| grid[i]);
    let xt = Mat::from_fn(train_x.len(), 1, |i, _| train_x[i]);
    let mut panels = Vec::new();
    let mut rows = Vec::new();
    for &ell in &[0.2, 0.5, 1.0, 2.0, 5.0, 10.0] {
        let hyper =
            GpHyperParameters { kernel: RbfKernel::new(1.0, vec![ell]), noise_variance: args.noise * args.noise };
        let prior = Cholesky::new(hyper.kernel.gram(xg.as_ref()).as_ref(), "the prior covariance on the grid")?;
        let l = prior.l();
        let prior_samples: Vec<Vec<f64>> = (0..3)
            .map(|_| {
                let e: Vec<f64> = (0..grid.len()).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
                (0..grid.len()).map(|i| (0..=i).map(|k| l[(i, k)] * e[k]).sum()).collect()
            })
            .collect();
        let config = GpConfig::default().with_normalise_y(false);
        let fitted = fit_with(&config, xt.as_ref(), &train_y, hyper)?;
        let p = fitted.predict(xg.as_ref())?;
        let rmse = p.rmse(&truth);
        let coverage = p
            .mean
            .iter()
            .zip(&p.latent_variance)
            .zip(&truth)
            .filter(|((m, v), t)| (*m - *t).abs() <= 2.0 * v.sqrt())
            .count() as f64
            / grid.len() as f64;
        rows.push(json!({
            "lengthscale": ell,
            "log_marginal_likelihood": fitted.log_marginal_likelihood(),
            "rmse_to_truth": rmse,
            "coverage_2sd": coverage,
            "mean_posterior_sd": p.latent_variance.iter().map(|v| v.sqrt()).sum::<f64>() / grid.len() as f64,
        }));
        panels.push(hedge_plot::StudyPanel {
            lengthscale: ell,
            grid: grid.clone(),
            truth: truth.clone(),
            prior_samples,
            posterior_sd: p.latent_variance.iter().map(|v| v.sqrt()).collect(),
            posterior_mean: p.mean,
            train: train_x.iter().copied().zip(train_y.iter().copied()).collect(),
        });
    }
    hedge_plot::lengthscale_grid(&args.out.join("lengthscales.png"), &panels)?;
    let config = json!({
        "command": command_line(),
        "function": "f(x) = sin(x) + 0.5 sin(2.3x) on [-5, 5]",
        "points": args.points, "noise_sd": args.noise, "seed": args.seed,
        "kernel": "RBF, signal variance 1, noise variance = noise_sd²",
    });
    write_json(&args.out.join("config.json"), &config)?;
    write_json(&args.out.join("lengthscales.json"), &json!(rows))?;
    let mut md = String::from(
        "| ℓ | log marginal likelihood | RMSE to f on the grid | grid points inside ±2σ | mean posterior σ |\n|---|---|---|---|---|\n",
    );
    for r in &rows {
        md.push_str(&format!(
            "| {} | {:.2} | {:.3} | {:.2} | {:.3} |\n",
            r["lengthscale"],
            r["log_marginal_likelihood"].as_f64().unwrap_or(f64::NAN),
            r["rmse_to_truth"].as_f64().unwrap_or(f64::NAN),
            r["coverage_2sd"].as_f64().unwrap_or(f64::NAN),
            r["mean_posterior_sd"].as_f64().unwrap_or(f64::NAN)
        ));
    }
    hedge_data::write_atomic(&args.out.join("lengthscales.md"), md.as_bytes())?;
    print!("{md}");
    println!("wrote {}", args.out.join("lengthscales.png").display());
    Ok(())
}

fn gibbs(args: GibbsArgs) -> Result<()> {
    use hedge_bayes::gibbs::{normal_gamma_posterior, GibbsConfig, MeanPrior};
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    if args.n == 0 || args.true_sd.is_nan() || args.true_sd <= 0.0 {
        bail!("--n must be ≥ 1 and --true-sd > 0 (got {} and {})", args.n, args.true_sd);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed.wrapping_add(12345));
    let x: Vec<f64> =
        (0..args.n).map(|_| args.true_mean + args.true_sd * rng.sample::<f64, _>(StandardNormal)).collect();
    let (a, b) = (1.0, 1.0);
    let prior = match args.prior {
        MeanPriorArg::Independent => MeanPrior::Independent { mean: 0.0, variance: 100.0 },
        MeanPriorArg::Conjugate => MeanPrior::Conjugate { mean: 0.0, kappa: 0.01 },
    };
    let config = GibbsConfig::default()
        .with_mean_prior(prior)
        .with_gamma_prior(a, b)
        .with_chains(args.chains)
        .with_samples(args.samples, args.burn_in, args.thin)
        .with_seed(args.seed);
    let start = Instant::now();
    let r = config.run(&x)?;
    let seconds = start.elapsed().as_secs_f64();
    let exact = match prior {
        MeanPrior::Conjugate { mean, kappa } => {
            let (mu_n, kappa_n, a_n, b_n) = normal_gamma_posterior(&x, mean, kappa, a, b);
            Some(
                json!({ "mu_mean": mu_n, "mu_sd": (b_n / (kappa_n * (a_n - 1.0))).sqrt(), "beta_mean": a_n / b_n, "beta_sd": a_n.sqrt() / b_n }),
            )
        }
        MeanPrior::Independent { .. } => None,
    };
    let truth = json!({ "mu": args.true_mean, "beta": 1.0 / (args.true_sd * args.true_sd) });
    let summary = json!({ "truth": truth, "mu": r.mu_summary, "beta": r.beta_summary, "exact_posterior": exact, "seconds": seconds, "draws": args.chains * args.samples });
    if let Some(out) = &args.out {
        hedge_data::prepare_output_dir(out, args.overwrite)?;
        write_json(
            &out.join("config.json"),
            &json!({ "command": command_line(), "sampler": config, "n": args.n, "true_mean": args.true_mean, "true_sd": args.true_sd }),
        )?;
        write_json(&out.join("summary.json"), &summary)?;
        let flat = |c: &[Vec<f64>]| {
            hedge_data::NpyArray::new(
                vec![c.len(), c[0].len()],
                hedge_data::NpyData::F64(c.iter().flatten().copied().collect()),
            )
        };
        hedge_data::write_npz(&out.join("draws.npz"), &[("mu", flat(&r.mu)), ("beta", flat(&r.beta))])?;
        hedge_plot::traces(&out.join("trace.png"), &[("μ", &r.mu), ("β (precision)", &r.beta)])?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
        return Ok(());
    }
    println!(
        "{} observations from N({}, {}²); {} chains × {} kept draws (burn-in {}, thin {}) in {seconds:.3} s",
        args.n, args.true_mean, args.true_sd, args.chains, args.samples, args.burn_in, args.thin
    );
    println!("{:<6} {:>8} {:>10} {:>9} {:>22} {:>9} {:>7}", "", "truth", "mean", "sd", "95% interval", "ESS", "R-hat");
    for (name, t, s) in [("μ", args.true_mean, &r.mu_summary), ("β", 1.0 / args.true_sd.powi(2), &r.beta_summary)] {
        println!(
            "{:<6} {:>8.4} {:>10.4} {:>9.4} {:>22} {:>9.0} {:>7.4}",
            name,
            t,
            s.mean,
            s.sd,
            format!("[{:.4}, {:.4}]", s.interval_95.0, s.interval_95.1),
            s.ess,
            s.r_hat
        );
    }
    if let Some(e) = exact {
        println!(
            "exact normal-gamma posterior: E[μ] = {:.4} (sd {:.4}), E[β] = {:.4} (sd {:.4})",
            e["mu_mean"].as_f64().unwrap_or(f64::NAN),
            e["mu_sd"].as_f64().unwrap_or(f64::NAN),
            e["beta_mean"].as_f64().unwrap_or(f64::NAN),
            e["beta_sd"].as_f64().unwrap_or(f64::NAN)
        );
    }
    Ok(())
}

fn spike_slab(args: SpikeSlabArgs) -> Result<()> {
    use hedge_bayes::spike_slab::SpikeSlabConfig;
    use rand::seq::index::sample;
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    if args.nonzero > args.d || args.n < 2 || args.noise.is_nan() || args.noise <= 0.0 {
        bail!(
            "need --nonzero ≤ --d, --n ≥ 2 and --noise > 0 (got {}, {}, {}, {})",
            args.nonzero,
            args.d,
            args.n,
            args.noise
        );
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
    let x = Mat::from_fn(args.n, args.d, |_, _| rng.sample::<f64, _>(StandardNormal));
    let mut truth = vec![0.0; args.d];
    let mut support = sample(&mut rng, args.d, args.nonzero).into_vec();
    support.sort_unstable();
    for &j in &support {
        let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
        truth[j] = sign * (1.0 + 2.0 * rng.random::<f64>());
    }
    let y: Vec<f64> = (0..args.n)
        .map(|i| {
            (0..args.d).map(|j| x[(i, j)] * truth[j]).sum::<f64>() + args.noise * rng.sample::<f64, _>(StandardNormal)
        })
        .collect();
    let config = SpikeSlabConfig::default().with_variances(args.spike_variance, args.slab_variance);
    let start = Instant::now();
    let fit = config.fit(x.as_ref(), &y)?;
    let seconds = start.elapsed().as_secs_f64();
    let found = fit.support();
    let false_positives: Vec<usize> = found.iter().copied().filter(|j| !support.contains(j)).collect();
    let missed: Vec<usize> = support.iter().copied().filter(|j| !found.contains(j)).collect();
    let result = json!({
        "true_support": support,
        "recovered_support": found,
        "exact_recovery": false_positives.is_empty() && missed.is_empty(),
        "false_positives": false_positives,
        "missed": missed,
        "theta": fit.theta,
        "noise_variance": fit.noise_variance,
        "true_noise_variance": args.noise * args.noise,
        "iterations": fit.iterations,
        "converged": fit.converged,
        "seconds": seconds,
        "weights": fit.weights,
        "weight_sd": fit.weight_sd,
        "true_weights": truth,
    });
    if let Some(out) = &args.out {
        hedge_data::prepare_output_dir(out, args.overwrite)?;
        write_json(
            &out.join("config.json"),
            &json!({ "command": command_line(), "em": config, "n": args.n, "d": args.d, "nonzero": args.nonzero, "noise_sd": args.noise, "seed": args.seed }),
        )?;
        write_json(&out.join("result.json"), &result)?;
        let mut csv = String::from("index,true_weight,posterior_mean,posterior_sd,included\n");
        for (j, t) in truth.iter().enumerate() {
            csv.push_str(&format!("{j},{},{},{},{}\n", t, fit.weights[j], fit.weight_sd[j], u8::from(fit.included[j])));
        }
        hedge_data::write_atomic(&out.join("weights.csv"), csv.as_bytes())?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
        return Ok(());
    }
    println!(
        "{} × {} design, {} non-zero weights, noise sd {}; EM: {} iterations ({}), {seconds:.3} s",
        args.n,
        args.d,
        args.nonzero,
        args.noise,
        fit.iterations,
        if fit.converged { "converged" } else { "iteration limit" }
    );
    println!("true support      {support:?}");
    println!("recovered support {found:?}{}", if result["exact_recovery"] == json!(true) { "  (exact)" } else { "" });
    println!("θ = {:.3}, σ² = {:.4} (true {:.4})", fit.theta, fit.noise_variance, args.noise * args.noise);
    println!("{:>5} {:>10} {:>10} {:>9}", "index", "true w", "E[w]", "sd");
    for (j, &t) in truth.iter().enumerate() {
        if t != 0.0 || fit.included[j] {
            println!("{j:>5} {:>10.4} {:>10.4} {:>9.4}", t, fit.weights[j], fit.weight_sd[j]);
        }
    }
    Ok(())
}
