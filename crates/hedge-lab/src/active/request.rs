//! The flags of `hedge active run` and `hedge active classify`, and the experiments they set up.

use hedge_active::classification_loop::ClassLoopConfig;
use hedge_active::neural_linear::{LayerInit, NeuralLinearConfig, NeuralLinearRecipe};
use hedge_active::regression_loop::{LoopConfig, Surrogate, TargetScaling, DEFAULT_PROJECTIONS, PAPER_TEST_FRACTION};
use hedge_data::{RegressionSource, TableFlags};

use crate::active::experiment::{ClassificationExperiment, RegressionExperiment, ACTIVE_SCHEMA};
use crate::active::protocol::ActiveProtocol;
use crate::Result;

/// Every registered acquisition, with its summary in `--help`.
fn acquisitions() -> clap::builder::PossibleValuesParser {
    crate::request::registered(hedge_active::ACQUISITIONS.iter().map(|r| (r.name, r.about)))
}

/// A regression experiment as flags: the dataset (or a user's table), the acquisitions, the
/// loop and the network under the Bayesian last layer.
#[derive(clap::Args, Clone, Debug)]
pub struct RegressionRequest {
    /// `uci/<name>` under $HEDGE_DATA_DIR.
    #[arg(long, conflicts_with = "data")]
    pub dataset: Option<String>,
    #[command(flatten)]
    pub table: TableFlags,
    /// Acquisitions to compare (a regression runs those that read entropies, features or
    /// ACS-FW's vectors).
    #[arg(long, value_delimiter = ',', default_value = "random,maxent,acs-fw", value_parser = acquisitions())]
    pub method: Vec<String>,
    /// Seeds 0..S (each its own pool/test split and initial labels).
    #[arg(long, default_value_t = 10)]
    pub seeds: u64,
    #[arg(long, default_value_t = 20)]
    pub init: usize,
    #[arg(long, default_value_t = 10)]
    pub batch: usize,
    /// Labels after the last round [default: the protocol's, init + 100 (paper) or 100 (hedge)].
    #[arg(long)]
    pub budget: Option<usize>,
    /// Whose experiment settings: `paper` (the authors' scripts: init + 100 labels, their
    /// minibatch rule for yacht, bostonHousing, energy and power-plant) or `hedge` (100 labels,
    /// minibatches of 64: results/active/hedge-protocol/) [default: paper on those four sets,
    /// hedge on any other data].
    #[arg(long, value_enum)]
    pub protocol: Option<ActiveProtocol>,
    /// ACS-FW: force `batch` distinct points per round (the paper allows re-picks).
    #[arg(long)]
    pub distinct: bool,
    /// Share of each seed's points held out for testing (the paper: 0.2); the rest is the pool.
    #[arg(long, default_value_t = PAPER_TEST_FRACTION)]
    pub test_fraction: f64,
    /// The labels targets are standardised on before each fit.
    #[arg(long, value_enum, default_value = "initial")]
    pub target_scaling: TargetScaling,
    /// ACS-FW on J random projections of the posterior (O(pool·J) per step) [default: 10, the
    /// form that scored lower than the closed form on all four UCI sets].
    #[arg(long, conflicts_with = "closed_form")]
    pub projections: Option<usize>,
    /// ACS-FW on the closed-form pool × pool inner products of the NIG last layer instead of
    /// random projections (the paper's form for NeuralLinear; O(pool²) memory).
    #[arg(long)]
    pub closed_form: bool,
    /// How the network under the Bayesian last layer is trained: `paper` (Pinsler et al.: the NIG
    /// posterior-predictive objective, batch norm, minibatches of 64 or, under --protocol paper,
    /// the authors' rule, cosine learning rate over --epochs; the default: at or near the paper's
    /// RMSE, 2–3x faster than mse) or `mse` (hedge's first recipe: least squares with a separate
    /// head, full batch, --steps).
    #[arg(long, value_enum, default_value = "paper")]
    pub recipe: NeuralLinearRecipe,
    /// The model fitted every round: `neural-linear` (the paper's) or `gp` (an exact GP with an
    /// ARD RBF kernel fitted by marginal likelihood: a reference for what the same labels allow;
    /// random and maxent only).
    #[arg(long, value_enum, default_value = "neural-linear")]
    pub surrogate: Surrogate,
    /// Also fit that GP on every round's labels and report its RMSE beside the acquiring model's
    /// (`gp_test_rmse` in rounds.jsonl; a column in the table): what each acquisition's labels
    /// allow a smooth model, seed by seed. Adds a GP fit per round (≈ 0.1–1 s at ≤ 100 labels).
    #[arg(long)]
    pub score_with_gp: bool,
    /// NeuralLinear fits per round from different starts, used as one equal-weight mixture by
    /// the prediction and every acquisition (not the paper's recipe, which fits one; costs K
    /// fits per round).
    #[arg(long, default_value_t = 1)]
    pub ensemble: usize,
    /// mse recipe: full-batch Adam steps per network fit.
    #[arg(long, default_value_t = 8000)]
    pub steps: usize,
    /// paper recipe: epochs per network fit.
    #[arg(long, default_value_t = 1000)]
    pub epochs: usize,
    /// Adam learning rate of the network (paper recipe: the cosine schedule's start) [default:
    /// 1e-2; paper recipe on power-plant 1e-3].
    #[arg(long)]
    pub lr: Option<f64>,
    /// mse: L2 penalty on every weight; paper: Adam weight decay on the linear weights [default:
    /// mse 1e-4; paper 1.0, on power-plant 3.0].
    #[arg(long)]
    pub weight_decay: Option<f64>,
    /// The last layer's inverse-gamma prior scale b₀ on the noise variance [default: 1; paper
    /// recipe on power-plant 3].
    #[arg(long)]
    pub b0: Option<f64>,
    /// How the network's layers start: `tch` (tch's defaults: weights U(±√(6/fan_in)), batch-norm
    /// scale U(0, 1)) or `pytorch` (PyTorch's: weights U(±1/√fan_in), batch-norm scale 1)
    /// [default: the recipe's].
    #[arg(long, value_enum)]
    pub layer_init: Option<LayerInit>,
    /// Any loop or network setting by its name under config.json's `loop`, laid over the flags
    /// (e.g. --set model.epochs=300 --set target_scaling=false). Refused with its path
    /// when there is no such setting.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl RegressionRequest {
    /// The experiment these flags ask for, `command` recorded with it: a default that depends on
    /// another setting (the budget and minibatch rule on the protocol, the protocol on the
    /// dataset, the network on the recipe and dataset) is resolved here.
    ///
    /// # Errors
    /// No dataset, an unreadable dataset name, or the paper protocol on data the authors' scripts
    /// do not cover.
    pub fn experiment(&self, command: String) -> Result<RegressionExperiment> {
        let (dataset, table) = self.table.or_dataset(self.dataset.as_deref())?;
        let source = RegressionSource::parse(&dataset, table.as_ref())?;
        let active_protocol = self.protocol.unwrap_or(ActiveProtocol::default_for(&source));
        // Only a run with ACS-FW records a form for it.
        let projections = match (self.method.iter().any(|m| m == "acs-fw"), self.closed_form) {
            (true, false) => Some(self.projections.unwrap_or(DEFAULT_PROJECTIONS)),
            _ => None,
        };
        let model = match self.recipe {
            NeuralLinearRecipe::Paper => active_protocol.paper_recipe(&source)?,
            NeuralLinearRecipe::Mse => NeuralLinearConfig::default(),
        };
        let loop_config = LoopConfig {
            init: self.init,
            batch: self.batch,
            budget: self.budget.unwrap_or(active_protocol.budget(self.init)),
            distinct: self.distinct,
            projections,
            test_fraction: self.test_fraction,
            target_scaling: self.target_scaling,
            surrogate: self.surrogate,
            score_with_gp: self.score_with_gp,
            ensemble: self.ensemble,
            model: NeuralLinearConfig {
                steps: self.steps,
                epochs: self.epochs,
                learning_rate: self.lr.unwrap_or(model.learning_rate),
                weight_decay: self.weight_decay.unwrap_or(model.weight_decay),
                nig: model.nig.with_prior(model.nig.a0, self.b0.unwrap_or(model.nig.b0)),
                init: self.layer_init.map_or(model.init, LayerInit::from),
                ..model
            },
        };
        let loop_config = crate::request::with_set(&loop_config, &self.set, "the experiment's loop")?;
        Ok(RegressionExperiment {
            schema: ACTIVE_SCHEMA,
            command,
            dataset,
            table,
            methods: self.method.clone(),
            protocol: RegressionExperiment::protocol_for(&loop_config),
            loop_config,
            active_protocol,
            seeds: self.seeds,
        })
    }
}

