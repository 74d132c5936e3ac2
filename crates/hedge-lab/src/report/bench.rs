//! Benchmark and fuzzing fragments:
//!
//! - `results/fuzz/report/fuzz.md`: the parsers' fuzz campaign (`campaign-600s.json`, `hedge bench fuzz`);
//! - `results/fuzz/report/libfuzzer.md`: the coverage-guided campaign (`<target>.json`,
//!   `scripts/fuzz-campaign.sh`);
//! - `results/scale/report/scale-capacity.md`: what 10^9 embedding means would take, from the
//!   10^6-point measurement of hedge's HNSW graph (`ann-vs-hnswlib-1m.json`, `python/benchmarks/ann.py`);
//! - `results/scale/report/ann-fashion-mnist.md` and `ann-fashion-mnist-portable.md`: hedge's HNSW
//!   graph beside hnswlib and faiss at 784-D (`ann-fashion-mnist*.json`,
//!   `python/benchmarks/ann_fashion.py`), after and before the vectorised distance;
//! - `results/bench/report/malloc-tunables.md`: hedge's glibc malloc settings against glibc's
//!   defaults (`malloc-tunables.json`).

use serde::Deserialize;

use super::format::{fixed, table, thousands, thousands_fixed};
use super::fragment::{missing, Fragment, Results};
use crate::Result;

/// Every benchmark fragment.
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    Ok(vec![
        Fragment::new("fuzz", "fuzz", fuzz(results)?),
        Fragment::new("fuzz", "libfuzzer", libfuzzer(results)?),
        Fragment::new("scale", "scale-capacity", scale_capacity(results)?),
        Fragment::new("scale", "ann-fashion-mnist", ann_fashion(results, "results/scale/ann-fashion-mnist.json")?),
        Fragment::new(
            "scale",
            "ann-fashion-mnist-portable",
            ann_fashion(results, "results/scale/ann-fashion-mnist-portable.json")?,
        ),
        Fragment::new("bench", "malloc-tunables", malloc_tunables(results)?),
    ])
}

fn fuzz(results: &Results) -> Result<String> {
    let targets: Vec<hedge_data::fuzz::CampaignReport> = results.json("results/fuzz/campaign-600s.json")?;
    let rows: Vec<Vec<String>> = targets
        .iter()
        .map(|t| {
            vec![
                t.target.clone(),
                t.executions.to_string(),
                fixed(t.seconds, 0),
                fixed(t.executions as f64 / t.seconds, 0),
                t.accepted.to_string(),
                t.panic_count.to_string(),
            ]
        })
        .collect();
    Ok(table(&["target", "executions", "seconds", "executions/s", "accepted", "panics"], &rows))
}

/// One target of `scripts/fuzz-campaign.sh` (`results/fuzz/<target>.json`).
#[derive(Debug, Deserialize)]
struct LibFuzzerCampaign {
    target: String,
    executions: u64,
    seconds: f64,
    executions_per_second: u64,
    coverage_edges: u64,
    features: u64,
    corpus_committed: u64,
    crashes: u64,
}

fn libfuzzer(results: &Results) -> Result<String> {
    let folder = results.path("results/fuzz");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .map_err(|e| crate::LabError::Run(hedge_run::RunError::io(&folder, e)))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with("campaign-"))
        .collect();
    names.sort();
    let mut rows = Vec::new();
    for name in names {
        let t: LibFuzzerCampaign = results.json(&format!("results/fuzz/{name}"))?;
        rows.push(vec![
            t.target,
            t.executions.to_string(),
            fixed(t.seconds, 0),
            t.executions_per_second.to_string(),
            t.coverage_edges.to_string(),
            t.features.to_string(),
            t.corpus_committed.to_string(),
            t.crashes.to_string(),
        ]);
    }
    Ok(table(
        &["target", "executions", "seconds", "executions/s", "coverage (edges)", "features", "corpus kept", "crashes"],
        &rows,
    ))
}

/// `python/benchmarks/ann.py`'s result (the fields this fragment reads).
#[derive(Debug, Deserialize)]
struct AnnBenchmark {
    settings: AnnSettings,
    medians: Vec<AnnMedian>,
}

