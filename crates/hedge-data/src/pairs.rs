//! Pair samplers for verification training and evaluation.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::{DataError, Result};

/// Pairs of dataset indices with their ground-truth match flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairBatch {
    pub left: Vec<usize>,
    pub right: Vec<usize>,
    pub is_match: Vec<bool>,
}

impl PairBatch {
    pub fn len(&self) -> usize {
        self.is_match.len()
    }

    pub fn is_empty(&self) -> bool {
        self.is_match.is_empty()
    }
}

/// The two-stream sampler of Section 2.3: half of every batch's pairs match, half do not,
/// however many classes there are.
///
/// Stream one draws an image uniformly from the whole set; stream two draws its partner from a
/// chosen class: the same class for a matching pair, any other class for a non-matching one.
/// The pairs are then shuffled.
#[derive(Debug, Clone)]
pub struct BalancedPairSampler {
    labels: Vec<u32>,
    by_class: BTreeMap<u32, Vec<usize>>,
    classes: Vec<u32>,
}

impl BalancedPairSampler {
    /// # Errors
    /// [`hedge_run::RunError::InvalidConfig`] when there are fewer than two classes or no class has
    /// two images (then no balanced batch exists).
    pub fn new(labels: &[u32]) -> Result<Self> {
        let mut by_class: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, &l) in labels.iter().enumerate() {
            by_class.entry(l).or_default().push(i);
        }
        if by_class.len() < 2 {
            return Err(DataError::invalid(
                "labels",
                format!("{} class(es)", by_class.len()),
                "non-matching pairs need at least two classes",
            ));
        }
        if by_class.values().any(|v| v.len() < 2) {
            let smallest = by_class.values().map(Vec::len).min().unwrap_or(0);
            return Err(DataError::invalid(
                "labels",
                format!("a class with {smallest} image(s)"),
                "every class needs at least two images to form matching pairs",
            ));
        }
        let classes = by_class.keys().copied().collect();
        Ok(BalancedPairSampler { labels: labels.to_vec(), by_class, classes })
    }

    /// `pairs / 2` matching pairs (rounded down) and the rest non-matching, shuffled.
    pub fn sample<R: Rng + ?Sized>(&self, pairs: usize, rng: &mut R) -> PairBatch {
        let matching = pairs / 2;
        let mut out: Vec<(usize, usize, bool)> = Vec::with_capacity(pairs);
        for k in 0..pairs {
            let first = rng.random_range(0..self.labels.len());
            let class = self.labels[first];
            let is_match = k < matching;
            let second = if is_match {
                let members = &self.by_class[&class];
                loop {
                    let j = members[rng.random_range(0..members.len())];
                    if j != first {
                        break j;
                    }
                }
            } else {
                let other = loop {
                    let c = self.classes[rng.random_range(0..self.classes.len())];
                    if c != class {
                        break c;
                    }
                };
                let members = &self.by_class[&other];
                members[rng.random_range(0..members.len())]
            };
            out.push((first, second, is_match));
        }
        out.shuffle(rng);
        PairBatch {
            left: out.iter().map(|p| p.0).collect(),
            right: out.iter().map(|p| p.1).collect(),
            is_match: out.iter().map(|p| p.2).collect(),
        }
    }
}

/// A grouped ("P x K") batch: the images to embed, and pairs given as positions in `images`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupedBatch {
    /// Dataset indices of the batch's images, group after group.
    pub images: Vec<usize>,
    /// Pairs of positions in `images` (not dataset indices).
    pub pairs: PairBatch,
}

/// Batches of `classes` classes with `per_class` distinct images each, scored on every
/// within-class pair plus as many random cross-class pairs (so still half matching).
///
/// The same images as an independent batch of `classes · per_class / 2` pairs yield
/// `classes · per_class · (per_class − 1)` pairs here: the embedding cost of a step is unchanged,
/// the number of scored pairs grows `per_class − 1` fold. A departure from the paper's
/// two-stream sampler, offered to study batch composition.
#[derive(Debug, Clone)]
pub struct GroupedPairSampler {
    by_class: Vec<Vec<usize>>,
    classes: usize,
    per_class: usize,
}

