//! The Bayesian toolbox on NumPy arrays: exact and sparse GP regression, Bayesian linear
//! regression (known noise and normal–inverse-gamma) and Bayesian probit regression. Settings
//! arrive as the library's own config structs in JSON (hedge/bayes.py writes them from the
//! estimator's parameters) and are checked by the library before any data is read.

use faer::Mat;
use hedge_bayes::linear::{BayesLinearConfig, FittedBayesLinear, FittedNigLinear, NigLinearConfig};
use hedge_bayes::probit::{FittedProbit, ProbitConfig};
use hedge_bayes::{Fit, FittedGp, FittedSparseGp, GpConfig, ParamGuard, Predict, Prediction, SparseGpConfig};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use serde::de::DeserializeOwned;

use crate::value_error;

/// A `[n, d]` float64 array as a faer matrix.
pub(crate) fn matrix(x: &PyReadonlyArray2<'_, f64>) -> Mat<f64> {
    let view = x.as_array();
    Mat::from_fn(view.nrows(), view.ncols(), |i, j| view[[i, j]])
}

pub(crate) fn matrix_to_numpy<'py>(py: Python<'py>, m: &Mat<f64>) -> Bound<'py, PyArray2<f64>> {
    let rows: Vec<Vec<f64>> = (0..m.nrows()).map(|i| (0..m.ncols()).map(|j| m[(i, j)]).collect()).collect();
    PyArray2::from_vec2(py, &rows).expect("rows of equal length")
}

pub(crate) fn config<C: DeserializeOwned>(json: &str, what: &str) -> PyResult<C> {
    serde_json::from_str(json).map_err(|e| value_error(format!("{what} settings: {e}")))
}

/// A predictive as arrays: (mean `[m]`, latent variance `[m]`, noise variance, degrees of freedom or None).
type PredictionArrays<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>, f64, Option<f64>);

fn prediction_arrays(py: Python<'_>, p: Prediction) -> PredictionArrays<'_> {
    (p.mean.into_pyarray(py), p.latent_variance.into_pyarray(py), p.noise_variance, p.degrees_of_freedom)
}

fn predict_with<'py>(
    py: Python<'py>,
    model: &(impl Predict + Sync),
    x: PyReadonlyArray2<'_, f64>,
) -> PyResult<PredictionArrays<'py>> {
    let x = matrix(&x);
    let p = py.detach(|| model.predict(x.as_ref())).map_err(value_error)?;
    Ok(prediction_arrays(py, p))
}

/// An exact or a sparse GP.
enum GpModel {
    Exact(FittedGp),
    Sparse(FittedSparseGp),
}

/// A GP — exact, or sparse (FITC or VFE) — conditioned on its training data.
#[pyclass(module = "hedge._hedge")]
pub struct GpPosterior(GpModel);

impl GpPosterior {
    fn hyper(&self) -> &hedge_bayes::GpHyperParameters {
        match &self.0 {
            GpModel::Exact(m) => &m.hyper,
            GpModel::Sparse(m) => &m.hyper,
        }
    }
    fn scaler(&self) -> &hedge_bayes::gp::TargetScaler {
        match &self.0 {
            GpModel::Exact(m) => &m.scaler,
            GpModel::Sparse(m) => &m.scaler,
        }
    }
}

