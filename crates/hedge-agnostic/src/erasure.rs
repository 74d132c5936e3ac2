//! Concept erasure on frozen features: LEACE (Belrose et al. 2023, "LEACE: Perfect linear
//! concept erasure in closed form") and INLP (Ravfogel et al. 2020, "Null it out").
//!
//! LEACE is the least-squares edit r(x) = x − P(x − μ) that makes the cross-covariance of the
//! features with the one-hot concept zero, which is exactly the condition under which no linear
//! probe of the concept beats a constant (the paper's Theorem 3.1: equal class-conditional
//! means). With Σ the feature covariance, W = (Σ^{1/2})⁺ the whitening map and Σ_xz the
//! cross-covariance with the one-hot concept,
//!
//!   P = W⁺ · Π_{W Σ_xz} · W,
//!
//! Π_{W Σ_xz} the orthogonal projection onto the column space of W Σ_xz (at most k − 1
//! dimensions for k classes). INLP instead trains a linear classifier, projects the features
//! onto its null space, and repeats; it removes more dimensions and guards against nothing in
//! closed form, which is why it is the comparison, not the method.

use faer::{Mat, Side};
use serde::{Deserialize, Serialize};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

use crate::eraser::{Eraser, EraserSpec, FittedEraser, Registration};
use crate::error::{invalid, Result};
use crate::gaussian::{barycentre, effective_rows, oas_shrink, transport_map, weighted_moments};
use crate::model::{AgnosticNet, ModelConfig};
use crate::train::{fit, TrainConfig, TrainingData};

/// A fitted LEACE eraser: `r(x) = x − strength · P (x − μ)`.
#[derive(Debug, Clone)]
pub struct Leace {
    /// μ, `[d]`.
    pub mean: Vec<f64>,
    /// P, `d × d` (acts on column vectors).
    pub projection: Mat<f64>,
    /// Dimensions erased (the rank of P).
    pub rank: usize,
}

/// Rows of `x` (`n × d`, row-major) as a faer matrix.
fn matrix(x: &[f64], n: usize, d: usize) -> Mat<f64> {
    Mat::from_fn(n, d, |i, j| x[i * d + j])
}

/// Checks `x` holds `n` finite rows of `d` values and `z` one label in `0..` per row.
/// Refuses rows an eraser cannot fit (shapes, non-finite values, negative labels, a size over
/// the memory budget); returns the number of rows.
pub(crate) fn check_rows(x: &[f64], d: usize, z: &[i64]) -> Result<usize> {
    if d == 0 || x.len() % d != 0 || x.len() / d != z.len() || z.len() < 2 {
        return Err(invalid(
            "erasure data",
            format!("{} values, d = {d}, {} labels", x.len(), z.len()),
            "need n ≥ 2 rows of d values and one label per row",
        ));
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(invalid("erasure data", format!("value {} at row {}", x[i], i / d), "features must be finite"));
    }
    if let Some(&bad) = z.iter().find(|&&c| c < 0) {
        return Err(invalid("erasure labels", bad, "labels must be class indices ≥ 0"));
    }
    // The d × d covariance, its eigenvectors and the eraser's projection (a few of each), and
    // the n × k one-hot concept: what fitting takes beyond the rows themselves.
    let (n, k) = (z.len() as f64, z.iter().max().map_or(1.0, |&m| m as f64 + 1.0));
    hedge_run::Footprint::new("fitting an eraser", move |v| 8.0 * (6.0 * v[0] * v[0] + n * v[1] + 3.0 * n * v[0]))
        .knob("features (columns of x)", d as f64, 1.0)
        .knob("concept classes (largest label + 1)", k, 2.0)
        .check()?;
    Ok(z.len())
}

/// `weights` scaled to sum to 1 (uniform when absent), refused unless finite, ≥ 0 and not all 0.
pub(crate) fn normalised_weights(weights: Option<&[f64]>, n: usize) -> Result<Vec<f64>> {
    match weights {
        Some(w) if w.len() != n || w.iter().any(|v| !(v.is_finite() && *v >= 0.0)) || w.iter().sum::<f64>() <= 0.0 => {
            Err(invalid("erasure weights", w.len(), format!("need {n} finite weights ≥ 0, not all 0")))
        }
        Some(w) => {
            let total: f64 = w.iter().sum();
            Ok(w.iter().map(|v| v / total).collect())
        }
        None => Ok(vec![1.0 / n as f64; n]),
    }
}

/// Weights that make every (target, concept) group of the rows count equally: under them the
/// concept is independent of the target, so an eraser fitted with them removes the concept's
/// own signal, not the target's that the data's correlation lends it.
///
/// # Shapes
/// `target`, `concept`: `[n]` i64.
pub fn group_balancing_weights(target: &Tensor, concept: &Tensor) -> Result<Vec<f64>> {
    let y: Vec<i64> = Vec::try_from(target).map_err(|e| invalid("target labels", e, "copy"))?;
    let a: Vec<i64> = Vec::try_from(concept).map_err(|e| invalid("concept labels", e, "copy"))?;
    let mut counts = std::collections::BTreeMap::new();
    for pair in y.iter().zip(&a) {
        *counts.entry(pair).or_insert(0usize) += 1;
    }
    Ok(y.iter().zip(&a).map(|pair| 1.0 / counts[&pair] as f64).collect())
}

impl Leace {
    /// Fits the eraser of concept `z` (class indices) from features `x` (`n` rows of `d`).
    pub fn fit(x: &[f64], d: usize, z: &[i64]) -> Result<Self> {
        Self::fit_weighted(x, d, z, None)
    }

