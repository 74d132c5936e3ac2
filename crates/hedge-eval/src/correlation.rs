//! Rank correlation.

use crate::error::{check_finite, check_same_len};
use crate::{EvalError, Result};

/// Kendall's τ-b between `x` and `y`, ties handled as `scipy.stats.kendalltau` (variant 'b'):
/// τ_b = (n_c − n_d) / √((n_0 − n_1)(n_0 − n_2)), with n_1 and n_2 the pairs tied in x and in y.
///
/// O(n²) pair counting: the uncertainty analysis correlates 20 bins, and exactness matters
/// more than speed here.
///
/// # Errors
/// Lengths that differ, non-finite values, fewer than two points, or a constant input
/// (τ is undefined; SciPy returns NaN).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Result<f64> {
    check_same_len("x", x.len(), "y", y.len())?;
    check_finite("x", x)?;
    check_finite("y", y)?;
    let n = x.len();
    if n < 2 {
        return Err(EvalError::Undefined("Kendall's tau needs at least two points".into()));
    }
    let (mut concordant, mut discordant, mut tied_x, mut tied_y) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = x[i].partial_cmp(&x[j]).expect("finite");
            let dy = y[i].partial_cmp(&y[j]).expect("finite");
            use std::cmp::Ordering::Equal;
            match (dx, dy) {
                (Equal, Equal) => {
                    tied_x += 1;
                    tied_y += 1;
                }
                (Equal, _) => tied_x += 1,
                (_, Equal) => tied_y += 1,
                (a, b) if a == b => concordant += 1,
                _ => discordant += 1,
            }
        }
    }
    let pairs = (n * (n - 1) / 2) as i64;
    let denom = (((pairs - tied_x) as f64) * ((pairs - tied_y) as f64)).sqrt();
    if denom == 0.0 {
        return Err(EvalError::Undefined("Kendall's tau is undefined when an input is constant".into()));
    }
    Ok((concordant - discordant) as f64 / denom)
}

#[cfg(test)]
mod tests {
    use super::*;

    // SciPy 1.17.1:
    //   from scipy.stats import kendalltau
    //   kendalltau([1,2,3,4,5,6,7,8], [0.9,0.85,0.85,0.7,0.72,0.5,0.5,0.5]).statistic
    //   kendalltau([1,1,2,2,3,3], [3,1,2,2,1,0]).statistic
    #[test]
    fn matches_scipy_with_ties() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let y = [0.9, 0.85, 0.85, 0.7, 0.72, 0.5, 0.5, 0.5];
        assert!((kendall_tau_b(&x, &y).unwrap() - SCIPY_A).abs() < 1e-12);
        let x = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0];
        let y = [3.0, 1.0, 2.0, 2.0, 1.0, 0.0];
        assert!((kendall_tau_b(&x, &y).unwrap() - SCIPY_B).abs() < 1e-12);
    }

    #[test]
    fn monotone_inputs_give_plus_and_minus_one() {
        let x: Vec<f64> = (0..20).map(f64::from).collect();
        let up: Vec<f64> = x.iter().map(|v| v * v).collect();
        let down: Vec<f64> = x.iter().map(|v| -v).collect();
        assert_eq!(kendall_tau_b(&x, &up).unwrap(), 1.0);
        assert_eq!(kendall_tau_b(&x, &down).unwrap(), -1.0);
    }

    #[test]
    fn constant_input_is_undefined() {
        assert!(matches!(kendall_tau_b(&[1.0, 2.0, 3.0], &[5.0; 3]), Err(EvalError::Undefined(_))));
        assert!(kendall_tau_b(&[1.0], &[1.0]).is_err());
    }

    const SCIPY_A: f64 = -0.8486684247915055;
    const SCIPY_B: f64 = -0.5604485383178051;
}
