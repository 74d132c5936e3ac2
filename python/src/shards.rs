//! A gallery split into shards (`hedge_identify::shards`) for `hedge.scale.ShardedIdentifier`: a
//! shard answers with its nearest items and their embedding rows, the driver merges the answers
//! and decides once. Shard answers cross processes as NumPy arrays and torch tensors.

use std::path::PathBuf;
use std::sync::Mutex;

use hedge_data::ImageSet;
use hedge_embed::{EmbeddedSet, Embedding};
use hedge_identify::shards::{
    check_shard_set_out, merge_candidates, seal_shard_set, shard_index, write_embedded_shard, ShardCandidates, ShardSet,
};
use hedge_identify::{summarise, Gallery, IndexManifest, RecallSkipped, Rules};
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::hib_run::{device, index_settings, IndexKeywords};
use crate::tensor::{optional_tensor, tensor, to_python};
use crate::value_error;

/// What one shard answers for a batch of probes: (items `[P, K]` int64, distances `[P, K]`
/// float32, labels `[P, K]` int64, item names (P·K), means `[P·K, C, D]`, variances or None).
type ShardAnswer<'py> = (
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray2<f32>>,
    Bound<'py, PyArray2<i64>>,
    Vec<String>,
    Py<PyAny>,
    Option<Py<PyAny>>,
);

/// A [`ShardAnswer`] as the driver reads it back.
type ShardAnswerIn<'py> = (
    PyReadonlyArray2<'py, i64>,
    PyReadonlyArray2<'py, f32>,
    PyReadonlyArray2<'py, i64>,
    Vec<String>,
    Bound<'py, PyAny>,
    Option<Bound<'py, PyAny>>,
);

/// Splits the index folder `index` into `shards` shard folders under `out`; returns shards.json.
#[pyfunction]
#[pyo3(signature = (index, out, shards, overwrite = false))]
pub fn hib_shard_index(
    py: Python<'_>,
    index: PathBuf,
    out: PathBuf,
    shards: usize,
    overwrite: bool,
) -> PyResult<String> {
    crate::guarded(|| {
        let set = py.detach(|| shard_index(&index, &out, shards, overwrite)).map_err(value_error)?;
        Ok(serde_json::to_string(&set).expect("a shard set serialises"))
    })
}

/// The description every shard of a set written from embeddings shares (`hedge_identify::shards`'s
/// `write_embedded_shard`): the run, its weights' SHA-256, the gallery's identities and source,
/// the graph and search settings, as JSON.
#[pyfunction]
#[pyo3(signature = (run, class_names, source, target_risk=0.05, abstain_by="eta", candidates=100, top_k=5, max_connections=16, ef_construction=200, ef_search=200, candidates_by=None))]
#[allow(clippy::too_many_arguments)]
pub fn hib_index_template(
    run: PathBuf,
    class_names: Vec<String>,
    source: PathBuf,
    target_risk: f64,
    abstain_by: &str,
    candidates: usize,
    top_k: usize,
    max_connections: usize,
    ef_construction: usize,
    ef_search: usize,
    candidates_by: Option<&str>,
) -> PyResult<String> {
    crate::guarded(|| {
        let (ann, search, score) = index_settings(
            &run,
            IndexKeywords { abstain_by, candidates, candidates_by, top_k, max_connections, ef_construction, ef_search },
        )?;
        let mut template = IndexManifest::for_run(&run, ann, search, score, target_risk).map_err(value_error)?;
        template.class_names = class_names;
        template.gallery_source = source;
        Ok(serde_json::to_string(&template).expect("a manifest serialises"))
    })
}

/// Writes one shard folder `out` from an embedded part of the gallery (`mean`, `variance`:
/// float32 tensors `[N, C, D]`, variance None for a point model; `eta` `[N]`; `labels` int64
/// indices into the template's identities; `names` N item names) under the template JSON of
/// [`hib_index_template`].
#[pyfunction]
#[pyo3(signature = (template, mean, variance, eta, labels, names, out))]
pub fn hib_write_embedded_shard(
    template: &str,
    mean: &Bound<'_, PyAny>,
    variance: Option<&Bound<'_, PyAny>>,
    eta: &Bound<'_, PyAny>,
    labels: PyReadonlyArray1<'_, i64>,
    names: Vec<String>,
    out: PathBuf,
) -> PyResult<()> {
    crate::guarded(|| {
        let template: IndexManifest = serde_json::from_str(template)
            .map_err(|e| value_error(format!("`template` is not an index template: {e}")))?;
        let labels = labels
            .as_slice()
            .map_err(|_| value_error("`labels` must be C-contiguous"))?
            .iter()
            .map(|&l| {
                u32::try_from(l).map_err(|_| value_error(format!("`labels` holds {l}; labels index class_names")))
            })
            .collect::<PyResult<Vec<u32>>>()?;
        let embedding = Embedding { mean: tensor(mean, "mean")?, variance: optional_tensor(variance, "variance")? };
        let eta = tensor(eta, "eta")?;
        write_embedded_shard(&template, embedding, &eta, labels, names, &out).map_err(value_error)
    })
}