    /// [`Leace::fit`] under the distribution that gives row i the weight `weights[i]` (the
    /// means and covariances are weighted; after erasure the *weighted* class-conditional means
    /// are equal). Weights that balance (target, concept) groups fit the eraser on data where
    /// the concept is independent of the target, so erasing it spares the target.
    pub fn fit_weighted(x: &[f64], d: usize, z: &[i64], weights: Option<&[f64]>) -> Result<Self> {
        let n = check_rows(x, d, z)?;
        let w = normalised_weights(weights, n)?;
        let k = (*z.iter().max().expect("n ≥ 2") + 1) as usize;
        let x = matrix(x, n, d);
        let (mean, mut sigma) = weighted_moments(&x, &w);
        let centred = Mat::from_fn(n, d, |i, j| x[(i, j)] - mean[j]);
        let zc = {
            let freq: Vec<f64> = (0..k).map(|c| (0..n).filter(|&i| z[i] as usize == c).map(|i| w[i]).sum()).collect();
            Mat::from_fn(n, k, |i, c| f64::from(u8::from(z[i] as usize == c)) - freq[c])
        };
        let weighted = Mat::from_fn(n, d, |i, j| w[i] * centred[(i, j)]);
        // Shrunk toward a scaled identity (`oas_shrink`): whitening by the sample covariance's
        // noisy small eigenvalues made the oblique projection erase the training rows' class
        // means exactly but nobody else's. The shrunk covariance is full rank, so the fitted
        // rows' class means are still made equal.
        oas_shrink(&mut sigma, effective_rows(&w));
        let cross = weighted.transpose() * &zc;
        let eig = sigma
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| invalid("erasure covariance", format!("{e:?}"), "eigendecomposition failed"))?;
        let (v, lambda) = (eig.U(), eig.S().column_vector());
        let top = lambda.iter().copied().fold(0.0, f64::max);
        // Directions with no variance carry no signal and cannot be whitened.
        let keep: Vec<usize> = (0..d).filter(|&i| lambda[i] > top * 1e-12 && lambda[i] > 0.0).collect();
        // Σ^power on the kept eigenvectors: (V·diag(λ^power)) · Vᵀ as one matrix product.
        let scaled = |power: f64| {
            let columns = Mat::from_fn(d, keep.len(), |r, k| v[(r, keep[k])] * lambda[keep[k]].powf(power));
            let basis = Mat::from_fn(d, keep.len(), |r, k| v[(r, keep[k])]);
            columns * basis.transpose()
        };
        let (whiten, unwhiten) = (scaled(-0.5), scaled(0.5));
        let m = &whiten * &cross;
        let svd = m.thin_svd().map_err(|e| invalid("erasure cross-covariance", format!("{e:?}"), "SVD failed"))?;
        let (u, s) = (svd.U(), svd.S().column_vector());
        let s_top = s.iter().copied().fold(0.0, f64::max);
        let basis: Vec<usize> = (0..s.nrows()).filter(|&i| s[i] > s_top * 1e-10 && s[i] > 0.0).collect();
        let span = Mat::from_fn(d, basis.len(), |r, k| u[(r, basis[k])]);
        let pi = &span * span.transpose();
        let projection = &unwhiten * &pi * &whiten;
        Ok(Leace { mean, projection, rank: basis.len() })
    }

    /// `x` (`n` rows of `d`) with the concept erased at `strength` ∈ [0, 1] (1: LEACE itself;
    /// lower values move each point part of the way, for a Pareto front).
    pub fn erase(&self, x: &[f64], strength: f64) -> Result<Vec<f64>> {
        let d = self.mean.len();
        if x.len() % d != 0 {
            return Err(invalid("erasure input", x.len(), format!("need rows of {d} values")));
        }
        if !(0.0..=1.0).contains(&strength) {
            return Err(invalid("erasure strength", strength, "must lie in [0, 1]"));
        }
        let n = x.len() / d;
        let centred = Mat::from_fn(n, d, |i, j| x[i * d + j] - self.mean[j]);
        let moved = centred * self.projection.transpose();
        Ok((0..n * d).map(|t| x[t] - strength * moved[(t / d, t % d)]).collect())
    }
}

/// A fitted quadratic eraser (the "QLEACE" of the LEACE authors' library): every concept class
/// moved onto one Gaussian, x ↦ μ̄ + T_z (x − μ_z), with μ_z and Σ_z the class's mean and
/// (shrunk) covariance, μ̄ the global mean and T_z the optimal transport map from Σ_z to the
/// classes' Wasserstein barycentre. Afterwards the class-conditional means *and* covariances
/// are equal, so neither a linear nor a quadratic probe reads the concept from the first two
/// moments. It needs each row's concept label when erasing (an oracle, like the twins of the
/// ceiling), and it can raise what a non-linear probe reads (its authors warn of that).
#[derive(Debug, Clone)]
pub struct QuadraticLeace {
    /// μ̄, `[d]`.
    pub global_mean: Vec<f64>,
    /// μ_z per class, `k × [d]`.
    pub class_means: Vec<Vec<f64>>,
    /// T_z per class, `k × (d × d)`, symmetric.
    pub maps: Vec<Mat<f64>>,
}

