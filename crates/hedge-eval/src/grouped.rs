//! A metric overall, within each group, and as the gap between groups (fairlearn's
//! `MetricFrame`), with the rates fairness audits compare: assessing is kept apart from
//! mitigating, which lives in the pillars that train.
//!
//! ```
//! use hedge_eval::grouped::{selection_rate, MetricFrame};
//! let predicted = [1, 0, 0, 1, 1, 0, 1, 1];
//! let sex = [0, 0, 0, 0, 1, 1, 1, 1];
//! let rate = MetricFrame::new(&sex, |rows| selection_rate(&predicted, rows)).unwrap();
//! assert_eq!((rate.overall, rate.by_group[&0], rate.by_group[&1]), (0.625, 0.5, 0.75));
//! assert_eq!((rate.difference(), rate.ratio()), (0.25, 0.5 / 0.75));
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::check_same_len;
use crate::{EvalError, Result};

/// One metric over every row and over the rows of each group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricFrame<G: Ord> {
    /// Over every row.
    pub overall: f64,
    /// Over each group's rows (every group that has a row).
    pub by_group: BTreeMap<G, f64>,
}

impl<G: Ord + Clone> MetricFrame<G> {
    /// `metric(rows)` over all rows and over the rows of each value of `groups` (one per row).
    ///
    /// # Errors
    /// [`EvalError::Undefined`] when there are no rows.
    pub fn new(groups: &[G], metric: impl Fn(&[usize]) -> f64) -> Result<Self> {
        if groups.is_empty() {
            return Err(EvalError::Undefined("a metric by group needs at least one row".into()));
        }
        let mut rows: BTreeMap<G, Vec<usize>> = BTreeMap::new();
        for (i, g) in groups.iter().enumerate() {
            rows.entry(g.clone()).or_default().push(i);
        }
        let all: Vec<usize> = (0..groups.len()).collect();
        Ok(MetricFrame { overall: metric(&all), by_group: rows.into_iter().map(|(g, r)| (g, metric(&r))).collect() })
    }

    /// The smallest group value (the worst group, for an accuracy).
    pub fn group_min(&self) -> f64 {
        self.by_group.values().copied().fold(f64::INFINITY, f64::min)
    }

