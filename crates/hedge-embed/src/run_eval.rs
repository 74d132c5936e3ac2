//! Runs as a user works with them after training: start one with its resolved config,
//! evaluate it on a test split (`eval.json`), check it quickly (`verification.json`) and follow
//! its kept checkpoints (`curve.json`). Progress bars and figures of runs are `hedge-lab`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hedge_data::{verification_pairs, Corruption, ImageDataset, NDigitSplit};
use tch::Device;
use tracing::info;

use crate::data::HibData;
use crate::embed::EmbeddedSet;
use crate::evaluate::{
    check_eval_workload, evaluate_model, verification_ap, EvalOptions, HibMetric, MatchEstimator, MetricSet, ModelEval,
    ModelEvalOptions, Twin,
};
use crate::monitor::{embed_twins, CORRUPT_SEED, PAIR_SEED};
use crate::report::{CurvePoint, EvalContext, EvalReport, PairCounts, QuickVerification, VerificationReport};
use crate::run::{RunDir, CHECKPOINTS_DIR};
use crate::train::Trainer;
use crate::{embed_dataset, BatchComposition, EmbedError, EmbedOptions, HibConfig, Result, ValidationDigits};
use hedge_run::ParamGuard;

/// `config` with grouped batches of `spec` = "CLASSESxIMAGES" (e.g. "32x8").
pub fn with_group(config: HibConfig, spec: &str) -> Result<HibConfig> {
    Ok(config.with_batch(BatchComposition::parse_grouped(spec)?))
}

/// Verification AP on the protocol's main test split (`test` or `test_unseen`; 5,000 + 5,000
/// pairs), clean and corrupt, written to `verification.json`: the quick check a training command
/// ends with. The full evaluation (KNN, uncertainty correlations) is [`evaluate_run`].
pub fn quick_verification(run: &RunDir, data: &HibData, trainer: &Trainer) -> Result<VerificationReport> {
    let split = trainer.config.data.protocol.main_test_split();
    let test = data.role(&trainer.config, split)?;
    let pairs = verification_pairs(&test.labels, 5000, 5000, PAIR_SEED)?;
    let net = trainer.inference_net();
    let mut warnings = Vec::new();
    let mut score = |corruption: Corruption| -> Result<QuickVerification> {
        let set = embed_dataset(net, &test, &corruption, trainer.device, EmbedOptions::default())?;
        let ap = verification_ap(&net.matcher, &set, &pairs, 8, 0)?;
        if matches!(corruption, Corruption::Clean) {
            warnings.extend(collapse_warning(&set, ap));
        }
        Ok(QuickVerification { mean_eta: set.eta.mean(tch::Kind::Float).double_value(&[]), verification_ap: ap })
    };
    let variants =
        Twin { clean: score(Corruption::Clean)?, corrupt: score(Corruption::Corrupt { seed: CORRUPT_SEED })? };
    for w in &warnings {
        tracing::warn!("{}: {w}", run.path.display());
    }
    let report = VerificationReport {
        schema: crate::report::EVAL_SCHEMA,
        pairs: PairCounts { matching: 5000, non_matching: 5000, seed: PAIR_SEED },
        data_protocol: trainer.config.data.protocol,
        split,
        step: trainer.step(),
        variants,
        warnings,
    };
    run.write_json("verification.json", &report)?;
    Ok(report)
}

/// Verification AP at or below this on balanced pairs is chance (.5): nothing was learned.
pub const CHANCE_AP: f64 = 0.52;

/// Why a trained model is unusable, if it is: every image embeds to the same point (the spread
/// of the means across images is under a millionth of their size), or the verification AP on
/// balanced pairs is at chance ([`CHANCE_AP`]). Both are what a learning rate far too high
/// ends in, and both would otherwise pass for a finished run.
pub fn collapse_warning(set: &EmbeddedSet, verification_ap: f64) -> Option<String> {
    let means = set.embedding.mean.flatten(1, -1).to_kind(tch::Kind::Double);
    let spread = if means.size()[0] > 1 { means.std_dim(0, false, false).max().double_value(&[]) } else { f64::NAN };
    let size = means.abs().max().double_value(&[]).max(1.0);
    let fix = "the training collapsed: lower --lr (or --head-lr-scale), or check the data";
    if spread.is_finite() && spread <= 1e-6 * size {
        return Some(format!(
            "every image embeds to the same point (spread of the means across images {spread:.2e}); verification \
             AP {verification_ap:.3}: {fix}"
        ));
    }
    (verification_ap <= CHANCE_AP)
        .then(|| format!("verification AP {verification_ap:.3} is at chance (.5 on balanced pairs): {fix}"))
}

