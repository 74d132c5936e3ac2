//! Batch acquisition as pure functions of arrays (the baal way): ACS-FW over a Gram matrix, over
//! random projections or over a fitted Bayesian linear/probit model's closed-form inner
//! products; BALD and entropy scores; LCMD; the top-b rule.

use hedge_active::acquisition::{
    bald, categorical_entropy, farthest_pick, heaviest_cluster, lcmd, nig_projections, top_b,
};
use hedge_active::{fisher, frank_wolfe, FwBatch, GramMatrix, PoolVectors, Projections};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rand::SeedableRng;

use crate::bayes::{matrix, matrix_to_numpy, LinearPosterior, ProbitPosterior};
use crate::value_error;

/// (indices, weights, objective, picks) of a Frank–Wolfe batch.
type BatchArrays<'py> = (Vec<usize>, Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>, Vec<usize>);

fn batch_arrays(py: Python<'_>, b: FwBatch) -> BatchArrays<'_> {
    (b.indices, b.weights.into_pyarray(py), b.objective.into_pyarray(py), b.picks)
}

fn run<'py>(
    py: Python<'py>,
    pool: &(dyn PoolVectors + Sync),
    batch_size: usize,
    distinct: bool,
) -> PyResult<BatchArrays<'py>> {
    let batch = py.detach(|| frank_wolfe(pool, batch_size, distinct)).map_err(value_error)?;
    Ok(batch_arrays(py, batch))
}

/// Refuses a probability outside [0, 1] (NaN included), naming its position: a score computed
/// from it would be a number that means nothing.
fn check_probabilities(values: &[f64]) -> PyResult<()> {
    match values.iter().position(|p| !(0.0..=1.0).contains(p)) {
        Some(i) => Err(PyValueError::new_err(format!(
            "`probabilities` holds {} at flat position {i}: every probability must lie in [0, 1]",
            values[i]
        ))),
        None => Ok(()),
    }
}

/// ACS-FW over explicit vectors (random projections), `[N, J]`.
#[pyfunction]
pub fn acs_fw_projections<'py>(
    py: Python<'py>,
    projections: PyReadonlyArray2<'_, f64>,
    batch_size: usize,
    distinct: bool,
) -> PyResult<BatchArrays<'py>> {
    crate::guarded(|| run(py, &Projections(matrix(&projections)), batch_size, distinct))
}

/// ACS-FW over a symmetric Gram matrix K_nm = <L_n, L_m>, `[N, N]`.
#[pyfunction]
pub fn acs_fw_gram<'py>(
    py: Python<'py>,
    gram: PyReadonlyArray2<'_, f64>,
    batch_size: usize,
    distinct: bool,
) -> PyResult<BatchArrays<'py>> {
    crate::guarded(|| {
        let k = matrix(&gram);
        if k.nrows() != k.ncols() {
            return Err(PyValueError::new_err(format!("`gram` must be square, not {} x {}", k.nrows(), k.ncols())));
        }
        if let Some(n) = (0..k.nrows()).find(|&n| k[(n, n)] < 0.0) {
            return Err(PyValueError::new_err(format!(
                "`gram`[{n}, {n}] = {} is negative: a Gram matrix of inner products has ‖L_n‖² ≥ 0 on its diagonal",
                k[(n, n)]
            )));
        }
        run(py, &GramMatrix(k), batch_size, distinct)
    })
}

/// The closed-form Gram matrix of a fitted Bayesian linear regression (known noise or
/// normal–inverse-gamma) over pool inputs `[N, d]`.
#[pyfunction]
pub fn linear_gram<'py>(
    py: Python<'py>,
    posterior: PyRef<'_, LinearPosterior>,
    x_pool: PyReadonlyArray2<'_, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    crate::guarded(|| {
        let x = matrix(&x_pool);
        let gram = match (&posterior.known_noise, &posterior.nig) {
            (Some(m), _) => fisher::linear_known_noise(x.as_ref(), m),
            (None, Some(m)) => fisher::linear_nig(x.as_ref(), m),
            (None, None) => unreachable!("a LinearPosterior holds one model"),
        }
        .map_err(value_error)?;
        Ok(matrix_to_numpy(py, &gram.0))
    })
}

