//! Throughput of the default network: training steps and inference, in images per second.

use std::time::Instant;

use tch::{Device, Kind, Tensor};

use crate::config::HibConfig;
use crate::distribution::Embedding;
use crate::loss::vib_loss;
use crate::optim::Adam;
use crate::train::build_model;
use crate::Result;

/// Steady-state training throughput in images/s: forward of `2 · batch_pairs` images, the VIB
/// loss with K samples, backward and an Adam step, timed over `steps` steps after `warmup`
/// untimed ones. Inputs are uniform noise of the right shape (the arithmetic does not depend
/// on the pixels).
///
/// With `reuse = R > 1` each step scores `R · batch_pairs` pairs from the same embeddings
/// (round r pairs left image i with right image (i + r) mod B), so pairs/s grows while images/s
/// stays: the measure of what reusing an image's embedding in several pairs would buy.
pub fn train_images_per_s(
    config: &HibConfig,
    device: Device,
    warmup: usize,
    steps: usize,
    reuse: usize,
) -> Result<f64> {
    let (vs, net) = build_model(config, device)?;
    let mut adam = Adam::new(&vs, config.learning_rate);
    let pairs = config.batch_pairs as i64;
    let width = 28 * config.digits as i64;
    let x = Tensor::rand([2 * pairs, 1, 28, width], (Kind::Float, device));
    let is_match = Tensor::arange(pairs, (Kind::Int64, device)).remainder(2).eq(0);
    let rounds = reuse.max(1) as i64;
    let mut step = || {
        let e = net.forward(&x);
        let left = e.narrow(0, pairs);
        let mut total = Tensor::zeros([], (Kind::Float, device));
        for r in 0..rounds {
            // Rotating the right half pairs each left image with another partner.
            let right = e.narrow(pairs, pairs);
            let right = Embedding {
                mean: right.mean.roll([r].as_slice(), [0i64].as_slice()),
                variance: right.variance.map(|v| v.roll([r].as_slice(), [0i64].as_slice())),
            };
            let loss = vib_loss(&net.matcher, &left, &right, &is_match, config.effective_samples() as i64, config.beta);
            total += loss.total;
        }
        adam.zero_grad();
        total.backward();
        adam.step();
        // Reading the loss waits for the device, so the clock measures finished work.
        total.double_value(&[])
    };
    for _ in 0..warmup {
        step();
    }
    let t = Instant::now();
    for _ in 0..steps {
        step();
    }
    Ok((2 * pairs) as f64 * steps as f64 / t.elapsed().as_secs_f64())
}

/// Inference throughput: embedding (means, variances) of `batch` images per forward pass.
pub fn infer_images_per_s(
    config: &HibConfig,
    device: Device,
    batch: usize,
    warmup: usize,
    batches: usize,
) -> Result<f64> {
    let (_vs, net) = build_model(config, device)?;
    let width = 28 * config.digits as i64;
    let x = Tensor::rand([batch as i64, 1, 28, width], (Kind::Float, device));
    let run = || tch::no_grad(|| net.forward(&x).mean.sum(Kind::Float).double_value(&[]));
    for _ in 0..warmup {
        run();
    }
    let t = Instant::now();
    for _ in 0..batches {
        run();
    }
    Ok((batch * batches) as f64 / t.elapsed().as_secs_f64())
}
