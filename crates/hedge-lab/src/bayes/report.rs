//! The Bayesian toolbox's fragments: `gp.md`, the GP suite's runs (the exact ARD GP on standard
//! split 0, FITC and VFE on protein) in one table, from each folder's `summary.json`; and
//! `gp-speed.md`, hedge's exact GP against scikit-learn's on the same rows
//! (`bench-gp-sklearn.json`, `scripts/bench-gp-sklearn.sh`).

use serde::Deserialize;

use super::bench::GpBenchReport;
use super::experiment::GpReport;
use crate::report::format::{fixed, num, table, thousands};
use crate::report::fragment::{Fragment, Results};
use crate::Result;

/// The GP suite's folders under `results/bayes/`, in the table's order.
const GP_RUNS: [&str; 3] = ["gp-split0", "protein-fitc256", "protein-vfe256"];

/// Every fragment of the Bayesian toolbox.
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    Ok(vec![Fragment::new("bayes", "gp", gp(results)?), Fragment::new("bayes", "gp-speed", gp_speed(results)?)])
}

/// `scripts/bench-gp-sklearn.sh`'s record: both sides on the same kin8nm rows.
#[derive(Debug, Deserialize)]
struct GpAgainstSklearn {
    date: String,
    machine: String,
    scikit_learn: String,
    hedge: GpBenchReport,
    sklearn: Vec<SklearnGpFit>,
}

/// One line of `benches/sklearn_gp.py`.
#[derive(Debug, Deserialize)]
struct SklearnGpFit {
    rows: usize,
    fit_seconds: f64,
    log_marginal_likelihood_standardised: f64,
}

/// The exact GP against scikit-learn's: the optima both reach and the ratio of fit times.
fn gp_speed(results: &Results) -> Result<String> {
    const FILE: &str = "results/bayes/bench-gp-sklearn.json";
    let b: GpAgainstSklearn = results.json(FILE)?;
    let (mut rows, mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for sk in &b.sklearn {
        let case = b
            .hedge
            .cases
            .iter()
            .find(|c| c.model == "exact" && c.rows == sk.rows)
            .ok_or_else(|| crate::report::fragment::missing(FILE, format!("no hedge fit on {} rows", sk.rows)))?;
        let (fit, lml) = case
            .fit_seconds
            .zip(case.log_marginal_likelihood)
            .ok_or_else(|| crate::report::fragment::missing(FILE, "a hedge case without its fit (run with --fit)"))?;
        rows.push(thousands(sk.rows as u64));
        ours.push(num(lml, 4));
        theirs.push(num(sk.log_marginal_likelihood_standardised, 4));
        ratios.push(format!("{}x", fixed(sk.fit_seconds / fit, 1)));
    }
    Ok(format!(
        "The exact GP reaches the same optimum as scikit-learn's `GaussianProcessRegressor` on {} kin8nm rows (log \
         marginal likelihoods {}, scikit-learn {} {}) {} faster per fit (`results/bayes/bench-gp-sklearn.json`, {}, {}, \
         `scripts/bench-gp-sklearn.sh`).",
        rows.join(" and "),
        ours.join(" and "),
        b.scikit_learn,
        theirs.join(" and "),
        ratios.join(" and "),
        b.machine,
        b.date
    ))
}

fn gp(results: &Results) -> Result<String> {
    let mut rows = Vec::new();
    for run in GP_RUNS {
        let reports: Vec<GpReport> = results.json(&format!("results/bayes/{run}/summary.json"))?;
        for r in reports {
            let model = r.model.replace("fitc-", "FITC, M = ").replace("vfe-", "VFE, M = ");
            let rmse = if r.rmse < 0.1 { fixed(r.rmse, 4) } else { fixed(r.rmse, 3) };
            rows.push(vec![
                r.dataset.trim_start_matches("uci/").to_string(),
                model,
                format!("{} / {}", thousands(r.train_rows as u64), thousands(r.test_rows as u64)),
                rmse,
                num(r.nll, 3),
                fixed(r.fit_seconds, 1),
                format!("`results/bayes/{run}/`"),
            ]);
        }
    }
    Ok(format!(
        "GP regression on standard split 0 (ARD-RBF kernel, inputs standardised on the training rows; RMSE and mean \
         test NLL on the original target scale; fit seconds on the 2 cores):\n\n{}",
        table(&["data", "model", "train / test rows", "test RMSE", "test NLL", "fit s", "folder"], &rows)
    ))
}
