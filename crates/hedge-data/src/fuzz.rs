//! Fuzz targets for every parser that reads a user's file, and a small mutation fuzzer that
//! drives them on stable Rust (in the test suite for a bounded time, and in `hedge bench fuzz`
//! for longer campaigns).
//!
//! A target takes arbitrary bytes and must return (with `Ok` or a clear error), never panic,
//! never abort on an allocation a header asked for. The fuzzer starts from valid seed files
//! and applies stacked structure-blind mutations (bit flips, interesting integers written over
//! header fields in both byte orders, truncations, deletions, duplications, and tokens such as
//! `nan`, `inf` or `99999999999999999999` for the text formats). It is not coverage-guided:
//! inputs that parse are kept as further seeds, so mutations can stack past a magic check.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::npy::{NpyArray, NpyData};

/// The parsers hedge exposes to user files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// MNIST IDX, raw or gzipped (images and labels magic).
    Idx,
    /// One NumPy `.npy` array.
    Npy,
    /// A NumPy `.npz` archive (N-digit MNIST's tables).
    Npz,
    /// A UCI set's `data.txt` and index files.
    Uci,
    /// Adult's CSV rows.
    Adult,
    /// A BSDS500 background photograph (JPEG).
    Jpeg,
    /// A user's CSV table (`--data FILE.csv`), read and turned into a regression and a fairness
    /// problem.
    Csv,
    /// A user's PNG image (`--data FOLDER`).
    Png,
    /// A user's image `.npz` (`images` and `labels`; `--data FILE.npz`, `--probe`).
    ImageNpz,
}

