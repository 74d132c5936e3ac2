//! The HNSW graph of `hedge-ann` on NumPy float32 arrays: what a gallery shard of `hedge.scale`
//! holds, and the index `python/benchmarks/ann.py` measures beside hnswlib. Built as its own
//! extension, `hedge._ann`, that links no libtorch: a process that only holds or searches an
//! index (a Ray shard actor) imports it without torch (about 0.6 GB and 2.7 s a process). The
//! same class and functions are registered into `hedge._hedge` too ([`register`]), and hedge-py
//! uses this crate's [`guarded`] and [`value_error`] for all of its bindings.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use hedge_ann::{AnnConfig, Hnsw};
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A library error as the Python exception a user can act on: `MemoryError` for a size over the
/// memory budget (`hedge_run::budget`'s refusal, whichever crate passed it on), else `ValueError`.
pub fn value_error(e: impl std::fmt::Display) -> PyErr {
    let message = e.to_string();
    if message.contains(hedge_run::budget::OVER_MEMORY_BUDGET) {
        PyMemoryError::new_err(message)
    } else {
        PyValueError::new_err(message)
    }
}

/// Runs a binding's body; a panic in it (a case no check foresaw, or a libtorch error tch turns
/// into a panic) becomes a `ValueError` carrying the panic's message, with libtorch's C++ trace
/// cut, instead of a `PanicException`.
pub fn guarded<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(PyValueError::new_err(format!(
            "hedge could not complete this call: {}. No check caught it before it started; \
             please report the call that caused it",
            hedge_run::libtorch_message(message).trim()
        )))
    })
}

/// Adds the graph's class and functions to `m` (`hedge._ann`, and `hedge._hedge`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AnnGraph>()?;
    m.add_function(wrap_pyfunction!(ann_build, m)?)?;
    m.add_function(wrap_pyfunction!(ann_load, m)?)?;
    m.add_function(wrap_pyfunction!(ann_from_bytes, m)?)?;
    Ok(())
}

#[pymodule]
fn _ann(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register(m)
}

/// Neighbours of every query: (ids `[q, k]`, Euclidean distances `[q, k]`).
type Neighbours<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<f32>>);

/// An HNSW graph over fixed points (Euclidean).
#[pyclass(module = "hedge._ann", frozen)]
pub struct AnnGraph(Hnsw);

/// Rows of a C-contiguous float32 array, as one slice.
fn rows<'a>(x: &'a PyReadonlyArray2<'_, f32>, name: &str) -> PyResult<&'a [f32]> {
    x.as_slice().map_err(|_| value_error(format!("`{name}` must be a C-contiguous float32 array")))
}

#[pymethods]
impl AnnGraph {
    fn __len__(&self) -> usize {
        self.0.len()
    }

    #[getter]
    fn dim(&self) -> usize {
        self.0.dim()
    }

    /// (max_connections, ef_construction, ef_search).
    #[getter]
    fn settings(&self) -> (usize, usize, usize) {
        let c = self.0.config();
        (c.max_connections, c.ef_construction, c.ef_search)
    }

    #[getter]
    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }

    /// (ids int64 `[q, k]`, Euclidean distances float32 `[q, k]`), nearest first; -1 and inf
    /// where the graph holds fewer than `k` points. `ef` replaces the graph's ef_search.
    #[pyo3(signature = (queries, k, ef=None))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        queries: PyReadonlyArray2<'py, f32>,
        k: usize,
        ef: Option<usize>,
    ) -> PyResult<Neighbours<'py>> {
        guarded(|| {
            let q = queries.shape()[0];
            if queries.shape()[1] != self.0.dim() {
                return Err(value_error(format!(
                    "`queries` has {} columns but the index holds points of dimension {}",
                    queries.shape()[1],
                    self.0.dim()
                )));
            }
            let flat = rows(&queries, "queries")?;
            let ef = ef.unwrap_or(self.0.config().ef_search);
            if ef == 0 || k == 0 {
                return Err(value_error(format!("`k` = {k} and `ef` = {ef} must each be at least 1")));
            }
            // The answer's ids and distances, and the search's candidate lists (ef at least k).
            hedge_run::Footprint::new("HnswIndex.search", |v| v[0] * (v[1] * 20.0 + v[2].max(v[1]) * 24.0))
                .knob("", q as f64, 0.0)
                .knob("k", k as f64, 1.0)
                .knob("ef", ef as f64, 1.0)
                .check()
                .map_err(value_error)?;
            let found = py.detach(|| self.0.nearest_with_ef(flat, k, ef));
            let mut ids = vec![-1i64; q * k];
            let mut dists = vec![f32::INFINITY; q * k];
            for (row, hits) in found.iter().enumerate() {
                for (j, &(id, d)) in hits.iter().enumerate() {
                    ids[row * k + j] = id as i64;
                    dists[row * k + j] = d;
                }
            }
            let shape = [q, k];
            let ids = numpy::ndarray::Array2::from_shape_vec(shape, ids).map_err(value_error)?;
            let dists = numpy::ndarray::Array2::from_shape_vec(shape, dists).map_err(value_error)?;
            Ok((ids.into_pyarray(py), dists.into_pyarray(py)))
        })
    }

    /// Writes the graph (safetensors; a temporary sibling, then renamed).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        guarded(|| py.detach(|| self.0.save(&path)).map_err(value_error))
    }

    /// The file's bytes (what `save` writes), for pickling and object stores.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        guarded(|| {
            let bytes = py.detach(|| self.0.to_bytes()).map_err(value_error)?;
            Ok(PyBytes::new(py, &bytes))
        })
    }
}

/// Builds the graph over the rows of `points` (`[n, d]` float32) on rayon's threads.
#[pyfunction]
pub fn ann_build(
    py: Python<'_>,
    points: PyReadonlyArray2<'_, f32>,
    max_connections: usize,
    ef_construction: usize,
    ef_search: usize,
) -> PyResult<AnnGraph> {
    guarded(|| {
        let dim = points.shape()[1];
        let flat = rows(&points, "points")?;
        let config = AnnConfig { max_connections, ef_construction, ef_search };
        py.detach(|| Hnsw::build(flat, dim, &config)).map(AnnGraph).map_err(value_error)
    })
}

/// Reads a graph `AnnGraph.save` wrote; every field is checked.
#[pyfunction]
pub fn ann_load(py: Python<'_>, path: PathBuf) -> PyResult<AnnGraph> {
    guarded(|| py.detach(|| Hnsw::load(&path)).map(AnnGraph).map_err(value_error))
}

/// A graph from the bytes `AnnGraph.to_bytes` gave.
#[pyfunction]
pub fn ann_from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<AnnGraph> {
    guarded(|| {
        let data = data.to_vec();
        py.detach(|| Hnsw::from_bytes(&data, "<bytes>".as_ref())).map(AnnGraph).map_err(value_error)
    })
}
