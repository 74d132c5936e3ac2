//! The flags of `hedge agnostic sweep` and `hedge agnostic exp1`, and the experiments they set up.

use hedge_agnostic::eraser::EraserSpec;
use hedge_agnostic::erasure::Removal;
use hedge_agnostic::train::DecisionPenaltyForm;
use hedge_agnostic::{Adversary, ModelConfig, Objective, TrainConfig};
use hedge_data::{ContextMnistConfig, DataRoot, TableFlags};

use crate::agnostic::exp1::Exp1Config;
use crate::agnostic::sweep::{
    check_method, parse_alphas, DataOptions, PreparedData, SweepConfig, SweepDataset, TrainingProtocol, UserTable,
};
use crate::error::invalid;
use crate::request::FlagContext;
use crate::Result;
use hedge_run::ParamGuard;

/// A sweep as flags: the data, the α grid, how the concept is removed, the training schedule
/// and the network.
#[derive(clap::Args, Clone, Debug)]
pub struct SweepRequest {
    #[arg(long, value_enum, default_value = "context-mnist", conflicts_with = "data")]
    pub dataset: SweepDataset,
    #[command(flatten)]
    pub table: TableFlags,
    /// With --data: the protected column (two values; removed from the inputs).
    #[arg(long, requires = "data", value_name = "COLUMN")]
    pub protected: Option<String>,
    /// With --data: share of the rows held out as the test split (halved for the probes).
    #[arg(long, requires = "data", default_value_t = 0.3)]
    pub test_fraction: f64,
    /// start:end:step, or a comma-separated list. For mnist-m, α is DANN's λ at the end of the
    /// ramp (Ganin et al.: 1; 0 trains on the source only).
    #[arg(long, default_value = "0:1:0.1")]
    pub alphas: String,
    /// Networks per α (different initialisation and batches) [default: 3; 10 with --protocol paper].
    #[arg(long)]
    pub repeats: Option<u64>,
    /// Whose training settings: `hedge` (Ganin-style: SGD 0.01, momentum 0.9, annealing, α
    /// ramped, batches of 64) or `paper` (Jia et al.'s, context-mnist only: 10 epochs of 32, SGD
    /// from 0.001 divided by 10 every 3 epochs, momentum 0.5, weight decay 5e-4, α held).
    #[arg(long, value_enum, default_value = "hedge", conflicts_with_all = ["steps", "batch", "no_ramp"])]
    pub protocol: TrainingProtocol,
    /// context-mnist: background–target agreement in the target-labelled training set and the IID test.
    #[arg(long, default_value_t = 0.95)]
    pub rho: f64,
    /// Training images: context-mnist target-labelled set (default 10,000); mnist-m MNIST
    /// digits and as many MNIST-M images (default 60,000).
    #[arg(long)]
    pub target_train: Option<usize>,
    /// context-mnist: context-labelled training images.
    #[arg(long, default_value_t = 10_000)]
    pub context_train: usize,
    /// Test images per test set (context-mnist default 4,000; mnist-m 10,000).
    #[arg(long)]
    pub test: Option<usize>,
    /// SGD steps per network (default: context-mnist 1,500, mnist-m 12,000, adult 4,000).
    #[arg(long)]
    pub steps: Option<usize>,
    /// Examples per step from each training set [default: 64].
    #[arg(long)]
    pub batch: Option<i64>,
    /// How G_f hides the concept: the paper's gradient reversal, a confusion loss, or a kernel
    /// independence penalty (HSIC) instead of an adversary.
    #[arg(long, value_enum, default_value = "reversal")]
    pub adversary: Adversary,
    /// How the concept is removed: `adversary` (during training, --adversary), or post hoc by a
    /// registered eraser on the frozen features of a network trained without one, with G_y
    /// retrained on top: leace (closed-form linear erasure), inlp (iterated null-space
    /// projection), quadratic-leace (an oracle reading each row's concept), mean-difference (a
    /// baseline), kernel (iterative kernel erasure; --eraser-param rounds=N). Post hoc, α is the
    /// erasure strength (0: none, 1: all).
    #[arg(long, default_value = "adversary")]
    pub removal: String,
    /// With a post-hoc --removal: train the network whose features are erased at this α with
    /// its own --adversary (and --reweigh…), so the eraser is stacked on an adversarially
    /// trained network (0: a plain network).
    #[arg(long, default_value_t = 0.0, value_name = "ALPHA")]
    pub erase_on_alpha: f64,
    /// INLP's rounds of logistic regression (with --removal inlp).
    #[arg(long, default_value_t = 10)]
    pub inlp_iterations: usize,
    /// A parameter of the --removal eraser, KEY=VALUE (repeatable; numbers are read as numbers).
    #[arg(long = "eraser-param", value_name = "KEY=VALUE")]
    pub eraser_params: Vec<String>,
    /// G_p updates per feature update (1: plain GRL).
    #[arg(long, default_value_t = 1)]
    pub adversary_steps: usize,
    /// Re-initialise G_p every this many steps and train it alone (--adversary-reset-steps)
    /// before G_f sees it again (0: never).
    #[arg(long, default_value_t = 0)]
    pub adversary_reset_every: usize,
    #[arg(long, default_value_t = 200)]
    pub adversary_reset_steps: usize,
    /// Draw the target-labelled batches with Kamiran & Calders' reweighing weights
    /// P(y)·P(a)/P(y, a), so that in training the target is independent of the concept.
    #[arg(long)]
    pub reweigh: bool,
    /// β: also penalise β × the HSIC between G_y's logits and the concept within each target
    /// class (the decision's own dependence on the concept; 0: off).
    #[arg(long, default_value_t = 0.0)]
    pub decision_penalty: f64,
    /// How --decision-penalty measures that dependence.
    #[arg(long, value_enum, default_value = "aligned")]
    pub decision_penalty_form: DecisionPenaltyForm,
    /// With --adversary hsic: the kernel's σ² as a multiple of the median heuristic's (below 1: a
    /// local kernel that sees fine structure; above 1: a smooth one).
    #[arg(long, default_value_t = 1.0)]
    pub hsic_bandwidth: f64,
    /// Keep α fixed instead of ramping it up.
    #[arg(long)]
    pub no_ramp: bool,
    /// Leaky ReLU slope in G_f (0: Ganin's ReLU). A leaky G_f cannot collapse to all-dead units.
    #[arg(long, default_value_t = 0.0)]
    pub negative_slope: f64,
    /// End G_f in a dense layer of this many units (its output becomes the audited features;
    /// default: none, Ganin's 768 pooled conv maps).
    #[arg(long)]
    pub bottleneck: Option<i64>,
    /// Adam steps per probe.
    #[arg(long, default_value_t = 300)]
    pub probe_steps: usize,
    /// Any training or network setting by its name in config.json, laid over the flags (e.g.
    /// --set train.momentum=0.5 --set model.negative_slope=0.1). Refused with its path when the
    /// settings have no such field.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// The settings of a sweep that `--set` reaches.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Settable {
    train: TrainConfig,
    model: ModelConfig,
}

