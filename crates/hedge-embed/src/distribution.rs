//! Embeddings as distributions: a point, a Gaussian, or an equal-weight mixture of Gaussians,
//! all with diagonal covariance.

use tch::{Kind, Tensor};

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// A batch of embeddings.
///
/// # Shapes
/// - `mean`: `[B, C, D]` (C = 1 for points and single Gaussians)
/// - `variance`: `[B, C, D]`, `None` for point embeddings
#[derive(Debug)]
pub struct Embedding {
    pub mean: Tensor,
    pub variance: Option<Tensor>,
}

impl Embedding {
    /// A point embedding from `[B, D]` coordinates.
    pub fn point(z: Tensor) -> Self {
        Embedding { mean: z.unsqueeze(1), variance: None }
    }

    pub fn batch(&self) -> i64 {
        self.mean.size()[0]
    }

    pub fn components(&self) -> i64 {
        self.mean.size()[1]
    }

    pub fn dim(&self) -> i64 {
        self.mean.size()[2]
    }

    /// Rows `start..start + len` of the batch.
    pub fn narrow(&self, start: i64, len: i64) -> Embedding {
        Embedding {
            mean: self.mean.narrow(0, start, len),
            variance: self.variance.as_ref().map(|v| v.narrow(0, start, len)),
        }
    }

    /// The rows `index` of the batch, in that order (rows may repeat; see [`index_tensor`]).
    ///
    /// # Shapes
    /// `index`: `[P]` int64; returns a `[P, C, D]` embedding.
    pub fn select_rows(&self, index: &Tensor) -> Embedding {
        Embedding {
            mean: self.mean.index_select(0, index),
            variance: self.variance.as_ref().map(|v| v.index_select(0, index)),
        }
    }

    /// `k` reparameterised samples per input, stratified: `k / C` from every component.
    /// A point embedding returns itself once, whatever `k`.
    ///
    /// # Shapes
    /// returns `[B, k, D]` (`[B, 1, D]` for points).
    pub fn sample(&self, k: i64) -> Tensor {
        let Some(variance) = &self.variance else {
            return self.mean.shallow_clone();
        };
        let (b, c, d) = (self.batch(), self.components(), self.dim());
        assert!(k % c == 0, "samples ({k}) must be a multiple of the components ({c})");
        let per = k / c;
        let eps = Tensor::randn([b, c, per, d], (self.mean.kind(), self.mean.device()));
        let z = self.mean.unsqueeze(2) + variance.sqrt().unsqueeze(2) * eps;
        z.reshape([b, k, d])
    }

    /// KL(p(z|x) ‖ N(0, I)) per input: closed form for one Gaussian; for a mixture a Monte-Carlo
    /// estimate `mean_k [log p(z_k) − log r(z_k)]` over `samples` drawn from the mixture.
    /// Zero for points (they carry no variance to regularise).
    ///
    /// # Shapes
    /// `samples`: `[B, K, D]`; returns `[B]`.
    pub fn kl_to_standard_normal(&self, samples: &Tensor) -> Tensor {
        let Some(variance) = &self.variance else {
            return Tensor::zeros([self.batch()], (self.mean.kind(), self.mean.device()));
        };
        if self.components() == 1 {
            let kl = variance + self.mean.square() - 1.0 - variance.log();
            return kl.sum_dim_intlist([1i64, 2].as_slice(), false, Kind::Float) * 0.5;
        }
        let log_p = self.log_density(samples);
        let log_r = (samples.square() + LN_2PI).sum_dim_intlist([2i64].as_slice(), false, Kind::Float) * -0.5;
        (log_p - log_r).mean_dim([1i64].as_slice(), false, Kind::Float)
    }

    /// Log density of the (equal-weight) mixture at `z`.
    ///
    /// # Shapes
    /// `z`: `[B, K, D]`; returns `[B, K]`.
    pub fn log_density(&self, z: &Tensor) -> Tensor {
        let variance = self.variance.as_ref().expect("a point embedding has no density");
        let diff = z.unsqueeze(2) - self.mean.unsqueeze(1); // [B, K, C, D]
        let var = variance.unsqueeze(1);
        let per_component =
            (diff.square() / &var + var.log() + LN_2PI).sum_dim_intlist([3i64].as_slice(), false, Kind::Float) * -0.5; // [B, K, C]
        per_component.logsumexp([2i64].as_slice(), false) - (self.components() as f64).ln()
    }
}

/// Row indices as the int64 CPU tensor `index_select` takes.
///
/// # Shapes
/// returns `[indices.len()]`.
pub fn index_tensor(indices: &[usize]) -> Tensor {
    Tensor::from_slice(&indices.iter().map(|&i| i as i64).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    fn gaussian(mean: &[f32], var: &[f32], b: i64, c: i64, d: i64) -> Embedding {
        Embedding {
            mean: Tensor::from_slice(mean).reshape([b, c, d]),
            variance: Some(Tensor::from_slice(var).reshape([b, c, d])),
        }
    }

    #[test]
    fn gaussian_kl_closed_form_agrees_with_monte_carlo() {
        let _generator = crate::seeded_generator(0);
        let e = gaussian(&[0.7, -1.2, 0.3], &[0.5, 2.0, 0.1], 1, 1, 3);
        let closed = e.kl_to_standard_normal(&e.sample(1)).double_value(&[0]);
        // The same divergence by Monte Carlo, reusing the mixture estimator with C = 2 identical
        // components (a mixture of two copies is the same distribution).
        let twice = gaussian(&[0.7, -1.2, 0.3, 0.7, -1.2, 0.3], &[0.5, 2.0, 0.1, 0.5, 2.0, 0.1], 1, 2, 3);
        let mc = twice.kl_to_standard_normal(&twice.sample(400_000)).double_value(&[0]);
        // Hand-computed: 0.5 * Σ (v + m² − 1 − ln v) = 1.9543.
        let by_hand: f64 =
            [(0.7f64, 0.5f64), (-1.2, 2.0), (0.3, 0.1)].iter().map(|(m, v)| 0.5 * (v + m * m - 1.0 - v.ln())).sum();
        assert!((closed - by_hand).abs() < 1e-5, "{closed} vs {by_hand}");
        assert!((mc - closed).abs() < 0.02, "Monte Carlo {mc} vs closed form {closed}");
    }

    #[test]
    fn stratified_sampling_draws_equally_from_each_component() {
        let _generator = crate::seeded_generator(1);
        let e = gaussian(&[-5.0, 5.0], &[1e-6, 1e-6], 1, 2, 1);
        let z = e.sample(8).reshape([8]);
        let left = z.lt(0.0).sum(Kind::Int64).int64_value(&[]);
        assert_eq!(left, 4);
        assert_eq!(z.device(), Device::Cpu);
    }

    #[test]
    fn point_embeddings_are_their_own_sample() {
        let e = Embedding::point(Tensor::from_slice(&[1.0f32, 2.0]).reshape([1, 2]));
        assert_eq!(e.sample(8).size(), vec![1, 1, 2]);
        assert_eq!(e.kl_to_standard_normal(&e.sample(1)).double_value(&[0]), 0.0);
    }
}
