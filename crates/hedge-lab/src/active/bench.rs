//! `hedge bench acs-fw`: seconds and peak memory per ACS-FW batch on pools of random
//! projections, held in memory or streamed from an `.npy` file, and the pools and picks exported
//! for the NumPy reference (`benches/acs_fw_numpy.py`).

use std::path::Path;
use std::time::Instant;

use hedge_data::{NpyArray, NpyData};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use crate::LabError;
use hedge_active::frank_wolfe::{frank_wolfe, frank_wolfe_streamed, stream_block_rows, FwBatch, Projections};
use hedge_run::ParamGuard;

/// Which pools, projection dimensions and batch sizes to time (`hedge bench acs-fw` takes these
/// as its flags).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct AcsFwBench {
    /// Pool sizes N.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "10000,100000"))]
    pub pool: Vec<usize>,
    /// Projection dimensions J (the paper's default is 10).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "10,100"))]
    pub projections: Vec<usize>,
    /// Frank–Wolfe iterations per batch (the batch size b).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "10,100"))]
    pub batch: Vec<usize>,
    /// Timed batches per case (after one untimed warm-up).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 20))]
    pub repeats: usize,
    /// Where the pool lives: in memory, or streamed from an .npy file one pass per Frank–Wolfe
    /// iteration (for pools larger than memory); each is a case of its own.
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_delimiter = ',', default_value = "in-memory"))]
    pub storage: Vec<PoolStorage>,
}

/// Where a benchmarked pool lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PoolStorage {
    /// An N × J matrix in memory ([`frank_wolfe`]).
    InMemory,
    /// An `.npy` file read block by block, one pass per iteration ([`frank_wolfe_streamed`]).
    Streamed,
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
    pub storage: PoolStorage,
    /// Bytes of the N × J float64 vectors.
    pub pool_bytes: u64,
    /// The process's resident memory before the first batch (the program, libtorch's libraries
    /// and, when held in memory, the pool; Linux only).
    pub rss_before_bytes: Option<u64>,
    /// The process's peak resident memory while the batches ran (the peak is reset just before
    /// them; Linux only). Minus `rss_before_bytes`: what Frank–Wolfe itself needs.
    pub peak_rss_bytes: Option<u64>,
    /// For a streamed pool: whether the in-memory path, run on the same file, picks the same
    /// points (checked up to 2 GB of vectors).
    pub same_picks_as_in_memory: Option<bool>,
}

/// The benchmark's report (`rust.json` with `--export`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcsFwReport {
    pub cases: Vec<AcsFwCase>,
    pub repeats: usize,
    pub threads: usize,
    /// Every field left `null`, and why (absent when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<hedge_run::undefined::Undefined>,
}

impl AcsFwReport {
    /// The report as a Markdown table, a row per case.
    pub fn markdown(&self) -> String {
        let mb = |bytes: u64| format!("{:.1}", bytes as f64 / 1e6);
        let mut out = String::from(
            "| pool N | J | storage | pool MB | iterations b | iterations run | batch points | ms / batch | RSS before \
             MB | peak RSS MB | same picks as in memory |\n|---|---|---|---|---|---|---|---|---|---|---|",
        );
        for r in &self.cases {
            out.push_str(&format!(
                "\n| {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {} |",
                r.pool,
                r.projections,
                match r.storage {
                    PoolStorage::InMemory => "in memory",
                    PoolStorage::Streamed => "streamed",
                },
                mb(r.pool_bytes),
                r.iterations,
                r.iterations_run,
                r.batch_points,
                r.seconds_per_batch * 1e3,
                r.rss_before_bytes.map_or("-".to_string(), mb),
                r.peak_rss_bytes.map_or("-".to_string(), mb),
                r.same_picks_as_in_memory.map_or("-".to_string(), |s| s.to_string()),
            ));
        }
        out
    }
}

/// Pool vectors shaped like log-likelihood changes of similar points: a shared positive mean
/// plus per-point noise of varying scale (so the norms σ_n differ), drawn row by row from a fixed
/// seed, so a pool can be written to disk in blocks without ever being held.
pub struct SyntheticPool {
    rng: rand_chacha::ChaCha8Rng,
    projections: usize,
}

impl SyntheticPool {
    pub fn new(projections: usize, seed: u64) -> Self {
        Self { rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed), projections }
    }

    /// The next `rows` rows, row-major.
    pub fn next_rows(&mut self, rows: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(rows * self.projections);
        for _ in 0..rows {
            let scale = 0.2 + self.rng.random::<f64>() * 2.0;
            for _ in 0..self.projections {
                out.push(scale * (0.5 + self.rng.sample::<f64, _>(rand_distr::StandardNormal)));
            }
        }
        out
    }
}

/// An `n × j` synthetic pool in memory ([`SyntheticPool`]).
pub fn synthetic_projections(n: usize, j: usize, seed: u64) -> faer::Mat<f64> {
    let rows = SyntheticPool::new(j, seed).next_rows(n);
    faer::Mat::from_fn(n, j, |i, k| rows[i * j + k])
}

