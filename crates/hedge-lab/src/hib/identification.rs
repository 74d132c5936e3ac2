//! Figures of the identification service (`hedge search`): risk against coverage of the
//! validation probes and of a search's probes.

use std::path::Path;

use hedge_identify::{Calibration, ProbeResult, UncertaintyScore};

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