/// The closed-form Gram matrix of a fitted Bayesian probit regression over pool inputs `[N, d]`.
#[pyfunction]
pub fn probit_gram<'py>(
    py: Python<'py>,
    posterior: PyRef<'_, ProbitPosterior>,
    x_pool: PyReadonlyArray2<'_, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    crate::guarded(|| {
        let x = matrix(&x_pool);
        let gram = fisher::probit(x.as_ref(), &posterior.0).map_err(value_error)?;
        Ok(matrix_to_numpy(py, &gram.0))
    })
}

/// Random projections `[N, J]` of the normal–inverse-gamma model's log-posterior vectors.
#[pyfunction]
pub fn linear_projections<'py>(
    py: Python<'py>,
    posterior: PyRef<'_, LinearPosterior>,
    x_pool: PyReadonlyArray2<'_, f64>,
    projections: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    crate::guarded(|| {
        let Some(nig) = &posterior.nig else {
            return Err(PyValueError::new_err(
                "random projections need the noise integrated out: fit BayesianLinearRegression(noise_variance=None)",
            ));
        };
        let x = matrix(&x_pool);
        // The [N, J] answer and J posterior draws of d weights.
        let (n, d) = (x.nrows() as f64, x.ncols() as f64);
        hedge_run::Footprint::new("nig_projections", move |v| 8.0 * v[0] * (n + d + 1.0))
            .knob("projections", projections as f64, 1.0)
            .check()
            .map_err(value_error)?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let p = nig_projections(x.as_ref(), nig, projections, &mut rng).map_err(value_error)?;
        Ok(matrix_to_numpy(py, &p.0))
    })
}

/// BALD scores `[N]` from class probabilities `[S, N, C]` under S posterior draws.
#[pyfunction]
pub fn bald_scores<'py>(
    py: Python<'py>,
    probabilities: PyReadonlyArray3<'_, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    crate::guarded(|| {
        let shape = probabilities.as_array().shape().to_vec();
        let values = probabilities.as_slice()?.to_vec();
        check_probabilities(&values)?;
        Ok(bald(&values, shape[0], shape[1], shape[2]).map_err(value_error)?.into_pyarray(py))
    })
}

/// Predictive entropies `[N]` of categorical predictions `[N, C]`.
#[pyfunction]
pub fn entropy_scores<'py>(
    py: Python<'py>,
    probabilities: PyReadonlyArray2<'_, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    crate::guarded(|| {
        let classes = probabilities.as_array().shape()[1];
        check_probabilities(probabilities.as_slice()?)?;
        Ok(categorical_entropy(probabilities.as_slice()?, classes).into_pyarray(py))
    })
}

/// Indices of the `b` largest scores (ties to the lower index), ascending.
#[pyfunction]
pub fn top_b_indices(scores: PyReadonlyArray1<'_, f64>, b: usize) -> PyResult<Vec<usize>> {
    crate::guarded(|| Ok(top_b(scores.as_slice()?, b)))
}

/// LCMD's `b` picks from pool features `[M, k]` given labelled features `[N, k]`, in pick order.
#[pyfunction]
pub fn lcmd_batch(
    py: Python<'_>,
    labelled: PyReadonlyArray2<'_, f64>,
    pool: PyReadonlyArray2<'_, f64>,
    b: usize,
) -> PyResult<Vec<usize>> {
    crate::guarded(|| {
        let (labelled, pool) = (matrix(&labelled), matrix(&pool));
        py.detach(|| lcmd(labelled.as_ref(), pool.as_ref(), b)).map_err(value_error)
    })
}

/// One shard of an LCMD pool (rows `first ..` of the `[M, k]` features) for one batch, with the
/// labelled features `[N, k]` as its first centres; held by a Ray actor of
/// `hedge.scale.ShardedPool`.
#[pyclass(module = "hedge._hedge", frozen)]
pub struct LcmdShard(std::sync::Mutex<hedge_active::acquisition::LcmdShard>);

/// (squared distance, pool row, its features): a shard's farthest point of a cluster.
type FarthestTuple<'py> = (f64, usize, Bound<'py, PyArray1<f64>>);

