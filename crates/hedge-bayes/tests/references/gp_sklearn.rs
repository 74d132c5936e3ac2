//! Exact GP against scikit-learn's `GaussianProcessRegressor` with a fixed kernel.
//!
//! Reference (scikit-learn 1.9.1, numpy 2.4.6):
//! ```python
//! import numpy as np
//! from sklearn.gaussian_process import GaussianProcessRegressor
//! from sklearn.gaussian_process.kernels import ConstantKernel as C, RBF, WhiteKernel
//! i = np.arange(12.0)
//! X = np.stack([np.sin(0.7 * i) * 2.0, np.cos(0.3 * i) + 0.1 * i], axis=1)
//! y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.3 * i / 12
//! Xt = np.array([[0.1, 0.2], [1.5, -0.5], [-2.0, 1.7], [4.0, 4.0]])
//! for normalize in [False, True]:
//!     k = C(1.5) * RBF([0.7, 1.3]) + WhiteKernel(0.05)
//!     gp = GaussianProcessRegressor(k, optimizer=None, alpha=0.0, normalize_y=normalize).fit(X, y)
//!     lml, grad = gp.log_marginal_likelihood(gp.kernel_.theta, eval_gradient=True)
//!     m, s = gp.predict(Xt, return_std=True)
//!     print(lml, grad, m, s ** 2)
//! ```

use faer::Mat;
use hedge_bayes::gp::{log_marginal_likelihood, GpConfig, GpHyperParameters};
use hedge_bayes::RbfKernel;

fn data() -> (Mat<f64>, Vec<f64>, Mat<f64>) {
    let x = Mat::from_fn(12, 2, |i, d| {
        let i = i as f64;
        if d == 0 {
            (0.7 * i).sin() * 2.0
        } else {
            (0.3 * i).cos() + 0.1 * i
        }
    });
    let y = (0..12).map(|i| x[(i, 0)].sin() + 0.5 * x[(i, 1)].powi(2) - 0.3 * i as f64 / 12.0).collect();
    let t = [[0.1, 0.2], [1.5, -0.5], [-2.0, 1.7], [4.0, 4.0]];
    (x, y, Mat::from_fn(4, 2, |i, d| t[i][d]))
}

fn hyper() -> GpHyperParameters {
    GpHyperParameters { kernel: RbfKernel::new(1.5, vec![0.7, 1.3]), noise_variance: 0.05 }
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{what}: ours {a}, scikit-learn {b}");
}

#[test]
fn log_marginal_likelihood_and_gradient_match_scikit_learn() {
    let (x, y, _) = data();
    let h = hyper();
    let (lml, g) = log_marginal_likelihood(x.as_ref(), &y, &h).unwrap();
    close(lml, -9.777542617291779, "lml");
    let sk = [-3.1743940280161502, 6.548657463567796, 1.6767383893859948, -0.9997954173288702];
    close(g.log_signal_variance, sk[0], "∂/∂log s²");
    close(g.log_lengthscales[0], sk[1], "∂/∂log ℓ₁");
    close(g.log_lengthscales[1], sk[2], "∂/∂log ℓ₂");
    close(g.noise_variance * h.noise_variance, sk[3], "∂/∂log σ²");
}

#[test]
fn predictions_match_scikit_learn() {
    let (x, y, t) = data();
    let cases = [
        (
            false,
            -9.777542617291779,
            [0.01072594497129642, 0.3358213175935457, -0.44975407928921307, 0.00200336842851803],
            [0.09147658844346807, 0.23133094815186303, 0.9941870162890087, 1.5499927714156254],
        ),
        (
            true,
            -9.925288702686553,
            [0.00440847046323853, 0.3744014696517505, -0.32737689409128656, 0.2360254672652171],
            [0.08526482500808749, 0.21562230455624293, 0.926676250301811, 1.4447397379738074],
        ),
    ];
    for (normalise, lml, mean, var) in cases {
        let config = GpConfig::default().with_normalise_y(normalise);
        let fitted = hedge_bayes::gp::fit_with(&config, x.as_ref(), &y, hyper()).unwrap();
        let n = y.len() as f64;
        // scikit-learn reports the likelihood of the normalised targets.
        close(fitted.log_marginal_likelihood() + n * fitted.scaler.scale.ln(), lml, "lml");
        let p = fitted.predict(t.as_ref()).unwrap();
        let v = p.observed_variance();
        for i in 0..4 {
            close(p.mean[i], mean[i], &format!("mean[{i}] (normalise {normalise})"));
            close(v[i], var[i], &format!("variance[{i}] (normalise {normalise})"));
        }
    }
}

#[test]
fn optimisation_increases_the_likelihood_and_stops_at_a_stationary_point() {
    let (x, y, _) = data();
    let fitted = GpConfig::default().with_normalise_y(false).with_restarts(2).fit(x.as_ref(), &y).unwrap();
    let (start, _) = log_marginal_likelihood(x.as_ref(), &y, &GpConfig::default().initial(2)).unwrap();
    let (lml, g) = log_marginal_likelihood(x.as_ref(), &y, &fitted.hyper).unwrap();
    assert!(lml > start, "fitted {lml} vs start {start}");
    assert!((fitted.log_marginal_likelihood() - lml).abs() < 1e-9);
    let norm = g.log_signal_variance.abs() + g.log_lengthscales.iter().map(|v| v.abs()).sum::<f64>();
    assert!(norm < 1e-3, "gradient at the optimum {g:?}");
}
