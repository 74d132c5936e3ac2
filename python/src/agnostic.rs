//! Concept erasure and the fresh-probe audit on feature arrays a user brings: LEACE (fit,
//! transform) and the audit's probes — linear and tuned MLP, with the chance interval and the
//! mutual-information lower bound — on features or on a classifier's decisions (the floor).

use hedge_agnostic::audit::{probe, probe_pair, ProbeConfig, ProbeKind};
use hedge_agnostic::eraser::EraserSpec;
use hedge_agnostic::erasers::ERASERS;
use hedge_agnostic::erasure::{Erasure, Leace};
use hedge_agnostic::ladder::{self, LadderConfig};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tch::{Kind, Tensor};

use crate::bayes::matrix_to_numpy;
use crate::value_error;

/// A fitted LEACE eraser r(x) = x − strength · P(x − μ).
#[pyclass(module = "hedge._hedge")]
pub struct LeaceEraser(Leace);

#[pymethods]
impl LeaceEraser {
    /// `x` `[n, d]` with the concept erased at `strength` ∈ [0, 1].
    fn erase<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'_, f64>,
        strength: f64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        crate::guarded(|| {
            let (n, d) = (x.as_array().nrows(), x.as_array().ncols());
            if d != self.0.mean.len() {
                return Err(PyValueError::new_err(format!(
                    "`X` has {d} features but the eraser was fitted on {}",
                    self.0.mean.len()
                )));
            }
            let erased = self.0.erase(x.as_slice()?, strength).map_err(value_error)?;
            Ok(numpy::ndarray::Array2::from_shape_vec((n, d), erased).expect("n·d values").into_pyarray(py))
        })
    }
    /// μ, `[d]`.
    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.0.mean.clone().into_pyarray(py)
    }
    /// P, `[d, d]` (acts on column vectors).
    #[getter]
    fn projection<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        matrix_to_numpy(py, &self.0.projection)
    }
    /// The number of dimensions erased.
    #[getter]
    fn rank(&self) -> usize {
        self.0.rank
    }
}

/// A `LeaceEraser` from its μ `[d]`, P `[d, d]` and rank (unpickling).
#[pyfunction]
pub fn leace_from_parts(
    mean: PyReadonlyArray1<'_, f64>,
    projection: PyReadonlyArray2<'_, f64>,
    rank: usize,
) -> PyResult<LeaceEraser> {
    crate::guarded(|| {
        let (mean, projection) = crate::bayes::mean_and_square(mean, projection, "a LEACE projection")?;
        Ok(LeaceEraser(Leace { mean, projection, rank }))
    })
}

/// A fitted registered eraser (`hedge.agnostic.Eraser`): any kind of
/// `hedge_agnostic::erasers::ERASERS`, fitted at strength 1 and applied at any strength.
#[pyclass(module = "hedge._hedge")]
pub struct FittedEraser {
    // A Mutex makes the class Sync (a fitted eraser holds libtorch tensors, which are Send only).
    erasure: std::sync::Mutex<Erasure>,
    features: usize,
    rank: usize,
    reads_concept: bool,
}

#[pymethods]
impl FittedEraser {
    /// `x` `[n, d]` with the concept erased at `strength` ∈ [0, 1]; `concept` `[n]` is needed
    /// by erasers that read each row's label (`reads_concept`).
    #[pyo3(signature = (x, concept, strength))]
    fn erase<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'_, f64>,
        concept: Option<PyReadonlyArray1<'_, i64>>,
        strength: f64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        crate::guarded(|| {
            let (n, d) = (x.as_array().nrows(), x.as_array().ncols());
            if d != self.features {
                return Err(PyValueError::new_err(format!(
                    "`X` has {d} features but the eraser was fitted on {}",
                    self.features
                )));
            }
            if !(0.0..=1.0).contains(&strength) {
                return Err(PyValueError::new_err(format!("strength {strength} must lie in [0, 1]")));
            }
            let labels = match (&concept, self.reads_concept) {
                (Some(c), _) if c.len()? != n => {
                    return Err(PyValueError::new_err(format!("`concept` has {} labels for {n} rows", c.len()?)))
                }
                (Some(c), _) => Tensor::from_slice(c.as_slice()?),
                (None, false) => Tensor::zeros([n as i64], (Kind::Int64, tch::Device::Cpu)),
                (None, true) => {
                    return Err(PyValueError::new_err(
                        "this eraser reads each row's concept label when erasing: pass `concept`",
                    ))
                }
            };
            let f = Tensor::from_slice(x.as_slice()?).reshape([n as i64, d as i64]);
            let mut erasure = self.erasure.lock().map_err(|_| PyValueError::new_err("the eraser is unusable"))?;
            erasure.set_strength(strength).map_err(value_error)?;
            let erased: Vec<f64> = Vec::try_from(erasure.erase(&f, &labels).flatten(0, -1)).map_err(value_error)?;
            Ok(numpy::ndarray::Array2::from_shape_vec((n, d), erased).expect("n·d values").into_pyarray(py))
        })
    }
    /// The number of dimensions erased.
    #[getter]
    fn rank(&self) -> usize {
        self.rank
    }
    /// Whether erasing needs each row's concept label.
    #[getter]
    fn reads_concept(&self) -> bool {
        self.reads_concept
    }
}

