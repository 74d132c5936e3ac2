//! `hedge bench …`: throughput of the default HIB network.

use anyhow::Result;
use clap::{Args, Subcommand};
use hedge_embed::bench::{infer_images_per_s, train_images_per_s};
use hedge_embed::{device_name, parse_device, HibConfig};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Training images/s: batch of 256 images, forward + backward + Adam, after warm-up.
    Train(BenchArgs),
    /// Inference images/s: embedding batches of 1,000 images.
    Embed(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Print one JSON object only.
    #[arg(long)]
    json: bool,
    /// Timed steps (or batches).
    #[arg(long, default_value_t = 40)]
    steps: usize,
    /// Untimed warm-up steps.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Intra-op threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Number format of the convolutions.
    #[arg(long, value_enum, default_value = "auto")]
    precision: crate::hib::PrecisionArg,
    /// Pairs scored per pair of embedded images (1: the paper's independent pairs).
    #[arg(long, default_value_t = 1)]
    reuse: usize,
    /// Embedding dimension of the benchmarked model.
    #[arg(long, default_value_t = 2)]
    dim: usize,
}

pub fn run(command: BenchCommand) -> Result<()> {
    let (args, train) = match command {
        BenchCommand::Train(a) => (a, true),
        BenchCommand::Embed(a) => (a, false),
    };
    crate::set_threads(args.threads);
    let device = parse_device(&args.device)?;
    let precision = hedge_embed::ConvPrecision::from(args.precision).resolve(device);
    let config = HibConfig::default().with_dim(args.dim).with_conv_precision(precision);
    let infer_batch = 1000;
    // Both numbers are always measured, so one JSON object carries both keys.
    let (train_steps, infer_batches) =
        if train { (args.steps, args.steps / 4 + 1) } else { (args.steps / 4 + 1, args.steps) };
    let train_ips = train_images_per_s(&config, device, args.warmup, train_steps, args.reuse)?;
    let infer_ips = infer_images_per_s(&config, device, infer_batch, args.warmup.min(3), infer_batches)?;
    let report = serde_json::json!({
        "train_images_per_s": train_ips,
        "train_pairs_per_s": train_ips / 2.0 * args.reuse.max(1) as f64,
        "pairs_per_image_pair": args.reuse.max(1),
        "infer_images_per_s": infer_ips,
        "train_batch_images": 2 * config.batch_pairs,
        "infer_batch_images": infer_batch,
        "train_steps_timed": train_steps,
        "infer_batches_timed": infer_batches,
        "threads": tch::get_num_threads(),
        "device": device_name(device),
        "model": format!("gaussian D={} K={} on {}-digit MNIST, channels {:?}", config.dim, config.samples, config.digits, config.channels),
        "conv_precision": precision,
    });
    if args.json {
        println!("{report}");
    } else {
        println!(
            "train: {train_ips:.0} images/s (batch {} images)\ninfer: {infer_ips:.0} images/s (batch {infer_batch})\n{report}",
            2 * config.batch_pairs
        );
    }
    Ok(())
}