/// What a run's evaluation measures, and how.
#[derive(Debug, Clone, Copy)]
pub struct EvalSettings {
    pub split: NDigitSplit,
    pub estimator: MatchEstimator,
    /// Repeats of the sampling-dependent evaluation (the paper: 10).
    pub repeats: usize,
    /// Candidates per probe re-ranked by the match probability in KNN.
    pub candidates: usize,
    /// The metrics computed (all by default); the others' numbers do not depend on it.
    pub metrics: MetricSet,
    /// Evaluate on the first this many images of every class of the split only (a quick
    /// look; numbers beside the paper's use every image, `None`).
    pub images_per_class: Option<usize>,
    /// With `split = validation`: the digit images the held-out images show, where not the
    /// run's own `validation_digits` (e.g. new digits for a run that validated on shared ones).
    pub validation_digits: Option<ValidationDigits>,
}

impl Default for EvalSettings {
    fn default() -> Self {
        EvalSettings {
            split: NDigitSplit::TestUnseen,
            estimator: MatchEstimator::MonteCarlo { samples: 8 },
            repeats: 10,
            candidates: 100,
            metrics: MetricSet::all(),
            images_per_class: None,
            validation_digits: None,
        }
    }
}

impl ParamGuard for EvalSettings {
    type Error = EmbedError;

    /// Checks the settings a user can give wrong.
    fn check_ref(&self) -> Result<()> {
        match self.estimator {
            MatchEstimator::MonteCarlo { samples } if samples < 1 => {
                return Err(EmbedError::invalid("samples", samples, "give at least 1"))
            }
            MatchEstimator::Quadrature { points } if !(1..=64).contains(&points) => {
                return Err(EmbedError::invalid("points", points, "give 1 to 64 nodes per dimension"))
            }
            _ => {}
        }
        if self.split == NDigitSplit::Train {
            return Err(EmbedError::invalid(
                "split",
                "train",
                "evaluate on test or test_seen (instance), test_unseen or test_seen (open-set), or validation",
            ));
        }
        if let Some(digits) = self.validation_digits.filter(|_| self.split != NDigitSplit::Validation) {
            return Err(EmbedError::invalid(
                "validation-digits",
                format!("{digits:?}").to_lowercase(),
                format!("it chooses the validation images' digits; add --split validation (not {})", self.split),
            ));
        }
        if let Some(n) = self.images_per_class.filter(|&n| n < MIN_IMAGES_PER_CLASS) {
            return Err(EmbedError::invalid(
                "per-class",
                n,
                format!(
                    "the KNN rule needs {MIN_IMAGES_PER_CLASS} images of a class (itself and K = 5 neighbours); give at \
                     least {MIN_IMAGES_PER_CLASS}, or leave the flag out to use every image"
                ),
            ));
        }
        if self.repeats == 0 {
            return Err(EmbedError::invalid("repeats", 0, "give at least 1"));
        }
        let k = EvalOptions::default().knn_k;
        if self.candidates < k {
            return Err(EmbedError::invalid(
                "candidates",
                self.candidates,
                format!("the exact estimator re-ranks at least the {k} neighbours KNN votes with; give at least {k}"),
            ));
        }
        Ok(())
    }
}

/// The fewest images per class an evaluation subset may keep (`--per-class`).
pub const MIN_IMAGES_PER_CLASS: usize = 6;

/// The report file of an evaluation on `split`: `eval.json` for the protocol's main test split
/// (`test` or `test_unseen`; a run has one protocol, so they never meet) or `eval_<split>.json`.
pub fn eval_file_name(split: NDigitSplit) -> String {
    match split {
        NDigitSplit::TestUnseen | NDigitSplit::Test => "eval.json".to_string(),
        other => format!("eval_{}.json", other.name()),
    }
}

/// The reliability diagram's figure of an evaluation on `split`, beside its [`eval_file_name`]:
/// `reliability.png` for the protocol's main test split, else `reliability_<split>.png`.
pub fn reliability_file_name(split: NDigitSplit) -> String {
    match split {
        NDigitSplit::TestUnseen | NDigitSplit::Test => "reliability.png".to_string(),
        other => format!("reliability_{}.png", other.name()),
    }
}

