//! The flags of `hedge hib train` and `hedge hib reproduce`, laid over a recipe as overrides in
//! [`HibConfig`]'s serde form, and the runs they set up.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use hedge_data::{DataRoot, NDigitSplit};
use hedge_embed::experiment::TrainPlan;
use hedge_embed::{
    BatchComposition, ConvPrecision, HibConfig, HibData, LrSchedule, MatchInit, ModelKind, NDigitProtocol, Norm,
    OwnImagesRequest, PairSet, SettingsRequest, ValidationDigits,
};
use serde::Serialize;

use crate::error::invalid;
use crate::hib::reproduce::ReproduceConfig;
use crate::Result;

/// A test split on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TestSplit {
    Test,
    TestSeen,
    TestUnseen,
}

impl From<TestSplit> for NDigitSplit {
    fn from(s: TestSplit) -> Self {
        match s {
            TestSplit::Test => NDigitSplit::Test,
            TestSplit::TestSeen => NDigitSplit::TestSeen,
            TestSplit::TestUnseen => NDigitSplit::TestUnseen,
        }
    }
}

/// Every registered pair loss, with its summary in `--help`.
fn losses() -> clap::builder::PossibleValuesParser {
    crate::request::registered(hedge_embed::losses::LOSSES.iter().map(|r| (r.name, r.about)))
}

/// A struct of named flags as overrides in the config's serde form.
fn overrides(flags: &impl Serialize) -> Result<serde_json::Map<String, serde_json::Value>> {
    match serde_json::to_value(flags) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => unreachable!("a struct of named flags serialises as an object"),
        Err(e) => Err(invalid("flags", "", e.to_string())),
    }
}

/// The setting flags `hib train` and `hib reproduce` share, serialised under their names in
/// the config's serde form (`--lr` as `learning_rate`).
#[derive(Args, Serialize)]
pub struct SharedSettingFlags {
    /// Digits per image (N).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    digits: Option<usize>,
    /// Embedding dimension (D).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    dim: Option<usize>,
    /// Adam learning rate.
    #[arg(long)]
    #[serde(rename = "learning_rate", skip_serializing_if = "Option::is_none")]
    lr: Option<f64>,
    /// Learning-rate schedule: constant, cosine (decay to 0 at --steps) or step (÷10 at 1/2 and 3/4)
    /// [default: the recipe's, else constant].
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    lr_schedule: Option<LrSchedule>,
    /// How a step's pairs are drawn (--batch, --group, --all-pairs; default: the paper's 128
    /// independent pairs).
    #[command(flatten)]
    #[serde(flatten)]
    batch: BatchFlags,
}

/// The batch flags of `hib train` and `hib reproduce`, serialised as the config's batch fields: `--batch N` as
/// `batch = "independent"`, `batch_pairs = N`; `--group AxB` as `batch = "grouped"`,
/// `group_classes = A`, `group_size = B`; `--all-pairs` as `pair_set = "all"`.
#[derive(Args)]
struct BatchFlags {
    /// Pairs per step (two images each) of the paper's independent batches (replaces a
    /// config's grouped batches).
    #[arg(long, conflicts_with = "group")]
    batch: Option<usize>,
    /// Grouped batches instead of the paper's independent pairs: CLASSESxIMAGES (e.g. 32x8),
    /// scoring every within-class pair and as many cross-class ones.
    #[arg(long, value_name = "CLASSESxIMAGES", value_parser = group_shape)]
    group: Option<BatchComposition>,
    /// Score every pair of a grouped batch (matching and non-matching halves weighted 1/2).
    #[arg(long, requires = "group")]
    all_pairs: bool,
}

impl Serialize for BatchFlags {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if let Some(pairs) = self.batch {
            map.serialize_entry("batch", "independent")?;
            map.serialize_entry("batch_pairs", &pairs)?;
        }
        if let Some(BatchComposition::Grouped { classes, per_class }) = self.group {
            map.serialize_entry("batch", "grouped")?;
            map.serialize_entry("group_classes", &classes)?;
            map.serialize_entry("group_size", &per_class)?;
        }
        if self.all_pairs {
            map.serialize_entry("pair_set", &PairSet::All)?;
        }
        map.end()
    }
}

