//! Gibbs sampling for a normal model x_i ~ N(μ, β⁻¹) (Q2 of the notes). Two priors on μ:
//! independent N(μ₀, s₀) — the semi-conjugate prior of the notes, where
//! μ | β, X ~ N((μ₀/s₀ + βΣx)/(1/s₀ + nβ), (1/s₀ + nβ)⁻¹) and
//! β | μ, X ~ Gamma(a + n/2, b + Σ(x − μ)²/2) — or the conjugate N(μ₀, (κ₀β)⁻¹), whose exact
//! normal-gamma posterior lets a test check the sampler.

use rand::SeedableRng;
use rand_distr::{Distribution, Gamma, Normal};
use serde::{Deserialize, Serialize};

use crate::diagnostics::{summarise, ChainSummary};
use crate::error::{invalid, BayesError, Result};
use hedge_run::ParamGuard;

/// Prior on the mean μ.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MeanPrior {
    /// μ ~ N(mean, variance), independent of β.
    Independent { mean: f64, variance: f64 },
    /// μ | β ~ N(mean, 1/(κβ)).
    Conjugate { mean: f64, kappa: f64 },
}

/// Sampler settings.
///
/// | name | default | purpose |
/// |---|---|---|
/// | `mean_prior` | N(0, 100) | prior on μ |
/// | `a`, `b` | 1, 1 | Gamma(a, rate b) prior on the precision β |
/// | `chains` | 4 | independent chains, each started from a different β |
/// | `samples` | 2000 | kept draws per chain |
/// | `burn_in` | 500 | draws discarded at the start of each chain |
/// | `thin` | 1 | keep every `thin`-th draw |
/// | `seed` | 0 | |
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GibbsConfig {
    pub mean_prior: MeanPrior,
    pub a: f64,
    pub b: f64,
    pub chains: usize,
    pub samples: usize,
    pub burn_in: usize,
    pub thin: usize,
    pub seed: u64,
}

impl Default for GibbsConfig {
    fn default() -> Self {
        Self {
            mean_prior: MeanPrior::Independent { mean: 0.0, variance: 100.0 },
            a: 1.0,
            b: 1.0,
            chains: 4,
            samples: 2000,
            burn_in: 500,
            thin: 1,
            seed: 0,
        }
    }
}

/// Draws and diagnostics.
#[derive(Debug, Clone, Serialize)]
pub struct GibbsResult {
    /// Kept μ draws, one vector per chain.
    pub mu: Vec<Vec<f64>>,
    /// Kept β draws, one vector per chain.
    pub beta: Vec<Vec<f64>>,
    pub mu_summary: ChainSummary,
    pub beta_summary: ChainSummary,
}

impl GibbsConfig {
    pub fn with_mean_prior(mut self, p: MeanPrior) -> Self {
        self.mean_prior = p;
        self
    }
    pub fn with_gamma_prior(mut self, a: f64, b: f64) -> Self {
        self.a = a;
        self.b = b;
        self
    }
    pub fn with_chains(mut self, chains: usize) -> Self {
        self.chains = chains;
        self
    }
    pub fn with_samples(mut self, samples: usize, burn_in: usize, thin: usize) -> Self {
        self.samples = samples;
        self.burn_in = burn_in;
        self.thin = thin;
        self
    }
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Runs the chains on observations `x`.
    pub fn run(&self, x: &[f64]) -> Result<GibbsResult> {
        self.check_ref()?;
        crate::linalg::check_finite_slice(x, "observations")?;
        if x.is_empty() {
            return Err(BayesError::NotEnoughData { what: "Gibbs sampling".into(), found: 0, needed: 1 });
        }
        let n = x.len() as f64;
        let sum: f64 = x.iter().sum();
        let sample_var = x.iter().map(|v| (v - sum / n).powi(2)).sum::<f64>() / n;
        let mut mu_chains = Vec::with_capacity(self.chains);
        let mut beta_chains = Vec::with_capacity(self.chains);
        for chain in 0..self.chains {
            let mut rng =
                rand_chacha::ChaCha8Rng::seed_from_u64(self.seed.wrapping_mul(1000).wrapping_add(chain as u64));
            // Over-dispersed starts: the data's precision scaled by 0.1 … 10.
            let spread = 10f64.powf(-1.0 + 2.0 * chain as f64 / (self.chains - 1) as f64);
            let mut beta = spread / sample_var.max(1e-12);
            let (mut mus, mut betas) = (Vec::with_capacity(self.samples), Vec::with_capacity(self.samples));
            let total = self.burn_in + self.samples * self.thin;
            for step in 0..total {
                let (mu_mean, mu_var) = match self.mean_prior {
                    MeanPrior::Independent { mean, variance } => {
                        let precision = 1.0 / variance + n * beta;
                        ((mean / variance + beta * sum) / precision, 1.0 / precision)
                    }
                    MeanPrior::Conjugate { mean, kappa } => {
                        ((kappa * mean + sum) / (kappa + n), 1.0 / ((kappa + n) * beta))
                    }
                };
                let mu = Normal::new(mu_mean, mu_var.sqrt())
                    .map_err(|e| invalid("mu", mu_mean, e.to_string()))?
                    .sample(&mut rng);
                let ss: f64 = x.iter().map(|v| (v - mu).powi(2)).sum();
                let (shape, rate) = match self.mean_prior {
                    MeanPrior::Independent { .. } => (self.a + 0.5 * n, self.b + 0.5 * ss),
                    MeanPrior::Conjugate { mean, kappa } => {
                        (self.a + 0.5 * (n + 1.0), self.b + 0.5 * ss + 0.5 * kappa * (mu - mean).powi(2))
                    }
                };
                beta =
                    Gamma::new(shape, 1.0 / rate).map_err(|e| invalid("beta", shape, e.to_string()))?.sample(&mut rng);
                if step >= self.burn_in && (step - self.burn_in) % self.thin == 0 {
                    mus.push(mu);
                    betas.push(beta);
                }
            }
            mu_chains.push(mus);
            beta_chains.push(betas);
        }
        Ok(GibbsResult {
            mu_summary: summarise(&mu_chains),
            beta_summary: summarise(&beta_chains),
            mu: mu_chains,
            beta: beta_chains,
        })
    }
}

