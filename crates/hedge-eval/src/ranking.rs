//! Ranking metrics for verification scores.

use crate::error::{check_finite, check_same_len};
use crate::{EvalError, Result};

/// Average precision of `scores` (higher = more likely a match) against `labels`, exactly as
/// scikit-learn's `average_precision_score`: `AP = Σ_n (R_n − R_{n−1}) P_n` over the distinct
/// score thresholds, tied scores entering together.
///
/// # Errors
/// Lengths that differ, a non-finite score, or no positive label (AP is undefined).
pub fn average_precision(scores: &[f64], labels: &[bool]) -> Result<f64> {
    check_same_len("scores", scores.len(), "labels", labels.len())?;
    check_finite("scores", scores)?;
    let positives = labels.iter().filter(|&&l| l).count();
    if positives == 0 {
        return Err(EvalError::Undefined("average precision needs at least one positive label".into()));
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut fp) = (0usize, 0usize);
    let mut ap = 0.0;
    let mut last_recall = 0.0;
    let mut k = 0;
    while k < order.len() {
        // Everything tied with this score crosses the threshold at once.
        let threshold = scores[order[k]];
        while k < order.len() && scores[order[k]] == threshold {
            if labels[order[k]] {
                tp += 1;
            } else {
                fp += 1;
            }
            k += 1;
        }
        let recall = tp as f64 / positives as f64;
        let precision = tp as f64 / (tp + fp) as f64;
        ap += (recall - last_recall) * precision;
        last_recall = recall;
    }
    Ok(ap)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values from scikit-learn 1.9.1:
    //   from sklearn.metrics import average_precision_score as ap
    //   ap([1,0,1,1,0,0,1,0], [0.9,0.8,0.7,0.7,0.5,0.4,0.3,0.3])  # with ties
    //   ap([0,1,1,0,1], [0.1,0.4,0.35,0.8,0.9])
    #[test]
    fn matches_scikit_learn() {
        let labels = [true, false, true, true, false, false, true, false];
        let scores = [0.9, 0.8, 0.7, 0.7, 0.5, 0.4, 0.3, 0.3];
        assert!((average_precision(&scores, &labels).unwrap() - SKLEARN_TIES).abs() < 1e-12);
        let labels = [false, true, true, false, true];
        let scores = [0.1, 0.4, 0.35, 0.8, 0.9];
        assert!((average_precision(&scores, &labels).unwrap() - SKLEARN_PLAIN).abs() < 1e-12);
    }

    #[test]
    fn perfect_and_constant_rankings() {
        assert_eq!(average_precision(&[0.9, 0.8, 0.1], &[true, true, false]).unwrap(), 1.0);
        // All tied: one threshold, AP = prevalence.
        assert!((average_precision(&[0.5; 4], &[true, false, false, false]).unwrap() - 0.25).abs() < 1e-15);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(matches!(average_precision(&[0.1], &[true, false]), Err(EvalError::LengthMismatch { .. })));
        assert!(matches!(average_precision(&[f64::NAN], &[true]), Err(EvalError::NonFinite { .. })));
        assert!(matches!(average_precision(&[0.3], &[false]), Err(EvalError::Undefined(_))));
    }

    const SKLEARN_TIES: f64 = 0.75;
    const SKLEARN_PLAIN: f64 = 0.8055555555555556;
}