fn group_shape(spec: &str) -> std::result::Result<BatchComposition, String> {
    BatchComposition::parse_grouped(spec).map_err(|e| e.to_string())
}

/// The flags of `hib train` that set a [`HibConfig`] field, serialised under the field's name in
/// the config's serde form (`--lr` as `learning_rate`): laid over the recipe as overrides
/// ([`hedge_run::with_overrides`]), so a flag is one line here and nothing else.
#[derive(Args, Serialize)]
pub struct SettingFlags {
    /// Which N-digit MNIST tables: instance (the paper's: every class in training and in test,
    /// splits train and test) or open-set (test_unseen's classes never trained on; test_seen)
    /// [default: the config's, else instance].
    #[arg(long, value_enum, conflicts_with = "data")]
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<NDigitProtocol>,
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<ModelKind>,
    /// Mixture components (with --model mog).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    components: Option<usize>,
    /// The pair loss (a registered name).
    #[arg(long, value_parser = losses())]
    #[serde(skip_serializing_if = "Option::is_none")]
    loss: Option<String>,
    /// Margin of the contrastive loss.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    margin: Option<f64>,
    /// Weight of the KL term.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    beta: Option<f64>,
    /// Monte-Carlo samples per input.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<usize>,
    /// Linear learning-rate warm-up over this many steps before the schedule.
    #[arg(long)]
    #[serde(rename = "warmup_steps", skip_serializing_if = "Option::is_none")]
    warmup: Option<usize>,
    /// Learning-rate multiplier of the match head's a and b.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    head_lr_scale: Option<f64>,
    /// How b starts: fixed (init_b) or first-batch (a times the first batch's median distance).
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    match_init: Option<MatchInit>,
    /// Normalisation after each convolution.
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    norm: Option<Norm>,
    /// Widths of the two convolutions, A,B (the paper's network: 32,64).
    #[arg(long, value_name = "A,B", value_parser = channel_widths)]
    #[serde(skip_serializing_if = "Option::is_none")]
    channels: Option<[usize; 2]>,
    /// A fully connected layer of N units (ReLU) between the convolutions and the head (0: none,
    /// the paper's network; not in the paper).
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    hidden_units: Option<usize>,
    /// The settings `hib reproduce` takes too (--digits, --dim, --lr, --lr-schedule, the batch).
    #[command(flatten)]
    #[serde(flatten)]
    shared: SharedSettingFlags,
    /// Evaluate an exponential moving average of the weights with this decay (e.g. 0.999).
    #[arg(long)]
    #[serde(rename = "ema_decay", skip_serializing_if = "Option::is_none")]
    ema: Option<f64>,
    /// Decoupled weight decay (AdamW) of the conv and head weights, per unit of learning rate
    /// (e.g. 1e-4; 0: off, the paper's plain Adam; biases and the match head never decay; not
    /// in the paper).
    #[arg(long, value_name = "DECAY")]
    #[serde(skip_serializing_if = "Option::is_none")]
    weight_decay: Option<f64>,
    /// Drop the trunk's features out before the head with this probability while training (e.g.
    /// 0.5; 0: off, the paper's network; not in the paper).
    #[arg(long, value_name = "P")]
    #[serde(skip_serializing_if = "Option::is_none")]
    dropout: Option<f64>,
    /// Train on images made afresh each step from the training images' own digit images: each
    /// digit of a sampled image replaced by a random training image of the same digit (more digit
    /// combinations per class; not in the paper). N-digit MNIST only.
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    recompose: bool,
    /// Move each training digit image within its 28-pixel cell by up to N pixels each way,
    /// uniformly each step, the space it leaves black (an augmentation; not in the paper; 0: off,
    /// at most 8). N-digit MNIST only.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    digit_shift: Option<usize>,
    /// Open-set: hold this many training classes out (seeded) to choose the model on unseen
    /// classes: watched as `validation`, the best kept as model_best.safetensors.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_classes: Option<usize>,
    /// Hold this share of every class's training images out (seeded, e.g. 0.05: 50 of each
    /// N = 2 class's 1,000) to choose the model on images it never trained on: watched as
    /// `validation`, the best kept as model_best.safetensors (the instance protocol's model choice).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_fraction: Option<f64>,
    /// The validation images' digit images: shared (the held-out images as the table has them;
    /// their digit images recur in training images) or unused (each digit redrawn, seeded, from
    /// the MNIST training digits no training image uses, so validation meets new digits as the
    /// test images do; not in the paper) [default: the config's, else shared].
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_digits: Option<ValidationDigits>,
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    /// Number format of the convolutions (auto: $HEDGE_CONV_PRECISION where set, else bf16 where
    /// the hardware has it).
    #[arg(long, value_enum)]
    #[serde(rename = "conv_precision", skip_serializing_if = "Option::is_none")]
    precision: Option<ConvPrecision>,
}

