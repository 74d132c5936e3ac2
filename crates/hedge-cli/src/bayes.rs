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

#[derive(Args)]
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
}

pub fn run(command: BayesCommand) -> Result<()> {
    match command {
        BayesCommand::Gp(args) => gp(args),
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
    let d = data.features;
    let n = split.train.len() as f64;
    let mean: Vec<f64> = (0..d).map(|j| split.train.iter().map(|&i| data.row(i)[j]).sum::<f64>() / n).collect();
    let scale: Vec<f64> = (0..d)
        .map(|j| {
            let v = split.train.iter().map(|&i| (data.row(i)[j] - mean[j]).powi(2)).sum::<f64>() / n;
            if v > 0.0 {
                v.sqrt()
            } else {
                1.0
            }
        })
        .collect();
    let take = |rows: &[usize]| Mat::from_fn(rows.len(), d, |r, j| (data.row(rows[r])[j] - mean[j]) / scale[j]);
    let std = Standardised {
        train_x: take(&split.train),
        test_x: take(&split.test),
        train_y: split.train.iter().map(|&i| data.targets[i]).collect(),
        test_y: split.test.iter().map(|&i| data.targets[i]).collect(),
        x_scale: scale,
    };
    Ok((data, std))
}

fn gp(args: GpArgs) -> Result<()> {
    let data_dir = hedge_data::data_dir()?;
    let (data, s) = load_uci_split(&data_dir, &args.dataset, args.split)?;
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
    let start = Instant::now();
    let (prediction, lml, hyper, signal, noise, runs, config_json): (Prediction, f64, _, f64, f64, _, _) =
        match args.sparse {
            None => {
                let fitted = gp_config.fit(s.train_x.as_ref(), &s.train_y)?;
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
                let fitted = config.fit(s.train_x.as_ref(), &s.train_y)?;
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
    let fit_seconds = start.elapsed().as_secs_f64();
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
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let r = &report;
        println!("dataset                  {} split {}", args.dataset, args.split);
        println!("model                    {}", r["model"].as_str().unwrap_or_default());
        println!("test RMSE                {:.4}", r["rmse"].as_f64().unwrap_or(f64::NAN));
        println!("test NLL (mean)          {:.4}", r["nll"].as_f64().unwrap_or(f64::NAN));
        println!("log marginal likelihood  {lml:.3}{}", if args.sparse.is_some() { " (sparse objective)" } else { "" });
        println!("signal variance          {signal:.4}");
        println!("noise variance           {noise:.6}");
        println!(
            "lengthscales             {}",
            lengthscales.iter().map(|l| format!("{l:.3}")).collect::<Vec<_>>().join(" ")
        );
        println!("fit seconds              {fit_seconds:.2}");
    }
    Ok(())
}

fn write_gp_run(
    out: &Path,
    config: &serde_json::Value,
    report: &serde_json::Value,
    p: &Prediction,
    y: &[f64],
) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create run directory {}", out.display()))?;
    let command: Vec<String> = std::env::args().collect();
    let config = json!({ "command": command.join(" "), "model": config });
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
