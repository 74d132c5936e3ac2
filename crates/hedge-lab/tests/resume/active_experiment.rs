//! Fault injection on a real experiment: an active-learning experiment (yacht, three methods)
//! whose writer stops after any single write resumes at its last finished round and ends with
//! the rounds and summary of an uninterrupted one.

use hedge_active::neural_linear::NeuralLinearConfig;
use hedge_active::regression_loop::{LoopConfig, RoundMetrics};
use hedge_data::UciDataset;
use hedge_lab::active::experiment::{run_resumable, Experiment, RegressionExperiment, CONFIG_FILE, ROUNDS_FILE};
use hedge_run::RunDirectory;

/// Two rounds per method (20 and 30 labels): the stops fall inside a method, between methods and
/// between seeds, and each of the run's writes is a stop (a third round per method made 73 writes
/// of a longer run: 83 s of CI's tests on a 2-core AMD EPYC).
fn experiment() -> RegressionExperiment {
    RegressionExperiment {
        schema: hedge_lab::active::experiment::ACTIVE_SCHEMA,
        command: "test".into(),
        dataset: "uci/yacht".into(),
        table: None,
        methods: ["random", "maxent", "acs-fw"].map(String::from).to_vec(),
        loop_config: LoopConfig {
            init: 20,
            batch: 10,
            budget: 30,
            model: NeuralLinearConfig { steps: 40, ..Default::default() },
            ..Default::default()
        },
        protocol: RegressionExperiment::PROTOCOL.into(),
        active_protocol: Default::default(),
        seeds: 2,
    }
}

/// What must not depend on interruptions (the seconds a fit took do).
fn key(r: &RoundMetrics) -> (u64, String, usize, usize, u64, u64, usize) {
    (r.seed, r.method.clone(), r.round, r.labels, r.test_rmse.to_bits(), r.test_log_likelihood.to_bits(), r.batch_size)
}

#[test]
fn an_experiment_stopped_after_any_single_write_resumes_to_the_same_rounds() {
    tch::set_num_threads(1);
    let data_dir = hedge_data::data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let data = UciDataset::load(&data_dir, "yacht").unwrap();
    let exp = experiment();
    let root = tempfile::tempdir().unwrap();

    let straight_path = root.path().join("straight");
    let straight = exp.run(&data, &straight_path, false, |_| {}).unwrap();
    let dir = RunDirectory::open(&straight_path).unwrap();
    let expected: Vec<_> = dir.read_json_lines::<RoundMetrics>(ROUNDS_FILE).unwrap().iter().map(key).collect();
    // 2 seeds x 3 methods x 2 rounds (20, 30 labels; ACS-FW may take more, smaller batches).
    assert!(expected.len() >= 12, "{}", expected.len());
    let rmse = |s: &hedge_lab::active::experiment::RegressionSummary| -> Vec<(String, u64)> {
        s.methods.iter().map(|(k, v)| (k.clone(), v.final_rmse.mean.to_bits())).collect()
    };

    // The writes of a run: the config, then per round a log line and a checkpoint (progress
    // staged, manifest, rename), then summary and table.
    let counted = RunDirectory::create(
        &root.path().join("counted"),
        hedge_lab::active::experiment::ACTIVE_EXPERIMENT_KIND,
        false,
    )
    .unwrap();
    counted.write_json(CONFIG_FILE, &exp).unwrap();
    let x = faer::Mat::from_fn(data.rows(), data.features, |i, j| data.row(i)[j]);
    let per_seed = exp.methods.len();
    // The experiment's rounds run through `dir` (seeds outer, methods inner, as the library runs them).
    let run_rounds = |dir: &RunDirectory| {
        run_resumable::<RoundMetrics>(
            dir,
            exp.seeds as usize * per_seed,
            |i, resume, on_round| {
                exp.loop_config
                    .run_from(
                        &x,
                        &data.targets,
                        hedge_active::acquisition(&exp.methods[i % per_seed])?,
                        (i / per_seed) as u64,
                        resume,
                        on_round,
                    )
                    .map(|_| ())
            },
            |_| {},
        )
    };
    let rounds = run_rounds(&counted).unwrap();
    assert_eq!(rounds.iter().map(key).collect::<Vec<_>>(), expected);
    let writes = counted.writes_done();
    assert_eq!(writes, 1 + 4 * expected.len());

    // Stop after every write of the rounds and of the report (+2), resume, compare.
    for stop in 1..writes + 2 {
        let path = root.path().join(format!("stopped-{stop}"));
        let stopped = RunDirectory::create(&path, hedge_lab::active::experiment::ACTIVE_EXPERIMENT_KIND, false)
            .unwrap()
            .stop_after_writes(stop);
        stopped.write_json(CONFIG_FILE, &exp).unwrap();
        if let Err(e) = run_rounds(&stopped) {
            assert!(e.to_string().contains("fault injection"), "stop {stop}: {e}");
        }
        let (_, summary) = RegressionExperiment::resume(&path, &hedge_data::DataRoot::at(&data_dir), |_| {}).unwrap();
        let dir = RunDirectory::open(&path).unwrap();
        let got: Vec<_> = dir.read_json_lines::<RoundMetrics>(ROUNDS_FILE).unwrap().iter().map(key).collect();
        assert_eq!(got, expected, "stop {stop}: rounds.jsonl");
        assert_eq!(rmse(&summary), rmse(&straight), "stop {stop}: summary");
    }
}

