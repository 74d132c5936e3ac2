//! Figures of the identification service (`hedge search`): risk against coverage of the
//! validation probes and of a search's probes.

use std::path::Path;

use hedge_embed::loss::ClosedForm;
use hedge_identify::{
    exact_search_bench, search_bench, AnnConfig, Calibration, ExactSearchBenchRow, ProbeResult, SearchBenchRow,
    SearchSpace, SearchSummary, UncertaintyScore,
};

use crate::Result;

/// Risk against coverage (probes ranked by the index's uncertainty score, most certain first) of
/// the validation probes and of `results`, with the target risk and the chosen coverage: a PNG a
/// person reads faster than the CSV.
pub fn risk_coverage_figure(path: &Path, calibration: &Calibration, results: &[ProbeResult]) -> Result<()> {
    let curve = |uncertainty: &[f64], correct: &[bool]| -> Result<Vec<(f64, f64, f64)>> {
        let rc = hedge_eval::risk_coverage(uncertainty, correct)?;
        Ok(rc.coverage.iter().zip(&rc.risk).map(|(&c, &r)| (c, r, 0.0)).collect())
    };
    let labelled: Vec<&ProbeResult> = results.iter().filter(|r| r.label.is_some()).collect();
    let mut series = vec![(
        format!("validation ({})", calibration.uncertainty.len()),
        curve(&calibration.uncertainty, &calibration.correct)?,
    )];
    if !labelled.is_empty() {
        let uncertainty: Vec<f64> = labelled
            .iter()
            .map(|r| match calibration.score {
                UncertaintyScore::Eta => r.eta,
                UncertaintyScore::Margin => 1.0 - r.margin,
            })
            .collect();
        let correct: Vec<bool> =
            labelled.iter().map(|r| r.matches.first().is_some_and(|m| Some(&m.identity) == r.label.as_ref())).collect();
        series.push((format!("probes ({})", labelled.len()), curve(&uncertainty, &correct)?));
    }
    let target = calibration.target_risk;
    series.push((format!("target risk {target}"), vec![(0.0, target, 0.0), (1.0, target, 0.0)]));
    series.push((
        format!("chosen coverage {:.3}", calibration.coverage),
        vec![(calibration.coverage, 0.0, 0.0), (calibration.coverage, target, 0.0)],
    ));
    hedge_plot::curves_with_error(
        path,
        &series,
        &format!("coverage (probes answered, most certain by {} first)", calibration.score.name()),
        "risk (identification error among answered)",
        &format!("Identification risk-coverage by {}", calibration.score.name()),
    )?;
    Ok(())
}

/// One row per probe: its name, label, η, margin, whether it abstained, the prediction, then
/// identity and probability of each of the `top_k` matches (`search.csv`).
pub fn results_csv(results: &[ProbeResult], top_k: usize) -> Vec<u8> {
    let mut header: Vec<String> =
        ["probe", "label", "eta", "margin", "abstained", "prediction"].iter().map(|s| s.to_string()).collect();
    for k in 1..=top_k {
        header.push(format!("identity_{k}"));
        header.push(format!("probability_{k}"));
    }
    let mut out = csv_line(&header);
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
        out.push_str(&csv_line(&row));
    }
    out.into_bytes()
}

/// A CSV record (RFC 4180): a field holding a comma, a quote or a line break is quoted, its
/// quotes doubled.
fn csv_line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|f| if f.contains([',', '"', '\n', '\r']) { format!("\"{}\"", f.replace('"', "\"\"")) } else { f.clone() })
        .collect();
    format!("{}\n", quoted.join(","))
}

/// An index in the two lines `hedge hib index` prints: what it holds, and its abstention rule.
pub fn index_lines(m: &hedge_identify::IndexManifest) -> String {
    let c = &m.calibration;
    format!(
        "indexed {} images of {} identities ({} x {} components, D = {}, candidates by {}) in {:.1} s embedding + \
         {:.1} s graph\nabstention by {} for target risk {}: {:?} (coverage {:.3}, risk {:.3} on {} validation probes: {})",
        m.item_names.len(),
        m.class_names.len(),
        m.item_names.len(),
        m.components,
        m.dim,
        m.search.space.name(),
        m.embed_seconds,
        m.build_seconds,
        c.score.name(),
        c.target_risk,
        c.rule,
        c.coverage,
        c.risk,
        c.uncertainty.len(),
        c.source
    )
}