impl Target {
    pub const ALL: [Target; 9] = [
        Target::Idx,
        Target::Npy,
        Target::Npz,
        Target::Uci,
        Target::Adult,
        Target::Jpeg,
        Target::Csv,
        Target::Png,
        Target::ImageNpz,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Target::Idx => "idx",
            Target::Npy => "npy",
            Target::Npz => "npz",
            Target::Uci => "uci",
            Target::Adult => "adult",
            Target::Jpeg => "jpeg",
            Target::Csv => "csv",
            Target::Png => "png",
            Target::ImageNpz => "image-npz",
        }
    }

    /// Whether the format is text (the mutator then also splices text tokens).
    pub fn is_text(self) -> bool {
        matches!(self, Target::Uci | Target::Adult | Target::Csv)
    }

    /// Runs the parser on `bytes`; `true` when it accepted them. Panics are the bug a fuzzer
    /// looks for, so they propagate.
    pub fn run(self, bytes: &[u8]) -> bool {
        let path = Path::new("fuzz-input");
        match self {
            Target::Idx => [crate::idx::IMAGES_MAGIC, crate::idx::LABELS_MAGIC]
                .iter()
                .any(|&magic| crate::idx::parse_idx_file(bytes.to_vec(), path, magic).is_ok()),
            Target::Npy => crate::npy::parse_npy(bytes).is_ok(),
            Target::Npz => crate::npy::parse_npz(bytes.to_vec(), path).is_ok(),
            Target::Uci => {
                let text = String::from_utf8_lossy(bytes);
                let matrix = crate::uci::parse_matrix(&text, path).is_ok();
                crate::uci::parse_indices(&text, path).is_ok() || matrix
            }
            Target::Adult => crate::adult::parse_rows(bytes.to_vec(), path).is_ok(),
            Target::Jpeg => crate::context::decode_photo_bytes(bytes, path).is_ok(),
            Target::Csv => {
                let spec = crate::TableSpec::new("y").with_protected("g");
                crate::Table::parse_csv(bytes, path, &spec).is_ok_and(|t| {
                    // Whether these refuse or not, they must not panic on what the reader accepted.
                    let regression = t.regression(3, 0.25).is_ok();
                    t.fairness(0.3, 0).is_ok() || regression
                })
            }
            Target::Png => crate::images::decode_png(bytes, path).is_ok(),
            Target::ImageNpz => crate::ImageSet::parse_npz(bytes.to_vec(), path).is_ok(),
        }
    }

    /// Small valid inputs to mutate. The JPEG target needs a real photograph: the first of
    /// `<data_dir>/bsds500/images/train` when `data_dir` is given (none otherwise).
    pub fn seeds(self, data_dir: Option<&Path>) -> Vec<Vec<u8>> {
        match self {
            Target::Idx => {
                let idx = |magic: u32, dims: &[u32]| {
                    let mut b = magic.to_be_bytes().to_vec();
                    dims.iter().for_each(|d| b.extend_from_slice(&d.to_be_bytes()));
                    let n: u32 = dims.iter().product();
                    b.extend((0..n).map(|i| (i * 37 % 256) as u8));
                    b
                };
                let images = idx(crate::idx::IMAGES_MAGIC, &[2, 28, 28]);
                let labels = idx(crate::idx::LABELS_MAGIC, &[5]);
                let mut gz = Vec::new();
                {
                    use std::io::Write;
                    let mut e = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
                    e.write_all(&labels).expect("in memory");
                    e.finish().expect("in memory");
                }
                vec![images, labels, gz]
            }
            Target::Npy => sample_arrays().iter().map(|(_, a)| a.to_npy_bytes()).collect(),
            Target::Npz => vec![crate::npy::npz_bytes(&sample_arrays()).expect("in memory")],
            Target::Uci => vec![
                b"1 2 3.5\n4 5 6\n7 8 9e-3\n".to_vec(),
                b"0\n2\n17\n".to_vec(),
                b"-1.25\t3\t0\n2 2 2\n".to_vec(),
            ],
            Target::Adult => vec![
                b"39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n\
                  50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Female, 0, 0, 13, ?, >50K.\n"
                    .to_vec(),
            ],
            Target::Jpeg => data_dir
                .and_then(|dir| {
                    let folder = dir.join("bsds500/images/train");
                    let mut paths: Vec<_> = std::fs::read_dir(folder).ok()?.flatten().map(|e| e.path()).collect();
                    paths.retain(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("jpg")));
                    paths.sort();
                    std::fs::read(paths.first()?).ok()
                })
                .into_iter()
                .collect(),
            Target::Csv => vec![
                b"x,colour,g,y\n1.5,red,F,0\n2,blue,M,1\n-3,red,F,1\n4e2,blue,M,0\n0.5,red,M,1\n".to_vec(),
                b"\xEF\xBB\xBFa,\"quoted, cell\",g,y\n1,x,0,2.5\n2,z,1,3.5\n3,x,0,1\n4,z,1,7\n".to_vec(),
            ],
            Target::Png => {
                let grey: Vec<u8> = (0..6 * 5).map(|i| (i * 9) as u8).collect();
                let rgb: Vec<u8> = (0..4 * 4 * 3).map(|i| (i * 5) as u8).collect();
                vec![
                    crate::images::png_bytes(6, 5, 1, &grey).expect("in memory"),
                    crate::images::png_bytes(4, 4, 3, &rgb).expect("in memory"),
                ]
            }
            Target::ImageNpz => {
                let images = NpyArray::new(vec![4, 4, 4], NpyData::U8((0..64).map(|i| (i * 4) as u8).collect()));
                let labels = NpyArray::new(vec![4], NpyData::I64(vec![0, 0, 1, 1]));
                vec![crate::npy::npz_bytes(&[("images", images), ("labels", labels)]).expect("in memory")]
            }
        }
    }
}

fn sample_arrays() -> Vec<(&'static str, NpyArray)> {
    vec![
        ("image_ids", NpyArray::new(vec![2, 3, 2], NpyData::I64((0..12).collect()))),
        ("chosen_numbers", NpyArray::new(vec![2], NpyData::I64(vec![12, 97]))),
        ("mean", NpyArray::new(vec![3], NpyData::F32(vec![0.5, -1.0, 2.0]))),
        ("pixels", NpyArray::new(vec![2, 2], NpyData::U8(vec![0, 255, 7, 9]))),
    ]
}