#[test]
fn a_new_experiment_refuses_a_folder_with_files_and_overwrite_starts_afresh_only_in_hedges_own() {
    let data_dir = hedge_data::data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let data = UciDataset::load(&data_dir, "yacht").unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "mine").unwrap();
    let mut exp = experiment();
    exp.seeds = 1;
    exp.methods = vec!["random".into()];
    exp.loop_config.budget = 40;
    let e = exp.run(&data, root.path(), false, |_| {}).unwrap_err().to_string();
    assert!(e.contains("--overwrite") && e.contains("notes.txt"), "{e}");
    // A folder hedge did not make is refused even with --overwrite.
    let e = exp.run(&data, root.path(), true, |_| {}).unwrap_err().to_string();
    assert!(e.contains("did not make") && e.contains("notes.txt"), "{e}");
    let out = root.path().join("run");
    let first = exp.run(&data, &out, false, |_| {}).unwrap();
    // Over a finished experiment of hedge's, --overwrite runs a new one (it does not resume the
    // old one) and leaves a file the user put there alone.
    std::fs::write(out.join("notes.txt"), "mine too").unwrap();
    exp.loop_config.budget = 30;
    let second = exp.run(&data, &out, true, |_| {}).unwrap();
    let dir = RunDirectory::open(&out).unwrap();
    let rounds: Vec<RoundMetrics> = dir.read_json_lines(ROUNDS_FILE).unwrap();
    assert_eq!(rounds.iter().map(|r| r.labels).collect::<Vec<_>>(), vec![20, 30]);
    assert_ne!(first, second);
    assert_eq!(std::fs::read_to_string(root.path().join("notes.txt")).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine too");
}

#[test]
fn a_log_cut_short_is_refused_by_resume_and_report_never_rebuilt_into_a_smaller_result() {
    let data_dir = hedge_data::data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
    let data = UciDataset::load(&data_dir, "yacht").unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut exp = experiment();
    exp.seeds = 1;
    exp.methods = vec!["random".into(), "maxent".into()];
    exp.loop_config.budget = 30;
    let out = root.path().join("run");
    let summary = exp.run(&data, &out, false, |_| {}).unwrap();
    // One seed: no spread, written as null with its reason, never "± 0.000".
    assert!(summary.methods.values().all(|m| m.final_rmse.se.is_none()));
    assert!(summary
        .undefined
        .iter()
        .any(|u| u.why.contains("needs two") && u.fields.iter().all(|f| f.ends_with(".se"))));
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    assert!(table.contains("(1 seed)") && !table.contains("± 0.000"), "{table}");
    let log = out.join(ROUNDS_FILE);
    let full = std::fs::read_to_string(&log).unwrap();
    assert_eq!(full.lines().count(), 4, "2 methods x 2 rounds");
    let first_line = format!("{}\n", full.lines().next().unwrap());
    for damaged in [first_line.as_str(), ""] {
        std::fs::write(&log, damaged).unwrap();
        let e = RegressionExperiment::report(&out).unwrap_err().to_string();
        assert!(e.contains("rounds.jsonl") && e.contains("cut short") && e.contains("--overwrite"), "{e}");
        let e =
            RegressionExperiment::resume(&out, &hedge_data::DataRoot::at(&data_dir), |_| {}).unwrap_err().to_string();
        assert!(e.contains("rounds.jsonl") && e.contains("cut short"), "{e}");
        // The refusal changed nothing: the summary still holds both methods.
        let summary: hedge_lab::active::experiment::RegressionSummary =
            RunDirectory::open(&out).unwrap().read_json("summary.json").unwrap();
        assert_eq!(summary.methods.len(), 2);
    }
    // An edited line (same length or not) is refused too.
    std::fs::write(&log, full.replacen("\"seed\":0", "\"seed\":7", 1)).unwrap();
    let e = RegressionExperiment::report(&out).unwrap_err().to_string();
    assert!(e.contains("rounds.jsonl") && e.contains("differ"), "{e}");
    // Restored, it reports again.
    std::fs::write(&log, &full).unwrap();
    let reported = RegressionExperiment::report(&out).unwrap();
    assert_eq!(reported.methods.len(), 2);
    // Lines after the last checkpoint (a forged round, a duplicated one) are work no checkpoint
    // holds: the report leaves them out, exactly as resume does, and gives the same numbers.
    let last = full.lines().last().unwrap();
    let forged = last.replacen("\"test_rmse\":", "\"test_rmse\":0.001,\"was\":", 1);
    for extra in [format!("{forged}\n"), format!("{last}\n")] {
        std::fs::write(&log, format!("{full}{extra}")).unwrap();
        assert_eq!(RegressionExperiment::report(&out).unwrap(), reported);
        // The report changed nothing on disk; the resume cuts the lines and finds nothing to do.
        assert_eq!(std::fs::read_to_string(&log).unwrap(), format!("{full}{extra}"));
        let (_, resumed) = RegressionExperiment::resume(&out, &hedge_data::DataRoot::at(&data_dir), |_| {}).unwrap();
        assert_eq!(resumed, reported);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), full);
    }
    // An edited definition (one seed becomes three) is refused by resume and report alike,
    // naming the field, instead of running or reporting a third seed.
    let config = out.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("\"seeds\": 1", "\"seeds\": 3")).unwrap();
    let e = RegressionExperiment::resume(&out, &hedge_data::DataRoot::at(&data_dir), |_| {}).unwrap_err().to_string();
    assert!(e.contains("edited after the run started") && e.contains("seeds: 1 → 3"), "{e}");
    let e = RegressionExperiment::report(&out).unwrap_err().to_string();
    assert!(e.contains("seeds: 1 → 3"), "{e}");
    std::fs::write(&config, text).unwrap();
    assert_eq!(RegressionExperiment::report(&out).unwrap(), reported);
}
