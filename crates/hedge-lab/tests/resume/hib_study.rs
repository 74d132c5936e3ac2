//! Fault injection on a real HIB study (two runs of a grid, N = 2, D = 2, 2 steps each, scored
//! on 10 test images of every class): a study whose writer stops after any single write of its
//! own resumes at its last finished run (by `--resume`, or by the same command given again) and
//! ends with the table of an uninterrupted one. (A run
//! stopped inside its own training resumes from its own checkpoint: hedge-embed's
//! fault-injection test covers that.)

use std::path::Path;

use hedge_embed::HibData;
use hedge_lab::hib::reproduce::{ReproduceData, ReproduceEnv};
use hedge_lab::hib::study::{Study, StudyPlan, StudySummary, RUNS_LOG};
use hedge_run::{Experiment, RunDirectory};

use crate::copy_runs;

const PLAN: &str = r#"
steps = 2
eval_images_per_class = 10
[settings]
batch = "grouped"
group_classes = 4
group_size = 4
[grid]
model = ["point", "gaussian"]
"#;

fn results(dir: &Path) -> (String, StudySummary) {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    (read("table.md"), serde_json::from_str(&read("summary.json")).unwrap())
}

#[test]
fn a_study_stopped_after_any_single_write_resumes_to_the_same_table() {
    let _turn = hedge_run::lock_generator();
    tch::set_num_threads(1);
    let env = ReproduceEnv { data: hedge_data::DataRoot::from_env(), device: tch::Device::Cpu };
    let root = tempfile::tempdir().unwrap();
    let plan_file = root.path().join("plan.toml");
    std::fs::write(&plan_file, PLAN).unwrap();
    let study =
        StudyPlan::from_toml_file(&plan_file).unwrap().resolve(&HibData::new(env.data.clone()), "test").unwrap();
    let data: ReproduceData = study.load(&env).unwrap();
    let straight = root.path().join("straight");
    study.run(&data, &straight, false, |_| {}).expect("set HEDGE_DATA_DIR to the shared data folder");
    let expected = results(&straight);
    assert_eq!(expected.1.rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["model=point", "model=gaussian"]);
    assert!(expected.1.rows.iter().all(|r| r.steps == 2 && r.verification_ap_clean.is_some()));

    // config.json (its sealed copy, then the file), then per run a log line and a checkpoint
    // (staged, manifest, rename), then summary.json and table.md.
    let writes = 2 + 2 * 4 + 2;
    for stop in 1..writes {
        let path = root.path().join(format!("stopped-{stop}"));
        let dir = RunDirectory::create(&path, Study::KIND, false).unwrap().stop_after_writes(stop);
        // Stopped after its first run was logged and checkpointed, the study trains the second
        // on resuming; stopped elsewhere, its trained run folders are there already (they are
        // written apart from the study's own files) and are read back.
        if stop != 6 {
            copy_runs(&straight, &path);
        }
        let e = study.run_in(&dir, &data, |_| {}).unwrap_err().to_string();
        assert!(e.contains("fault injection"), "stop {stop}: {e}");
        drop(dir);
        // The same command given again continues the study as --resume does.
        if stop % 2 == 0 {
            let (resumed, _) = Study::resume(&path, &env, |_| {}).unwrap();
            assert_eq!(resumed, study, "stop {stop}: config.json");
        } else {
            study.run_or_resume(&env, &path, false, |_| {}).unwrap();
        }
        assert_eq!(results(&path), expected, "stop {stop}");
    }
    // Another plan over the study's folder is refused, naming the folder.
    let other = Study { repeats: 2, ..study.clone() };
    let e = other.run_or_resume(&env, &straight, false, |_| {}).unwrap_err().to_string();
    assert!(e.contains("holds another hib study") && e.contains("straight"), "{e}");
    // A log cut short of its checkpoint is refused, not reported without a run.
    let log = straight.join(RUNS_LOG);
    let full = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, format!("{}\n", full.lines().next().unwrap())).unwrap();
    let e = Study::resume(&straight, &env, |_| {}).unwrap_err().to_string();
    assert!(e.contains(RUNS_LOG) && e.contains("cut short"), "{e}");
}