/// Embeds the split's clean and corrupt twins with the run's model (or `weights`) and evaluates
/// them. `command` is recorded in the report; [`save_eval`] writes it into the run.
pub fn evaluate_run(
    run: &RunDir,
    data: &HibData,
    weights: Option<&Path>,
    settings: &EvalSettings,
    device: Device,
    command: &str,
) -> Result<(ModelEval, EvalReport)> {
    settings.check_ref()?;
    let config = run.read_config()?.hib;
    if let MatchEstimator::MonteCarlo { samples } = settings.estimator {
        // The largest Monte-Carlo tensor: 250 probes x their candidates (at most 20,000 are
        // scored at once), samples² pairs each: both numbers are knobs, so a refusal names the
        // one that is too large.
        let per = (2 * config.model.dim + 8) as f64 * 4.0 * 2.0;
        let least = EvalOptions::default().knn_k as f64;
        hedge_run::Footprint::new("hib eval: one chunk of candidate pairs", move |v| {
            250.0 * v[0].clamp(least, 20_000.0) * v[1] * v[1] * per
        })
        .knob("--candidates", settings.candidates as f64, least)
        .knob("--samples", samples as f64, 1.0)
        .check()?;
    }
    let (mut test, validation_digits) = run_images(run, &config, data, settings.split, settings.validation_digits)?;
    if let Some(n) = settings.images_per_class {
        test = test.subset(&test.first_per_class(n));
        info!("eval: the first {n} images of every class of {}: {} images", settings.split.name(), test.len());
    }
    let options = ModelEvalOptions {
        base: EvalOptions { estimator: settings.estimator, candidates: settings.candidates, ..Default::default() },
        repeats: settings.repeats,
        pair_seed: PAIR_SEED,
        metrics: settings.metrics,
        ..Default::default()
    };
    let stochastic = config.model.embedding.is_stochastic();
    // The repeats are checked before the model is loaded and the twins embedded (minutes on a
    // CPU), with the estimator evaluate_model will use.
    let estimator = MatchEstimator::for_model(&config, settings.estimator);
    check_eval_workload(estimator, config.model.dim, test.len(), stochastic, &options)?;
    let (_vs, net) = crate::train::load_model_from(run, &config, weights, "--weights replaces its weights", device)?;
    crate::monitor::warn_small_classes(settings.split.name(), &test, crate::monitor::KNN_MIN_PER_CLASS);
    let started = std::time::Instant::now();
    let (clean, corrupt) = embed_twins(&net, &test, device)?;
    let eval = evaluate_model(&net.matcher, &clean, &corrupt, stochastic, &options, |m| info!("eval: {m}"))?;
    let report = EvalReport::new(
        &eval,
        EvalContext {
            run: run.path.display().to_string(),
            weights: weights.map(|w| w.display().to_string()),
            data_protocol: config.data.protocol,
            split: settings.split,
            model: config.model.embedding.kind(),
            components: config.effective_components(),
            digits: config.data.digits,
            dim: config.model.dim,
            steps: config.schedule.steps,
            match_estimator: MatchEstimator::for_model(&config, settings.estimator),
            eval_seconds: started.elapsed().as_secs_f64(),
            command: command.to_string(),
            images_per_class: settings.images_per_class,
            validation_digits,
        },
    );
    Ok((eval, report))
}

/// The images of `split` for the run with `config`: a test split's table (or part of the
/// user's images), or `validation`, the images the run held out of train, showing the digits of
/// `validation_digits` (default: the run's own choice), which is returned beside them.
fn run_images(
    run: &RunDir,
    config: &HibConfig,
    data: &HibData,
    split: NDigitSplit,
    validation_digits: Option<ValidationDigits>,
) -> Result<(ImageDataset, Option<ValidationDigits>)> {
    if split != NDigitSplit::Validation {
        return Ok((data.role(config, split)?, None));
    }
    let config = config.clone().with_validation_digits(validation_digits.unwrap_or(config.data.validation_digits));
    let images = crate::train::validation_images(&config, data.role(&config, NDigitSplit::Train)?)?;
    let images = images.ok_or_else(|| {
        EmbedError::invalid(
            "split",
            "validation",
            format!(
                "{} holds no images out (its validation_fraction and validation_classes are 0); use a test split",
                run.path.display()
            ),
        )
    })?;
    Ok((images, Some(config.data.validation_digits)))
}