#[pymethods]
impl LcmdShard {
    #[new]
    fn new(first: usize, rows: PyReadonlyArray2<'_, f64>, labelled: PyReadonlyArray2<'_, f64>) -> PyResult<Self> {
        crate::guarded(|| {
            let (rows, labelled) = (rows.as_array(), labelled.as_array());
            if labelled.ncols() != rows.ncols() {
                return Err(value_error(format!(
                    "`labelled` has {} features per row, the pool {}",
                    labelled.ncols(),
                    rows.ncols()
                )));
            }
            let (cols, values) = (rows.ncols(), rows.iter().copied().collect());
            let centres: Vec<f64> = labelled.iter().copied().collect();
            hedge_active::acquisition::LcmdShard::new(first, cols, values, &centres)
                .map(|s| LcmdShard(std::sync::Mutex::new(s)))
                .map_err(value_error)
        })
    }

    /// Each of the `clusters` clusters' mass over this shard's unpicked points (None: none).
    fn masses(&self, clusters: usize) -> PyResult<Vec<Option<f64>>> {
        crate::guarded(|| {
            let shard = locked(&self.0);
            if clusters < shard.centres() {
                return Err(value_error(format!(
                    "`clusters` is {clusters} but this shard holds {} centres: pass the number of centres so far \
                     (the labelled points plus the picks)",
                    shard.centres()
                )));
            }
            Ok(shard.masses(clusters))
        })
    }

    /// This shard's unpicked point of `cluster` farthest from its centre, or None.
    fn farthest<'py>(&self, py: Python<'py>, cluster: usize) -> PyResult<Option<FarthestTuple<'py>>> {
        crate::guarded(|| {
            let found = locked(&self.0).farthest(cluster);
            Ok(found.map(|(d, row, features)| (d, row, features.into_pyarray(py))))
        })
    }

    /// A pick (of any shard) as centre `id`; marked picked here when it is this shard's row.
    fn add_pick(&self, id: usize, row: usize, features: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
        crate::guarded(|| {
            let features = features.as_slice().map_err(|_| value_error("`features` must be contiguous"))?;
            let mut shard = locked(&self.0);
            if features.len() != shard.cols() {
                return Err(value_error(format!(
                    "`features` has {} values but the shard's points have {} features",
                    features.len(),
                    shard.cols()
                )));
            }
            shard.add_centre(id, features);
            shard.mark_picked(row);
            Ok(())
        })
    }
}

/// The cluster an LCMD step over shards picks from: the highest mass summed over every shard's
/// `LcmdShard.masses` (ties to the lowest cluster), or None.
#[pyfunction]
pub fn lcmd_heaviest_cluster(masses: Vec<Vec<Option<f64>>>, clusters: usize) -> PyResult<Option<usize>> {
    crate::guarded(|| {
        if let Some(part) = masses.iter().find(|m| m.len() > clusters) {
            return Err(value_error(format!(
                "a shard's masses name {} clusters but `clusters` is {clusters}: pass the number of centres so far",
                part.len()
            )));
        }
        Ok(heaviest_cluster(&masses, clusters))
    })
}

/// The step's pick from every shard's `LcmdShard.farthest` answer (None where a shard has no
/// point in the cluster): (pool row, its features), the farthest, ties to the lowest row.
#[pyfunction]
pub fn lcmd_farthest_pick<'py>(
    py: Python<'py>,
    answers: Vec<Option<(f64, usize, PyReadonlyArray1<'py, f64>)>>,
) -> PyResult<Option<(usize, Bound<'py, PyArray1<f64>>)>> {
    crate::guarded(|| {
        let candidates = answers
            .into_iter()
            .flatten()
            .map(|(d, row, f)| {
                Ok((d, row, f.as_slice().map_err(|_| value_error("features must be contiguous"))?.to_vec()))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(farthest_pick(candidates).map(|(_, row, f)| (row, f.into_pyarray(py))))
    })
}

/// One shard of an ACS-FW pool (rows `first ..` of the `[N, J]` projections), held by a Ray
/// actor of `hedge.scale.ShardedPool`.
#[pyclass(module = "hedge._hedge", frozen)]
pub struct PoolShard(std::sync::Mutex<hedge_active::PoolShard>);

/// (first row, per-block column sums `[B, J]`, row norms `[n]`).
type SetupArrays<'py> = (usize, Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<f64>>);
/// (score, pool row, the row `[J]`, its norm).
type VertexTuple<'py> = (f64, usize, Bound<'py, PyArray1<f64>>, f64);
/// A [`VertexTuple`] as the driver reads it back.
type VertexIn<'py> = (f64, usize, PyReadonlyArray1<'py, f64>, f64);

