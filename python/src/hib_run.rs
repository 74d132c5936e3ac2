//! HIB end to end from Python: train a run (N-digit MNIST, or a user's image folder or `.npz`)
//! with progress reported to a Python callable, open a run, embed images with it, build an
//! identification index and search it — the library calls the command line makes, so the same
//! run gives the same numbers either way.

use std::path::PathBuf;

use hedge_data::{DataRoot, ImageDataset, ImageSet, NDigitSplit};
use hedge_embed::embed::{embed_dataset, EmbedOptions};
use hedge_embed::experiment::{prepare_resume, start_run, train_run_until, TrainPlan};
use hedge_embed::run_eval::{embed_run, evaluate_run, EvalSettings};
use hedge_embed::train::{load_model, TrainEvent};
use hedge_embed::{HibConfig, HibData, MatchEstimator, MetricSet, OwnImagesRequest, RunDir, SettingsRequest};
use hedge_identify::{build_index, AnnConfig, IndexFiles, IndexRequest, SearchOptions, SearchSpace, UncertaintyScore};
use numpy::PyReadonlyArray4;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tch::Device;

use crate::tensor::to_python;
use crate::value_error;

/// `"cpu"`, `"cuda"` or `"cuda:N"` as a libtorch device, refused when it is not there.
pub(crate) fn device(name: &str) -> PyResult<Device> {
    hedge_run::torch::parse_device(name).map_err(value_error)
}

/// What `hedge.hib.train`'s `config` asks for: settings by name (JSON of an object, `HibConfig`'s
/// names as `config.json` writes them) over a TOML recipe over the defaults.
fn settings_request(settings: Option<&str>, recipe: Option<PathBuf>) -> PyResult<SettingsRequest> {
    let overrides = match settings {
        None => serde_json::Map::new(),
        Some(json) => match serde_json::from_str(json) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(_) => return Err(value_error("HIB settings: give a dict of HibConfig settings by name")),
            Err(e) => return Err(value_error(format!("HIB settings: {e}"))),
        },
    };
    Ok(SettingsRequest::new("settings", overrides).with_recipe(recipe))
}

/// Trains a new run in `out`; `progress(step, planned_steps, loss)` is called every
/// `progress_every` steps. Returns the run directory.
#[pyfunction]
#[pyo3(signature = (out, settings=None, config_file=None, data=None, unseen_classes=None, seen_test_fraction=0.2, split_seed=0, device_name="cpu", overwrite=false, progress=None, progress_every=10))]
#[allow(clippy::too_many_arguments)]
pub fn hib_train(
    py: Python<'_>,
    out: PathBuf,
    settings: Option<&str>,
    config_file: Option<PathBuf>,
    data: Option<PathBuf>,
    unseen_classes: Option<usize>,
    seen_test_fraction: f64,
    split_seed: u64,
    device_name: &str,
    overwrite: bool,
    progress: Option<Py<PyAny>>,
    progress_every: usize,
) -> PyResult<String> {
    crate::guarded(|| {
        let device = device(device_name)?;
        let own_images = data.map(|path| OwnImagesRequest { path, unseen_classes, seen_test_fraction, split_seed });
        let request = settings_request(settings, config_file)?.with_own_images(own_images);
        let hib_data = HibData::new(DataRoot::from_env());
        let config = hib_data.resolve(&request).map_err(value_error)?;
        let plan = TrainPlan::default();
        let command = format!("python: hedge.hib.train({})", out.display());
        let (run, config) =
            start_run(&hib_data, config, &plan, device, &out, overwrite, &command).map_err(value_error)?;
        let path = run.path.display().to_string();
        train_reporting(py, &run, hib_data, &config, device, false, &plan, progress, progress_every)?;
        Ok(path)
    })
}

/// Continues the run in `path` from its last checkpoint to its planned steps (`steps`: a new
/// total), with its own settings — what `hedge hib train --resume` does. Returns the run
/// directory.
#[pyfunction]
#[pyo3(signature = (path, steps=None, device_name="cpu", progress=None, progress_every=10))]
pub fn hib_resume(
    py: Python<'_>,
    path: PathBuf,
    steps: Option<usize>,
    device_name: &str,
    progress: Option<Py<PyAny>>,
    progress_every: usize,
) -> PyResult<String> {
    crate::guarded(|| {
        let device = device(device_name)?;
        let run = RunDir::open_to_resume(&path).map_err(value_error)?;
        let (rc, plan) = prepare_resume(&run, steps, None).map_err(value_error)?;
        let hib_data = HibData::new(DataRoot::from_env());
        let out = run.path.display().to_string();
        train_reporting(py, &run, hib_data, &rc.hib, device, true, &plan, progress, progress_every)?;
        Ok(out)
    })
}

