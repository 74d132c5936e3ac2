//! The squared-exponential (RBF) kernel, isotropic or with one lengthscale per input (ARD), and
//! the reverse-mode gradients that turn a cotangent on a kernel matrix into gradients on the
//! log-hyper-parameters and on the inputs.

use faer::{Mat, MatRef};
use serde::{Deserialize, Serialize};

use crate::linalg;

/// Isotropic RBF (one shared lengthscale) or ARD-RBF (one per input dimension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum KernelKind {
    /// k(x, z) = s² exp(−|x − z|² / 2ℓ²).
    Rbf,
    /// k(x, z) = s² exp(−Σ_d (x_d − z_d)² / 2ℓ_d²).
    #[default]
    Ard,
}

/// RBF kernel with its hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RbfKernel {
    /// s², the prior variance of f(x).
    pub signal_variance: f64,
    /// ℓ: one value (isotropic) or one per input dimension (ARD).
    pub lengthscales: Vec<f64>,
}

/// Gradients of a scalar objective with respect to the kernel's log-hyper-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelGradient {
    /// ∂F/∂ log s².
    pub log_signal_variance: f64,
    /// ∂F/∂ log ℓ (same length as `lengthscales`).
    pub log_lengthscales: Vec<f64>,
}

impl RbfKernel {
    /// A kernel with the given signal variance and lengthscales.
    pub fn new(signal_variance: f64, lengthscales: Vec<f64>) -> Self {
        Self { signal_variance, lengthscales }
    }

    /// Lengthscale of input dimension `d`.
    fn lengthscale(&self, d: usize) -> f64 {
        if self.lengthscales.len() == 1 {
            self.lengthscales[0]
        } else {
            self.lengthscales[d]
        }
    }

    /// The inputs divided by their lengthscales.
    ///
    /// # Shapes
    /// `x`: `[n, d]` → `[n, d]`.
    pub fn scale(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        Mat::from_fn(x.nrows(), x.ncols(), |i, d| x[(i, d)] / self.lengthscale(d))
    }

    /// Kernel matrix between two sets of *scaled* inputs (see [`RbfKernel::scale`]).
    ///
    /// # Shapes
    /// `xs`: `[n, d]`, `zs`: `[m, d]` → `[n, m]`.
    pub fn cross_scaled(&self, xs: MatRef<'_, f64>, zs: MatRef<'_, f64>) -> Mat<f64> {
        // Squared distances accumulated dimension by dimension down contiguous columns (a
        // product with only d inner terms would be bound by memory, not arithmetic).
        let xs_cols: Vec<Vec<f64>> = (0..xs.ncols()).map(|d| (0..xs.nrows()).map(|i| xs[(i, d)]).collect()).collect();
        let zs = zs.to_owned();
        let s2 = self.signal_variance;
        let mut k = Mat::<f64>::zeros(xs.nrows(), zs.nrows());
        linalg::par_columns_mut(&mut k, |j, column| {
            for (d, xd) in xs_cols.iter().enumerate() {
                let zjd = zs[(j, d)];
                for (v, x) in column.iter_mut().zip(xd) {
                    let diff = x - zjd;
                    *v += diff * diff;
                }
            }
            for v in column.iter_mut() {
                *v = s2 * (-0.5 * *v).exp();
            }
        });
        k
    }

    /// Kernel matrix between `x` and `z`.
    ///
    /// # Shapes
    /// `x`: `[n, d]`, `z`: `[m, d]` → `[n, m]`.
    pub fn cross(&self, x: MatRef<'_, f64>, z: MatRef<'_, f64>) -> Mat<f64> {
        self.cross_scaled(self.scale(x).as_ref(), self.scale(z).as_ref())
    }