/// Writes `report` into `run` as [`eval_file_name`] of its split, so evaluating `test_seen`
/// never replaces the `test_unseen` report.
pub fn save_eval(run: &RunDir, report: &EvalReport) -> Result<PathBuf> {
    let name = eval_file_name(report.split);
    run.write_json(&name, report)?;
    info!("wrote {}", run.file(&name).display());
    Ok(run.file(&name))
}

/// A run's evaluation on `split` if its report exists.
pub fn read_eval(run: &RunDir, split: NDigitSplit) -> Result<Option<EvalReport>> {
    run.read_json_if_present(&eval_file_name(split))
}

/// The files of a curve on `split`: `curve.json` / `curve.png` for the protocol's main test
/// split (test or test_unseen), else `curve_<split>.json` / `.png`.
pub fn curve_files(split: NDigitSplit) -> (String, String) {
    match split {
        NDigitSplit::TestUnseen | NDigitSplit::Test => ("curve.json".to_string(), "curve.png".to_string()),
        other => (format!("curve_{}.json", other.name()), format!("curve_{}.png", other.name())),
    }
}

/// Evaluates every kept checkpoint of a run on a test split and writes the curve (step,
/// training seconds, AP and KNN, clean and corrupt) as JSON ([`curve_files`]'s first name). Rows
/// of an earlier curve at the same repeats are reused for the checkpoints they scored (each
/// evaluation costs minutes, and a resumed run only adds checkpoints); only new checkpoints are
/// evaluated.
pub fn curve_points(
    run: &RunDir,
    data: &HibData,
    repeats: usize,
    split: NDigitSplit,
    device: Device,
    command: &str,
) -> Result<Vec<CurvePoint>> {
    let (json_name, _) = curve_files(split);
    let dir = run.file(CHECKPOINTS_DIR);
    let entries = std::fs::read_dir(&dir)
        .map_err(|_| EmbedError::run(&run.path, "has no checkpoints/; train with --keep-every N"))?;
    let mut files: Vec<(usize, PathBuf)> = entries
        .filter_map(|e| {
            let p = e.ok()?.path();
            let step = p.file_stem()?.to_str()?.strip_prefix("model-")?.parse().ok()?;
            Some((step, p))
        })
        .collect();
    files.sort();
    let steps: Vec<usize> = files.iter().map(|f| f.0).collect();
    let earlier = run.read_json_if_present::<Vec<CurvePoint>>(&json_name).ok().flatten().unwrap_or_default();
    let mut earlier = reusable_curve_rows(earlier, repeats, &steps);
    if earlier.len() == steps.len() {
        info!("reusing {}", run.file(&json_name).display());
        return Ok(earlier.into_values().collect());
    }
    let seconds_at: BTreeMap<usize, f64> = run.read_metrics()?.iter().map(|m| (m.step, m.seconds)).collect();
    // A curve plots AP and KNN accuracy: the other KNN passes (half the time) are left out,
    // which leaves these numbers as the full evaluation has them.
    let metrics =
        MetricSet::select(&[HibMetric::VerificationAp, HibMetric::VerificationApMixed, HibMetric::KnnAccuracy], &[])?;
    let settings = EvalSettings { repeats, split, metrics, ..Default::default() };
    let mut rows = Vec::new();
    for (step, path) in &files {
        if let Some(row) = earlier.remove(step) {
            rows.push(row);
            continue;
        }
        info!("curve: step {step}");
        let (_, report) = evaluate_run(run, data, Some(path), &settings, device, command)?;
        rows.push(CurvePoint {
            knn_accuracy: report.knn_accuracy,
            repeats: Some(repeats),
            step: *step,
            train_seconds: seconds_at.get(step).copied(),
            verification_ap: report.verification_ap,
        });
    }
    run.write_json(&json_name, &rows)?;
    Ok(rows)
}

/// The rows of an earlier curve that still hold, by step: those scored with the same number of
/// repeats for a checkpoint that is still kept. Rows without `repeats` predate the field and
/// used 1.
fn reusable_curve_rows(earlier: Vec<CurvePoint>, repeats: usize, steps: &[usize]) -> BTreeMap<usize, CurvePoint> {
    earlier
        .into_iter()
        .filter(|r| r.repeats.unwrap_or(1) == repeats && steps.contains(&r.step))
        .map(|r| (r.step, r))
        .collect()
}

