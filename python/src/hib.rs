//! HIB's pieces on the user's torch tensors (autograd intact): the match probability (Monte
//! Carlo and Gauss–Hermite quadrature), self-mismatch η, the soft contrastive loss and the VIB
//! objective of Oh et al. (2019), Sections 2.1–2.4, exactly as hedge trains with them.

use hedge_embed::distribution::Embedding;
use hedge_embed::evaluate::match_probability_quadrature;
use hedge_embed::loss::{contrastive, soft_contrastive, vib_loss, MatchHead};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tch::{Kind, Tensor};

use crate::tensor::{check_float, same_device, tensor, to_python, Input};

/// Largest quadrature grid (points^D nodes): beyond it the product rule's memory (B·C1·C2·G·D
/// floats) is what a user notices first, and Monte Carlo is the estimator to use.
const MAX_QUADRATURE_NODES: i64 = 1 << 20;

/// The sizes of a checked embedding, `[B, C, D]` (C = 1 for a `[B, D]` mean), read once.
#[derive(Clone, Copy)]
struct Sizes {
    batch: i64,
    components: i64,
    dim: i64,
}

/// An embedding from a mean `[B, D]` or `[B, C, D]` and a variance of the same shape (or None
/// for points), with its sizes.
fn embedding(mean: &Bound<'_, PyAny>, variance: Option<&Bound<'_, PyAny>>, side: Side) -> PyResult<(Embedding, Sizes)> {
    let (mean_name, var_name) = side.names();
    let mean_in = Input::new(mean, mean_name)?;
    let size = mean_in.check_float(mean_name, &[2, 3])?;
    let variance_in = Input::optional(variance, var_name)?;
    if let Some(v) = &variance_in {
        let vsize = v.check_float(var_name, &[2, 3])?;
        if vsize != size {
            return Err(PyValueError::new_err(format!(
                "`{var_name}` has shape {vsize:?} but `{mean_name}` has {size:?}; they must agree"
            )));
        }
        mean_in.same_device(v, mean_name, var_name)?;
    }
    if size.as_slice().contains(&0) {
        return Err(PyValueError::new_err(format!("`{mean_name}` is empty (shape {size:?})")));
    }
    check_finite(&mean_in, mean_name)?;
    if let Some(v) = &variance_in {
        check_finite(v, var_name)?;
        let smallest = v
            .with_cpu_f32(|values| values.iter().copied().fold(f32::INFINITY, f32::min) as f64)
            .unwrap_or_else(|| v.tensor.min().double_value(&[]));
        if smallest <= 0.0 {
            return Err(PyValueError::new_err(format!(
                "`{var_name}` holds {smallest}: variances must be positive (a model's softplus or exp output is)"
            )));
        }
    }
    let flat = size.as_slice().len() == 2;
    let sizes = if flat {
        Sizes { batch: size[0], components: 1, dim: size[1] }
    } else {
        Sizes { batch: size[0], components: size[1], dim: size[2] }
    };
    let lift = |t: Tensor| if flat { t.unsqueeze(1) } else { t };
    Ok((Embedding { mean: lift(mean_in.tensor), variance: variance_in.map(|v| lift(v.tensor)) }, sizes))
}

/// Which embedding of a call an argument belongs to: its parameters' names.
#[derive(Clone, Copy)]
enum Side {
    Only,
    First,
    Second,
}

impl Side {
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Side::Only => ("mean", "variance"),
            Side::First => ("mean1", "variance1"),
            Side::Second => ("mean2", "variance2"),
        }
    }
}

/// Refuses a tensor holding NaN or ±inf, naming the first such element: every number computed
/// from it would be NaN.
fn check_finite(input: &Input, name: &str) -> PyResult<()> {
    // In place for a contiguous CPU float32 tensor; else one reduction, and the position only
    // when there is one to name.
    let t = &input.tensor;
    let first_bad = input
        .with_cpu_f32(|values| values.iter().position(|v| !v.is_finite()).map(|i| i as i64))
        .unwrap_or_else(|| {
            if t.isfinite().all().int64_value(&[]) == 1 {
                None
            } else {
                Some(t.isfinite().logical_not().flatten(0, -1).nonzero().int64_value(&[0, 0]))
            }
        });
    if let Some(at) = first_bad {
        let value = t.flatten(0, -1).double_value(&[at]);
        return Err(PyValueError::new_err(format!(
            "`{name}` holds {value} at flat position {at}: the inputs must be finite"
        )));
    }
    Ok(())
}

