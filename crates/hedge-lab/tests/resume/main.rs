//! Fault injection on the one experiment engine, in one test binary (one build and link): an
//! active-learning experiment, an agnostic sweep, a HIB reproduction and a HIB study whose writer stops after
//! any single write resume to the results of an uninterrupted run, and damaged logs are refused.

mod active_experiment;
mod agnostic_sweep;
mod hib_reproduction;
mod hib_study;

/// Copies the trained run folders under `from/runs` into `to/runs`, as an experiment stopped
/// later than its training would have left them (they are written apart from its own files).
pub(crate) fn copy_runs(from: &std::path::Path, to: &std::path::Path) {
    for run in std::fs::read_dir(from.join("runs")).unwrap().flatten() {
        let target = to.join("runs").join(run.file_name());
        std::fs::create_dir_all(&target).unwrap();
        for file in std::fs::read_dir(run.path()).unwrap().flatten().filter(|f| f.path().is_file()) {
            std::fs::copy(file.path(), target.join(file.file_name())).unwrap();
        }
    }
}