/// Fits the registered eraser `kind` with `params` (a JSON object) on `x` `[n, d]` and `concept`.
#[pyfunction]
#[pyo3(signature = (kind, params, x, concept, weights = None, seed = 0))]
pub fn eraser_fit(
    py: Python<'_>,
    kind: &str,
    params: &str,
    x: PyReadonlyArray2<'_, f64>,
    concept: PyReadonlyArray1<'_, i64>,
    weights: Option<PyReadonlyArray1<'_, f64>>,
    seed: u64,
) -> PyResult<FittedEraser> {
    crate::guarded(|| {
        let mut spec = EraserSpec::new(kind);
        let params: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(params).map_err(|e| PyValueError::new_err(format!("eraser parameters: {e}")))?;
        for (k, v) in params {
            spec = spec.with(&k, v);
        }
        let eraser = spec.build().map_err(value_error)?;
        let (n, d) = (x.as_array().nrows(), x.as_array().ncols());
        let (x, z) = (x.as_slice()?.to_vec(), concept.as_slice()?.to_vec());
        let w = weights.map(|w| w.as_slice().map(<[f64]>::to_vec)).transpose()?;
        let erasure = py
            .detach(|| {
                let f = Tensor::from_slice(&x).reshape([n as i64, d as i64]);
                Erasure::fit(eraser.as_ref(), 1.0, &f, &Tensor::from_slice(&z), w.as_deref(), seed)
            })
            .map_err(value_error)?;
        Ok(FittedEraser {
            features: d,
            rank: erasure.rank(),
            reads_concept: erasure.reads_concept(),
            erasure: std::sync::Mutex::new(erasure),
        })
    })
}

/// The registered erasers: (kind, what it does).
#[pyfunction]
pub fn eraser_kinds() -> Vec<(String, String)> {
    ERASERS.iter().map(|r| (r.kind.to_string(), r.about.to_string())).collect()
}

#[pyfunction]
#[pyo3(signature = (x, concept, weights = None))]
pub fn leace_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    concept: PyReadonlyArray1<'_, i64>,
    weights: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<LeaceEraser> {
    crate::guarded(|| {
        let d = x.as_array().ncols();
        let (x, z) = (x.as_slice()?.to_vec(), concept.as_slice()?.to_vec());
        let w = weights.map(|w| w.as_slice().map(<[f64]>::to_vec)).transpose()?;
        py.detach(|| Leace::fit_weighted(&x, d, &z, w.as_deref())).map(LeaceEraser).map_err(value_error)
    })
}

/// Rows `[n, d]` as a float32 CPU tensor (the probes train in float32).
fn features(x: &PyReadonlyArray2<'_, f64>) -> PyResult<Tensor> {
    let shape = x.as_array().shape().to_vec();
    Ok(Tensor::from_slice(x.as_slice()?).reshape([shape[0] as i64, shape[1] as i64]).to_kind(Kind::Float))
}

fn labels(a: &PyReadonlyArray1<'_, i64>) -> PyResult<Tensor> {
    Ok(Tensor::from_slice(a.as_slice()?))
}

fn json(r: &impl serde::Serialize) -> String {
    serde_json::to_string(r).expect("a probe result serialises")
}

