//! Calibration of match probabilities and selective prediction by uncertainty.

use crate::error::{check_finite, check_same_len};
use crate::{EvalError, Result};

/// Expected calibration error of probabilities `p` for binary outcomes `y` over `bins`
/// equal-width bins of [0, 1]: Σ_b (n_b / n) · |mean(y in b) − mean(p in b)|. A probability of
/// exactly 1 falls in the last bin.
pub fn expected_calibration_error(p: &[f64], y: &[bool], bins: usize) -> Result<f64> {
    check_same_len("probabilities", p.len(), "outcomes", y.len())?;
    check_finite("probabilities", p)?;
    if p.is_empty() || bins == 0 {
        return Err(EvalError::Undefined("ECE needs predictions and at least one bin".into()));
    }
    if let Some(i) = p.iter().position(|v| !(0.0..=1.0).contains(v)) {
        return Err(EvalError::Undefined(format!("probability {} at index {i} is outside [0, 1]", p[i])));
    }
    let mut count = vec![0usize; bins];
    let mut sum_p = vec![0.0; bins];
    let mut sum_y = vec![0.0; bins];
    for (&pi, &yi) in p.iter().zip(y) {
        let b = ((pi * bins as f64) as usize).min(bins - 1);
        count[b] += 1;
        sum_p[b] += pi;
        sum_y[b] += f64::from(u8::from(yi));
    }
    let n = p.len() as f64;
    Ok((0..bins).filter(|&b| count[b] > 0).map(|b| (sum_y[b] - sum_p[b]).abs() / n).sum())
}

/// The risk–coverage curve of selective prediction: inputs sorted by `uncertainty` (most
/// certain first); at coverage k/n the risk is the error rate among the k most certain.
#[derive(Debug, Clone, PartialEq)]
pub struct RiskCoverage {
    /// Coverage k/n for k = 1..=n.
    pub coverage: Vec<f64>,
    /// Error rate among the k most certain inputs.
    pub risk: Vec<f64>,
    /// Area under the curve: the mean of `risk` over all k (Geifman et al.'s AURC).
    pub aurc: f64,
}

/// Risk–coverage of `correct` predictions ranked by `uncertainty` (ties keep input order).
pub fn risk_coverage(uncertainty: &[f64], correct: &[bool]) -> Result<RiskCoverage> {
    check_same_len("uncertainty", uncertainty.len(), "correct", correct.len())?;
    check_finite("uncertainty", uncertainty)?;
    if correct.is_empty() {
        return Err(EvalError::Undefined("risk-coverage of zero inputs".into()));
    }
    let mut order: Vec<usize> = (0..correct.len()).collect();
    order.sort_by(|&a, &b| uncertainty[a].total_cmp(&uncertainty[b]));
    let n = correct.len();
    let mut errors = 0usize;
    let (mut coverage, mut risk) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (k, &i) in order.iter().enumerate() {
        errors += usize::from(!correct[i]);
        coverage.push((k + 1) as f64 / n as f64);
        risk.push(errors as f64 / (k + 1) as f64);
    }
    let aurc = risk.iter().sum::<f64>() / n as f64;
    Ok(RiskCoverage { coverage, risk, aurc })
}

/// Splits indices `0..values.len()` into `bins` equal-size groups by ascending value (the
/// first `n mod bins` groups get one extra), as Section 4.4 bins test images by η.
pub fn equal_count_bins(values: &[f64], bins: usize) -> Result<Vec<Vec<usize>>> {
    check_finite("values", values)?;
    if bins == 0 || values.len() < bins {
        return Err(EvalError::Undefined(format!("cannot split {} values into {bins} bins", values.len())));
    }
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let (size, extra) = (values.len() / bins, values.len() % bins);
    let mut out = Vec::with_capacity(bins);
    let mut start = 0;
    for b in 0..bins {
        let len = size + usize::from(b < extra);
        out.push(order[start..start + len].to_vec());
        start += len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ece_by_hand() {
        // Bin [0.8, 0.9): p = 0.8, 0.85 with outcomes 1, 0 → |0.5 − 0.825| · 2/4;
        // bin [0.2, 0.3): p = 0.2, 0.2 with outcomes 0, 0 → |0 − 0.2| · 2/4.
        let ece = expected_calibration_error(&[0.8, 0.85, 0.2, 0.2], &[true, false, false, false], 10).unwrap();
        assert!((ece - (0.325 * 0.5 + 0.2 * 0.5)).abs() < 1e-12);
        // Perfect calibration in every bin.
        let ece = expected_calibration_error(&[1.0, 1.0, 0.0], &[true, true, false], 10).unwrap();
        assert_eq!(ece, 0.0);
        assert!(expected_calibration_error(&[1.2], &[true], 10).is_err());
    }

    #[test]
    fn risk_coverage_by_hand() {
        // Most certain first: correct, wrong, correct, wrong → risks 0, 1/2, 1/3, 2/4.
        let rc = risk_coverage(&[0.1, 0.3, 0.2, 0.9], &[true, true, false, false]).unwrap();
        assert_eq!(rc.risk, vec![0.0, 0.5, 1.0 / 3.0, 0.5]);
        assert_eq!(rc.coverage, vec![0.25, 0.5, 0.75, 1.0]);
        assert!((rc.aurc - (0.0 + 0.5 + 1.0 / 3.0 + 0.5) / 4.0).abs() < 1e-15);
    }

    #[test]
    fn an_uncertainty_that_ranks_errors_last_beats_one_that_ranks_them_first() {
        let correct = [true, true, true, false, false];
        let good = risk_coverage(&[0.0, 0.1, 0.2, 0.8, 0.9], &correct).unwrap().aurc;
        let bad = risk_coverage(&[0.9, 0.8, 0.7, 0.1, 0.0], &correct).unwrap().aurc;
        assert!(good < bad);
    }

    #[test]
    fn bins_are_equal_sized_and_sorted() {
        let v: Vec<f64> = (0..43).map(|i| ((i * 17) % 43) as f64).collect();
        let bins = equal_count_bins(&v, 20).unwrap();
        assert_eq!(bins.iter().map(Vec::len).sum::<usize>(), 43);
        assert!(bins.iter().all(|b| b.len() == 2 || b.len() == 3));
        for w in bins.windows(2) {
            let max_prev = w[0].iter().map(|&i| v[i]).fold(f64::MIN, f64::max);
            let min_next = w[1].iter().map(|&i| v[i]).fold(f64::MAX, f64::min);
            assert!(max_prev <= min_next);
        }
        assert!(equal_count_bins(&v[..5], 20).is_err());
    }
}
