//! Calibration of match probabilities and selective prediction by uncertainty.

use crate::error::{check_finite, check_same_len};
use crate::{EvalError, Result};

/// One bin of a [`ReliabilityDiagram`]: the predictions whose probability falls in
/// [`lower`, `upper`) (the last bin also takes 1).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReliabilityBin {
    pub lower: f64,
    pub upper: f64,
    /// How many predictions fall in the bin.
    pub count: usize,
    /// Their mean predicted probability (NaN, written `null`, for an empty bin).
    #[serde(with = "nan_as_null")]
    pub mean_probability: f64,
    /// The share of them whose outcome is positive (NaN, written `null`, for an empty bin).
    #[serde(with = "nan_as_null")]
    pub observed_frequency: f64,
}

/// The reliability diagram of probabilities for binary outcomes over equal-width bins of [0, 1]:
/// per bin, the mean prediction against the observed frequency (a calibrated model lies on the
/// diagonal). scikit-learn's `calibration_curve(strategy="uniform")` gives the same points for
/// the non-empty bins; hedge keeps the empty ones (with `count` 0) so that diagrams of different
/// models line up bin by bin.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReliabilityDiagram {
    pub bins: Vec<ReliabilityBin>,
    /// Σ_b (n_b / n) · |observed_frequency_b − mean_probability_b| ([`expected_calibration_error`]).
    pub ece: f64,
}

impl ReliabilityDiagram {
    /// The diagram of `p` against `y` over `bins` equal-width bins. A probability of exactly 1
    /// falls in the last bin; any other bin is [k/bins, (k+1)/bins).
    ///
    /// # Errors
    /// Lengths that differ, no predictions, zero bins, or a probability outside [0, 1].
    pub fn new(p: &[f64], y: &[bool], bins: usize) -> Result<Self> {
        let mut diagram = ReliabilityAccumulator::new(bins)?;
        diagram.add(p, y)?;
        diagram.finish()
    }

    /// The total number of predictions behind the diagram.
    pub fn count(&self) -> usize {
        self.bins.iter().map(|b| b.count).sum()
    }
}

/// A [`ReliabilityDiagram`] built from several batches of predictions (the repeats of an
/// evaluation): the diagram of all of them together.
#[derive(Debug, Clone)]
pub struct ReliabilityAccumulator {
    count: Vec<usize>,
    sum_p: Vec<f64>,
    sum_y: Vec<f64>,
}

impl ReliabilityAccumulator {
    /// An empty accumulator of `bins` equal-width bins.
    ///
    /// # Errors
    /// Zero bins.
    pub fn new(bins: usize) -> Result<Self> {
        if bins == 0 {
            return Err(EvalError::Undefined("a reliability diagram needs at least one bin".into()));
        }
        Ok(ReliabilityAccumulator { count: vec![0; bins], sum_p: vec![0.0; bins], sum_y: vec![0.0; bins] })
    }

    /// Adds the predictions `p` with outcomes `y`.
    ///
    /// # Errors
    /// Lengths that differ, or a probability that is not finite or outside [0, 1].
    pub fn add(&mut self, p: &[f64], y: &[bool]) -> Result<()> {
        check_same_len("probabilities", p.len(), "outcomes", y.len())?;
        check_finite("probabilities", p)?;
        if let Some(i) = p.iter().position(|v| !(0.0..=1.0).contains(v)) {
            return Err(EvalError::Undefined(format!("probability {} at index {i} is outside [0, 1]", p[i])));
        }
        let bins = self.count.len();
        for (&pi, &yi) in p.iter().zip(y) {
            let b = ((pi * bins as f64) as usize).min(bins - 1);
            self.count[b] += 1;
            self.sum_p[b] += pi;
            self.sum_y[b] += f64::from(u8::from(yi));
        }
        Ok(())
    }

    /// The diagram of everything added.
    ///
    /// # Errors
    /// Nothing was added.
    pub fn finish(&self) -> Result<ReliabilityDiagram> {
        let total: usize = self.count.iter().sum();
        if total == 0 {
            return Err(EvalError::Undefined("a reliability diagram of zero predictions".into()));
        }
        let bins = self.count.len();
        let n = total as f64;
        let mut ece = 0.0;
        let bins = (0..bins)
            .map(|b| {
                let c = self.count[b] as f64;
                let (mean_probability, observed_frequency) =
                    if self.count[b] == 0 { (f64::NAN, f64::NAN) } else { (self.sum_p[b] / c, self.sum_y[b] / c) };
                if self.count[b] > 0 {
                    ece += (self.sum_y[b] - self.sum_p[b]).abs() / n;
                }
                ReliabilityBin {
                    lower: b as f64 / bins as f64,
                    upper: (b + 1) as f64 / bins as f64,
                    count: self.count[b],
                    mean_probability,
                    observed_frequency,
                }
            })
            .collect();
        Ok(ReliabilityDiagram { bins, ece })
    }
}

