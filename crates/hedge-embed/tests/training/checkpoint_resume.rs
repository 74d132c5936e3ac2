//! Checkpoints round-trip, training is deterministic for a seed on the CPU, and a resumed run
//! ends bit-for-bit where an uninterrupted one does.

use std::sync::Arc;

use hedge_data::{data_dir, ImageDataset, Mnist, NDigitProtocol, NDigitSplit};
use hedge_embed::{
    load_model, BatchComposition, EmbeddingKind, HibConfig, LrSchedule, MatchInit, Norm, PairSet, RunDir, Trainer,
};
use hedge_run::ParamGuard;
use tch::{Device, Kind, Tensor};

fn train_set() -> ImageDataset {
    let dir = data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let mnist = Arc::new(Mnist::load(&dir.join("mnist")).unwrap());
    ImageDataset::load(&dir, 2, NDigitProtocol::OpenSet, NDigitSplit::Train, &mnist).unwrap()
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
        .with_model(EmbeddingKind::MOG2)
        .with_batch(BatchComposition::Independent { pairs: 16 })
        .with_steps(steps)
        .with_checkpoint_every(2)
        .with_log_every(1)
        .with_seed(5)
}

/// Grouped batches (4 classes x 4 images: 48 pairs from 16 images) instead of independent pairs.
fn grouped(steps: usize) -> HibConfig {
    config(steps).with_batch(BatchComposition::Grouped { classes: 4, per_class: 4 })
}

