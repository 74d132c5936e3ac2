//! How many quadrature nodes HIB's match probability needs (`hedge bench quadrature`): the
//! error of the Gauss–Hermite product rule and of the polar rule against a reference, by node
//! count, over a grid of Gaussian pairs.
//!
//! p = E σ(−a‖δ‖ + b) with δ ~ N(m, diag(v)). Relative to the spread σ = √(mean v), the grid
//! spans the head's sharpness a·σ, the offset ‖m‖/σ (0: a matching pair's difference, centred
//! on the kink of ‖δ‖), the variances' anisotropy and the bias b (so that p runs from near 0 to
//! near 1). The reference is the polar rule at [`REFERENCE_POINTS`] nodes per axis, which the
//! tests of `hedge_embed::evaluate` hold to closed-form radial integrals at the kink; at that
//! count its directions resolve the grid's most concentrated angle (an offset of eight spreads)
//! many times over. Besides the two rules alone, hedge's estimator is measured with its
//! switch between them (`hedge_embed::evaluate::POLAR_BELOW`) at several distances.

use serde::{Deserialize, Serialize};
use tch::{nn, Device, Kind, Tensor};

use hedge_embed::distribution::Embedding;
use hedge_embed::evaluate::{
    match_probability_gauss_hermite, match_probability_polar, match_probability_quadrature_switching, POLAR_BELOW,
};
use hedge_embed::loss::MatchHead;

use crate::Result;

/// Nodes of the reference rule.
pub const REFERENCE_POINTS: usize = 96;
/// The largest relative error hedge's default node count must stay under on the grid.
pub const TOLERANCE: f64 = 1e-3;
/// Probabilities below this are left out of the relative error (their absolute error counts).
pub const RELATIVE_FROM: f64 = 0.01;
/// Switches of hedge's estimator measured (squared Mahalanobis distances; the one in use,
/// `POLAR_BELOW`, among them).
const SWITCHES: [f64; 4] = [9.0, 16.0, 36.0, 64.0];

/// One rule at one node count in one dimension: its worst error over the grid.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuadratureError {
    pub dim: usize,
    /// `gauss-hermite` (product rule), `polar`, or `switch-C`: hedge's estimator taking the
    /// polar rule for pairs within squared Mahalanobis distance C of the kink.
    pub rule: String,
    /// Nodes per axis.
    pub points: usize,
    /// Nodes per pair of components: points^D for the product rule; for the polar rule points
    /// radial nodes times its directions (2 in 1-D, points in 2-D, 2 · points² in 3-D).
    pub nodes: usize,
    /// The largest |p − p_ref| / p_ref over the grid's pairs with p_ref ≥ [`RELATIVE_FROM`],
    /// and the pair where it is (below that floor a probability's relative error says little:
    /// the float32 product rule alone leaves 10⁻⁷ absolute).
    pub max_relative_error: f64,
    pub worst: GridPair,
    /// The largest |p − p_ref| over the grid.
    pub max_absolute_error: f64,
}

/// A pair of the grid.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct GridPair {
    pub sharpness: f64,
    pub offset: f64,
    pub anisotropy: f64,
    pub bias: f64,
    pub reference: f64,
}

/// `hedge bench quadrature`'s result file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuadratureStudy {
    pub reference_points: usize,
    pub tolerance: f64,
    /// Pairs whose reference probability is below this count only in the absolute error.
    pub relative_from: f64,
    pub pairs_per_dim: usize,
    pub rows: Vec<QuadratureError>,
    /// The switch hedge uses (`hedge_embed::evaluate::POLAR_BELOW`).
    pub polar_below: f64,
    /// Per dimension, the fewest nodes per axis with which hedge's estimator (its switch as
    /// used) stays within [`TOLERANCE`].
    pub chosen: Vec<(usize, usize)>,
}

fn grid() -> Vec<(f64, f64, f64, f64)> {
    let mut out = Vec::new();
    for sharpness in [0.5, 1.0, 2.0, 4.0, 8.0] {
        for offset in [0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0] {
            for anisotropy in [1.0, 4.0] {
                for bias in [-2.0, 0.0, 2.0, 4.0] {
                    out.push((sharpness, offset, anisotropy, bias));
                }
            }
        }
    }
    out
}