/// Writes NaN as `null` and reads `null` back as NaN (an empty bin's means).
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// Expected calibration error of probabilities `p` for binary outcomes `y` over `bins`
/// equal-width bins of [0, 1]: Σ_b (n_b / n) · |mean(y in b) − mean(p in b)|. A probability of
/// exactly 1 falls in the last bin. The `ece` of [`ReliabilityDiagram::new`].
pub fn expected_calibration_error(p: &[f64], y: &[bool], bins: usize) -> Result<f64> {
    check_same_len("probabilities", p.len(), "outcomes", y.len())?;
    if p.is_empty() || bins == 0 {
        return Err(EvalError::Undefined("ECE needs predictions and at least one bin".into()));
    }
    Ok(ReliabilityDiagram::new(p, y, bins)?.ece)
}

/// Selective verification: each pair is declared a match where p ≥ ½, and the decision is
/// right where that agrees with `is_match`. Returns whether each decision is right and its
/// uncertainty 1 − max(p, 1 − p) (the decision's own confidence, defined for every model).
///
/// # Errors
/// Lengths that differ, or a probability that is not finite.
pub fn verification_decisions(p: &[f64], is_match: &[bool]) -> Result<(Vec<bool>, Vec<f64>)> {
    check_same_len("probabilities", p.len(), "outcomes", is_match.len())?;
    check_finite("probabilities", p)?;
    let correct = p.iter().zip(is_match).map(|(&pi, &m)| (pi >= 0.5) == m).collect();
    let uncertainty = p.iter().map(|&pi| 1.0 - pi.max(1.0 - pi)).collect();
    Ok((correct, uncertainty))
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

    // Reference from scikit-learn 1.9.1 and NumPy on the same arrays:
    //   import numpy as np; from sklearn.calibration import calibration_curve
    //   p = np.array(PROBABILITIES); y = np.array(OUTCOMES)
    //   true, pred = calibration_curve(y, p, n_bins=5, strategy="uniform")
    //   counts = np.bincount(np.minimum((p * 5).astype(int), 4), minlength=5)
    //   ece = np.sum(counts[counts > 0] / len(p) * np.abs(true - pred))  # 0.155
    // (no probability lies on a bin edge, where scikit-learn's bins are closed on the right).
    const PROBABILITIES: [f64; 12] = [0.05, 0.12, 0.33, 0.37, 0.41, 0.55, 0.58, 0.45, 0.52, 0.93, 0.97, 1.0];
    const OUTCOMES: [bool; 12] = [false, false, true, false, false, true, false, true, true, true, false, true];
    const SKLEARN_TRUE: [f64; 4] = [0.0, 0.5, 0.6, 0.6666666666666666];
    const SKLEARN_PRED: [f64; 4] = [0.08499999999999999, 0.35, 0.502, 0.9666666666666667];
    const NUMPY_ECE: f64 = 0.155;
    const NUMPY_COUNTS: [usize; 5] = [2, 2, 5, 0, 3];

    #[test]
    fn reliability_diagram_matches_scikit_learn() {
        let d = ReliabilityDiagram::new(&PROBABILITIES, &OUTCOMES, 5).unwrap();
        assert_eq!(d.bins.iter().map(|b| b.count).collect::<Vec<_>>(), NUMPY_COUNTS);
        let filled: Vec<&ReliabilityBin> = d.bins.iter().filter(|b| b.count > 0).collect();
        for (b, (t, p)) in filled.iter().zip(SKLEARN_TRUE.iter().zip(SKLEARN_PRED)) {
            assert!((b.observed_frequency - t).abs() < 1e-12, "{b:?}");
            assert!((b.mean_probability - p).abs() < 1e-12, "{b:?}");
        }
        assert!(d.bins[3].mean_probability.is_nan() && d.bins[3].observed_frequency.is_nan());
        assert!((d.ece - NUMPY_ECE).abs() < 1e-12);
        assert_eq!(expected_calibration_error(&PROBABILITIES, &OUTCOMES, 5).unwrap(), d.ece);
        // An empty bin is written as null and read back as NaN.
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains("\"mean_probability\":null"));
        let back: ReliabilityDiagram = serde_json::from_str(&json).unwrap();
        assert_eq!(back.bins[2], d.bins[2]);
        assert!(back.bins[3].mean_probability.is_nan());
    }

    #[test]
    fn accumulated_batches_give_the_diagram_of_all_predictions() {
        let mut acc = ReliabilityAccumulator::new(5).unwrap();
        acc.add(&PROBABILITIES[..7], &OUTCOMES[..7]).unwrap();
        acc.add(&PROBABILITIES[7..], &OUTCOMES[7..]).unwrap();
        let whole = ReliabilityDiagram::new(&PROBABILITIES, &OUTCOMES, 5).unwrap();
        let parts = acc.finish().unwrap();
        assert_eq!(parts.count(), 12);
        assert!((parts.ece - whole.ece).abs() < 1e-15);
        assert!(ReliabilityAccumulator::new(5).unwrap().finish().is_err());
        assert!(ReliabilityAccumulator::new(0).is_err());
    }

    #[test]
    fn verification_decisions_by_hand() {
        let (correct, u) = verification_decisions(&[0.9, 0.2, 0.5, 0.4], &[true, true, false, false]).unwrap();
        assert_eq!(correct, vec![true, false, false, true]);
        for (got, want) in u.iter().zip([0.1, 0.2, 0.5, 0.4]) {
            assert!((got - want).abs() < 1e-15);
        }
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
