//! The parsers' fuzz campaign (`hedge bench fuzz`): every file format hedge reads, mutated from
//! its seed files for a time budget each, counting the inputs accepted and the panics (none
//! unless there is a bug). The format parsers live in hedge-data; the recipe TOML in
//! hedge-embed and the ANN graph file in hedge-identify add their own targets here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hedge_data::fuzz::{fuzz, fuzz_fn, CampaignReport, Target};

use crate::error::invalid;
use crate::Result;

/// Every target's name, as `--target` takes them.
pub const TARGETS: &str = "idx, npy, npz, uci, adult, jpeg, csv, png, image-npz, toml, ann-graph";

fn data_target(name: &str) -> Result<Target> {
    Target::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| invalid("target", name, format!("unknown fuzz target; the targets are {TARGETS}")))
}

/// The seed inputs of target `name` (a data format's need the data under `data_dir`).
pub fn seeds(name: &str, data_dir: Option<&Path>) -> Result<Vec<Vec<u8>>> {
    Ok(match name {
        "toml" => hedge_embed::config::config_fuzz_seeds(),
        "ann-graph" => hedge_identify::Hnsw::fuzz_seeds(),
        _ => data_target(name)?.seeds(data_dir),
    })
}

/// Writes each target's seeds to `folder/<target>/seed-<i>` (a coverage-guided fuzzer's starting
/// corpus); returns (target, seeds written, its folder).
pub fn write_seeds(
    targets: &[String],
    folder: &Path,
    data_dir: Option<&Path>,
) -> Result<Vec<(String, usize, PathBuf)>> {
    let mut written = Vec::new();
    for name in targets {
        let seeds = seeds(name, data_dir)?;
        let dir = folder.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| crate::LabError::Run(hedge_run::RunError::write(&dir, e)))?;
        for (i, seed) in seeds.iter().enumerate() {
            hedge_run::write_atomic(&dir.join(format!("seed-{i}")), seed)?;
        }
        written.push((name.clone(), seeds.len(), dir));
    }
    Ok(written)
}

/// Fuzzes target `name` for `budget`, from generator seed `seed`.
pub fn campaign(name: &str, budget: Duration, seed: u64, data_dir: Option<&Path>) -> Result<CampaignReport> {
    Ok(match name {
        "toml" => {
            let seeds = hedge_embed::config::config_fuzz_seeds();
            fuzz_fn("toml", hedge_embed::config::fuzz_config_file, true, &seeds, budget, u64::MAX, seed)
        }
        "ann-graph" => fuzz_fn(
            "ann-graph",
            hedge_identify::Hnsw::fuzz,
            false,
            &hedge_identify::Hnsw::fuzz_seeds(),
            budget,
            u64::MAX,
            seed,
        ),
        _ => {
            let target = data_target(name)?;
            let seeds = target.seeds(data_dir);
            if seeds.is_empty() {
                return Err(invalid(
                    "target",
                    name,
                    "this target needs a seed file: set HEDGE_DATA_DIR to the folder holding bsds500/",
                ));
            }
            fuzz(target, &seeds, budget, u64::MAX, seed)
        }
    })
}
