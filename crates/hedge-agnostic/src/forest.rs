//! A random forest (Breiman 2001) for the audit's tree-ensemble probe: bootstrapped trees grown
//! to purity on Gini impurity, √d candidate features per split, class probabilities the mean of
//! the leaves' class frequencies, as scikit-learn's `RandomForestClassifier` defaults. Features
//! are cut at up to [`ForestConfig::bins`] quantiles of the training rows (a histogram forest,
//! as LightGBM's and scikit-learn's `HistGradientBoosting` are), which makes a split an O(rows)
//! pass; trees depend only on their own seed, so the forest is the same on any thread count.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};

/// Forest settings (the defaults: 100 trees, 64 quantile bins, depth up to 32, one row per leaf).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ForestConfig {
    pub trees: usize,
    /// Quantile cut points per feature, at most 256 (a bin index is one byte).
    pub bins: usize,
    pub max_depth: usize,
    pub min_leaf: usize,
    pub seed: u64,
}

impl Default for ForestConfig {
    fn default() -> Self {
        ForestConfig { trees: 100, bins: 64, max_depth: 32, min_leaf: 1, seed: 0 }
    }
}

impl ForestConfig {
    pub fn with_trees(mut self, trees: usize) -> Self {
        self.trees = trees;
        self
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

/// One tree node: a split on `feature` at bin `bin` (rows with bin ≤ `bin` go left), or a leaf
/// whose class frequencies start at `leaf` in [`Forest::leaf_probabilities`].
#[derive(Debug, Clone, Copy)]
enum Node {
    Split { feature: u32, bin: u8, left: u32, right: u32 },
    Leaf { leaf: u32 },
}

/// A fitted forest.
#[derive(Debug, Clone)]
pub struct Forest {
    /// Per feature, the cut points: a value v falls in bin #{edges < v}.
    edges: Vec<Vec<f32>>,
    /// Each tree's nodes; the root is node 0.
    trees: Vec<Vec<Node>>,
    leaf_probabilities: Vec<f32>,
    classes: usize,
}

/// Cut points of one feature: midpoints between distinct values when there are few, else the
/// values at `bins − 1` evenly spaced quantiles (duplicates dropped).
fn cut_points(mut values: Vec<f32>, bins: usize) -> Vec<f32> {
    values.sort_by(f32::total_cmp);
    values.dedup();
    if values.len() <= bins {
        return values.windows(2).map(|w| w[0] + (w[1] - w[0]) / 2.0).collect();
    }
    let mut edges: Vec<f32> = (1..bins).map(|j| values[j * values.len() / bins]).collect();
    edges.dedup();
    edges
}

fn bin_of(edges: &[f32], v: f32) -> u8 {
    edges.partition_point(|&e| e < v) as u8
}

/// Rows binned column by column (`binned[f · n + i]`) for a fast per-feature histogram.
struct Binned<'a> {
    columns: &'a [u8],
    rows: usize,
}

impl Binned<'_> {
    fn get(&self, feature: usize, row: usize) -> u8 {
        self.columns[feature * self.rows + row]
    }
}

struct Grower<'a> {
    data: Binned<'a>,
    labels: &'a [i64],
    classes: usize,
    features: usize,
    bins: usize,
    candidates: usize,
    config: ForestConfig,
}

/// The best split of `rows` on `feature`: (score, bin) where the score is Σ_c L_c²/|L| + Σ_c
/// R_c²/|R| (larger is purer; the weighted Gini impurity is |rows| minus it).
fn best_cut(g: &Grower<'_>, rows: &[u32], feature: usize, histogram: &mut [u32]) -> Option<(f64, u8)> {
    let k = g.classes;
    histogram.iter_mut().for_each(|h| *h = 0);
    for &r in rows {
        let b = g.data.get(feature, r as usize) as usize;
        histogram[b * k + g.labels[r as usize] as usize] += 1;
    }
    let total: Vec<u32> = (0..k).map(|c| (0..g.bins).map(|b| histogram[b * k + c]).sum()).collect();
    let mut left = vec![0u32; k];
    let (mut left_n, n) = (0usize, rows.len());
    let mut best: Option<(f64, u8)> = None;
    for b in 0..g.bins - 1 {
        let mut moved = 0usize;
        for c in 0..k {
            left[c] += histogram[b * k + c];
            moved += histogram[b * k + c] as usize;
        }
        left_n += moved;
        if moved == 0 || left_n < g.config.min_leaf || n - left_n < g.config.min_leaf {
            continue;
        }
        let right_n = n - left_n;
        let l: f64 = left.iter().map(|&c| (c as f64).powi(2)).sum::<f64>() / left_n as f64;
        let r: f64 = (0..k).map(|c| ((total[c] - left[c]) as f64).powi(2)).sum::<f64>() / right_n as f64;
        if best.is_none_or(|(s, _)| l + r > s) {
            best = Some((l + r, b as u8));
        }
    }
    best
}

