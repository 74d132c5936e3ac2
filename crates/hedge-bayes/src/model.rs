//! What every Bayesian model of the toolbox shares: [`Fit`] (settings fitted to inputs and
//! targets), [`Predict`] (a fitted regression model's predictive at new inputs) and the one
//! predictive type they return, [`Prediction`] — Gaussian (GPs, Bayesian linear regression with
//! known noise) or Student-t (normal–inverse-gamma linear regression, the noise integrated out).
//!
//! ```
//! use faer::Mat;
//! use hedge_bayes::linear::{BayesLinearConfig, NigLinearConfig};
//! use hedge_bayes::{Fit, ParamGuard, Predict};
//!
//! /// Any model's held-out RMSE and mean negative log density, through the traits alone.
//! fn score<M: Fit<[f64]>>(model: &M, x: &Mat<f64>, y: &[f64]) -> (f64, f64)
//! where
//!     M::Fitted: Predict,
//! {
//!     let p = model.fit(x.as_ref(), y).unwrap().predict(x.as_ref()).unwrap();
//!     (p.rmse(y), p.mean_nll(y))
//! }
//! let x = Mat::from_fn(20, 2, |i, j| if j == 0 { 1.0 } else { i as f64 / 10.0 });
//! let y: Vec<f64> = (0..20).map(|i| 0.5 + 2.0 * i as f64 / 10.0).collect();
//! // A vague prior on the weights: the line is recovered whether the noise is known or not.
//! // The traits take checked settings only: `check` refuses bad ones before any data is read.
//! let known = BayesLinearConfig::default().with_prior_precision(1e-4).with_noise_variance(0.01).check()?;
//! let integrated = NigLinearConfig::default().with_prior_precision(1e-4).check()?;
//! assert!(score(&known, &x, &y).0 < 1e-3 && score(&integrated, &x, &y).0 < 1e-3);
//! assert!(NigLinearConfig::default().with_prior_precision(-1.0).check().is_err());
//! # Ok::<(), hedge_bayes::BayesError>(())
//! ```

use faer::MatRef;
use serde::Serialize;
use statrs::function::gamma::ln_gamma;

use crate::Result;

/// Settings that fit a model to inputs `x` (`[n, d]`) and targets `Y` (`[f64]` for a
/// regression, `[u8]` labels for a classifier). Implemented for the checked settings
/// (`hedge_run::Checked<Config>`, from `ParamGuard::check`), never for unchecked ones.
pub trait Fit<Y: ?Sized> {
    /// The fitted model (a posterior).
    type Fitted;

    /// Fits the model; the settings are checked first.
    ///
    /// # Shapes
    /// `x`: `[n, d]`, `y`: `[n]`.
    fn fit(&self, x: MatRef<'_, f64>, y: &Y) -> Result<Self::Fitted>;
}

/// A fitted regression model's predictive distribution at new inputs.
pub trait Predict {
    /// The predictive at each row of `x`.
    ///
    /// # Shapes
    /// `x`: `[m, d]` → `m` predictions.
    fn predict(&self, x: MatRef<'_, f64>) -> Result<Prediction>;
}

/// Predictive distribution at test inputs: Gaussian, or Student-t with
/// [`Prediction::degrees_of_freedom`] ν.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// The predictive's location: `E[f(x*)] = E[y*]` (Student-t: for ν > 1).
    pub mean: Vec<f64>,
    /// Var[f(x*)], the latent (noise-free) variance; a Student-t's latent part of its squared
    /// scale.
    pub latent_variance: Vec<f64>,
    /// σ² on the scale of the predictions (a Student-t's: its expected noise share, b̃/ã).
    pub noise_variance: f64,
    /// ν of a Student-t predictive; `None` for a Gaussian.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degrees_of_freedom: Option<f64>,
}

impl Prediction {
    /// `Var[f*] + σ²`: a Gaussian's variance of y*, a Student-t's squared scale.
    pub fn observed_variance(&self) -> Vec<f64> {
        self.latent_variance.iter().map(|v| v + self.noise_variance).collect()
    }

    /// [`Self::observed_variance`] of row `i`.
    pub fn observed_variance_at(&self, i: usize) -> f64 {
        self.latent_variance[i] + self.noise_variance
    }

    /// ν, infinite for a Gaussian.
    pub fn dof(&self) -> f64 {
        self.degrees_of_freedom.unwrap_or(f64::INFINITY)
    }

    /// Var(y*): [`Self::observed_variance`] for a Gaussian, scale² · ν / (ν − 2) for a
    /// Student-t (its scale² where ν ≤ 2 leaves the variance infinite).
    pub fn variance(&self) -> Vec<f64> {
        (0..self.mean.len()).map(|i| self.variance_at(i)).collect()
    }

