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

/// Area under the ROC curve of `scores` (higher = more likely positive) against `labels`,
/// exactly as scikit-learn's `roc_auc_score`: the probability that a random positive scores above
/// a random negative, a tie counting one half (the trapezoid over distinct thresholds).
///
/// # Errors
/// Lengths that differ, a non-finite score, or labels of one class only (AUC is undefined).
pub fn roc_auc(scores: &[f64], labels: &[bool]) -> Result<f64> {
    check_same_len("scores", scores.len(), "labels", labels.len())?;
    check_finite("scores", scores)?;
    let positives = labels.iter().filter(|&&l| l).count();
    let negatives = labels.len() - positives;
    if positives == 0 || negatives == 0 {
        return Err(EvalError::Undefined("ROC AUC needs both positive and negative labels".into()));
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Mann–Whitney: the positives' ranks (ties given their mean rank).
    let mut rank_sum = 0.0;
    let mut k = 0;
    while k < order.len() {
        let start = k;
        while k < order.len() && scores[order[k]] == scores[order[start]] {
            k += 1;
        }
        let mean_rank = (start + 1 + k) as f64 / 2.0;
        rank_sum += mean_rank * order[start..k].iter().filter(|&&i| labels[i]).count() as f64;
    }
    let (p, n) = (positives as f64, negatives as f64);
    Ok((rank_sum - p * (p + 1.0) / 2.0) / (p * n))
}

/// How well an uncertainty predicts errors: [`roc_auc`] and [`average_precision`] of
/// `uncertainty` (higher = less sure) for the wrong answers (`correct[i]` false), as PCME++ and
/// the probabilistic-embedding literature score η. 0.5 AUROC is an uncertainty that knows
/// nothing; the AUPRC's floor is the error rate.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorDetection {
    pub auroc: f64,
    pub auprc: f64,
    /// The share of wrong answers (the AUPRC of an uninformed uncertainty).
    pub error_rate: f64,
}

/// [`ErrorDetection`] of `uncertainty` for the answers `correct`.
///
/// # Errors
/// Lengths that differ, a non-finite uncertainty, or answers all right or all wrong.
pub fn error_detection(uncertainty: &[f64], correct: &[bool]) -> Result<ErrorDetection> {
    let wrong: Vec<bool> = correct.iter().map(|&c| !c).collect();
    Ok(ErrorDetection {
        auroc: roc_auc(uncertainty, &wrong)?,
        auprc: average_precision(uncertainty, &wrong)?,
        error_rate: wrong.iter().filter(|&&w| w).count() as f64 / wrong.len().max(1) as f64,
    })
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

    // Reference values from scikit-learn 1.9.1:
    //   from sklearn.metrics import roc_auc_score as auc, average_precision_score as ap
    //   auc([1,0,1,1,0,0,1,0], [0.9,0.8,0.7,0.7,0.5,0.4,0.3,0.3])  # 0.65625, with ties
    //   auc([0,1,1,0,1], [0.1,0.4,0.35,0.8,0.9])                     # 0.6666666666666666
    //   eta = [0.9,0.1,0.5,0.7,0.2,0.3,0.8,0.4,0.6,0.05,0.5]
    //   correct = [0,1,1,1,1,0,0,1,0,1,0]; err = [1 - c for c in correct]
    //   auc(err, eta), ap(err, eta)                                   # 0.8166666666666667 0.8083333333333333
    #[test]
    fn roc_auc_and_error_detection_match_scikit_learn() {
        let labels = [true, false, true, true, false, false, true, false];
        let scores = [0.9, 0.8, 0.7, 0.7, 0.5, 0.4, 0.3, 0.3];
        assert!((roc_auc(&scores, &labels).unwrap() - 0.65625).abs() < 1e-12);
        let labels = [false, true, true, false, true];
        let scores = [0.1, 0.4, 0.35, 0.8, 0.9];
        assert!((roc_auc(&scores, &labels).unwrap() - 0.6666666666666666).abs() < 1e-12);
        let eta = [0.9, 0.1, 0.5, 0.7, 0.2, 0.3, 0.8, 0.4, 0.6, 0.05, 0.5];
        let correct = [false, true, true, true, true, false, false, true, false, true, false];
        let d = error_detection(&eta, &correct).unwrap();
        assert!((d.auroc - 0.8166666666666667).abs() < 1e-12 && (d.auprc - 0.8083333333333333).abs() < 1e-12);
        assert!((d.error_rate - 5.0 / 11.0).abs() < 1e-15);
        assert!(matches!(roc_auc(&[0.1, 0.2], &[true, true]), Err(EvalError::Undefined(_))));
        assert!(matches!(error_detection(&[0.1], &[true, false]), Err(EvalError::LengthMismatch { .. })));
    }

    const SKLEARN_TIES: f64 = 0.75;
    const SKLEARN_PLAIN: f64 = 0.8055555555555556;
}
