//! Benchmark hooks: the Rust side of a call the Python package makes, timed in Rust on the same
//! inputs, so `python/benchmarks/overhead.py` can set a Python call against the same Rust call
//! in one process on one libtorch.

use std::time::Instant;

use hedge_embed::distribution::Embedding;
use hedge_embed::embed::{embed_dataset, EmbedOptions};
use hedge_embed::loss::MatchHead;
use numpy::PyReadonlyArray4;
use pyo3::prelude::*;
use tch::{Device, Kind, Tensor};

use crate::hib_run::HibRun;
use crate::value_error;

/// Seconds per `MatchHead::match_probability` call on `[batch, 1, dim]` Gaussians with
/// `samples` draws, over `calls` calls (after one warm-up call), timed in Rust.
#[pyfunction]
pub fn bench_match_probability(py: Python<'_>, batch: i64, dim: i64, samples: i64, calls: usize) -> f64 {
    py.detach(move || {
        let head = MatchHead { a_raw: Tensor::from(0.5f32), b: Tensor::from(0.0f32), matching: Default::default() };
        let e1 = Embedding {
            mean: Tensor::zeros([batch, 1, dim], (Kind::Float, Device::Cpu)),
            variance: Some(Tensor::ones([batch, 1, dim], (Kind::Float, Device::Cpu))),
        };
        let e2 = Embedding { mean: e1.mean.shallow_clone(), variance: e1.variance.as_ref().map(Tensor::shallow_clone) };
        let _ = head.match_probability(&e1, &e2, samples);
        let start = Instant::now();
        for _ in 0..calls {
            let _ = head.match_probability(&e1, &e2, samples);
        }
        start.elapsed().as_secs_f64() / calls.max(1) as f64
    })
}

/// Seconds per `soft_contrastive` call on `[batch]` log-probabilities (one `where` and a
/// negation: the smallest call, where the Python boundary is most of the cost), timed in Rust.
#[pyfunction]
pub fn bench_soft_contrastive(py: Python<'_>, batch: i64, calls: usize) -> f64 {
    py.detach(move || {
        let log_p = Tensor::full([batch], -0.5, (Kind::Float, Device::Cpu));
        let log_not_p = Tensor::full([batch], -1.0, (Kind::Float, Device::Cpu));
        let is_match = Tensor::ones([batch], (Kind::Bool, Device::Cpu));
        let _ = hedge_embed::loss::soft_contrastive(&log_p, &log_not_p, &is_match);
        let start = Instant::now();
        for _ in 0..calls {
            let _ = hedge_embed::loss::soft_contrastive(&log_p, &log_not_p, &is_match);
        }
        start.elapsed().as_secs_f64() / calls.max(1) as f64
    })
}

/// Seconds of `embed_dataset` on `images` with the run's (already loaded) network, timed in
/// Rust: the work `Run.embed` hands to Rust, without the Python call around it.
#[pyfunction]
pub fn bench_embed(
    run: PyRef<'_, HibRun>,
    images: PyReadonlyArray4<'_, f32>,
    samples: i64,
    batch: usize,
) -> PyResult<f64> {
    crate::guarded(|| {
        let dataset = run.image_dataset(&images)?;
        let options = EmbedOptions { batch, samples, seed: 0 };
        run.with_network(Device::Cpu, |net| {
            let start = Instant::now();
            embed_dataset(net, &dataset, &hedge_data::Corruption::Clean, Device::Cpu, options).map_err(value_error)?;
            Ok(start.elapsed().as_secs_f64())
        })?
    })
}
