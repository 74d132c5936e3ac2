//! Means and spreads over repeats (seeds, folds), with the convention in the type: every
//! summary hedge writes says which spread it reports.

use serde::{Deserialize, Serialize};

/// Mean and sample standard deviation of `n` values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanStd {
    pub mean: f64,
    /// Sample standard deviation with Bessel's correction (divides by n − 1); 0 for one value.
    pub std: f64,
    /// How many values.
    pub n: usize,
}

impl MeanStd {
    /// Mean and sample standard deviation of `values` (NaN mean and std when empty).
    pub fn of(values: &[f64]) -> Self {
        let n = values.len();
        if n == 0 {
            return MeanStd { mean: f64::NAN, std: f64::NAN, n };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let std =
            if n < 2 { 0.0 } else { (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() };
        MeanStd { mean, std, n }
    }

    /// Mean and sample standard deviation of the defined, finite values (an undefined repeat,
    /// such as a τ over constant bins, is left out and not counted in `n`); `None` when none is.
    pub fn of_defined(values: &[Option<f64>]) -> Option<Self> {
        let v: Vec<f64> = values.iter().flatten().copied().filter(|x| x.is_finite()).collect();
        (!v.is_empty()).then(|| MeanStd::of(&v))
    }

    /// Standard error of the mean, std / √n.
    pub fn se(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        self.std / (self.n as f64).sqrt()
    }

    /// The mean with its standard error (`None` for one value: a spread needs two).
    pub fn mean_se(&self) -> MeanSe {
        MeanSe { mean: self.mean, se: (self.n >= 2).then(|| self.se()) }
    }
}

/// A mean with its standard error (sample std with n − 1, divided by √n): what the active
/// learning summaries report, as Pinsler et al. do.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanSe {
    pub mean: f64,
    /// Standard error of the mean; `None` (written `null`, with its reason in the file's
    /// `undefined` list) over one seed, where no spread exists — never a misleading 0.
    pub se: Option<f64>,
}

impl MeanSe {
    /// Mean and standard error of `values`.
    pub fn of(values: &[f64]) -> Self {
        MeanStd::of(values).mean_se()
    }

    /// `mean ± se` with `decimals` digits (`+` signed when `signed`), or `mean (1 seed)`.
    pub fn plus_minus(&self, decimals: usize, signed: bool) -> String {
        plus_minus(self.mean, self.se, decimals, signed, "1 seed")
    }
}

/// `mean ± spread` with `decimals` digits (`+` signed when `signed`), or `mean (one)` where the
/// spread is undefined (`one` says of what: "1 seed", "1 repeat").
pub fn plus_minus(mean: f64, spread: Option<f64>, decimals: usize, signed: bool, one: &str) -> String {
    let m = if signed { format!("{mean:+.decimals$}") } else { format!("{mean:.decimals$}") };
    match spread {
        Some(s) => format!("{m} ± {s:.decimals$}"),
        None => format!("{m} ({one})"),
    }
}

/// Why a spread over one seed or repeat is `null`: the rule result files carry in `undefined`.
pub const ONE_RUN_SPREAD: &str = "one seed or repeat: a spread (standard deviation or error) needs two";

/// A mean alone (for quantities whose spread nobody reads, such as seconds per round).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mean {
    pub mean: f64,
}

impl Mean {
    pub fn of(values: &[f64]) -> Self {
        Mean { mean: MeanStd::of(values).mean }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_matches_numpy() {
        // x = np.array([1.0, 2.0, 4.0, 7.0]); x.mean(), x.std(ddof=1), x.std(ddof=1) / 2
        let s = MeanStd::of(&[1.0, 2.0, 4.0, 7.0]);
        assert_eq!(s.n, 4);
        assert!((s.mean - 3.5).abs() < 1e-15);
        assert!((s.std - 2.6457513110645907).abs() < 1e-12, "{}", s.std);
        assert!((s.se() - 1.3228756555322954).abs() < 1e-12);
        assert_eq!(MeanStd::of(&[5.0]).std, 0.0);
        assert!(MeanStd::of(&[]).mean.is_nan());
        // Undefined and non-finite values are left out of the mean, the spread and n.
        let d = MeanStd::of_defined(&[Some(1.0), None, Some(3.0), Some(f64::NAN)]).unwrap();
        assert_eq!((d.mean, d.std, d.n), (2.0, 2f64.sqrt(), 2));
        assert_eq!(MeanStd::of_defined(&[None, Some(f64::INFINITY)]), None);
    }
}