impl SweepRequest {
    /// The sweep these flags ask for, `command` recorded with it, and its data built from `root`:
    /// the settings are checked before the data is built (and both before a caller touches
    /// --out).
    ///
    /// # Errors
    /// A setting out of range, a removal method the dataset cannot take, or data that cannot be
    /// read.
    pub fn prepare(&self, command: String, root: &DataRoot) -> Result<(SweepConfig, PreparedData)> {
        let dataset = if self.table.data.is_some() { SweepDataset::Table } else { self.dataset };
        let schedule = match self.protocol {
            TrainingProtocol::Paper => {
                if dataset != SweepDataset::ContextMnist {
                    let reason = format!(
                        "Jia et al.'s settings are reproduced on the context-mnist analogue only; use --protocol hedge for {}",
                        dataset.name()
                    );
                    return Err(invalid("protocol", "paper", reason));
                }
                TrainConfig::jia(self.target_train.unwrap_or(ContextMnistConfig::default().target_train), 1e-3)
            }
            TrainingProtocol::Hedge => TrainConfig {
                ramp: !self.no_ramp,
                steps: self.steps.unwrap_or(SweepDataset::default_steps(dataset)),
                batch: self.batch.unwrap_or(64),
                ..Default::default()
            },
        };
        let train = TrainConfig {
            objective: if dataset == SweepDataset::MnistM { Objective::Dann } else { Objective::Paper },
            adversary: self.adversary,
            adversary_steps: self.adversary_steps,
            reset_every: self.adversary_reset_every,
            reset_steps: self.adversary_reset_steps,
            reweigh: self.reweigh,
            decision_penalty: self.decision_penalty,
            decision_penalty_form: self.decision_penalty_form,
            hsic_bandwidth: self.hsic_bandwidth,
            erase_on_alpha: self.erase_on_alpha,
            ..schedule
        };
        let table = match self.table.spec() {
            Some((path, spec)) => {
                let Some(protected) = self.protected.clone() else {
                    return Err(invalid(
                        "protected",
                        "none",
                        "--data needs --protected COLUMN: the concept to remove and audit",
                    ));
                };
                let spec = spec.with_protected(protected);
                Some(UserTable { path: path.into(), spec, test_fraction: self.test_fraction, split_seed: 0 })
            }
            None => None,
        };
        let options = DataOptions {
            rho: self.rho,
            target_train: self.target_train,
            context_train: self.context_train,
            test: self.test,
            table,
        };
        let alphas = parse_alphas(&self.alphas).flag(format_args!("--alphas '{}'", self.alphas))?;
        let removal = self.removal()?;
        if self.erase_on_alpha > 0.0 && !removal.is_post_hoc() {
            return Err(invalid(
                "erase-on-alpha",
                self.erase_on_alpha,
                "stacks an eraser on an adversarially trained network: give a post-hoc --removal (leace, kernel…), or set α with --alphas",
            ));
        }
        let model = ModelConfig::default().with_negative_slope(self.negative_slope).with_bottleneck(self.bottleneck);
        let Settable { train, model } = crate::request::with_set(&Settable { train, model }, &self.set, "the sweep")?;
        train.with_alpha(alphas[0]).check_ref()?;
        check_method(&removal, train.adversary, dataset)?;
        model.check_ref()?;
        let (data, description, model) = PreparedData::build(dataset, &options, model, root)?;
        let repeats = self.repeats.unwrap_or(match self.protocol {
            TrainingProtocol::Paper => 10,
            TrainingProtocol::Hedge => 3,
        });
        let config = SweepConfig {
            schema: crate::agnostic::sweep::SWEEP_SCHEMA,
            alphas,
            command,
            data: description,
            dataset,
            model,
            probe_steps: self.probe_steps,
            repeats,
            threads: tch::get_num_threads(),
            train,
            removal,
            protocol: self.protocol,
        };
        Ok((config, data))
    }