impl QuadraticLeace {
    /// Fits the eraser of concept `z` (class indices, every class present) from features `x`
    /// (`n` rows of `d`), row i weighted by `weights[i]` (uniform when absent).
    pub fn fit_weighted(x: &[f64], d: usize, z: &[i64], weights: Option<&[f64]>) -> Result<Self> {
        let n = check_rows(x, d, z)?;
        let w = normalised_weights(weights, n)?;
        let k = (*z.iter().max().expect("n ≥ 2") + 1) as usize;
        let x = matrix(x, n, d);
        let (mut class_means, mut covariances, mut priors) = (Vec::new(), Vec::new(), Vec::new());
        for c in 0..k {
            let rows: Vec<usize> = (0..n).filter(|&i| z[i] as usize == c && w[i] > 0.0).collect();
            if rows.len() < 2 {
                return Err(invalid(
                    "erasure labels",
                    format!("class {c} has {} weighted rows", rows.len()),
                    "quadratic erasure needs at least two rows of every concept class (labels 0..k)",
                ));
            }
            let mass: f64 = rows.iter().map(|&i| w[i]).sum();
            let within: Vec<f64> = rows.iter().map(|&i| w[i] / mass).collect();
            let (mean, mut sigma) = weighted_moments(&Mat::from_fn(rows.len(), d, |r, j| x[(rows[r], j)]), &within);
            oas_shrink(&mut sigma, effective_rows(&within));
            class_means.push(mean);
            covariances.push(sigma);
            priors.push(mass);
        }
        let global_mean = (0..d).map(|j| (0..k).map(|c| priors[c] * class_means[c][j]).sum()).collect();
        let target = barycentre(&covariances, &priors)?;
        let maps = covariances.iter().map(|sigma| transport_map(sigma, &target)).collect::<Result<_>>()?;
        Ok(QuadraticLeace { global_mean, class_means, maps })
    }

    /// `x` (`n` rows of `d`, concept `z` per row) with the concept erased at `strength` ∈ [0, 1]
    /// (each point moved that part of the way to its image).
    pub fn erase(&self, x: &[f64], z: &[i64], strength: f64) -> Result<Vec<f64>> {
        let d = self.global_mean.len();
        check_rows(x, d, z)?;
        if !(0.0..=1.0).contains(&strength) {
            return Err(invalid("erasure strength", strength, "must lie in [0, 1]"));
        }
        if let Some(&bad) = z.iter().find(|&&c| c as usize >= self.maps.len()) {
            return Err(invalid("erasure labels", bad, format!("the eraser knows classes 0..{}", self.maps.len())));
        }
        let mut out = x.to_vec();
        for (i, &c) in z.iter().enumerate() {
            let (mean, map) = (&self.class_means[c as usize], &self.maps[c as usize]);
            for a in 0..d {
                let moved: f64 = (0..d).map(|b| map[(a, b)] * (x[i * d + b] - mean[b])).sum();
                out[i * d + a] += strength * (self.global_mean[a] + moved - x[i * d + a]);
            }
        }
        Ok(out)
    }
}

/// Iterative null-space projection: `iterations` times, a multinomial logistic regression
/// (full-batch Adam, `steps` steps) learns the concept from the current features and the
/// features are projected onto the orthogonal complement of every direction learned so far.
/// Returns the projection (`d × d`, acting on centred column vectors) and the training mean.
/// With `weights`, the mean and each regression's loss weigh row i by `weights[i]`.
pub fn inlp(
    x: &[f64],
    d: usize,
    z: &[i64],
    weights: Option<&[f64]>,
    iterations: usize,
    steps: usize,
    seed: u64,
) -> Result<Leace> {
    let n = check_rows(x, d, z)?;
    if iterations == 0 || iterations > d {
        return Err(invalid("inlp iterations", iterations, format!("give 1..={d} (the feature width)")));
    }
    let w = normalised_weights(weights, n)?;
    let k = *z.iter().max().expect("n ≥ 2") + 1;
    let mean: Vec<f64> = (0..d).map(|j| (0..n).map(|i| w[i] * x[i * d + j]).sum::<f64>()).collect();
    let wt = Tensor::from_slice(&w).to_kind(Kind::Float);
    let centred: Vec<f64> = (0..n * d).map(|t| x[t] - mean[t % d]).collect();
    let xt = Tensor::from_slice(&centred).reshape([n as i64, d as i64]);
    let zt = Tensor::from_slice(z);
    // Orthonormal basis of the removed directions, as rows `[r, d]`.
    let mut removed = Tensor::zeros([0, d as i64], (Kind::Double, Device::Cpu));
    let _generator = crate::seeded_generator(seed as i64);
    for _ in 0..iterations {
        let keep = Tensor::eye(d as i64, (Kind::Double, Device::Cpu)) - removed.transpose(0, 1).matmul(&removed);
        let current = xt.matmul(&keep);
        let scale = current.std(true).clamp_min(1e-12);
        let input = (&current / &scale).to_kind(Kind::Float);
        let vs = nn::VarStore::new(Device::Cpu);
        let linear = nn::linear(vs.root() / "w", d as i64, k.max(2), Default::default());
        let mut opt = nn::Adam::default().build(&vs, 1e-2).map_err(|e| invalid("inlp optimiser", e, "Adam"))?;
        for _ in 0..steps {
            let nll =
                -linear.forward(&input).log_softmax(1, Kind::Float).gather(1, &zt.unsqueeze(1), false).squeeze_dim(1);
            opt.backward_step(&(nll * &wt).sum(Kind::Float));
        }
        // The classifier's directions, in the current (already projected) space.
        let w = tch::no_grad(|| linear.ws.to_kind(Kind::Double).matmul(&keep));
        let all = Tensor::cat(&[&removed, &w], 0);
        // Orthonormal rows spanning the old and the new directions.
        let (q, r) = Tensor::linalg_qr(&all.transpose(0, 1), "reduced");
        let independent = r.diagonal(0, 0, 1).abs().gt(1e-8).nonzero().squeeze_dim(1);
        removed = q.index_select(1, &independent).transpose(0, 1);
    }
    let p = removed.transpose(0, 1).matmul(&removed);
    let values: Vec<f64> = Vec::try_from(p.flatten(0, -1)).map_err(|e| invalid("inlp projection", e, "copy"))?;
    let rank = removed.size()[0] as usize;
    Ok(Leace { mean, projection: matrix(&values, d, d), rank })
}