/// Refuses Monte-Carlo `samples` whose K² sample pairs per row would not fit the memory budget.
fn check_samples_memory(samples: i64, sizes: Sizes, what: &str) -> PyResult<()> {
    hedge_embed::embed::mc_footprint(what, "samples", sizes.batch as f64, samples as f64, sizes.dim as usize)
        .check()
        .map_err(crate::value_error)
}

/// The match head σ(−softplus(a_raw)·‖z1 − z2‖ + b) from the user's two scalar parameters.
fn head(a_raw: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, like: &Tensor) -> PyResult<MatchHead> {
    let a_raw = Input::new(a_raw, "a_raw")?;
    let b = Input::new(b, "b")?;
    let on_cpu = like.device() == tch::Device::Cpu;
    let mut scalars = [a_raw, b].into_iter().zip(["a_raw", "b"]).map(|(t, name)| {
        let shape = t.check_float(name, &[0, 1])?;
        if t.numel() != 1 {
            return Err(PyValueError::new_err(format!("`{name}` must hold one value, not {shape:?}")));
        }
        if !(on_cpu && t.on_cpu()) {
            same_device(like, &t.tensor, "the embeddings", name)?;
        }
        // A scalar as it is: a reshape is one more dispatched view per call, and a view of a
        // parameter that requires gradients carries autograd's view bookkeeping into every
        // operation on it, even under no_grad (detaching it instead cost more than it saved,
        // by callgrind's count).
        Ok(if shape.as_slice().is_empty() { t.tensor } else { t.tensor.reshape([] as [i64; 0]) })
    });
    let a_raw = scalars.next().expect("two scalars")?;
    let b = scalars.next().expect("two scalars")?;
    Ok(MatchHead { a_raw, b, matching: Default::default() })
}

fn check_pair(left: (&Embedding, Sizes), right: (&Embedding, Sizes)) -> PyResult<()> {
    if left.1.batch != right.1.batch || left.1.dim != right.1.dim {
        return Err(PyValueError::new_err(format!(
            "the two embeddings must pair row by row in one dimension: {:?} and {:?} (batch, components, dim)",
            left.0.mean.size(),
            right.0.mean.size()
        )));
    }
    if left.0.mean.device() == right.0.mean.device() {
        return Ok(());
    }
    same_device(&left.0.mean, &right.0.mean, "mean1", "mean2")
}

/// The two sides of `B` pairs, checked to pair row by row and, with `samples`, to be sampled
/// with that many draws each.
fn pair_of_embeddings(
    first: (&Bound<'_, PyAny>, Option<&Bound<'_, PyAny>>),
    second: (&Bound<'_, PyAny>, Option<&Bound<'_, PyAny>>),
    samples: Option<i64>,
) -> PyResult<(Embedding, Embedding)> {
    checked_pair(first, second, samples).map(|(left, right, _)| (left, right))
}

/// [`pair_of_embeddings`], with the first side's sizes.
fn checked_pair(
    (mean1, variance1): (&Bound<'_, PyAny>, Option<&Bound<'_, PyAny>>),
    (mean2, variance2): (&Bound<'_, PyAny>, Option<&Bound<'_, PyAny>>),
    samples: Option<i64>,
) -> PyResult<(Embedding, Embedding, Sizes)> {
    let (left, left_sizes) = embedding(mean1, variance1, Side::First)?;
    let (right, right_sizes) = embedding(mean2, variance2, Side::Second)?;
    check_pair((&left, left_sizes), (&right, right_sizes))?;
    if let Some(samples) = samples {
        check_samples(samples, left_sizes, "the first embedding")?;
        check_samples(samples, right_sizes, "the second embedding")?;
        check_samples_memory(samples, left_sizes, "match_probability: the Monte-Carlo sample pairs")?;
    }
    Ok((left, right, left_sizes))
}

/// Monte-Carlo sample pairs (B·K²) from which `match_probability` releases the GIL while it
/// runs (B = 64 at K = 8: about a quarter of a millisecond). Releasing and taking it back costs
/// about 7,000 instructions (callgrind), a microsecond: at B = 1 a fiftieth of the call, for
/// nothing other threads could use.
const RELEASE_GIL_FROM_PAIRS: i64 = 4096;