#[pymethods]
impl PoolShard {
    #[new]
    fn new(first: usize, rows: PyReadonlyArray2<'_, f64>) -> PyResult<Self> {
        crate::guarded(|| {
            let cols = rows.as_array().ncols();
            let values = rows.as_array().iter().copied().collect();
            hedge_active::PoolShard::new(first, cols, values)
                .map(|s| PoolShard(std::sync::Mutex::new(s)))
                .map_err(value_error)
        })
    }

    fn __len__(&self) -> usize {
        locked(&self.0).len()
    }

    fn setup<'py>(&self, py: Python<'py>) -> PyResult<SetupArrays<'py>> {
        crate::guarded(|| {
            let s = locked(&self.0).setup();
            let j = s.block_sums.first().map_or(0, Vec::len);
            let sums = numpy::ndarray::Array2::from_shape_vec((s.block_sums.len(), j), s.block_sums.concat())
                .map_err(value_error)?;
            Ok((s.first, sums.into_pyarray(py), s.norms.into_pyarray(py)))
        })
    }

    fn best<'py>(
        &self,
        py: Python<'py>,
        residual: PyReadonlyArray1<'_, f64>,
        distinct: bool,
    ) -> PyResult<Option<VertexTuple<'py>>> {
        crate::guarded(|| {
            let residual = residual.as_slice().map_err(|_| value_error("`residual` must be contiguous"))?;
            let shard = locked(&self.0);
            if residual.len() != shard.cols() {
                return Err(value_error(format!(
                    "`residual` has {} values but the shard's rows have {} columns",
                    residual.len(),
                    shard.cols()
                )));
            }
            let best = shard.best(residual, distinct);
            Ok(best.map(|v| (v.score, v.index, v.row.into_pyarray(py), v.sigma)))
        })
    }

    /// Exactly these pool rows are chosen (the batch's picks so far; rows of other shards are
    /// ignored).
    fn set_chosen(&self, picks: Vec<usize>) {
        let mut shard = locked(&self.0);
        shard.clear_chosen();
        for p in picks {
            shard.mark_chosen(p);
        }
    }
}

/// The driver of ACS-FW over a sharded pool.
#[pyclass(module = "hedge._hedge")]
pub struct ShardedFrankWolfe(Option<hedge_active::ShardedFrankWolfe>);

impl ShardedFrankWolfe {
    fn driver(&mut self) -> PyResult<&mut hedge_active::ShardedFrankWolfe> {
        self.0.as_mut().ok_or_else(|| value_error("this driver already returned its batch"))
    }
}

#[pymethods]
impl ShardedFrankWolfe {
    #[new]
    fn new(
        setups: Vec<(usize, PyReadonlyArray2<'_, f64>, PyReadonlyArray1<'_, f64>)>,
        distinct: bool,
    ) -> PyResult<Self> {
        crate::guarded(|| {
            let setups = setups
                .into_iter()
                .map(|(first, sums, norms)| hedge_active::ShardSetup {
                    first,
                    block_sums: sums.as_array().rows().into_iter().map(|r| r.to_vec()).collect(),
                    norms: norms.as_array().to_vec(),
                })
                .collect();
            hedge_active::ShardedFrankWolfe::new(setups, distinct)
                .map(|d| ShardedFrankWolfe(Some(d)))
                .map_err(value_error)
        })
    }

    #[getter]
    fn residual<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        crate::guarded(|| Ok(self.driver()?.residual().to_vec().into_pyarray(py)))
    }

    #[getter]
    fn steps(&mut self) -> PyResult<usize> {
        crate::guarded(|| Ok(self.driver()?.steps()))
    }

    #[getter]
    fn finished(&mut self) -> PyResult<bool> {
        crate::guarded(|| Ok(self.driver()?.finished()))
    }

    /// Steps towards the best of the shards' vertices (`best`'s answers); the row picked, or
    /// None when no shard has one left.
    fn step(&mut self, vertices: Vec<Option<VertexIn<'_>>>) -> PyResult<Option<usize>> {
        crate::guarded(|| {
            let vertices: Vec<Option<hedge_active::Vertex>> = vertices
                .into_iter()
                .map(|v| {
                    v.map(|(score, index, row, sigma)| hedge_active::Vertex {
                        score,
                        index,
                        row: row.as_array().to_vec(),
                        sigma,
                    })
                })
                .collect();
            Ok(self.driver()?.step(vertices))
        })
    }

    /// (indices, weights, objective, picks), as `acs_fw_projections` returns them.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<BatchArrays<'py>> {
        crate::guarded(|| {
            let driver = self.0.take().ok_or_else(|| value_error("this driver already returned its batch"))?;
            Ok(batch_arrays(py, driver.into_batch()))
        })
    }
}