/// How a sweep removes the concept. With an eraser, each network is trained without an
/// adversary (α = 0), the eraser is fitted on its frozen features, G_y is retrained on the erased
/// features, and the sweep's α is the erasure strength (0: nothing erased, 1: all of it).
/// Written as `{"kind": "adversary"}` or an eraser's settings ([`EraserSpec`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Removal {
    /// The training's own adversary (`TrainConfig::adversary`) at weight α.
    #[default]
    Adversary,
    /// A registered eraser ([`crate::erasers::ERASERS`]) on the frozen features.
    Erase(EraserSpec),
}

impl Removal {
    /// The registered eraser `kind` with its default parameters.
    pub fn eraser(kind: &str) -> Self {
        Removal::Erase(EraserSpec::new(kind))
    }

    /// Whether the concept is removed after training (α is then a strength, not a weight).
    pub fn is_post_hoc(&self) -> bool {
        !matches!(self, Removal::Adversary)
    }

    /// How reports name it (`adversary`, `leace`, `inlp-10`).
    pub fn name(&self) -> String {
        match self {
            Removal::Adversary => "adversary".into(),
            Removal::Erase(spec) => spec.label(),
        }
    }
}

impl Serialize for Removal {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Removal::Adversary => EraserSpec::new("adversary").serialize(serializer),
            Removal::Erase(spec) => spec.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Removal {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let spec = EraserSpec::deserialize(deserializer)?;
        Ok(if spec.kind == "adversary" && spec.params.is_empty() { Removal::Adversary } else { Removal::Erase(spec) })
    }
}

/// Copies a `[n, d]` tensor's values (row-major) as f64.
fn rows_of(t: &Tensor) -> Result<Vec<f64>> {
    Vec::try_from(t.to_kind(Kind::Double).flatten(0, -1)).map_err(|e| invalid("features", e, "copy"))
}

fn double_matrix(m: &Mat<f64>) -> Tensor {
    let values: Vec<f64> = (0..m.nrows()).flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)])).collect();
    Tensor::from_slice(&values).reshape([m.nrows() as i64, m.ncols() as i64])
}

/// A fitted affine eraser as tensors (f64): x − s·(x − μ)Pᵀ (LEACE, INLP).
struct LinearMap {
    /// μ, `[1, d]`.
    mean: Tensor,
    /// Pᵀ, `[d, d]`.
    projection_t: Tensor,
    rank: usize,
}

impl From<Leace> for LinearMap {
    fn from(eraser: Leace) -> Self {
        let d = eraser.mean.len() as i64;
        LinearMap {
            mean: Tensor::from_slice(&eraser.mean).reshape([1, d]),
            projection_t: double_matrix(&eraser.projection.transpose().to_owned()),
            rank: eraser.rank,
        }
    }
}

impl FittedEraser for LinearMap {
    fn rank(&self) -> usize {
        self.rank
    }

    fn displacement(&self, x: &Tensor, _concept: &Tensor) -> Tensor {
        -(x - &self.mean).matmul(&self.projection_t)
    }
}

/// A fitted quadratic eraser as tensors (f64): x + s·(μ̄ + (x − μ_z)T_z − x).
struct QuadraticMap {
    /// μ̄, `[1, d]`.
    global_mean: Tensor,
    /// μ_z, `[k, d]`.
    class_means: Tensor,
    /// T_z, `[k, d, d]` (each symmetric).
    maps: Tensor,
    dims: usize,
}

impl FittedEraser for QuadraticMap {
    fn rank(&self) -> usize {
        self.dims
    }

    fn reads_concept(&self) -> bool {
        true
    }

    fn displacement(&self, x: &Tensor, concept: &Tensor) -> Tensor {
        let centred = (x - self.class_means.index_select(0, concept)).unsqueeze(1);
        let image = centred.bmm(&self.maps.index_select(0, concept)).squeeze_dim(1) + &self.global_mean;
        image - x
    }
}

/// [`Leace`] as an [`Eraser`] (`{"kind": "leace"}`).
pub struct LeaceEraser;

impl Eraser for LeaceEraser {
    fn fit(
        &self,
        x: &[f64],
        d: usize,
        z: &[i64],
        weights: Option<&[f64]>,
        _seed: u64,
    ) -> Result<Box<dyn FittedEraser>> {
        Ok(Box::new(LinearMap::from(Leace::fit_weighted(x, d, z, weights)?)))
    }
}

/// [`inlp`] as an [`Eraser`] (`{"kind": "inlp", "iterations": 10}`): `iterations` rounds of
/// logistic regression, 300 steps each.
pub struct InlpEraser {
    pub iterations: usize,
}

impl Eraser for InlpEraser {
    fn fit(&self, x: &[f64], d: usize, z: &[i64], weights: Option<&[f64]>, seed: u64) -> Result<Box<dyn FittedEraser>> {
        Ok(Box::new(LinearMap::from(inlp(x, d, z, weights, self.iterations, 300, seed)?)))
    }

    fn check_width(&self, feature_dim: usize) -> Result<()> {
        if self.iterations > feature_dim {
            return Err(invalid(
                "inlp_iterations",
                self.iterations,
                format!("give at most {feature_dim} (each round removes at least one of the features' dimensions)"),
            ));
        }
        Ok(())
    }
}

