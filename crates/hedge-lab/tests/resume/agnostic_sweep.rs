//! Fault injection on a real sweep (Adult's first 3,000 complete rows as a user's table, two α):
//! a sweep whose writer stops after any single write resumes at its last finished network and
//! ends with the audits of an uninterrupted one.

use hedge_agnostic::{ModelConfig, TrainConfig};
use hedge_lab::agnostic::sweep::{
    DataOptions, PreparedData, SweepAudit, SweepConfig, SweepDataset, UserTable, METRICS_FILE,
};
use hedge_run::{Experiment, RunDirectory};

/// The first `rows` complete rows of Adult's training file, with a header, as a user's CSV. The
/// sweep runs 23 times here (straight, then each stop and its resume): on the whole of Adult its
/// probe ladders made this test 287 s of CI's 2-core run; resuming works the same on any table.
fn adult_rows(dir: &std::path::Path, data_dir: &std::path::Path, rows: usize) -> std::path::PathBuf {
    let raw = std::fs::read_to_string(data_dir.join("adult/adult.data")).unwrap();
    let mut csv = String::from(
        "age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,sex,\
         capital_gain,capital_loss,hours_per_week,native_country,income\n",
    );
    let complete = raw
        .lines()
        .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>())
        .filter(|cells| cells.len() == 15 && !cells.contains(&"?"));
    for cells in complete.take(rows) {
        csv.push_str(&cells.join(","));
        csv.push('\n');
    }
    let path = dir.join("adult.csv");
    std::fs::write(&path, csv).unwrap();
    path
}

/// Audits without the wall-clock seconds, which no rerun repeats.
fn audits(dir: &std::path::Path) -> Vec<String> {
    let dir = RunDirectory::open(dir).unwrap();
    dir.read_json_lines::<SweepAudit>(METRICS_FILE)
        .unwrap()
        .into_iter()
        .map(|a| match a {
            SweepAudit::Tabular(mut t) => {
                t.train_seconds = 0.0;
                serde_json::to_string(&t).unwrap()
            }
            other => panic!("a table sweep logged {other:?}"),
        })
        .collect()
}

#[test]
fn a_sweep_stopped_after_any_single_write_resumes_to_the_same_audits() {
    tch::set_num_threads(1);
    let data_dir = hedge_data::data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let root = tempfile::tempdir().unwrap();
    let table = UserTable {
        path: adult_rows(root.path(), &data_dir, 3000),
        spec: hedge_data::TableSpec::new("income").with_protected("sex"),
        test_fraction: 0.3,
        split_seed: 0,
    };
    let (data, description, model) = PreparedData::build(
        SweepDataset::Table,
        &DataOptions { table: Some(table), ..Default::default() },
        ModelConfig::default(),
        &hedge_data::DataRoot::at(&data_dir),
    )
    .unwrap();
    let config = SweepConfig {
        schema: hedge_lab::agnostic::sweep::SWEEP_SCHEMA,
        alphas: vec![0.0, 1.0],
        command: "test".into(),
        data: description,
        dataset: SweepDataset::Table,
        model,
        probe_steps: 10,
        repeats: 1,
        threads: 1,
        train: TrainConfig { steps: 30, ..Default::default() },
        removal: Default::default(),
        protocol: Default::default(),
    };
    let straight = config.run(&data, &root.path().join("straight"), false, |_| {}).unwrap();
    let expected = audits(&root.path().join("straight"));
    assert_eq!(expected.len(), 2);
    // config (its sealed copy, then the file), then per network a log line and a checkpoint
    // (staged, manifest, rename), then summary and table.
    let writes = 2 + 2 * 4 + 2;
    for stop in 1..writes {
        let path = root.path().join(format!("stopped-{stop}"));
        let dir = RunDirectory::create(&path, "agnostic sweep", false).unwrap().stop_after_writes(stop);
        let e = config.run_in(&dir, &data, |_| {}).unwrap_err().to_string();
        assert!(e.contains("fault injection"), "stop {stop}: {e}");
        let (_, summary) = SweepConfig::resume(&path, &hedge_data::DataRoot::at(&data_dir), |_| {}).unwrap();
        assert_eq!(audits(&path), expected, "stop {stop}");
        assert_eq!(summary, straight, "stop {stop}: summary.json");
    }
    // A metrics.jsonl cut to one of its two lines (or emptied) is refused by a resume and a
    // report; neither rebuilds a table without α = 1.
    let log = root.path().join("straight").join(METRICS_FILE);
    let full = std::fs::read_to_string(&log).unwrap();
    for damaged in [format!("{}\n", full.lines().next().unwrap()), String::new()] {
        std::fs::write(&log, damaged).unwrap();
        let e = SweepConfig::resume(&root.path().join("straight"), &hedge_data::DataRoot::at(&data_dir), |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains(METRICS_FILE) && e.contains("cut short"), "{e}");
        let e = hedge_lab::agnostic::sweep::report(&root.path().join("straight")).unwrap_err().to_string();
        assert!(e.contains(METRICS_FILE) && e.contains("cut short"), "{e}");
    }
}
