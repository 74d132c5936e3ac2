//! Input standardisation fitted on training rows: every model of the toolbox and the active
//! learning loops see inputs with zero mean and unit variance on the rows they learn from.

use faer::{Mat, MatRef};
use serde::{Deserialize, Serialize};

/// Per-column mean and population standard deviation (1 for a constant column, which is then
/// only centred) of the rows a model trains on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standardiser {
    pub mean: Vec<f64>,
    pub scale: Vec<f64>,
}

impl Standardiser {
    /// Fits on rows `rows` of `x`.
    ///
    /// # Shapes
    /// `x` is `[n, d]`; `rows` index its rows; the result has `d` means and scales.
    pub fn fit(x: MatRef<'_, f64>, rows: &[usize]) -> Self {
        let (n, d) = (rows.len().max(1) as f64, x.ncols());
        let mean: Vec<f64> = (0..d).map(|j| rows.iter().map(|&i| x[(i, j)]).sum::<f64>() / n).collect();
        let scale = (0..d)
            .map(|j| {
                let v = rows.iter().map(|&i| (x[(i, j)] - mean[j]).powi(2)).sum::<f64>() / n;
                if v > 0.0 {
                    v.sqrt()
                } else {
                    1.0
                }
            })
            .collect();
        Standardiser { mean, scale }
    }

    /// Rows `rows` of `x`, standardised.
    ///
    /// # Shapes
    /// `x` is `[n, d]` with the fitted `d`; the result is `[rows.len(), d]`.
    pub fn transform(&self, x: MatRef<'_, f64>, rows: &[usize]) -> Mat<f64> {
        Mat::from_fn(rows.len(), self.mean.len(), |r, j| (x[(rows[r], j)] - self.mean[j]) / self.scale[j])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_rows_get_zero_mean_and_unit_variance_and_constant_columns_are_kept() {
        // Column 0: 1, 2, 3 on the training rows (mean 2, population sd √(2/3)); column 1 constant.
        let x = Mat::from_fn(4, 2, |i, j| if j == 0 { [1.0, 2.0, 3.0, 10.0][i] } else { 5.0 });
        let s = Standardiser::fit(x.as_ref(), &[0, 1, 2]);
        assert_eq!(s.mean, vec![2.0, 5.0]);
        assert!((s.scale[0] - (2.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!(s.scale[1], 1.0);
        let t = s.transform(x.as_ref(), &[2, 3]);
        assert!((t[(0, 0)] - 1.0 / (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((t[(1, 0)] - 8.0 / (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(t[(1, 1)], 0.0);
    }
}