/// A classification experiment as flags: the image set, the acquisitions, the pool and the CNN.
#[derive(clap::Args, Clone, Debug)]
pub struct ClassificationRequest {
    /// Folder under $HEDGE_DATA_DIR with the four IDX files: fashion-mnist or mnist.
    #[arg(long, default_value = "fashion-mnist")]
    pub dataset: String,
    /// Acquisitions to compare (bald and least-confidence read class probabilities).
    #[arg(long, value_delimiter = ',', default_value = "random,maxent,bald,acs-fw", value_parser = acquisitions())]
    pub method: Vec<String>,
    /// Seeds 0..S (each its own pool, test subset, initial labels and networks).
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// Pool size, drawn per seed from the training split.
    #[arg(long, default_value_t = 5000)]
    pub pool: usize,
    /// Test images, drawn per seed from the test split.
    #[arg(long, default_value_t = 2000)]
    pub test: usize,
    #[arg(long, default_value_t = 20)]
    pub init: usize,
    #[arg(long, default_value_t = 20)]
    pub batch: usize,
    #[arg(long, default_value_t = 200)]
    pub budget: usize,
    /// ACS-FW: force `batch` distinct images per round.
    #[arg(long)]
    pub distinct: bool,
    /// Adam steps per CNN fit (64 images per step).
    #[arg(long, default_value_t = 300)]
    pub steps: usize,
    /// Posterior draws of the last layer for the predictive, MaxEnt and BALD.
    #[arg(long, default_value_t = 100)]
    pub samples: i64,
    /// Random projections J for ACS-FW.
    #[arg(long, default_value_t = 10)]
    pub projections: i64,
    /// Any loop or network setting by its name under config.json's `loop`, laid over the flags
    /// (e.g. --set model.learning_rate=0.01). Refused with its path when there is no such setting.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl ClassificationRequest {
    /// The experiment these flags ask for, `command` recorded with it, run on libtorch's current
    /// thread count.
    ///
    /// # Errors
    /// A `--set` key the loop's settings do not have.
    pub fn experiment(&self, command: String) -> Result<ClassificationExperiment> {
        let mut loop_config = ClassLoopConfig {
            init: self.init,
            batch: self.batch,
            budget: self.budget,
            distinct: self.distinct,
            samples: self.samples,
            projections: self.projections,
            ..Default::default()
        };
        loop_config.model = loop_config.model.with_steps(self.steps);
        let loop_config = crate::request::with_set(&loop_config, &self.set, "the experiment's loop")?;
        Ok(ClassificationExperiment {
            schema: ACTIVE_SCHEMA,
            command,
            dataset: self.dataset.clone(),
            loop_config,
            methods: self.method.clone(),
            pool: self.pool,
            protocol: ClassificationExperiment::PROTOCOL.into(),
            seeds: self.seeds,
            test: self.test,
            threads: tch::get_num_threads(),
        })
    }
}
