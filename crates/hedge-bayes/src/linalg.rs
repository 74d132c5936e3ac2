//! Dense linear-algebra helpers on top of faer: Cholesky with adaptive jitter, triangular solves,
//! input checks.

use faer::linalg::solvers::{DenseSolveCore, Llt};
use faer::{Mat, MatRef, Side};

use crate::error::{BayesError, Result};

/// A Cholesky factor `A + jitter·I = L Lᵀ`, with the jitter that was needed.
pub struct Cholesky {
    llt: Llt<f64>,
    /// Jitter added to the diagonal (0 when the matrix factorised as given).
    pub jitter: f64,
}

impl Cholesky {
    /// Factorises a symmetric matrix, adding jitter `10⁻¹⁰·mean(diag)`, then ten times more, up to
    /// `10⁻⁴·mean(diag)`, until it succeeds. `what` names the matrix in the error.
    pub fn new(a: MatRef<'_, f64>, what: &str) -> Result<Self> {
        if let Ok(llt) = a.llt(Side::Lower) {
            return Ok(Self { llt, jitter: 0.0 });
        }
        let n = a.nrows();
        let mean_diag = (0..n).map(|i| a[(i, i)].abs()).sum::<f64>() / n.max(1) as f64;
        if !mean_diag.is_finite() {
            // An infinite or NaN diagonal (a kernel evaluated at overflowing hyper-parameters):
            // no jitter helps, and an infinite one would never stop growing.
            return Err(BayesError::NotPositiveDefinite { what: format!("{what} (non-finite diagonal)"), jitter: 0.0 });
        }
        let mut jitter = 1e-10 * mean_diag.max(f64::MIN_POSITIVE);
        let mut shifted = a.to_owned();
        let mut added = 0.0;
        while jitter <= 1e-4 * mean_diag.max(f64::MIN_POSITIVE) * 1.0001 {
            for i in 0..n {
                shifted[(i, i)] += jitter - added;
            }
            added = jitter;
            if let Ok(llt) = shifted.llt(Side::Lower) {
                tracing::debug!(what, jitter, "Cholesky needed jitter");
                return Ok(Self { llt, jitter });
            }
            jitter *= 10.0;
        }
        Err(BayesError::NotPositiveDefinite { what: what.to_string(), jitter: added })
    }

    /// The lower-triangular factor L.
    pub fn l(&self) -> MatRef<'_, f64> {
        self.llt.L()
    }

    /// log |A| = 2 Σ log Lᵢᵢ.
    pub fn log_det(&self) -> f64 {
        let l = self.l();
        2.0 * (0..l.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>()
    }

    /// A⁻¹ B.
    pub fn solve(&self, b: MatRef<'_, f64>) -> Mat<f64> {
        use faer::linalg::solvers::Solve;
        self.llt.solve(b)
    }

    /// L⁻¹ B.
    pub fn solve_l(&self, b: MatRef<'_, f64>) -> Mat<f64> {
        let mut out = b.to_owned();
        self.l().solve_lower_triangular_in_place(out.as_mut());
        out
    }

    /// L⁻ᵀ B.
    pub fn solve_lt(&self, b: MatRef<'_, f64>) -> Mat<f64> {
        let mut out = b.to_owned();
        self.l().transpose().solve_upper_triangular_in_place(out.as_mut());
        out
    }

    /// A⁻¹ (dense).
    pub fn inverse(&self) -> Mat<f64> {
        self.llt.inverse()
    }
}

/// A column vector as an n×1 matrix.
pub fn column(v: &[f64]) -> Mat<f64> {
    Mat::from_fn(v.len(), 1, |i, _| v[i])
}

/// The first column of a matrix as a Vec.
pub fn to_vec(m: MatRef<'_, f64>) -> Vec<f64> {
    (0..m.nrows()).map(|i| m[(i, 0)]).collect()
}

