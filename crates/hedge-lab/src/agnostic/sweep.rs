//! `hedge agnostic sweep` as a library: one network per α and repeat, each trained and audited,
//! logged to `metrics.jsonl` and checkpointed (`progress.json`, committed by the run
//! directory's manifest) as it finishes, so an interrupted sweep resumes at its last finished
//! network; then `summary.json`, `table.md`, the α curves and (Context-MNIST) the activation-map
//! grid. Every file is typed: [`SweepConfig`], [`SweepAudit`], [`SweepSummary`].

use std::collections::BTreeMap;
use std::path::Path;

use hedge_data::{Adult, Backgrounds, ContextMnistConfig, DataRoot, Mnist, NpyArray, NpyData};
use hedge_eval::MeanStd;
use hedge_run::RunDirectory;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::context::{run_context, ContextAudit, ContextTensors, ImageSet};
use super::domain::{run_domain, DomainAudit, DomainTensors};
use super::fairness::{run_tabular, FairnessAudit, TabularTensors};
use crate::error::{invalid, Result};
use crate::LabError;
use hedge_agnostic::audit::activation_maps;
use hedge_agnostic::erasure::Removal;
use hedge_agnostic::train::DecisionPenaltyForm;
use hedge_agnostic::{Adversary, AgnosticNet, ExtractorKind, ModelConfig, TrainConfig};
use hedge_run::{run_resumable, Experiment, ParamGuard};

pub use hedge_run::experiment::{CONFIG_FILE, PROGRESS_FILE};
/// One audit per finished network.
pub const METRICS_FILE: &str = "metrics.jsonl";
pub const SUMMARY_FILE: &str = "summary.json";
pub const TABLE_FILE: &str = "table.md";
/// `images` `[k, 3, 28, 28]` u8, `alphas` `[a]`, `maps` `[a, k, 28, 28]` f32.
pub const MAPS_FILE: &str = "activation_maps.npz";
/// Folder of repeat 0's networks and activation maps, one per α.
pub const CHECKPOINTS_DIR: &str = "checkpoints";

/// The dataset a sweep runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SweepDataset {
    /// Digits on plain or photographed backgrounds; protected: the background.
    ContextMnist,
    /// MNIST → MNIST-M domain adaptation (DANN); protected: the domain.
    MnistM,
    /// Adult income; protected: sex.
    Adult,
    /// A user's CSV table: a two-valued target and a two-valued protected column.
    #[cfg_attr(feature = "clap", value(skip))]
    Table,
}

impl SweepDataset {
    pub fn name(self) -> &'static str {
        match self {
            SweepDataset::ContextMnist => "context-mnist",
            SweepDataset::MnistM => "mnist-m",
            SweepDataset::Adult => "adult",
            SweepDataset::Table => "table",
        }
    }

    /// SGD steps per network unless told otherwise.
    pub fn default_steps(self) -> usize {
        match self {
            SweepDataset::ContextMnist => 1500,
            SweepDataset::MnistM => 12_000,
            SweepDataset::Adult | SweepDataset::Table => 4000,
        }
    }
}

/// How much data a sweep builds (defaults per dataset where `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct DataOptions {
    /// Context-MNIST: background–target agreement of the target-labelled set and the IID test.
    pub rho: f64,
    /// Context-MNIST target-labelled images (10,000); MNIST-M digits per domain (60,000).
    pub target_train: Option<usize>,
    /// Context-MNIST context-labelled images.
    pub context_train: usize,
    /// Test images per test set (Context-MNIST 4,000; MNIST-M 10,000).
    pub test: Option<usize>,
    /// [`SweepDataset::Table`]: the user's table.
    pub table: Option<UserTable>,
}

/// A user's CSV table for a fairness sweep, and how its rows are split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserTable {
    /// The CSV file (absolute, so that `--resume` finds it from anywhere).
    pub path: std::path::PathBuf,
    /// Target, protected and dropped columns.
    pub spec: hedge_data::TableSpec,
    /// Share of the rows held out as the test split (its halves: the probes' train and test).
    pub test_fraction: f64,
    /// Seed of the row split.
    pub split_seed: u64,
}

impl Default for DataOptions {
    fn default() -> Self {
        DataOptions { rho: 0.95, target_train: None, context_train: 10_000, test: None, table: None }
    }
}

/// `config.json`'s description of the data a sweep was built on (enough to build it again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DataDescription {
    Context {
        config: ContextMnistConfig,
        measured_agreement: Agreement,
    },
    Domain {
        source: String,
        target: String,
        test_images_per_domain: i64,
        train_images_per_domain: i64,
    },
    /// A user's table (before [`DataDescription::Tabular`]: the untagged reader tries variants in
    /// order, and this one's fields are a superset of Adult's).
    UserTable {
        table: UserTable,
        features: usize,
        protected: String,
        test_rows: usize,
        train_rows: usize,
    },
    Tabular {
        features: usize,
        protected: String,
        test_rows: usize,
        train_rows: usize,
    },
}

/// Measured background–target agreement of every Context-MNIST set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub context_train: f64,
    pub probe_test: f64,
    pub probe_train: f64,
    pub target_train: f64,
    pub test_balanced: f64,
    pub test_iid: f64,
    pub test_reversed: f64,
}

/// A sweep's `config.json` (fields in the file's order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct SweepConfig {
    /// [`SWEEP_SCHEMA`] when written.
    pub schema: u32,
    pub alphas: Vec<f64>,
    pub command: String,
    pub data: DataDescription,
    pub dataset: SweepDataset,
    pub model: ModelConfig,
    /// Adam steps per probe.
    pub probe_steps: usize,
    /// Networks per α.
    pub repeats: u64,
    pub threads: i32,
    /// The training settings of every network (its α and seed set per network).
    pub train: TrainConfig,
    /// How the concept is removed.
    pub removal: Removal,
    /// Whose training settings `train` follows.
    pub protocol: TrainingProtocol,
}

/// The schema of a sweep's `config.json`: 2 records every setting; 1 (files without `schema`)
/// left out the settings added after it was written, and [`v1::sweep`] writes each in as hedge
/// ran before the setting existed.
pub const SWEEP_SCHEMA: u32 = 2;

impl hedge_run::schema::Schema for SweepConfig {
    const CURRENT: u32 = SWEEP_SCHEMA;
    const WHAT: &'static str = "a sweep's config.json";

    fn upgrade(_from: u32, form: &mut serde_json::Map<String, serde_json::Value>) -> std::result::Result<(), String> {
        v1::sweep(form)
    }
}

hedge_run::versioned_serde!(SweepConfig);

/// Schema 1 of the agnostic experiments' `config.json`, read only.
pub mod v1 {
    use hedge_agnostic::erasure::Removal;
    use hedge_agnostic::TrainConfig;
    use serde_json::{Map, Value};

    use super::TrainingProtocol;

