//! `hedge bench bayes`: seconds per GP objective-and-gradient evaluation (and per complete fit):
//! the exact GP on kin8nm rows, FITC and VFE on protein (45,730 rows).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::bayes::experiment::uci_split;
use crate::error::Result;
use hedge_bayes::gp::{log_marginal_likelihood, GpConfig};
use hedge_bayes::sparse::{sparse_objective, SparseGpConfig, SparseMethod};

/// What to time (`hedge bench bayes` takes these as its flags).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct GpBench {
    /// Training rows for the exact GP (the first rows of kin8nm split 0).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "2000,5000"))]
    pub exact_rows: Vec<usize>,
    /// Pseudo-inputs for FITC and VFE on protein split 0 (`--inducing` alone: no sparse GP).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', num_args = 0.., default_value = "256,512"))]
    pub inducing: Vec<usize>,
    /// Timed objective-and-gradient evaluations per case (after one untimed).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 3))]
    pub evals: usize,
    /// Also time complete fits (L-BFGS to convergence, no restarts).
    #[cfg_attr(feature = "clap", arg(long))]
    pub fit: bool,
    /// L-BFGS iterations per fit.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 200))]
    pub max_iters: usize,
}

/// One timed case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpBenchCase {
    pub dataset: String,
    pub fit_seconds: Option<f64>,
    /// Pseudo-inputs (sparse GPs only).
    pub inducing: Option<usize>,
    /// L-BFGS iterations of the timed fit.
    pub iterations: Option<usize>,
    /// The timed fit's log marginal likelihood (standardised targets; the sparse GPs' objective),
    /// to compare optima with another implementation (absent in reports written before it was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_marginal_likelihood: Option<f64>,
    /// `exact`, `fitc` or `vfe`.
    pub model: String,
    pub rows: usize,
    pub seconds_per_evaluation: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpBenchReport {
    pub cases: Vec<GpBenchCase>,
    pub evals: usize,
    pub threads: usize,
    /// Every field left `null`, and why (absent when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<hedge_run::undefined::Undefined>,
}

impl GpBenchReport {
    /// The report as a Markdown table, a row per case.
    pub fn markdown(&self) -> String {
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
        let mut out = String::from(
            "| model | data | rows | M | s / evaluation (value + gradient) | fit s | iterations |\n|---|---|---|---|---|---|---|",
        );
        for r in &self.cases {
            out.push_str(&format!(
                "\n| {} | {} | {} | {} | {:.3} | {} | {} |",
                r.model,
                r.dataset,
                r.rows,
                or_dash(r.inducing.map(|m| m.to_string())),
                r.seconds_per_evaluation,
                or_dash(r.fit_seconds.map(|s| format!("{s:.2}"))),
                or_dash(r.iterations.map(|i| i.to_string())),
            ));
        }
        out
    }
}

impl GpBench {
    /// Times every case on the UCI sets under `root`.
    pub fn run(&self, root: &hedge_data::DataRoot) -> Result<GpBenchReport> {
        let evals = self.evals.max(1);
        let time_evals = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
            f()?; // warm-up (allocations, thread pool)
            let start = Instant::now();
            for _ in 0..evals {
                f()?;
            }
            Ok(start.elapsed().as_secs_f64() / evals as f64)
        };
        let mut cases = Vec::new();
        if !self.exact_rows.is_empty() {
            let (_, s) = uci_split(root, "uci/kin8nm", None, 0)?;
            for &n in &self.exact_rows {
                let n = n.min(s.train_y.len());
                let x = s.train_x.as_ref().subrows(0, n);
                let y = &s.train_y[..n];
                let config = GpConfig::default().with_restarts(0).with_max_iters(self.max_iters);
                let h = config.initial(x.ncols());
                let seconds_per_evaluation = time_evals(&mut || Ok(log_marginal_likelihood(x, y, &h).map(|_| ())?))?;
                let (fit_seconds, run) = if self.fit {
                    let start = Instant::now();
                    let fitted = config.fit(x, y)?;
                    (Some(start.elapsed().as_secs_f64()), fitted.runs.first().cloned())
                } else {
                    (None, None)
                };
                cases.push(GpBenchCase {
                    dataset: "kin8nm".into(),
                    fit_seconds,
                    inducing: None,
                    iterations: run.as_ref().map(|r| r.iterations),
                    log_marginal_likelihood: run.map(|r| r.log_marginal_likelihood),
                    model: "exact".into(),
                    rows: n,
                    seconds_per_evaluation,
                });
            }
        }
        if !self.inducing.is_empty() {
            let (_, s) = uci_split(root, "uci/protein-tertiary-structure", None, 0)?;
            for &m in &self.inducing {
                for method in [SparseMethod::Fitc, SparseMethod::Vfe] {
                    let config = SparseGpConfig::default()
                        .with_inducing(m)
                        .with_method(method)
                        .with_gp(GpConfig::default().with_restarts(0).with_max_iters(self.max_iters));
                    let h = config.gp.initial(s.train_x.ncols());
                    let z = s.train_x.as_ref().subrows(0, m.min(s.train_y.len())).to_owned();
                    let seconds_per_evaluation = time_evals(&mut || {
                        Ok(sparse_objective(s.train_x.as_ref(), &s.train_y, z.as_ref(), &h, method, config.jitter)
                            .map(|_| ())?)
                    })?;
                    let (fit_seconds, run) = if self.fit {
                        let start = Instant::now();
                        let fitted = config.fit(s.train_x.as_ref(), &s.train_y)?;
                        (Some(start.elapsed().as_secs_f64()), fitted.runs.first().cloned())
                    } else {
                        (None, None)
                    };
                    cases.push(GpBenchCase {
                        dataset: "protein-tertiary-structure".into(),
                        fit_seconds,
                        inducing: Some(m),
                        iterations: run.as_ref().map(|r| r.iterations),
                        log_marginal_likelihood: run.map(|r| r.log_marginal_likelihood),
                        model: if method == SparseMethod::Fitc { "fitc" } else { "vfe" }.into(),
                        rows: s.train_y.len(),
                        seconds_per_evaluation,
                    });
                }
            }
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut report = GpBenchReport { cases, evals, threads, undefined: Vec::new() };
        report.undefined = hedge_run::undefined::explain_nulls(
            &report,
            &[
                hedge_run::undefined::NullReason::new("cases[*].fit_seconds", "no fit was timed (give --fit)"),
                hedge_run::undefined::NullReason::new("cases[*].iterations", "no fit was timed (give --fit)"),
                hedge_run::undefined::NullReason::new("cases[*].inducing", "an exact GP has no pseudo-inputs"),
            ],
        );
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One small case of each kind on the real sets: every time is positive, the fits ran, and
    /// the report reads back.
    #[test]
    fn small_exact_and_sparse_cases_are_timed() {
        let root = hedge_data::DataRoot::from_env();
        let bench = GpBench { exact_rows: vec![100], inducing: vec![8], evals: 1, fit: true, max_iters: 3 };
        let report = bench.run(&root).unwrap();
        let models: Vec<&str> = report.cases.iter().map(|c| c.model.as_str()).collect();
        assert_eq!(models, vec!["exact", "fitc", "vfe"]);
        assert_eq!((report.cases[0].rows, report.cases[1].inducing), (100, Some(8)));
        for c in &report.cases {
            assert!(c.seconds_per_evaluation > 0.0 && c.fit_seconds.is_some_and(|s| s > 0.0), "{c:?}");
            assert!(c.iterations.is_some_and(|i| i <= 3), "{c:?}");
        }
        let back: GpBenchReport = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        assert_eq!(back, report);
    }
}
