//! Validation classes carved from `train`, watched sets, model choice and the wall-clock
//! budget, on the real 2-digit MNIST tables.

use std::sync::Arc;

use hedge_data::{data_dir, ImageDataset, Mnist, NDigitProtocol, NDigitSplit};
use hedge_embed::monitor::{split_off_classes, validation_classes, WatchSet};
use hedge_embed::run::{BestModel, BEST_FILE, BEST_MODEL_FILE, MONITOR_FILE};
use hedge_embed::train::{validation_images, CALIBRATION_STEPS};
use hedge_embed::{
    BatchComposition, EmbeddingKind, HibConfig, MonitorRecord, RunDir, RunOptions, TrainEvent, Trainer,
    ValidationDigits,
};
use hedge_run::ParamGuard;
use tch::Device;

fn train_set() -> ImageDataset {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let mnist = Arc::new(Mnist::load(&dir.join("mnist")).unwrap());
    ImageDataset::load(&dir, 2, NDigitProtocol::OpenSet, NDigitSplit::Train, &mnist).unwrap()
}

#[test]
fn validation_classes_are_fixed_by_their_seed_and_never_trained_on() {
    let data = train_set();
    let chosen = validation_classes(&data, 10, 0).unwrap();
    assert_eq!(chosen.len(), 10);
    assert_eq!(chosen, validation_classes(&data, 10, 0).unwrap(), "same seed, same classes");
    assert_ne!(chosen, validation_classes(&data, 10, 1).unwrap(), "another seed, other classes");
    assert!(chosen.windows(2).all(|w| w[0] < w[1]));
    let (train, val) = split_off_classes(&data, &chosen, 333);
    // No training image belongs to a validation class, every other image stays.
    assert!(train.labels.iter().all(|l| chosen.binary_search(l).is_err()));
    let held: usize = data.labels.iter().filter(|l| chosen.binary_search(l).is_ok()).count();
    assert_eq!(train.len(), data.len() - held);
    // 1,428 images per class in the table, 333 kept per validation class.
    assert_eq!(val.len(), 10 * 333);
    assert_eq!(val.classes(), chosen);
    // The subset renders the same pixels as the original image (validation images keep table
    // order, so the first is the table's first image of any held-out class).
    let first = data.labels.iter().position(|l| chosen.binary_search(l).is_ok()).unwrap();
    assert_eq!(val.labels[0], data.labels[first]);
    let mut rng = rand::rng();
    let a = data.render_batch(&[first], &hedge_data::Corruption::Clean, &mut rng);
    let b = val.render_batch(&[0], &hedge_data::Corruption::Clean, &mut rng);
    assert_eq!(a, b);
    // Too many held-out classes leave nothing to train on.
    let err = validation_classes(&data, 69, 0).unwrap_err().to_string();
    assert!(err.contains("validation_classes"), "{err}");
}

#[test]
fn a_budget_stops_training_unless_it_only_plans_the_steps() {
    let hard = RunOptions { budget_seconds: Some(60.0), plan_steps: true, ..Default::default() };
    assert!(!hard.budget_reached(59.9));
    assert!(hard.budget_reached(60.0));
    let planning_only = RunOptions { finish_planned_steps: true, ..hard };
    assert!(!planning_only.budget_reached(600.0));
    assert!(!RunOptions::default().budget_reached(1e9), "no budget, no stop");
    // A reproduction asks the plan whether a stored run is finished: the same rule.
    let plan = hedge_embed::experiment::TrainPlan { budget_minutes: Some(1.0), ..Default::default() };
    assert!(plan.finished(10, 100, 60.0) && !plan.finished(10, 100, 59.0) && plan.finished(100, 100, 0.0));
    let plan = hedge_embed::experiment::TrainPlan { finish_planned_steps: true, ..plan };
    assert!(!plan.finished(10, 100, 600.0) && plan.finished(100, 100, 600.0));
}