fn check_samples(samples: i64, sizes: Sizes, side: &str) -> PyResult<()> {
    if samples < 1 || samples % sizes.components != 0 {
        return Err(PyValueError::new_err(format!(
            "`samples` = {samples} must be a positive multiple of {side}'s {} mixture components \
             (samples are stratified over the components)",
            sizes.components
        )));
    }
    Ok(())
}

fn check_is_match(is_match: &Tensor, batch: i64) -> PyResult<()> {
    if is_match.kind() != Kind::Bool || is_match.size() != [batch] {
        return Err(PyValueError::new_err(format!(
            "`is_match` must be a bool tensor of shape [{batch}] (one per pair), not {:?} {:?}",
            is_match.kind(),
            is_match.size()
        )));
    }
    Ok(())
}

/// Monte-Carlo log p(m | z1, z2) and log(1 − p) from samples `[B, K1, D]`, `[B, K2, D]` (Eq. 5).
#[pyfunction]
pub fn hib_log_match(
    py: Python<'_>,
    z1: &Bound<'_, PyAny>,
    z2: &Bound<'_, PyAny>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    crate::guarded(|| {
        let (z1, z2) = (tensor(z1, "z1")?, tensor(z2, "z2")?);
        let s1 = check_float(&z1, "z1", &[3])?;
        let s2 = check_float(&z2, "z2", &[3])?;
        if s1[0] != s2[0] || s1[2] != s2[2] {
            return Err(PyValueError::new_err(format!(
                "`z1` {s1:?} and `z2` {s2:?} must agree in batch and dimension"
            )));
        }
        same_device(&z1, &z2, "z1", "z2")?;
        let (log_p, log_not_p) = head(a_raw, b, &z1)?.log_match(&z1, &z2);
        Ok((to_python(py, &log_p)?, to_python(py, &log_not_p)?))
    })
}

/// p(m | x1, x2) by Monte Carlo with `samples` draws from each embedding (torch's generator).
#[pyfunction]
#[pyo3(signature = (mean1, variance1, mean2, variance2, a_raw, b, samples = 8))]
#[allow(clippy::too_many_arguments)]
pub fn hib_match_probability(
    py: Python<'_>,
    mean1: &Bound<'_, PyAny>,
    variance1: Option<&Bound<'_, PyAny>>,
    mean2: &Bound<'_, PyAny>,
    variance2: Option<&Bound<'_, PyAny>>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    samples: i64,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (left, right, sizes) = checked_pair((mean1, variance1), (mean2, variance2), Some(samples))?;
        let head = head(a_raw, b, &left.mean)?;
        let p = if sizes.batch.saturating_mul(samples).saturating_mul(samples) >= RELEASE_GIL_FROM_PAIRS {
            // Without the GIL (the tensors move into the closure).
            py.detach(move || head.match_probability(&left, &right, samples))
        } else {
            head.match_probability(&left, &right, samples)
        };
        to_python(py, &p)
    })
}

/// p(m | x1, x2) by a Gauss–Hermite product rule with `points` nodes per dimension.
#[pyfunction]
#[pyo3(signature = (mean1, variance1, mean2, variance2, a_raw, b, points = 16))]
#[allow(clippy::too_many_arguments)]
pub fn hib_match_probability_quadrature(
    py: Python<'_>,
    mean1: &Bound<'_, PyAny>,
    variance1: Option<&Bound<'_, PyAny>>,
    mean2: &Bound<'_, PyAny>,
    variance2: Option<&Bound<'_, PyAny>>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    points: usize,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (left, right) = pair_of_embeddings((mean1, variance1), (mean2, variance2), None)?;
        let nodes = (points as i64).checked_pow(left.dim() as u32).filter(|&g| g <= MAX_QUADRATURE_NODES);
        if points == 0 || nodes.is_none() {
            return Err(PyValueError::new_err(format!(
                "`points` = {points} per dimension in D = {} gives more than {MAX_QUADRATURE_NODES} quadrature nodes; \
             use fewer points or the Monte-Carlo estimator (match_probability)",
                left.dim()
            )));
        }
        let head = head(a_raw, b, &left.mean)?;
        let p = match_probability_quadrature(&head, &left, &right, points).map_err(crate::value_error)?;
        to_python(py, &p)
    })
}