    /// [`Self::variance`] of row `i`.
    pub fn variance_at(&self, i: usize) -> f64 {
        let nu = self.dof();
        if nu.is_finite() && nu > 2.0 {
            self.observed_variance_at(i) * nu / (nu - 2.0)
        } else {
            self.observed_variance_at(i)
        }
    }

    /// log p(`y` | x*ᵢ) of row `i`.
    pub fn log_density(&self, i: usize, y: f64) -> f64 {
        student_t_log_density(y, self.mean[i], self.observed_variance_at(i), self.dof())
    }

    /// Root mean squared error of the mean against `y`.
    pub fn rmse(&self, y: &[f64]) -> f64 {
        (self.mean.iter().zip(y).map(|(m, t)| (m - t).powi(2)).sum::<f64>() / y.len() as f64).sqrt()
    }

    /// Mean negative log density of `y` under the predictive.
    pub fn mean_nll(&self, y: &[f64]) -> f64 {
        -y.iter().enumerate().map(|(i, &t)| self.log_density(i, t)).sum::<f64>() / y.len() as f64
    }
}

/// log St(y; m, scale², ν) (ν = ∞: the Gaussian N(m, scale²)).
pub fn student_t_log_density(y: f64, m: f64, scale_squared: f64, dof: f64) -> f64 {
    if dof.is_infinite() {
        return -0.5 * (2.0 * std::f64::consts::PI * scale_squared).ln() - 0.5 * (y - m).powi(2) / scale_squared;
    }
    ln_gamma(0.5 * (dof + 1.0))
        - ln_gamma(0.5 * dof)
        - 0.5 * (dof * std::f64::consts::PI * scale_squared).ln()
        - 0.5 * (dof + 1.0) * (1.0 + (y - m).powi(2) / (dof * scale_squared)).ln()
}

/// [`Fit`] for the checked settings (`ParamGuard::check` is the only way to them, so a model
/// fitted through the trait was checked once, before any data is touched) and [`Predict`],
/// through a model's own methods of the same names (which a caller holding the concrete type
/// reaches without the traits): each model's file invokes it for its own types, so this module
/// imports none of them.
macro_rules! fit_through {
    ($config:ty, $y:ty, $fitted:ty) => {
        impl $crate::model::Fit<$y> for hedge_run::Checked<$config> {
            type Fitted = $fitted;

            fn fit(&self, x: faer::MatRef<'_, f64>, y: &$y) -> $crate::Result<$fitted> {
                <$config>::fit(self, x, y)
            }
        }
    };
    ($config:ty, $y:ty, $fitted:ty, predict) => {
        $crate::model::fit_through!($config, $y, $fitted);

        impl $crate::model::Predict for $fitted {
            fn predict(&self, x: faer::MatRef<'_, f64>) -> $crate::Result<$crate::model::Prediction> {
                <$fitted>::predict(self, x)
            }
        }
    };
}
pub(crate) use fit_through;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_density_matches_scipy() {
        // scipy.stats.t(df=4.5, loc=1.0, scale=2.0).logpdf(2.3)
        let v = student_t_log_density(2.3, 1.0, 4.0, 4.5);
        assert!((v - -1.9139904904261327).abs() < 1e-10, "{v}");
    }

    #[test]
    fn infinite_dof_is_the_normal_density() {
        // Closed form: log N(2.3; 1, 4) = −½ log(2π·4) − ½ · 1.3² / 4 (scipy.stats.norm(1, 2).logpdf(2.3)).
        let v = student_t_log_density(2.3, 1.0, 4.0, f64::INFINITY);
        assert!((v - -1.823335713764618).abs() < 1e-12, "{v}");
        // And the Student-t approaches it as ν grows.
        assert!((student_t_log_density(2.3, 1.0, 4.0, 1e7) - v).abs() < 1e-6);
    }

    /// One type for both predictives: a Gaussian's variance is its observed variance; a
    /// Student-t's with ν = 4 and scale² 1 is 2, and its density is the Student-t's.
    #[test]
    fn gaussian_and_student_t_predictives_share_one_type() {
        let gaussian =
            Prediction { mean: vec![1.0], latent_variance: vec![3.0], noise_variance: 1.0, degrees_of_freedom: None };
        assert_eq!((gaussian.variance(), gaussian.observed_variance()), (vec![4.0], vec![4.0]));
        assert!((gaussian.log_density(0, 2.3) - -1.823335713764618).abs() < 1e-12);
        let t = Prediction {
            mean: vec![0.0],
            latent_variance: vec![0.5],
            noise_variance: 0.5,
            degrees_of_freedom: Some(4.0),
        };
        assert!((t.variance_at(0) - 2.0).abs() < 1e-15);
        assert_eq!(t.mean_nll(&[0.3]), -student_t_log_density(0.3, 0.0, 1.0, 4.0));
    }
}