/// What a round's fit predicts about the unlabelled pool, as a user's acquisition reads it:
/// arrays made before the call (a quantity the model does not give is `None`, and reading it
/// raises a `ValueError` that says so).
#[pyclass(module = "hedge._hedge", frozen, name = "PoolPredictive")]
pub struct PyPoolPredictive {
    model: String,
    #[pyo3(get)]
    batch_size: usize,
    #[pyo3(get)]
    distinct: bool,
    #[pyo3(get)]
    seed: u64,
    entropy: Option<Vec<f64>>,
    mean_variance: Option<(Vec<f64>, Vec<f64>)>,
    features: Option<(faer::Mat<f64>, faer::Mat<f64>)>,
}

impl PyPoolPredictive {
    fn given<'a, T>(&self, what: &str, value: &'a Option<T>) -> PyResult<&'a T> {
        value.as_ref().ok_or_else(|| PyValueError::new_err(format!("{} gives no {what}", self.model)))
    }
}

#[pymethods]
impl PyPoolPredictive {
    fn __len__(&self) -> usize {
        self.entropy.as_ref().map_or(0, Vec::len)
    }
    #[getter]
    fn entropy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(self.given("entropy", &self.entropy)?.clone().into_pyarray(py))
    }
    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(self.given("predictive mean", &self.mean_variance)?.0.clone().into_pyarray(py))
    }
    #[getter]
    fn variance<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(self.given("predictive variance", &self.mean_variance)?.1.clone().into_pyarray(py))
    }
    #[getter]
    fn features<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        Ok(matrix_to_numpy(py, &self.given("last-layer features", &self.features)?.1))
    }
    #[getter]
    fn labelled_features<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        Ok(matrix_to_numpy(py, &self.given("last-layer features", &self.features)?.0))
    }
}

/// A Python callable as an acquisition: called with a [`PyPoolPredictive`], it returns the rows
/// to label (`hedge.active.pool_loop` turns scores into the top rows before they come here).
struct CallableAcquisition {
    name: String,
    /// The surrogate, for messages.
    model: String,
    callable: Py<PyAny>,
    /// The exception the callable raised, re-raised as it was once the loop has stopped.
    raised: std::sync::Mutex<Option<PyErr>>,
}

impl hedge_active::Acquisition for CallableAcquisition {
    fn name(&self) -> &str {
        &self.name
    }

    fn reads(&self) -> &[hedge_active::Reads] {
        &[]
    }