/// PCME++'s closed-form sampled distance E‖z1 − z2‖² of aligned rows ([`hedge_embed::csd`]).
#[pyfunction]
pub fn hib_csd(
    py: Python<'_>,
    mean1: &Bound<'_, PyAny>,
    variance1: Option<&Bound<'_, PyAny>>,
    mean2: &Bound<'_, PyAny>,
    variance2: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (left, right) = pair_of_embeddings((mean1, variance1), (mean2, variance2), None)?;
        to_python(py, &hedge_embed::csd::csd(&left, &right))
    })
}

/// p(m | x1, x2) = σ(−a·CSD + b) of aligned rows, differentiable.
#[pyfunction]
pub fn hib_csd_match_probability(
    py: Python<'_>,
    mean1: &Bound<'_, PyAny>,
    variance1: Option<&Bound<'_, PyAny>>,
    mean2: &Bound<'_, PyAny>,
    variance2: Option<&Bound<'_, PyAny>>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (left, right) = pair_of_embeddings((mean1, variance1), (mean2, variance2), None)?;
        let head = head(a_raw, b, &left.mean)?;
        to_python(py, &hedge_embed::csd::match_probability(&head, &left, &right))
    })
}

/// The CSD loss per pair: binary cross-entropy of σ(−a·CSD + b), differentiable.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn hib_csd_loss(
    py: Python<'_>,
    mean1: &Bound<'_, PyAny>,
    variance1: Option<&Bound<'_, PyAny>>,
    mean2: &Bound<'_, PyAny>,
    variance2: Option<&Bound<'_, PyAny>>,
    is_match: &Bound<'_, PyAny>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (left, right) = pair_of_embeddings((mean1, variance1), (mean2, variance2), None)?;
        let is_match = tensor(is_match, "is_match")?;
        check_is_match(&is_match, left.batch())?;
        let head = head(a_raw, b, &left.mean)?;
        to_python(py, &hedge_embed::csd::csd_loss(&head, &left, &right, &is_match))
    })
}

/// The closed form registered as `form` ([`hedge_embed::losses::closed_form_named`]); a
/// ValueError lists the names there are, or says that `form` needs the variances not given.
fn closed_form(form: &str, variances_given: bool) -> PyResult<&'static hedge_embed::loss::ClosedForm> {
    let found = hedge_embed::losses::closed_form_named(form).map_err(crate::value_error)?;
    if found.distributions_only && !variances_given {
        return Err(PyValueError::new_err(format!(
            "{form} scores distributions: give every embedding its variance (a point embedding has none)"
        )));
    }
    Ok(found)
}

/// p(m | x1, x2) of aligned rows under a registered loss's closed form (its name: `form`),
/// differentiable.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn hib_closed_form_match_probability(
    py: Python<'_>,
    form: &str,
    mean1: &Bound<'_, PyAny>,
    variance1: Option<&Bound<'_, PyAny>>,
    mean2: &Bound<'_, PyAny>,
    variance2: Option<&Bound<'_, PyAny>>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let form = closed_form(form, variance1.is_some() && variance2.is_some())?;
        let (left, right) = pair_of_embeddings((mean1, variance1), (mean2, variance2), None)?;
        let head = head(a_raw, b, &left.mean)?;
        to_python(py, &(form.probability)(&head, &left, &right))
    })
}

/// η(x) = 1 − p(m | x, x) under a registered loss's closed form (its name: `form`), differentiable.
#[pyfunction]
pub fn hib_closed_form_self_mismatch(
    py: Python<'_>,
    form: &str,
    mean: &Bound<'_, PyAny>,
    variance: Option<&Bound<'_, PyAny>>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let form = closed_form(form, variance.is_some())?;
        let (e, _) = embedding(mean, variance, Side::Only)?;
        let head = head(a_raw, b, &e.mean)?;
        to_python(py, &(form.self_mismatch)(&head, &e))
    })
}

/// The names of the registered losses' closed forms.
#[pyfunction]
pub fn hib_closed_forms() -> Vec<&'static str> {
    hedge_embed::losses::closed_forms().map(|f| f.name).collect()
}

