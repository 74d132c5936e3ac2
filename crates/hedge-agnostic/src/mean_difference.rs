//! The mean-difference eraser (`{"kind": "mean-difference"}`): projects out, orthogonally, the
//! directions between each concept class's mean and the overall mean (k − 1 of them for k
//! classes). A baseline against LEACE: it makes the class means equal, the condition under which
//! no linear probe beats a constant, but by an orthogonal projection that ignores the covariance,
//! so its edit is larger than LEACE's least-squares one.
//!
//! This file is the worked example of ARCHITECTURE.md's "Adding an eraser": the eraser, its
//! registration (one line in [`crate::erasers::ERASERS`]) and its test.

use faer::Mat;
use tch::Tensor;

use crate::eraser::{Eraser, FittedEraser, Registration};
use crate::erasure::{check_rows, normalised_weights};
use crate::error::Result;

/// The registration [`crate::erasers::ERASERS`] lists.
pub const REGISTRATION: Registration = Registration {
    kind: "mean-difference",
    about: "orthogonal projection removing the directions between the concept classes' means (a baseline)",
    build: |spec| {
        spec.only(&[])?;
        Ok(Box::new(MeanDifference))
    },
};

/// The eraser, before fitting.
pub struct MeanDifference;

/// Fitted: x ↦ x − (x − μ) U Uᵀ, U an orthonormal basis of the class-mean differences.
struct Fitted {
    /// μ, `[1, d]`.
    mean: Tensor,
    /// U Uᵀ, `[d, d]`.
    projection: Tensor,
    rank: usize,
}

impl Eraser for MeanDifference {
    fn fit(
        &self,
        x: &[f64],
        d: usize,
        z: &[i64],
        weights: Option<&[f64]>,
        _seed: u64,
    ) -> Result<Box<dyn FittedEraser>> {
        let n = check_rows(x, d, z)?;
        let weights = normalised_weights(weights, n)?;
        let w = |i: usize| weights[i];
        let classes = z.iter().copied().max().unwrap_or(0) as usize + 1;
        let (mut sums, mut mass) = (vec![vec![0.0; d]; classes], vec![0.0; classes]);
        for (i, &c) in z.iter().enumerate() {
            mass[c as usize] += w(i);
            for j in 0..d {
                sums[c as usize][j] += w(i) * x[i * d + j];
            }
        }
        let total: f64 = mass.iter().sum();
        let mean: Vec<f64> = (0..d).map(|j| sums.iter().map(|s| s[j]).sum::<f64>() / total).collect();
        // Gram–Schmidt on the differences of the classes present (in class order).
        let mut basis: Vec<Vec<f64>> = Vec::new();
        for c in (0..classes).filter(|&c| mass[c] > 0.0) {
            let mut v: Vec<f64> = (0..d).map(|j| sums[c][j] / mass[c] - mean[j]).collect();
            let scale = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            for u in &basis {
                let dot: f64 = v.iter().zip(u).map(|(a, b)| a * b).sum();
                v.iter_mut().zip(u).for_each(|(a, b)| *a -= dot * b);
            }
            let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            // A difference inside the span already found adds no direction.
            if norm > 1e-9 * scale.max(1e-300) {
                basis.push(v.into_iter().map(|a| a / norm).collect());
            }
        }
        let projection = Mat::from_fn(d, d, |i, j| basis.iter().map(|u| u[i] * u[j]).sum::<f64>());
        let flat: Vec<f64> =
            (0..d).flat_map(|i| (0..d).map(move |j| (i, j))).map(|(i, j)| projection[(i, j)]).collect();
        Ok(Box::new(Fitted {
            mean: Tensor::from_slice(&mean).reshape([1, d as i64]),
            projection: Tensor::from_slice(&flat).reshape([d as i64, d as i64]),
            rank: basis.len(),
        }))
    }
}

impl FittedEraser for Fitted {
    fn rank(&self) -> usize {
        self.rank
    }

    fn displacement(&self, x: &Tensor, _concept: &Tensor) -> Tensor {
        -(x - &self.mean).matmul(&self.projection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eraser::EraserSpec;
    use crate::erasure::Erasure;

    /// Two classes whose means differ along (1, 1, 0): erased, the class means coincide, the
    /// third coordinate is untouched and one dimension is removed; at strength 0 nothing moves.
    #[test]
    fn erased_class_means_coincide_and_only_their_direction_moves() {
        let rows = [[0.0, 0.0, 5.0], [2.0, 0.0, -1.0], [3.0, 3.0, 5.0], [5.0, 3.0, -1.0]];
        let z = Tensor::from_slice(&[0i64, 0, 1, 1]);
        let f = Tensor::from_slice(rows.as_flattened()).reshape([4, 3]);
        let eraser = EraserSpec::new("mean-difference").build().unwrap();
        let erasure = Erasure::fit(eraser.as_ref(), 1.0, &f, &z, None, 0).unwrap();
        assert_eq!(erasure.rank(), 1);
        let erased = erasure.erase(&f, &z);
        let class_mean =
            |c: i64| erased.index_select(0, &z.eq(c).nonzero().squeeze_dim(1)).mean_dim(0, false, tch::Kind::Double);
        let gap = (class_mean(0) - class_mean(1)).abs().max().double_value(&[]);
        assert!(gap < 1e-12, "class means differ by {gap} after erasure");
        let third = erased.select(1, 2) - f.select(1, 2);
        assert!(third.abs().max().double_value(&[]) < 1e-12, "the orthogonal coordinate moved");
        let untouched = Erasure::fit(eraser.as_ref(), 0.0, &f, &z, None, 0).unwrap().erase(&f, &z);
        assert!(untouched.equal(&f));
    }
}