    fn object<'a>(form: &'a mut Map<String, Value>, key: &str) -> Result<&'a mut Map<String, Value>, String> {
        form.get_mut(key).and_then(Value::as_object_mut).ok_or_else(|| format!("no `{key}` object"))
    }

    /// The training and network settings added after a file was written, as hedge trained before
    /// they existed: each of [`TrainConfig`]'s at its default (no step decay, no weight decay,
    /// the paper's objective, no adversary resets, no reweighing, no decision penalty), and
    /// G_f's plain ReLU without a bottleneck.
    ///
    /// # Errors
    /// No `train` or `model` object.
    pub fn networks(form: &mut Map<String, Value>) -> Result<(), String> {
        let Ok(Value::Object(defaults)) = serde_json::to_value(TrainConfig::default()) else {
            unreachable!("a struct serialises as an object")
        };
        let train = object(form, "train")?;
        for (key, value) in defaults {
            train.entry(key).or_insert(value);
        }
        let model = object(form, "model")?;
        model.entry("negative_slope").or_insert(0.0.into());
        model.entry("bottleneck").or_insert(Value::Null);
        Ok(())
    }

    /// A sweep's `config.json`: [`networks`]; removal by the training's own adversary and
    /// hedge's training protocol; and, for sweeps before hedge 0.1, Context-MNIST's measured
    /// agreement moved from beside the data's settings into the data's description.
    ///
    /// # Errors
    /// What [`networks`] refuses; a pre-0.1 Context-MNIST description without its agreement.
    pub fn sweep(form: &mut Map<String, Value>) -> Result<(), String> {
        networks(form)?;
        form.entry("removal").or_insert(serde_json::to_value(Removal::Adversary).expect("a removal serialises"));
        form.entry("protocol").or_insert(serde_json::to_value(TrainingProtocol::Hedge).expect("a protocol serialises"));
        let agreement = form.remove("measured_agreement").filter(|a| !a.is_null());
        let settings_alone = form.get("data").and_then(Value::as_object).is_some_and(|d| d.contains_key("rho"));
        if settings_alone {
            let agreement = agreement.ok_or("a Context-MNIST `data` without its `measured_agreement`")?;
            let settings = form.remove("data").expect("checked above");
            let data = serde_json::json!({ "config": settings, "measured_agreement": agreement });
            form.insert("data".into(), data);
        }
        Ok(())
    }
}

/// Whose training settings a sweep follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TrainingProtocol {
    /// Jia et al.'s (Sections 4.3–4.4; [`TrainConfig::jia`]): 10 epochs of 32, SGD 0.001 for
    /// the GRL divided by 10 every 3 epochs, momentum 0.5, weight decay 5e-4, α held, 10 repeats.
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Jia et al.'s settings (context-mnist only): 10 epochs of batches of 32, SGD divided by 10 every 3 epochs, momentum 0.5, weight decay 5e-4, α held; 10 repeats"
        )
    )]
    Paper,
    /// hedge's Ganin-style schedule: SGD 0.01 with momentum 0.9, Ganin's annealing, α ramped,
    /// batches of 64, a fixed step count per dataset.
    #[default]
    Hedge,
}

impl TrainingProtocol {
    pub fn name(self) -> &'static str {
        match self {
            TrainingProtocol::Paper => "paper",
            TrainingProtocol::Hedge => "hedge",
        }
    }
}

/// A dataset loaded for a sweep, as tensors.
pub enum PreparedData {
    Context(Box<ContextTensors>),
    Domain(Box<DomainTensors>),
    Tabular(Box<TabularTensors>),
}

/// One finished network's audit (a line of `metrics.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepAudit {
    Context(ContextAudit),
    Domain(DomainAudit),
    Tabular(FairnessAudit),
}

impl SweepAudit {
    pub fn alpha(&self) -> f64 {
        match self {
            SweepAudit::Context(a) => a.alpha,
            SweepAudit::Domain(a) => a.alpha,
            SweepAudit::Tabular(a) => a.alpha,
        }
    }

    /// Dotted paths of the audit's fields that are NaN or infinite. An audit has no optional
    /// field that serialises as `null` (absent ones are skipped), so every `null` of its JSON is
    /// a non-finite number.
    pub fn non_finite_fields(&self) -> Vec<String> {
        serde_json::to_value(self).map(|v| hedge_run::undefined::null_paths(&v)).unwrap_or_default()
    }

    fn probes(&self) -> (&hedge_agnostic::audit::ProbeResult, &hedge_agnostic::audit::ProbeResult) {
        match self {
            SweepAudit::Context(a) => (&a.probe_linear, &a.probe_mlp),
            SweepAudit::Domain(a) => (&a.probe_linear, &a.probe_mlp),
            SweepAudit::Tabular(a) => (&a.probe_linear, &a.probe_mlp),
        }
    }

    /// The probe ladder, where the audit ran it.
    fn ladder(&self) -> Option<&hedge_agnostic::ladder::LadderAudit> {
        match self {
            SweepAudit::Context(a) => a.ladder.as_ref(),
            SweepAudit::Domain(_) => None,
            SweepAudit::Tabular(a) => a.ladder.as_ref(),
        }
    }

    /// The larger of the two probes' information bounds (each bound is valid; an overconfident
    /// probe gives a looser one).
    fn probe_bits(&self) -> f64 {
        let (l, m) = self.probes();
        l.mutual_information_bits.max(m.mutual_information_bits)
    }
}

impl PreparedData {
    /// Builds the dataset of a new sweep from `data_dir`, with its description and the network
    /// shape that fits it.
    pub fn build(
        dataset: SweepDataset,
        options: &DataOptions,
        model: ModelConfig,
        root: &DataRoot,
    ) -> Result<(Self, DataDescription, ModelConfig)> {
        Ok(match dataset {
            SweepDataset::ContextMnist => {
                let config = ContextMnistConfig {
                    rho: options.rho,
                    target_train: options.target_train.unwrap_or(10_000),
                    context_train: options.context_train,
                    test: options.test.unwrap_or(4000),
                    ..Default::default()
                };
                let (data, description) = Self::context(&config, root.dir()?)?;
                (data, description, model)
            }
            SweepDataset::MnistM => {
                let (train, test) = (options.target_train.unwrap_or(60_000), options.test.unwrap_or(10_000));
                let (data, description) = Self::domain(train, test, root.dir()?)?;
                (data, description, model.with_target_classes(10))
            }
            SweepDataset::Adult => {
                let (data, description, inputs) = Self::tabular(root.dir()?)?;
                (data, description, model.with_extractor(ExtractorKind::Mlp { inputs, hidden: 100 }))
            }
            SweepDataset::Table => {
                let table = options.table.as_ref().ok_or_else(|| {
                    invalid("table", "none", "a table sweep needs the CSV file (--data FILE --target Y --protected A)")
                })?;
                let (data, description, inputs) = Self::user_table(table)?;
                (data, description, model.with_extractor(ExtractorKind::Mlp { inputs, hidden: 100 }))
            }
        })
    }

    /// Builds again the data a sweep's `config.json` describes (to resume it); `root` is read
    /// for the papers' datasets only.
    pub fn rebuild(config: &SweepConfig, root: &DataRoot) -> Result<Self> {
        if let (SweepDataset::Table, DataDescription::UserTable { table, .. }) = (&config.dataset, &config.data) {
            return Ok(Self::user_table(table)?.0);
        }
        let data_dir = root.dir()?;
        let data = match (&config.dataset, &config.data) {
            (SweepDataset::ContextMnist, DataDescription::Context { config: c, .. }) => Self::context(c, data_dir)?.0,
            (SweepDataset::MnistM, DataDescription::Domain { train_images_per_domain, test_images_per_domain, .. }) => {
                Self::domain(*train_images_per_domain as usize, *test_images_per_domain as usize, data_dir)?.0
            }
            (SweepDataset::Adult, DataDescription::Tabular { .. }) => Self::tabular(data_dir)?.0,
            (SweepDataset::Table, DataDescription::UserTable { table, .. }) => Self::user_table(table)?.0,
            (dataset, _) => {
                return Err(invalid("config.json data", dataset.name(), "the data description is of another dataset"))
            }
        };
        Ok(data)
    }

    fn context(config: &ContextMnistConfig, data_dir: &Path) -> Result<(Self, DataDescription)> {
        let mnist = Mnist::load(&data_dir.join("mnist"))?;
        let backgrounds = Backgrounds::load(&data_dir.join("bsds500"))?;
        let data = config.build(&mnist, &backgrounds)?;
        let measured_agreement = Agreement {
            context_train: data.context_train.agreement(),
            probe_test: data.probe_test.agreement(),
            probe_train: data.probe_train.agreement(),
            target_train: data.target_train.agreement(),
            test_balanced: data.test_balanced.agreement(),
            test_iid: data.test_iid.agreement(),
            test_reversed: data.test_reversed.agreement(),
        };
        let description = DataDescription::Context { config: *config, measured_agreement };
        Ok((PreparedData::Context(Box::new(ContextTensors::new(&data))), description))
    }