#[derive(Debug, Deserialize)]
struct AnnSettings {
    max_connections: u64,
    threads: u64,
}

#[derive(Debug, Deserialize)]
struct AnnMedian {
    library: String,
    points: u64,
    dim: u64,
    inserts_per_second: f64,
    queries_per_second: f64,
    build_rss_bytes_per_point: f64,
}

/// `python/benchmarks/ann_fashion.py`'s result file.
#[derive(Debug, Deserialize)]
struct FashionBenchmark {
    settings: FashionSettings,
    medians: Vec<FashionMedian>,
    ratios: Vec<FashionRatio>,
}

#[derive(Debug, Deserialize)]
struct FashionSettings {
    recall: f64,
}

#[derive(Debug, Deserialize)]
struct FashionMedian {
    library: String,
    version: String,
    repeats: usize,
    build_seconds: f64,
    inserts_per_second: f64,
    build_rss_bytes: f64,
    queries_per_second_at_recall: Option<f64>,
    curve: Vec<FashionPoint>,
}

#[derive(Debug, Deserialize)]
struct FashionPoint {
    ef: usize,
    queries_per_second: f64,
    recall_at_10: f64,
}

#[derive(Debug, Deserialize)]
struct FashionRatio {
    peer: String,
    pairs: usize,
    inserts_per_second: Option<Spread>,
    queries_per_second_at_recall: Option<Spread>,
    build_rss_bytes: Option<Spread>,
}

#[derive(Debug, Deserialize)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

