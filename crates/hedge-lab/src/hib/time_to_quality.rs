//! Time to quality: when each run first reached the paper's Table 1 values on a watched set,
//! as a Markdown table and one plot per metric against training minutes (`hedge hib
//! time-to-quality`).

use hedge_embed::experiment::paper_column;
use hedge_embed::RunDir;

use crate::Result;

/// A run's quality-against-wall-clock record, labelled for a report.
#[derive(Debug, Clone)]
pub struct RunCurve {
    pub label: String,
    /// The paper's column this run compares with (`point`, `mog1`, `mog2`), if any.
    pub paper_column: Option<String>,
    pub records: Vec<hedge_embed::monitor::MonitorRecord>,
}

impl RunCurve {
    /// Reads `monitor.jsonl` and `config.json` of a run directory.
    pub fn read(run: &RunDir, label: &str) -> Result<Self> {
        let config = run.read_config()?.hib;
        Ok(RunCurve {
            label: label.to_string(),
            paper_column: paper_column(&config).map(str::to_string),
            records: run.read_json_lines(hedge_embed::run::MONITOR_FILE)?,
        })
    }
}

/// `time-to-quality.md`: for every run and each of the four Table 1 numbers on watched set
/// `set`, the training minutes at which the run first reached the paper's value, or the best
/// value it reached and when.
pub fn time_to_quality_markdown(curves: &[RunCurve], set: &str, digits: usize, dim: usize) -> String {
    use hedge_embed::monitor::{first_reaching, QuickMetric};
    use std::fmt::Write as _;
    let paper = crate::hib::paper::table1(digits, dim);
    let spacing = watch_spacing(curves, set);
    let mut t = format!(
        "Time to quality, N = {digits}, D = {dim}, `{set}`: training wall-clock (minutes, evaluation excluded) at which each \
         run's watched evaluation (one Monte-Carlo repeat, {spacing}) first reached the paper's Table 1 value; \
         otherwise the best value it reached, and when.\n\n\
         | run | metric | paper | reached at | best (at) |\n|---|---|---|---|---|\n"
    );
    for c in curves {
        let column = c.paper_column.as_deref().and_then(|k| paper.as_ref().and_then(|p| p.model(k)));
        for metric in QuickMetric::ALL {
            let target = column.map(|m| crate::hib::paper::quick_metric_value(m, metric));
            let Some(r) = first_reaching(&c.records, set, metric, target.unwrap_or(f64::INFINITY)) else { continue };
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | {:.3} ({:.1} min, step {}) |",
                c.label,
                metric.label(),
                target.map_or("n/a".into(), |v| format!("{v:.3}")),
                match r.reached_at_seconds {
                    Some(s) => format!("{:.1} min (step {})", s / 60.0, r.reached_at_step.unwrap_or(0)),
                    None => "not reached".into(),
                },
                r.best,
                r.best_at_seconds / 60.0,
                r.best_at_step
            );
        }
    }
    t
}

/// How often the runs watched `set`: `every 1,000 steps, and at the last step`, or `every 250 to
/// 1,000 steps, …` where the runs (or a resumed run) watched at different intervals. Training
/// watches every `watch_every` steps and where it ends, so each run's last gap is left out.
fn watch_spacing(curves: &[RunCurve], set: &str) -> String {
    let mut regular = Vec::new();
    for c in curves {
        let steps: Vec<usize> = c.records.iter().filter(|r| r.sets.contains_key(set)).map(|r| r.step).collect();
        // Runs start at step 0, so the first watch's step is its own interval.
        let gaps: Vec<usize> =
            steps.first().copied().into_iter().chain(steps.windows(2).map(|w| w[1] - w[0])).collect();
        let regular_gaps = if gaps.len() >= 2 { gaps.len() - 1 } else { gaps.len() };
        // A step watched twice (a resumed run) is not an interval.
        regular.extend(gaps[..regular_gaps].iter().filter(|&&g| g > 0));
    }
    let steps = |n: usize| hedge_run::budget::group_digits(n as f64);
    match (regular.iter().min(), regular.iter().max()) {
        (Some(&lo), Some(&hi)) if lo == hi => format!("every {} steps, and at the last step", steps(lo)),
        (Some(&lo), Some(&hi)) => format!("every {} to {} steps, and at the last step", steps(lo), steps(hi)),
        _ => "no watches".to_string(),
    }
}

