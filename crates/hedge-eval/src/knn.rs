//! K-nearest-neighbour identification from ranked neighbour lists.

use serde::{Deserialize, Serialize};

use crate::error::check_same_len;
use crate::{EvalError, Result};

/// How the K neighbours' labels decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnnRule {
    /// Correct only if more than half of the neighbours carry the true class (Section 4.3).
    Majority,
    /// The most frequent label wins; a tie goes to the tied label whose nearest occurrence is
    /// closest (Appendix G).
    Plurality,
}

/// The plurality label of `neighbours` (closest first).
///
/// # Panics
/// Never for a non-empty list; an empty list returns `None`.
pub fn plurality_label(neighbours: &[u32]) -> Option<u32> {
    let mut best: Option<(usize, usize, u32)> = None; // (count, -first position as rank, label)
    for (pos, &label) in neighbours.iter().enumerate() {
        if neighbours[..pos].contains(&label) {
            continue; // counted at its first, closest occurrence
        }
        let count = neighbours.iter().filter(|&&l| l == label).count();
        // A later label replaces the current best only with a strictly higher count, so among
        // tied counts the label first seen (the closest neighbour) stays.
        if best.is_none_or(|(c, _, _)| count > c) {
            best = Some((count, pos, label));
        }
    }
    best.map(|(_, _, l)| l)
}

/// Whether identification of a probe with class `truth` is correct under `rule`.
pub fn knn_correct(truth: u32, neighbours: &[u32], rule: KnnRule) -> bool {
    match rule {
        KnnRule::Majority => 2 * neighbours.iter().filter(|&&l| l == truth).count() > neighbours.len(),
        KnnRule::Plurality => plurality_label(neighbours) == Some(truth),
    }
}

/// Fraction of probes identified correctly. `neighbours[i]` are the labels of probe i's K
/// nearest gallery items, closest first.
pub fn knn_accuracy(truth: &[u32], neighbours: &[Vec<u32>], rule: KnnRule) -> Result<f64> {
    check_same_len("truth", truth.len(), "neighbours", neighbours.len())?;
    if truth.is_empty() {
        return Err(EvalError::Undefined("KNN accuracy of zero probes".into()));
    }
    let correct = truth.iter().zip(neighbours).filter(|(&t, n)| knn_correct(t, n, rule)).count();
    Ok(correct as f64 / truth.len() as f64)
}

/// Indices of the `k` largest `scores`, largest first, skipping `exclude` (leave-one-out).
/// Ties keep the lower index first, so results do not depend on sort stability.
pub fn top_k(scores: &[f64], k: usize, exclude: Option<usize>) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).filter(|&i| Some(i) != exclude).collect();
    let k = k.min(idx.len());
    if k == 0 {
        return Vec::new();
    }
    let cmp = |a: &usize, b: &usize| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b));
    idx.select_nth_unstable_by(k - 1, cmp);
    idx.truncate(k);
    idx.sort_by(cmp);
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_needs_more_than_half() {
        assert!(knn_correct(7, &[7, 7, 7, 1, 2], KnnRule::Majority));
        assert!(!knn_correct(7, &[7, 7, 1, 1, 2], KnnRule::Majority));
        // Plurality accepts what majority refuses: 2 of 5 with the rest scattered.
        assert!(knn_correct(7, &[7, 1, 7, 2, 3], KnnRule::Plurality));
    }

    #[test]
    fn plurality_ties_go_to_the_closest_neighbour() {
        assert_eq!(plurality_label(&[3, 5, 5, 3, 9]), Some(3));
        assert_eq!(plurality_label(&[5, 3, 3, 5, 9]), Some(5));
        assert_eq!(plurality_label(&[9, 3, 5, 5, 3]), Some(3));
        assert_eq!(plurality_label(&[1, 2, 3, 4, 5]), Some(1));
        assert_eq!(plurality_label(&[]), None);
    }

    #[test]
    fn accuracy_counts_and_checks_lengths() {
        let truth = [1, 2];
        let n = vec![vec![1, 1, 1, 2, 2], vec![1, 1, 1, 2, 2]];
        assert_eq!(knn_accuracy(&truth, &n, KnnRule::Majority).unwrap(), 0.5);
        assert!(knn_accuracy(&truth[..1], &n, KnnRule::Majority).is_err());
    }

    #[test]
    fn top_k_is_sorted_and_leaves_one_out() {
        let s = [0.1, 0.9, 0.5, 0.9, 0.3];
        assert_eq!(top_k(&s, 3, None), vec![1, 3, 2]);
        assert_eq!(top_k(&s, 3, Some(1)), vec![3, 2, 4]);
        assert_eq!(top_k(&s, 10, Some(0)).len(), 4);
    }
}
