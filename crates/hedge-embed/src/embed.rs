//! Embedding whole datasets, uncertainty, verification scores, and `.npz` export.

use std::path::Path;

use hedge_data::{Corruption, ImageDataset, NpyArray, NpyData};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

use crate::distribution::Embedding;
use crate::model::HibNet;
use crate::Result;

/// Every image of a dataset embedded, with its label and self-mismatch uncertainty.
///
/// # Shapes
/// `mean`, `variance`: `[N, C, D]` on the CPU; `eta`: `[N]`.
#[derive(Debug)]
pub struct EmbeddedSet {
    pub embedding: Embedding,
    pub labels: Vec<u32>,
    pub eta: Tensor,
}

/// Options of [`embed_dataset`].
#[derive(Debug, Clone, Copy)]
pub struct EmbedOptions {
    /// Images per forward pass.
    pub batch: usize,
    /// Monte-Carlo samples per input for η (rounded up to a multiple of the mixture components).
    pub samples: i64,
    /// Seed of the sampling noise, so the same call gives the same η.
    pub seed: i64,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions { batch: 1000, samples: 8, seed: 0 }
    }
}

/// What Monte-Carlo match probabilities of `rows` pairs of `samples` samples each (K² sample
/// pairs per row, each D differences, their squares and a few scalars, in f32, doubled for
/// intermediates) take, with `flag` (`--samples` on the command line, `samples` in Python) as the
/// knob.
pub fn mc_footprint(what: &str, flag: &str, rows: f64, samples: f64, dim: usize) -> hedge_run::Footprint<'static> {
    let per = (2 * dim + 8) as f64 * 4.0 * 2.0;
    hedge_run::Footprint::new(what, move |v| rows * v[0] * v[0] * per).knob(flag, samples, 1.0)
}

/// Embeds every image of `dataset` under `corruption`.
pub fn embed_dataset(
    net: &HibNet,
    dataset: &ImageDataset,
    corruption: &Corruption,
    device: Device,
    options: EmbedOptions,
) -> Result<EmbeddedSet> {
    // η of each image: samples² pairs per image of a chunk.
    let rows = options.batch.clamp(1, dataset.len().max(1)) as f64;
    mc_footprint(
        "embedding: η's Monte-Carlo samples",
        "--samples",
        rows,
        options.samples.max(1) as f64,
        net.dim as usize,
    )
    .check()?;
    let _generator = crate::seeded_generator(options.seed);
    // Test-time corruption is deterministic per image (Corruption::Corrupt) or absent, so
    // this generator is never drawn from for the paper's twin sets.
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed as u64);
    let (mut means, mut variances, mut etas) = (Vec::new(), Vec::new(), Vec::new());
    tch::no_grad(|| {
        let all: Vec<usize> = (0..dataset.len()).collect();
        for chunk in all.chunks(options.batch.max(1)) {
            let pixels = dataset.render_batch(chunk, corruption, &mut rng);
            let x = images_to_tensor(&pixels, chunk.len(), dataset.shape(), device);
            let e = net.forward(&x);
            // Stratified sampling needs a multiple of the component count.
            let c = e.components();
            let k = (options.samples.max(1) + c - 1) / c * c;
            etas.push(net.matcher.self_mismatch(&e, k).to_device(Device::Cpu));
            means.push(e.mean.to_device(Device::Cpu));
            if let Some(v) = e.variance {
                variances.push(v.to_device(Device::Cpu));
            }
        }
    });
    Ok(EmbeddedSet {
        embedding: Embedding {
            mean: Tensor::cat(&means, 0),
            variance: (!variances.is_empty()).then(|| Tensor::cat(&variances, 0)),
        },
        labels: dataset.labels.clone(),
        eta: Tensor::cat(&etas, 0),
    })
}

