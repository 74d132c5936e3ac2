//! A kernel measure of dependence between features and the protected concept, to be minimised
//! end to end instead of fooling an adversary: the Hilbert–Schmidt independence criterion
//! (Gretton et al. 2005). It is zero exactly when features and concept are independent (for a
//! characteristic kernel such as the Gaussian), so a network that drives it down hides the
//! concept from every probe, not only from one trained head.

use tch::{Kind, Tensor};

/// The biased HSIC estimate tr(K H L H) / (n − 1)² between features `f` and concept `a`: K a
/// Gaussian kernel exp(−‖x − y‖² / (2σ²)) on the features, L the delta kernel on the concept
/// (1 when two rows share a class), H the centring matrix. `bandwidth_sq` is σ²; `None` takes
/// the median of the batch's pairwise squared distances (without gradient), the usual heuristic.
/// Differentiable in `f`.
///
/// # Shapes
/// `f`: `[n, d]` float, `a`: `[n]` i64 class indices → scalar.
pub fn hsic(f: &Tensor, a: &Tensor, bandwidth_sq: Option<f64>) -> Tensor {
    let (k, lc) = centred_kernels(f, a, bandwidth_sq, MEDIAN_FLOOR);
    let n = f.size()[0];
    (k * lc).sum(f.kind()) / ((n - 1) * (n - 1)) as f64
}

/// HSIC normalised by the two kernels' own HSIC, tr(KHLH) / √(tr(KHKH) · tr(LHLH)) (centred
/// kernel alignment): in [0, 1] whatever the feature scale, so it can be weighed against a
/// cross-entropy by α alone. 0 for a batch holding one class only.
///
/// # Shapes
/// As [`hsic`].
pub fn normalised_hsic(f: &Tensor, a: &Tensor, bandwidth_sq: Option<f64>) -> Tensor {
    aligned(f, a, bandwidth_sq, MEDIAN_FLOOR)
}

/// [`normalised_hsic`] with the median bandwidth floored at `floor` (σ² ≥ floor): a penalty on
/// values whose spread can shrink toward 0 (a classifier's logits within one class) needs the
/// floor, or the kernel's gradient grows as 1/σ² (see [`median_bandwidth_sq`]).
///
/// # Shapes
/// As [`hsic`].
pub fn normalised_hsic_floored(f: &Tensor, a: &Tensor, floor: f64) -> Tensor {
    aligned(f, a, None, floor)
}

/// [`normalised_hsic`] with σ² = `scale` × the median heuristic's σ² (floored at `floor`): a
/// scale below 1 makes the kernel local (it sees fine structure, and the dependence a tuned MLP
/// probe reads there), above 1 smooth (close to a linear measure). `scale` 1 is
/// [`normalised_hsic_floored`] exactly.
///
/// # Shapes
/// As [`hsic`].
pub fn normalised_hsic_scaled(f: &Tensor, a: &Tensor, scale: f64, floor: f64) -> Tensor {
    if scale == 1.0 {
        return aligned(f, a, None, floor);
    }
    let s2 = median_bandwidth_sq(f, floor) * scale;
    aligned(f, a, Some(s2), floor)
}

/// `f` with each column centred on its batch mean and divided by its batch standard deviation
/// (√(variance + 10⁻⁶): finite, with a finite gradient, when the column is constant), with
/// gradient through both: a kernel on these values has a bandwidth in units of the batch's own
/// spread, whatever the scale the network gives its outputs.
///
/// # Shapes
/// `[n, d]` → `[n, d]`, n ≥ 2.
pub fn batch_standardised(f: &Tensor) -> Tensor {
    let mean = f.mean_dim(0, true, f.kind());
    let centred = f - mean;
    let variance = centred.pow_tensor_scalar(2).mean_dim(0, true, f.kind());
    &centred / (variance + 1e-6).sqrt()
}

/// The smallest median bandwidth σ² the kernels use unless told otherwise.
pub const MEDIAN_FLOOR: f64 = 1e-12;