/// `time-to-quality.md` at `out` for the runs `(label, run directory)` on watched set `set`
/// ([`time_to_quality_markdown`]), and beside it one plot per Table 1 metric against training
/// minutes (`<stem>_<metric>.png`). The runs must share (N, D) and have watched `set`.
pub fn time_to_quality_report(
    runs: &[(String, std::path::PathBuf)],
    set: &str,
    out: &std::path::Path,
) -> Result<String> {
    use hedge_embed::monitor::QuickMetric;
    let mut curves = Vec::new();
    let mut shape = None;
    for (label, dir) in runs {
        let run = RunDir::open(dir)?;
        let config = run.read_config()?.hib;
        match shape {
            None => shape = Some((config.data.digits, config.model.dim)),
            Some(s) if s != (config.data.digits, config.model.dim) => {
                return Err(hedge_embed::EmbedError::run(
                    dir,
                    format!(
                        "is N = {}, D = {}; the other runs are N = {}, D = {}",
                        config.data.digits, config.model.dim, s.0, s.1
                    ),
                )
                .into())
            }
            _ => {}
        }
        let curve = RunCurve::read(&run, label)?;
        if !curve.records.iter().any(|r| r.sets.contains_key(set)) {
            return Err(hedge_embed::EmbedError::run(
                dir,
                format!("has no '{set}' in its monitor.jsonl; train with --watch-every N --watch {set}"),
            )
            .into());
        }
        curves.push(curve);
    }
    let Some((digits, dim)) = shape else {
        return Err(crate::error::invalid("runs", "none", "name at least one run directory"));
    };
    let text = time_to_quality_markdown(&curves, set, digits, dim);
    hedge_run::write_atomic(out, text.as_bytes())?;
    let stem = out.with_extension("");
    for metric in QuickMetric::ALL {
        let series: Vec<(&str, Vec<(f64, f64)>)> = curves
            .iter()
            .map(|c| {
                let points = c
                    .records
                    .iter()
                    .filter_map(|r| Some((r.train_seconds / 60.0, metric.of(r.sets.get(set)?))))
                    .collect();
                (c.label.as_str(), points)
            })
            .collect();
        let name = format!("{metric:?}").to_lowercase();
        hedge_plot::line_chart(
            std::path::Path::new(&format!("{}_{name}.png", stem.display())),
            &series,
            "training minutes (2 CPU threads)",
            &format!("{}, {set}", metric.label()),
            &format!("N = {digits}, D = {dim}: {} against wall-clock", metric.label()),
        )?;
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use hedge_embed::monitor::{MonitorRecord, QuickEval};
    use hedge_embed::run::{RunConfig, MODEL_FILE, MONITOR_FILE};
    use hedge_embed::HibConfig;

    /// A run directory holding what the report reads, config.json and monitor.jsonl, with
    /// test_unseen AP clean 0.95 at 60 s and 0.99 at 120 s, and a last watch at step 1,200.
    fn watched_run(dir: &std::path::Path, digits: usize) {
        let run = RunDir::create(dir).unwrap();
        let hib = HibConfig::default().with_digits(digits).with_dim(2).with_model(hedge_embed::EmbeddingKind::Gaussian);
        let (command, hedge_version, libtorch) = (String::new(), String::new(), String::new());
        let config = RunConfig {
            schema: hedge_embed::run::RUN_SCHEMA,
            hib,
            device: "cpu".into(),
            threads: 2,
            command,
            hedge_version,
            libtorch,
        };
        run.write_config(&config).unwrap();
        // Opening a run checks that its weights exist; the report never reads them.
        std::fs::write(run.file(MODEL_FILE), b"").unwrap();
        for (step, train_seconds, ap_clean) in [(500, 60.0, 0.95), (1000, 120.0, 0.99), (1200, 144.0, 0.99)] {
            let q = QuickEval { ap_clean, ap_corrupt: 0.5, knn_clean: 0.5, knn_corrupt: 0.3 };
            let sets = BTreeMap::from([("test_unseen".to_string(), q)]);
            let record = MonitorRecord { step, train_seconds, ema: false, sets, eval_seconds: 1.0 };
            run.append_json_line(MONITOR_FILE, &record).unwrap();
        }
    }

    #[test]
    fn time_to_quality_reports_the_minute_a_paper_value_is_first_reached() {
        let dir = tempfile::tempdir().unwrap();
        watched_run(&dir.path().join("a"), 2);
        let out = dir.path().join("ttq.md");
        let text = time_to_quality_report(&[("MoG-1".into(), dir.path().join("a"))], "test_unseen", &out).unwrap();
        // Paper Table 1, N = 2, D = 2, MoG-1: AP clean 0.989, reached at the 2-minute watch.
        assert!(text.contains("| MoG-1 | verification AP, clean | 0.989 | 2.0 min (step 1000) |"), "{text}");
        // The header states the interval the run actually watched at (steps 500, 1,000 and its
        // last step, 1,200).
        assert!(text.contains("(one Monte-Carlo repeat, every 500 steps, and at the last step)"), "{text}");
        assert!(text.contains("| MoG-1 | KNN accuracy, clean | 0.879 | not reached | 0.500"), "{text}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
        assert!(dir.path().join("ttq_apclean.png").is_file());
        // Runs of different (N, D) and unwatched sets are refused with the run named.
        watched_run(&dir.path().join("b"), 3);
        let runs = [("a".into(), dir.path().join("a")), ("b".into(), dir.path().join("b"))];
        let e = time_to_quality_report(&runs, "test_unseen", &out).unwrap_err().to_string();
        assert!(e.contains("N = 3") && e.contains("'"), "{e}");
        let e = time_to_quality_report(&runs[..1], "validation", &out).unwrap_err().to_string();
        assert!(e.contains("no 'validation'"), "{e}");
    }
}
