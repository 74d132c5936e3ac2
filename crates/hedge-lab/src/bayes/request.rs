//! The flags of `hedge bayes …`, and the fits, studies and demonstrations they set up.

use hedge_bayes::gibbs::{GibbsConfig, MeanPrior};
use hedge_bayes::spike_slab::SpikeSlabConfig;
use hedge_bayes::{KernelKind, SparseMethod};
use hedge_data::TableFlags;

use crate::bayes::experiment::{GibbsDemo, GpRun, GpSuite, LengthscaleStudy, SpikeSlabDemo};
use crate::Result;

/// One GP fit as flags: the data (a UCI set or a user's table), the split, the model and the
/// hyper-parameter search.
#[derive(clap::Args, Clone, Debug)]
pub struct GpRequest {
    /// `uci/<name>`, a folder under $HEDGE_DATA_DIR (e.g. uci/yacht).
    #[arg(long, required_unless_present = "data", conflicts_with = "data")]
    pub dataset: Option<String>,
    #[command(flatten)]
    pub table: TableFlags,
    /// Split index: a standard split (index_train_K.txt / index_test_K.txt), or with --data the
    /// K-th of 20 seeded 90/10 splits of your table.
    #[arg(long, default_value_t = 0)]
    pub split: usize,
    /// Use a sparse GP with this many pseudo-inputs instead of the exact GP.
    #[arg(long)]
    pub sparse: Option<usize>,
    /// Sparse objective.
    #[arg(long, value_enum, default_value = "fitc")]
    pub method: SparseMethod,
    #[arg(long, value_enum, default_value = "ard")]
    pub kernel: KernelKind,
    /// Extra L-BFGS runs from random starts (default: 2 for the exact GP, 0 for sparse).
    #[arg(long)]
    pub restarts: Option<usize>,
    /// L-BFGS iterations per run.
    #[arg(long, default_value_t = 200)]
    pub max_iters: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl GpRequest {
    /// The fit these flags ask for.
    ///
    /// # Errors
    /// Neither --dataset nor --data.
    pub fn run(&self) -> Result<GpRun> {
        let (dataset, table) = self.table.or_dataset(self.dataset.as_deref())?;
        Ok(GpRun {
            dataset,
            table,
            split: self.split,
            sparse: self.sparse,
            method: self.method,
            kernel: self.kernel,
            restarts: self.restarts,
            max_iters: self.max_iters,
            seed: self.seed,
        })
    }
}

/// A GP suite as flags: the UCI sets, one split, the model and the search.
#[derive(clap::Args, Clone, Debug)]
pub struct GpSuiteRequest {
    /// UCI set names (folders under $HEDGE_DATA_DIR/uci).
    #[arg(long, value_delimiter = ',', default_value = "yacht,bostonHousing,concrete,kin8nm")]
    pub datasets: Vec<String>,
    #[arg(long, default_value_t = 0)]
    pub split: usize,
    /// Sparse GP with this many pseudo-inputs instead of the exact GP.
    #[arg(long)]
    pub sparse: Option<usize>,
    #[arg(long, value_enum, default_value = "fitc")]
    pub method: SparseMethod,
    #[arg(long)]
    pub restarts: Option<usize>,
    #[arg(long, default_value_t = 200)]
    pub max_iters: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl GpSuiteRequest {
    /// The suite these flags ask for, `command` recorded with it.
    pub fn suite(&self, command: String) -> GpSuite {
        GpSuite {
            datasets: self.datasets.clone(),
            split: self.split,
            sparse: self.sparse,
            method: self.method,
            restarts: self.restarts,
            max_iters: self.max_iters,
            seed: self.seed,
            command,
        }
    }
}

/// The lengthscale study as flags.
#[derive(clap::Args, Clone, Debug)]
pub struct LengthscaleRequest {
    /// Training points drawn uniformly on [−5, 5].
    #[arg(long, default_value_t = 12)]
    pub points: usize,
    /// Standard deviation of the observation noise.
    #[arg(long, default_value_t = 0.1)]
    pub noise: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl LengthscaleRequest {
    /// The study these flags ask for, `command` recorded with it.
    pub fn study(&self, command: &str) -> LengthscaleStudy {
        LengthscaleStudy::new(self.points, self.noise, self.seed, command)
    }
}

/// The prior on the mean in the Gibbs demonstration.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum MeanPriorChoice {
    /// μ ~ N(0, 100) independent of β (the notes' semi-conjugate model).
    Independent,
    /// μ | β ~ N(0, 1/(0.01 β)): the posterior is known exactly and printed alongside.
    Conjugate,
}

/// The Gibbs demonstration as flags: the data's truth and the sampler.
#[derive(clap::Args, Clone, Debug)]
pub struct GibbsRequest {
    /// Observations drawn from N(true_mean, true_sd²).
    #[arg(long, default_value_t = 50)]
    pub n: usize,
    #[arg(long, default_value_t = 2.0)]
    pub true_mean: f64,
    #[arg(long, default_value_t = 0.5)]
    pub true_sd: f64,
    #[arg(long, value_enum, default_value = "independent")]
    pub prior: MeanPriorChoice,
    #[arg(long, default_value_t = 4)]
    pub chains: usize,
    /// Kept draws per chain.
    #[arg(long, default_value_t = 2000)]
    pub samples: usize,
    #[arg(long, default_value_t = 500)]
    pub burn_in: usize,
    #[arg(long, default_value_t = 1)]
    pub thin: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl GibbsRequest {
    /// The demonstration these flags ask for, `command` recorded with it.
    pub fn demo(&self, command: String) -> GibbsDemo {
        let prior = match self.prior {
            MeanPriorChoice::Independent => MeanPrior::Independent { mean: 0.0, variance: 100.0 },
            MeanPriorChoice::Conjugate => MeanPrior::Conjugate { mean: 0.0, kappa: 0.01 },
        };
        GibbsDemo {
            command,
            n: self.n,
            sampler: GibbsConfig::default()
                .with_mean_prior(prior)
                .with_gamma_prior(1.0, 1.0)
                .with_chains(self.chains)
                .with_samples(self.samples, self.burn_in, self.thin)
                .with_seed(self.seed),
            true_mean: self.true_mean,
            true_sd: self.true_sd,
        }
    }
}

/// The spike-and-slab demonstration as flags: the synthetic design and the prior's variances.
#[derive(clap::Args, Clone, Debug)]
pub struct SpikeSlabRequest {
    /// Rows of the design matrix (standard normal inputs).
    #[arg(long, default_value_t = 200)]
    pub n: usize,
    /// Columns (candidate weights).
    #[arg(long, default_value_t = 30)]
    pub d: usize,
    /// Non-zero true weights (magnitudes 1–3, random signs and positions).
    #[arg(long, default_value_t = 5)]
    pub nonzero: usize,
    /// Standard deviation of the observation noise.
    #[arg(long, default_value_t = 0.5)]
    pub noise: f64,
    /// v₀, the spike's variance relative to σ².
    #[arg(long, default_value_t = 1e-2)]
    pub spike_variance: f64,
    /// v₁, the slab's variance relative to σ².
    #[arg(long, default_value_t = 10.0)]
    pub slab_variance: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl SpikeSlabRequest {
    /// The demonstration these flags ask for, `command` recorded with it.
    pub fn demo(&self, command: String) -> SpikeSlabDemo {
        SpikeSlabDemo {
            command,
            d: self.d,
            em: SpikeSlabConfig::default().with_variances(self.spike_variance, self.slab_variance),
            n: self.n,
            noise_sd: self.noise,
            nonzero: self.nonzero,
            seed: self.seed,
        }
    }
}