/// Fails on the first NaN or infinity, naming `what` and the row/column.
pub fn check_finite_matrix(m: MatRef<'_, f64>, what: &str) -> Result<()> {
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            if !m[(i, j)].is_finite() {
                return Err(BayesError::NonFinite { what: what.to_string(), position: format!("row {i}, column {j}") });
            }
        }
    }
    Ok(())
}

/// Fails on the first NaN or infinity in a vector.
pub fn check_finite_slice(v: &[f64], what: &str) -> Result<()> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(BayesError::NonFinite { what: what.to_string(), position: format!("index {i}") }),
        None => Ok(()),
    }
}

/// Fails unless `x` has `n` rows.
pub fn check_rows(x: MatRef<'_, f64>, n: usize, what: &str) -> Result<()> {
    if x.nrows() != n {
        return Err(BayesError::ShapeMismatch {
            what: what.to_string(),
            expected: format!("{n} rows (one per target)"),
            found: format!("{} rows", x.nrows()),
        });
    }
    Ok(())
}

/// Training data for a model named `model`: one target per row, no NaN or infinity.
pub fn check_training_data(x: MatRef<'_, f64>, y: &[f64], model: &str) -> Result<()> {
    check_rows(x, y.len(), &format!("{model} inputs vs targets"))?;
    check_finite_matrix(x, &format!("{model} inputs"))?;
    check_finite_slice(y, &format!("{model} targets"))?;
    check_magnitude_matrix(x, &format!("{model} inputs"))?;
    check_magnitude_slice(y, &format!("{model} targets"))
}

/// The largest magnitude a data value may have: its square (1e300) and a sum of a million such
/// squares stay within float64's range (about 1.8e308), so means, variances and kernels of the
/// data stay finite.
pub const LARGEST_DATA_MAGNITUDE: f64 = 1e150;

/// Fails on the largest value of a matrix beyond [`LARGEST_DATA_MAGNITUDE`], naming its column.
pub fn check_magnitude_matrix(m: MatRef<'_, f64>, what: &str) -> Result<()> {
    let mut worst: Option<(usize, usize, f64)> = None;
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            let v = m[(i, j)];
            if v.abs() > LARGEST_DATA_MAGNITUDE && worst.is_none_or(|(_, _, w)| v.abs() > w.abs()) {
                worst = Some((i, j, v));
            }
        }
    }
    match worst {
        Some((i, j, value)) => Err(BayesError::Huge {
            what: what.to_string(),
            position: format!("column {j} (row {i}; the column's largest magnitude)"),
            value,
        }),
        None => Ok(()),
    }
}

/// Fails on the largest value of a vector beyond [`LARGEST_DATA_MAGNITUDE`].
pub fn check_magnitude_slice(v: &[f64], what: &str) -> Result<()> {
    let worst = v
        .iter()
        .enumerate()
        .filter(|(_, x)| x.abs() > LARGEST_DATA_MAGNITUDE)
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
    match worst {
        Some((i, &value)) => Err(BayesError::Huge {
            what: what.to_string(),
            position: format!("index {i} (the largest magnitude)"),
            value,
        }),
        None => Ok(()),
    }
}

/// Test inputs for a model trained on `columns` inputs: the same width, no NaN or infinity.
pub fn check_test_inputs(x: MatRef<'_, f64>, columns: usize, model: &str) -> Result<()> {
    if x.ncols() != columns {
        return Err(BayesError::ShapeMismatch {
            what: format!("{model} test inputs"),
            expected: format!("{columns} columns"),
            found: format!("{} columns", x.ncols()),
        });
    }
    check_finite_matrix(x, &format!("{model} test inputs"))
}

/// Σᵢⱼ Aᵢⱼ Bᵢⱼ.
pub fn frobenius_dot(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
    let mut s = 0.0;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            s += a[(i, j)] * b[(i, j)];
        }
    }
    s
}