#[pymethods]
impl GpPosterior {
    /// (mean, latent variance, noise variance, None) on the original target scale.
    fn predict<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'_, f64>) -> PyResult<PredictionArrays<'py>> {
        crate::guarded(|| match &self.0 {
            GpModel::Exact(m) => predict_with(py, m, x),
            GpModel::Sparse(m) => predict_with(py, m, x),
        })
    }
    /// s² on the original target scale.
    #[getter]
    fn signal_variance(&self) -> f64 {
        self.scaler().variance(self.hyper().kernel.signal_variance)
    }
    /// σ² on the original target scale.
    #[getter]
    fn noise_variance(&self) -> f64 {
        self.scaler().variance(self.hyper().noise_variance)
    }
    /// ℓ per input (one value for the isotropic kernel), in the inputs' units.
    #[getter]
    fn lengthscales(&self) -> Vec<f64> {
        self.hyper().kernel.lengthscales.clone()
    }
    /// The fitted objective on the original target scale: the exact GP's log marginal
    /// likelihood log p(y | X, θ), FITC's likelihood, or VFE's lower bound.
    #[getter]
    fn objective(&self) -> f64 {
        match &self.0 {
            GpModel::Exact(m) => m.log_marginal_likelihood(),
            GpModel::Sparse(m) => m.objective(),
        }
    }
    /// The targets' mean and scale the GP was fitted with (0 and 1 without normalise_y).
    #[getter]
    fn target_scaler(&self) -> (f64, f64) {
        (self.scaler().mean, self.scaler().scale)
    }
    /// The hyper-parameters on the standardised target scale, as JSON: with the training data
    /// (and the pseudo-inputs of a sparse GP), what `gp_condition` and `sparse_gp_condition`
    /// rebuild this posterior from (a pickled estimator keeps these, not the factorisation).
    #[getter]
    fn hyper_json(&self) -> PyResult<String> {
        serde_json::to_string(self.hyper()).map_err(value_error)
    }
    /// The pseudo-inputs Z, `[m, d]` (None for the exact GP).
    #[getter]
    fn inducing_points<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
        match &self.0 {
            GpModel::Exact(_) => None,
            GpModel::Sparse(m) => Some(matrix_to_numpy(py, &m.inducing)),
        }
    }
}

#[pyfunction]
pub fn gp_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
) -> PyResult<GpPosterior> {
    crate::guarded(|| {
        let checked = config::<GpConfig>(settings, "GP")?.check().map_err(value_error)?;
        let (x, y) = (matrix(&x), y.as_slice()?.to_vec());
        let fitted = py.detach(|| checked.fit(x.as_ref(), &y)).map_err(value_error)?;
        Ok(GpPosterior(GpModel::Exact(fitted)))
    })
}

#[pyfunction]
pub fn sparse_gp_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
) -> PyResult<GpPosterior> {
    crate::guarded(|| {
        let checked = config::<SparseGpConfig>(settings, "sparse GP")?.check().map_err(value_error)?;
        let (x, y) = (matrix(&x), y.as_slice()?.to_vec());
        let fitted = py.detach(|| checked.fit(x.as_ref(), &y)).map_err(value_error)?;
        Ok(GpPosterior(GpModel::Sparse(fitted)))
    })
}

/// A GP conditioned with fixed hyper-parameters (`hyper`, JSON, on the standardised scale as
/// `GpPosterior.hyper_json` gives them): the posterior `gp_fit` ended with, rebuilt without the
/// search (the same factorisation of the same matrix).
#[pyfunction]
pub fn gp_condition(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
    hyper: &str,
) -> PyResult<GpPosterior> {
    crate::guarded(|| {
        let checked = config::<GpConfig>(settings, "GP")?.check().map_err(value_error)?;
        let hyper = config::<hedge_bayes::GpHyperParameters>(hyper, "GP hyper-parameter")?;
        let (x, y) = (matrix(&x), y.as_slice()?.to_vec());
        let fitted = py.detach(|| hedge_bayes::gp::fit_with(&checked, x.as_ref(), &y, hyper)).map_err(value_error)?;
        Ok(GpPosterior(GpModel::Exact(fitted)))
    })
}

/// A sparse GP conditioned with fixed hyper-parameters and pseudo-inputs `z` `[m, d]`.
#[pyfunction]
pub fn sparse_gp_condition(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
    hyper: &str,
    z: PyReadonlyArray2<'_, f64>,
) -> PyResult<GpPosterior> {
    crate::guarded(|| {
        let checked = config::<SparseGpConfig>(settings, "sparse GP")?.check().map_err(value_error)?;
        let hyper = config::<hedge_bayes::GpHyperParameters>(hyper, "GP hyper-parameter")?;
        let (x, y, z) = (matrix(&x), y.as_slice()?.to_vec(), matrix(&z));
        let fitted =
            py.detach(|| hedge_bayes::sparse::fit_with(&checked, x.as_ref(), &y, hyper, z)).map_err(value_error)?;
        Ok(GpPosterior(GpModel::Sparse(fitted)))
    })
}