/// [`QuadraticLeace`] as an [`Eraser`] (`{"kind": "quadratic-leace"}`; reads each row's concept
/// label when erasing).
pub struct QuadraticLeaceEraser;

impl Eraser for QuadraticLeaceEraser {
    fn fit(
        &self,
        x: &[f64],
        d: usize,
        z: &[i64],
        weights: Option<&[f64]>,
        _seed: u64,
    ) -> Result<Box<dyn FittedEraser>> {
        let eraser = QuadraticLeace::fit_weighted(x, d, z, weights)?;
        let means: Vec<f64> = eraser.class_means.concat();
        let maps: Vec<Tensor> = eraser.maps.iter().map(double_matrix).collect();
        Ok(Box::new(QuadraticMap {
            global_mean: Tensor::from_slice(&eraser.global_mean).reshape([1, d as i64]),
            class_means: Tensor::from_slice(&means).reshape([eraser.class_means.len() as i64, d as i64]),
            maps: Tensor::stack(&maps, 0),
            dims: d,
        }))
    }
}

/// LEACE's registration in [`crate::erasers::ERASERS`].
pub const LEACE: Registration = Registration {
    kind: "leace",
    about: "LEACE (Belrose et al. 2023): the least-squares affine edit after which no linear probe beats a constant",
    build: |spec| {
        spec.only(&[])?;
        Ok(Box::new(LeaceEraser))
    },
};

/// INLP's registration in [`crate::erasers::ERASERS`].
pub const INLP: Registration = Registration {
    kind: "inlp",
    about: "INLP (Ravfogel et al. 2020): project out a logistic probe's directions, `iterations` times (default 10)",
    build: |spec| {
        spec.only(&["iterations"])?;
        let iterations = spec.count("iterations", 10)?;
        if iterations == 0 {
            return Err(invalid("inlp_iterations", 0, "give at least one round"));
        }
        Ok(Box::new(InlpEraser { iterations }))
    },
};

/// Quadratic LEACE's registration in [`crate::erasers::ERASERS`].
pub const QUADRATIC_LEACE: Registration = Registration {
    kind: "quadratic-leace",
    about: "quadratic LEACE: every concept class's feature mean and covariance moved onto one Gaussian (an oracle: \
            reads each row's concept label when erasing)",
    build: |spec| {
        spec.only(&[])?;
        Ok(Box::new(QuadraticLeaceEraser))
    },
};

/// A fitted eraser applied at a strength: fit and transform, nothing else.
pub struct Erasure {
    fitted: Box<dyn FittedEraser>,
    strength: f64,
}

impl Erasure {
    /// Fits `eraser` on features `f` with concept `concept` (rows weighted by `weights`), to
    /// erase at `strength` (0: nothing, 1: all of it).
    ///
    /// # Shapes
    /// `f`: `[m, d]`, `concept`: `[m]` i64.
    pub fn fit(
        eraser: &dyn Eraser,
        strength: f64,
        f: &Tensor,
        concept: &Tensor,
        weights: Option<&[f64]>,
        seed: u64,
    ) -> Result<Self> {
        let (d, values, labels) = Self::rows(strength, f, concept)?;
        Ok(Erasure { fitted: eraser.fit(&values, d, &labels, weights, seed)?, strength })
    }

    /// The strength checked, and `f`'s width, values and `concept`'s labels as the erasers take them.
    fn rows(strength: f64, f: &Tensor, concept: &Tensor) -> Result<(usize, Vec<f64>, Vec<i64>)> {
        if !(0.0..=1.0).contains(&strength) {
            return Err(invalid("erasure strength", strength, "must lie in [0, 1]"));
        }
        let labels: Vec<i64> = Vec::try_from(concept).map_err(|e| invalid("concept labels", e, "copy"))?;
        Ok((f.size()[1] as usize, rows_of(f)?, labels))
    }

    /// [`Self::fit`] with each row's task label `target` (`[m]` i64) for erasers that keep what
    /// the task needs ([`Eraser::fit_for_task`]).
    pub fn fit_for_task(
        eraser: &dyn Eraser,
        strength: f64,
        f: &Tensor,
        concept: &Tensor,
        target: &Tensor,
        weights: Option<&[f64]>,
        seed: u64,
    ) -> Result<Self> {
        let (d, values, labels) = Self::rows(strength, f, concept)?;
        let task: Vec<i64> = Vec::try_from(target).map_err(|e| invalid("task labels", e, "copy"))?;
        if task.len() != labels.len() || task.iter().any(|&t| t < 0) {
            return Err(invalid("task labels", task.len(), "need one class index ≥ 0 per row"));
        }
        Ok(Erasure { fitted: eraser.fit_for_task(&values, d, &labels, &task, weights, seed)?, strength })
    }

    /// Dimensions the eraser removes.
    pub fn rank(&self) -> usize {
        self.fitted.rank()
    }

    /// Erases at `strength` from now on.
    pub fn set_strength(&mut self, strength: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&strength) {
            return Err(invalid("erasure strength", strength, "must lie in [0, 1]"));
        }
        self.strength = strength;
        Ok(())
    }

    /// Whether erasing reads each row's concept label ([`FittedEraser::reads_concept`]).
    pub fn reads_concept(&self) -> bool {
        self.fitted.reads_concept()
    }

    /// `f` with the concept erased at the fitted strength; `concept` (each row's concept label)
    /// is read only by erasers that need it.
    ///
    /// # Shapes
    /// `f`: `[n, d]`, `concept`: `[n]` i64 → `[n, d]`.
    pub fn erase(&self, f: &Tensor, concept: &Tensor) -> Tensor {
        // In double precision: P is an oblique projection whose entries can be large, and the
        // difference of nearly equal single-precision products would leave class-mean residue.
        tch::no_grad(|| {
            let x = f.to_kind(Kind::Double);
            (&x + self.fitted.displacement(&x, concept) * self.strength).to_kind(f.kind())
        })
    }
}

