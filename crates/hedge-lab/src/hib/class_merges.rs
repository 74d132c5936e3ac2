//! Where a table's KNN is lost: the classes a trained model lays on top of each other, by the
//! digits they differ in (`results/hib/class-merges.json`, written by
//! `scripts/hib-class-merges.py`; issue 79).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::paper::MODELS;
use crate::report::format::{fixed, thousands};
use crate::report::fragment::{missing, Results};
use crate::Result;

/// The group of images whose number holds no digit of a merged pair.
const NONE_OF_THEM: &str = "none of them";

/// The file the script writes, relative to the results root.
pub(super) const CLASS_MERGES: &str = "results/hib/class-merges.json";

/// `class-merges.json`: one reading per run, on one split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassMerges {
    /// The split embedded (`test`).
    pub split: String,
    /// `clean`: the images as they are.
    pub variant: String,
    /// The weights file of each run embedded (`model_best.safetensors`, the validation's choice).
    pub weights: String,
    /// The command that wrote the file.
    pub command: String,
    pub runs: Vec<RunMerges>,
}

/// One run's reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMerges {
    /// The run folder, relative to the repository (`results/hib/n2-d2/runs/point-seed1`).
    pub run: String,
    /// `point`, `mog1` or `mog2`.
    pub model: String,
    pub seed: u64,
    /// The step of the weights embedded.
    pub step: u64,
    /// 1-NN accuracy by the Euclidean distance between embedding means, each image left out of
    /// its own gallery: a diagnostic, not Table 1's KNN.
    pub nn1_leave_one_out: f64,
    /// Classes whose images are identified right by that 1-NN less than half the time.
    pub classes_under_half: u64,
    pub classes: u64,
    /// Pairs of classes whose centroids lie closer than a class's mean distance to its centroid.
    pub merged_pairs: Vec<MergedPair>,
    /// The merged pairs counted by the two digits they differ in (`3-8`), or `several digits`.
    pub merged_by_digits: BTreeMap<String, u64>,
    /// The same 1-NN on groups of images fixed across the file's runs: per digit pair merged in
    /// any run (`3-8`), the images whose number holds either digit; `none of them`, the images
    /// whose number holds no digit of those pairs.
    pub nn1_by_digit_group: BTreeMap<String, f64>,
    /// Each class's centroid (the first two embedding dimensions), by its number.
    pub centroids: BTreeMap<String, [f64; 2]>,
}

/// Two classes laid on top of each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedPair {
    /// The two class indices.
    pub classes: [u64; 2],
    /// The numbers they stand for, zero-padded to N digits.
    pub numbers: [String; 2],
    /// The positions (0: the leftmost digit) where the numbers differ.
    pub positions: Vec<usize>,
    /// The two digits, where the numbers differ in one position (`3-8`).
    pub digits: Option<String>,
}

/// The table folder of a run (`n2-d2` of `results/hib/n2-d2/runs/point-seed1`).
fn table_of(run: &str) -> &str {
    run.strip_prefix("results/hib/").and_then(|r| r.split("/runs/").next()).unwrap_or(run)
}

/// How the tables name a model (`MoG-1` for `mog1`).
fn model_name(model: &str) -> &str {
    MODELS.iter().find(|(key, _)| *key == model).map_or(model, |(_, name)| name)
}