/// The posterior of a Bayesian linear regression: Gaussian with known noise, or
/// normal–inverse-gamma (Student-t predictive).
#[pyclass(module = "hedge._hedge")]
pub struct LinearPosterior {
    pub(crate) known_noise: Option<FittedBayesLinear>,
    pub(crate) nig: Option<FittedNigLinear>,
}

impl LinearPosterior {
    fn model(&self) -> &dyn Predict {
        match (&self.known_noise, &self.nig) {
            (Some(m), _) => m,
            (None, Some(m)) => m,
            (None, None) => unreachable!("a LinearPosterior holds one model"),
        }
    }
}

#[pymethods]
impl LinearPosterior {
    fn predict<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'_, f64>) -> PyResult<PredictionArrays<'py>> {
        crate::guarded(|| {
            let x = matrix(&x);
            let p = self.model().predict(x.as_ref()).map_err(value_error)?;
            Ok(prediction_arrays(py, p))
        })
    }
    /// The posterior mean of the weights.
    #[getter]
    fn coef<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        match (&self.known_noise, &self.nig) {
            (Some(m), _) => m.mean.clone().into_pyarray(py),
            (_, Some(m)) => m.mean.clone().into_pyarray(py),
            _ => unreachable!("a LinearPosterior holds one model"),
        }
    }
    /// log p(y | X) (known noise) — None for the normal–inverse-gamma model.
    #[getter]
    fn log_evidence(&self) -> Option<f64> {
        self.known_noise.as_ref().map(|m| m.log_evidence)
    }
    /// Everything the posterior is, for `linear_from_parts` (pickling): (known noise?, mean,
    /// covariance, σ² or ã, None or b̃, log evidence or None).
    #[allow(clippy::type_complexity)]
    fn parts<'py>(
        &self,
        py: Python<'py>,
    ) -> (bool, Bound<'py, PyArray1<f64>>, Bound<'py, PyArray2<f64>>, f64, Option<f64>, Option<f64>) {
        match (&self.known_noise, &self.nig) {
            (Some(m), _) => (
                true,
                m.mean.clone().into_pyarray(py),
                matrix_to_numpy(py, &m.covariance),
                m.noise_variance,
                None,
                Some(m.log_evidence),
            ),
            (_, Some(m)) => (
                false,
                m.mean.clone().into_pyarray(py),
                matrix_to_numpy(py, &m.covariance),
                m.a,
                Some(m.b),
                Some(m.log_evidence),
            ),
            _ => unreachable!("a LinearPosterior holds one model"),
        }
    }
}

/// A `[d]` mean and the `[d, d]` matrix beside it (a posterior's covariance, LEACE's projection)
/// of a fitted model rebuilt from its parts, checked: `what` names the matrix in the error.
pub(crate) fn mean_and_square(
    mean: PyReadonlyArray1<'_, f64>,
    square: PyReadonlyArray2<'_, f64>,
    what: &str,
) -> PyResult<(Vec<f64>, Mat<f64>)> {
    let mean = mean.as_slice()?.to_vec();
    let square = matrix(&square);
    if square.nrows() != mean.len() || square.ncols() != mean.len() {
        return Err(value_error(format!(
            "{what} must be [{0}, {0}] for a mean of {0} values; got [{1}, {2}]",
            mean.len(),
            square.nrows(),
            square.ncols()
        )));
    }
    Ok((mean, square))
}

