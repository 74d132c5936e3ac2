//! `hedge hib index`, `hedge hib search` and `hedge bench search`: identification against a
//! gallery with an ANN index, an exact re-rank and η abstention.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use hedge_data::ImageSet;
use hedge_identify::{build_index, AnnConfig, IndexFiles, IndexRequest, SearchOptions, SearchSpace, UncertaintyScore};
use hedge_lab::hib::identification;

#[derive(Clone, Copy, ValueEnum)]
pub enum ScoreArg {
    Eta,
    Margin,
}

#[derive(Args)]
pub struct IndexArgs {
    /// Run directory written by `hedge hib train` (its model embeds the gallery and the probes).
    #[arg(long)]
    run: PathBuf,
    /// The gallery: an image folder (`ROOT/<identity>/<image>.png`) or an image .npz.
    #[arg(long)]
    gallery: PathBuf,
    /// Labelled validation probes (folder or .npz, identities named as in the gallery) on which
    /// the eta threshold is chosen; without it every gallery image is a probe against the others.
    #[arg(long)]
    validation: Option<PathBuf>,
    /// The largest error rate tolerated among answered probes: probes whose eta lies above the
    /// threshold reaching it on the validation probes abstain.
    #[arg(long, default_value_t = 0.05)]
    target_risk: f64,
    /// What ranks probes from sure to unsure: eta (the probe's self-mismatch, the paper's) or
    /// margin (1 - (p1 - p2) of the best two identities' match probabilities).
    #[arg(long, value_enum, default_value = "eta")]
    abstain_by: ScoreArg,
    /// New index folder.
    #[arg(long)]
    out: PathBuf,
    /// Replace --out when it exists (only once the new index is complete).
    #[arg(long)]
    overwrite: bool,
    /// Gallery images per probe proposed by the ANN stage and re-ranked by match probability.
    #[arg(long, default_value_t = 100)]
    candidates: usize,
    /// Identities reported per probe.
    #[arg(long, default_value_t = 5)]
    top_k: usize,
    /// Where the ANN stage finds candidates: means (Euclidean distance between component means)
    /// or the exact space of the model's loss, where its closed form has one (counting both
    /// sides' variances). The default is the loss's exact space where it has one, means otherwise.
    #[arg(long)]
    candidates_by: Option<String>,
    #[command(flatten)]
    ann: AnnArgs,
    #[arg(long, default_value = "cpu", value_parser = crate::device)]
    device: tch::Device,
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

#[derive(Args)]
pub struct SearchArgs {
    /// Index folder written by `hedge hib index`.
    #[arg(long)]
    index: PathBuf,
    /// Probe images: an image folder or an image .npz (labels, when they name gallery identities,
    /// are scored; other labels count as identities the gallery lacks).
    #[arg(long)]
    probe: PathBuf,
    /// New folder for `search.jsonl`, `search.csv`, `summary.json` and `risk_coverage.png`.
    #[arg(long)]
    out: PathBuf,
    /// Replace files in --out.
    #[arg(long)]
    overwrite: bool,
    /// Choose the eta threshold for this risk instead of the index's, on the same validation probes.
    #[arg(long)]
    target_risk: Option<f64>,
    /// The run, when it moved since the index was built (its weights must be the same).
    #[arg(long)]
    run: Option<PathBuf>,
    #[arg(long, default_value = "cpu", value_parser = crate::device)]
    device: tch::Device,
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

#[derive(Args)]
pub struct SearchBenchArgs {
    /// Gallery embeddings (synthetic: ten per identity around N(0, I) centres).
    #[arg(long, default_value_t = 1_000_000)]
    points: usize,
    /// Embedding dimensions to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,3,16")]
    dims: Vec<usize>,
    /// Queries timed and checked against exact search.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    #[command(flatten)]
    ann: AnnArgs,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExactSearchBenchArgs {
    /// The loss whose closed form is searched in its exact space (one that has one).
    #[arg(long)]
    loss: String,
    /// Gallery sizes, comma-separated (synthetic Gaussian embeddings: ten per identity around
    /// N(0, I) centres, per-dimension variance 0.01 exp(U(-2, 2))).
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    points: Vec<usize>,
    /// Embedding dimensions, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,16")]
    dims: Vec<usize>,
    /// Queries timed and checked against the closed form's exact top 10.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Items the means graph proposes per query for the closed form's re-rank (`hib index --candidates`).
    #[arg(long, default_value_t = 100)]
    candidates: usize,
    #[command(flatten)]
    ann: AnnArgs,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The HNSW graph's settings (`hib index`, `bench search`).
#[derive(Args)]
pub struct AnnArgs {
    /// HNSW links per point (M).
    #[arg(long, default_value_t = 16)]
    max_connections: usize,
    /// HNSW candidates kept while inserting.
    #[arg(long, default_value_t = 200)]
    ef_construction: usize,
    /// HNSW candidates kept while searching.
    #[arg(long, default_value_t = 200)]
    ef_search: usize,
}

impl AnnArgs {
    fn config(&self) -> Result<AnnConfig> {
        let ann = AnnConfig::default()
            .with_max_connections(self.max_connections)
            .with_ef_construction(self.ef_construction)
            .with_ef_search(self.ef_search);
        ann.check()?;
        Ok(ann)
    }
}

pub fn index(args: IndexArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let device = args.device;
    let ann = args.ann.config()?;
    hedge_run::check_out_not_inside(&args.out, &args.gallery, "--gallery")?;
    if let Some(v) = &args.validation {
        hedge_run::check_out_not_inside(&args.out, v, "--validation")?;
    }
    let run = hedge_embed::RunDir::open(&args.run)?;
    let mut search =
        SearchOptions::for_model(&run.read_config()?.hib).with_candidates(args.candidates).with_top_k(args.top_k);
    if let Some(space) = &args.candidates_by {
        search = search.with_space(SearchSpace::named(space)?);
    }
    // Sizes first: nothing is read while a flag would refuse the work.
    search.check()?;
    let gallery = ImageSet::read(&args.gallery)?;
    let validation = args.validation.as_deref().map(ImageSet::read).transpose()?;
    let score = match args.abstain_by {
        ScoreArg::Eta => UncertaintyScore::Eta,
        ScoreArg::Margin => UncertaintyScore::Margin,
    };
    let request = IndexRequest { ann, search, validation, target_risk: args.target_risk, score };
    let manifest = build_index(&args.run, &gallery, &request, &args.out, args.overwrite, device)?;
    let c = &manifest.calibration;
    println!(
        "indexed {} images of {} identities ({} x {} components, D = {}, candidates by {}) in {:.1} s embedding + \
         {:.1} s graph",
        manifest.item_names.len(),
        manifest.class_names.len(),
        manifest.item_names.len(),
        manifest.components,
        manifest.dim,
        manifest.search.space.name(),
        manifest.embed_seconds,
        manifest.build_seconds
    );
    println!(
        "abstention by {} for target risk {}: {:?} (coverage {:.3}, risk {:.3} on {} validation probes: {})",
        c.score.name(),
        c.target_risk,
        c.rule,
        c.coverage,
        c.risk,
        c.uncertainty.len(),
        c.source
    );
    println!("index: {}", args.out.display());
    Ok(())
}

/// The kind of folder `hib search` writes (its ownership marker).
const SEARCH_KIND: &str = "hib search results";

pub fn search(args: SearchArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let device = args.device;
    hedge_run::atomic::check_output_dir(&args.out, SEARCH_KIND, args.overwrite)?;
    hedge_run::check_out_not_inside(&args.out, &args.probe, "--probe")?;
    hedge_run::check_out_not_inside(&args.out, &args.index, "--index")?;
    let files = IndexFiles::open(&args.index)?;
    let probes = ImageSet::read(&args.probe)?;
    let mut identifier = files.load(args.run.as_deref(), device)?;
    if let Some(risk) = args.target_risk {
        identifier.rules.manifest.calibration.rechoose(risk)?;
    }
    let (results, summary) = identifier.identify(&probes)?;
    hedge_run::prepare_output_dir(&args.out, SEARCH_KIND, args.overwrite)?;
    let mut jsonl = String::new();
    for r in &results {
        jsonl.push_str(&serde_json::to_string(r)?);
        jsonl.push('\n');
    }
    hedge_run::write_atomic(&args.out.join("search.jsonl"), jsonl.as_bytes())?;
    hedge_run::write_atomic(&args.out.join("search.csv"), &identification::results_csv(&results, summary.top_k))?;
    hedge_run::write_atomic(&args.out.join("summary.json"), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let figure = args.out.join("risk_coverage.png");
    hedge_lab::hib::identification::risk_coverage_figure(&figure, &identifier.rules.manifest.calibration, &results)?;
    println!("{}\nresults: {}", identification::summary_lines(&summary), args.out.display());
    Ok(())
}

pub fn bench(args: SearchBenchArgs) -> Result<()> {
    if let Some(out) = &args.out {
        hedge_run::atomic::check_output_file(out, "--out", false, |_| false)?;
    }
    let ann = args.ann.config()?;
    println!("{}", identification::SEARCH_BENCH_HEADER);
    let rows = identification::search_bench_suite(&args.dims, args.points, args.queries, &ann, args.seed, |row| {
        println!("{}", identification::search_bench_row(row))
    })?;
    if let Some(out) = &args.out {
        hedge_run::write_atomic(out, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    }
    Ok(())
}

pub fn bench_exact(args: ExactSearchBenchArgs) -> Result<()> {
    if let Some(out) = &args.out {
        hedge_run::atomic::check_output_file(out, "--out", false, |_| false)?;
    }
    let ann = args.ann.config()?;
    let SearchSpace::Exact(form) = SearchSpace::named(args.loss.as_str())? else {
        anyhow::bail!("--loss means: give a loss whose closed form has an exact search space");
    };
    println!("{}", identification::exact_search_bench_header(form));
    let rows = identification::exact_search_bench_suite(
        form,
        &args.dims,
        &args.points,
        args.queries,
        args.candidates,
        &ann,
        args.seed,
        |row| println!("{}", identification::exact_search_bench_row(form, row)),
    )?;
    if let Some(out) = &args.out {
        hedge_run::write_atomic(out, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    }
    Ok(())
}