/// `--channels A,B`: two conv widths.
fn channel_widths(spec: &str) -> std::result::Result<[usize; 2], String> {
    let widths: Vec<usize> = spec
        .split(',')
        .map(|w| w.trim().parse().map_err(|_| format!("'{w}' is no width")))
        .collect::<std::result::Result<_, _>>()?;
    <[usize; 2]>::try_from(widths.as_slice())
        .map_err(|_| format!("takes two widths, A,B (e.g. 64,128); got {} values", widths.len()))
}

/// A HIB run as flags: its settings (a recipe, setting flags, a user's images, the length) and
/// its watch plan.
#[derive(Args)]
pub struct TrainRequest {
    /// TOML file with any HibConfig fields (flags given here override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The settings a flag can override, in HibConfig's serde form.
    #[command(flatten)]
    pub settings: SettingFlags,
    /// Any setting by its name in a run's config.json, KEY=VALUE (repeatable): the ones no flag
    /// names, e.g. --set init_a=2 --set lr_schedule=cosine. Refused with the flag that names it.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Your own labelled images instead of N-digit MNIST: a folder `ROOT/<label>/<image>.png` (or
    /// .jpg; one sub-folder per class, one image size) or an .npz with `images` `[N, H, W]` or
    /// `[N, C, H, W]` and `labels` `[N]`. The network's input adapts to the images' channels and size.
    #[arg(long, conflicts_with = "digits", value_name = "FOLDER|FILE.npz")]
    pub data: Option<PathBuf>,
    /// With --data: whole classes held out (seeded) as `test_unseen`, identities the model never
    /// sees [default: a fifth of the classes, at least 2].
    #[arg(long, requires = "data")]
    pub unseen_classes: Option<usize>,
    /// With --data: share of each remaining class's images held out as `test_seen`.
    #[arg(long, requires = "data", default_value_t = 0.1)]
    pub seen_test_fraction: f64,
    /// With --data: seed of the class and image splits.
    #[arg(long, requires = "data", default_value_t = 0)]
    pub split_seed: u64,
    /// Total optimiser steps (with --resume: the new total).
    #[arg(long)]
    pub steps: Option<usize>,
    /// Stop after this many minutes of training (evaluation excluded); without --steps the
    /// step count is planned from the speed of the first steps so schedules end on time.
    #[arg(long)]
    pub budget_minutes: Option<f64>,
    /// With --budget-minutes: train every planned step even if the machine slows down after
    /// planning (the budget then fixes the step count from the first steps' speed, not the
    /// stop), so other work beside the run changes its wall-clock, not its result.
    #[arg(long, requires = "budget_minutes")]
    pub finish_planned_steps: bool,
    /// Evaluate the watched sets (validation classes and --watch splits) every N steps.
    #[arg(long, default_value_t = 0)]
    pub watch_every: usize,
    /// Test splits to watch (comma-separated: test; or test_seen,test_unseen), for curves only;
    /// they never choose the model.
    #[arg(long, value_delimiter = ',')]
    pub watch: Vec<String>,
    /// Keep a copy of the model every N steps in RUN_DIR/checkpoints/ (0: none) [default: 0;
    /// with --resume: as the run began, saved in its plan.json].
    #[arg(long)]
    pub keep_every: Option<usize>,
}