/// Self-mismatch η(x) = 1 − p(m | x, x) (Eq. 9) by Monte Carlo.
#[pyfunction]
#[pyo3(signature = (mean, variance, a_raw, b, samples = 8))]
pub fn hib_self_mismatch(
    py: Python<'_>,
    mean: &Bound<'_, PyAny>,
    variance: Option<&Bound<'_, PyAny>>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    samples: i64,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (e, sizes) = embedding(mean, variance, Side::Only)?;
        check_samples(samples, sizes, "the embedding")?;
        check_samples_memory(samples, sizes, "self_mismatch: the Monte-Carlo sample pairs")?;
        let head = head(a_raw, b, &e.mean)?;
        to_python(py, &head.self_mismatch(&e, samples))
    })
}

/// The soft contrastive loss per pair (Eq. 3) from log p and log(1 − p).
#[pyfunction]
pub fn hib_soft_contrastive(
    py: Python<'_>,
    log_p: &Bound<'_, PyAny>,
    log_not_p: &Bound<'_, PyAny>,
    is_match: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (log_p, log_not_p, is_match) =
            (tensor(log_p, "log_p")?, tensor(log_not_p, "log_not_p")?, tensor(is_match, "is_match")?);
        let size = check_float(&log_p, "log_p", &[1])?;
        if log_not_p.size() != size {
            return Err(PyValueError::new_err(format!("`log_not_p` must have the shape of `log_p`, {size:?}")));
        }
        check_is_match(&is_match, size[0])?;
        to_python(py, &soft_contrastive(&log_p, &log_not_p, &is_match))
    })
}

/// The contrastive loss of point embeddings (Eq. 1) per pair.
#[pyfunction]
#[pyo3(signature = (z1, z2, is_match, margin = 1.0))]
pub fn hib_contrastive(
    py: Python<'_>,
    z1: &Bound<'_, PyAny>,
    z2: &Bound<'_, PyAny>,
    is_match: &Bound<'_, PyAny>,
    margin: f64,
) -> PyResult<Py<PyAny>> {
    crate::guarded(|| {
        let (z1, z2, is_match) = (Input::new(z1, "z1")?, Input::new(z2, "z2")?, tensor(is_match, "is_match")?);
        let size = z1.check_float("z1", &[2])?;
        if z2.tensor.size() != size.as_slice() {
            return Err(PyValueError::new_err(format!("`z2` must have the shape of `z1`, {size:?}")));
        }
        check_is_match(&is_match, size[0])?;
        if !(margin.is_finite() && margin > 0.0) {
            return Err(PyValueError::new_err(format!("`margin` = {margin} must be finite and > 0")));
        }
        check_finite(&z1, "z1")?;
        check_finite(&z2, "z2")?;
        to_python(py, &contrastive(&z1.tensor, &z2.tensor, &is_match, margin))
    })
}

/// The VIB embedding loss (Eq. 8) of a batch of pairs: (total, pair, kl), each a scalar tensor.
#[pyfunction]
#[pyo3(signature = (mean1, variance1, mean2, variance2, is_match, a_raw, b, samples = 8, beta = 1e-4))]
#[allow(clippy::too_many_arguments)]
pub fn hib_vib_loss(
    py: Python<'_>,
    mean1: &Bound<'_, PyAny>,
    variance1: Option<&Bound<'_, PyAny>>,
    mean2: &Bound<'_, PyAny>,
    variance2: Option<&Bound<'_, PyAny>>,
    is_match: &Bound<'_, PyAny>,
    a_raw: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    samples: i64,
    beta: f64,
) -> PyResult<(Py<PyAny>, Py<PyAny>, Py<PyAny>)> {
    crate::guarded(|| {
        let (left, right) = pair_of_embeddings((mean1, variance1), (mean2, variance2), Some(samples))?;
        if !(beta >= 0.0 && beta.is_finite()) {
            return Err(PyValueError::new_err(format!("`beta` = {beta} must be finite and ≥ 0")));
        }
        let is_match = tensor(is_match, "is_match")?;
        check_is_match(&is_match, left.batch())?;
        same_device(&left.mean, &is_match, "mean1", "is_match")?;
        let head = head(a_raw, b, &left.mean)?;
        let loss = vib_loss(&head, &left, &right, &is_match, samples, beta);
        Ok((to_python(py, &loss.total)?, to_python(py, &loss.pair)?, to_python(py, &loss.kl)?))
    })
}
