//! `hedge bench acs-fw`: seconds per ACS-FW batch on pools of random projections, and the pools
//! and picks exported for the NumPy reference (`benches/acs_fw_numpy.py`).

use std::path::Path;
use std::time::Instant;

use hedge_data::{NpyArray, NpyData};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use crate::frank_wolfe::{frank_wolfe, Projections};
use crate::ActiveError;
use hedge_data::ParamGuard;

/// Which pools, projection dimensions and batch sizes to time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcsFwBench {
    /// Pool sizes N.
    pub pool: Vec<usize>,
    /// Projection dimensions J.
    pub projections: Vec<usize>,
    /// Frank–Wolfe iterations per batch (the batch size b).
    pub batch: Vec<usize>,
    /// Timed batches per case (after one untimed warm-up).
    pub repeats: usize,
}

/// One timed case (fields in the order `rust.json` has them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcsFwCase {
    /// Distinct points in the batch.
    pub batch_points: usize,
    pub iterations: usize,
    /// Iterations Frank–Wolfe ran (fewer when it reproduced L exactly).
    pub iterations_run: usize,
    pub pool: usize,
    pub projections: usize,
    pub seconds_per_batch: f64,
}

/// The benchmark's report (`rust.json` with `--export`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcsFwReport {
    pub cases: Vec<AcsFwCase>,
    pub repeats: usize,
    pub threads: usize,
}

/// Pool vectors shaped like log-likelihood changes of similar points: a shared positive mean
/// plus per-point noise of varying scale (so the norms σ_n differ), fixed seed.
pub fn synthetic_projections(n: usize, j: usize, seed: u64) -> faer::Mat<f64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let scales: Vec<f64> = (0..n).map(|_| 0.2 + rng.random::<f64>() * 2.0).collect();
    faer::Mat::from_fn(n, j, |i, _| scales[i] * (0.5 + rng.sample::<f64, _>(rand_distr::StandardNormal)))
}

/// Threads rayon (and so Frank–Wolfe's Gram products) may use.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl AcsFwBench {
    /// Times every case; with `export`, writes `pool_N_J.npz` (vectors, picks_b) and
    /// `rust.json` into that folder.
    pub fn run(&self, export: Option<&Path>) -> Result<AcsFwReport> {
        self.check_ref()?;
        let mut cases = Vec::new();
        for &n in &self.pool {
            for &j in &self.projections {
                let pool = Projections(synthetic_projections(n, j, (n * 1000 + j) as u64));
                let flat: Vec<f64> =
                    (0..n).flat_map(|i| (0..j).map(move |k| (i, k))).map(|(i, k)| pool.0[(i, k)]).collect();
                let mut arrays = vec![("vectors".to_string(), NpyArray::new(vec![n, j], NpyData::F64(flat)))];
                for &b in &self.batch {
                    let warm = frank_wolfe(&pool, b, false)?;
                    let start = Instant::now();
                    for _ in 0..self.repeats.max(1) {
                        std::hint::black_box(frank_wolfe(&pool, b, false)?);
                    }
                    cases.push(AcsFwCase {
                        batch_points: warm.indices.len(),
                        iterations: b,
                        iterations_run: warm.picks.len(),
                        pool: n,
                        projections: j,
                        seconds_per_batch: start.elapsed().as_secs_f64() / self.repeats.max(1) as f64,
                    });
                    let picks = warm.picks.iter().map(|&f| f as i64).collect();
                    arrays.push((format!("picks_{b}"), NpyArray::new(vec![warm.picks.len()], NpyData::I64(picks))));
                }
                if let Some(dir) = export {
                    std::fs::create_dir_all(dir).map_err(|e| invalid("export", dir.display(), e.to_string()))?;
                    let named: Vec<(&str, NpyArray)> = arrays.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                    hedge_data::write_npz(&dir.join(format!("pool_{n}_{j}.npz")), &named)?;
                }
            }
        }
        let report = AcsFwReport { cases, repeats: self.repeats, threads: available_threads() };
        if let Some(dir) = export {
            let text = serde_json::to_string_pretty(&report).expect("a report serialises");
            hedge_data::write_atomic(&dir.join("rust.json"), text.as_bytes())?;
        }
        Ok(report)
    }
}

impl ParamGuard for AcsFwBench {
    type Error = ActiveError;

    fn check_ref(&self) -> Result<()> {
        if [&self.pool, &self.projections, &self.batch].iter().any(|v| v.is_empty() || v.contains(&0)) {
            return Err(invalid("pool/projections/batch", "0 or none", "give each as a list of sizes ≥ 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_case_runs_and_exports_what_numpy_reads() {
        let dir = tempfile::tempdir().unwrap();
        let bench = AcsFwBench { pool: vec![50], projections: vec![3], batch: vec![4], repeats: 1 };
        let report = bench.run(Some(dir.path())).unwrap();
        assert_eq!(report.cases.len(), 1);
        let case = &report.cases[0];
        assert!(case.iterations_run <= 4 && case.batch_points >= 1 && case.seconds_per_batch > 0.0);
        let arrays = hedge_data::read_npz(&dir.path().join("pool_50_3.npz")).unwrap();
        assert_eq!(arrays.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), vec!["vectors", "picks_4"]);
        let back: AcsFwReport =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("rust.json")).unwrap()).unwrap();
        assert_eq!(back, report);
        assert!(AcsFwBench { pool: vec![0], ..bench }.check_ref().is_err());
    }
}