/// Writes an `n × j` synthetic pool to `path` block by block (memory: one block).
pub fn write_synthetic_pool(path: &Path, n: usize, j: usize, seed: u64) -> Result<()> {
    let mut pool = SyntheticPool::new(j, seed);
    let mut writer = hedge_data::NpyRowWriter::create(path, n, j)?;
    let mut done = 0;
    while done < n {
        let count = stream_block_rows(j).min(n - done);
        writer.write_rows(&pool.next_rows(count))?;
        done += count;
    }
    Ok(writer.finish()?)
}

/// Resets the process's peak resident memory so that [`peak_rss_bytes`] measures from now
/// (Linux ≥ 4.0: writing 5 to /proc/self/clear_refs). Returns whether it could.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's peak resident memory (VmHWM) in bytes, where the system reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

/// The process's resident memory now (VmRSS) in bytes, where the system reports it.
pub fn rss_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

fn proc_status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.trim_start_matches(key).trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Threads rayon (and so Frank–Wolfe's Gram products) may use.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The kind of folder `bench acs-fw --export` writes (its ownership marker).
pub const ACS_FW_EXPORT_KIND: &str = "ACS-FW benchmark export";

/// Largest pool whose streamed batch is also run in memory to compare picks.
const COMPARE_BYTES: u64 = 2 << 30;

impl AcsFwBench {
    /// Times every case; with `export`, writes `pool_N_J.npz` (vectors, picks_b) for in-memory
    /// cases, keeps the streamed pools as `pool_N_J.npy`, and writes `rust.json` into that folder.
    /// Streamed pools are otherwise written to a temporary folder and removed. The export folder
    /// must be empty, or (with `overwrite`) an earlier export: it is marked as one.
    pub fn run(&self, export: Option<&Path>, overwrite: bool) -> Result<AcsFwReport> {
        self.check_ref()?;
        if let Some(dir) = export {
            hedge_run::prepare_output_dir(dir, ACS_FW_EXPORT_KIND, overwrite)?;
        }
        let mut cases = Vec::new();
        for &n in &self.pool {
            for &j in &self.projections {
                let seed = (n * 1000 + j) as u64;
                for &storage in &self.storage {
                    match storage {
                        PoolStorage::InMemory => cases.extend(self.in_memory(n, j, seed, export)?),
                        PoolStorage::Streamed => cases.extend(self.streamed(n, j, seed, export)?),
                    }
                }
            }
        }
        let mut report =
            AcsFwReport { cases, repeats: self.repeats, threads: available_threads(), undefined: Vec::new() };
        report.undefined = hedge_run::undefined::explain_nulls(
            &report,
            &[
                hedge_run::undefined::NullReason::new(
                    "cases[*].*rss*",
                    "resident memory is read from /proc/self/status, which only Linux has",
                ),
                hedge_run::undefined::NullReason::new(
                    "cases[*].same_picks_as_in_memory",
                    "not compared: the pool is held in memory, or its vectors exceed the 2 GB the check loads",
                ),
            ],
        );
        if let Some(dir) = export {
            let text = serde_json::to_string_pretty(&report).expect("a report serialises");
            hedge_run::write_atomic(&dir.join("rust.json"), text.as_bytes())?;
        }
        Ok(report)
    }

    /// Warm-up batch, then `repeats` timed ones: the warm-up batch, seconds per batch, and
    /// resident memory before and at the peak.
    fn time(&self, mut batch: impl FnMut() -> Result<FwBatch>) -> Result<(FwBatch, f64, Memory)> {
        let before = if reset_peak_rss() { rss_bytes() } else { None };
        let warm = batch()?;
        let start = Instant::now();
        for _ in 0..self.repeats.max(1) {
            std::hint::black_box(batch()?);
        }
        let memory = Memory { before, peak: before.and(peak_rss_bytes()) };
        Ok((warm, start.elapsed().as_secs_f64() / self.repeats.max(1) as f64, memory))
    }

    fn in_memory(&self, n: usize, j: usize, seed: u64, export: Option<&Path>) -> Result<Vec<AcsFwCase>> {
        let rows = SyntheticPool::new(j, seed).next_rows(n);
        let pool = Projections(faer::Mat::from_fn(n, j, |i, k| rows[i * j + k]));
        let mut arrays = Vec::new();
        if export.is_some() {
            arrays.push(("vectors".to_string(), NpyArray::new(vec![n, j], NpyData::F64(rows))));
        }
        let mut cases = Vec::new();
        for &b in &self.batch {
            let (warm, seconds, memory) = self.time(|| Ok(frank_wolfe(&pool, b, false)?))?;
            cases.push(case(n, j, b, &warm, seconds, PoolStorage::InMemory, memory, None));
            let picks = warm.picks.iter().map(|&f| f as i64).collect();
            arrays.push((format!("picks_{b}"), NpyArray::new(vec![warm.picks.len()], NpyData::I64(picks))));
        }
        if let Some(dir) = export {
            let named: Vec<(&str, NpyArray)> = arrays.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            hedge_data::write_npz(&dir.join(format!("pool_{n}_{j}.npz")), &named)?;
        }
        Ok(cases)
    }

    fn streamed(&self, n: usize, j: usize, seed: u64, export: Option<&Path>) -> Result<Vec<AcsFwCase>> {
        let scratch = std::env::temp_dir().join(format!("hedge-acs-fw-bench-{}", std::process::id()));
        let dir = export.unwrap_or(&scratch);
        std::fs::create_dir_all(dir).map_err(|e| invalid("export", dir.display(), e.to_string()))?;
        let path = dir.join(format!("pool_{n}_{j}.npy"));
        let result = (|| {
            write_synthetic_pool(&path, n, j, seed)?;
            let mut reader = hedge_data::NpyRowReader::open(&path)?;
            let mut timed = Vec::new();
            for &b in &self.batch {
                timed.push((b, self.time(|| Ok(frank_wolfe_streamed(&mut reader, b, false)?))?));
            }
            // The in-memory pool is built once, after every streamed batch is timed, so that it
            // never counts in their memory.
            let held = ((n * j * 8) as u64 <= COMPARE_BYTES).then(|| Projections(synthetic_projections(n, j, seed)));
            let mut cases = Vec::new();
            for (b, (warm, seconds, memory)) in timed {
                let same = match &held {
                    Some(pool) => Some(frank_wolfe(pool, b, false)?.picks == warm.picks),
                    None => None,
                };
                cases.push(case(n, j, b, &warm, seconds, PoolStorage::Streamed, memory, same));
            }
            Ok(cases)
        })();
        if export.is_none() {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        result
    }
}

/// Resident memory around a case's batches (None where the system does not report it).
struct Memory {
    before: Option<u64>,
    peak: Option<u64>,
}

#[allow(clippy::too_many_arguments)]
fn case(
    n: usize,
    j: usize,
    b: usize,
    batch: &FwBatch,
    seconds: f64,
    storage: PoolStorage,
    memory: Memory,
    same_picks_as_in_memory: Option<bool>,
) -> AcsFwCase {
    AcsFwCase {
        batch_points: batch.indices.len(),
        iterations: b,
        iterations_run: batch.picks.len(),
        pool: n,
        projections: j,
        seconds_per_batch: seconds,
        storage,
        pool_bytes: (n * j * 8) as u64,
        rss_before_bytes: memory.before,
        peak_rss_bytes: memory.peak,
        same_picks_as_in_memory,
    }
}

impl ParamGuard for AcsFwBench {
    type Error = LabError;

    fn check_ref(&self) -> Result<()> {
        if [&self.pool, &self.projections, &self.batch].iter().any(|v| v.is_empty() || v.contains(&0)) {
            return Err(invalid("pool/projections/batch", "0 or none", "give each as a list of sizes ≥ 1"));
        }
        if self.storage.is_empty() {
            return Err(invalid("storage", "none", "give in-memory, streamed or both"));
        }
        // The largest pool's projections in f64 with Frank–Wolfe's working copy (held in memory,
        // or generated and written to disk in the streamed case, which reads it back to check).
        let (n, j) = (self.pool.iter().max(), self.projections.iter().max());
        let (n, j) = (*n.unwrap_or(&1) as f64, *j.unwrap_or(&1) as f64);
        hedge_run::Footprint::new("bench acs-fw: the largest pool's projections", |v| v[0] * v[1] * 8.0 * 2.0)
            .knob("--pool", n, 1.0)
            .knob("--projections", j, 1.0)
            .check()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_case_runs_and_exports_what_numpy_reads() {
        let dir = tempfile::tempdir().unwrap();
        let bench = AcsFwBench {
            pool: vec![50],
            projections: vec![3],
            batch: vec![4],
            repeats: 1,
            storage: vec![PoolStorage::InMemory, PoolStorage::Streamed],
        };
        let report = bench.run(Some(dir.path()), false).unwrap();
        assert_eq!(report.cases.len(), 2);
        let (held, streamed) = (&report.cases[0], &report.cases[1]);
        assert!(held.iterations_run <= 4 && held.batch_points >= 1 && held.seconds_per_batch > 0.0);
        assert_eq!((held.storage, streamed.storage), (PoolStorage::InMemory, PoolStorage::Streamed));
        assert_eq!(streamed.same_picks_as_in_memory, Some(true));
        assert_eq!(held.pool_bytes, 50 * 3 * 8);
        let arrays = hedge_data::read_npz(&dir.path().join("pool_50_3.npz")).unwrap();
        assert_eq!(arrays.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), vec!["vectors", "picks_4"]);
        // The streamed pool file holds the same vectors as the exported in-memory pool.
        let file = hedge_data::npy::parse_npy(&std::fs::read(dir.path().join("pool_50_3.npy")).unwrap()).unwrap();
        assert_eq!(file, arrays[0].1);
        let back: AcsFwReport =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("rust.json")).unwrap()).unwrap();
        assert_eq!(back, report);
        assert!(AcsFwBench { storage: vec![], ..bench.clone() }.check_ref().is_err());
        assert!(AcsFwBench { pool: vec![0], ..bench }.check_ref().is_err());
    }
}