/// A fresh G_y (two hidden ReLU layers of `hidden` units) trained on erased features: what
/// reads the target after a post-hoc eraser.
pub struct RetrainedHead {
    head: nn::Sequential,
    _vars: nn::VarStore,
}

impl RetrainedHead {
    /// Trains on `inputs` → `labels` (Adam 1e-3, minibatches of 128, `steps` steps, seeded by
    /// `seed`).
    ///
    /// # Shapes
    /// `inputs`: `[n, d]`, `labels`: `[n]` i64.
    pub fn fit(inputs: &Tensor, labels: &Tensor, hidden: i64, steps: usize, seed: u64) -> Result<Self> {
        let _generator = crate::seeded_generator(seed as i64);
        let vars = nn::VarStore::new(Device::Cpu);
        let root = vars.root();
        let d = inputs.size()[1];
        let classes = labels.max().int64_value(&[]) + 1;
        let head = nn::seq()
            .add(nn::linear(&root / "fc1", d, hidden, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&root / "fc2", hidden, hidden, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&root / "out", hidden, classes.max(2), Default::default()));
        let mut opt =
            nn::Adam::default().build(&vars, 1e-3).map_err(|e| invalid("optimiser", e, "could not build Adam"))?;
        let n = inputs.size()[0];
        for _ in 0..steps {
            let i = Tensor::randint(n, [128.min(n)], (Kind::Int64, Device::Cpu));
            let loss = head.forward(&inputs.index_select(0, &i)).cross_entropy_for_logits(&labels.index_select(0, &i));
            opt.backward_step(&loss);
        }
        Ok(RetrainedHead { head, _vars: vars })
    }

    /// Its logits.
    pub fn logits(&self, inputs: &Tensor) -> Tensor {
        tch::no_grad(|| self.head.forward(inputs))
    }
}

/// A frozen network's features seen through a fitted eraser, with a fresh G_y (the same shape
/// as the network's) trained on the erased features: what the audit reads after a post-hoc
/// removal.
pub struct ErasedFeatures {
    pub erasure: Erasure,
    pub head: RetrainedHead,
}

impl ErasedFeatures {
    /// Dimensions the eraser removes.
    pub fn rank(&self) -> usize {
        self.erasure.rank()
    }

    /// `f` with the concept erased ([`Erasure::erase`]).
    pub fn erase(&self, f: &Tensor, concept: &Tensor) -> Tensor {
        self.erasure.erase(f, concept)
    }

    /// The retrained G_y's logits on erased features.
    pub fn target_logits(&self, erased: &Tensor) -> Tensor {
        self.head.logits(erased)
    }
}

/// What the audit reads: a network's own features and G_y, or the same features through a
/// fitted eraser with the retrained G_y.
#[derive(Clone, Copy)]
pub struct FeatureView<'a> {
    pub net: &'a AgnosticNet,
    pub erased: Option<&'a ErasedFeatures>,
}

impl<'a> FeatureView<'a> {
    pub fn of(net: &'a AgnosticNet) -> Self {
        FeatureView { net, erased: None }
    }

    /// Features of `x` (erased when there is an eraser; the quadratic eraser reads each row's
    /// `concept` label), in batches, without gradients.
    ///
    /// # Shapes
    /// `x`: the network's input `[n, …]`, `concept`: `[n]` i64 → `[n, d]`.
    pub fn features(&self, x: &Tensor, concept: &Tensor) -> Tensor {
        let f = self.net.frozen_features(x);
        match self.erased {
            Some(e) => e.erase(&f, concept),
            None => f,
        }
    }

    /// G_y's logits (the retrained one behind an eraser).
    pub fn target_logits(&self, f: &Tensor) -> Tensor {
        match self.erased {
            Some(e) => e.target_logits(f),
            None => tch::no_grad(|| self.net.target_logits(f)),
        }
    }
}

