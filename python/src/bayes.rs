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

/// An exact GP conditioned on its training data.
#[pyclass(module = "hedge._hedge")]
pub struct GpPosterior(FittedGp);

#[pymethods]
impl GpPosterior {
    /// (mean, latent variance, noise variance, None) on the original target scale.
    fn predict<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'_, f64>) -> PyResult<PredictionArrays<'py>> {
        predict_with(py, &self.0, x)
    }
    #[getter]
    fn signal_variance(&self) -> f64 {
        self.0.signal_variance()
    }
    #[getter]
    fn noise_variance(&self) -> f64 {
        self.0.noise_variance()
    }
    /// ℓ per input (one value for the isotropic kernel), in the inputs' units.
    #[getter]
    fn lengthscales(&self) -> Vec<f64> {
        self.0.hyper.kernel.lengthscales.clone()
    }
    /// log p(y | X, θ) of the training targets on their original scale.
    #[getter]
    fn log_marginal_likelihood(&self) -> f64 {
        self.0.log_marginal_likelihood()
    }
    /// The targets' mean and scale the GP was fitted with (0 and 1 without normalise_y).
    #[getter]
    fn target_scaler(&self) -> (f64, f64) {
        (self.0.scaler.mean, self.0.scaler.scale)
    }
    /// L-BFGS runs: (iterations, log marginal likelihood of the standardised targets) each.
    #[getter]
    fn optimisation_runs(&self) -> Vec<(usize, f64)> {
        self.0.runs.iter().map(|r| (r.iterations, r.log_marginal_likelihood)).collect()
    }
}

#[pyfunction]
pub fn gp_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
) -> PyResult<GpPosterior> {
    let checked = config::<GpConfig>(settings, "GP")?.check().map_err(value_error)?;
    let (x, y) = (matrix(&x), y.as_slice()?.to_vec());
    py.detach(|| checked.fit(x.as_ref(), &y)).map(GpPosterior).map_err(value_error)
}

/// A sparse GP (FITC or VFE) conditioned on its training data.
#[pyclass(module = "hedge._hedge")]
pub struct SparseGpPosterior(FittedSparseGp);

#[pymethods]
impl SparseGpPosterior {
    fn predict<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'_, f64>) -> PyResult<PredictionArrays<'py>> {
        predict_with(py, &self.0, x)
    }
    #[getter]
    fn signal_variance(&self) -> f64 {
        self.0.signal_variance()
    }
    #[getter]
    fn noise_variance(&self) -> f64 {
        self.0.noise_variance()
    }
    #[getter]
    fn lengthscales(&self) -> Vec<f64> {
        self.0.hyper.kernel.lengthscales.clone()
    }
    /// The fitted objective: FITC's log marginal likelihood or VFE's bound, original scale.
    #[getter]
    fn objective(&self) -> f64 {
        self.0.objective()
    }
    /// The pseudo-inputs Z, `[m, d]`.
    #[getter]
    fn inducing_points<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        matrix_to_numpy(py, &self.0.inducing)
    }
}

#[pyfunction]
pub fn sparse_gp_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
) -> PyResult<SparseGpPosterior> {
    let checked = config::<SparseGpConfig>(settings, "sparse GP")?.check().map_err(value_error)?;
    let (x, y) = (matrix(&x), y.as_slice()?.to_vec());
    py.detach(|| checked.fit(x.as_ref(), &y)).map(SparseGpPosterior).map_err(value_error)
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
        let x = matrix(&x);
        let p = self.model().predict(x.as_ref()).map_err(value_error)?;
        Ok(prediction_arrays(py, p))
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
}

#[pyfunction]
pub fn linear_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    settings: &str,
    known_noise: bool,
) -> PyResult<LinearPosterior> {
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
}

/// The Laplace posterior of a Bayesian probit regression.
#[pyclass(module = "hedge._hedge")]
pub struct ProbitPosterior(pub(crate) FittedProbit);

#[pymethods]
impl ProbitPosterior {
    /// p(y = 1 | x) per row, the weights' uncertainty integrated out.
    fn predict_proba<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'_, f64>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let x = matrix(&x);
        Ok(self.0.predict_proba(x.as_ref()).map_err(value_error)?.into_pyarray(py))
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
}

#[pyfunction]
pub fn probit_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    labels: PyReadonlyArray1<'_, u8>,
    settings: &str,
) -> PyResult<ProbitPosterior> {
    let checked = config::<ProbitConfig>(settings, "probit regression")?.check().map_err(value_error)?;
    let (x, labels) = (matrix(&x), labels.as_slice()?.to_vec());
    py.detach(|| checked.fit(x.as_ref(), &labels)).map(ProbitPosterior).map_err(value_error)
}
