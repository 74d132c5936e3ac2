//! Checkpoints round-trip, training is deterministic for a seed on the CPU, and a resumed run
//! ends bit-for-bit where an uninterrupted one does.

use std::sync::Arc;

use hedge_data::{data_dir, Mnist, NDigitDataset, NDigitSplit};
use hedge_embed::{
    load_model, BatchComposition, HibConfig, LrSchedule, MatchInit, ModelKind, Norm, PairSet, RunDir, Trainer,
};
use tch::{Device, Kind, Tensor};

/// libtorch's random generator is process-wide: tests that train take turns, as two trainings
/// in one process would have to.
static TORCH_RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn train_set() -> NDigitDataset {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let mnist = Arc::new(Mnist::load(&dir.join("mnist")).unwrap());
    NDigitDataset::load(&dir, 2, NDigitSplit::Train, &mnist).unwrap()
}

/// The trained variables and then the evaluated ones (the weight average, where kept; batch
/// norm's running statistics included).
fn weights(t: &Trainer) -> Vec<(String, Tensor)> {
    let mut v: Vec<_> = t.vs.variables().into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    let mut avg: Vec<_> = t.inference_vars().variables().into_iter().map(|(k, t)| (format!("avg.{k}"), t)).collect();
    avg.sort_by(|a, b| a.0.cmp(&b.0));
    v.extend(avg);
    v
}

fn config(steps: usize) -> HibConfig {
    HibConfig::default()
        .with_model(ModelKind::Mog)
        .with_components(2)
        .with_batch_pairs(16)
        .with_steps(steps)
        .with_checkpoint_every(2)
        .with_log_every(1)
        .with_seed(5)
}

/// Grouped batches (4 classes x 4 images: 48 pairs from 16 images) instead of independent pairs.
fn grouped(steps: usize) -> HibConfig {
    config(steps).with_batch(BatchComposition::Grouped).with_group_classes(4).with_group_size(4)
}

/// Every recipe lever at once: all pairs of the grouped batch, batch norm, a weight average,
/// a fast match head started from the first batch, warm-up and cosine decay.
fn recipe(steps: usize) -> HibConfig {
    grouped(steps)
        .with_pair_set(PairSet::All)
        .with_norm(Norm::Batch)
        .with_ema_decay(0.9)
        .with_head_lr_scale(30.0)
        .with_match_init(MatchInit::FirstBatch)
        .with_warmup_steps(1)
        .with_lr_schedule(LrSchedule::Cosine)
}

#[test]
fn resumed_recipe_training_equals_uninterrupted_training() {
    resume_is_exact(recipe);
}

#[test]
fn resumed_training_equals_uninterrupted_training() {
    resume_is_exact(config);
}

#[test]
fn resumed_grouped_training_equals_uninterrupted_training() {
    resume_is_exact(grouped);
}

fn resume_is_exact(config: fn(usize) -> HibConfig) {
    let _turn = TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let data = train_set();
    let dir = tempfile::tempdir().unwrap();

    let straight_dir = RunDir::create(&dir.path().join("straight")).unwrap();
    let mut straight = Trainer::new(config(4), data.clone(), Device::Cpu).unwrap();
    straight.run(Some(&straight_dir), |_| {}).unwrap();

    // The same seed again gives the same weights (determinism on the CPU).
    let mut again = Trainer::new(config(4), data.clone(), Device::Cpu).unwrap();
    again.run(None, |_| {}).unwrap();

    let part_dir = RunDir::create(&dir.path().join("part")).unwrap();
    let mut first = Trainer::new(config(2), data.clone(), Device::Cpu).unwrap();
    first.run(Some(&part_dir), |_| {}).unwrap();
    drop(first);
    let mut resumed = Trainer::new(config(4), data, Device::Cpu).unwrap();
    resumed.resume_from(&part_dir).unwrap();
    assert_eq!(resumed.step(), 2);
    resumed.run(Some(&part_dir), |_| {}).unwrap();

    for ((name, a), ((_, b), (_, c))) in
        weights(&straight).iter().zip(weights(&again).iter().zip(weights(&resumed).iter()))
    {
        assert!(a.equal(b), "{name} differs between two runs with the same seed");
        assert!(a.equal(c), "{name} differs after resuming");
    }
    // Something was learned: the weights moved away from their initial values.
    let fresh = Trainer::new(config(4), train_set(), Device::Cpu).unwrap();
    assert!(!weights(&fresh)[0].1.equal(&weights(&straight)[0].1));

    let metrics = part_dir.read_metrics().unwrap();
    assert_eq!(metrics.iter().map(|m| m.step).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert!(metrics.iter().all(|m| m.loss.is_finite() && m.a > 0.0));
    // Independent batches score 16 pairs a step; 4 x 4 groups score 4·4·3 = 48, or all
    // 16·15/2 = 120 pairs.
    let pairs = match (config(1).batch, config(1).pair_set) {
        (BatchComposition::Independent, _) => 16,
        (BatchComposition::Grouped, PairSet::Sampled) => 48,
        (BatchComposition::Grouped, PairSet::All) => 120,
    };
    assert!(metrics.iter().all(|m| m.pairs == pairs), "every step scores {pairs} pairs");
}

#[test]
fn a_saved_model_loads_back_with_identical_outputs() {
    let _turn = TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
    let data = train_set();
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(&dir.path().join("run")).unwrap();
    let cfg = config(2).with_model(ModelKind::Gaussian);
    let mut trainer = Trainer::new(cfg.clone(), data, Device::Cpu).unwrap();
    trainer.run(Some(&run), |_| {}).unwrap();
    // Loading must not depend on the initialisation seed.
    let (_vs, net) = load_model(&run, &cfg.clone().with_seed(999), Device::Cpu).unwrap();
    let x = Tensor::rand([3, 1, 28, 56], (Kind::Float, Device::Cpu));
    let (a, b) = (trainer.net.forward(&x), net.forward(&x));
    assert!(a.mean.equal(&b.mean));
    assert!(a.variance.unwrap().equal(&b.variance.unwrap()));
    assert!(trainer.net.matcher.b.equal(&net.matcher.b));
    // No temporary files are left behind by the atomic writes.
    let leftovers: Vec<_> = std::fs::read_dir(&run.path)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.starts_with(".tmp").then_some(name)
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_run_directory_with_files_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let err = RunDir::create(dir.path()).unwrap_err().to_string();
    assert!(err.contains("--resume"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "mine");
    let err = RunDir::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("config.json"), "{err}");
}