/// Trains `run` without the GIL, calling `progress(step, planned_steps, loss)` every `every`
/// steps, and stops at the step where Python has a signal pending whose handler raises (Ctrl-C's
/// KeyboardInterrupt), with a checkpoint there, re-raising it: the run resumes from that step.
#[allow(clippy::too_many_arguments)]
fn train_reporting(
    py: Python<'_>,
    run: &RunDir,
    hib_data: HibData,
    config: &HibConfig,
    device: Device,
    resuming: bool,
    plan: &TrainPlan,
    progress: Option<Py<PyAny>>,
    every: usize,
) -> PyResult<()> {
    let every = every.max(1);
    // Training runs without the GIL: torch's Python autograd engine refuses a backward pass
    // from a thread that holds it (and other Python threads keep running). The callback and the
    // signal check take the GIL back for a moment after each step.
    let raised = py.detach(move || -> PyResult<Option<PyErr>> {
        let raised: std::cell::RefCell<Option<PyErr>> = std::cell::RefCell::new(None);
        // Python runs signal handlers only on its main thread, between bytecodes; here it runs
        // them after each step (the handler of SIGINT raises KeyboardInterrupt).
        let stop = || {
            if raised.borrow().is_some() {
                return true;
            }
            match Python::attach(|py| py.check_signals()) {
                Ok(()) => false,
                Err(e) => {
                    *raised.borrow_mut() = Some(e);
                    true
                }
            }
        };
        train_run_until(run, &hib_data, config, device, resuming, plan, Some(&stop), |event| {
            if let (TrainEvent::Step { metrics, planned_steps }, Some(cb)) = (event, &progress) {
                if raised.borrow().is_none() && (metrics.step % every == 0 || metrics.step == planned_steps) {
                    Python::attach(|py| {
                        if let Err(e) = cb.call1(py, (metrics.step, planned_steps, metrics.loss)) {
                            *raised.borrow_mut() = Some(e);
                        }
                    });
                }
            }
        })
        .map_err(value_error)?;
        Ok(raised.into_inner())
    })?;
    match raised {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A trained run opened for embedding.
#[pyclass(module = "hedge._hedge")]
pub struct HibRun {
    run: RunDir,
    config: HibConfig,
    /// The network, loaded on first use and kept for the device it was loaded on (a notebook
    /// embeds batch after batch; reading the weights each time would dominate small batches).
    /// (A Mutex: a Python class must be shareable between threads; tensors are only Send.)
    model: std::sync::Mutex<Option<(Device, tch::nn::VarStore, hedge_embed::HibNet)>>,
}

impl HibRun {
    /// `f` of the run's network on `device` (loaded there once).
    pub(crate) fn with_network<R>(&self, device: Device, f: impl FnOnce(&hedge_embed::HibNet) -> R) -> PyResult<R> {
        let mut model = self.model.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if model.as_ref().is_none_or(|(d, _, _)| *d != device) {
            let (vs, net) = load_model(&self.run, &self.config, device).map_err(value_error)?;
            *model = Some((device, vs, net));
        }
        Ok(f(&model.as_ref().expect("loaded above").2))
    }

    /// `images` `[N, C, H, W]` as the image set `embed_dataset` reads, after checking the shape.
    pub(crate) fn image_dataset(&self, images: &PyReadonlyArray4<'_, f32>) -> PyResult<ImageDataset> {
        let shape = images.as_array().shape().to_vec();
        let want = self.config.input_shape();
        if shape[1..] != want[..] {
            return Err(PyValueError::new_err(format!(
                "`images` are {:?} per image but the run's network takes {want:?} ([channels, height, width])",
                &shape[1..]
            )));
        }
        let n = shape[0];
        if n == 0 {
            return Err(PyValueError::new_err("`images` holds no image (shape [0, …]); pass at least one"));
        }
        let pixels = images.as_slice()?;
        if let Some(i) = pixels.iter().position(|p| !(0.0..=1.0).contains(p)) {
            return Err(PyValueError::new_err(format!(
                "`images` holds {} at image {}: pixels must be finite and lie in [0, 1]",
                pixels[i],
                i / (want[0] * want[1] * want[2])
            )));
        }
        let set = ImageSet {
            source: PathBuf::from("<arrays>"),
            channels: shape[1],
            height: shape[2],
            width: shape[3],
            pixels: pixels.to_vec(),
            labels: vec![0; n],
            class_names: vec!["?".into()],
            names: (0..n).map(|i| format!("#{i}")).collect(),
        };
        Ok(ImageDataset::from_images(set, NDigitSplit::TestUnseen))
    }
}

#[pyfunction]
pub fn hib_open_run(path: PathBuf) -> PyResult<HibRun> {
    crate::guarded(|| {
        let run = RunDir::open(&path).map_err(value_error)?;
        let config = run.read_config().map_err(value_error)?.hib;
        Ok(HibRun { run, config, model: std::sync::Mutex::new(None) })
    })
}

/// (mean, variance or None, eta) as Python tensors.
type EmbeddingTensors = (Py<PyAny>, Option<Py<PyAny>>, Py<PyAny>);
/// (mean, variance or None, eta, labels).
type LabelledEmbeddingTensors = (Py<PyAny>, Option<Py<PyAny>>, Py<PyAny>, Vec<u32>);

fn embedding_tensors(py: Python<'_>, set: &hedge_embed::EmbeddedSet) -> PyResult<EmbeddingTensors> {
    let variance = set.embedding.variance.as_ref().map(|v| to_python(py, v)).transpose()?;
    Ok((to_python(py, &set.embedding.mean)?, variance, to_python(py, &set.eta)?))
}

#[pymethods]
impl HibRun {
    #[getter]
    fn path(&self) -> String {
        self.run.path.display().to_string()
    }
    /// The run's HIB settings as JSON (HibConfig as config files write it).
    #[getter]
    fn config_json(&self) -> String {
        serde_json::to_string(&self.config).expect("a config serialises")
    }
    /// `[channels, height, width]` of the images the network takes.
    #[getter]
    fn input_shape(&self) -> [usize; 3] {
        self.config.input_shape()
    }
    /// (a_raw, b) of the trained match head.
    fn match_head(&self) -> PyResult<(f64, f64)> {
        crate::guarded(|| {
            let (_vs, net) = load_model(&self.run, &self.config, Device::Cpu).map_err(value_error)?;
            Ok((net.matcher.a_raw.double_value(&[]), net.matcher.b.double_value(&[])))
        })
    }
    /// Images `[N, C, H, W]` in [0, 1] embedded: (mean, variance or None, eta) as CPU tensors,
    /// η from `samples` draws seeded by `seed`, `batch` images per forward pass (as `hib embed`).
    #[pyo3(signature = (images, samples=8, seed=0, batch=1000, device_name="cpu"))]
    fn embed(
        &self,
        py: Python<'_>,
        images: PyReadonlyArray4<'_, f32>,
        samples: i64,
        seed: i64,
        batch: usize,
        device_name: &str,
    ) -> PyResult<EmbeddingTensors> {
        crate::guarded(|| {
            let device = device(device_name)?;
            if samples < 1 || batch == 0 {
                return Err(PyValueError::new_err("`samples` and `batch` must be at least 1"));
            }
            let dataset = self.image_dataset(&images)?;
            hedge_embed::embed::mc_footprint(
                "Run.embed: η's Monte-Carlo samples",
                "samples",
                batch.min(dataset.len()) as f64,
                samples as f64,
                self.config.model.dim,
            )
            .check()
            .map_err(value_error)?;
            let options = EmbedOptions { batch, samples, seed };
            let embedded = self
                .with_network(device, |net| {
                    embed_dataset(net, &dataset, &hedge_data::Corruption::Clean, device, options)
                })?
                .map_err(value_error)?;
            embedding_tensors(py, &embedded)
        })
    }
    /// A split of the run's own data embedded exactly as `hedge hib embed --split` does:
    /// (mean, variance or None, eta, labels). `corrupt` embeds the evaluation's occluded twins
    /// (`--variant corrupt`); `weights`, a weights file of the same model (e.g. the run's
    /// `model_best.safetensors`), replaces the run's final weights (`--weights`).
    #[pyo3(signature = (split, samples=8, device_name="cpu", corrupt=false, weights=None))]
    fn embed_split(
        &self,
        py: Python<'_>,
        split: &str,
        samples: i64,
        device_name: &str,
        corrupt: bool,
        weights: Option<std::path::PathBuf>,
    ) -> PyResult<LabelledEmbeddingTensors> {
        crate::guarded(|| {
            let device = device(device_name)?;
            let split = NDigitSplit::parse(split).map_err(value_error)?;
            let data = HibData::new(DataRoot::from_env());
            let set = embed_run(&self.run, &data, split, corrupt, samples, weights.as_deref(), device)
                .map_err(value_error)?;
            let (mean, variance, eta) = embedding_tensors(py, &set)?;
            Ok((mean, variance, eta, set.labels))
        })
    }
    /// The run evaluated on `split` (default: the protocol's main test split) exactly as
    /// `hedge hib eval --json` evaluates it: the EvalReport as JSON. Nothing is written into the
    /// run. `estimator` is "mc" (`samples` draws) or "quadrature" (`points` nodes per axis, by
    /// default the measured count for the run's D); a model trained with a loss that has its own
    /// closed form is scored by it whatever is asked. `metrics` and `exclude_metrics` are comma-separated
    /// names as `--metrics` takes them; `weights` another weights file of the run's model
    /// (`--weights`), `validation_digits` the digit images of the validation split (`shared` or
    /// `unused`, `--validation-digits`).
    #[pyo3(signature = (split=None, estimator="mc", samples=8, points=None, repeats=10, candidates=100, metrics="", exclude_metrics="", per_class=None, device_name="cpu", weights=None, validation_digits=None))]
    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &self,
        py: Python<'_>,
        split: Option<&str>,
        estimator: &str,
        samples: i64,
        points: Option<usize>,
        repeats: usize,
        candidates: usize,
        metrics: &str,
        exclude_metrics: &str,
        per_class: Option<usize>,
        device_name: &str,
        weights: Option<String>,
        validation_digits: Option<&str>,
    ) -> PyResult<String> {
        crate::guarded(|| {
            let device = device(device_name)?;
            let validation_digits = validation_digits
                .map(|d| {
                    serde_json::from_value::<hedge_embed::ValidationDigits>(serde_json::Value::String(d.into()))
                        .map_err(|_| {
                            PyValueError::new_err(format!("validation_digits {d:?}: use \"shared\" or \"unused\""))
                        })
                })
                .transpose()?;
            let split = match split {
                Some(s) => NDigitSplit::parse(s).map_err(value_error)?,
                None => self.config.data.protocol.main_test_split(),
            };
            let estimator = match estimator {
                "mc" => MatchEstimator::MonteCarlo { samples },
                "quadrature" => MatchEstimator::Quadrature {
                    points: points.unwrap_or_else(|| hedge_embed::evaluate::quadrature_points(self.config.model.dim)),
                },
                other => {
                    return Err(PyValueError::new_err(format!(
                        "estimator {other:?}: use \"mc\" (Monte Carlo) or \"quadrature\""
                    )))
                }
            };
            let settings = EvalSettings {
                split,
                estimator,
                repeats,
                candidates,
                metrics: MetricSet::parse(metrics, exclude_metrics).map_err(value_error)?,
                images_per_class: per_class,
                validation_digits,
            };
            let data = HibData::new(DataRoot::from_env());
            let command = format!("python: hedge.hib.Run({:?}).evaluate(...)", self.run.path.display().to_string());
            let (_, report) = py
                .detach(|| {
                    evaluate_run(
                        &self.run,
                        &data,
                        weights.as_deref().map(std::path::Path::new),
                        &settings,
                        device,
                        &command,
                    )
                })
                .map_err(value_error)?;
            serde_json::to_string(&report).map_err(value_error)
        })
    }
}

/// The settings of `hib_build_index` and `hib_index_template`, as their keyword arguments.
pub(crate) struct IndexKeywords<'a> {
    pub abstain_by: &'a str,
    pub candidates: usize,
    pub candidates_by: Option<&'a str>,
    pub top_k: usize,
    pub max_connections: usize,
    pub ef_construction: usize,
    pub ef_search: usize,
}

