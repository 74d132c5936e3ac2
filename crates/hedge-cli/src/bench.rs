//! `hedge bench …`: throughput of the default HIB network, and seconds per GP fit.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use hedge_embed::bench::{infer_images_per_s, train_images_per_s};
use hedge_embed::{device_name, parse_device, HibConfig};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Training images/s: batch of 256 images, forward + backward + Adam, after warm-up.
    Train(BenchArgs),
    /// Inference images/s: embedding batches of 1,000 images.
    Embed(BenchArgs),
    /// Seconds per GP objective evaluation and per fit: exact GP on kin8nm-sized data,
    /// FITC/VFE on protein (45,730 rows).
    Bayes(BayesBenchArgs),
    /// Seconds per ACS-FW batch on pools of random projections (J-dimensional vectors L̂_n);
    /// `--export DIR` saves the pools and picks for `benches/acs_fw_numpy.py`.
    AcsFw(AcsFwBenchArgs),
    /// Minutes of training (2 CPU threads by default) until a recipe reaches the paper's
    /// N = 2, D = 2 Table 1 value on a test split (default: MoG-1 verification AP clean, 0.989),
    /// evaluated every --watch-every steps; stops there or at the budget.
    Recipe(RecipeBenchArgs),
}

#[derive(Args)]
pub struct RecipeBenchArgs {
    /// TOML recipe (HibConfig fields), e.g. results/hib/recipe.toml; the model kind in it picks
    /// the paper column (point, MoG-1, MoG-2).
    #[arg(long)]
    config: std::path::PathBuf,
    /// Which number must reach the paper's: ap-clean, ap-corrupt, knn-clean, knn-corrupt.
    #[arg(long, default_value = "ap-clean")]
    metric: String,
    /// test_unseen (the tables' split) or test_seen.
    #[arg(long, default_value = "test_unseen")]
    split: String,
    /// Give up after this many minutes of training.
    #[arg(long, default_value_t = 45.0)]
    budget_minutes: f64,
    /// Steps between evaluations.
    #[arg(long, default_value_t = 500)]
    watch_every: usize,
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Run directory to write (kept: monitor.jsonl is the curve).
    #[arg(long)]
    out: std::path::PathBuf,
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct AcsFwBenchArgs {
    /// Pool sizes N.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pool: Vec<usize>,
    /// Projection dimensions J (the paper's default is 10).
    #[arg(long, value_delimiter = ',', default_value = "10,100")]
    projections: Vec<usize>,
    /// Frank–Wolfe iterations per batch (the batch size b).
    #[arg(long, value_delimiter = ',', default_value = "10,100")]
    batch: Vec<usize>,
    /// Timed batches per case (after one untimed warm-up).
    #[arg(long, default_value_t = 20)]
    repeats: usize,
    /// Directory for pool_N_J.npz (vectors, picks_b) and rust.json.
    #[arg(long)]
    export: Option<std::path::PathBuf>,
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct BayesBenchArgs {
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
    /// Training rows for the exact GP (taken from kin8nm split 0).
    #[arg(long, value_delimiter = ',', default_value = "2000,5000")]
    exact_rows: Vec<usize>,
    /// Pseudo-inputs for FITC and VFE on protein split 0.
    #[arg(long, value_delimiter = ',', default_value = "256,512")]
    inducing: Vec<usize>,
    /// Timed objective-and-gradient evaluations per case.
    #[arg(long, default_value_t = 3)]
    evals: usize,
    /// Also time complete fits (L-BFGS to convergence, no restarts).
    #[arg(long)]
    fit: bool,
    /// L-BFGS iterations per fit.
    #[arg(long, default_value_t = 200)]
    max_iters: usize,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
    /// Timed steps (or batches).
    #[arg(long, default_value_t = 40)]
    steps: usize,
    /// Untimed warm-up steps.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Intra-op threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Number format of the convolutions.
    #[arg(long, value_enum, default_value = "auto")]
    precision: crate::hib::PrecisionArg,
    /// Pairs scored per pair of embedded images (1: the paper's independent pairs).
    #[arg(long, default_value_t = 1)]
    reuse: usize,
    /// Embedding dimension of the benchmarked model.
    #[arg(long, default_value_t = 2)]
    dim: usize,
}

pub fn run(command: BenchCommand) -> Result<()> {
    let (args, train) = match command {
        BenchCommand::Train(a) => (a, true),
        BenchCommand::Embed(a) => (a, false),
        BenchCommand::Bayes(a) => return bench_bayes(a),
        BenchCommand::AcsFw(a) => return bench_acs_fw(a),
        BenchCommand::Recipe(a) => return bench_recipe(a),
    };
    crate::set_threads(args.threads);
    let device = parse_device(&args.device)?;
    let precision = hedge_embed::ConvPrecision::from(args.precision).resolve(device);
    let config = HibConfig::default().with_dim(args.dim).with_conv_precision(precision);
    let infer_batch = 1000;
    // Both numbers are always measured, so one JSON object carries both keys.
    let (train_steps, infer_batches) =
        if train { (args.steps, args.steps / 4 + 1) } else { (args.steps / 4 + 1, args.steps) };
    let train_ips = train_images_per_s(&config, device, args.warmup, train_steps, args.reuse)?;
    let infer_ips = infer_images_per_s(&config, device, infer_batch, args.warmup.min(3), infer_batches)?;
    let report = serde_json::json!({
        "train_images_per_s": train_ips,
        "train_pairs_per_s": train_ips / 2.0 * args.reuse.max(1) as f64,
        "pairs_per_image_pair": args.reuse.max(1),
        "infer_images_per_s": infer_ips,
        "train_batch_images": 2 * config.batch_pairs,
        "infer_batch_images": infer_batch,
        "train_steps_timed": train_steps,
        "infer_batches_timed": infer_batches,
        "threads": tch::get_num_threads(),
        "device": device_name(device),
        "model": format!("gaussian D={} K={} on {}-digit MNIST, channels {:?}", config.dim, config.samples, config.digits, config.channels),
        "conv_precision": precision,
    });
    if args.json {
        println!("{report}");
    } else {
        println!(
            "train: {train_ips:.0} images/s (batch {} images)\ninfer: {infer_ips:.0} images/s (batch {infer_batch})\n{report}",
            2 * config.batch_pairs
        );
    }
    Ok(())
}

fn bench_bayes(args: BayesBenchArgs) -> Result<()> {
    use hedge_bayes::gp::{log_marginal_likelihood, GpConfig};
    use hedge_bayes::sparse::{sparse_objective, SparseGpConfig, SparseMethod};
    use std::time::Instant;

    let data_dir = hedge_data::data_dir()?;
    let mut rows = Vec::new();
    let time_evals = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        f()?; // warm-up (allocations, thread pool)
        let start = Instant::now();
        for _ in 0..args.evals.max(1) {
            f()?;
        }
        Ok(start.elapsed().as_secs_f64() / args.evals.max(1) as f64)
    };
    if !args.exact_rows.is_empty() {
        let (_, s) = hedge_bayes::experiment::uci_split(&data_dir, "uci/kin8nm", 0)?;
        for &n in &args.exact_rows {
            let n = n.min(s.train_y.len());
            let x = s.train_x.as_ref().subrows(0, n);
            let y = &s.train_y[..n];
            let config = GpConfig::default().with_restarts(0).with_max_iters(args.max_iters);
            let h = config.initial(x.ncols());
            let eval_s = time_evals(&mut || {
                log_marginal_likelihood(x, y, &h)?;
                Ok(())
            })?;
            let (fit_s, iterations) = if args.fit {
                let start = Instant::now();
                let fitted = config.fit(x, y)?;
                (Some(start.elapsed().as_secs_f64()), fitted.runs.first().map(|r| r.iterations))
            } else {
                (None, None)
            };
            rows.push(serde_json::json!({"model": "exact", "dataset": "kin8nm", "rows": n, "inducing": null,
                "seconds_per_evaluation": eval_s, "fit_seconds": fit_s, "iterations": iterations}));
        }
    }
    if !args.inducing.is_empty() {
        let (_, s) = hedge_bayes::experiment::uci_split(&data_dir, "uci/protein-tertiary-structure", 0)?;
        let n = s.train_y.len();
        for &m in &args.inducing {
            for method in [SparseMethod::Fitc, SparseMethod::Vfe] {
                let config = SparseGpConfig::default()
                    .with_inducing(m)
                    .with_method(method)
                    .with_gp(GpConfig::default().with_restarts(0).with_max_iters(args.max_iters));
                let h = config.gp.initial(s.train_x.ncols());
                let z = s.train_x.as_ref().subrows(0, m).to_owned();
                let eval_s = time_evals(&mut || {
                    sparse_objective(s.train_x.as_ref(), &s.train_y, z.as_ref(), &h, method, config.jitter)?;
                    Ok(())
                })?;
                let (fit_s, iterations) = if args.fit {
                    let start = Instant::now();
                    let fitted = config.fit(s.train_x.as_ref(), &s.train_y)?;
                    (Some(start.elapsed().as_secs_f64()), fitted.runs.first().map(|r| r.iterations))
                } else {
                    (None, None)
                };
                let name = match method {
                    SparseMethod::Fitc => "fitc",
                    SparseMethod::Vfe => "vfe",
                };
                rows.push(
                    serde_json::json!({"model": name, "dataset": "protein-tertiary-structure", "rows": n, "inducing": m,
                    "seconds_per_evaluation": eval_s, "fit_seconds": fit_s, "iterations": iterations}),
                );
            }
        }
    }
    let report = serde_json::json!({ "cases": rows, "threads": rayon_threads(), "evals": args.evals });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!("| model | data | rows | M | s / evaluation (value + gradient) | fit s | iterations |");
    println!("|---|---|---|---|---|---|---|");
    for r in report["cases"].as_array().into_iter().flatten() {
        let opt = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.2}"));
        println!(
            "| {} | {} | {} | {} | {:.3} | {} | {} |",
            r["model"].as_str().unwrap_or_default(),
            r["dataset"].as_str().unwrap_or_default(),
            r["rows"],
            r["inducing"].as_u64().map_or("-".to_string(), |m| m.to_string()),
            r["seconds_per_evaluation"].as_f64().unwrap_or(f64::NAN),
            opt(&r["fit_seconds"]),
            r["iterations"].as_u64().map_or("-".to_string(), |m| m.to_string()),
        );
    }
    Ok(())
}

