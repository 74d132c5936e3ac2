//! Watching a model while it trains: the four headline numbers of Table 1 on held-out sets,
//! recorded against training wall-clock (`monitor.jsonl`), and model choice on validation
//! classes carved from `train`.

use std::collections::BTreeMap;

use hedge_data::{verification_pairs, Corruption, ImageDataset, PairBatch};
use serde::{Deserialize, Serialize};
use tch::Device;

use crate::embed::{embed_dataset, EmbedOptions, EmbeddedSet};
use crate::evaluate::{knn_outcome, EvalOptions, GalleryReading, MatchEstimator, Scorer};
use crate::model::HibNet;
use crate::Result;

/// Seed of the deterministic `corrupt` test twin (shared by every command, so numbers agree).
pub const CORRUPT_SEED: u64 = 20190101;
/// Seed of the fixed verification pair set.
pub const PAIR_SEED: u64 = 1;

/// Verification AP (clean pairs, corrupt pairs) and majority KNN accuracy (clean probes
/// against the clean gallery, and against the corrupt gallery), from one Monte-Carlo repeat:
/// the four rows of Table 1, cheap enough to compute every few minutes of training.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuickEval {
    pub ap_clean: f64,
    pub ap_corrupt: f64,
    pub knn_clean: f64,
    pub knn_corrupt: f64,
}

impl QuickEval {
    /// The mean of the four numbers: the score model choice maximises.
    pub fn score(&self) -> f64 {
        (self.ap_clean + self.ap_corrupt + self.knn_clean + self.knn_corrupt) / 4.0
    }
}

/// A held-out set to watch: images, and its fixed verification pairs.
pub struct WatchSet {
    pub name: String,
    pub data: ImageDataset,
    pub pairs: PairBatch,
}

impl WatchSet {
    /// A watch set with `pairs_per_kind` matching and as many non-matching pairs (the paper's
    /// 5,000 + 5,000 on a test split).
    ///
    /// # Errors
    /// A set with a single class or too few images to draw the pairs from.
    pub fn new(name: &str, data: ImageDataset, pairs_per_kind: usize) -> Result<Self> {
        warn_small_classes(name, &data, KNN_MIN_PER_CLASS);
        let pairs = verification_pairs(&data.labels, pairs_per_kind, pairs_per_kind, PAIR_SEED)?;
        Ok(WatchSet { name: name.to_string(), data, pairs })
    }

    /// The clean and corrupt twins of the set, embedded by `net` (means and variances only).
    pub fn embed(&self, net: &HibNet, device: Device) -> Result<(EmbeddedSet, EmbeddedSet)> {
        embed_twins(net, &self.data, device)
    }

    /// The four numbers of [`QuickEval`], Monte Carlo with K = 8 from seed 0.
    pub fn evaluate(&self, net: &HibNet, device: Device, stochastic: bool) -> Result<QuickEval> {
        let (clean, corrupt) = self.embed(net, device)?;
        quick_eval(net, &clean, &corrupt, &self.pairs, stochastic)
    }
}

/// The clean and corrupt twins of a dataset, embedded (η from one sample: not used here).
pub fn embed_twins(net: &HibNet, data: &ImageDataset, device: Device) -> Result<(EmbeddedSet, EmbeddedSet)> {
    let options = EmbedOptions { samples: 1, ..Default::default() };
    let clean = embed_dataset(net, data, &Corruption::Clean, device, options)?;
    let corrupt = embed_dataset(net, data, &Corruption::Corrupt { seed: CORRUPT_SEED }, device, options)?;
    Ok((clean, corrupt))
}

/// [`QuickEval`] of embedded twins.
pub fn quick_eval(
    net: &HibNet,
    clean: &EmbeddedSet,
    corrupt: &EmbeddedSet,
    pairs: &PairBatch,
    stochastic: bool,
) -> Result<QuickEval> {
    let _generator = crate::seeded_generator(0);
    let matcher = net.matcher.to_cpu();
    let options = EvalOptions::default();
    let scorer = Scorer { matcher: &matcher, estimator: MatchEstimator::MonteCarlo { samples: 8 }, stochastic };
    let ap = |set: &EmbeddedSet| -> Result<f64> {
        let scores = scorer.pair_scores(set, pairs)?;
        Ok(hedge_eval::average_precision(&scores, &pairs.is_match)?)
    };
    Ok(QuickEval {
        ap_clean: ap(clean)?,
        ap_corrupt: ap(corrupt)?,
        knn_clean: knn_outcome(&scorer, clean, clean, &options, GalleryReading::LeaveOneOut)?.majority_accuracy(),
        knn_corrupt: knn_outcome(&scorer, corrupt, clean, &options, GalleryReading::LeaveOneOut)?.majority_accuracy(),
    })
}