/// An index's graph and search settings and its uncertainty score, checked as
/// `hedge hib index` checks its flags (`run`'s config gives the model and its loss).
pub(crate) fn index_settings(
    run: &std::path::Path,
    keywords: IndexKeywords,
) -> PyResult<(AnnConfig, SearchOptions, UncertaintyScore)> {
    let IndexKeywords { abstain_by, candidates, candidates_by, top_k, max_connections, ef_construction, ef_search } =
        keywords;
    let ann = AnnConfig::default()
        .with_max_connections(max_connections)
        .with_ef_construction(ef_construction)
        .with_ef_search(ef_search);
    ann.check().map_err(value_error)?;
    let config = RunDir::open(run).and_then(|r| r.read_config()).map_err(value_error)?.hib;
    let mut search = SearchOptions::for_model(&config).with_candidates(candidates).with_top_k(top_k);
    if let Some(space) = candidates_by {
        search = search.with_space(SearchSpace::named(space).map_err(value_error)?);
    }
    search.check().map_err(value_error)?;
    let score = match abstain_by {
        "eta" => UncertaintyScore::Eta,
        "margin" => UncertaintyScore::Margin,
        other => return Err(PyValueError::new_err(format!("abstain_by {other:?}: use \"eta\" or \"margin\""))),
    };
    Ok((ann, search, score))
}