    /// Symmetric kernel matrix of `x` with itself (the diagonal is exactly s²).
    ///
    /// # Shapes
    /// `x`: `[n, d]` → `[n, n]`.
    pub fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let xs = self.scale(x);
        let mut k = self.cross_scaled(xs.as_ref(), xs.as_ref());
        for i in 0..k.nrows() {
            k[(i, i)] = self.signal_variance;
            for j in 0..i {
                let v = 0.5 * (k[(i, j)] + k[(j, i)]);
                k[(i, j)] = v;
                k[(j, i)] = v;
            }
        }
        k
    }

    /// Backpropagates a cotangent `g = ∂F/∂K` on `K = k(X, Z)` to the log-hyper-parameters.
    ///
    /// # Shapes
    /// `xs`: `[n, d]`, `zs`: `[m, d]` (scaled inputs), `k`, `g`: `[n, m]`.
    pub fn hyper_gradient(
        &self,
        xs: MatRef<'_, f64>,
        zs: MatRef<'_, f64>,
        k: MatRef<'_, f64>,
        g: MatRef<'_, f64>,
    ) -> KernelGradient {
        self.backward_weighted(xs, zs, &hadamard(k, g)).hyper
    }

    /// The backward pass of `K = k(X, Z)` given the weights `W = K ∘ ∂F/∂K`: gradients on the
    /// log-hyper-parameters and on the (unscaled) first argument X,
    /// ∂F/∂x_id = Σ_j W_ij (z_jd − x_id)/ℓ_d². Taking W rather than the cotangent lets callers
    /// form it in place, without another `[n, m]` matrix.
    ///
    /// # Shapes
    /// `xs`: `[n, d]`, `zs`: `[m, d]` (scaled inputs), `w`: `[n, m]` → gradient on X `[n, d]`.
    pub fn backward_weighted(&self, xs: MatRef<'_, f64>, zs: MatRef<'_, f64>, w: &Mat<f64>) -> KernelBackward {
        let ones = Mat::<f64>::from_fn(w.ncols(), 1, |_, _| 1.0);
        let row_sums = w * &ones;
        let col_sums = linalg::par_map_columns(w.ncols(), |j| linalg::col(w, j).iter().sum());
        let wz = w * zs;
        let d = xs.ncols();
        // ∂K_ij/∂log ℓ_d = K_ij (x̃_id − z̃_jd)²; summed against the cotangent this expands into
        // Σ_i x̃_id² (W1)_i + Σ_j z̃_jd² (Wᵀ1)_j − 2 Σ_i x̃_id (W z̃)_id.
        let mut per_dim = vec![0.0; d];
        for (dim, out) in per_dim.iter_mut().enumerate() {
            let mut s = 0.0;
            for i in 0..xs.nrows() {
                let x = xs[(i, dim)];
                s += x * x * row_sums[(i, 0)] - 2.0 * x * wz[(i, dim)];
            }
            for (j, c) in col_sums.iter().enumerate() {
                s += zs[(j, dim)] * zs[(j, dim)] * c;
            }
            *out = s;
        }
        let log_lengthscales = if self.lengthscales.len() == 1 { vec![per_dim.iter().sum()] } else { per_dim };
        let first_input = Mat::from_fn(xs.nrows(), d, |i, dim| {
            (wz[(i, dim)] - xs[(i, dim)] * row_sums[(i, 0)]) / self.lengthscale(dim)
        });
        KernelBackward {
            hyper: KernelGradient { log_signal_variance: col_sums.iter().sum(), log_lengthscales },
            first_input,
        }
    }
}

/// Result of [`RbfKernel::backward_weighted`].
#[derive(Debug, Clone)]
pub struct KernelBackward {
    pub hyper: KernelGradient,
    /// ∂F/∂X for the first argument, `[n, d]`.
    pub first_input: Mat<f64>,
}

impl KernelGradient {
    /// Adds another gradient to this one.
    pub fn add(&mut self, other: &KernelGradient) {
        self.log_signal_variance += other.log_signal_variance;
        for (a, b) in self.log_lengthscales.iter_mut().zip(&other.log_lengthscales) {
            *a += b;
        }
    }
}

