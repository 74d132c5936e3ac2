//! Fault injection on a real HIB reproduction (N = 2, D = 2, point, MoG-1 and MoG-2 for 2 steps
//! each, scored on 10 test images of every class): a reproduction whose writer stops after any
//! single write of its own resumes at its last finished run and ends with the tables of an
//! uninterrupted one. (A run stopped inside its own training resumes from its own checkpoint:
//! hedge-embed's fault-injection test covers that.)

use std::path::Path;

use hedge_lab::hib::reproduce::{ReproduceConfig, ReproduceEnv, RUNS_LOG};
use hedge_lab::hib::summary::ReproduceSummary;
use hedge_run::{Experiment, RunDirectory};

use crate::copy_runs;

/// Tables 1 and 2 and the summary without what differs between two folders trained apart
/// (their run paths and wall-clock).
fn results(dir: &Path) -> (String, String, ReproduceSummary) {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let mut summary: ReproduceSummary = serde_json::from_str(&read("summary.json")).unwrap();
    summary.seconds = 0.0;
    for m in summary.models.values_mut() {
        m.runs.clear();
        m.train_seconds.clear();
    }
    (read("table1.md"), read("table2.md"), summary)
}

#[test]
fn a_reproduction_stopped_after_any_single_write_resumes_to_the_same_tables() {
    let _turn = hedge_run::lock_generator();
    tch::set_num_threads(1);
    let env = ReproduceEnv { data: hedge_data::DataRoot::from_env(), device: tch::Device::Cpu };
    let config = ReproduceConfig {
        hib: hedge_embed::HibConfig::default()
            .with_steps(2)
            .with_batch(hedge_embed::BatchComposition::Grouped { classes: 4, per_class: 4 }),
        repeats: 1,
        eval_images_per_class: Some(10),
        command: "test".into(),
        // Drawing them takes seconds per resume; the CLI's smoke run checks them.
        figures: false,
        ..Default::default()
    };
    let data = config.load(&env).expect("set HEDGE_DATA_DIR to the shared data folder");
    let root = tempfile::tempdir().unwrap();
    let straight = root.path().join("straight");
    config.run(&data, &straight, false, |_| {}).unwrap();
    let expected = results(&straight);
    assert_eq!(RunDirectory::open(&straight).unwrap().read_json_lines::<serde_json::Value>(RUNS_LOG).unwrap().len(), 3);

    // config.json (its sealed copy, then the file), then per run a log line and a checkpoint
    // (staged, manifest, rename), then summary.json, Tables 1 and 2 and the README.
    let writes = 2 + 3 * 4 + 4;
    for stop in 1..writes {
        let path = root.path().join(format!("stopped-{stop}"));
        let dir = RunDirectory::create(&path, "hib reproduction", false).unwrap().stop_after_writes(stop);
        // Stopped after its first run was logged and checkpointed, the reproduction trains the
        // other two on resuming; stopped elsewhere, its trained run folders are there already
        // (they are written apart from the reproduction's own files) and are read back.
        if stop != 6 {
            copy_runs(&straight, &path);
        }
        let e = config.run_in(&dir, &data, |_| {}).unwrap_err().to_string();
        assert!(e.contains("fault injection"), "stop {stop}: {e}");
        drop(dir);
        let (resumed, _) = ReproduceConfig::resume(&path, &env, |_| {}).unwrap();
        assert_eq!(resumed, config, "stop {stop}: config.json");
        assert_eq!(results(&path), expected, "stop {stop}");
    }
    // A log cut short of its checkpoint is refused, not reported without a model.
    let log = straight.join(RUNS_LOG);
    let full = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, format!("{}\n", full.lines().next().unwrap())).unwrap();
    let e = ReproduceConfig::resume(&straight, &env, |_| {}).unwrap_err().to_string();
    assert!(e.contains(RUNS_LOG) && e.contains("cut short"), "{e}");
}