/// Builds an identification index of the gallery (folder or `.npz`) with the run's model: the
/// ANN graph over the means and the abstention threshold for `target_risk` chosen on the
/// validation probes (or leave-one-out). Returns the manifest as JSON.
#[pyfunction]
#[pyo3(signature = (run, gallery, out, validation=None, target_risk=0.05, abstain_by="eta", candidates=100, top_k=5, max_connections=16, ef_construction=200, ef_search=200, overwrite=false, device_name="cpu", candidates_by=None))]
#[allow(clippy::too_many_arguments)]
pub fn hib_build_index(
    run: PathBuf,
    gallery: PathBuf,
    out: PathBuf,
    validation: Option<PathBuf>,
    target_risk: f64,
    abstain_by: &str,
    candidates: usize,
    top_k: usize,
    max_connections: usize,
    ef_construction: usize,
    ef_search: usize,
    overwrite: bool,
    device_name: &str,
    candidates_by: Option<&str>,
) -> PyResult<String> {
    crate::guarded(|| {
        let device = device(device_name)?;
        for (input, flag) in [(Some(&gallery), "gallery"), (validation.as_ref(), "validation")] {
            if let Some(input) = input {
                hedge_run::check_out_not_inside(&out, input, flag).map_err(value_error)?;
            }
        }
        let (ann, search, score) = index_settings(
            &run,
            IndexKeywords { abstain_by, candidates, candidates_by, top_k, max_connections, ef_construction, ef_search },
        )?;
        let gallery = ImageSet::read(&gallery).map_err(value_error)?;
        let validation = validation.as_deref().map(ImageSet::read).transpose().map_err(value_error)?;
        let request = IndexRequest { ann, search, validation, target_risk, score };
        let manifest = build_index(&run, &gallery, &request, &out, overwrite, device).map_err(value_error)?;
        Ok(serde_json::to_string(&manifest).expect("a manifest serialises"))
    })
}

/// Identifies the probes (folder or `.npz`) against the index: (one JSON line per probe as
/// `hib search` writes search.jsonl, the summary as JSON).
#[pyfunction]
#[pyo3(signature = (index, probes, target_risk=None, run=None, device_name="cpu"))]
pub fn hib_search(
    index: PathBuf,
    probes: PathBuf,
    target_risk: Option<f64>,
    run: Option<PathBuf>,
    device_name: &str,
) -> PyResult<(Vec<String>, String)> {
    crate::guarded(|| {
        let device = device(device_name)?;
        let files = IndexFiles::open(&index).map_err(value_error)?;
        let probes = ImageSet::read(&probes).map_err(value_error)?;
        let mut identifier = files.load(run.as_deref(), device).map_err(value_error)?;
        if let Some(risk) = target_risk {
            identifier.rules.manifest.calibration.rechoose(risk).map_err(value_error)?;
        }
        let (results, summary) = identifier.identify(&probes).map_err(value_error)?;
        let rows = results.iter().map(|r| serde_json::to_string(r).expect("a result serialises")).collect();
        Ok((rows, serde_json::to_string(&summary).expect("a summary serialises")))
    })
}