/// Refuses `out` for a new shard set when it exists, unless `overwrite` and it is a folder hedge
/// made that holds only a shard set.
#[pyfunction]
pub fn hib_check_shard_set_out(out: PathBuf, overwrite: bool) -> PyResult<()> {
    crate::guarded(|| check_shard_set_out(&out, overwrite).map_err(value_error))
}

/// Finishes the shard set in `folder` (`shards`: (folder name, items) in item order); with
/// `validation` = (where the probes came from, uncertainties, correct flags), the abstention
/// rule is chosen on that curve and written into every shard. Returns shards.json.
#[pyfunction]
#[pyo3(signature = (folder, source, shards, validation = None))]
pub fn hib_seal_shard_set(
    py: Python<'_>,
    folder: PathBuf,
    source: PathBuf,
    shards: Vec<(String, usize)>,
    validation: Option<(String, Vec<f64>, Vec<bool>)>,
) -> PyResult<String> {
    crate::guarded(|| {
        let set = py
            .detach(|| {
                let curve = validation.as_ref().map(|(s, u, c)| (s.clone(), u.as_slice(), c.as_slice()));
                seal_shard_set(&folder, source, &shards, curve)
            })
            .map_err(value_error)?;
        Ok(serde_json::to_string(&set).expect("a shard set serialises"))
    })
}

/// One shard of a shard set, loaded (checked against shards.json and its own index.json)
/// without the model.
#[pyclass(module = "hedge._hedge")]
pub struct GalleryShard {
    gallery: Mutex<Gallery>,
    first_item: usize,
    #[pyo3(get)]
    name: String,
}

#[pymethods]
impl GalleryShard {
    #[new]
    fn open(py: Python<'_>, folder: PathBuf, shard: usize) -> PyResult<Self> {
        crate::guarded(|| {
            py.detach(|| {
                let set = ShardSet::read(&folder)?;
                let files = set.open_shard(&folder, shard)?;
                let entry = &set.shards[shard];
                Ok::<_, hedge_identify::IdentifyError>(GalleryShard {
                    gallery: Mutex::new(files.load_gallery()?),
                    first_item: entry.first_item,
                    name: entry.name.clone(),
                })
            })
            .map_err(value_error)
        })
    }

    fn __len__(&self) -> usize {
        self.gallery.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// Resident bytes of the graph (its points included).
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.gallery.lock().unwrap_or_else(std::sync::PoisonError::into_inner).memory_bytes()
    }

    /// The shard's nearest items for every probe (`means`: float32 tensor `[P, C, D]`).
    fn candidates<'py>(&self, py: Python<'py>, means: &Bound<'py, PyAny>) -> PyResult<ShardAnswer<'py>> {
        crate::guarded(|| {
            let mean = tensor(means, "means")?;
            let gallery = self.gallery.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let (c, d) = (gallery.manifest.components as i64, gallery.manifest.dim as i64);
            let size = mean.size();
            if size.len() != 3 || size[1] != c || size[2] != d || mean.kind() != tch::Kind::Float {
                return Err(value_error(format!(
                    "`means` has shape {size:?} ({:?}); this gallery's are float32 [P, {c}, {d}]",
                    mean.kind()
                )));
            }
            // Not detached from the interpreter: tensors are Send but not Sync.
            let found = ShardCandidates::gather(&gallery, self.first_item, &Embedding { mean, variance: None })
                .map_err(value_error)?;
            let shape = [found.probes, found.slots];
            let items = numpy::ndarray::Array2::from_shape_vec(shape, found.items).map_err(value_error)?;
            let distances = numpy::ndarray::Array2::from_shape_vec(shape, found.distances).map_err(value_error)?;
            let labels = numpy::ndarray::Array2::from_shape_vec(shape, found.labels).map_err(value_error)?;
            let mean = to_python(py, &found.embedding.mean)?;
            let variance = found.embedding.variance.as_ref().map(|v| to_python(py, v)).transpose()?;
            Ok((
                items.into_pyarray(py),
                distances.into_pyarray(py),
                labels.into_pyarray(py),
                found.names,
                mean,
                variance,
            ))
        })
    }
}

/// Probes read and embedded by [`ShardRules::embed`].
#[pyclass(module = "hedge._hedge")]
pub struct EmbeddedProbes {
    images: ImageSet,
    set: Mutex<EmbeddedSet>,
}

#[pymethods]
impl EmbeddedProbes {
    fn __len__(&self) -> usize {
        self.images.len()
    }

    /// Component means, float32 `[P, C, D]`.
    #[getter]
    fn means(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::guarded(|| {
            to_python(py, &self.set.lock().unwrap_or_else(std::sync::PoisonError::into_inner).embedding.mean)
        })
    }
}