    fn domain(train: usize, test: usize, data_dir: &Path) -> Result<(Self, DataDescription)> {
        let mnist = Mnist::load(&data_dir.join("mnist"))?;
        let backgrounds = Backgrounds::load(&data_dir.join("bsds500"))?;
        let domain = DomainTensors::build(&mnist, &backgrounds, train, test, 0);
        let description = DataDescription::Domain {
            source: "MNIST train (grey in 3 channels)".into(),
            target: "MNIST-M from the same digits, BSDS500 crops, seed 0".into(),
            test_images_per_domain: domain.source_test_x.size()[0],
            train_images_per_domain: domain.source_x.size()[0],
        };
        Ok((PreparedData::Domain(Box::new(domain)), description))
    }

    fn tabular(data_dir: &Path) -> Result<(Self, DataDescription, i64)> {
        let adult = Adult::load(&data_dir.join("adult"))?;
        let description = DataDescription::Tabular {
            features: adult.features(),
            protected: "sex (Female = 1), removed from the inputs".into(),
            test_rows: adult.test.len(),
            train_rows: adult.train.len(),
        };
        Ok((PreparedData::Tabular(Box::new(TabularTensors::new(&adult, 0))), description, adult.features() as i64))
    }

    fn user_table(table: &UserTable) -> Result<(Self, DataDescription, i64)> {
        let read = hedge_data::Table::read_csv(&table.path, &table.spec)?;
        let split = read.fairness(table.test_fraction, table.split_seed)?;
        let protected = table.spec.protected.clone().unwrap_or_default();
        let description = DataDescription::UserTable {
            table: table.clone(),
            features: split.features(),
            protected: format!("'{protected}' (class 1: the later value in sorted order), removed from the inputs"),
            test_rows: split.test.len(),
            train_rows: split.train.len(),
        };
        Ok((PreparedData::Tabular(Box::new(TabularTensors::new(&split, 0))), description, split.features() as i64))
    }

    /// Trains and audits one network.
    pub fn run(
        &self,
        model: ModelConfig,
        config: &TrainConfig,
        removal: &Removal,
        probe_steps: usize,
        repeat: u64,
    ) -> Result<(SweepAudit, AgnosticNet)> {
        Ok(match self {
            PreparedData::Context(d) => {
                let (a, net) = run_context(d, model, config, removal.clone(), probe_steps, repeat)?;
                (SweepAudit::Context(a), net)
            }
            PreparedData::Domain(d) => {
                check_method(removal, config.adversary, SweepDataset::MnistM)?;
                let (a, net) = run_domain(d, model, config, probe_steps, repeat)?;
                (SweepAudit::Domain(a), net)
            }
            PreparedData::Tabular(d) => {
                let (a, net) = run_tabular(d, model, config, removal.clone(), probe_steps, repeat)?;
                (SweepAudit::Tabular(a), net)
            }
        })
    }

    /// Four plain and four photograph images from the start of the balanced test (Context-MNIST):
    /// the images the map grids show.
    pub(crate) fn shown_images(&self) -> Option<Tensor> {
        let PreparedData::Context(c) = self else { return None };
        let set: &ImageSet = &c.test_balanced;
        let pick = |a: i64| set.protected.eq(a).nonzero().squeeze_dim(1).narrow(0, 0, 4);
        Some(set.x.index_select(0, &Tensor::cat(&[pick(0), pick(1)], 0)))
    }
}

/// What a sweep keeps per network (its audit in the log, read back for the report, and its
/// place in the summary): about 4 KB, times α values x repeats.
fn network_footprint(alphas: f64, repeats: f64) -> hedge_run::Footprint<'static> {
    hedge_run::Footprint::new("agnostic sweep: the audits of α values x repeats networks", |v| v[0] * v[1] * 4096.0)
        .knob("--alphas (values)", alphas, 1.0)
        .knob("--repeats", repeats, 1.0)
}

/// "0:1:0.1" → 0, 0.1, …, 1; "0,0.5,1" → those.
pub fn parse_alphas(spec: &str) -> Result<Vec<f64>> {
    let bad =
        || invalid("alphas", spec, "expected start:end:step (e.g. 0:1:0.1) or a list (e.g. 0,0.5,1), values in [0, 1]");
    let values: Vec<f64> = if spec.contains(':') {
        let parts: Vec<f64> = spec
            .split(':')
            .map(|p| p.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad())?;
        let [start, end, step] = parts[..] else { return Err(bad()) };
        if step.is_nan() || step <= 0.0 || end < start {
            return Err(bad());
        }
        let count = ((end - start) / step + 1e-9).floor();
        // Counted before any is made: `0:1:1e-12` would be a trillion networks.
        network_footprint(count + 1.0, 1.0).check()?;
        let count = count as usize;
        (0..=count).map(|k| ((start + step * k as f64) * 1e9).round() / 1e9).collect()
    } else {
        spec.split(',').map(|p| p.trim().parse::<f64>()).collect::<std::result::Result<_, _>>().map_err(|_| bad())?
    };
    if values.is_empty() || values.iter().any(|a| !(0.0..=1.0).contains(a)) {
        return Err(bad());
    }
    Ok(values)
}

/// The summary key of an α: one decimal when that is exact ("0.3"), else the full value.
pub fn alpha_key(alpha: f64) -> String {
    if ((alpha * 10.0).round() / 10.0 - alpha).abs() < 1e-12 {
        format!("{alpha:.1}")
    } else {
        format!("{alpha}")
    }
}

/// What `progress` callbacks are told after each finished network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkFinished {
    pub index: usize,
    pub networks: usize,
    pub alpha: f64,
    pub repeat: u64,
}

impl SweepConfig {
    /// The adversary's settings in words (with its extra updates, resets, reweighing, bottleneck).
    pub(crate) fn adversary_label(&self) -> String {
        let t = &self.train;
        let mut label = match t.adversary {
            Adversary::Reversal => "grl".to_string(),
            Adversary::Confusion => "confusion".into(),
            Adversary::Hsic if t.hsic_bandwidth != 1.0 => format!("hsic (σ² = {} × median)", t.hsic_bandwidth),
            Adversary::Hsic => "hsic".into(),
            Adversary::Twin => "twin (ceiling)".into(),
            Adversary::TwinLabelled => "twin, labelled (ceiling)".into(),
        };
        if t.adversary_steps > 1 {
            label.push_str(&format!(", {} G_p updates", t.adversary_steps));
        }
        if t.reset_every > 0 {
            label.push_str(&format!(", G_p reset every {} steps", t.reset_every));
        }
        if t.reweigh {
            label.push_str(", reweighed");
        }
        if t.decision_penalty > 0.0 {
            let form = match t.decision_penalty_form {
                DecisionPenaltyForm::Aligned => "",
                DecisionPenaltyForm::Unnormalised => " (unnormalised)",
                DecisionPenaltyForm::Standardised => " (standardised)",
            };
            label.push_str(&format!(", decision HSIC{form} × {}", t.decision_penalty));
        }
        if let Some(width) = self.model.bottleneck {
            label.push_str(&format!(", {width}-unit bottleneck"));
        }
        if let Some(rho) = self.reference_rho() {
            label.push_str(&format!(", trained at ρ = {rho} (reference)"));
        }
        label
    }

    /// ρ of a Context-MNIST sweep trained away from the default (a reference run), else None.
    pub(crate) fn reference_rho(&self) -> Option<f64> {
        let rho = match &self.data {
            DataDescription::Context { config: c, .. } => Some(c.rho),
            _ => None,
        };
        rho.filter(|&r| (r - ContextMnistConfig::default().rho).abs() > 1e-12)
    }