/// What a fuzzing campaign did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignReport {
    pub target: String,
    pub executions: u64,
    pub seconds: f64,
    /// Inputs the parser accepted (valid files among the mutants).
    pub accepted: u64,
    /// Inputs that made the parser panic (empty unless there is a bug).
    #[serde(skip)]
    pub panics: Vec<Vec<u8>>,
    pub panic_count: usize,
}

impl CampaignReport {
    /// The header of [`CampaignReport::markdown_row`]'s table.
    pub const MARKDOWN_HEADER: &'static str =
        "| target | executions | seconds | executions/s | accepted | panics |\n|---|---|---|---|---|---|";

    pub fn executions_per_second(&self) -> f64 {
        self.executions as f64 / self.seconds.max(1e-9)
    }

    /// The report as a row of a Markdown table.
    pub fn markdown_row(&self) -> String {
        format!(
            "| {} | {} | {:.0} | {:.0} | {} | {} |",
            self.target,
            self.executions,
            self.seconds,
            self.executions_per_second(),
            self.accepted,
            self.panic_count
        )
    }
}

/// Integers that break size arithmetic, written over header fields.
const INTERESTING: [u64; 12] =
    [0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 61, 1 << 62, u64::MAX];
/// Text that numeric parsers get wrong.
const TOKENS: [&str; 16] = [
    "nan",
    "inf",
    "-inf",
    "NaN",
    "-1",
    "1e308",
    "1e-400",
    "99999999999999999999",
    "?",
    ",",
    "\n",
    " ",
    "\t",
    "",
    "0x10",
    "\u{feff}",
];

/// Mutates `input` in place with 1–4 stacked mutations.
fn mutate(input: &mut Vec<u8>, text: bool, rng: &mut ChaCha8Rng) {
    for _ in 0..rng.random_range(1..=4) {
        let len = input.len();
        match rng.random_range(0..if text { 9 } else { 7 }) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                input[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                input[i] = INTERESTING[rng.random_range(0..5)] as u8;
            }
            2 => {
                let value = INTERESTING[rng.random_range(0..INTERESTING.len())];
                let width = if rng.random_bool(0.5) { 4 } else { 8 };
                let bytes: Vec<u8> = match (width, rng.random_bool(0.5)) {
                    (4, true) => (value as u32).to_be_bytes().to_vec(),
                    (4, false) => (value as u32).to_le_bytes().to_vec(),
                    (_, true) => value.to_be_bytes().to_vec(),
                    (_, false) => value.to_le_bytes().to_vec(),
                };
                // Headers live near the start: bias the position there.
                let limit = len.min(if rng.random_bool(0.7) { 64 } else { usize::MAX });
                if limit >= width {
                    let at = rng.random_range(0..=limit - width);
                    input[at..at + width].copy_from_slice(&bytes);
                }
            }
            3 if len > 0 => input.truncate(rng.random_range(0..len)),
            4 if len > 1 => {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a..=len.min(a + 64));
                input.drain(a..b);
            }
            5 if len > 0 && len < 1 << 20 => {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a..=len.min(a + 64));
                let chunk = input[a..b].to_vec();
                let at = rng.random_range(0..=len);
                input.splice(at..at, chunk);
            }
            6 => {
                let at = rng.random_range(0..=len);
                let n = rng.random_range(1..=8);
                let fresh: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                input.splice(at..at, fresh);
            }
            7 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                let at = rng.random_range(0..=len);
                input.splice(at..at, token.iter().copied());
            }
            8 if len > 0 => {
                // Replace one whitespace- or comma-separated cell with a token.
                let at = rng.random_range(0..len);
                let sep = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b',');
                let start = input[..at].iter().rposition(sep).map_or(0, |i| i + 1);
                let end = input[at..].iter().position(sep).map_or(len, |i| at + i);
                let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                input.splice(start..end, token.iter().copied());
            }
            _ => {}
        }
    }
}