/// One probe (`"linear"` or `"mlp"`, untuned) trained on (train features → concept) and scored
/// on the test rows: the result as JSON (hedge.agnostic.ProbeResult reads it).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn probe_one(
    py: Python<'_>,
    train_features: PyReadonlyArray2<'_, f64>,
    train_concept: PyReadonlyArray1<'_, i64>,
    test_features: PyReadonlyArray2<'_, f64>,
    test_concept: PyReadonlyArray1<'_, i64>,
    kind: &str,
    steps: usize,
    seed: u64,
) -> PyResult<String> {
    crate::guarded(|| {
        let (tf, ta, sf, sa) =
            (features(&train_features)?, labels(&train_concept)?, features(&test_features)?, labels(&test_concept)?);
        let kind = match kind {
            "linear" => ProbeKind::Linear,
            "mlp" => ProbeKind::Mlp,
            // The ladder's other rungs, tuned as in the audit.
            rung => {
                let family = LadderConfig::default()
                    .with_steps(steps)
                    .rungs()
                    .into_iter()
                    .find(|f| f.name() == rung && !matches!(rung, "linear" | "mlp"))
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "probe kind {rung:?}: use 'linear', 'mlp' (64 units, untuned), 'quadratic', 'rbf' or 'forest'"
                        ))
                    })?;
                let r = py.detach(move || family.fit_and_score(&tf, &ta, &sf, &sa, seed)).map_err(value_error)?;
                return Ok(json(&r));
            }
        };
        let config = ProbeConfig { steps, seed, ..ProbeConfig::new(kind) };
        let r = py.detach(move || probe(&tf, &ta, &sf, &sa, &config)).map_err(value_error)?;
        Ok(json(&r))
    })
}

/// The probe ladder (`hedge_agnostic::ladder`) on the features and, given the task classifier's
/// decisions (train and test logits), on those too: the `LadderAudit` as JSON.
#[pyfunction]
#[pyo3(signature = (train_features, train_concept, test_features, test_concept, train_decisions, test_decisions, steps, seed))]
#[allow(clippy::too_many_arguments)]
pub fn probe_ladder(
    py: Python<'_>,
    train_features: PyReadonlyArray2<'_, f64>,
    train_concept: PyReadonlyArray1<'_, i64>,
    test_features: PyReadonlyArray2<'_, f64>,
    test_concept: PyReadonlyArray1<'_, i64>,
    train_decisions: Option<PyReadonlyArray2<'_, f64>>,
    test_decisions: Option<PyReadonlyArray2<'_, f64>>,
    steps: usize,
    seed: u64,
) -> PyResult<String> {
    crate::guarded(|| {
        if steps == 0 {
            return Err(PyValueError::new_err("`steps` must be at least 1 (the audit's default: 500)"));
        }
        let (tf, ta, sf, sa) =
            (features(&train_features)?, labels(&train_concept)?, features(&test_features)?, labels(&test_concept)?);
        let decisions = match (train_decisions, test_decisions) {
            (Some(t), Some(s)) => Some((features(&t)?, features(&s)?)),
            (None, None) => None,
            _ => return Err(PyValueError::new_err("pass both `train_decisions` and `test_decisions`, or neither")),
        };
        let ladder = py
            .detach(move || {
                let rungs = LadderConfig::default().with_steps(steps).rungs();
                ladder::probe_ladder(&rungs, &tf, &ta, &sf, &sa, decisions.as_ref().map(|(t, s)| (t, s)), seed)
            })
            .map_err(value_error)?;
        Ok(json(&ladder))
    })
}

/// The audit's probe pair: a linear probe and the MLP probe tuned on a validation split, as JSON.
#[pyfunction]
pub fn probe_linear_and_mlp(
    py: Python<'_>,
    train_features: PyReadonlyArray2<'_, f64>,
    train_concept: PyReadonlyArray1<'_, i64>,
    test_features: PyReadonlyArray2<'_, f64>,
    test_concept: PyReadonlyArray1<'_, i64>,
    steps: usize,
    seed: u64,
) -> PyResult<(String, String)> {
    crate::guarded(|| {
        let (tf, ta, sf, sa) =
            (features(&train_features)?, labels(&train_concept)?, features(&test_features)?, labels(&test_concept)?);
        let (linear, mlp) = py.detach(move || probe_pair(&tf, &ta, &sf, &sa, steps, seed)).map_err(value_error)?;
        Ok((json(&linear), json(&mlp)))
    })
}