impl TrainRequest {
    /// Where the run's settings come from: `--config`, the setting flags by their names in the
    /// config's serde form, `--data`, the length ([`HibData::resolve`] lays them over the defaults).
    ///
    /// # Errors
    /// Flags that do not serialise (none do).
    pub fn settings(&self) -> Result<SettingsRequest> {
        let own_images = self.data.as_ref().map(|path| OwnImagesRequest {
            path: path.clone(),
            unseen_classes: self.unseen_classes,
            seen_test_fraction: self.seen_test_fraction,
            split_seed: self.split_seed,
        });
        let mut flags = overrides(&self.settings)?;
        for (key, value) in crate::request::key_values("set", &self.set)? {
            if flags.contains_key(&key) {
                return Err(invalid("set", &key, "a flag of its own gives it too; give it once"));
            }
            flags.insert(key, value);
        }
        Ok(SettingsRequest::new("hib train's flags", flags)
            .with_recipe(self.config.clone())
            .with_own_images(own_images)
            .with_length(self.steps, self.budget_minutes))
    }

    /// The run's watch plan.
    ///
    /// # Errors
    /// A budget that is not a positive number of minutes, a watched split that is not a test
    /// split, or watched splits without `--watch-every`.
    pub fn plan(&self) -> Result<TrainPlan> {
        if let Some(m) = self.budget_minutes {
            if !(m.is_finite() && m > 0.0) {
                return Err(invalid("budget-minutes", m, "give a positive number of minutes"));
            }
        }
        let watch_splits = self
            .watch
            .iter()
            .map(|s| match NDigitSplit::parse(s)? {
                NDigitSplit::Train => {
                    Err(invalid("watch", s, "watch test, test_seen or test_unseen (training images say nothing)"))
                }
                NDigitSplit::Validation => Err(invalid(
                    "watch",
                    s,
                    "the validation images are watched whenever the run holds some out (--validation-fraction); \
                     watch test, test_seen or test_unseen",
                )),
                split => Ok(split),
            })
            .collect::<Result<Vec<_>>>()?;
        if !watch_splits.is_empty() && self.watch_every == 0 {
            return Err(invalid("watch-every", 0, "--watch needs --watch-every N (steps between evaluations)"));
        }
        Ok(TrainPlan {
            budget_minutes: self.budget_minutes,
            watch_every: self.watch_every,
            watch_splits,
            keep_every: self.keep_every.unwrap_or(0),
            finish_planned_steps: self.finish_planned_steps,
            ..Default::default()
        })
    }

    /// For `hib train --continue` over a run with settings `own`: each setting this request asks
    /// for (a flag given, or a recipe's value other than the default) that differs from the
    /// run's, as `name = asked (the run's: own)`. The length is the new total and is not
    /// compared; `auto` precision is compared as it resolves on `device`.
    pub fn unapplied_settings(&self, data: &HibData, own: &HibConfig, device: tch::Device) -> Vec<String> {
        let form = |config: &HibConfig| match serde_json::to_value(config) {
            Ok(serde_json::Value::Object(form)) => form,
            _ => serde_json::Map::new(),
        };
        let Ok(request) = self.settings() else { return Vec::new() };
        let Ok(mut asked) = data.resolve(&request) else { return Vec::new() };
        // A run records the precision `auto` took.
        asked.model.conv_precision = asked.model.conv_precision.resolve(device).unwrap_or(asked.model.conv_precision);
        let (asked, own, defaults) = (form(&asked), form(own), form(&HibConfig::default()));
        let recipe = request.recipe.as_deref().and_then(|p| HibConfig::from_toml_file(p).ok()).map(|r| form(&r));
        let named = |name: &str| {
            request.overrides.contains_key(name) || recipe.as_ref().is_some_and(|r| r.get(name) != defaults.get(name))
        };
        asked
            .iter()
            .filter(|(name, value)| name.as_str() != "steps" && named(name) && own.get(name.as_str()) != Some(value))
            .map(|(name, value)| {
                format!("{name} = {value} (the run's: {})", own.get(name).unwrap_or(&serde_json::Value::Null))
            })
            .collect()
    }
}