impl Grower<'_> {
    /// Grows one tree on `rows` (a bootstrap sample, repeats allowed), appending its leaves'
    /// class frequencies to `leaves`.
    fn grow(&self, mut rows: Vec<u32>, rng: &mut ChaCha8Rng, leaves: &mut Vec<f32>) -> Vec<Node> {
        let k = self.classes;
        let mut nodes = vec![Node::Leaf { leaf: 0 }];
        let mut stack = vec![(0usize, 0usize, rows.len(), 0usize)];
        let mut order: Vec<usize> = (0..self.features).collect();
        let mut histogram = vec![0u32; self.bins * k];
        while let Some((id, start, end, depth)) = stack.pop() {
            let part = &mut rows[start..end];
            let mut counts = vec![0u32; k];
            part.iter().for_each(|&r| counts[self.labels[r as usize] as usize] += 1);
            let pure = counts.iter().filter(|&&c| c > 0).count() <= 1;
            let parent: f64 = counts.iter().map(|&c| (c as f64).powi(2)).sum::<f64>() / part.len() as f64;
            let mut split = None;
            if !pure && depth < self.config.max_depth && part.len() >= 2 * self.config.min_leaf {
                // √d features in a random order; as scikit-learn, more are drawn while none of
                // those seen can split the node (all constant here).
                order.shuffle(rng);
                let mut best: Option<(f64, usize, u8)> = None;
                for (seen, &f) in order.iter().enumerate() {
                    if seen >= self.candidates && best.is_some() {
                        break;
                    }
                    if let Some((score, bin)) = best_cut(self, part, f, &mut histogram) {
                        if best.is_none_or(|(s, _, _)| score > s) {
                            best = Some((score, f, bin));
                        }
                    }
                }
                split = best.filter(|&(score, _, _)| score > parent + 1e-12);
            }
            match split {
                Some((_, feature, bin)) => {
                    // Partition the rows: bin ≤ `bin` first.
                    let mut mid = 0;
                    for i in 0..part.len() {
                        if self.data.get(feature, part[i] as usize) <= bin {
                            part.swap(i, mid);
                            mid += 1;
                        }
                    }
                    let (left, right) = (nodes.len(), nodes.len() + 1);
                    nodes.push(Node::Leaf { leaf: 0 });
                    nodes.push(Node::Leaf { leaf: 0 });
                    nodes[id] = Node::Split { feature: feature as u32, bin, left: left as u32, right: right as u32 };
                    stack.push((right, start + mid, end, depth + 1));
                    stack.push((left, start, start + mid, depth + 1));
                }
                None => {
                    nodes[id] = Node::Leaf { leaf: leaves.len() as u32 };
                    let n = part.len() as f32;
                    leaves.extend(counts.iter().map(|&c| c as f32 / n));
                }
            }
        }
        nodes
    }
}

impl Forest {
    /// Fits on `x` (`[n, d]` row-major) with labels `y` (`[n]`, classes `0..classes`).
    pub fn fit(x: &[f32], d: usize, y: &[i64], classes: usize, config: &ForestConfig) -> Result<Self> {
        let n = y.len();
        if d == 0 || n < 2 || x.len() != n * d {
            return Err(invalid(
                "forest data",
                format!("{} values, d = {d}, {n} labels", x.len()),
                "need n ≥ 2 rows of d values and one label per row",
            ));
        }
        if let Some(&bad) = y.iter().find(|&&c| c < 0 || c as usize >= classes) {
            return Err(invalid("forest labels", bad, format!("labels must be class indices in 0..{classes}")));
        }
        if x.iter().any(|v| !v.is_finite()) {
            return Err(invalid("forest data", "a NaN or infinite value", "features must be finite"));
        }
        if config.trees == 0 || !(2..=256).contains(&config.bins) || config.min_leaf == 0 {
            return Err(invalid(
                "forest settings",
                format!("{} trees, {} bins, min leaf {}", config.trees, config.bins, config.min_leaf),
                "need ≥ 1 tree, 2 to 256 bins and ≥ 1 row per leaf",
            ));
        }
        // The binned copy (one byte per value) and each tree's row indices.
        hedge_run::Footprint::new("fitting a forest probe", move |v| v[0] * v[1] + 8.0 * v[0])
            .knob("rows", n as f64, 2.0)
            .knob("features", d as f64, 1.0)
            .check()?;
        let edges: Vec<Vec<f32>> =
            (0..d).map(|f| cut_points((0..n).map(|i| x[i * d + f]).collect(), config.bins)).collect();
        let mut columns = vec![0u8; n * d];
        for f in 0..d {
            for i in 0..n {
                columns[f * n + i] = bin_of(&edges[f], x[i * d + f]);
            }
        }
        let grower = Grower {
            data: Binned { columns: &columns, rows: n },
            labels: y,
            classes,
            features: d,
            bins: edges.iter().map(|e| e.len() + 1).max().unwrap_or(1).max(2),
            candidates: ((d as f64).sqrt() as usize).max(1),
            config: *config,
        };
        let mut leaf_probabilities = Vec::new();
        let trees = (0..config.trees)
            .map(|t| {
                let mut rng = ChaCha8Rng::seed_from_u64(config.seed.wrapping_mul(1_000_003).wrapping_add(t as u64));
                let rows: Vec<u32> = (0..n).map(|_| rng.random_range(0..n as u32)).collect();
                grower.grow(rows, &mut rng, &mut leaf_probabilities)
            })
            .collect();
        Ok(Forest { edges, trees, leaf_probabilities, classes })
    }

