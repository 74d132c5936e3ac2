//! Throughput of the default network: training steps and inference, in images per second.

use std::time::Instant;

use tch::{Device, Kind, Tensor};

use crate::config::HibConfig;
use crate::loss::vib_loss;
use crate::optim::Adam;
use crate::train::build_model;
use crate::Result;

/// Steady-state training throughput: forward of `2 · batch_pairs` images, the VIB loss with K
/// samples, backward and an Adam step, timed over `steps` steps after `warmup` untimed ones.
/// Inputs are uniform noise of the right shape (the arithmetic does not depend on the pixels).
pub fn train_images_per_s(config: &HibConfig, device: Device, warmup: usize, steps: usize) -> Result<f64> {
    let (vs, net) = build_model(config, device)?;
    let mut adam = Adam::new(&vs, config.learning_rate);
    let pairs = config.batch_pairs as i64;
    let width = 28 * config.digits as i64;
    let x = Tensor::rand([2 * pairs, 1, 28, width], (Kind::Float, device));
    let is_match = Tensor::arange(pairs, (Kind::Int64, device)).remainder(2).eq(0);
    let mut step = || {
        let e = net.forward(&x);
        let loss = vib_loss(
            &net.matcher,
            &e.narrow(0, pairs),
            &e.narrow(pairs, pairs),
            &is_match,
            config.effective_samples() as i64,
            config.beta,
        );
        adam.zero_grad();
        loss.total.backward();
        adam.step();
        // Reading the loss waits for the device, so the clock measures finished work.
        loss.total.double_value(&[])
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