/// Every recipe lever at once: all pairs of the grouped batch, batch norm, a weight average,
/// a fast match head started from the first batch, warm-up and cosine decay, images recomposed
/// from their digits, decoupled weight decay, dropout.
fn recipe(steps: usize) -> HibConfig {
    grouped(steps)
        .with_recompose(true)
        .with_pair_set(PairSet::All)
        .with_norm(Norm::Batch)
        .with_ema_decay(0.9)
        .with_head_lr_scale(30.0)
        .with_match_init(MatchInit::FirstBatch)
        .with_warmup_steps(1)
        .with_lr_schedule(LrSchedule::Cosine)
        .with_weight_decay(0.05)
        .with_dropout(0.5)
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
    // Tests that train take turns with libtorch's process-wide generator (re-entrant: the
    // library takes the same lock inside).
    let _turn = hedge_run::lock_generator();
    let data = train_set();
    let dir = tempfile::tempdir().unwrap();

    let straight_dir = RunDir::create(&dir.path().join("straight")).unwrap();
    let mut straight = Trainer::new(config(4).check().unwrap(), data.clone(), Device::Cpu).unwrap();
    straight.run(Some(&straight_dir), |_| {}).unwrap();

    // The same seed again gives the same weights (determinism on the CPU).
    let mut again = Trainer::new(config(4).check().unwrap(), data.clone(), Device::Cpu).unwrap();
    again.run(None, |_| {}).unwrap();

    let part_dir = RunDir::create(&dir.path().join("part")).unwrap();
    let mut first = Trainer::new(config(2).check().unwrap(), data.clone(), Device::Cpu).unwrap();
    first.run(Some(&part_dir), |_| {}).unwrap();
    drop(first);
    let mut resumed = Trainer::new(config(4).check().unwrap(), data, Device::Cpu).unwrap();
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
    let fresh = Trainer::new(config(4).check().unwrap(), train_set(), Device::Cpu).unwrap();
    assert!(!weights(&fresh)[0].1.equal(&weights(&straight)[0].1));

    let metrics = part_dir.read_metrics().unwrap();
    assert_eq!(metrics.iter().map(|m| m.step).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert!(metrics.iter().all(|m| m.loss.is_finite() && m.a > 0.0));
    // Independent batches score 16 pairs a step; 4 x 4 groups score 4·4·3 = 48, or all
    // 16·15/2 = 120 pairs.
    let pairs = match (config(1).data.batch, config(1).data.pair_set) {
        (BatchComposition::Independent { pairs }, _) => pairs,
        (BatchComposition::Grouped { classes, per_class }, PairSet::Sampled) => classes * per_class * (per_class - 1),
        (BatchComposition::Grouped { classes, per_class }, PairSet::All) => {
            classes * per_class * (classes * per_class - 1) / 2
        }
    };
    assert!(metrics.iter().all(|m| m.pairs == pairs), "every step scores {pairs} pairs");
}

#[test]
fn a_saved_model_loads_back_with_identical_outputs() {
    // Tests that train take turns with libtorch's process-wide generator (re-entrant: the
    // library takes the same lock inside).
    let _turn = hedge_run::lock_generator();
    let data = train_set();
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(&dir.path().join("run")).unwrap();
    let cfg = config(2).with_model(EmbeddingKind::Gaussian);
    let mut trainer = Trainer::new(cfg.clone().check().unwrap(), data, Device::Cpu).unwrap();
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

/// Weights that became NaN are never checkpointed: the run stops naming the step, the tensor
/// and the file, and the last good checkpoint is what a resume finds.
#[test]
fn non_finite_weights_stop_the_run_before_a_checkpoint_holds_them() {
    let _turn = hedge_run::lock_generator();
    let data = train_set();
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(&dir.path().join("run")).unwrap();
    let mut trainer = Trainer::new(config(2).check().unwrap(), data.clone(), Device::Cpu).unwrap();
    trainer.run(Some(&run), |_| {}).unwrap();
    let good = std::fs::read(run.path.join("model.safetensors")).unwrap();
    // One weight of the first layer turns NaN (as a diverging step would leave it); the loss
    // of the next step is NaN too, so checkpoint directly to test the write boundary itself.
    let (name, t) = trainer.vs.variables().into_iter().min_by(|a, b| a.0.cmp(&b.0)).unwrap();
    tch::no_grad(|| {
        let _ = t.view([-1]).get(0).fill_(f64::NAN);
    });
    let err = trainer.checkpoint(&run).unwrap_err().to_string();
    assert!(err.contains("step 2") && err.contains(&name) && err.contains("model.safetensors"), "{err}");
    assert_eq!(std::fs::read(run.path.join("model.safetensors")).unwrap(), good, "the good checkpoint stays");
    let mut resumed = Trainer::new(config(2).check().unwrap(), data, Device::Cpu).unwrap();
    resumed.resume_from(&run).unwrap();
    assert_eq!(resumed.step(), 2);
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

/// `--overwrite` over an earlier run removes every file a run writes, its own-data split
/// included (once left behind, and then read as the new run's split), and nothing of the user's.
#[test]
fn overwrite_removes_every_file_of_the_earlier_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run");
    let run = RunDir::create(&path).unwrap();
    let written =
        ["config.json", "data_split.json", "metrics.jsonl", "model.safetensors", "eval-final.json", "bench.md"];
    for name in written {
        std::fs::write(run.file(name), "earlier run").unwrap();
    }
    std::fs::write(run.file("notes.txt"), "mine").unwrap();
    RunDir::create_with(&path, true).unwrap();
    let left: Vec<String> = hedge_run::atomic::entries_besides_marker(&path);
    assert_eq!(left, ["notes.txt"], "only the user's file stays");
    assert_eq!(hedge_run::atomic::folder_kind(&path).as_deref(), Some(hedge_embed::run::RUN_KIND));
}

/// The files of a finished run that must not depend on where it was interrupted (the logs and
/// `state.json` also hold wall-clock seconds, so they are compared field by field instead).
fn deterministic_files(run: &RunDir) -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<String> = ["config.json", "plan.json", "model.safetensors", "model_ema.safetensors"]
        .iter()
        .chain(&["optimizer.safetensors"])
        .map(|s| s.to_string())
        .collect();
    let mut kept: Vec<String> = std::fs::read_dir(run.file("checkpoints"))
        .unwrap()
        .map(|e| format!("checkpoints/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    kept.sort();
    names.extend(kept);
    names.into_iter().map(|n| (n.clone(), std::fs::read(run.file(&n)).unwrap())).collect()
}

/// Fault injection: a training run whose writer stops after any single write (as `kill -9`
/// would stop it: a file half-staged, a manifest written but not every file renamed, a log
/// line ahead of the checkpoint) is continued as a user would (`--resume`, or `--overwrite`
/// when it never got its config.json) and ends with the bytes of an uninterrupted run.
#[test]
fn a_run_stopped_after_any_single_write_resumes_to_the_same_bytes() {
    use hedge_embed::experiment::write_run_definition;
    use hedge_embed::experiment::{read_plan, train_run};
    use hedge_embed::TrainPlan;

    // Tests that train take turns with libtorch's process-wide generator (re-entrant: the
    // library takes the same lock inside).
    let _turn = hedge_run::lock_generator();
    let data = hedge_embed::HibData::new(hedge_data::DataRoot::from_env());
    let root = tempfile::tempdir().unwrap();
    let cfg = recipe(4);
    let plan = TrainPlan { keep_every: 2, ..Default::default() };
    let start = |run: &RunDir| -> hedge_embed::Result<()> {
        write_run_definition(run, &cfg, &plan, Device::Cpu, "test")?;
        train_run(run, &data, &cfg, Device::Cpu, false, &plan, |_| {}).map(|_| ())
    };

    let straight = RunDir::create(&root.path().join("straight")).unwrap();
    start(&straight).unwrap();
    let writes = straight.writes_done();
    // plan + config (its sealed copy, then the file), then 3 checkpoints (4 files staged, the
    // manifest, 4 renames), 4 metrics lines and 2 kept models.
    assert_eq!(writes, 3 + 3 * 9 + 4 + 2);
    let expected = deterministic_files(&straight);
    let expected_metrics: Vec<(usize, f64)> =
        straight.read_metrics().unwrap().iter().map(|m| (m.step, m.loss)).collect();

    for stop in 1..writes {
        let path = root.path().join(format!("stopped-{stop}"));
        let run = RunDir::create(&path).unwrap().stop_after_writes(stop);
        let err = start(&run).unwrap_err().to_string();
        assert!(err.contains("fault injection"), "stop {stop}: {err}");
        drop(run);
        match RunDir::open_to_resume(&path) {
            Ok(run) => {
                let rc = run.read_config().unwrap();
                let plan = read_plan(&run).unwrap();
                train_run(&run, &data, &rc.hib, Device::Cpu, true, &plan, |_| {}).unwrap();
            }
            Err(e) => {
                // Stopped before config.json: nothing to resume; start over in place.
                assert!(e.to_string().contains("--overwrite"), "stop {stop}: {e}");
                assert!(RunDir::create(&path).is_err(), "a folder with files is refused without --overwrite");
                start(&RunDir::create_with(&path, true).unwrap()).unwrap();
            }
        }
        let run = RunDir::open(&path).unwrap();
        assert_eq!(run.read_state().unwrap().step, 4, "stop {stop}");
        for ((name, a), (_, b)) in expected.iter().zip(deterministic_files(&run).iter()) {
            assert!(a == b, "stop {stop}: {name} differs from the uninterrupted run's");
        }
        assert_eq!(deterministic_files(&run).len(), expected.len(), "stop {stop}");
        let metrics: Vec<(usize, f64)> = run.read_metrics().unwrap().iter().map(|m| (m.step, m.loss)).collect();
        assert_eq!(metrics, expected_metrics, "stop {stop}: metrics.jsonl");
        let stray: Vec<String> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.') && n != hedge_run::atomic::OWNER_FILE)
            .collect();
        assert!(stray.is_empty(), "stop {stop}: {stray:?} left behind");
    }
}

/// `--steps N --budget-minutes M`: the budget only caps the wall-clock; the run trains exactly
/// N steps and config.json keeps N (it once re-planned N from the first steps' speed).
#[test]
fn a_budget_beside_a_step_count_does_not_replan_it() {
    use hedge_embed::experiment::{train_run, write_run_definition};
    use hedge_embed::TrainPlan;

    let _turn = hedge_run::lock_generator();
    let data = hedge_embed::HibData::new(hedge_data::DataRoot::from_env());
    let root = tempfile::tempdir().unwrap();
    // More than the planner's calibration steps, far inside the budget on any CPU (30 s with
    // bf16 emulated on an AMD EPYC, a few seconds natively, against ten minutes; a re-planning
    // run would train ten minutes' worth of steps and fail below).
    let cfg = recipe(40);
    let plan = TrainPlan { budget_minutes: Some(10.0), ..Default::default() };
    let run = RunDir::create(&root.path().join("run")).unwrap();
    write_run_definition(&run, &cfg, &plan, Device::Cpu, "test").unwrap();
    let mut planned = None;
    train_run(&run, &data, &cfg, Device::Cpu, false, &plan, |e| {
        if let hedge_embed::TrainEvent::Planned { steps, .. } = e {
            planned = Some(steps);
        }
    })
    .unwrap();
    assert_eq!(planned, None, "a given step count is never re-planned");
    assert_eq!(run.read_state().unwrap().step, 40);
    assert_eq!(run.read_config().unwrap().hib.schedule.steps, 40);
}