/// A search's files in `out`: `search.jsonl` (a result per probe), `search.csv`, `summary.json`
/// and `risk_coverage.png` against the index's calibration.
pub fn write_search(
    out: &std::path::Path,
    results: &[ProbeResult],
    summary: &SearchSummary,
    calibration: &hedge_identify::Calibration,
) -> crate::Result<()> {
    let mut jsonl = String::new();
    for r in results {
        jsonl.push_str(&serde_json::to_string(r).expect("a probe result serialises"));
        jsonl.push('\n');
    }
    hedge_run::write_atomic(&out.join("search.jsonl"), jsonl.as_bytes())?;
    hedge_run::write_atomic(&out.join("search.csv"), &results_csv(results, summary.top_k))?;
    let text = serde_json::to_string_pretty(summary).expect("a summary serialises");
    hedge_run::write_atomic(&out.join("summary.json"), text.as_bytes())?;
    risk_coverage_figure(&out.join("risk_coverage.png"), calibration, results)
}

/// A search's summary in the four lines `hedge hib search` prints.
pub fn summary_lines(s: &SearchSummary) -> String {
    let rule = match s.accuracy_answered {
        Some(a) => format!(
            "abstention rule {:?} (target risk {}): coverage {:.4}, accuracy among answered {:.4}",
            s.rule, s.target_risk, s.coverage, a
        ),
        None => format!("abstention rule {:?} (target risk {}): every probe abstained", s.rule, s.target_risk),
    };
    let recall = match s.ann_recall_at_10 {
        Some(r) => format!("ANN recall@10 against exact search: {r:.4}"),
        None => "ANN recall@10: not measured (gallery x probes over 10^9 distances)".into(),
    };
    format!(
        "{} probes ({} of gallery identities): top-1 accuracy {:.4}, top-{} {:.4} at full coverage\n{rule}\n{recall}\n\
         {:.0} probes/s (embedding, ANN, re-rank)",
        s.probes, s.known_identity, s.accuracy, s.top_k, s.top_k_accuracy, s.probes_per_second
    )
}

/// The ANN benchmark's settings (`hedge bench search` takes them as its flags).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SearchBench {
    /// Gallery embeddings (synthetic: ten per identity around N(0, I) centres).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1_000_000))]
    pub points: usize,
    /// Embedding dimensions to measure, comma-separated.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "2,3,16"))]
    pub dims: Vec<usize>,
    /// Queries timed and checked against exact search.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1000))]
    pub queries: usize,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub ann: AnnConfig,
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub seed: u64,
}

impl SearchBench {
    /// The benchmark at every dimension: the points, queries and graph at the widest dimension
    /// checked against the memory budget, and the distance computations against the work bound,
    /// before anything is drawn; `on_row` sees each row as it is measured.
    pub fn run(&self, mut on_row: impl FnMut(&SearchBenchRow)) -> Result<Vec<SearchBenchRow>> {
        self.ann.check().map_err(hedge_identify::IdentifyError::from)?;
        check_search_bench("bench search", &self.dims, &[self.points], self.queries, &self.ann, 1)?;
        let mut rows = Vec::new();
        for &dim in &self.dims {
            let row = search_bench(dim, self.points, self.queries, &self.ann, self.seed)?;
            on_row(&row);
            rows.push(row);
        }
        Ok(rows)
    }
}

/// The exact-search benchmark's settings (`hedge bench exact-search` takes them as its flags).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ExactSearchBench {
    /// The loss whose closed form is searched in its exact space (one that has one).
    #[cfg_attr(feature = "clap", arg(long))]
    pub loss: String,
    /// Gallery sizes, comma-separated (synthetic Gaussian embeddings: ten per identity around
    /// N(0, I) centres, per-dimension variance 0.01 exp(U(-2, 2))).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "100000,1000000"))]
    pub points: Vec<usize>,
    /// Embedding dimensions, comma-separated.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "2,16"))]
    pub dims: Vec<usize>,
    /// Queries timed and checked against the closed form's exact top 10.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1000))]
    pub queries: usize,
    /// Items the means graph proposes per query for the closed form's re-rank (`hib index --candidates`).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 100))]
    pub candidates: usize,
    #[cfg_attr(feature = "clap", command(flatten))]
    pub ann: AnnConfig,
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub seed: u64,
}