/// Sum of each column of `A ∘ B`.
pub fn column_dots(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Vec<f64> {
    par_map_columns(a.ncols(), |j| {
        let (ca, cb) = (a.col(j), b.col(j));
        match (ca.try_as_col_major(), cb.try_as_col_major()) {
            (Some(x), Some(y)) => x.as_slice().iter().zip(y.as_slice()).map(|(u, v)| u * v).sum(),
            _ => (0..a.nrows()).map(|i| a[(i, j)] * b[(i, j)]).sum(),
        }
    })
}

/// Runs `f(j, column_j)` over the columns of `m` in parallel.
pub fn par_columns_mut(m: &mut Mat<f64>, f: impl Fn(usize, &mut [f64]) + Sync + Send) {
    use rayon::prelude::*;
    m.par_col_chunks_mut(1).enumerate().for_each(|(j, c)| {
        let column =
            c.col_mut(0).try_as_col_major_mut().expect("owned matrices have contiguous columns").as_slice_mut();
        f(j, column)
    });
}

/// `f(j)` for every column index in parallel, collected in order.
pub fn par_map_columns(n: usize, f: impl Fn(usize) -> f64 + Sync + Send) -> Vec<f64> {
    use rayon::prelude::*;
    (0..n).into_par_iter().map(f).collect()
}

/// Column `j` of an owned matrix as a slice.
pub fn col(m: &Mat<f64>, j: usize) -> &[f64] {
    m.col_as_slice(j)
}

/// `A Bᵀ` for products known to be symmetric (such as `V D Vᵀ`): only the lower triangle is
/// computed, which halves the work, then mirrored.
///
/// # Shapes
/// `a`, `b`: `[m, n]` → `[m, m]`.
pub fn symmetric_product(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    use faer::linalg::matmul::triangular::{matmul, BlockStructure};
    let m = a.nrows();
    let mut out = Mat::<f64>::zeros(m, m);
    matmul(
        out.as_mut(),
        BlockStructure::TriangularLower,
        faer::Accum::Replace,
        a,
        BlockStructure::Rectangular,
        b.transpose(),
        BlockStructure::Rectangular,
        1.0,
        faer::get_global_parallelism(),
    );
    for j in 0..m {
        for i in 0..j {
            out[(i, j)] = out[(j, i)];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_adds_jitter_to_a_singular_matrix_and_refuses_an_indefinite_one() {
        // Rank one: [1 1; 1 1] is positive semi-definite, so a little jitter makes it factorise.
        let singular = Mat::from_fn(2, 2, |_, _| 1.0);
        let c = Cholesky::new(singular.as_ref(), "K").unwrap();
        assert!(c.jitter > 0.0 && c.jitter <= 1e-4);
        let l = c.l();
        assert!((l[(0, 0)] * l[(0, 0)] - 1.0 - c.jitter).abs() < 1e-12);
        // An overflowed diagonal is refused at once (it once made the jitter loop run forever).
        let inf = Mat::from_fn(2, 2, |i, j| match (i, j) {
            (0, 0) => f64::INFINITY,
            (1, 1) => 1.0,
            _ => f64::NAN,
        });
        let Err(e) = Cholesky::new(inf.as_ref(), "K") else { panic!("an overflowed kernel factorised") };
        assert!(e.to_string().contains("non-finite diagonal"), "{e}");
        // Eigenvalues 3 and −1: no allowed jitter helps, and the error names the matrix.
        let indefinite = Mat::from_fn(2, 2, |i, j| if i == j { 1.0 } else { 2.0 });
        let e = Cholesky::new(indefinite.as_ref(), "the test matrix").err().unwrap();
        assert!(e.to_string().contains("the test matrix is not positive definite"), "{e}");
    }

    #[test]
    fn symmetric_product_equals_the_full_product() {
        let a = Mat::from_fn(5, 7, |i, j| ((i * 7 + j) as f64).sin());
        let b = Mat::from_fn(5, 7, |i, j| ((i * 7 + j) as f64).sin() * (1.0 + j as f64));
        // a diag(1 + j) aᵀ is symmetric.
        let full = &a * b.transpose();
        let half = symmetric_product(a.as_ref(), b.as_ref());
        for i in 0..5 {
            for j in 0..5 {
                assert!((full[(i, j)] - half[(i, j)]).abs() < 1e-12);
            }
        }
    }
}
