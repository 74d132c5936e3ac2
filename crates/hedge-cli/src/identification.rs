//! `hedge hib index`, `hedge hib search` and `hedge bench search`: identification against a
//! gallery with an ANN index, an exact re-rank and η abstention.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use hedge_data::ImageSet;
use hedge_identify::{build_index, AnnConfig, IndexFiles, IndexRequest, SearchOptions, SearchSpace, UncertaintyScore};
use hedge_lab::hib::identification;

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
    abstain_by: UncertaintyScore,
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
    ann: AnnConfig,
    #[command(flatten)]
    compute: crate::Compute,
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
    #[command(flatten)]
    compute: crate::Compute,
}

#[derive(Args)]
pub struct SearchBenchArgs {
    #[command(flatten)]
    bench: identification::SearchBench,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExactSearchBenchArgs {
    #[command(flatten)]
    bench: identification::ExactSearchBench,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn index(args: IndexArgs) -> Result<()> {
    let device = args.compute.apply()?;
    let ann = args.ann;
    ann.check()?;
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
    let request = IndexRequest { ann, search, validation, target_risk: args.target_risk, score: args.abstain_by };
    let manifest = build_index(&args.run, &gallery, &request, &args.out, args.overwrite, device)?;
    println!("{}", identification::index_lines(&manifest));
    println!("index: {}", args.out.display());
    Ok(())
}

/// The kind of folder `hib search` writes (its ownership marker).
const SEARCH_KIND: &str = "hib search results";

pub fn search(args: SearchArgs) -> Result<()> {
    let device = args.compute.apply()?;
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
    identification::write_search(&args.out, &results, &summary, &identifier.rules.manifest.calibration)?;
    println!("{}\nresults: {}", identification::summary_lines(&summary), args.out.display());
    Ok(())
}

pub fn bench(args: SearchBenchArgs) -> Result<()> {
    if let Some(out) = &args.out {
        hedge_run::atomic::check_output_file(out, "--out", false, |_| false)?;
    }
    println!("{}", identification::SEARCH_BENCH_HEADER);
    let rows = args.bench.run(|row| println!("{}", identification::search_bench_row(row)))?;
    if let Some(out) = &args.out {
        hedge_run::write_atomic(out, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    }
    Ok(())
}

pub fn bench_exact(args: ExactSearchBenchArgs) -> Result<()> {
    if let Some(out) = &args.out {
        hedge_run::atomic::check_output_file(out, "--out", false, |_| false)?;
    }
    let form = args.bench.form()?;
    println!("{}", identification::exact_search_bench_header(form));
    let rows = args.bench.run(|row| println!("{}", identification::exact_search_bench_row(form, row)))?;
    if let Some(out) = &args.out {
        hedge_run::write_atomic(out, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    }
    Ok(())
}