/// One line of `monitor.jsonl`: the quick numbers of every watched set at a training step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorRecord {
    pub step: usize,
    /// Training wall-clock so far (evaluation excluded).
    pub train_seconds: f64,
    /// Whether these are the averaged (EMA) weights.
    pub ema: bool,
    pub sets: BTreeMap<String, QuickEval>,
    /// Seconds this evaluation took.
    pub eval_seconds: f64,
}

impl MonitorRecord {
    /// The watched sets' four numbers on one line, for logs: `test: AP 0.950/0.737 KNN 0.291/0.087; …`.
    pub fn sets_line(&self) -> String {
        let sets: Vec<String> = self
            .sets
            .iter()
            .map(|(name, q)| {
                format!("{name}: AP {:.3}/{:.3} KNN {:.3}/{:.3}", q.ap_clean, q.ap_corrupt, q.knn_clean, q.knn_corrupt)
            })
            .collect();
        sets.join("; ")
    }
}

/// One of the four numbers of [`QuickEval`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuickMetric {
    ApClean,
    ApCorrupt,
    KnnClean,
    KnnCorrupt,
}

impl QuickMetric {
    pub const ALL: [QuickMetric; 4] =
        [QuickMetric::ApClean, QuickMetric::ApCorrupt, QuickMetric::KnnClean, QuickMetric::KnnCorrupt];

    /// From its command-line name: `ap-clean`, `ap-corrupt`, `knn-clean` or `knn-corrupt`.
    pub fn parse(name: &str) -> crate::Result<Self> {
        match name {
            "ap-clean" => Ok(QuickMetric::ApClean),
            "ap-corrupt" => Ok(QuickMetric::ApCorrupt),
            "knn-clean" => Ok(QuickMetric::KnnClean),
            "knn-corrupt" => Ok(QuickMetric::KnnCorrupt),
            other => Err(crate::EmbedError::invalid(
                "metric",
                format!("'{other}'"),
                "use ap-clean, ap-corrupt, knn-clean or knn-corrupt",
            )),
        }
    }

    pub fn of(self, q: &QuickEval) -> f64 {
        match self {
            QuickMetric::ApClean => q.ap_clean,
            QuickMetric::ApCorrupt => q.ap_corrupt,
            QuickMetric::KnnClean => q.knn_clean,
            QuickMetric::KnnCorrupt => q.knn_corrupt,
        }
    }

    /// As the paper's tables name the row.
    pub fn label(self) -> &'static str {
        match self {
            QuickMetric::ApClean => "verification AP, clean",
            QuickMetric::ApCorrupt => "verification AP, corrupt",
            QuickMetric::KnnClean => "KNN accuracy, clean",
            QuickMetric::KnnCorrupt => "KNN accuracy, corrupt",
        }
    }
}

/// Stop training once a watched set reaches a value (e.g. the paper's AP): what the recipe
/// benchmark measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityTarget {
    pub set: String,
    pub metric: QuickMetric,
    pub value: f64,
}

impl QualityTarget {
    pub fn reached(&self, record: &MonitorRecord) -> bool {
        record.sets.get(&self.set).is_some_and(|q| self.metric.of(q) >= self.value)
    }
}

/// When a run first reached a value, or the best it reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reached {
    /// Training wall-clock (seconds) of the first record at or above the target, if any.
    pub reached_at_seconds: Option<f64>,
    pub reached_at_step: Option<usize>,
    /// The best value over the records, and when.
    pub best: f64,
    pub best_at_seconds: f64,
    pub best_at_step: usize,
}

/// Scans a run's monitor records for `metric` of set `set` against `target`.
/// `None` when no record has the set.
pub fn first_reaching(records: &[MonitorRecord], set: &str, metric: QuickMetric, target: f64) -> Option<Reached> {
    let points: Vec<(usize, f64, f64)> =
        records.iter().filter_map(|r| Some((r.step, r.train_seconds, metric.of(r.sets.get(set)?)))).collect();
    let best = points.iter().copied().max_by(|a, b| a.2.total_cmp(&b.2))?;
    let reached = points.iter().find(|p| p.2 >= target);
    Some(Reached {
        reached_at_seconds: reached.map(|p| p.1),
        reached_at_step: reached.map(|p| p.0),
        best: best.2,
        best_at_seconds: best.1,
        best_at_step: best.0,
    })
}

