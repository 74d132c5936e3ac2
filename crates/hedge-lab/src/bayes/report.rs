//! The Bayesian toolbox's fragment `results/bayes/report/gp.md`: the GP suite's runs (the exact
//! ARD GP on standard split 0, FITC and VFE on protein) in one table, from each folder's
//! `summary.json`.

use super::experiment::GpReport;
use crate::report::format::{fixed, num, table, thousands};
use crate::report::{Fragment, Results};
use crate::Result;

/// The GP suite's folders under `results/bayes/`, in the table's order.
const GP_RUNS: [&str; 3] = ["gp-split0", "protein-fitc256", "protein-vfe256"];

/// Every fragment of the Bayesian toolbox.
pub fn fragments(results: &Results) -> Result<Vec<Fragment>> {
    Ok(vec![Fragment::new("bayes", "gp", gp(results)?)])
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