fn aligned(f: &Tensor, a: &Tensor, bandwidth_sq: Option<f64>, floor: f64) -> Tensor {
    let (k, lc) = centred_kernels(f, a, bandwidth_sq, floor);
    let kc = &k - k.mean_dim(0, true, f.kind()) - k.mean_dim(1, true, f.kind()) + k.mean(f.kind());
    let (kl, kk, ll) = ((&k * &lc).sum(f.kind()), (&k * &kc).sum(f.kind()), (&lc * &lc).sum(f.kind()));
    if ll.double_value(&[]) <= 0.0 {
        return kl * 0.0;
    }
    kl / (kk * ll).clamp_min(1e-24).sqrt()
}

/// Pairwise squared distances `[n, n]` between the rows of `f`.
fn sq_distances(f: &Tensor) -> Tensor {
    let sq = f.pow_tensor_scalar(2).sum_dim_intlist([1].as_slice(), true, f.kind());
    (&sq + sq.transpose(0, 1) - f.matmul(&f.transpose(0, 1)) * 2.0).clamp_min(0.0)
}

/// The median of the pairwise squared distances between distinct rows (without gradient).
fn median_sq_distance(d2: &Tensor) -> f64 {
    let n = d2.size()[0];
    let upper = tch::no_grad(|| {
        let mask = Tensor::ones([n, n], (Kind::Bool, d2.device())).triu(1);
        d2.masked_select(&mask)
    });
    upper.median().double_value(&[])
}

/// The median heuristic's σ² for the rows of `f`, floored at `floor`: a penalty on values whose
/// spread can shrink toward 0 (a classifier's logits within one class) needs the floor, or the
/// kernel's gradient grows as 1/σ² and training diverges (NaN within 250 steps at β = 1).
///
/// # Shapes
/// `f`: `[n, d]`, n ≥ 2.
pub fn median_bandwidth_sq(f: &Tensor, floor: f64) -> f64 {
    median_sq_distance(&sq_distances(f)).max(floor)
}