impl ParamGuard for GibbsConfig {
    type Error = BayesError;

    fn check_ref(&self) -> Result<()> {
        let positive = |name, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(invalid(name, v, "must be a finite number > 0"))
            }
        };
        positive("a", self.a)?;
        positive("b", self.b)?;
        match self.mean_prior {
            MeanPrior::Independent { mean, variance } => {
                positive("mean_prior.variance", variance)?;
                if !mean.is_finite() {
                    return Err(invalid("mean_prior.mean", mean, "must be finite"));
                }
            }
            MeanPrior::Conjugate { mean, kappa } => {
                positive("mean_prior.kappa", kappa)?;
                if !mean.is_finite() {
                    return Err(invalid("mean_prior.mean", mean, "must be finite"));
                }
            }
        }
        if self.chains < 2 {
            return Err(invalid("chains", self.chains, "R-hat needs at least 2 chains"));
        }
        if self.samples < 4 {
            return Err(invalid("samples", self.samples, "need at least 4 kept draws per chain"));
        }
        if self.thin == 0 {
            return Err(invalid("thin", 0, "must be at least 1"));
        }
        Ok(())
    }
}

/// The exact normal-gamma posterior of the conjugate model: (μₙ, κₙ, aₙ, bₙ), with
/// `E[μ] = μₙ`, `E[β] = aₙ/bₙ`, `Var[μ] = bₙ/(κₙ(aₙ − 1))`.
pub fn normal_gamma_posterior(x: &[f64], mean: f64, kappa: f64, a: f64, b: f64) -> (f64, f64, f64, f64) {
    let n = x.len() as f64;
    let xbar = x.iter().sum::<f64>() / n;
    let ss: f64 = x.iter().map(|v| (v - xbar).powi(2)).sum();
    let kappa_n = kappa + n;
    let mu_n = (kappa * mean + n * xbar) / kappa_n;
    (mu_n, kappa_n, a + 0.5 * n, b + 0.5 * ss + kappa * n * (xbar - mean).powi(2) / (2.0 * kappa_n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use rand_distr::StandardNormal;

    #[test]
    fn conjugate_gibbs_matches_the_normal_gamma_posterior() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let x: Vec<f64> = (0..25).map(|_| 2.0 + 0.5 * rng.sample::<f64, _>(StandardNormal)).collect();
        let (mean, kappa, a, b) = (0.0, 0.5, 2.0, 1.0);
        let result = GibbsConfig::default()
            .with_mean_prior(MeanPrior::Conjugate { mean, kappa })
            .with_gamma_prior(a, b)
            .with_samples(5000, 200, 1)
            .run(&x)
            .unwrap();
        let (mu_n, kappa_n, a_n, b_n) = normal_gamma_posterior(&x, mean, kappa, a, b);
        let mu_sd = (b_n / (kappa_n * (a_n - 1.0))).sqrt();
        let beta_mean = a_n / b_n;
        let beta_sd = a_n.sqrt() / b_n;
        // Within 4 Monte-Carlo standard errors (sd / √ESS).
        let m = &result.mu_summary;
        assert!((m.mean - mu_n).abs() < 4.0 * mu_sd / m.ess.sqrt(), "μ: {} vs {mu_n} (ESS {})", m.mean, m.ess);
        assert!((m.sd / mu_sd - 1.0).abs() < 0.05, "sd μ {} vs {mu_sd}", m.sd);
        let bsum = &result.beta_summary;
        assert!((bsum.mean - beta_mean).abs() < 4.0 * beta_sd / bsum.ess.sqrt(), "β: {} vs {beta_mean}", bsum.mean);
        assert!(m.r_hat < 1.01 && bsum.r_hat < 1.01);
    }

    #[test]
    fn semi_conjugate_sampler_recovers_the_truth() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let x: Vec<f64> = (0..500).map(|_| -1.0 + 2.0 * rng.sample::<f64, _>(StandardNormal)).collect();
        let r = GibbsConfig::default().run(&x).unwrap();
        assert!((r.mu_summary.mean + 1.0).abs() < 0.3, "{:?}", r.mu_summary);
        assert!((r.beta_summary.mean - 0.25).abs() < 0.05, "{:?}", r.beta_summary);
        assert!(r.mu_summary.interval_95.0 < -1.0 && r.mu_summary.interval_95.1 > -1.0);
    }

    #[test]
    fn rejects_impossible_settings() {
        assert!(GibbsConfig::default().with_chains(1).run(&[1.0]).is_err());
        assert!(GibbsConfig::default().with_gamma_prior(-1.0, 1.0).run(&[1.0]).is_err());
        assert!(GibbsConfig::default().run(&[1.0, f64::NAN]).is_err());
    }
}