impl EmbeddedSet {
    /// The sets one after another (e.g. test_seen and test_unseen for all classes).
    ///
    /// # Shapes
    /// every set `[N_i, C, D]` with the same C and D; returns `[ΣN_i, C, D]`.
    pub fn concat(sets: &[&EmbeddedSet]) -> EmbeddedSet {
        let means: Vec<&Tensor> = sets.iter().map(|s| &s.embedding.mean).collect();
        let variances: Option<Vec<&Tensor>> = sets.iter().map(|s| s.embedding.variance.as_ref()).collect();
        let etas: Vec<&Tensor> = sets.iter().map(|s| &s.eta).collect();
        EmbeddedSet {
            embedding: Embedding { mean: Tensor::cat(&means, 0), variance: variances.map(|v| Tensor::cat(&v, 0)) },
            labels: sets.iter().flat_map(|s| s.labels.iter().copied()).collect(),
            eta: Tensor::cat(&etas, 0),
        }
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Writes `mean` `[N, C, D]`, `variance` `[N, C, D]` (zeros for point embeddings),
    /// `weights` `[N, C]`, `label` `[N]` and `eta` `[N]` as an `.npz` that `numpy.load` opens.
    pub fn write_npz(&self, path: &Path) -> Result<()> {
        // No silent NaN: an embedding that is not finite is refused where it would be written.
        let tensors = [
            Some(("mean", &self.embedding.mean)),
            self.embedding.variance.as_ref().map(|v| ("variance", v)),
            Some(("eta", &self.eta)),
        ];
        for (name, t) in tensors.into_iter().flatten() {
            let bad = non_finite_count(t);
            if bad > 0 {
                return Err(crate::EmbedError::input(
                    path,
                    format!(
                        "was not written: the embeddings' '{name}' holds {bad} non-finite value(s) of {}; the model's \
                         weights or the images are broken (check the images' pixel range and the run's metrics.jsonl)",
                        t.numel()
                    ),
                ));
            }
        }
        let size: Vec<usize> = self.embedding.mean.size().iter().map(|&s| s as usize).collect();
        let (n, c) = (size[0], size[1]);
        let to_vec = |t: &Tensor| Vec::<f32>::try_from(t.to_kind(Kind::Float).flatten(0, -1)).expect("float tensor");
        let mean = to_vec(&self.embedding.mean);
        let variance = match &self.embedding.variance {
            Some(v) => to_vec(v),
            None => vec![0.0; mean.len()],
        };
        hedge_data::write_npz(
            path,
            &[
                ("mean", NpyArray::new(size.clone(), NpyData::F32(mean))),
                ("variance", NpyArray::new(size, NpyData::F32(variance))),
                ("weights", NpyArray::new(vec![n, c], NpyData::F32(vec![1.0 / c as f32; n * c]))),
                ("label", NpyArray::new(vec![n], NpyData::I64(self.labels.iter().map(|&l| l as i64).collect()))),
                ("eta", NpyArray::new(vec![n], NpyData::F32(to_vec(&self.eta)))),
            ],
        )?;
        Ok(())
    }
}

/// How many values of `t` are NaN or infinite.
pub(crate) fn non_finite_count(t: &Tensor) -> i64 {
    t.isfinite().logical_not().sum(Kind::Int64).int64_value(&[])
}

/// Turns rendered images into a network input.
///
/// # Shapes
/// `pixels`: `[n * C * H * W]` for `shape = [C, H, W]`; returns `[n, C, H, W]` on `device`.
pub fn images_to_tensor(pixels: &[f32], n: usize, shape: [usize; 3], device: Device) -> Tensor {
    let [c, h, w] = shape.map(|v| v as i64);
    Tensor::from_slice(pixels).reshape([n as i64, c, h, w]).to_device(device)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(n: i64, first_label: u32, variance: bool) -> EmbeddedSet {
        let mean = Tensor::arange(n * 2, (Kind::Float, Device::Cpu)).reshape([n, 1, 2]);
        EmbeddedSet {
            embedding: Embedding { variance: variance.then(|| mean.ones_like()), mean },
            labels: (0..n as u32).map(|i| first_label + i).collect(),
            eta: Tensor::zeros([n], (Kind::Float, Device::Cpu)),
        }
    }

    #[test]
    fn concat_keeps_rows_and_labels_in_order() {
        let (a, b) = (set(3, 10, true), set(2, 20, true));
        let all = EmbeddedSet::concat(&[&a, &b]);
        assert_eq!(all.labels, vec![10, 11, 12, 20, 21]);
        assert_eq!(all.embedding.mean.size(), vec![5, 1, 2]);
        assert!(all.embedding.mean.narrow(0, 3, 2).equal(&b.embedding.mean));
        assert_eq!(all.eta.size(), vec![5]);
        assert!(all.embedding.variance.is_some());
        // Point embeddings (no variance) stay point embeddings.
        assert!(EmbeddedSet::concat(&[&set(1, 0, false), &set(1, 1, false)]).embedding.variance.is_none());
    }
}