/// Validation classes: `count` classes of `data` chosen by `seed` (a partial Fisher–Yates
/// shuffle of the sorted class list, so the choice depends on nothing else), sorted.
///
/// # Errors
/// [`hedge_run::RunError::InvalidConfig`] when fewer than two classes would remain for training.
pub fn validation_classes(data: &ImageDataset, count: usize, seed: u64) -> Result<Vec<u32>> {
    use rand::seq::SliceRandom;
    use rand_chacha::rand_core::SeedableRng;
    let mut classes = data.classes();
    if count + 2 > classes.len() {
        return Err(crate::EmbedError::invalid(
            "validation_classes",
            format!("{count} of {} classes", classes.len()),
            "leave at least 2 for training",
        ));
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    classes.shuffle(&mut rng);
    let mut chosen = classes[..count].to_vec();
    chosen.sort_unstable();
    Ok(chosen)
}

/// Splits a training set into (training part, validation part): the validation part holds
/// every image of the `held_out` classes, at most `per_class` of each (the first ones, in table
/// order), so a validation set has the size of a test split.
pub fn split_off_classes(data: &ImageDataset, held_out: &[u32], per_class: usize) -> (ImageDataset, ImageDataset) {
    let mut keep = Vec::new();
    let mut val = Vec::new();
    let mut taken: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, label) in data.labels.iter().enumerate() {
        if held_out.binary_search(label).is_ok() {
            let n = taken.entry(*label).or_default();
            if *n < per_class {
                val.push(i);
                *n += 1;
            }
        } else {
            keep.push(i);
        }
    }
    (data.subset(&keep), data.subset(&val))
}

/// Splits a training set into (training part, validation part) by image: of every class, a
/// `fraction` of its images (rounded, at least one, and never all but one), drawn with `seed`, are
/// validation images. The model trains on the same classes and is chosen on images it never saw
/// (the instance protocol's model choice; test images are never used).
///
/// # Errors
/// A class with fewer than 3 images (it could not keep 2 for training and give one).
pub fn split_off_images(data: &ImageDataset, fraction: f64, seed: u64) -> Result<(ImageDataset, ImageDataset)> {
    use rand::seq::SliceRandom;
    use rand_chacha::rand_core::SeedableRng;
    let mut by_class: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, &label) in data.labels.iter().enumerate() {
        by_class.entry(label).or_default().push(i);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut val = Vec::new();
    for (class, mut images) in by_class {
        if images.len() < 3 {
            return Err(crate::EmbedError::invalid(
                "validation_fraction",
                fraction,
                format!("class {class} has {} training images; holding images out needs at least 3", images.len()),
            ));
        }
        let take = ((images.len() as f64 * fraction).round() as usize).clamp(1, images.len() - 2);
        images.shuffle(&mut rng);
        val.extend_from_slice(&images[..take]);
    }
    val.sort_unstable();
    let keep: Vec<usize> = (0..data.len()).filter(|i| val.binary_search(i).is_err()).collect();
    Ok((data.subset(&keep), data.subset(&val)))
}

/// Images a class needs in an evaluated set for the K = 5 majority rule to be able to identify
/// it (3 same-class neighbours besides the probe itself).
pub const KNN_MIN_PER_CLASS: usize = 4;

