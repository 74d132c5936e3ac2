//! MCMC diagnostics over several chains: split-R̂ and the effective sample size with Geyer's
//! initial monotone sequence (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4–11.5).

use serde::{Deserialize, Serialize};

/// Summary of one scalar quantity across chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainSummary {
    pub mean: f64,
    pub sd: f64,
    /// 2.5% and 97.5% quantiles of the pooled draws.
    pub interval_95: (f64, f64),
    /// Effective sample size of the pooled draws.
    pub ess: f64,
    /// Split-R̂ (close to 1 when the chains agree).
    pub r_hat: f64,
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn sample_variance(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// Splits each chain in half (dropping a middle draw when odd).
fn split(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    chains
        .iter()
        .flat_map(|c| {
            let h = c.len() / 2;
            [c[..h].to_vec(), c[c.len() - h..].to_vec()]
        })
        .collect()
}

/// (W, var⁺) of equal-length chains.
fn variance_components(chains: &[Vec<f64>]) -> (f64, f64) {
    let n = chains[0].len() as f64;
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let w = chains.iter().map(|c| sample_variance(c)).sum::<f64>() / chains.len() as f64;
    let b_over_n = sample_variance(&means);
    (w, (n - 1.0) / n * w + b_over_n)
}

/// Split-R̂ of equal-length chains (each at least 4 draws).
pub fn split_r_hat(chains: &[Vec<f64>]) -> f64 {
    let s = split(chains);
    let (w, var_plus) = variance_components(&s);
    if w == 0.0 {
        return 1.0;
    }
    (var_plus / w).sqrt()
}

/// Autocovariance of `x` at lags 0..max_lag (biased, divides by n).
fn autocovariance(x: &[f64], max_lag: usize) -> Vec<f64> {
    let n = x.len();
    let m = mean(x);
    (0..=max_lag.min(n - 1))
        .map(|lag| (0..n - lag).map(|i| (x[i] - m) * (x[i + lag] - m)).sum::<f64>() / n as f64)
        .collect()
}

/// Effective sample size of equal-length chains (split in half first, as Stan does).
pub fn effective_sample_size(chains: &[Vec<f64>]) -> f64 {
    let s = split(chains);
    let m = s.len() as f64;
    let n = s[0].len();
    let (_, var_plus) = variance_components(&s);
    let total = m * n as f64;
    if var_plus == 0.0 {
        return total;
    }
    let w = s.iter().map(|c| sample_variance(c)).sum::<f64>() / m;
    let max_lag = n - 1;
    let acov: Vec<Vec<f64>> = s.iter().map(|c| autocovariance(c, max_lag)).collect();
    let rho = |t: usize| 1.0 - (w - acov.iter().map(|a| a[t]).sum::<f64>() / m) / var_plus;
    // Geyer: sum consecutive pairs while positive, forcing them to be non-increasing.
    let mut tau = -1.0;
    let mut previous = f64::INFINITY;
    let mut t = 0;
    while t < max_lag {
        let pair = rho(t) + rho(t + 1);
        if pair <= 0.0 {
            break;
        }
        let pair = pair.min(previous);
        tau += 2.0 * pair;
        previous = pair;
        t += 2;
    }
    total / tau.max(1.0 / total.log10().max(1.0))
}

/// Mean, sd, 95% interval, ESS and split-R̂ of equal-length chains.
pub fn summarise(chains: &[Vec<f64>]) -> ChainSummary {
    let mut pooled: Vec<f64> = chains.iter().flatten().copied().collect();
    pooled.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let pos = p * (pooled.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        pooled[lo] + (pooled[hi] - pooled[lo]) * (pos - lo as f64)
    };
    ChainSummary {
        mean: mean(&pooled),
        sd: sample_variance(&pooled).sqrt(),
        interval_95: (q(0.025), q(0.975)),
        ess: effective_sample_size(chains),
        r_hat: split_r_hat(chains),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    fn ar1(phi: f64, n: usize, offset: f64, seed: u64) -> Vec<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut x = 0.0;
        (0..n)
            .map(|_| {
                x = phi * x + (1.0 - phi * phi).sqrt() * rng.sample::<f64, _>(StandardNormal);
                x + offset
            })
            .collect()
    }

    #[test]
    fn independent_draws_have_full_ess_and_unit_r_hat() {
        let chains: Vec<Vec<f64>> = (0..4).map(|s| ar1(0.0, 2000, 0.0, s)).collect();
        let ess = effective_sample_size(&chains);
        assert!((ess / 8000.0 - 1.0).abs() < 0.15, "{ess}");
        assert!((split_r_hat(&chains) - 1.0).abs() < 0.01);
    }

    /// AR(1) with coefficient φ has integrated autocorrelation time (1 + φ)/(1 − φ).
    #[test]
    fn ar1_chains_have_the_known_ess() {
        let chains: Vec<Vec<f64>> = (0..4).map(|s| ar1(0.9, 5000, 0.0, 10 + s)).collect();
        let expected = 20000.0 * (1.0 - 0.9) / (1.0 + 0.9);
        let ess = effective_sample_size(&chains);
        assert!((ess / expected - 1.0).abs() < 0.3, "{ess} vs {expected}");
    }

    #[test]
    fn chains_that_disagree_have_large_r_hat() {
        let chains: Vec<Vec<f64>> = (0..4).map(|s| ar1(0.5, 1000, s as f64, 20 + s)).collect();
        assert!(split_r_hat(&chains) > 1.5);
    }
}