    fn select(
        &self,
        predictive: &dyn hedge_active::Predictive,
        request: hedge_active::Request,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> hedge_active::Result<Vec<usize>> {
        use rand::Rng;
        fn given<T>(r: hedge_active::Result<T>) -> hedge_active::Result<Option<T>> {
            match r {
                Err(hedge_active::ActiveError::NotOffered { .. }) => Ok(None),
                r => r.map(Some),
            }
        }
        let seed = rng.random();
        let entropy = given(predictive.entropy())?;
        let mean_variance = given(predictive.mean_variance())?;
        let features = given(predictive.features())?.map(|f| (f.labelled, f.unlabelled));
        Python::attach(|py| {
            let argument = PyPoolPredictive {
                model: self.model.clone(),
                batch_size: request.size,
                distinct: request.distinct,
                seed,
                entropy,
                mean_variance,
                features,
            };
            self.callable.call1(py, (argument,)).and_then(|chosen| chosen.extract::<Vec<usize>>(py)).map_err(|e| {
                let message = e.to_string();
                *self.raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                hedge_active::ActiveError::Callback { acquisition: self.name.clone(), message }
            })
        })
    }
}

/// What `pool_loop` hands back: the rounds it ran (JSON lines of `RoundMetrics`), the state to
/// continue from (JSON of `LoopState`; None after the last round) and whether Ctrl-C stopped it.
type LoopOutcome = (Vec<String>, Option<String>, bool);

/// One seed of the regression pool loop (`hedge.active.pool_loop`): `settings` (a JSON object)
/// overrides the default `LoopConfig` in its serde form, `acquisition` is a registered name or a
/// callable, `resume` (JSON of a `LoopState` an earlier call returned) continues a loop.
///
/// Python's pending signals are checked after every round: when their handler raises
/// KeyboardInterrupt (Ctrl-C), the loop stops there and the rounds run so far come back with the
/// state to resume from and `true` (also when the KeyboardInterrupt came out of a callable
/// acquisition, mid-round: the state is then the last finished round's).
#[pyfunction]
#[pyo3(signature = (x, y, acquisition, name, settings, seed, resume=None))]
#[allow(clippy::too_many_arguments)]
pub fn pool_loop(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    acquisition: Bound<'_, PyAny>,
    name: String,
    settings: &str,
    seed: u64,
    resume: Option<&str>,
) -> PyResult<LoopOutcome> {
    let overrides: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(settings).map_err(|e| PyValueError::new_err(format!("pool_loop settings: {e}")))?;
    let config =
        hedge_run::with_overrides(&hedge_active::regression_loop::LoopConfig::default(), &overrides, "settings")
            .map_err(value_error)?;
    let resume: Option<hedge_active::pool::LoopState> = resume
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("pool_loop `resume`: not a state pool_loop returned ({e})")))?;
    let x = matrix(&x);
    let y = y.as_array().to_vec();
    let callable = if acquisition.is_instance_of::<pyo3::types::PyString>() {
        None
    } else {
        let model = match config.surrogate {
            hedge_active::regression_loop::Surrogate::NeuralLinear => "NeuralLinear",
            hedge_active::regression_loop::Surrogate::Gp => "the GP surrogate",
        };
        Some(CallableAcquisition {
            name,
            model: model.into(),
            callable: acquisition.clone().unbind(),
            raised: Default::default(),
        })
    };
    let registered = match &callable {
        None => Some(hedge_active::acquisition(&acquisition.extract::<String>()?).map_err(value_error)?),
        Some(_) => None,
    };
    let chosen: &dyn hedge_active::Acquisition = match (&callable, registered) {
        (Some(c), _) => c,
        (None, Some(r)) => r,
        (None, None) => unreachable!("one of the two is set above"),
    };
    let mut lines = Vec::new();
    let mut state = resume.clone();
    let mut signalled: Option<PyErr> = None;
    let outcome = crate::guarded(|| {
        py.detach(|| {
            config.run_from(&x, &y, chosen, seed, resume, |round, next| {
                lines.push(serde_json::to_string(round).map_err(|e| hedge_active::ActiveError::Callback {
                    acquisition: "pool_loop".into(),
                    message: e.to_string(),
                })?);
                state = next.cloned();
                // Python runs signal handlers only between bytecodes of its main thread: here,
                // after each round.
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    signalled = Some(e);
                    return Err(hedge_active::ActiveError::Callback {
                        acquisition: "pool_loop".into(),
                        message: "stopped by a signal".into(),
                    });
                }
                Ok(())
            })
        })
        .map_err(value_error)
    });
    let raised = callable.and_then(|c| c.raised.into_inner().unwrap_or_else(|p| p.into_inner()));
    let interrupt = signalled.or(raised);
    match interrupt {
        Some(e) if Python::attach(|py| e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)) => {
            let state = state.map(|s| serde_json::to_string(&s).map_err(value_error)).transpose()?;
            Ok((lines, state, true))
        }
        Some(e) => Err(e),
        None => {
            outcome?;
            Ok((lines, None, false))
        }
    }
}

/// The registered acquisitions: (name, what it does, what it reads).
#[pyfunction]
pub fn acquisition_kinds() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    hedge_active::ACQUISITIONS
        .iter()
        .map(|r| (r.name, r.about, r.reads.iter().map(|w| w.describe()).collect()))
        .collect()
}

/// The shard behind its lock, also after a call that panicked while holding it (the panic became a
/// Python exception; the shard's state is whole between its methods).
fn locked<T>(shard: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    shard.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
