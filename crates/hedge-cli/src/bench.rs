//! `hedge bench …`: throughput of the default HIB network, and seconds per GP fit.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use hedge_embed::HibConfig;
use hedge_lab::active::bench::AcsFwBench;
use hedge_lab::bayes::bench::GpBench;
use hedge_lab::hib::bench::{throughput, RecipeBench};

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
    /// Minutes of training (2 CPU threads by default) until a recipe reaches each of the paper's
    /// four N = 2, D = 2 Table 1 values for its model (AP clean and corrupt, KNN clean and
    /// corrupt) on the protocol's test split and on its validation images, evaluated every
    /// --watch-every steps; stops when the validation images reach all four (never on test) or at
    /// the budget.
    Recipe(RecipeBenchArgs),
    /// Executions/s and panics of the parsers' fuzz targets (IDX, npy, npz, UCI, Adult, JPEG,
    /// TOML configs, HNSW graph files) under hedge's mutation fuzzer; inputs that panic are
    /// written to --out.
    Fuzz(FuzzBenchArgs),
    /// Identification's ANN stage: HNSW build and query throughput, recall@10 against exact
    /// search and memory for a gallery of 10⁶ embedding means (D = 2, 3, 16) on this machine.
    Search(crate::identification::SearchBenchArgs),
    /// Identification of probabilistic embeddings: search in a loss's exact space (one graph
    /// point per item) beside means-first search re-ranked by its closed form, on synthetic
    /// Gaussian embeddings: build seconds, queries/s and recall@10 of the exact top 10.
    ExactSearch(crate::identification::ExactSearchBenchArgs),
    /// Quadrature of HIB's match probability: the worst relative error of the Gauss-Hermite
    /// product rule and of the polar rule by node count, against a 96-node polar reference,
    /// over a grid of Gaussian pairs in D = 1, 2, 3.
    Quadrature(QuadratureBenchArgs),
}