/// The `class-merges` fragment: per run, its 1-NN reading, the classes it gets wrong more often
/// than right and the class pairs it merged, by digits; then the digit pairs over every run.
pub(super) fn class_merges(results: &Results) -> Result<String> {
    if !results.exists(CLASS_MERGES) {
        return Ok("Not measured yet (`.venv/bin/python scripts/hib-class-merges.py`).".into());
    }
    let merges: ClassMerges = results.json(CLASS_MERGES)?;
    // The script reads every run on the same groups; the header names them, `none of them` last.
    let mut groups: Vec<&String> =
        merges.runs.first().map(|r| r.nn1_by_digit_group.keys().collect()).unwrap_or_default();
    groups.sort_by_key(|g| (g.as_str() == NONE_OF_THEM, g.as_str()));
    let group_names: Vec<String> = groups
        .iter()
        .map(|g| {
            if g.as_str() == NONE_OF_THEM {
                "neither".to_string()
            } else {
                format!("with a {}", g.replace('-', " or "))
            }
        })
        .collect();
    let mut out = vec![
        format!(
            "| table | model | seed | steps | 1-NN, leave one out: all{} | classes under half right | merged class pairs | \
             the digits they differ in |",
            group_names.iter().map(|g| format!(" / {g}")).collect::<String>()
        ),
        "|---|---|---|---|---|---|---|---|".into(),
    ];
    let mut digit_pairs = BTreeSet::new();
    let mut several = 0;
    for r in &merges.runs {
        let by_digits = if r.merged_by_digits.is_empty() {
            "—".to_string()
        } else {
            r.merged_by_digits.iter().map(|(d, n)| format!("{d} ({n})")).collect::<Vec<_>>().join(", ")
        };
        for pair in &r.merged_pairs {
            match &pair.digits {
                Some(d) => {
                    digit_pairs.insert(d.clone());
                }
                None => several += 1,
            }
        }
        let mut nn1 = vec![fixed(r.nn1_leave_one_out, 3)];
        for g in &groups {
            let value = r.nn1_by_digit_group.get(*g).ok_or_else(|| {
                missing(CLASS_MERGES, format!("{}: no 1-NN on the group `{g}` the first run has", r.run))
            })?;
            nn1.push(fixed(*value, 3));
        }
        out.push(format!(
            "| `{}/` | {} | {} | {} | {} | {} of {} | {} | {} |",
            table_of(&r.run),
            model_name(&r.model),
            r.seed,
            thousands(r.step),
            nn1.join(" / "),
            r.classes_under_half,
            r.classes,
            r.merged_pairs.len(),
            by_digits
        ));
    }
    let merged: usize = merges.runs.iter().map(|r| r.merged_pairs.len()).sum();
    out.push(String::new());
    out.push(format!(
        "The {} split, {} images, embedded with each run's `{}` (`{}`, `class-merges.json`). A class is merged with its \
         nearest other class when their centroids lie closer than the class's mean distance to its own centroid; a \
         Gaussian mixture counts as its weighted mean. The 1-NN groups hold the images whose number has either digit \
         of a pair merged in some run, or neither: the same images for every run. Over {} runs, {} merged pairs: {}.",
        merges.split,
        merges.variant,
        merges.weights,
        merges.command,
        merges.runs.len(),
        merged,
        if merged == 0 {
            "none".to_string()
        } else if several == 0 {
            format!(
                "every one differs in a single digit, and that digit pair is always one of {}",
                digit_pairs.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
            )
        } else {
            format!(
                "{several} {} in more than one digit, the others in one of {}",
                if several == 1 { "differs" } else { "differ" },
                digit_pairs.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
            )
        }
    ));
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_names_its_table_folder() {
        assert_eq!(table_of("results/hib/n2-d2/runs/point-seed1"), "n2-d2");
        assert_eq!(table_of("results/hib/n2-d2-wd1e-1/runs/mog2-seed0"), "n2-d2-wd1e-1");
    }

    fn pair(a: u64, b: u64, digits: Option<&str>) -> MergedPair {
        let (na, nb) = (format!("{a:02}"), format!("{b:02}"));
        let positions = (0..2).filter(|&k| na.as_bytes()[k] != nb.as_bytes()[k]).collect();
        MergedPair { classes: [a, b], numbers: [na, nb], positions, digits: digits.map(str::to_string) }
    }

    fn run(model: &str, seed: u64, pairs: Vec<MergedPair>) -> RunMerges {
        let mut by = BTreeMap::new();
        for p in &pairs {
            *by.entry(p.digits.clone().unwrap_or_else(|| "several digits".into())).or_insert(0) += 1;
        }
        RunMerges {
            run: format!("results/hib/n2-d2/runs/{model}-seed{seed}"),
            model: model.into(),
            seed,
            step: 11_589,
            nn1_leave_one_out: 0.6875,
            classes_under_half: 24,
            classes: 100,
            merged_pairs: pairs,
            merged_by_digits: by,
            nn1_by_digit_group: BTreeMap::from([
                ("3-8".to_string(), 0.441),
                ("4-9".to_string(), 0.709),
                (NONE_OF_THEM.to_string(), 0.862),
            ]),
            centroids: BTreeMap::from([("03".to_string(), [0.5, -1.0]), ("08".to_string(), [0.5, -0.9])]),
        }
    }

    /// The file reads back as written, each run is a row under the tables' model names, and the
    /// closing sentence counts the pairs and names the digit pairs, or says which differ in more.
    #[test]
    fn the_fragment_counts_merged_pairs_by_their_digits() {
        let dir = tempfile::tempdir().unwrap();
        let write = |m: &ClassMerges| {
            let path = dir.path().join(CLASS_MERGES);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, serde_json::to_string(m).unwrap()).unwrap();
        };
        let results = Results::new(dir.path());
        assert!(class_merges(&results).unwrap().starts_with("Not measured yet"));
        let mut m = ClassMerges {
            split: "test".into(),
            variant: "clean".into(),
            weights: "model_best.safetensors".into(),
            command: "scripts/hib-class-merges.py".into(),
            runs: vec![
                run("point", 1, vec![pair(3, 8, Some("3-8")), pair(30, 80, Some("3-8"))]),
                run("mog2", 0, vec![pair(4, 9, Some("4-9"))]),
            ],
        };
        write(&m);
        let text = class_merges(&results).unwrap();
        assert!(
            text.contains(
                "| `n2-d2/` | point | 1 | 11,589 | 0.688 / 0.441 / 0.709 / 0.862 | 24 of 100 | 2 | 3-8 (2) |"
            ),
            "{text}"
        );
        assert!(text.contains("| `n2-d2/` | MoG-2 | 0 |"), "{text}");
        assert!(text.contains("all / with a 3 or 8 / with a 4 or 9 / neither |"), "{text}");
        assert!(
            text.contains("Over 2 runs, 3 merged pairs: every one differs in a single digit, and that digit pair is always one of `3-8`, `4-9`."),
            "{text}"
        );
        m.runs[1].merged_pairs.push(pair(38, 83, None));
        write(&m);
        let text = class_merges(&results).unwrap();
        assert!(
            text.contains("4 merged pairs: 1 differs in more than one digit, the others in one of `3-8`, `4-9`."),
            "{text}"
        );
    }
}