/// A reproduction as flags: the settings every model shares, the seeds, the extra models and
/// tables, and the evaluation.
#[derive(Args)]
pub struct ReproduceRequest {
    /// The settings every model shares, by their names in the config's serde form.
    #[command(flatten)]
    pub settings: ReproduceSettingFlags,
    /// Training steps per model [default: the recipe's, else 20,000; with --budget-minutes,
    /// planned from speed].
    #[arg(long)]
    pub steps: Option<usize>,
    /// Minutes of training per model (evaluation excluded): the step count is planned from the
    /// speed of the first steps so that schedules end on time.
    #[arg(long)]
    pub budget_minutes: Option<f64>,
    /// With --budget-minutes: train every planned step even if the machine slows down after
    /// planning (the budget then fixes the step count, not the stop), so other work beside a
    /// long reproduction changes its wall-clock, not its numbers.
    #[arg(long, requires = "budget_minutes")]
    pub finish_planned_steps: bool,
    /// TOML recipe (any HibConfig fields: schedule, levers, batch) applied to every model;
    /// the flags below override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The test split Tables 1 and 2 are computed on [default: test (instance) or test_unseen
    /// (open-set), test_seen then beside it].
    #[arg(long, value_enum)]
    pub split: Option<TestSplit>,
    /// Evaluate the validation images or classes (if the recipe holds some out) and the
    /// tables' split every N steps during training (monitor.jsonl; quality against wall-clock;
    /// validation alone chooses model_best.safetensors, which every split is scored with).
    #[arg(long, default_value_t = 0)]
    pub watch_every: usize,
    /// Seeds per model of Table 1 (point, MoG-1, MoG-2; results are averaged).
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Seeds for the extra models: Table 5's beta = 0 and Appendix B's margins (the paper
    /// reports one run of each).
    #[arg(long, default_value_t = 1)]
    pub extra_seeds: u64,
    /// Repeats of the sampling-dependent evaluation.
    #[arg(long, default_value_t = 10)]
    pub repeats: usize,
    /// Evaluate on the first N images of every test class only: a smoke test or quick look,
    /// recorded in summary.json and every eval.json (the tables beside the paper use all).
    #[arg(long, value_name = "N")]
    pub eval_per_class: Option<usize>,
    /// Also train MoG-1 with beta = 0 (Table 5).
    #[arg(long)]
    pub beta_sweep: bool,
    /// Also write Tables 6 and 7 (plurality KNN, gallery/probe variants).
    #[arg(long)]
    pub appendix_g: bool,
    /// Also train point embeddings with the hard contrastive loss at these margins (Appendix B).
    #[arg(long)]
    pub appendix_b: bool,
    /// Also evaluate every kept checkpoint (each 1,000 steps) and plot quality against steps.
    #[arg(long)]
    pub curves: bool,
    /// Leave the figures out (a numbers-only look; the figures take seconds each).
    #[arg(long)]
    pub no_figures: bool,
}

/// The settings of `hib reproduce` that every model shares, serialised under their names in the
/// config's serde form and laid over `--config` ([`SettingsRequest`]).
#[derive(Args, Serialize)]
pub struct ReproduceSettingFlags {
    /// Which N-digit MNIST tables: instance (the paper's tables: every class in training and
    /// in test) or open-set (test_unseen's classes never trained on; hedge's extension)
    /// [default: the recipe's, else instance].
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<NDigitProtocol>,
    #[command(flatten)]
    #[serde(flatten)]
    shared: SharedSettingFlags,
}

impl ReproduceRequest {
    /// The reproduction these flags ask for, `command` recorded with it: the settings resolved
    /// and checked once (defaults ← `--config` ← the setting flags ← the length).
    ///
    /// # Errors
    /// A recipe that cannot be read, or settings out of range.
    pub fn config(&self, data: &DataRoot, command: String) -> Result<ReproduceConfig> {
        let request = SettingsRequest::new("hib reproduce's flags", overrides(&self.settings)?)
            .with_recipe(self.config.clone())
            .with_length(self.steps, self.budget_minutes);
        let hib = HibData::new(data.clone()).resolve(&request)?;
        Ok(ReproduceConfig {
            split: self.split.map_or(hib.data.protocol.main_test_split(), Into::into),
            hib,
            budget_minutes: self.budget_minutes,
            finish_planned_steps: self.finish_planned_steps,
            watch_every: self.watch_every,
            seeds: self.seeds,
            extra_seeds: self.extra_seeds,
            repeats: self.repeats,
            eval_images_per_class: self.eval_per_class,
            beta_sweep: self.beta_sweep,
            appendix_g: self.appendix_g,
            appendix_b: self.appendix_b,
            curves: self.curves,
            figures: !self.no_figures,
            command,
            ..Default::default()
        })
    }
}