    /// `--removal` and its parameters as settings (`inlp` takes `--inlp-iterations`; any eraser
    /// takes `--eraser-param KEY=VALUE`); an unknown eraser or parameter is refused here, naming
    /// the registered ones.
    fn removal(&self) -> Result<Removal> {
        let kind = self.removal.as_str();
        if kind == "adversary" {
            return match self.eraser_params.first() {
                Some(p) => Err(invalid(
                    "eraser-param",
                    p,
                    "the adversary takes no eraser parameters (choose an eraser with --removal)",
                )),
                None => Ok(Removal::Adversary),
            };
        }
        let mut spec = EraserSpec::new(kind);
        if kind == "inlp" {
            spec = spec.with("iterations", self.inlp_iterations);
        }
        for p in &self.eraser_params {
            let Some((key, value)) = p.split_once('=') else {
                return Err(invalid("eraser-param", p, "write KEY=VALUE"));
            };
            let value = serde_json::from_str::<serde_json::Value>(value)
                .ok()
                .filter(serde_json::Value::is_number)
                .unwrap_or_else(|| serde_json::Value::String(value.to_string()));
            spec = spec.with(key, value);
        }
        spec.build().flag(format_args!("--removal {kind}"))?;
        Ok(Removal::Erase(spec))
    }
}

/// Experiment 1 as flags: the Context-MNIST data and the training schedule of both models.
#[derive(clap::Args, Clone, Debug)]
pub struct Exp1Request {
    /// Background–target agreement in the target-labelled training set and the target test.
    #[arg(long, default_value_t = 0.95)]
    pub rho: f64,
    #[arg(long, default_value_t = 10_000)]
    pub target_train: usize,
    #[arg(long, default_value_t = 10_000)]
    pub context_train: usize,
    /// Images in the target test and in the background-only test.
    #[arg(long, default_value_t = 4_000)]
    pub test: usize,
    #[arg(long, default_value_t = 1500)]
    pub steps: usize,
    /// Whose training settings: `hedge` (SGD 0.01, momentum 0.9, Ganin's annealing, batches of
    /// 64, --steps) or `paper` (Jia et al.'s Experiment 1: 10 epochs of 32, SGD from 0.01 divided
    /// by 10 every 3 epochs, momentum 0.5, weight decay 5e-4).
    #[arg(long, value_enum, default_value = "hedge", conflicts_with = "steps")]
    pub protocol: TrainingProtocol,
    /// Evaluate both models every this many steps.
    #[arg(long, default_value_t = 100)]
    pub every: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl Exp1Request {
    /// The experiment these flags ask for, `command` recorded with it, run on libtorch's current
    /// thread count.
    pub fn experiment(&self, command: String) -> Exp1Config {
        Exp1Config {
            schema: crate::agnostic::sweep::SWEEP_SCHEMA,
            command,
            context_test: Exp1Config::CONTEXT_TEST.into(),
            data: ContextMnistConfig {
                rho: self.rho,
                target_train: self.target_train,
                context_train: self.context_train,
                test: self.test,
                seed: self.seed,
                ..Default::default()
            },
            every: self.every,
            model: ModelConfig::default(),
            threads: tch::get_num_threads(),
            train: match self.protocol {
                TrainingProtocol::Paper => TrainConfig { seed: self.seed, ..TrainConfig::jia(self.target_train, 1e-2) },
                TrainingProtocol::Hedge => TrainConfig { steps: self.steps, seed: self.seed, ..Default::default() },
            },
        }
    }
}