/// Trains a fresh network (seeded by `config.seed`) and removes the concept with `removal`:
/// the adversary at weight α during training, or, post hoc, a network trained at
/// `config.erase_on_alpha` (0 by default: no adversary) whose frozen features are erased at
/// strength α — an eraser stacked on an adversarially trained network when that is above 0. The eraser is fitted on the target-labelled set's
/// features with [`group_balancing_weights`] (Context-MNIST's context-labelled set holds
/// backgrounds without digits, whose features lie elsewhere: an eraser fitted there left a
/// linear probe reading the background at 0.97 on digit images); G_y is then retrained on the
/// erased target-labelled features for `config.steps` steps. Returns the network, the
/// eraser and the training seconds (both stages).
pub fn fit_with_removal(
    model: ModelConfig,
    data: &TrainingData<'_>,
    config: &TrainConfig,
    removal: &Removal,
) -> Result<(AgnosticNet, Option<ErasedFeatures>, f64)> {
    let spec = match removal {
        Removal::Adversary => {
            let (net, seconds) = fit(model, data, config)?;
            return Ok((net, None, seconds));
        }
        Removal::Erase(spec) => spec,
    };
    let start = std::time::Instant::now();
    let (net, _) = fit(model, data, &config.with_alpha(config.erase_on_alpha))?;
    let target_f = net.frozen_features(data.target_x);
    let weights = group_balancing_weights(data.target_y, data.target_p)?;
    let eraser = spec.build()?;
    let erasure = Erasure::fit_for_task(
        eraser.as_ref(),
        config.alpha,
        &target_f,
        data.target_p,
        data.target_y,
        Some(&weights),
        config.seed,
    )?;
    let head = RetrainedHead::fit(
        &erasure.erase(&target_f, data.target_p),
        data.target_y,
        model.head_hidden,
        config.steps,
        config.seed,
    )?;
    let erased = ErasedFeatures { erasure, head };
    Ok((net, Some(erased), start.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// 2,000 points in 6 dimensions; the concept (3 classes) shifts dimensions 0 and 2 and
    /// correlates with the noise of dimension 4, so a linear probe reads it well.
    fn planted(n: usize) -> (Vec<f64>, Vec<i64>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut x = Vec::with_capacity(n * 6);
        let mut z = Vec::with_capacity(n);
        for _ in 0..n {
            let c = rng.random_range(0..3i64);
            let noise: Vec<f64> = (0..6).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
            let shift = c as f64 - 1.0;
            x.extend([
                noise[0] + 1.5 * shift,
                noise[1] + noise[0],
                noise[2] - shift * shift,
                noise[3],
                noise[4] + 0.3 * shift + noise[3],
                noise[5] * 3.0,
            ]);
            z.push(c);
        }
        (x, z)
    }

    fn class_means(x: &[f64], z: &[i64], d: usize) -> Vec<Vec<f64>> {
        (0..3)
            .map(|c| {
                let rows: Vec<usize> = (0..z.len()).filter(|&i| z[i] == c).collect();
                (0..d).map(|j| rows.iter().map(|&i| x[i * d + j]).sum::<f64>() / rows.len() as f64).collect()
            })
            .collect()
    }

    fn probe_accuracy(x: &[f64], z: &[i64], d: usize) -> (f64, f64) {
        let n = z.len() as i64;
        let f = Tensor::from_slice(x).reshape([n, d as i64]).to_kind(Kind::Float);
        let a = Tensor::from_slice(z);
        let half = n / 2;
        let config =
            crate::audit::ProbeConfig { steps: 400, ..crate::audit::ProbeConfig::new(crate::audit::ProbeKind::Linear) };
        let r = crate::audit::probe(
            &f.narrow(0, 0, half),
            &a.narrow(0, 0, half),
            &f.narrow(0, half, n - half),
            &a.narrow(0, half, n - half),
            &config,
        )
        .unwrap();
        (r.accuracy, r.chance_interval.1)
    }

    #[test]
    fn leace_leaves_no_linear_signal() {
        let d = 6;
        let (x, z) = planted(4000);
        let (before, _) = probe_accuracy(&x, &z, d);
        assert!(before > 0.7, "the planted leak is readable: {before}");
        let eraser = Leace::fit(&x, d, &z).unwrap();
        assert_eq!(eraser.rank, 2, "k − 1 = 2 directions for 3 classes");
        let erased = eraser.erase(&x, 1.0).unwrap();
        // Equal class-conditional means: no linear probe beats a constant (Theorem 3.1).
        let means = class_means(&erased, &z, d);
        for c in 1..3 {
            for j in 0..d {
                assert!((means[c][j] - means[0][j]).abs() < 1e-9, "class {c} dim {j}: {means:?}");
            }
        }
        let (after, chance_high) = probe_accuracy(&erased, &z, d);
        assert!(after <= chance_high + 0.02, "a logistic probe at chance after LEACE: {after} vs {chance_high}");
        // Least change: dimensions the concept never touched move little (3 is independent of it).
        let moved: f64 = (0..4000).map(|i| (erased[i * d + 3] - x[i * d + 3]).abs()).sum::<f64>() / 4000.0;
        assert!(moved < 0.05, "dimension 3 moved {moved}");
        // Weighted: the weighted class-conditional means become equal.
        let w: Vec<f64> = (0..4000).map(|i| 1.0 + (i % 7) as f64).collect();
        let weighted = Leace::fit_weighted(&x, d, &z, Some(&w)).unwrap().erase(&x, 1.0).unwrap();
        let weighted_mean = |c: i64, j: usize| {
            let rows: Vec<usize> = (0..4000).filter(|&i| z[i] == c).collect();
            rows.iter().map(|&i| w[i] * weighted[i * d + j]).sum::<f64>() / rows.iter().map(|&i| w[i]).sum::<f64>()
        };
        for j in 0..d {
            for c in 1..3 {
                assert!((weighted_mean(c, j) - weighted_mean(0, j)).abs() < 1e-9, "weighted class {c} dim {j}");
            }
        }
        // Half strength keeps part of the signal.
        let half = eraser.erase(&x, 0.5).unwrap();
        assert!(probe_accuracy(&half, &z, d).0 > after + 0.1);
        assert!(eraser.erase(&x, 1.5).is_err());
    }

    /// Class covariance of erased rows (`d × d`, row-major), class `c`.
    fn class_covariance(x: &[f64], z: &[i64], d: usize, c: i64) -> Vec<f64> {
        let rows: Vec<usize> = (0..z.len()).filter(|&i| z[i] == c).collect();
        let m = class_means(x, z, d)[c as usize].clone();
        let n = rows.len() as f64;
        (0..d * d)
            .map(|t| {
                rows.iter().map(|&i| (x[i * d + t / d] - m[t / d]) * (x[i * d + t % d] - m[t % d])).sum::<f64>() / n
            })
            .collect()
    }

    /// After the quadratic eraser, every class has the global mean (exactly: the maps are applied
    /// to class-centred rows) and, up to the covariance shrinkage, the same covariance — the
    /// barycentre of the classes' covariances.
    #[test]
    fn quadratic_leace_equalises_class_means_and_covariances() {
        let d = 6;
        let (x, z) = planted(6000);
        // Give class 2 its own spread as well: a second moment LEACE leaves alone.
        let x: Vec<f64> = x.iter().enumerate().map(|(t, &v)| if z[t / d] == 2 { v * 2.5 } else { v }).collect();
        let before = (class_covariance(&x, &z, d, 0), class_covariance(&x, &z, d, 2));
        assert!(before.1[0] > 3.0 * before.0[0], "the planted spread differs: {} vs {}", before.1[0], before.0[0]);
        let eraser = QuadraticLeace::fit_weighted(&x, d, &z, None).unwrap();
        let erased = eraser.erase(&x, &z, 1.0).unwrap();
        let means = class_means(&erased, &z, d);
        for c in 0..3 {
            for j in 0..d {
                assert!((means[c][j] - eraser.global_mean[j]).abs() < 1e-9, "class {c} dim {j}: {means:?}");
            }
        }
        let reference = class_covariance(&erased, &z, d, 0);
        let scale = reference.iter().map(|v| v.abs()).fold(0.0, f64::max);
        for c in 1..3 {
            let other = class_covariance(&erased, &z, d, c);
            let worst = reference.iter().zip(&other).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(worst < 0.02 * scale, "class {c}: covariances differ by {worst} (scale {scale})");
        }
        // Strength 0 moves nothing; labels outside the fitted classes are refused.
        assert_eq!(eraser.erase(&x, &z, 0.0).unwrap(), x);
        assert!(eraser.erase(&x[..d], &[3], 1.0).is_err());
        assert!(QuadraticLeace::fit_weighted(&x[..2 * d], d, &[0, 2], None).is_err(), "class 1 has no rows");
    }

    /// Two Gaussian classes that differ in mean *and* covariance. LEACE equalises the means, so
    /// the ladder's quadratic probe still reads the class from the spread; after quadratic LEACE
    /// (fitted on the training rows, applied to held-out rows) both classes are the same Gaussian
    /// up to estimation error, and the quadratic probe sits inside its chance interval.
    #[test]
    fn after_quadratic_leace_a_quadratic_probe_is_at_chance() {
        use crate::ladder::{ProbeFamily, QuadraticProbe};
        let d = 4;
        let sample = |n: usize, seed: u64| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut normal = || {
                let (u, v): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random_range(0.0..1.0));
                (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            };
            let (mut x, mut z) = (Vec::new(), Vec::new());
            for i in 0..n {
                let e: Vec<f64> = (0..d).map(|_| normal()).collect();
                let c = (i % 2) as i64;
                // Class 1: mean shifted along x0, x0 stretched and mixed into x1, x2 shrunk.
                let row = if c == 0 { e } else { vec![2.0 * e[0] + 0.5, 0.6 * e[0] + e[1], 0.4 * e[2], e[3]] };
                x.extend(row);
                z.push(c);
            }
            (x, z)
        };
        let ((x, z), (xt, zt)) = (sample(8000, 1), sample(4000, 2));
        let quadratic = QuadraticProbe { steps: 300, principal: 32 };
        let read = |train: &[f64], test: &[f64]| {
            let t = |v: &[f64], z: &[i64]| {
                (Tensor::from_slice(v).reshape([z.len() as i64, d as i64]).to_kind(Kind::Float), Tensor::from_slice(z))
            };
            let ((tf, ta), (sf, sa)) = (t(train, &z), t(test, &zt));
            quadratic.fit_and_score(&tf, &ta, &sf, &sa, 0).unwrap()
        };
        let before = read(&x, &xt);
        assert!(before.accuracy > 0.72, "{before:?}");
        let leace = Leace::fit(&x, d, &z).unwrap();
        let linear_only = read(&leace.erase(&x, 1.0).unwrap(), &leace.erase(&xt, 1.0).unwrap());
        assert!(linear_only.accuracy > 0.65 && !linear_only.at_chance, "{linear_only:?}");
        let eraser = QuadraticLeace::fit_weighted(&x, d, &z, None).unwrap();
        let erased = read(&eraser.erase(&x, &z, 1.0).unwrap(), &eraser.erase(&xt, &zt, 1.0).unwrap());
        assert!(erased.at_chance && erased.mutual_information_bits < 0.01, "{erased:?}");
    }

    #[test]
    fn inlp_projects_out_the_probe_directions() {
        let d = 6;
        let (x, z) = planted(4000);
        let p = inlp(&x, d, &z, None, 2, 300, 0).unwrap();
        assert!(p.rank >= 3 && p.rank <= 6, "rank {}", p.rank);
        let erased = p.erase(&x, 1.0).unwrap();
        let (after, chance_high) = probe_accuracy(&erased, &z, d);
        assert!(after <= chance_high + 0.05, "after INLP {after}, chance up to {chance_high}");
        // A projection: applying it twice changes nothing more.
        let twice = p.erase(&erased, 1.0).unwrap();
        let most = erased.iter().zip(&twice).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(most < 1e-9, "{most}");
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(Leace::fit(&[1.0, f64::NAN, 2.0, 3.0], 2, &[0, 1]).is_err());
        assert!(Leace::fit(&[1.0, 2.0, 3.0], 2, &[0, 1]).is_err());
        assert!(Leace::fit(&[1.0, 2.0, 3.0, 4.0], 2, &[0, -1]).is_err());
        assert!(inlp(&[1.0, 2.0, 3.0, 4.0], 2, &[0, 1], None, 3, 10, 0).is_err());
        assert!(Leace::fit_weighted(&[1.0, 2.0, 3.0, 4.0], 2, &[0, 1], Some(&[1.0, -1.0])).is_err());
    }
}