    /// Number of classes the forest predicts.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// Class probabilities (`[n, classes]` row-major): the mean over trees of the leaf's class
    /// frequencies.
    pub fn predict_proba(&self, x: &[f32]) -> Result<Vec<f64>> {
        let d = self.edges.len();
        if x.len() % d != 0 {
            return Err(invalid("forest input", x.len(), format!("need rows of {d} values")));
        }
        let (n, k) = (x.len() / d, self.classes);
        let mut out = vec![0.0f64; n * k];
        let bins: Vec<u8> = (0..n * d).map(|j| bin_of(&self.edges[j % d], x[j])).collect();
        for tree in &self.trees {
            for i in 0..n {
                let mut node = tree[0];
                let leaf = loop {
                    match node {
                        Node::Leaf { leaf } => break leaf as usize,
                        Node::Split { feature, bin, left, right } => {
                            node = tree[if bins[i * d + feature as usize] <= bin { left } else { right } as usize];
                        }
                    }
                };
                for c in 0..k {
                    out[i * k + c] += f64::from(self.leaf_probabilities[leaf + c]);
                }
            }
        }
        let trees = self.trees.len() as f64;
        out.iter_mut().for_each(|p| *p /= trees);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cut points split distinct values at midpoints, and a value lands in bin #{edges < v}.
    #[test]
    fn binning_follows_the_cut_points() {
        let edges = cut_points(vec![3.0, 1.0, 2.0, 2.0], 8);
        assert_eq!(edges, vec![1.5, 2.5]);
        assert_eq!([0.0, 1.5, 2.0, 9.0].map(|v| bin_of(&edges, v)), [0, 0, 1, 2]);
        let many: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        assert_eq!(cut_points(many, 4), vec![250.0, 500.0, 750.0]);
    }

    /// A checkerboard (the XOR of two signs) that no single axis split reads: the forest reads
    /// it, its probabilities sum to 1, and the same seed gives the same forest.
    #[test]
    fn a_forest_reads_a_checkerboard_and_is_reproducible() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut sample = |n: usize| {
            let x: Vec<f32> = (0..n * 3).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let y: Vec<i64> = (0..n).map(|i| i64::from((x[i * 3] > 0.0) ^ (x[i * 3 + 1] > 0.0))).collect();
            (x, y)
        };
        let ((x, y), (xt, yt)) = (sample(2000), sample(1000));
        let config = ForestConfig::default().with_trees(30);
        let forest = Forest::fit(&x, 3, &y, 2, &config).unwrap();
        let p = forest.predict_proba(&xt).unwrap();
        assert!(p.chunks(2).all(|r| (r[0] + r[1] - 1.0).abs() < 1e-5));
        let accuracy = p.chunks(2).zip(&yt).filter(|(r, &y)| i64::from(r[1] > r[0]) == y).count() as f64 / 1000.0;
        assert!(accuracy > 0.95, "{accuracy}");
        assert_eq!(p, Forest::fit(&x, 3, &y, 2, &config).unwrap().predict_proba(&xt).unwrap());
    }

    #[test]
    fn bad_input_is_refused_by_name() {
        let e = Forest::fit(&[0.0, 1.0], 1, &[0, 2], 2, &ForestConfig::default()).unwrap_err().to_string();
        assert!(e.contains("forest labels"), "{e}");
        let e = Forest::fit(&[0.0, f32::NAN], 1, &[0, 1], 2, &ForestConfig::default()).unwrap_err().to_string();
        assert!(e.contains("finite"), "{e}");
        let e =
            Forest::fit(&[0.0, 1.0], 1, &[0, 1], 2, &ForestConfig::default().with_trees(0)).unwrap_err().to_string();
        assert!(e.contains("forest settings"), "{e}");
    }
}
