//! HIB Appendix D's score of a one-dimensional embedding of 2-digit numbers: how often classes
//! next to each other on the line share a digit.

/// The class centroids of a D = 1 embedding in order along the line, and Appendix D's score.
#[derive(Debug, Clone, PartialEq)]
pub struct CentroidOrder {
    /// Class labels from the smallest centroid to the largest.
    pub order: Vec<u32>,
    /// Adjacent pairs that share their tens or their ones digit (at most `order.len() − 1`).
    pub adjacent_sharing_a_digit: usize,
    /// Classes in the average run of consecutive such pairs (0 when there is none).
    pub mean_run_length: f64,
}

/// Appendix D's score of `order` (2-digit class labels along the line): the adjacent pairs that
/// share their tens or their ones digit, and the mean length, in classes, of the runs of
/// consecutive such pairs.
pub fn ordering_score(order: &[u32]) -> (usize, f64) {
    let shares = |a: u32, b: u32| a / 10 == b / 10 || a % 10 == b % 10;
    let links: Vec<bool> = order.windows(2).map(|w| shares(w[0], w[1])).collect();
    let score = links.iter().filter(|&&l| l).count();
    // A run of k linked pairs in a row spans k + 1 classes.
    let mut runs = Vec::new();
    let mut current = 0usize;
    for &l in &links {
        if l {
            current += 1;
        } else if current > 0 {
            runs.push(current + 1);
            current = 0;
        }
    }
    if current > 0 {
        runs.push(current + 1);
    }
    let mean_run = if runs.is_empty() { 0.0 } else { runs.iter().sum::<usize>() as f64 / runs.len() as f64 };
    (score, mean_run)
}

/// Orders `centroids` (class label, position on the line) from the smallest position to the
/// largest and scores the order ([`ordering_score`]).
pub fn centroid_order(centroids: &[(u32, f64)]) -> CentroidOrder {
    let mut sorted = centroids.to_vec();
    sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
    let order: Vec<u32> = sorted.iter().map(|c| c.0).collect();
    let (adjacent_sharing_a_digit, mean_run_length) = ordering_score(&order);
    CentroidOrder { order, adjacent_sharing_a_digit, mean_run_length }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_score_counts_shared_digits_and_runs() {
        // 12-17 share the tens, 17-27 the ones, 27-35 nothing, 35-45 the ones.
        let (score, mean_run) = ordering_score(&[12, 17, 27, 35, 45]);
        assert_eq!(score, 3);
        // Runs: 12-17-27 (3 classes) and 35-45 (2 classes).
        assert!((mean_run - 2.5).abs() < 1e-12);
        assert_eq!(ordering_score(&[11, 22, 33]), (0, 0.0));
        assert_eq!(ordering_score(&[]), (0, 0.0));
    }

    /// The numbers in their natural order: every neighbour pair within a decade shares the
    /// tens digit and no pair across a decade boundary shares a digit (x9 then (x+1)0), so 90 of
    /// the 99 pairs score, in ten runs of ten classes: the paper's "maximum possible being 99"
    /// is not reached by counting order.
    #[test]
    fn counting_order_scores_ninety_in_runs_of_ten() {
        let centroids: Vec<(u32, f64)> = (0..100).rev().map(|n| (n, n as f64 * 0.5 - 3.0)).collect();
        let order = centroid_order(&centroids);
        assert_eq!(order.order, (0..100).collect::<Vec<u32>>());
        assert_eq!(order.adjacent_sharing_a_digit, 90);
        assert!((order.mean_run_length - 10.0).abs() < 1e-12);
    }
}