/// The Gaussian feature kernel K (σ² = `bandwidth_sq`, or the median heuristic's floored at
/// `floor`) and the centred concept kernel H L H.
fn centred_kernels(f: &Tensor, a: &Tensor, bandwidth_sq: Option<f64>, floor: f64) -> (Tensor, Tensor) {
    let d2 = sq_distances(f);
    let s2 = bandwidth_sq.unwrap_or_else(|| median_sq_distance(&d2).max(floor));
    let k = (-&d2 / (2.0 * s2)).exp();
    let l = a.unsqueeze(1).eq_tensor(&a.unsqueeze(0)).to_kind(f.kind());
    // H L H: L with its row and column means removed (the trace needs only one side centred).
    let lc = &l - l.mean_dim(0, true, f.kind()) - l.mean_dim(1, true, f.kind()) + l.mean(f.kind());
    (k, lc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NumPy reference:
    /// ```python
    /// X = np.array([[0.,0.],[1.,0.],[0.,2.],[1.,1.],[3.,1.]]); a = np.array([0,0,1,1,1]); n = 5
    /// D = ((X[:,None,:]-X[None,:,:])**2).sum(-1); L = (a[:,None]==a[None,:]).astype(float)
    /// H = np.eye(n) - 1/n
    /// np.trace(np.exp(-D/2) @ H @ L @ H) / (n-1)**2          # 0.1481466665283684
    /// med = np.median(D[np.triu_indices(n,1)])              # 4.0
    /// np.trace(np.exp(-D/(2*med)) @ H @ L @ H) / (n-1)**2    # 0.07880681086237447
    /// ```
    #[test]
    fn hsic_matches_a_hand_computed_five_point_example() {
        let f = Tensor::from_slice(&[0.0f64, 0.0, 1.0, 0.0, 0.0, 2.0, 1.0, 1.0, 3.0, 1.0]).reshape([5, 2]);
        let a = Tensor::from_slice(&[0i64, 0, 1, 1, 1]);
        let fixed = hsic(&f, &a, Some(1.0)).double_value(&[]);
        assert!((fixed - 0.1481466665283684).abs() < 1e-12, "{fixed}");
        let median = hsic(&f, &a, None).double_value(&[]);
        assert!((median - 0.07880681086237447).abs() < 1e-12, "{median}");
        // K = exp(-D/2): np.trace(K@H@L@H) / np.sqrt(np.trace(K@H@K@H) * np.trace(L@H@L@H))
        let aligned = normalised_hsic(&f, &a, Some(1.0)).double_value(&[]);
        assert!((aligned - 0.587847293319816).abs() < 1e-12, "{aligned}");
        // The median heuristic's σ² is the docstring's `med` (4.0), and a floor above it wins.
        assert_eq!(median_bandwidth_sq(&f, 0.0), 4.0);
        assert_eq!(median_bandwidth_sq(&f, 10.0), 10.0);
        // The floored form is the plain one below the median and the fixed-σ² one above it.
        let same = |x: Tensor, y: Tensor| (x.double_value(&[]) - y.double_value(&[])).abs() < 1e-15;
        assert!(same(normalised_hsic_floored(&f, &a, 1.0), normalised_hsic(&f, &a, None)));
        assert!(same(normalised_hsic_floored(&f, &a, 10.0), normalised_hsic(&f, &a, Some(10.0))));
    }

    /// The bandwidth scale multiplies the median heuristic's σ²: on the docstring's five points
    /// the median is 4.0, so scale 0.25 is σ² = 1 (the aligned value computed there, 0.5878…).
    #[test]
    fn a_bandwidth_scale_multiplies_the_median() {
        let f = Tensor::from_slice(&[0.0f64, 0.0, 1.0, 0.0, 0.0, 2.0, 1.0, 1.0, 3.0, 1.0]).reshape([5, 2]);
        let a = Tensor::from_slice(&[0i64, 0, 1, 1, 1]);
        let quarter = normalised_hsic_scaled(&f, &a, 0.25, MEDIAN_FLOOR).double_value(&[]);
        assert!((quarter - 0.587847293319816).abs() < 1e-12, "{quarter}");
        let one = normalised_hsic_scaled(&f, &a, 1.0, MEDIAN_FLOOR).double_value(&[]);
        assert_eq!(one, normalised_hsic(&f, &a, None).double_value(&[]));
    }

    /// Standardised values do not depend on the scale or offset of the input (but for the 10⁻⁶
    /// floor on the variance), and stay finite
    /// (gradients too) when every row is the same — a classifier whose logits crowd to a point.
    #[test]
    fn standardising_removes_scale_and_survives_a_collapsed_batch() {
        let _generator = crate::seeded_generator(5);
        let f = Tensor::randn([64, 2], (Kind::Double, tch::Device::Cpu));
        let a = f.select(1, 0).gt(0.3).to_kind(Kind::Int64);
        let base = hsic(&batch_standardised(&f), &a, Some(1.0)).double_value(&[]);
        let moved = hsic(&batch_standardised(&(&f * 40.0 + 7.0)), &a, Some(1.0)).double_value(&[]);
        // Equal up to the 10⁻⁶ added to each variance (relative 10⁻⁶ here).
        assert!((base - moved).abs() < 1e-6 * base && base > 0.0, "{base} vs {moved}");
        let flat = Tensor::ones([64, 2], (Kind::Double, tch::Device::Cpu)).set_requires_grad(true);
        let value = hsic(&batch_standardised(&flat), &a, Some(1.0));
        value.backward();
        assert!(value.double_value(&[]).is_finite());
        assert!(flat.grad().isfinite().all().int64_value(&[]) == 1);
    }

    #[test]
    fn independent_concepts_score_near_zero_and_gradients_flow() {
        let _generator = crate::seeded_generator(3);
        let f = Tensor::randn([400, 3], (Kind::Float, tch::Device::Cpu)).set_requires_grad(true);
        let random = Tensor::randint(2, [400], (Kind::Int64, tch::Device::Cpu));
        let readable = f.select(1, 0).gt(0.0).to_kind(Kind::Int64);
        let (indep, dep) = (hsic(&f, &random, None), hsic(&f, &readable, None));
        assert!(dep.double_value(&[]) > 10.0 * indep.double_value(&[]).abs(), "{dep} vs {indep}");
        dep.backward();
        assert!(f.grad().abs().sum(Kind::Float).double_value(&[]) > 0.0);
    }
}