/// Elementwise product.
pub(crate) fn hadamard(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let mut out = a.to_owned();
    linalg::par_columns_mut(&mut out, |j, column| {
        for (i, v) in column.iter_mut().enumerate() {
            *v *= b[(i, j)];
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> (Mat<f64>, Mat<f64>) {
        let x = Mat::from_fn(5, 3, |i, d| ((i * 3 + d) as f64 * 0.37).sin());
        let z = Mat::from_fn(4, 3, |i, d| ((i * 5 + d) as f64 * 0.23).cos());
        (x, z)
    }

    #[test]
    fn cross_matches_the_definition() {
        let (x, z) = data();
        let k = RbfKernel::new(1.7, vec![0.5, 1.0, 2.0]);
        let m = k.cross(x.as_ref(), z.as_ref());
        for i in 0..5 {
            for j in 0..4 {
                let r2: f64 = (0..3).map(|d| ((x[(i, d)] - z[(j, d)]) / k.lengthscales[d]).powi(2)).sum();
                assert!((m[(i, j)] - 1.7 * (-0.5 * r2).exp()).abs() < 1e-12);
            }
        }
    }

    /// Finite differences of F = Σ g ∘ k(X, Z) against the reverse-mode gradients.
    #[test]
    fn gradients_match_finite_differences() {
        let (x, z) = data();
        let g = Mat::from_fn(5, 4, |i, j| ((i + 2 * j) as f64).sin());
        let objective = |k: &RbfKernel, z: &Mat<f64>| {
            crate::linalg::frobenius_dot(k.cross(x.as_ref(), z.as_ref()).as_ref(), g.as_ref())
        };
        for lengthscales in [vec![0.8], vec![0.5, 1.0, 2.0]] {
            let k = RbfKernel::new(1.3, lengthscales.clone());
            let (xs, zs) = (k.scale(x.as_ref()), k.scale(z.as_ref()));
            let km = k.cross_scaled(xs.as_ref(), zs.as_ref());
            let grad = k.hyper_gradient(xs.as_ref(), zs.as_ref(), km.as_ref(), g.as_ref());
            let h: f64 = 1e-6;
            let mut kp = k.clone();
            kp.signal_variance *= h.exp();
            let mut km_ = k.clone();
            km_.signal_variance *= (-h).exp();
            let fd = (objective(&kp, &z) - objective(&km_, &z)) / (2.0 * h);
            assert!((fd - grad.log_signal_variance).abs() < 1e-6, "{fd} vs {}", grad.log_signal_variance);
            for d in 0..lengthscales.len() {
                let (mut kp, mut kn) = (k.clone(), k.clone());
                kp.lengthscales[d] *= h.exp();
                kn.lengthscales[d] *= (-h).exp();
                let fd = (objective(&kp, &z) - objective(&kn, &z)) / (2.0 * h);
                assert!((fd - grad.log_lengthscales[d]).abs() < 1e-6, "dim {d}: {fd} vs {}", grad.log_lengthscales[d]);
            }
            // Z is the first argument of k(Z, X), whose cotangent is gᵀ.
            let kt = k.cross_scaled(zs.as_ref(), xs.as_ref());
            let gt = g.transpose().to_owned();
            let gz = k.backward_weighted(zs.as_ref(), xs.as_ref(), &hadamard(kt.as_ref(), gt.as_ref())).first_input;
            for j in 0..4 {
                for d in 0..3 {
                    let (mut zp, mut zn) = (z.clone(), z.clone());
                    zp[(j, d)] += h;
                    zn[(j, d)] -= h;
                    let fd = (objective(&k, &zp) - objective(&k, &zn)) / (2.0 * h);
                    assert!((fd - gz[(j, d)]).abs() < 1e-6, "z[{j},{d}]: {fd} vs {}", gz[(j, d)]);
                }
            }
        }
    }
}