/// The shards' answers (the tuples `GalleryShard.candidates` returns), checked.
fn shard_parts(answers: &[Bound<'_, PyAny>]) -> PyResult<Vec<ShardCandidates>> {
    let mut parts = Vec::with_capacity(answers.len());
    for (s, answer) in answers.iter().enumerate() {
        let (items, distances, labels, names, mean, variance): ShardAnswerIn<'_> = answer.extract()?;
        let [p, k] = [items.shape()[0], items.shape()[1]];
        let same = distances.shape() == [p, k] && labels.shape() == [p, k] && names.len() == p * k;
        let flat = |name: &str| value_error(format!("shard answer {s}: `{name}` must be C-contiguous"));
        let mean = tensor(&mean, "mean")?;
        let variance = optional_tensor(variance.as_ref(), "variance")?;
        if !same || mean.size().first() != Some(&((p * k) as i64)) {
            return Err(value_error(format!("shard answer {s}: its arrays disagree in size (probes {p} x {k})")));
        }
        parts.push(ShardCandidates {
            probes: p,
            slots: k,
            items: items.as_slice().map_err(|_| flat("items"))?.to_vec(),
            distances: distances.as_slice().map_err(|_| flat("distances"))?.to_vec(),
            labels: labels.as_slice().map_err(|_| flat("labels"))?.to_vec(),
            names,
            embedding: Embedding { mean, variance },
        });
    }
    Ok(parts)
}

/// The rules of a shard set (its settings and abstention rule) with the model that embeds
/// probes: the driver's half of a sharded search.
#[pyclass(module = "hedge._hedge")]
pub struct ShardRules {
    rules: Mutex<Rules>,
}

#[pymethods]
impl ShardRules {
    /// `run` replaces the run recorded in the index; its weights must be the gallery's.
    #[new]
    #[pyo3(signature = (folder, run = None, device_name = "cpu"))]
    fn open(py: Python<'_>, folder: PathBuf, run: Option<PathBuf>, device_name: &str) -> PyResult<Self> {
        crate::guarded(|| {
            let device = device(device_name)?;
            py.detach(|| {
                let set = ShardSet::read(&folder)?;
                let files = set.open_shard(&folder, 0)?;
                Ok::<_, hedge_identify::IdentifyError>(ShardRules {
                    rules: Mutex::new(files.load_rules(run.as_deref(), device)?),
                })
            })
            .map_err(value_error)
        })
    }

    /// Candidates per probe that the re-rank scores (the index's `candidates`).
    #[getter]
    fn candidates(&self) -> usize {
        self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).manifest.search.candidates
    }

    /// Reads probe images (a folder or an image .npz) and embeds them.
    fn embed(&self, probes: PathBuf) -> PyResult<EmbeddedProbes> {
        crate::guarded(|| {
            let rules = self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let images = ImageSet::read(&probes).map_err(value_error)?;
            let set = rules.embed(&images).map_err(value_error)?;
            Ok(EmbeddedProbes { images, set: Mutex::new(set) })
        })
    }

    /// The validation curve over the shards' answers for labelled `probes`: each probe's
    /// uncertainty (the set's score: η or margin) and whether its top identity is its label.
    fn validate(&self, probes: &EmbeddedProbes, answers: Vec<Bound<'_, PyAny>>) -> PyResult<(Vec<f64>, Vec<bool>)> {
        crate::guarded(|| {
            let parts = shard_parts(&answers)?;
            let rules = self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let gathered = merge_candidates(&parts, rules.manifest.search.candidates).map_err(value_error)?;
            let set = probes.set.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let score = rules.manifest.calibration.score;
            rules.validate(&probes.images, &set, &gathered.candidates(), score).map_err(value_error)
        })
    }

    /// Merges every shard's answer (the tuples `GalleryShard.candidates` returns) and decides
    /// once: (result rows as JSON, summary JSON). `seconds` is the search's wall-clock so far;
    /// `target_risk` re-chooses the abstention threshold for this call (from the stored curve).
    #[pyo3(signature = (probes, answers, seconds, target_risk = None))]
    fn decide(
        &self,
        probes: &EmbeddedProbes,
        answers: Vec<Bound<'_, PyAny>>,
        seconds: f64,
        target_risk: Option<f64>,
    ) -> PyResult<(Vec<String>, String)> {
        crate::guarded(|| {
            let parts = shard_parts(&answers)?;
            let mut rules = self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let stored = rules.manifest.calibration.clone();
            if let Some(risk) = target_risk {
                rules.manifest.calibration.rechoose(risk).map_err(value_error)?;
            }
            let set = probes.set.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let start = std::time::Instant::now();
            let outcome = (|| {
                let gathered = merge_candidates(&parts, rules.manifest.search.candidates)?;
                let results = rules.decide(&probes.images, &set, &gathered.candidates())?;
                let rate = probes.images.len() as f64 / (seconds + start.elapsed().as_secs_f64()).max(1e-9);
                let summary = summarise(&results, &rules.manifest, Err(RecallSkipped::Sharded), rate);
                Ok::<_, hedge_identify::IdentifyError>((results, summary))
            })();
            // The re-chosen threshold holds for this call only.
            rules.manifest.calibration = stored;
            let (results, summary) = outcome.map_err(value_error)?;
            let rows = results.iter().map(|r| serde_json::to_string(r).expect("a result serialises")).collect();
            Ok((rows, serde_json::to_string(&summary).expect("a summary serialises")))
        })
    }
}