impl GroupedPairSampler {
    /// # Errors
    /// [`hedge_run::RunError::InvalidConfig`] when `classes < 2`, `per_class < 2`, the labels have fewer
    /// than `classes` classes, or a class has fewer than `per_class` images.
    pub fn new(labels: &[u32], classes: usize, per_class: usize) -> Result<Self> {
        let mut map: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, &l) in labels.iter().enumerate() {
            map.entry(l).or_default().push(i);
        }
        let group = format!("{classes}x{per_class}");
        let invalid = |what: String| Err(DataError::invalid("group", &group, what));
        if classes < 2 || per_class < 2 {
            return invalid(format!(
                "{classes} classes x {per_class} images; a grouped batch needs at least 2 classes of at least 2 images"
            ));
        }
        if map.len() < classes {
            return invalid(format!("{classes} classes per batch but the labels have only {}", map.len()));
        }
        if let Some((label, members)) = map.iter().find(|(_, m)| m.len() < per_class) {
            return invalid(format!(
                "class {label} has {} images, fewer than the {per_class} per class a batch takes",
                members.len()
            ));
        }
        Ok(GroupedPairSampler { by_class: map.into_values().collect(), classes, per_class })
    }

    /// Images per batch.
    pub fn images_per_batch(&self) -> usize {
        self.classes * self.per_class
    }

    /// Pairs per batch: every within-class pair and as many cross-class ones.
    pub fn pairs_per_batch(&self) -> usize {
        self.classes * self.per_class * (self.per_class - 1)
    }

    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> GroupedBatch {
        let chosen = rand::seq::index::sample(rng, self.by_class.len(), self.classes);
        let mut images = Vec::with_capacity(self.images_per_batch());
        for c in chosen.iter() {
            let members = &self.by_class[c];
            images.extend(rand::seq::index::sample(rng, members.len(), self.per_class).iter().map(|k| members[k]));
        }
        let group = |position: usize| position / self.per_class;
        let mut out: Vec<(usize, usize, bool)> = Vec::with_capacity(self.pairs_per_batch());
        for g in 0..self.classes {
            let start = g * self.per_class;
            for i in start..start + self.per_class {
                for j in i + 1..start + self.per_class {
                    out.push((i, j, true));
                }
            }
        }
        let matching = out.len();
        let n = images.len();
        while out.len() < 2 * matching {
            let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
            if group(i) != group(j) {
                out.push((i, j, false));
            }
        }
        out.shuffle(rng);
        let pairs = PairBatch {
            left: out.iter().map(|p| p.0).collect(),
            right: out.iter().map(|p| p.1).collect(),
            is_match: out.iter().map(|p| p.2).collect(),
        };
        GroupedBatch { images, pairs }
    }
}

/// A fixed verification set: `matching` + `non_matching` pairs drawn from `seed`, as in the
/// paper's 10k test pairs (half matching).
pub fn verification_pairs(labels: &[u32], matching: usize, non_matching: usize, seed: u64) -> Result<PairBatch> {
    let sampler = BalancedPairSampler::new(labels)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pos = sampler.sample(2 * matching, &mut rng);
    let neg = sampler.sample(2 * non_matching, &mut rng);
    let mut batch = PairBatch::default();
    for (src, want) in [(&pos, true), (&neg, false)] {
        for k in (0..src.len()).filter(|&k| src.is_match[k] == want) {
            batch.left.push(src.left[k]);
            batch.right.push(src.right[k]);
            batch.is_match.push(want);
        }
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_batch_is_half_matching_even_with_many_classes() {
        // 700 classes of 3 images: a uniform sampler would give ~0.4% matching pairs.
        let labels: Vec<u32> = (0..2100).map(|i| (i / 3) as u32).collect();
        let sampler = BalancedPairSampler::new(&labels).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for _ in 0..20 {
            let b = sampler.sample(128, &mut rng);
            assert_eq!(b.len(), 128);
            assert_eq!(b.is_match.iter().filter(|&&m| m).count(), 64);
            for k in 0..b.len() {
                assert_eq!(labels[b.left[k]] == labels[b.right[k]], b.is_match[k]);
                assert_ne!(b.left[k], b.right[k]);
            }
            // Shuffled: matching pairs are not all in front.
            assert!(b.is_match[64..].iter().any(|&m| m));
        }
    }

    #[test]
    fn verification_set_has_the_requested_counts_and_is_reproducible() {
        let labels: Vec<u32> = (0..300).map(|i| (i % 30) as u32).collect();
        let a = verification_pairs(&labels, 50, 70, 9).unwrap();
        assert_eq!(a.is_match.iter().filter(|&&m| m).count(), 50);
        assert_eq!(a.is_match.iter().filter(|&&m| !m).count(), 70);
        assert_eq!(a, verification_pairs(&labels, 50, 70, 9).unwrap());
    }

    #[test]
    fn grouped_batches_pair_within_and_across_classes() {
        // 40 classes of 10 images; labels interleaved so positions and classes differ.
        let labels: Vec<u32> = (0..400).map(|i| (i % 40) as u32).collect();
        let sampler = GroupedPairSampler::new(&labels, 8, 4).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let b = sampler.sample(&mut rng);
        assert_eq!(b.images.len(), 32);
        assert_eq!(b.pairs.len(), sampler.pairs_per_batch());
        // 8 groups x C(4, 2) = 48 matching pairs, and as many non-matching.
        assert_eq!(b.pairs.is_match.iter().filter(|&&m| m).count(), 48);
        let mut distinct = b.images.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 32, "images in a batch are distinct");
        for k in 0..b.pairs.len() {
            let (l, r) = (labels[b.images[b.pairs.left[k]]], labels[b.images[b.pairs.right[k]]]);
            assert_eq!(l == r, b.pairs.is_match[k]);
        }
        let classes: std::collections::BTreeSet<u32> = b.images.iter().map(|&i| labels[i]).collect();
        assert_eq!(classes.len(), 8);
    }

    #[test]
    fn grouped_sampler_refuses_impossible_groups() {
        let labels: Vec<u32> = (0..30).map(|i| (i % 3) as u32).collect();
        assert!(GroupedPairSampler::new(&labels, 4, 2).is_err(), "only 3 classes");
        assert!(GroupedPairSampler::new(&labels, 2, 11).is_err(), "classes have 10 images");
        assert!(GroupedPairSampler::new(&labels, 2, 1).is_err(), "no matching pair in a group of 1");
    }

    #[test]
    fn refuses_impossible_label_sets() {
        assert!(BalancedPairSampler::new(&[1, 1, 1]).is_err());
        assert!(BalancedPairSampler::new(&[1, 1, 2]).is_err());
    }
}
