//! hedge's uncertainty-quality metrics on a user's own arrays (`hedge.metrics`): the same
//! functions `hedge hib eval` and `hedge hib search` report with.

use hedge_eval::{error_detection, risk_coverage, ReliabilityDiagram};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use crate::value_error;

/// The reliability diagram of probabilities `p` for outcomes `y` over `bins` equal-width bins,
/// as JSON (`hedge_eval::ReliabilityDiagram`: per bin count, mean probability and observed
/// frequency, and the ECE).
#[pyfunction]
pub fn eval_reliability_diagram(
    p: PyReadonlyArray1<'_, f64>,
    y: PyReadonlyArray1<'_, bool>,
    bins: usize,
) -> PyResult<String> {
    crate::guarded(|| {
        let d = ReliabilityDiagram::new(p.as_slice()?, y.as_slice()?, bins).map_err(value_error)?;
        serde_json::to_string(&d).map_err(value_error)
    })
}

/// (coverage, risk, AURC) of answers `correct` ranked by `uncertainty`, most certain first.
#[pyfunction]
pub fn eval_risk_coverage(
    uncertainty: PyReadonlyArray1<'_, f64>,
    correct: PyReadonlyArray1<'_, bool>,
) -> PyResult<(Vec<f64>, Vec<f64>, f64)> {
    crate::guarded(|| {
        let rc = risk_coverage(uncertainty.as_slice()?, correct.as_slice()?).map_err(value_error)?;
        Ok((rc.coverage, rc.risk, rc.aurc))
    })
}

/// (AUROC, AUPRC, error rate) of `uncertainty` for the wrong answers among `correct`.
#[pyfunction]
pub fn eval_error_detection(
    uncertainty: PyReadonlyArray1<'_, f64>,
    correct: PyReadonlyArray1<'_, bool>,
) -> PyResult<(f64, f64, f64)> {
    crate::guarded(|| {
        let d = error_detection(uncertainty.as_slice()?, correct.as_slice()?).map_err(value_error)?;
        Ok((d.auroc, d.auprc, d.error_rate))
    })
}