#[derive(Args)]
pub struct QuadratureBenchArgs {
    /// Nodes per axis to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,5,6,8,12,16,24,32")]
    points: Vec<usize>,
    /// Also write the study as JSON to this file.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct FuzzBenchArgs {
    /// Targets: idx, npy, npz, uci, adult, jpeg, csv, png, image-npz, toml, ann-graph.
    #[arg(long, value_delimiter = ',', default_value = "idx,npy,npz,uci,adult,jpeg,csv,png,image-npz,toml,ann-graph")]
    target: Vec<String>,
    /// Seconds per target (the campaign of issue 17: 600).
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Seed of the mutation stream.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Folder for `report.json` and any input that made a parser panic (`<target>-<n>.bin`).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Instead of fuzzing, write each target's seed inputs to `SEEDS/<target>/seed-<n>` (the
    /// starting corpora of the coverage-guided campaign, `scripts/fuzz-campaign.sh`) and stop.
    #[arg(long, conflicts_with = "out")]
    seeds: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct RecipeBenchArgs {
    /// TOML recipe (HibConfig fields), e.g. results/hib/recipe.toml; the model kind in it picks
    /// the paper column (point, MoG-1, MoG-2).
    #[arg(long)]
    config: std::path::PathBuf,
    /// Which tables: instance (the paper's; reports `test`) or open-set (reports `test_unseen`)
    /// [default: the recipe's].
    #[arg(long, value_enum)]
    protocol: Option<hedge_data::NDigitProtocol>,
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
    #[command(flatten)]
    bench: AcsFwBench,
    /// Directory for pool_N_J.npz (vectors, picks_b), streamed pools (pool_N_J.npy) and rust.json.
    #[arg(long)]
    export: Option<std::path::PathBuf>,
    /// Replace what an earlier export wrote in --export (without it, a folder holding files is
    /// refused).
    #[arg(long, requires = "export")]
    overwrite: bool,
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct BayesBenchArgs {
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    bench: GpBench,
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
    #[command(flatten)]
    compute: crate::Compute,
    /// Number format of the convolutions.
    #[arg(long, value_enum, default_value = "auto")]
    precision: hedge_embed::ConvPrecision,
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
        BenchCommand::Fuzz(a) => return bench_fuzz(a),
        BenchCommand::Search(a) => return crate::identification::bench(a),
        BenchCommand::ExactSearch(a) => return crate::identification::bench_exact(a),
        BenchCommand::Quadrature(a) => return bench_quadrature(a),
    };
    let device = args.compute.apply()?;
    let precision = args.precision.resolve(device)?;
    let config = HibConfig::default().with_dim(args.dim).with_conv_precision(precision);
    // Both numbers are always measured, so one JSON object carries both keys.
    let (train_steps, infer_batches) =
        if train { (args.steps, args.steps / 4 + 1) } else { (args.steps / 4 + 1, args.steps) };
    let report = throughput(&config, device, args.warmup, train_steps, infer_batches, args.reuse)?;
    let json = serde_json::to_string(&report)?;
    if args.json {
        println!("{json}");
    } else {
        println!(
            "train: {:.0} images/s (batch {} images)\ninfer: {:.0} images/s (batch {})\n{json}",
            report.train_images_per_s, report.train_batch_images, report.infer_images_per_s, report.infer_batch_images
        );
    }
    Ok(())
}

fn bench_quadrature(args: QuadratureBenchArgs) -> Result<()> {
    if let Some(out) = &args.out {
        hedge_run::atomic::check_output_file(out, "--out", false, |_| false)?;
    }
    if args.points.iter().any(|&p| !(1..=64).contains(&p)) {
        anyhow::bail!("--points {:?}: give node counts from 1 to 64", args.points);
    }
    println!("| D | rule | points per axis | nodes per pair | worst relative error | worst absolute error |");
    println!("|---|---|---|---|---|---|");
    let study = hedge_lab::hib::quadrature::quadrature_study(&args.points, |r| {
        println!(
            "| {} | {} | {} | {} | {:.2e} | {:.2e} |",
            r.dim, r.rule, r.points, r.nodes, r.max_relative_error, r.max_absolute_error
        )
    })?;
    for (dim, points) in &study.chosen {
        println!("D = {dim}: hedge's quadrature is within {} at {points} points per axis", study.tolerance);
    }
    if let Some(out) = &args.out {
        hedge_run::write_atomic(out, serde_json::to_string_pretty(&study)?.as_bytes())?;
    }
    Ok(())
}

fn bench_bayes(args: BayesBenchArgs) -> Result<()> {
    let report = args.bench.run(&hedge_data::DataRoot::from_env())?;
    println!("{}", if args.json { serde_json::to_string(&report)? } else { report.markdown() });
    Ok(())
}

fn bench_acs_fw(args: AcsFwBenchArgs) -> Result<()> {
    let bench = args.bench;
    if let Some(dir) = &args.export {
        hedge_run::atomic::check_output_dir(dir, hedge_lab::active::bench::ACS_FW_EXPORT_KIND, args.overwrite)?;
    }
    let report = bench.run(args.export.as_deref(), args.overwrite)?;
    println!("{}", if args.json { serde_json::to_string(&report)? } else { report.markdown() });
    Ok(())
}

fn bench_recipe(args: RecipeBenchArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let mut recipe = HibConfig::from_toml_file(&args.config).context("--config")?;
    if let Some(protocol) = args.protocol {
        recipe.data.protocol = protocol;
    }
    let bench = RecipeBench { recipe, budget_minutes: args.budget_minutes, watch_every: args.watch_every };
    let data = hedge_embed::HibData::new(hedge_data::DataRoot::from_env());
    let report = bench.run(&data, &args.out, &args.config.display().to_string(), &crate::command_line(), |e| {
        if let hedge_embed::TrainEvent::Monitor(r) = e {
            tracing::info!("{:.1} min, step {}: {}", r.train_seconds / 60.0, r.step, r.sets_line());
        }
    })?;
    let run = hedge_embed::RunDir::open(&args.out)?;
    run.write_json("bench.json", &report)?;
    hedge_run::write_atomic(&run.file("bench.md"), report.markdown().as_bytes())?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("{}", report.markdown());
    }
    Ok(())
}

fn bench_fuzz(args: FuzzBenchArgs) -> Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        anyhow::bail!("--seconds {} must be a positive number of seconds per target", args.seconds);
    }
    if let Some(out) = &args.out {
        hedge_run::prepare_output_dir(out, "fuzz campaign", false)?;
    }
    let data_dir = hedge_data::data_dir().ok();
    if let Some(folder) = &args.seeds {
        hedge_run::prepare_output_dir(folder, "fuzz seeds", false)?;
        for (name, count, dir) in hedge_lab::fuzz::write_seeds(&args.target, folder, data_dir.as_deref())? {
            println!("{name}: {count} seed(s) in {}", dir.display());
        }
        return Ok(());
    }
    let budget = std::time::Duration::from_secs_f64(args.seconds);
    let mut reports = Vec::new();
    println!("{}", hedge_data::fuzz::CampaignReport::MARKDOWN_HEADER);
    for name in &args.target {
        let report = hedge_lab::fuzz::campaign(name, budget, args.seed, data_dir.as_deref())?;
        println!("{}", report.markdown_row());
        if let Some(out) = &args.out {
            for (i, input) in report.panics.iter().enumerate() {
                hedge_run::write_atomic(&out.join(format!("{}-{i}.bin", report.target)), input)?;
            }
        }
        reports.push(report);
    }
    if let Some(out) = &args.out {
        hedge_run::write_atomic(&out.join("report.json"), serde_json::to_string_pretty(&reports)?.as_bytes())?;
    }
    let panics: usize = reports.iter().map(|r| r.panic_count).sum();
    if panics > 0 {
        anyhow::bail!(
            "{panics} input(s) made a parser panic{}",
            if args.out.is_some() { " (written to --out)" } else { "; rerun with --out DIR to keep them" }
        );
    }
    Ok(())
}