/// The libraries' medians, their recall-against-rate curves and hedge's ratios to each peer.
fn ann_fashion(results: &Results, file: &str) -> Result<String> {
    let bench: FashionBenchmark = results.json(file)?;
    let target = fixed(bench.settings.recall, 2);
    let rate_header = format!("queries/s at recall@10 {target}");
    let summary: Vec<Vec<String>> = bench
        .medians
        .iter()
        .map(|m| {
            vec![
                format!("{} ({})", m.library, m.version),
                m.repeats.to_string(),
                fixed(m.build_seconds, 1),
                thousands_fixed(m.inserts_per_second, 0),
                thousands_fixed(m.build_rss_bytes / 1048576.0, 0),
                m.queries_per_second_at_recall.map_or("-".into(), |q| thousands_fixed(q, 0)),
            ]
        })
        .collect();
    let mut out = table(&["library", "repeats", "build s", "inserts/s", "build RSS MiB", &rate_header], &summary);
    let mut header = vec!["ef".to_string()];
    header.extend(bench.medians.iter().map(|m| format!("{}: recall@10, queries/s", m.library)));
    let efs = bench.medians.first().map_or(0, |m| m.curve.len());
    let curve: Vec<Vec<String>> = (0..efs)
        .map(|i| {
            let mut row = vec![bench.medians[0].curve[i].ef.to_string()];
            row.extend(bench.medians.iter().map(|m| {
                m.curve.get(i).map_or("-".into(), |p| {
                    format!("{}, {}", fixed(p.recall_at_10, 4), thousands_fixed(p.queries_per_second, 0))
                })
            }));
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    out.push_str("\n\nEach ef (medians over repeats):\n\n");
    out.push_str(&table(&header, &curve));
    let spread = |s: &Option<Spread>| {
        s.as_ref().map_or("-".into(), |s| format!("{}x [{}, {}]", fixed(s.median, 2), fixed(s.min, 2), fixed(s.max, 2)))
    };
    let ratios: Vec<Vec<String>> = bench
        .ratios
        .iter()
        .map(|r| {
            vec![
                r.peer.clone(),
                r.pairs.to_string(),
                spread(&r.inserts_per_second),
                spread(&r.queries_per_second_at_recall),
                spread(&r.build_rss_bytes),
            ]
        })
        .collect();
    out.push_str("\n\nhedge ÷ peer, pair by pair (median, [min, max]):\n\n");
    out.push_str(&table(&["peer", "pairs", "inserts/s", &rate_header, "build RSS"], &ratios));
    Ok(out)
}

fn scale_capacity(results: &Results) -> Result<String> {
    const FILE: &str = "results/scale/ann-vs-hnswlib-1m.json";
    let bench: AnnBenchmark = results.json(FILE)?;
    let row = bench.medians.iter().find(|r| r.library == "hedge").ok_or_else(|| missing(FILE, "no row of hedge"))?;
    let threads = bench.settings.threads as f64;
    let total = 1e9;
    let per_point = row.build_rss_bytes_per_point;
    let rows: Vec<Vec<String>> = [64.0, 128.0, 512.0]
        .iter()
        .map(|&node_gib: &f64| {
            // Three quarters of a node's memory for the graph: the rest for the process, the
            // payload of the candidates a query fetches, and the operating system.
            let usable = 0.75 * node_gib * 2f64.powi(30);
            let shards = (total * per_point / usable).ceil();
            let points = total / shards;
            let build_hours = points / row.inserts_per_second / 3600.0;
            vec![
                format!("{node_gib} GiB"),
                thousands(shards as u64),
                format!("{} M", thousands_fixed(points / 1e6, 0)),
                format!("{} h", thousands_fixed(build_hours, 1)),
                format!("{} ms", fixed(threads / row.queries_per_second * 1e3, 2)),
                thousands_fixed(row.queries_per_second, 0),
            ]
        })
        .collect();
    let head = format!(
        "10^9 means of D = {} at the measured {} bytes per point ({} GiB of graph and points in all), M = {}, \
         measured on {} points with {} threads:\n\n",
        row.dim,
        thousands_fixed(per_point, 0),
        thousands_fixed(total * per_point / 2f64.powi(30), 0),
        bench.settings.max_connections,
        thousands(row.points),
        bench.settings.threads,
    );
    Ok(head
        + &table(
            &[
                "node memory",
                "shards",
                "points per shard",
                "build per shard (2 cores, rate at 10^6)",
                "latency per shard query (2 cores, at 10^6)",
                "cluster queries/s, one replica per shard",
            ],
            &rows,
        ))
}

/// `results/bench/malloc-tunables.json` (the fields this fragment reads).
#[derive(Debug, Deserialize)]
struct MallocBenchmark {
    runs: u64,
    median: AB<ProcessFigures>,
    ratio_a_over_b_median: WallRatio,
    page_faults_3_digit_d3_point_40_steps: AB<PageFaults>,
}

#[derive(Debug, Deserialize)]
struct AB<T> {
    a: T,
    b: T,
}

#[derive(Debug, Deserialize)]
struct ProcessFigures {
    wall_s: f64,
    sys_s: f64,
    peak_mib: f64,
}

#[derive(Debug, Deserialize)]
struct WallRatio {
    wall: f64,
}

#[derive(Debug, Deserialize)]
struct PageFaults {
    minor_faults: u64,
}

fn malloc_tunables(results: &Results) -> Result<String> {
    let b: MallocBenchmark = results.json("results/bench/malloc-tunables.json")?;
    let (a, d, f) = (&b.median.a, &b.median.b, &b.page_faults_3_digit_d3_point_40_steps);
    Ok(format!(
        "Measured as whole processes (`hib train`, N = 2, D = 2, the tables' MoG-1 recipe, 60 steps, 2 threads, \
         {} runs each in turn against the build before the change; `results/bench/malloc-tunables.json`): median \
         wall {} s against {} s ({}x), kernel time {} s against {} s, peak memory {} MiB against {} MiB. At N = 3, \
         D = 3 (point, 40 steps): {} page faults against {}.",
        b.runs,
        fixed(a.wall_s, 1),
        fixed(d.wall_s, 1),
        fixed(b.ratio_a_over_b_median.wall, 2),
        fixed(a.sys_s, 1),
        fixed(d.sys_s, 1),
        fixed(a.peak_mib, 0),
        fixed(d.peak_mib, 0),
        thousands(f.a.minor_faults),
        thousands(f.b.minor_faults),
    ))
}