impl ExactSearchBench {
    /// The loss's closed form, where it has an exact search space.
    pub fn form(&self) -> Result<&'static ClosedForm> {
        match SearchSpace::named(&self.loss)? {
            SearchSpace::Exact(form) => Ok(form),
            SearchSpace::Means => Err(crate::error::invalid(
                "loss",
                &self.loss,
                "give a loss whose closed form has an exact search space",
            )),
        }
    }

    /// Search in the exact space beside means-first search at every dimension and gallery size
    /// ([`exact_search_bench`]), checked as [`SearchBench::run`] is (two graphs per setting, one
    /// at a time, the second in the exact space's dimension); `on_row` sees each row as it is
    /// measured.
    pub fn run(&self, mut on_row: impl FnMut(&ExactSearchBenchRow)) -> Result<Vec<ExactSearchBenchRow>> {
        self.ann.check().map_err(hedge_identify::IdentifyError::from)?;
        let form = self.form()?;
        let space = SearchSpace::Exact(form);
        let wider: Vec<usize> = self.dims.iter().map(|&d| space.point_dim(d).max(d)).collect();
        if self.dims.contains(&0) {
            return Err(crate::error::invalid(
                "dims",
                format!("{:?}", self.dims),
                "give positive embedding dimensions, e.g. 2,16",
            ));
        }
        check_search_bench("bench exact-search", &wider, &self.points, self.queries, &self.ann, 2)?;
        let mut rows = Vec::new();
        for &n in &self.points {
            for &dim in &self.dims {
                for row in exact_search_bench(form, dim, n, self.queries, self.candidates, &self.ann, self.seed)? {
                    on_row(&row);
                    rows.push(row);
                }
            }
        }
        Ok(rows)
    }
}

/// Refuses a search benchmark whose points, queries and graph at the widest of `dims` and the
/// largest of `points` outgrow the memory budget, or whose `graphs` builds and exact checks per
/// setting outgrow the work bound, before anything is drawn.
fn check_search_bench(
    what: &str,
    dims: &[usize],
    points: &[usize],
    queries: usize,
    ann: &AnnConfig,
    graphs: usize,
) -> Result<()> {
    if dims.is_empty() || dims.contains(&0) {
        return Err(crate::error::invalid(
            "dims",
            format!("{dims:?}"),
            "give positive embedding dimensions, e.g. 2,3,16",
        ));
    }
    if points.is_empty() || points.contains(&0) || queries == 0 {
        return Err(crate::error::invalid(
            "points/queries",
            format!("{points:?}/{queries}"),
            "each must be at least 1",
        ));
    }
    let widest = *dims.iter().max().expect("checked non-empty") as f64;
    let most = *points.iter().max().expect("checked non-empty") as f64;
    let m = ann.max_connections as f64;
    hedge_run::Footprint::new(format!("{what}: the points, queries and graph at the widest --dims"), |v| {
        v[0] * (v[2] * 8.0 + 2.0 * m * 4.0 + 64.0) + v[1] * (v[2] * 4.0 + 10.0 * 12.0)
    })
    .knob("--points (largest)", most, 1.0)
    .knob("--queries", queries as f64, 1.0)
    .knob("--dims (widest)", widest, 1.0)
    .check()?;
    let total_dims: f64 = dims.iter().map(|&d| d as f64).sum();
    let total_points: f64 = points.iter().map(|&n| n as f64).sum();
    // Distance computations run at about 1e9 a second (scattered reads, not dense arithmetic):
    // each insert computes about ef_construction × M of them, each query's exact check one per
    // point, every one over D coordinates.
    let ef = ann.ef_construction as f64;
    hedge_run::Workload::new(format!("{what}: building and exact checking at every --dims"), |v| {
        v[2] * graphs as f64 * (v[0] * ef * m + v[1] * v[0]) / 1e9
    })
    .knob("--points", total_points, 1.0)
    .knob("--queries", queries as f64, 1.0)
    .knob("", total_dims, 1.0)
    .check()?;
    Ok(())
}

/// A row of `hedge bench exact-search` as it prints it, under [`exact_search_bench_header`].
pub fn exact_search_bench_row(form: &ClosedForm, row: &ExactSearchBenchRow) -> String {
    let found_by = match row.space {
        SearchSpace::Means => format!("means, {} re-ranked by {}", row.candidates, form.name),
        SearchSpace::Exact(form) => form.name.to_string(),
    };
    format!(
        "| {} | {} | {found_by} | {:.1} | {:.0} | {:.4} | {:.0} |",
        row.dim,
        row.points,
        row.build_seconds,
        row.queries_per_second,
        row.recall_at_10,
        row.memory_bytes as f64 / 1048576.0
    )
}

/// The header of [`exact_search_bench_row`]'s table.
pub fn exact_search_bench_header(form: &ClosedForm) -> String {
    format!(
        "| D | points | candidates found by | build s | queries/s (k = 10) | recall@10 of the {} top 10 | graph MiB \
         |\n|---|---|---|---|---|---|---|",
        form.name
    )
}

/// A benchmark row as `hedge bench search` prints it, under [`SEARCH_BENCH_HEADER`].
pub fn search_bench_row(row: &SearchBenchRow) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    format!(
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
    )
}

/// The header of [`search_bench_row`]'s table.
pub const SEARCH_BENCH_HEADER: &str =
    "| D | points | build s | inserts/s | queries/s (k = 10) | recall@10 | build RSS MiB \
     | index file MiB | exact s |\n|---|---|---|---|---|---|---|---|---|";