    /// Networks in the order they train: repeats outer, α inner.
    fn networks(&self) -> Vec<(u64, f64)> {
        (0..self.repeats).flat_map(|r| self.alphas.iter().map(move |&a| (r, a))).collect()
    }
}

/// A sweep on the one experiment engine ([`hedge_run::Experiment`]): each network is a run of
/// one step, its audit the line of `metrics.jsonl`; `run`, `run_in`, `resume` and `report`
/// come from the engine.
impl Experiment for SweepConfig {
    type Data = PreparedData;
    type Root = DataRoot;
    type Summary = SweepSummary;
    type Finished = NetworkFinished;
    type Error = LabError;
    const FILES: &'static [&'static str] = &[METRICS_FILE, SUMMARY_FILE, TABLE_FILE];
    const KIND: &'static str = "agnostic sweep";

    fn is_started_as(&self, started: &Self) -> bool {
        Self { command: started.command.clone(), ..self.clone() } == *started
    }

    fn load(&self, root: &DataRoot) -> Result<PreparedData> {
        PreparedData::rebuild(self, root)
    }

    fn check(&self, _data: &PreparedData) -> Result<()> {
        self.check_ref()
    }

    fn continue_in(
        &self,
        dir: &RunDirectory,
        data: &PreparedData,
        progress: &mut dyn FnMut(NetworkFinished),
    ) -> Result<SweepSummary> {
        let shown = data.shown_images();
        let networks = self.networks();
        let audits: Vec<SweepAudit> = run_resumable(
            dir,
            METRICS_FILE,
            networks.len(),
            |index, _: Option<()>, on_step| {
                let (repeat, alpha) = networks[index];
                let config = self.train.with_alpha(alpha).with_seed(repeat);
                let (audit, net) = data.run(self.model, &config, &self.removal, self.probe_steps, repeat)?;
                let bad = audit.non_finite_fields();
                if !bad.is_empty() {
                    return Err(LabError::NonFinite {
                        what: format!("the audit of the network α = {alpha}, repeat {repeat} ({})", bad.join(", ")),
                        file: dir.file(METRICS_FILE).display().to_string(),
                        fix: "the training or a probe diverged; lower the learning rate and resume with --resume"
                            .into(),
                    });
                }
                if repeat == 0 {
                    // Repeat 0's network and its activation maps are kept; written before the
                    // checkpoint that counts the network, so a resumed sweep never lacks them.
                    let checkpoints = dir.file(CHECKPOINTS_DIR);
                    std::fs::create_dir_all(&checkpoints).map_err(|e| LabError::Write {
                        path: checkpoints.display().to_string(),
                        what: e.to_string(),
                    })?;
                    net.save(&checkpoints, &format!("alpha-{}", alpha_key(alpha)))?;
                    if let Some(maps) = shown.as_ref().and_then(|x| activation_maps(&net, x)) {
                        let name = format!("{CHECKPOINTS_DIR}/maps-alpha-{}.npz", alpha_key(alpha));
                        let array = NpyArray::new(vec![maps.size()[0] as usize, 28, 28], NpyData::F32(floats(&maps)));
                        dir.write_with(&name, |p| hedge_data::write_npz(p, &[("maps", array)]))?;
                    }
                }
                on_step(&audit, None)
            },
            |index| {
                let (repeat, alpha) = networks[index];
                progress(NetworkFinished { index, networks: networks.len(), alpha, repeat })
            },
        )?;
        if let Some(images) = &shown {
            write_activation_maps(dir, images, &self.alphas)?;
        }
        write_report(dir, self, &audits)
    }

    fn report_in(&self, dir: &RunDirectory) -> Result<SweepSummary> {
        let audits: Vec<SweepAudit> = dir.checkpointed_json_lines(METRICS_FILE)?;
        if audits.is_empty() {
            return Err(invalid("metrics.jsonl", dir.path().display(), "no finished network to report"));
        }
        redraw_activation_maps(dir.path())?;
        write_report(dir, self, &audits)
    }
}

/// Refuses a removal or adversary the dataset cannot take (checked before any data is built).
pub fn check_method(removal: &Removal, adversary: Adversary, dataset: SweepDataset) -> Result<()> {
    if adversary.needs_twins() && dataset != SweepDataset::ContextMnist {
        return Err(invalid(
            "adversary",
            format!("{adversary:?}"),
            "needs a flipped twin of every training image, which only context-mnist has",
        ));
    }
    let Removal::Erase(spec) = removal else { return Ok(()) };
    // Builds the eraser: an unknown kind or parameter is refused here, before any data is built.
    spec.build()?;
    if dataset == SweepDataset::MnistM {
        return Err(invalid(
            "removal",
            removal.name(),
            "MNIST -> MNIST-M aligns domains during training; it takes the adversary only",
        ));
    }
    Ok(())
}

impl ParamGuard for SweepConfig {
    type Error = LabError;

    /// Refuses impossible settings before anything is written.
    fn check_ref(&self) -> Result<()> {
        if self.repeats == 0 {
            return Err(invalid("repeats", self.repeats, "must be ≥ 1"));
        }
        if self.probe_steps == 0 {
            // Refused here, before any network trains, as the probe itself refuses it.
            return Err(invalid(
                "probe_steps",
                0,
                "a probe needs at least one training step (--probe-steps; the audit's default: 500)",
            ));
        }
        if self.alphas.is_empty() {
            return Err(invalid("alphas", "[]", "give at least one α"));
        }
        network_footprint(self.alphas.len() as f64, self.repeats as f64).check()?;
        for &a in &self.alphas {
            self.train.with_alpha(a).check_ref()?;
        }
        check_method(&self.removal, self.train.adversary, self.dataset)?;
        if let Removal::Erase(spec) = &self.removal {
            spec.build()?.check_width(self.model.feature_dim() as usize)?;
        }
        Ok(self.model.check_ref()?)
    }
}

fn floats(t: &Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(t.to_kind(Kind::Float).flatten(0, -1)).expect("float tensor")
}

/// What `activation_maps.png` shows.
const STRONGEST: &str = "strongest G_f response";

/// Gathers repeat 0's maps per α into `activation_maps.npz` and draws `activation_maps.png`.
///
/// # Shapes
/// `images`: `[k, 3, 28, 28]` in [−1, 1].
fn write_activation_maps(dir: &RunDirectory, images: &Tensor, alphas: &[f64]) -> Result<()> {
    let k = images.size()[0] as usize;
    let pixels: Vec<u8> = floats(images).iter().map(|&v| ((v + 1.0) * 127.5).round().clamp(0.0, 255.0) as u8).collect();
    let (mut shown_alphas, mut values) = (Vec::new(), Vec::new());
    for &alpha in alphas {
        let path = dir.file(&format!("{CHECKPOINTS_DIR}/maps-alpha-{}.npz", alpha_key(alpha)));
        if !path.is_file() {
            continue;
        }
        let arrays = hedge_data::read_npz(&path)?;
        let Some((_, NpyArray { data: NpyData::F32(v), .. })) = arrays.into_iter().find(|(n, _)| n == "maps") else {
            return Err(invalid("activation maps", path.display(), "expected an f32 array 'maps'"));
        };
        shown_alphas.push(alpha);
        values.extend(v);
    }
    if shown_alphas.is_empty() {
        return Ok(());
    }
    let arrays = [
        ("images", NpyArray::new(vec![k, 3, 28, 28], NpyData::U8(pixels.clone()))),
        ("alphas", NpyArray::new(vec![shown_alphas.len()], NpyData::F64(shown_alphas.clone()))),
        ("maps", NpyArray::new(vec![shown_alphas.len(), k, 28, 28], NpyData::F32(values.clone()))),
    ];
    dir.write_with(MAPS_FILE, |p| hedge_data::write_npz(p, &arrays))?;
    hedge_plot::activation_grid(&dir.file("activation_maps.png"), STRONGEST, k, &pixels, &shown_alphas, &values)?;
    Ok(())
}