    /// The largest group value.
    pub fn group_max(&self) -> f64 {
        self.by_group.values().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    /// Largest minus smallest group value (fairlearn's `difference()`, `between_groups`).
    pub fn difference(&self) -> f64 {
        self.group_max() - self.group_min()
    }

    /// Smallest over largest group value (fairlearn's `ratio()`; 1 when both are 0).
    pub fn ratio(&self) -> f64 {
        let (lo, hi) = (self.group_min(), self.group_max());
        if hi == 0.0 {
            1.0
        } else {
            lo / hi
        }
    }

    /// `a`'s value minus `b`'s: a signed gap (AIF360's statistical parity difference is
    /// `unprivileged − privileged`); `None` when either group has no row.
    pub fn difference_between(&self, a: &G, b: &G) -> Option<f64> {
        Some(self.by_group.get(a)? - self.by_group.get(b)?)
    }
}

/// The share of `rows` predicted positive (`predicted` 1); 0 for no rows.
pub fn selection_rate(predicted: &[u32], rows: &[usize]) -> f64 {
    share(rows, |i| predicted[i] == 1)
}

/// The share of `rows` predicted right; 0 for no rows.
pub fn accuracy(predicted: &[u32], target: &[u32], rows: &[usize]) -> f64 {
    share(rows, |i| predicted[i] == target[i])
}

/// The share of the positive (`target` 1) rows among `rows` predicted positive; 0 for none.
pub fn true_positive_rate(predicted: &[u32], target: &[u32], rows: &[usize]) -> f64 {
    let positives: Vec<usize> = rows.iter().copied().filter(|&i| target[i] == 1).collect();
    selection_rate(predicted, &positives)
}

/// The share of the negative (`target` 0) rows among `rows` predicted positive; 0 for none.
pub fn false_positive_rate(predicted: &[u32], target: &[u32], rows: &[usize]) -> f64 {
    let negatives: Vec<usize> = rows.iter().copied().filter(|&i| target[i] == 0).collect();
    selection_rate(predicted, &negatives)
}

/// The larger of the true- and false-positive rates' gaps between groups (fairlearn's
/// `equalized_odds_difference`).
///
/// # Errors
/// [`EvalError::Undefined`] for no rows; [`EvalError::LengthMismatch`] when the slices differ in
/// length.
pub fn equalised_odds_difference<G: Ord + Clone>(predicted: &[u32], target: &[u32], groups: &[G]) -> Result<f64> {
    check_same_len("predicted", predicted.len(), "target", target.len())?;
    check_same_len("predicted", predicted.len(), "groups", groups.len())?;
    let tpr = MetricFrame::new(groups, |rows| true_positive_rate(predicted, target, rows))?;
    let fpr = MetricFrame::new(groups, |rows| false_positive_rate(predicted, target, rows))?;
    Ok(tpr.difference().max(fpr.difference()))
}

fn share(rows: &[usize], hit: impl Fn(usize) -> bool) -> f64 {
    if rows.is_empty() {
        return 0.0;
    }
    rows.iter().filter(|&&i| hit(i)).count() as f64 / rows.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values from fairlearn 0.15.0 (scikit-learn's accuracy_score):
    //
    //   import numpy as np
    //   from fairlearn.metrics import (MetricFrame, selection_rate, true_positive_rate,
    //       false_positive_rate, demographic_parity_difference, demographic_parity_ratio,
    //       equalized_odds_difference)
    //   from sklearn.metrics import accuracy_score
    //   y_true = np.array([1,0,1,1,0,0,1,0,1,0,1,1])
    //   y_pred = np.array([1,0,0,1,1,0,1,1,1,0,0,1])
    //   sex    = np.array([0,0,0,0,0,1,1,1,1,1,1,1])
    //   mf = MetricFrame(metrics={"acc": accuracy_score, "sel": selection_rate,
    //       "tpr": true_positive_rate, "fpr": false_positive_rate},
    //       y_true=y_true, y_pred=y_pred, sensitive_features=sex)
    //   mf.overall, mf.by_group, mf.difference(), mf.ratio()
    //   demographic_parity_difference(y_true, y_pred, sensitive_features=sex)  # 0.028571…
    //   demographic_parity_ratio(y_true, y_pred, sensitive_features=sex)       # 0.952380…
    //   equalized_odds_difference(y_true, y_pred, sensitive_features=sex)      # 0.166666…
    //   MetricFrame(metrics=accuracy_score, y_true=y_true, y_pred=y_pred,
    //       sensitive_features=np.array([f"{a}{b}" for a, b in zip(y_true, sex)])).group_min()  # 0.5
    const TARGET: [u32; 12] = [1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1];
    const PREDICTED: [u32; 12] = [1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1];
    const SEX: [u32; 12] = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1];

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn frames_match_fairlearn() {
        let acc = MetricFrame::new(&SEX, |r| accuracy(&PREDICTED, &TARGET, r)).unwrap();
        close(acc.overall, 0.6666666666666666);
        close(acc.by_group[&0], 0.6);
        close(acc.by_group[&1], 0.7142857142857143);
        close(acc.difference(), 0.11428571428571432);
        close(acc.ratio(), 0.84);
        let sel = MetricFrame::new(&SEX, |r| selection_rate(&PREDICTED, r)).unwrap();
        close(sel.overall, 0.5833333333333334);
        close(sel.difference(), 0.02857142857142858);
        close(sel.ratio(), 0.9523809523809523);
        // AIF360's signed gap, unprivileged (1) minus privileged (0).
        close(sel.difference_between(&1, &0).unwrap(), 0.5714285714285714 - 0.6);
        assert_eq!(sel.difference_between(&1, &2), None);
        let tpr = MetricFrame::new(&SEX, |r| true_positive_rate(&PREDICTED, &TARGET, r)).unwrap();
        close(tpr.overall, 0.7142857142857143);
        close(tpr.difference(), 0.08333333333333337);
        let fpr = MetricFrame::new(&SEX, |r| false_positive_rate(&PREDICTED, &TARGET, r)).unwrap();
        close(fpr.by_group[&1], 0.3333333333333333);
        close(fpr.ratio(), 0.6666666666666666);
        close(equalised_odds_difference(&PREDICTED, &TARGET, &SEX).unwrap(), 0.16666666666666669);
        // The worst (target, sex) group.
        let cells: Vec<(u32, u32)> = TARGET.iter().copied().zip(SEX).collect();
        let worst = MetricFrame::new(&cells, |r| accuracy(&PREDICTED, &TARGET, r)).unwrap();
        close(worst.group_min(), 0.5);
        assert_eq!(worst.by_group.len(), 4);
    }

    #[test]
    fn no_rows_or_mismatched_lengths_are_refused() {
        assert!(MetricFrame::<u32>::new(&[], |_| 0.0).is_err());
        assert!(equalised_odds_difference(&PREDICTED[..3], &TARGET, &SEX).is_err());
    }
}