/// The grid's pairs in `dim` dimensions (σ = 1): the difference's mean `offset` along the first
/// axis, variances rising geometrically by `anisotropy` from the first axis to the last
/// (mean 1), split equally between the two sides.
fn pairs(dim: usize, grid: &[(f64, f64, f64, f64)]) -> (Embedding, Embedding) {
    let n = grid.len() as i64;
    let mut mean = Vec::with_capacity(grid.len() * dim);
    let mut variance = Vec::with_capacity(grid.len() * dim);
    for &(_, offset, anisotropy, _) in grid {
        let raw: Vec<f64> =
            (0..dim).map(|k| if dim == 1 { 1.0 } else { anisotropy.powf(k as f64 / (dim - 1) as f64) }).collect();
        let scale = raw.iter().sum::<f64>() / dim as f64;
        for (k, r) in raw.iter().enumerate() {
            mean.push(if k == 0 { offset as f32 } else { 0.0 });
            variance.push((r / scale * 0.5) as f32);
        }
    }
    let d = dim as i64;
    let left = Embedding {
        mean: Tensor::from_slice(&mean).view([n, 1, d]),
        variance: Some(Tensor::from_slice(&variance).view([n, 1, d])),
    };
    let right = Embedding {
        mean: Tensor::zeros([n, 1, d], (Kind::Float, Device::Cpu)),
        variance: Some(Tensor::from_slice(&variance).view([n, 1, d])),
    };
    (left, right)
}

/// One probability per grid pair, each with its own head (a = sharpness, b = bias).
fn probabilities(
    dim: usize,
    grid: &[(f64, f64, f64, f64)],
    rule: impl Fn(&MatchHead, &Embedding, &Embedding) -> Result<Tensor>,
) -> Result<Vec<f64>> {
    let (left, right) = pairs(dim, grid);
    let mut out = Vec::with_capacity(grid.len());
    for (i, &(sharpness, _, _, bias)) in grid.iter().enumerate() {
        let vs = nn::VarStore::new(Device::Cpu);
        let head = MatchHead::new(vs.root() / "m", sharpness, bias);
        let (l, r) = (left.narrow(i as i64, 1), right.narrow(i as i64, 1));
        let p = tch::no_grad(|| rule(&head, &l, &r))?;
        out.push(p.to_kind(Kind::Double).double_value(&[0]));
    }
    Ok(out)
}

/// The study at `points` nodes per axis, D = 1, 2, 3; `progress` is told each row.
pub fn quadrature_study(points: &[usize], mut progress: impl FnMut(&QuadratureError)) -> Result<QuadratureStudy> {
    let grid = grid();
    let mut rows = Vec::new();
    let mut chosen = Vec::new();
    for dim in 1..=3usize {
        let reference = probabilities(dim, &grid, |h, l, r| Ok(match_probability_polar(h, l, r, REFERENCE_POINTS)?))?;
        let rules: Vec<String> = ["gauss-hermite", "polar"]
            .into_iter()
            .map(String::from)
            .chain(SWITCHES.iter().map(|c| format!("switch-{c}")))
            .collect();
        for rule in &rules {
            let rule = rule.as_str();
            for &n in points {
                let got = probabilities(dim, &grid, |h, l, r| {
                    Ok(match rule {
                        "polar" => match_probability_polar(h, l, r, n)?,
                        "gauss-hermite" => match_probability_gauss_hermite(h, l, r, n)?,
                        switch => {
                            let below: f64 = switch.trim_start_matches("switch-").parse().unwrap_or(POLAR_BELOW);
                            match_probability_quadrature_switching(h, l, r, n, below)?
                        }
                    })
                })?;
                let mut worst = (0.0f64, 0usize);
                let mut absolute = 0.0f64;
                for (i, (&p, &q)) in got.iter().zip(&reference).enumerate() {
                    let relative = (p - q).abs() / q;
                    absolute = absolute.max((p - q).abs());
                    if q >= RELATIVE_FROM && relative > worst.0 {
                        worst = (relative, i);
                    }
                }
                let (sharpness, offset, anisotropy, bias) = grid[worst.1];
                let nodes = match (rule, dim) {
                    ("gauss-hermite", _) => n.pow(dim as u32),
                    (_, 1) => 2 * n,
                    (_, 2) => n * n,
                    _ => 2 * n * n * n,
                };
                let row = QuadratureError {
                    dim,
                    rule: rule.to_string(),
                    points: n,
                    nodes,
                    max_relative_error: worst.0,
                    worst: GridPair { sharpness, offset, anisotropy, bias, reference: reference[worst.1] },
                    max_absolute_error: absolute,
                };
                progress(&row);
                rows.push(row);
            }
        }
        let used = format!("switch-{POLAR_BELOW}");
        let fewest = rows
            .iter()
            .filter(|r| r.dim == dim && r.rule == used && r.max_relative_error <= TOLERANCE)
            .map(|r| r.points)
            .min();
        if let Some(n) = fewest {
            chosen.push((dim, n));
        }
    }
    Ok(QuadratureStudy {
        reference_points: REFERENCE_POINTS,
        tolerance: TOLERANCE,
        relative_from: RELATIVE_FROM,
        pairs_per_dim: grid.len(),
        polar_below: POLAR_BELOW,
        rows,
        chosen,
    })
}