/// Redraws `activation_maps.png` from a sweep's `activation_maps.npz`; `Ok(false)` when the
/// directory has none.
pub fn redraw_activation_maps(out: &Path) -> Result<bool> {
    let path = out.join(MAPS_FILE);
    if !path.exists() {
        return Ok(false);
    }
    let arrays = hedge_data::read_npz(&path)?;
    let get = |name: &str| {
        arrays.iter().find(|(n, _)| n == name).map(|(_, a)| a).ok_or_else(|| {
            invalid("activation maps", path.display(), format!("no array '{name}' (expected images, alphas, maps)"))
        })
    };
    let (images, alphas, maps) = (get("images")?, get("alphas")?, get("maps")?);
    let (NpyData::U8(pixels), NpyData::F64(alphas), NpyData::F32(values)) = (&images.data, &alphas.data, &maps.data)
    else {
        return Err(invalid("activation maps", path.display(), "expected u8 images, f64 alphas, f32 maps"));
    };
    let k = images.shape.first().copied().unwrap_or(0);
    if pixels.len() != k * 3 * 784 || values.len() != alphas.len() * k * 784 {
        return Err(invalid(
            "activation maps",
            path.display(),
            format!("sizes do not match {k} images of 3 × 28 × 28"),
        ));
    }
    hedge_plot::activation_grid(&out.join("activation_maps.png"), STRONGEST, k, pixels, alphas, values)?;
    Ok(true)
}

/// One column of a sweep's table: where it sits in `summary.json` (nested keys), its title and
/// how to read it from an audit.
struct Column {
    key: &'static [&'static str],
    title: &'static str,
    read: fn(&SweepAudit) -> Option<f64>,
}