/// Logs the classes of `data` too small for KNN to ever identify (their KNN accuracy is 0 by
/// construction; a user's small test part, never N-digit MNIST's).
pub fn warn_small_classes(name: &str, data: &ImageDataset, min: usize) {
    let small = data.classes_smaller_than(min);
    if !small.is_empty() {
        tracing::warn!(
            "{name}: {} of {} classes have fewer than {min} images, so 5-nearest-neighbour majority votes can never \
             identify them (their KNN accuracy is 0); give each class more images in this part",
            small.len(),
            data.classes().len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instance protocol's model choice: 5 % of every class's training images held out,
    /// disjoint from what the model trains on, the same images for the same seed.
    #[test]
    fn validation_images_are_a_seeded_share_of_every_class() {
        let data = crate::HibData::new(hedge_data::DataRoot::from_env())
            .split(2, hedge_data::NDigitProtocol::Instance, hedge_data::NDigitSplit::Train)
            .expect("set HEDGE_DATA_DIR to the shared data folder");
        let (train, val) = split_off_images(&data, 0.05, 0).unwrap();
        assert_eq!((train.len(), val.len()), (95_000, 5_000));
        assert_eq!(val.classes(), data.classes());
        assert!(val.classes_smaller_than(50).is_empty() && train.classes_smaller_than(950).is_empty());
        // Every image is in exactly one part: its digit indices are in one or the other.
        let mut parts: Vec<&[u32]> = train.parts.chunks(2).chain(val.parts.chunks(2)).collect();
        parts.sort_unstable();
        let mut all: Vec<&[u32]> = data.parts.chunks(2).collect();
        all.sort_unstable();
        assert_eq!(parts, all);
        let (_, again) = split_off_images(&data, 0.05, 0).unwrap();
        assert_eq!(again.parts, val.parts);
        let (_, other) = split_off_images(&data, 0.05, 1).unwrap();
        assert_ne!(other.parts, val.parts);
        // A class too small to give an image and keep two is refused, naming the setting.
        let tiny = data.subset(&[0, 1]);
        let e = split_off_images(&tiny, 0.05, 0).unwrap_err().to_string();
        assert!(e.contains("validation_fraction") && e.contains("at least 3"), "{e}");
    }

    /// Plans of schema 1, written before several stop targets existed, hold one `target` or
    /// null; both read as the list, and write back as schema 2.
    #[test]
    fn old_plans_with_one_target_or_none_still_read() {
        let one: crate::TrainPlan = serde_json::from_str(
            r#"{"budget_minutes": 45.0, "watch_every": 500, "watch_splits": ["test_unseen"], "watch_pairs": 5000,
                "keep_every": 0, "target": {"set": "test_unseen", "metric": "ap_clean", "value": 0.989}}"#,
        )
        .unwrap();
        assert_eq!(
            one.targets,
            [QualityTarget { set: "test_unseen".into(), metric: QuickMetric::ApClean, value: 0.989 }]
        );
        let none: crate::TrainPlan = serde_json::from_str(
            r#"{"budget_minutes": null, "watch_every": 0, "watch_splits": [], "watch_pairs": 5000, "keep_every": 0,
                "target": null}"#,
        )
        .unwrap();
        assert!(none.targets.is_empty());
        let back: crate::TrainPlan = serde_json::from_str(&serde_json::to_string(&one).unwrap()).unwrap();
        assert_eq!(back, one);
    }

    fn record(step: usize, seconds: f64, ap: f64) -> MonitorRecord {
        let q = QuickEval { ap_clean: ap, ap_corrupt: 0.0, knn_clean: 0.0, knn_corrupt: 0.0 };
        MonitorRecord {
            step,
            train_seconds: seconds,
            ema: false,
            sets: [("test_seen".to_string(), q)].into_iter().collect(),
            eval_seconds: 1.0,
        }
    }

    #[test]
    fn first_reaching_finds_the_first_crossing_and_the_best() {
        let rs = [record(100, 10.0, 0.5), record(200, 20.0, 0.9), record(300, 30.0, 0.95), record(400, 40.0, 0.93)];
        let r = first_reaching(&rs, "test_seen", QuickMetric::ApClean, 0.92).unwrap();
        assert_eq!((r.reached_at_step, r.reached_at_seconds), (Some(300), Some(30.0)));
        assert_eq!((r.best, r.best_at_step), (0.95, 300));
        let never = first_reaching(&rs, "test_seen", QuickMetric::ApClean, 0.99).unwrap();
        assert_eq!(never.reached_at_seconds, None);
        assert!(first_reaching(&rs, "validation", QuickMetric::ApClean, 0.5).is_none());
        let target = QualityTarget { set: "test_seen".into(), metric: QuickMetric::ApClean, value: 0.9 };
        assert!(!target.reached(&rs[0]) && target.reached(&rs[1]));
    }

    #[test]
    fn quick_eval_score_is_the_mean() {
        let q = QuickEval { ap_clean: 1.0, ap_corrupt: 0.5, knn_clean: 0.25, knn_corrupt: 0.25 };
        assert_eq!(q.score(), 0.5);
    }
}