/// Pool vectors shaped like log-likelihood changes of similar points: a shared positive mean
/// plus per-point noise of varying scale (so the norms σ_n differ), fixed seed.
fn synthetic_projections(n: usize, j: usize, seed: u64) -> faer::Mat<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let scales: Vec<f64> = (0..n).map(|_| 0.2 + rng.random::<f64>() * 2.0).collect();
    faer::Mat::from_fn(n, j, |i, _| scales[i] * (0.5 + rng.sample::<f64, _>(rand_distr::StandardNormal)))
}

fn bench_acs_fw(args: AcsFwBenchArgs) -> Result<()> {
    use hedge_active::frank_wolfe::{frank_wolfe, Projections};
    use hedge_data::{NpyArray, NpyData};
    use std::time::Instant;

    if args.projections.contains(&0) || args.batch.contains(&0) || args.pool.contains(&0) {
        anyhow::bail!("--pool, --projections and --batch must all be ≥ 1");
    }
    if let Some(dir) = &args.export {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut rows = Vec::new();
    for &n in &args.pool {
        for &j in &args.projections {
            let pool = Projections(synthetic_projections(n, j, (n * 1000 + j) as u64));
            let flat: Vec<f64> =
                (0..n).flat_map(|i| (0..j).map(move |k| (i, k))).map(|(i, k)| pool.0[(i, k)]).collect();
            let mut arrays = vec![("vectors".to_string(), NpyArray::new(vec![n, j], NpyData::F64(flat)))];
            for &b in &args.batch {
                let warm = frank_wolfe(&pool, b, false)?;
                let start = Instant::now();
                for _ in 0..args.repeats.max(1) {
                    std::hint::black_box(frank_wolfe(&pool, b, false)?);
                }
                let seconds = start.elapsed().as_secs_f64() / args.repeats.max(1) as f64;
                rows.push(serde_json::json!({"pool": n, "projections": j, "iterations": b,
                    "iterations_run": warm.picks.len(), "seconds_per_batch": seconds, "batch_points": warm.indices.len()}));
                arrays.push((
                    format!("picks_{b}"),
                    NpyArray::new(vec![warm.picks.len()], NpyData::I64(warm.picks.iter().map(|&f| f as i64).collect())),
                ));
            }
            if let Some(dir) = &args.export {
                let named: Vec<(&str, NpyArray)> = arrays.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                hedge_data::write_npz(&dir.join(format!("pool_{n}_{j}.npz")), &named)?;
            }
        }
    }
    let report = serde_json::json!({ "cases": rows, "threads": rayon_threads(), "repeats": args.repeats });
    if let Some(dir) = &args.export {
        hedge_data::write_atomic(&dir.join("rust.json"), serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!("| pool N | J | iterations b | iterations run | batch points | ms / batch |\n|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {:.3} |",
            r["pool"],
            r["projections"],
            r["iterations"],
            r["iterations_run"],
            r["batch_points"],
            r["seconds_per_batch"].as_f64().unwrap_or(f64::NAN) * 1e3
        );
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn bench_recipe(args: RecipeBenchArgs) -> Result<()> {
    use hedge_data::NDigitSplit;
    use hedge_embed::experiment::{paper_column, train_run, TrainPlan};
    use hedge_embed::monitor::{QualityTarget, QuickMetric};
    crate::set_threads(args.threads);
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("cannot read --config '{}'", args.config.display()))?;
    let mut config: HibConfig = toml::from_str(&text)
        .with_context(|| format!("--config '{}' is not a valid HIB recipe", args.config.display()))?;
    config = config.with_digits(2).with_dim(2).with_steps(hedge_embed::run_eval::PLANNED_STEPS_PLACEHOLDER);
    config.check()?;
    let metric = match args.metric.as_str() {
        "ap-clean" => QuickMetric::ApClean,
        "ap-corrupt" => QuickMetric::ApCorrupt,
        "knn-clean" => QuickMetric::KnnClean,
        "knn-corrupt" => QuickMetric::KnnCorrupt,
        other => anyhow::bail!("--metric '{other}': use ap-clean, ap-corrupt, knn-clean or knn-corrupt"),
    };
    let split = NDigitSplit::parse(&args.split)?;
    if split == NDigitSplit::Train {
        anyhow::bail!("--split train: the benchmark measures test_seen or test_unseen");
    }
    let column = paper_column(&config).context("the paper reports point, MoG-1 and MoG-2 only")?;
    let paper = hedge_embed::paper::table1(2, 2).and_then(|t| t.model(column).copied()).context("paper table")?;
    let target = metric.paper_value(&paper);
    let device = tch::Device::Cpu;
    config.conv_precision = config.conv_precision.resolve(device);
    let plan = TrainPlan {
        budget_minutes: Some(args.budget_minutes),
        watch_every: args.watch_every,
        watch_splits: vec![split],
        target: Some(QualityTarget { set: split.name().into(), metric, value: target }),
        ..Default::default()
    };
    let run = hedge_embed::new_run(&args.out, false, &config, &plan, device, &crate::command_line())?;
    let trainer = train_run(&run, &config, device, false, &plan, |e| {
        if let hedge_embed::TrainEvent::Monitor(r) = e {
            if let Some(q) = r.sets.get(split.name()) {
                tracing::info!(
                    "{:.1} min, step {}: {} {:.4}",
                    r.train_seconds / 60.0,
                    r.step,
                    metric.label(),
                    metric.of(q)
                );
            }
        }
    })?;
    let records: Vec<hedge_embed::MonitorRecord> = run.read_json_lines(hedge_embed::run::MONITOR_FILE)?;
    let r =
        hedge_embed::monitor::first_reaching(&records, split.name(), metric, target).context("no evaluation ran")?;
    let report = serde_json::json!({
        "model": column,
        "split": split.name(),
        "metric": metric.label(),
        "paper": target,
        "reached": r.reached_at_seconds.is_some(),
        "minutes_to_paper": r.reached_at_seconds.map(|s| s / 60.0),
        "step": r.reached_at_step,
        "best": r.best,
        "best_at_minutes": r.best_at_seconds / 60.0,
        "trained_minutes": trainer.seconds() / 60.0,
        "threads": tch::get_num_threads(),
        "config": args.config.display().to_string(),
    });
    if args.json {
        println!("{report}");
    } else {
        match r.reached_at_seconds {
            Some(s) => println!(
                "{} reached the paper's {} = {target:.3} on {} after {:.1} minutes of training (step {})",
                column,
                metric.label(),
                split.name(),
                s / 60.0,
                r.reached_at_step.unwrap_or(0)
            ),
            None => println!(
                "{} did not reach the paper's {} = {target:.3} on {} within {} minutes; best {:.4} at {:.1} minutes",
                column,
                metric.label(),
                split.name(),
                args.budget_minutes,
                r.best,
                r.best_at_seconds / 60.0
            ),
        }
    }
    Ok(())
}