#[test]
fn a_watched_run_keeps_the_best_validation_model_and_stops_at_its_budget() {
    // Tests that train take turns with libtorch's process-wide generator (re-entrant: the
    // library takes the same lock inside).
    let _turn = hedge_run::lock_generator();
    let config = HibConfig::default()
        .with_model(EmbeddingKind::Gaussian)
        // 8 images a step: the budget below is a multiple of a step's time, and small steps
        // keep it short on the slowest path.
        .with_batch(BatchComposition::Grouped { classes: 4, per_class: 2 })
        .with_protocol(NDigitProtocol::OpenSet)
        .with_validation_classes(10)
        .with_steps(1_000_000)
        .with_checkpoint_every(1000)
        .with_log_every(5);
    let data = train_set();
    // The budget holds about three times the calibration steps on this CPU and precision path.
    // A fixed one would not: 30 steps took over 20 s with bf16 emulated on a CPU without native
    // bf16 (CI on a first-generation AMD EPYC), where they take 2 s natively, and the run then
    // stopped before it planned anything. The speed is read off a throwaway run of the same
    // config (its first steps are the slowest, so the estimate errs long).
    let seconds_per_step = {
        let mut probe = Trainer::new(config.clone().with_steps(6).check().unwrap(), data.clone(), Device::Cpu).unwrap();
        probe.run(None, |_| {}).unwrap();
        probe.seconds() / 6.0
    };
    let budget = (3.0 * CALIBRATION_STEPS as f64 * seconds_per_step).max(10.0);
    let mut trainer = Trainer::new(config.check().unwrap(), data, Device::Cpu).unwrap();
    let val = trainer.validation_set().unwrap().clone();
    // A small validation set, watched every 50 steps, keeps the test quick (the first 20 images
    // of each class; the watches, not the training, took most of the test's time).
    let keep: Vec<usize> = (0..val.len()).filter(|i| i % 333 < 20).collect();
    let watch = [WatchSet::new("validation", val.subset(&keep), 200).unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(dir.path()).unwrap();
    run.write_config(&hedge_embed::RunConfig {
        schema: hedge_embed::run::RUN_SCHEMA,
        hib: trainer.config.clone(),
        device: "cpu".into(),
        threads: 1,
        command: "test".into(),
        hedge_version: "test".into(),
        libtorch: "test".into(),
    })
    .unwrap();
    // `budget` seconds of training: planned from the speed of the first 30 steps.
    let options = RunOptions {
        watch: &watch,
        watch_every: 50,
        budget_seconds: Some(budget),
        plan_steps: true,
        ..Default::default()
    };
    let (mut planned, mut stopped) = (None, false);
    trainer
        .run_with(Some(&run), &options, |e| match e {
            TrainEvent::Planned { steps, .. } => planned = Some(steps),
            TrainEvent::BudgetReached { .. } => stopped = true,
            _ => {}
        })
        .unwrap();
    let planned = planned.expect("the step count is planned after the calibration steps");
    assert!(planned > 30 && planned < 1_000_000, "{planned}");
    assert_eq!(run.read_config().unwrap().hib.schedule.steps, planned, "config.json holds the planned steps");
    // Training ends at the planned step or at the budget, within a step of it.
    assert!(trainer.step() == planned || stopped);
    let overshoot = trainer.seconds() - budget;
    assert!(overshoot < 5.0_f64.max(5.0 * seconds_per_step), "{overshoot} s past a {budget} s budget");
    let records: Vec<MonitorRecord> = run.read_json_lines(MONITOR_FILE).unwrap();
    assert!(records.len() >= 2, "watched every 50 steps and at the end");
    assert!(records.windows(2).all(|w| w[0].step < w[1].step && w[0].train_seconds < w[1].train_seconds));
    let best: BestModel = run.read_json(BEST_FILE).unwrap();
    let top = records.iter().map(|r| r.sets["validation"].score()).fold(f64::MIN, f64::max);
    assert_eq!(best.score, top, "best.json holds the best validation score");
    assert!(run.file(BEST_MODEL_FILE).is_file());
    // The quick numbers are probabilities. How good they are is not asserted here: the steps
    // that fit in the budget depend on the CPU and on its precision path (bf16 forced on a CPU
    // without native bf16 runs a fraction of them), so no bound would hold on every CPU; what
    // a fixed number of steps reaches is short_training.rs's assertion.
    let last = &records.last().unwrap().sets["validation"];
    for v in [last.ap_clean, last.ap_corrupt, last.knn_clean, last.knn_corrupt] {
        assert!((0.0..=1.0).contains(&v), "{last:?}");
    }
}

/// `validation_digits = "unused"` (the instance protocol): the held-out images keep their classes
/// and number (50 of each class's 1,000), but where nearly every held-out image of the table
/// shares a digit image with a training image (99.8 %, `results/hib/digit-overlap.json`), the
/// redrawn ones share none; `validation_images` (what `hib eval --split validation` scores)
/// draws the same images as the trainer.
#[test]
fn validation_on_unused_digits_shares_no_digit_image_with_training() {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let mnist = Arc::new(Mnist::load(&dir.join("mnist")).unwrap());
    let data = ImageDataset::load(&dir, 2, NDigitProtocol::Instance, NDigitSplit::Train, &mnist).unwrap();
    let shared = HibConfig::default().with_validation_fraction(0.05);
    let unused = shared.clone().with_validation_digits(ValidationDigits::Unused);
    let trainer = Trainer::new(unused.clone().check().unwrap(), data.clone(), Device::Cpu).unwrap();
    let redrawn = trainer.validation_set().unwrap();
    let table_held_out = validation_images(&shared, data.clone()).unwrap().unwrap();
    assert_eq!(redrawn.len(), 100 * 50);
    assert_eq!(redrawn.labels, table_held_out.labels);
    assert_eq!(validation_images(&unused, data.clone()).unwrap().unwrap().parts, redrawn.parts);
    // The training images: the table less the held-out ones.
    let held: std::collections::HashSet<(u32, u32)> = table_held_out.parts.chunks(2).map(|p| (p[0], p[1])).collect();
    let trained: std::collections::HashSet<u32> =
        data.parts.chunks(2).filter(|p| !held.contains(&(p[0], p[1]))).flatten().copied().collect();
    let sharing = |set: &ImageDataset| set.parts.chunks(2).filter(|p| p.iter().any(|d| trained.contains(d))).count();
    assert!(sharing(&table_held_out) > 4_950, "{} of 5,000", sharing(&table_held_out));
    assert_eq!(sharing(redrawn), 0);
    // Without held-out images there is nothing to redraw: refused when the config is checked.
    let e = HibConfig::default().with_validation_digits(ValidationDigits::Unused).check().unwrap_err().to_string();
    assert!(e.contains("validation_digits") && e.contains("validation_fraction"), "{e}");
}