/// Runs per α where a condition holds: (summary key, condition).
type Count = (&'static str, fn(&SweepAudit) -> bool);

/// A curve of a figure: a column and its label.
type Curve = (&'static str, &'static str);

/// What a sweep's report shows for one dataset.
struct Schema {
    intro: &'static str,
    columns: Vec<Column>,
    accuracy_curves: &'static [Curve],
    accuracy_title: &'static str,
    probe_curves: &'static [Curve],
    probe_title: &'static str,
    /// Chance accuracy at the protected concept when fixed by design (balanced sets); otherwise
    /// the probes' majority-class rate.
    chance: Option<f64>,
    /// Runs per α where a condition holds: (summary key, condition).
    counts: Vec<Count>,
    /// The probe ladder's columns (in `summary.json`, and in a table of their own).
    ladder: Vec<Column>,
}

macro_rules! field {
    ($variant:ident, $($f:ident).+) => {
        |a: &SweepAudit| match a {
            SweepAudit::$variant(x) => Some(x.$($f).+),
            _ => None,
        }
    };
}

/// A column read from one audit kind as an `Option<f64>` (`x => expression of x`): a number
/// later audits added, absent from older ones.
macro_rules! optional_field {
    ($variant:ident, $x:ident => $read:expr) => {
        |a: &SweepAudit| match a {
            SweepAudit::$variant($x) => $read,
            _ => None,
        }
    };
}

/// Per rung of the probe ladder, its accuracy on the features and on G_y's logits (the floor),
/// then the worst excess over the floor: `summary.json`'s `ladder.<rung>.{features,decision}` and
/// `ladder_worst_excess`.
macro_rules! ladder_columns {
    ($($rung:literal),*) => {
        vec![
            $(
                Column {
                    key: &["ladder", $rung, "features"],
                    title: $rung,
                    read: |a| a.ladder().and_then(|l| l.rung($rung)).map(|r| r.features.accuracy),
                },
                Column {
                    key: &["ladder", $rung, "decision"],
                    title: concat!($rung, " on G_y's logits"),
                    read: |a| a.ladder().and_then(|l| l.rung($rung)).and_then(|r| r.decision.map(|d| d.accuracy)),
                },
            )*
            Column {
                key: &["ladder_worst_excess"],
                title: "worst rung: features − logits",
                read: |a| a.ladder().and_then(|l| l.worst_excess()),
            },
        ]
    };
}

/// The ladder's columns, in the order of `hedge_agnostic::ladder::RUNGS`.
fn ladder_columns() -> Vec<Column> {
    ladder_columns!("linear", "quadratic", "rbf", "mlp", "forest")
}

/// The two fresh probes every dataset's audit has.
fn probe_columns() -> [Column; 2] {
    [
        Column { key: &["probe_accuracy", "linear"], title: "linear probe", read: |a| Some(a.probes().0.accuracy) },
        Column { key: &["probe_accuracy", "mlp"], title: "MLP probe", read: |a| Some(a.probes().1.accuracy) },
    ]
}

fn schema(dataset: SweepDataset) -> Schema {
    let bits = Column {
        key: &["probe_mutual_information_bits"],
        title: "MI bits (best probe)",
        read: |a| Some(a.probe_bits()),
    };
    let mlp_at_chance: Count = ("probe_mlp_at_chance_runs", |a| a.probes().1.at_chance);
    match dataset {
        SweepDataset::ContextMnist => {
            let mut columns = vec![
                Column { key: &["target_accuracy", "iid"], title: "IID", read: field!(Context, target_accuracy.iid) },
                Column {
                    key: &["target_accuracy", "balanced"],
                    title: "balanced",
                    read: field!(Context, target_accuracy.balanced),
                },
                Column {
                    key: &["target_accuracy", "reversed"],
                    title: "reversed",
                    read: field!(Context, target_accuracy.reversed),
                },
                Column {
                    key: &["worst_group_accuracy"],
                    title: "worst group",
                    read: field!(Context, worst_group_accuracy),
                },
                Column {
                    key: &["protected_head_accuracy"],
                    title: "G_p",
                    read: field!(Context, protected_head_accuracy),
                },
            ];
            columns.extend(probe_columns());
            columns.extend([
                Column {
                    key: &["probe_within_class_mlp"],
                    title: "MLP probe within class",
                    read: field!(Context, probe_within_class_mlp),
                },
                bits,
                Column {
                    key: &["probe_accuracy", "decision"],
                    title: "MLP probe on G_y's logits",
                    read: optional_field!(Context, c => c.probe_decision.map(|p| p.accuracy)),
                },
                Column {
                    key: &["probe_excess_over_decision"],
                    title: "MLP probe: features − logits",
                    read: optional_field!(Context, c => c.probe_excess_over_decision()),
                },
                Column {
                    key: &["reversed_gap"],
                    title: "balanced − reversed",
                    read: optional_field!(Context, c => Some(c.reversed_gap())),
                },
                Column {
                    key: &["accuracy_by_background", "plain"],
                    title: "balanced, plain background",
                    read: optional_field!(Context, c => c.accuracy_by_background.map(|b| b[0])),
                },
                Column {
                    key: &["accuracy_by_background", "photograph"],
                    title: "balanced, photograph",
                    read: optional_field!(Context, c => c.accuracy_by_background.map(|b| b[1])),
                },
                Column { key: &["flip_rate"], title: "flip rate", read: field!(Context, flip_rate) },
                Column { key: &["mask_share"], title: "mask share", read: field!(Context, mask_share) },
            ]);
            Schema {
                intro: "Context-MNIST, mean ± std over repeats. Target: digit ≥ 5; protected: background (chance 0.5).",
                columns,
                accuracy_curves: &[
                    ("IID", "G_y, IID test"),
                    ("balanced", "G_y, balanced test"),
                    ("reversed", "G_y, reversed test"),
                    ("G_p", "G_p (background)"),
                ],
                accuracy_title: "Context-MNIST: both classifiers vs α",
                probe_curves: &[
                    ("linear probe", "linear probe"),
                    ("MLP probe", "MLP probe"),
                    ("MLP probe within class", "MLP probe within class"),
                ],
                probe_title: "Context-MNIST: fresh probes on frozen features vs α",
                chance: Some(0.5),
                counts: vec![
                    mlp_at_chance,
                    (
                        "probe_within_class_at_chance_runs",
                        |a| matches!(a, SweepAudit::Context(c) if c.probe_within_class_at_chance),
                    ),
                    // Issue 34's pass criterion (`ContextAudit::is_agnostic`).
                    ("agnostic_runs", |a| matches!(a, SweepAudit::Context(c) if c.is_agnostic())),
                ],
                ladder: ladder_columns(),
            }
        }
        SweepDataset::MnistM => {
            let mut columns = vec![
                Column {
                    key: &["target_accuracy", "mnist"],
                    title: "MNIST test",
                    read: field!(Domain, target_accuracy.mnist),
                },
                Column {
                    key: &["target_accuracy", "mnist_m"],
                    title: "MNIST-M test",
                    read: field!(Domain, target_accuracy.mnist_m),
                },
                Column {
                    key: &["protected_head_accuracy"],
                    title: "G_p (domain)",
                    read: field!(Domain, protected_head_accuracy),
                },
            ];
            columns.extend(probe_columns());
            columns.push(bits);
            Schema {
                intro:
                    "MNIST → MNIST-M (DANN, Ganin et al. 2016), mean ± std over repeats. α = λ at the end of the ramp \
                        (0: source only). Ganin et al.: MNIST-M accuracy 0.5225 source only, 0.7666 DANN. \
                        Protected: domain (chance 0.5).",
                columns,
                accuracy_curves: &[
                    ("MNIST test", "G_y, MNIST test"),
                    ("MNIST-M test", "G_y, MNIST-M test"),
                    ("G_p (domain)", "G_p (domain)"),
                ],
                accuracy_title: "MNIST → MNIST-M: both classifiers vs λ",
                probe_curves: &[("linear probe", "linear probe"), ("MLP probe", "MLP probe")],
                probe_title: "MNIST → MNIST-M: fresh domain probes vs λ",
                chance: Some(0.5),
                counts: vec![mlp_at_chance],
                ladder: Vec::new(),
            }
        }
        SweepDataset::Adult | SweepDataset::Table => {
            let mut columns = vec![
                Column { key: &["accuracy"], title: "accuracy", read: field!(Tabular, accuracy) },
                Column {
                    key: &["worst_group_accuracy"],
                    title: "worst group",
                    read: field!(Tabular, worst_group_accuracy),
                },
                Column {
                    key: &["demographic_parity_difference"],
                    title: "parity difference",
                    read: field!(Tabular, demographic_parity_difference),
                },
                Column {
                    key: &["equalised_odds_difference"],
                    title: "equalised-odds difference",
                    read: field!(Tabular, equalised_odds_difference),
                },
                Column { key: &["positive_rate"], title: "rate ŷ = 1", read: field!(Tabular, positive_rate) },
                Column {
                    key: &["protected_head_accuracy"],
                    title: "G_p (sex)",
                    read: field!(Tabular, protected_head_accuracy),
                },
            ];
            columns.extend(probe_columns());
            columns.push(bits);
            let adult = dataset == SweepDataset::Adult;
            Schema {
                intro: if adult {
                    "Adult income, mean ± std over repeats. Target: income > 50K; protected: sex (removed from the \
                     inputs; chance = the male share of the probe-test rows). AIF360 adversarial debiasing: accuracy \
                     0.805 → 0.792, statistical parity difference −0.221 → −0.095."
                } else {
                    "Your table, mean ± std over repeats. Target and protected columns as config.json's `data` names \
                     them (class 1 of each: the later value in sorted order; the protected column is removed from the \
                     inputs; chance = the majority share of the probe-test rows)."
                },
                columns,
                accuracy_curves: &[
                    ("accuracy", "G_y accuracy"),
                    ("G_p (sex)", "G_p (sex)"),
                    ("parity difference", "parity difference"),
                    ("equalised-odds difference", "equalised odds"),
                ],
                accuracy_title: if adult {
                    "Adult: accuracy, G_p and fairness gaps vs α"
                } else {
                    "Table: accuracy, G_p and fairness gaps vs α"
                },
                probe_curves: &[("linear probe", "linear probe"), ("MLP probe", "MLP probe")],
                probe_title: if adult {
                    "Adult: fresh probes at sex vs α"
                } else {
                    "Table: fresh probes at the protected column vs α"
                },
                chance: None,
                counts: vec![mlp_at_chance],
                ladder: ladder_columns(),
            }
        }
    }
}

/// The probe ladder's table: per α and rung, accuracy on the features / on G_y's logits (mean ±
/// std over repeats), then the worst excess. Empty without ladder columns.
fn ladder_table(columns: &[Column], stats: &[Vec<MeanStd>], alphas: &[f64]) -> String {
    if columns.is_empty() {
        return String::new();
    }
    let cell = |s: &MeanStd| hedge_eval::plus_minus(s.mean, (s.n >= 2).then_some(s.std), 3, false, "1 repeat");
    let rungs: Vec<&str> =
        columns.iter().filter(|c| c.key.len() == 3 && c.key[2] == "features").map(|c| c.key[1]).collect();
    let mut md = String::from(
        "\nThe probe ladder (fresh probes on held-out rows): accuracy at the protected concept from the features / \
         from G_y's logits (the decision floor), and the largest excess of a rung over its floor.\n\n| α |",
    );
    for rung in &rungs {
        md.push_str(&format!(" {rung} |"));
    }
    md.push_str(&format!(" worst excess |\n|---|{}---|\n", "---|".repeat(rungs.len())));
    let at = |key: [&str; 3]| columns.iter().position(|c| c.key == key);
    for (i, &alpha) in alphas.iter().enumerate() {
        md.push_str(&format!("| {} |", alpha_key(alpha)));
        for rung in &rungs {
            let features = at(["ladder", rung, "features"]).map(|k| cell(&stats[k][i]));
            let decision = at(["ladder", rung, "decision"]).map(|k| cell(&stats[k][i]));
            md.push_str(&format!(" {} / {} |", features.unwrap_or_default(), decision.unwrap_or_else(|| "–".into())));
        }
        let worst = columns.iter().position(|c| c.key == ["ladder_worst_excess"]);
        md.push_str(&format!(" {} |\n", worst.map_or_else(|| "–".to_string(), |k| cell(&stats[k][i]))));
    }
    md
}

/// A mean and sample standard deviation (n − 1) over the repeats of one α.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpreadOverRepeats {
    pub mean: f64,
    /// Sample standard deviation (divides by n − 1); `None` (`null`, explained in the summary's
    /// `undefined`) for one repeat.
    pub std: Option<f64>,
}

/// A node of a per-α summary: a spread, a count, or a group of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SummaryNode {
    Spread(SpreadOverRepeats),
    Count(usize),
    Group(BTreeMap<String, SummaryNode>),
}

/// A sweep's `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// Per α (keyed by [`alpha_key`]): every column's spread, the at-chance counts and `runs`.
    pub alphas: BTreeMap<String, BTreeMap<String, SummaryNode>>,
    pub dataset: String,
    pub protected_chance: f64,
    /// The fields left `null` and why (a spread over one repeat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undefined: Vec<hedge_run::undefined::Undefined>,
    /// Why the numbers should not be trusted, where they should not (too few test rows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Fewer test rows than this under an accuracy, and its standard error at .5 exceeds .05: too
/// wide to tell a probe from chance or one α from another.
pub const FEWEST_MEASURED_ROWS: usize = 100;