/// A `LinearPosterior` from `LinearPosterior.parts()` (unpickling).
#[pyfunction]
#[pyo3(signature = (known_noise, mean, covariance, first, second, log_evidence))]
pub fn linear_from_parts(
    known_noise: bool,
    mean: PyReadonlyArray1<'_, f64>,
    covariance: PyReadonlyArray2<'_, f64>,
    first: f64,
    second: Option<f64>,
    log_evidence: Option<f64>,
) -> PyResult<LinearPosterior> {
    crate::guarded(|| {
        let (mean, covariance) = mean_and_square(mean, covariance, "a posterior's covariance")?;
        let log_evidence = log_evidence.unwrap_or(f64::NAN);
        if known_noise {
            let m = FittedBayesLinear { mean, covariance, noise_variance: first, log_evidence };
            Ok(LinearPosterior { known_noise: Some(m), nig: None })
        } else {
            let b = second.ok_or_else(|| value_error("a normal–inverse-gamma posterior needs b̃"))?;
            let m = FittedNigLinear { mean, covariance, a: first, b, log_evidence };
            Ok(LinearPosterior { known_noise: None, nig: Some(m) })
        }
    })
}

#[pyfunction]
pub fn linear_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
    known_noise: bool,
) -> PyResult<LinearPosterior> {
    crate::guarded(|| {
        let (x, y) = (matrix(&x), y.as_slice()?.to_vec());
        if known_noise {
            let checked =
                config::<BayesLinearConfig>(settings, "Bayesian linear regression")?.check().map_err(value_error)?;
            let m = py.detach(|| checked.fit(x.as_ref(), &y)).map_err(value_error)?;
            Ok(LinearPosterior { known_noise: Some(m), nig: None })
        } else {
            let checked =
                config::<NigLinearConfig>(settings, "normal–inverse-gamma regression")?.check().map_err(value_error)?;
            let m = py.detach(|| checked.fit(x.as_ref(), &y)).map_err(value_error)?;
            Ok(LinearPosterior { known_noise: None, nig: Some(m) })
        }
    })
}

/// The Laplace posterior of a Bayesian probit regression.
#[pyclass(module = "hedge._hedge")]
pub struct ProbitPosterior(pub(crate) FittedProbit);

#[pymethods]
impl ProbitPosterior {
    /// p(y = 1 | x) per row, the weights' uncertainty integrated out.
    fn predict_proba<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'_, f64>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        crate::guarded(|| {
            let x = matrix(&x);
            Ok(self.0.predict_proba(x.as_ref()).map_err(value_error)?.into_pyarray(py))
        })
    }
    #[getter]
    fn coef<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.0.mean.clone().into_pyarray(py)
    }
    #[getter]
    fn covariance<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        matrix_to_numpy(py, &self.0.covariance)
    }
    #[getter]
    fn log_evidence(&self) -> f64 {
        self.0.log_evidence
    }
    /// Newton iterations the Laplace fit took.
    #[getter]
    fn iterations(&self) -> usize {
        self.0.iterations
    }
}

/// A `ProbitPosterior` from its mode, covariance, log evidence and iterations (unpickling).
#[pyfunction]
pub fn probit_from_parts(
    mean: PyReadonlyArray1<'_, f64>,
    covariance: PyReadonlyArray2<'_, f64>,
    log_evidence: f64,
    iterations: usize,
) -> PyResult<ProbitPosterior> {
    crate::guarded(|| {
        let (mean, covariance) = mean_and_square(mean, covariance, "a posterior's covariance")?;
        Ok(ProbitPosterior(FittedProbit { mean, covariance, log_evidence, iterations }))
    })
}

#[pyfunction]
pub fn probit_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    labels: PyReadonlyArray1<'_, u8>,
    settings: &str,
) -> PyResult<ProbitPosterior> {
    crate::guarded(|| {
        let checked = config::<ProbitConfig>(settings, "probit regression")?.check().map_err(value_error)?;
        let (x, labels) = (matrix(&x), labels.as_slice()?.to_vec());
        py.detach(|| checked.fit(x.as_ref(), &labels)).map(ProbitPosterior).map_err(value_error)
    })
}