/// Fuzzes `target` from `seeds` until `budget` has passed or `max_executions` inputs ran.
/// Deterministic in `seed` for a fixed number of executions.
pub fn fuzz(target: Target, seeds: &[Vec<u8>], budget: Duration, max_executions: u64, seed: u64) -> CampaignReport {
    fuzz_fn(target.name(), |b| target.run(b), target.is_text(), seeds, budget, max_executions, seed)
}

/// [`fuzz`] for any parser: `run` returns whether it accepted the bytes; `text` adds the text
/// mutations. Other crates fuzz their own parsers with it (`hedge-embed`'s TOML configs).
pub fn fuzz_fn(
    name: &str,
    run: impl Fn(&[u8]) -> bool,
    text: bool,
    seeds: &[Vec<u8>],
    budget: Duration,
    max_executions: u64,
    seed: u64,
) -> CampaignReport {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut corpus: Vec<Vec<u8>> = seeds.to_vec();
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let mut in_corpus: std::collections::HashSet<Vec<u8>> = corpus.iter().cloned().collect();
    let start = Instant::now();
    let (mut executions, mut accepted, mut panics) = (0u64, 0u64, Vec::new());
    while executions < max_executions && start.elapsed() < budget {
        let mut input = corpus[rng.random_range(0..corpus.len())].clone();
        mutate(&mut input, text, &mut rng);
        executions += 1;
        match catch_unwind(AssertUnwindSafe(|| run(&input))) {
            Ok(true) => {
                accepted += 1;
                // Valid mutants become seeds (bounded), so mutations stack past magic checks.
                if corpus.len() < 256 && input.len() < 1 << 20 && in_corpus.insert(input.clone()) {
                    corpus.push(input);
                }
            }
            Ok(false) => {}
            Err(_) => panics.push(input),
        }
    }
    CampaignReport {
        target: name.to_string(),
        executions,
        seconds: start.elapsed().as_secs_f64(),
        accepted,
        panic_count: panics.len(),
        panics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed is a valid input of its target (otherwise the fuzzer would start from
    /// rejected files and rarely get past a magic number).
    #[test]
    fn seeds_are_accepted() {
        let data_dir = crate::data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
        for target in Target::ALL {
            let seeds = target.seeds(Some(&data_dir));
            assert!(!seeds.is_empty(), "{} has no seeds", target.name());
            for seed in seeds {
                assert!(target.run(&seed), "a seed of {} is rejected", target.name());
            }
        }
    }

    /// The regressions issue 17 found, run through the targets: each is refused, none panics.
    #[test]
    fn known_hostile_inputs_are_refused_without_a_panic() {
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        let header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': (1, {}, 2), }}\n", 1u64 << 61);
        npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
        npy.extend_from_slice(header.as_bytes());
        assert!(!Target::Npy.run(&npy));
        let mut idx = crate::idx::IMAGES_MAGIC.to_be_bytes().to_vec();
        for d in [1u32 << 31, 1 << 31, 4] {
            idx.extend_from_slice(&d.to_be_bytes());
        }
        assert!(!Target::Idx.run(&idx));
        assert!(!Target::Uci.run(b"1 nan 3\n"));
        let adult = String::from_utf8(Target::Adult.seeds(None).remove(0)).unwrap().replace("2174", "inf");
        assert!(!Target::Adult.run(adult.as_bytes()));
    }

    /// The CI share of the campaign: each target for a few seconds, no panic. (`hedge bench
    /// fuzz` runs the same for as long as asked.)
    #[test]
    fn a_short_campaign_finds_no_panic() {
        let data_dir = crate::data_dir().expect("set HEDGE_DATA_DIR to the shared data folder");
        for target in Target::ALL {
            let seeds = target.seeds(Some(&data_dir));
            let report = fuzz(target, &seeds, Duration::from_secs(2), u64::MAX, 17);
            println!("fuzz {}", report.markdown_row());
            assert!(report.executions > 50, "{report:?}");
            assert_eq!(report.panic_count, 0, "{} panicked on {:?}", target.name(), report.panics.first());
        }
    }
}