/// The warning a sweep on a small table ends with: its accuracies rest on `test_rows` rows and
/// its probes' on half of them.
pub fn small_table_warning(description: &DataDescription) -> Option<String> {
    let test_rows = match description {
        DataDescription::UserTable { test_rows, .. } | DataDescription::Tabular { test_rows, .. } => *test_rows,
        _ => return None,
    };
    let probe_rows = test_rows / 2;
    (probe_rows < FEWEST_MEASURED_ROWS).then(|| {
        format!(
            "the probes are scored on {probe_rows} rows and the network on {test_rows} (one standard error at .5: \
             ±{:.2}), too few to tell a probe from chance; use a table with more rows, or a larger --test-fraction",
            0.5 / (probe_rows.max(1) as f64).sqrt()
        )
    })
}

/// Rebuilds `summary.json`, `table.md` and the figures of the sweep in `out` from its
/// `metrics.jsonl` (for example after an interrupted sweep).
pub fn report(out: &Path) -> Result<SweepSummary> {
    <SweepConfig as Experiment>::report(out)
}

fn write_report(dir: &RunDirectory, config: &SweepConfig, audits: &[SweepAudit]) -> Result<SweepSummary> {
    let mut schema = schema(config.dataset);
    // A number added to the audit later is left out of sweeps whose audits predate it.
    schema.columns.retain(|c| audits.iter().any(|a| (c.read)(a).is_some()));
    schema.ladder.retain(|c| audits.iter().any(|a| (c.read)(a).is_some()));
    // The ladder's numbers go to the summary with the others and to a table of their own.
    let table_columns = schema.columns.len();
    let ladder = std::mem::take(&mut schema.ladder);
    schema.columns.extend(ladder);
    let mut alphas: Vec<f64> = audits.iter().map(SweepAudit::alpha).collect();
    alphas.sort_by(f64::total_cmp);
    alphas.dedup();
    let of_alpha = |alpha: f64| audits.iter().filter(move |a| a.alpha() == alpha);
    let mut by_alpha = BTreeMap::new();
    let mut stats: Vec<Vec<MeanStd>> = vec![Vec::new(); schema.columns.len()];
    for &alpha in &alphas {
        let mut entry: BTreeMap<String, SummaryNode> = BTreeMap::new();
        for (k, column) in schema.columns.iter().enumerate() {
            let values: Vec<f64> = of_alpha(alpha).filter_map(column.read).collect();
            let s = MeanStd::of(&values);
            stats[k].push(s);
            let (last, groups) = column.key.split_last().expect("a key");
            let mut slot = &mut entry;
            for g in groups {
                let node = slot.entry(g.to_string()).or_insert_with(|| SummaryNode::Group(BTreeMap::new()));
                let SummaryNode::Group(inner) = node else { unreachable!("groups and values never share a key") };
                slot = inner;
            }
            let std = (s.n >= 2).then_some(s.std);
            slot.insert(last.to_string(), SummaryNode::Spread(SpreadOverRepeats { mean: s.mean, std }));
        }
        for (key, holds) in &schema.counts {
            entry.insert(key.to_string(), SummaryNode::Count(of_alpha(alpha).filter(|a| holds(a)).count()));
        }
        entry.insert("runs".into(), SummaryNode::Count(of_alpha(alpha).count()));
        by_alpha.insert(alpha_key(alpha), entry);
    }
    let chance = schema.chance.or_else(|| audits.first().map(|a| a.probes().1.chance)).unwrap_or(0.5);
    let summary = SweepSummary {
        alphas: by_alpha,
        dataset: config.dataset.name().to_string(),
        protected_chance: chance,
        undefined: Vec::new(),
        warnings: small_table_warning(&config.data).into_iter().collect(),
    };
    for w in &summary.warnings {
        tracing::warn!("{}: {w}", dir.path().display());
    }
    let undefined = hedge_run::undefined::explain_nulls(
        &summary,
        &[hedge_run::undefined::NullReason::new("*.std", hedge_eval::ONE_RUN_SPREAD)],
    );
    let summary = SweepSummary { undefined, ..summary };
    dir.write_json(SUMMARY_FILE, &summary)?;
    let network = if config.train.erase_on_alpha > 0.0 {
        format!("trained with its adversary at α = {} ({})", config.train.erase_on_alpha, config.adversary_label())
    } else {
        "trained without an adversary".to_string()
    };
    let removal = match &config.removal {
        Removal::Adversary => String::new(),
        r => format!(
            " Removal: {} on the frozen features of a network {network}, G_y retrained on the erased \
             features; α is the erasure strength.",
            r.name()
        ),
    };
    let mut md = format!("{}{removal}\n\n| α |", schema.intro);
    for column in &schema.columns[..table_columns] {
        md.push_str(&format!(" {} |", column.title));
    }
    md.push_str(&format!("\n|---|{}\n", "---|".repeat(table_columns)));
    for (i, &alpha) in alphas.iter().enumerate() {
        md.push_str(&format!("| {} |", alpha_key(alpha)));
        for s in &stats[..table_columns] {
            let std = (s[i].n >= 2).then_some(s[i].std);
            md.push_str(&format!(" {} |", hedge_eval::plus_minus(s[i].mean, std, 3, false, "1 repeat")));
        }
        md.push('\n');
    }
    md.push_str(&format!(
        "\nRuns per α: {}.\n",
        alphas.iter().map(|&a| format!("{}: {}", alpha_key(a), of_alpha(a).count())).collect::<Vec<_>>().join(", ")
    ));
    md.push_str(&ladder_table(&schema.columns[table_columns..], &stats[table_columns..], &alphas));
    if config.dataset == SweepDataset::ContextMnist {
        use super::context::criterion;
        let agnostic =
            |alpha: f64| of_alpha(alpha).filter(|a| matches!(a, SweepAudit::Context(c) if c.is_agnostic())).count();
        let probes = if audits.iter().any(|a| a.ladder().is_some()) {
            "every rung of the probe ladder at most {} more accurate on the features than on G_y's logits"
        } else {
            "the tuned MLP probe on the features at most {} above the same probe on G_y's logits"
        };
        md.push_str(&format!(
            "\nAgnostic networks per α (the audit's criterion: {}, balanced − reversed within ±{}, balanced ≥ {}; \
             networks audited before the {} existed cannot pass): {}.\n",
            probes.replace("{}", &criterion::MAX_PROBE_EXCESS.to_string()),
            criterion::MAX_REVERSED_GAP,
            criterion::MIN_BALANCED,
            if audits.iter().any(|a| a.ladder().is_some()) { "ladder" } else { "logit probe" },
            alphas.iter().map(|&a| format!("{}: {}", alpha_key(a), agnostic(a))).collect::<Vec<_>>().join(", ")
        ));
    }
    for w in &summary.warnings {
        md.push_str(&format!("\n**Warning:** {w}.\n"));
    }
    md.push_str(&format!("\nCommand: `{}`\n", config.command));
    dir.write_bytes(TABLE_FILE, md.as_bytes())?;
    let curve = |(title, label): &Curve| -> hedge_plot::MeanCurve {
        let k = schema.columns.iter().position(|c| c.title == *title).expect("a curve names a column");
        // One repeat draws no band.
        let band = |s: &MeanStd| if s.n >= 2 { s.std } else { 0.0 };
        (label.to_string(), alphas.iter().zip(&stats[k]).map(|(&a, s)| (a, s.mean, band(s))).collect())
    };
    let x_label = match (config.dataset, config.removal.is_post_hoc()) {
        (SweepDataset::MnistM, _) => "λ (DANN)",
        (_, true) => "erasure strength",
        _ => "α",
    };
    let accuracy: Vec<_> = schema.accuracy_curves.iter().map(curve).collect();
    hedge_plot::curves_with_error(
        &dir.file("accuracy_vs_alpha.png"),
        &accuracy,
        x_label,
        "mean ± std over repeats",
        schema.accuracy_title,
    )?;
    let mut probes: Vec<_> = schema.probe_curves.iter().map(curve).collect();
    probes.push(("chance".into(), alphas.iter().map(|&a| (a, chance, 0.0)).collect()));
    hedge_plot::curves_with_error(
        &dir.file("probe_vs_alpha.png"),
        &probes,
        x_label,
        "probe accuracy at the protected concept (mean ± std)",
        schema.probe_title,
    )?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_on_too_few_test_rows_says_so() {
        let table =
            |test_rows| DataDescription::Tabular { features: 3, protected: "s".into(), test_rows, train_rows: 14 };
        // 20 rows at the default 0.3: 6 test rows, 3 per probe half; SE at .5 = .5 / sqrt(3).
        let w = small_table_warning(&table(6)).unwrap();
        assert!(w.contains("scored on 3 rows") && w.contains("on 6") && w.contains("±0.29"), "{w}");
        assert!(small_table_warning(&table(2 * FEWEST_MEASURED_ROWS - 1)).is_some());
        // Adult's 16,281 test rows, and an image set, are no cause for a warning.
        assert_eq!(small_table_warning(&table(16_281)), None);
        assert_eq!(small_table_warning(&table(2 * FEWEST_MEASURED_ROWS)), None);
        let domain = DataDescription::Domain {
            source: "mnist".into(),
            target: "mnist-m".into(),
            test_images_per_domain: 10,
            train_images_per_domain: 10,
        };
        assert_eq!(small_table_warning(&domain), None);
    }

    /// Every committed sweep's config.json reads, and writes back as schema 2 that reads equal. A
    /// sweep from before hedge 0.1 (Context-MNIST's agreement beside the data's settings, no
    /// removal method, no G_f slope, no step decay) reads as the sweep it ran.
    #[test]
    fn committed_sweep_configs_read_as_the_sweeps_they_ran() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/agnostic");
        let mut stack = vec![root.clone()];
        let mut seen = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if path.file_name() != Some(std::ffi::OsStr::new(CONFIG_FILE)) || !text.contains("\"alphas\"") {
                    continue;
                }
                let config: SweepConfig =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let written = serde_json::to_value(&config).unwrap();
                assert_eq!(written["schema"], SWEEP_SCHEMA);
                assert_eq!(serde_json::from_value::<SweepConfig>(written).unwrap(), config, "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen >= 60, "{seen} sweeps under {}", root.display());
        let path = root.join("context-mnist-grl").join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let form: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            form.get("schema").is_none() && form["data"].get("rho").is_some(),
            "{} is no pre-0.1 sweep",
            path.display()
        );
        let old: SweepConfig = serde_json::from_str(&text).unwrap();
        let DataDescription::Context { config, measured_agreement } = old.data else { panic!("{:?}", old.data) };
        assert_eq!(config.rho, form["data"]["rho"].as_f64().unwrap());
        assert_eq!(measured_agreement.target_train, form["measured_agreement"]["target_train"].as_f64().unwrap());
        assert_eq!((old.removal, old.protocol), (Removal::Adversary, TrainingProtocol::Hedge));
        assert_eq!((old.model.negative_slope, old.model.bottleneck), (0.0, None));
        assert_eq!((old.train.decay_every, old.train.weight_decay, old.train.reweigh), (0, 0.0, false));
        let mut without = form.as_object().unwrap().clone();
        without.remove("measured_agreement");
        let e = serde_json::from_value::<SweepConfig>(without.into()).unwrap_err();
        assert!(e.to_string().contains("without its `measured_agreement`"), "{e}");
    }

    fn assert_close(a: &BTreeMap<String, SummaryNode>, b: &BTreeMap<String, SummaryNode>, at: &str) {
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "{at}");
        for (k, x) in a {
            match (x, &b[k]) {
                (SummaryNode::Spread(x), SummaryNode::Spread(y)) => {
                    assert!(
                        (x.mean - y.mean).abs() < 1e-12
                            && x.std.zip(y.std).map_or(x.std == y.std, |(a, b)| (a - b).abs() < 1e-12),
                        "{at} {k}: {x:?} vs {y:?}"
                    )
                }
                (SummaryNode::Count(x), SummaryNode::Count(y)) => assert_eq!(x, y, "{at} {k}"),
                (SummaryNode::Group(x), SummaryNode::Group(y)) => assert_close(x, y, &format!("{at} {k}")),
                (x, y) => panic!("{at} {k}: {x:?} vs {y:?}"),
            }
        }
    }

    #[test]
    fn alpha_grids_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_alphas("0:1:0.1").unwrap().len(), 11);
        assert_eq!(parse_alphas("0:1:0.1").unwrap()[3], 0.3);
        assert_eq!(parse_alphas("0, 0.5,1").unwrap(), vec![0.0, 0.5, 1.0]);
        for bad in ["0:1", "0:2:0.5", "1:0:0.1", "a,b", "0:1:0", ""] {
            assert!(parse_alphas(bad).is_err(), "{bad}");
        }
    }

    /// Every committed sweep's config, audits and summary read back typed, and its summary
    /// rebuilt from its audits equals the committed one.
    #[test]
    fn committed_sweeps_read_typed_and_their_summaries_rebuild_exactly() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/agnostic");
        let mut dirs = vec![];
        for entry in std::fs::read_dir(&root).unwrap().flatten() {
            dirs.push(entry.path());
            if let Ok(inner) = std::fs::read_dir(entry.path()) {
                dirs.extend(inner.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
            }
        }
        let mut seen = 0;
        for path in dirs.iter().filter(|p| p.join(SUMMARY_FILE).is_file()) {
            let dir = RunDirectory::open(path).unwrap();
            let config: SweepConfig = dir.read_json(CONFIG_FILE).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let audits: Vec<SweepAudit> = dir.read_json_lines(METRICS_FILE).unwrap();
            // Every committed audit is finite; a NaN planted in one is named by its path.
            for audit in &audits {
                assert_eq!(audit.non_finite_fields(), Vec::<String>::new(), "{}", path.display());
                let mut planted = audit.clone();
                let field = match &mut planted {
                    SweepAudit::Context(a) => {
                        a.probe_mlp.accuracy = f64::NAN;
                        "probe_mlp.accuracy"
                    }
                    SweepAudit::Domain(a) => {
                        a.protected_head_accuracy = f64::INFINITY;
                        "protected_head_accuracy"
                    }
                    SweepAudit::Tabular(a) => {
                        a.probe_linear.accuracy = f64::NAN;
                        "probe_linear.accuracy"
                    }
                };
                assert_eq!(planted.non_finite_fields(), vec![field.to_string()]);
            }
            assert!(audits.iter().all(|a| matches!(
                (config.dataset, a),
                (SweepDataset::ContextMnist, SweepAudit::Context(_))
                    | (SweepDataset::MnistM, SweepAudit::Domain(_))
                    | (SweepDataset::Adult | SweepDataset::Table, SweepAudit::Tabular(_))
            )));
            let committed: SweepSummary = dir.read_json(SUMMARY_FILE).unwrap();
            let copy = tempfile::tempdir().unwrap();
            let scratch = RunDirectory::create(copy.path(), "agnostic sweep", false).unwrap();
            let rebuilt = write_report(&scratch, &config, &audits).unwrap();
            // Older sweeps were summarised from floats parsed less exactly (last-digit
            // differences) and, on Context-MNIST, with the probes' chance rate instead of the
            // design's 0.5; every per-α number agrees to 1e-12.
            assert_eq!(rebuilt.dataset, committed.dataset);
            assert_eq!(
                rebuilt.alphas.keys().collect::<Vec<_>>(),
                committed.alphas.keys().collect::<Vec<_>>(),
                "{}",
                path.display()
            );
            for (alpha, entry) in &rebuilt.alphas {
                assert_close(entry, &committed.alphas[alpha], &format!("{} α {alpha}", path.display()));
            }
            seen += 1;
        }
        assert!(seen >= 5, "{seen} sweeps under {}", root.display());
    }
}
