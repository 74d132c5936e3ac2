//! `hedge hib index`, `hedge hib search` and `hedge bench search`: identification against a
//! gallery with an ANN index, an exact re-rank and η abstention.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use hedge_data::ImageSet;
use hedge_identify::{
    build_index, search_bench, AnnConfig, IndexFiles, IndexRequest, ProbeResult, SearchOptions, SearchSummary,
    UncertaintyScore,
};

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
    #[command(flatten)]
    ann: AnnArgs,
    #[arg(long, default_value = "cpu", value_parser = crate::hib_args::device)]
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
    #[arg(long, default_value = "cpu", value_parser = crate::hib_args::device)]
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
    let dim = run.read_config()?.hib.dim;
    let search = SearchOptions::for_dim(dim).with_candidates(args.candidates).with_top_k(args.top_k);
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
        "indexed {} images of {} identities ({} x {} components, D = {}) in {:.1} s embedding + {:.1} s graph",
        manifest.item_names.len(),
        manifest.class_names.len(),
        manifest.item_names.len(),
        manifest.components,
        manifest.dim,
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
    hedge_run::write_atomic(&args.out.join("search.csv"), &results_csv(&results, summary.top_k)?)?;
    hedge_run::write_atomic(&args.out.join("summary.json"), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let figure = args.out.join("risk_coverage.png");
    hedge_lab::hib::identification::risk_coverage_figure(&figure, &identifier.rules.manifest.calibration, &results)?;
    print_summary(&summary);
    println!("results: {}", args.out.display());
    Ok(())
}

/// One row per probe: its name, label, η, whether it abstained, the prediction, then identity and
/// probability of each of the `top_k` matches.
fn results_csv(results: &[ProbeResult], top_k: usize) -> Result<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> =
        ["probe", "label", "eta", "margin", "abstained", "prediction"].iter().map(|s| s.to_string()).collect();
    for k in 1..=top_k {
        header.push(format!("identity_{k}"));
        header.push(format!("probability_{k}"));
    }
    writer.write_record(&header)?;
    for r in results {
        let mut row = vec![
            r.probe.clone(),
            r.label.clone().unwrap_or_default(),
            r.eta.to_string(),
            r.margin.to_string(),
            r.abstained.to_string(),
            r.prediction.clone().unwrap_or_default(),
        ];
        for k in 0..top_k {
            match r.matches.get(k) {
                Some(m) => row.extend([m.identity.clone(), m.probability.to_string()]),
                None => row.extend([String::new(), String::new()]),
            }
        }
        writer.write_record(&row)?;
    }
    writer.into_inner().map_err(|e| anyhow::anyhow!("writing CSV: {e}"))
}

fn print_summary(s: &SearchSummary) {
    println!(
        "{} probes ({} of gallery identities): top-1 accuracy {:.4}, top-{} {:.4} at full coverage",
        s.probes, s.known_identity, s.accuracy, s.top_k, s.top_k_accuracy
    );
    match s.accuracy_answered {
        Some(a) => println!(
            "abstention rule {:?} (target risk {}): coverage {:.4}, accuracy among answered {:.4}",
            s.rule, s.target_risk, s.coverage, a
        ),
        None => println!("abstention rule {:?} (target risk {}): every probe abstained", s.rule, s.target_risk),
    }
    match s.ann_recall_at_10 {
        Some(r) => println!("ANN recall@10 against exact search: {r:.4}"),
        None => println!("ANN recall@10: not measured (gallery x probes over 10^9 distances)"),
    }
    println!("{:.0} probes/s (embedding, ANN, re-rank)", s.probes_per_second);
}

pub fn bench(args: SearchBenchArgs) -> Result<()> {
    if let Some(out) = &args.out {
        hedge_run::atomic::check_output_file(out, "--out", false, |_| false)?;
    }
    let ann = args.ann.config()?;
    if args.dims.is_empty() || args.dims.contains(&0) {
        bail!("--dims needs positive embedding dimensions, e.g. 2,3,16");
    }
    if args.points == 0 || args.queries == 0 {
        bail!("--points and --queries must each be at least 1");
    }
    // Before anything is drawn: the points, the queries and the graph at the widest dimension,
    // and the exact search every query is checked against (queries × points × D per dimension).
    let widest = *args.dims.iter().max().expect("checked non-empty") as f64;
    let m = ann.max_connections as f64;
    hedge_run::Footprint::new("bench search: the points, queries and graph at the widest --dims", |v| {
        v[0] * (v[2] * 8.0 + 2.0 * m * 4.0 + 64.0) + v[1] * (v[2] * 4.0 + 10.0 * 12.0)
    })
    .knob("--points", args.points as f64, 1.0)
    .knob("--queries", args.queries as f64, 1.0)
    .knob("--dims (widest)", widest, 1.0)
    .check()?;
    let dims: f64 = args.dims.iter().map(|&d| d as f64).sum();
    // Distance computations run at about 1e9 a second (scattered reads, not dense arithmetic):
    // each insert computes about ef_construction × M of them, each query's exact check one per
    // point, every one over D coordinates.
    hedge_run::Workload::new("bench search: building and exact checking at every --dims", |v| {
        v[2] * (v[0] * ann.ef_construction as f64 * m + v[1] * v[0]) / 1e9
    })
    .knob("--points", args.points as f64, 1.0)
    .knob("--queries", args.queries as f64, 1.0)
    .knob("", dims, 1.0)
    .check()?;
    println!(
        "| D | points | build s | inserts/s | queries/s (k = 10) | recall@10 | build RSS MiB | index file MiB | exact s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for &dim in &args.dims {
        let row = search_bench(dim, args.points, args.queries, &ann, args.seed)?;
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.0} | {:.4} | {} | {:.0} | {:.1} |",
            row.dim,
            row.points,
            row.build_seconds,
            row.inserts_per_second,
            row.queries_per_second,
            row.recall_at_10,
            row.build_rss_bytes.map_or("-".into(), |b| format!("{:.0}", mib(b))),
            mib(row.dump_bytes),
            row.exact_seconds
        );
        rows.push(row);
    }
    if let Some(out) = &args.out {
        hedge_run::write_atomic(out, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    }
    Ok(())
}