/// The clean and corrupt twins of a test split embedded with a run's model: its own weights, or
/// `weights` (another file of the same model, e.g. the validation's choice) in their place.
pub fn embed_run_twins(
    run: &RunDir,
    test: &ImageDataset,
    weights: Option<&Path>,
    device: Device,
) -> Result<(crate::EmbeddedSet, crate::EmbeddedSet)> {
    let config = run.read_config()?.hib;
    let (_vs, net) = crate::train::load_model_from(run, &config, weights, "the weights replace its own", device)?;
    embed_twins(&net, test, device)
}

/// A split of the run's digits (or its validation images) embedded with its model, clean or with the evaluation's fixed
/// occlusions, `samples` Monte-Carlo samples per input for η: its own weights, or `weights`
/// (another file of the same model, e.g. `model_best.safetensors`, the validation's choice) in
/// their place.
pub fn embed_run(
    run: &RunDir,
    data: &HibData,
    split: NDigitSplit,
    corrupt: bool,
    samples: i64,
    weights: Option<&Path>,
    device: Device,
) -> Result<crate::EmbeddedSet> {
    if samples < 1 {
        return Err(EmbedError::invalid("samples", samples, "give at least 1"));
    }
    let config = run.read_config()?.hib;
    let (_vs, net) = crate::train::load_model_from(run, &config, weights, "--weights replaces its weights", device)?;
    let (dataset, _) = run_images(run, &config, data, split, None)?;
    let corruption = if corrupt { Corruption::Corrupt { seed: CORRUPT_SEED } } else { Corruption::Clean };
    embed_dataset(&net, &dataset, &corruption, device, EmbedOptions { samples, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Tensor;

    fn set(means: &[[f32; 2]]) -> EmbeddedSet {
        let mean = Tensor::from_slice(means.as_flattened()).view([-1, 2]);
        let n = means.len();
        EmbeddedSet {
            embedding: crate::Embedding::point(mean),
            labels: vec![0; n],
            eta: Tensor::zeros([n as i64], (tch::Kind::Float, Device::Cpu)),
        }
    }

    #[test]
    fn a_collapsed_model_is_named_and_a_working_one_is_not() {
        // Every image at one point (what --lr 10 ends in): named whatever the AP.
        let w = collapse_warning(&set(&[[3.0, -1.0]; 5]), 0.5).unwrap();
        assert!(w.contains("same point") && w.contains("--lr"), "{w}");
        // Spread under a millionth of the size is still one point (float noise).
        let w = collapse_warning(&set(&[[1000.0, 1.0], [1000.0 + 1e-4, 1.0]]), 0.9);
        assert!(w.is_some_and(|w| w.contains("same point")));
        // Spread, but AP at chance.
        let spread = set(&[[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]);
        let w = collapse_warning(&spread, 0.51).unwrap();
        assert!(w.contains("at chance") && w.contains("0.510"), "{w}");
        // A model that learned something.
        assert_eq!(collapse_warning(&spread, 0.96), None);
        assert_eq!(collapse_warning(&spread, CHANCE_AP + 0.01), None);
    }

    fn row(step: usize, repeats: Option<usize>) -> CurvePoint {
        let repeats = repeats.map_or("null".to_string(), |r| r.to_string());
        serde_json::from_str(&format!(
            r#"{{"knn_accuracy": {{"clean": 0.4, "clean_std": null, "corrupt": 0.2, "corrupt_std": null}},
                "repeats": {repeats}, "step": {step}, "train_seconds": 60.0,
                "verification_ap": {{"clean": 0.96, "clean_std": null, "clean_vs_corrupt": 0.86,
                "clean_vs_corrupt_std": null, "corrupt": 0.78, "corrupt_std": null}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_resumed_run_reevaluates_only_new_checkpoints() {
        // Kept: 10k, 20k (scored with 10 repeats), 30k (scored with 1), 40k (new); 50k was
        // scored but its checkpoint is gone.
        let earlier = vec![row(10_000, Some(10)), row(20_000, Some(10)), row(30_000, Some(1)), row(50_000, Some(10))];
        let reused = reusable_curve_rows(earlier, 10, &[10_000, 20_000, 30_000, 40_000]);
        assert_eq!(reused.keys().copied().collect::<Vec<_>>(), vec![10_000, 20_000]);
        // Rows written before `repeats` existed were scored once.
        let reused = reusable_curve_rows(vec![row(10_000, None)], 1, &[10_000]);
        assert_eq!(reused.len(), 1);
        assert!(reusable_curve_rows(vec![row(10_000, None)], 10, &[10_000]).is_empty());
    }
}
