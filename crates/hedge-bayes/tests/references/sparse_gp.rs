//! FITC and VFE: gradients against finite differences, FITC with Z = X against the exact GP,
//! VFE as a lower bound, predictive variances never below the noise.

use faer::Mat;
use hedge_bayes::gp::{fit_with, log_marginal_likelihood, GpConfig, GpHyperParameters};
use hedge_bayes::sparse::{sparse_objective, SparseGpConfig, SparseMethod};
use hedge_bayes::RbfKernel;

fn data(n: usize) -> (Mat<f64>, Vec<f64>) {
    let x = Mat::from_fn(n, 2, |i, d| {
        let i = i as f64;
        if d == 0 {
            (0.7 * i).sin() * 2.0
        } else {
            (0.3 * i).cos() + 0.1 * i
        }
    });
    let y = (0..n).map(|i| x[(i, 0)].sin() + 0.5 * x[(i, 1)].powi(2) - 0.3 * i as f64 / n as f64).collect();
    (x, y)
}

fn hyper() -> GpHyperParameters {
    GpHyperParameters { kernel: RbfKernel::new(1.5, vec![0.7, 1.3]), noise_variance: 0.05 }
}

#[test]
fn gradients_match_finite_differences() {
    let (x, y) = data(15);
    let z = Mat::from_fn(5, 2, |i, d| 0.3 * i as f64 - 0.5 + 0.2 * d as f64);
    for method in [SparseMethod::Fitc, SparseMethod::Vfe] {
        let h = hyper();
        let o = sparse_objective(x.as_ref(), &y, z.as_ref(), &h, method, 1e-6).unwrap();
        let value = |h: &GpHyperParameters, z: &Mat<f64>| {
            sparse_objective(x.as_ref(), &y, z.as_ref(), h, method, 1e-6).unwrap().value
        };
        let eps: f64 = 1e-6;
        let check = |fd: f64, an: f64, what: &str| {
            assert!(
                (fd - an).abs() < 1e-5 * an.abs().max(1.0),
                "{method:?} {what}: finite difference {fd}, analytic {an}"
            );
        };
        let (mut hp, mut hn) = (h.clone(), h.clone());
        hp.kernel.signal_variance *= eps.exp();
        hn.kernel.signal_variance *= (-eps).exp();
        check((value(&hp, &z) - value(&hn, &z)) / (2.0 * eps), o.log_signal_variance, "log s²");
        for d in 0..2 {
            let (mut hp, mut hn) = (h.clone(), h.clone());
            hp.kernel.lengthscales[d] *= eps.exp();
            hn.kernel.lengthscales[d] *= (-eps).exp();
            check((value(&hp, &z) - value(&hn, &z)) / (2.0 * eps), o.log_lengthscales[d], "log ℓ");
        }
        let (mut hp, mut hn) = (h.clone(), h.clone());
        hp.noise_variance += eps;
        hn.noise_variance -= eps;
        check((value(&hp, &z) - value(&hn, &z)) / (2.0 * eps), o.noise_variance, "σ²");
        for i in 0..5 {
            for d in 0..2 {
                let (mut zp, mut zn) = (z.clone(), z.clone());
                zp[(i, d)] += eps;
                zn[(i, d)] -= eps;
                check((value(&h, &zp) - value(&h, &zn)) / (2.0 * eps), o.inducing[(i, d)], &format!("z[{i},{d}]"));
            }
        }
    }
}

#[test]
fn fitc_with_pseudo_inputs_at_the_data_is_the_exact_gp() {
    let (x, y) = data(12);
    let h = hyper();
    let (exact, _) = log_marginal_likelihood(x.as_ref(), &y, &h).unwrap();
    for method in [SparseMethod::Fitc, SparseMethod::Vfe] {
        let o = sparse_objective(x.as_ref(), &y, x.as_ref(), &h, method, 0.0).unwrap();
        assert!((o.value - exact).abs() < 1e-6, "{method:?}: {} vs exact {exact}", o.value);
    }
    let gp = GpConfig::default().with_normalise_y(false);
    let config = SparseGpConfig::default().with_jitter(0.0).with_gp(gp.clone());
    let sparse = hedge_bayes::sparse::fit_with(&config, x.as_ref(), &y, h.clone(), x.clone()).unwrap();
    let exact = fit_with(&gp, x.as_ref(), &y, h).unwrap();
    let t = Mat::from_fn(7, 2, |i, d| -3.0 + i as f64 + 0.5 * d as f64);
    let (ps, pe) = (sparse.predict(t.as_ref()).unwrap(), exact.predict(t.as_ref()).unwrap());
    for i in 0..7 {
        assert!((ps.mean[i] - pe.mean[i]).abs() < 1e-6, "mean {i}: {} vs {}", ps.mean[i], pe.mean[i]);
        assert!(
            (ps.latent_variance[i] - pe.latent_variance[i]).abs() < 1e-6,
            "variance {i}: {} vs {}",
            ps.latent_variance[i],
            pe.latent_variance[i]
        );
    }
}

#[test]
fn vfe_is_a_lower_bound_and_fitc_variance_never_drops_below_the_noise() {
    let (x, y) = data(40);
    let h = hyper();
    let (exact, _) = log_marginal_likelihood(x.as_ref(), &y, &h).unwrap();
    for m in [1, 3, 8, 20, 40] {
        let z = Mat::from_fn(m, 2, |i, d| x[((i * 7) % 40, d)] + 0.05);
        let vfe = sparse_objective(x.as_ref(), &y, z.as_ref(), &h, SparseMethod::Vfe, 1e-8).unwrap().value;
        assert!(vfe <= exact + 1e-9, "M = {m}: VFE {vfe} > exact {exact}");
    }
    let config = SparseGpConfig::default().with_inducing(6).with_gp(GpConfig::default().with_max_iters(50));
    let fitted = config.fit(x.as_ref(), &y).unwrap();
    let t = Mat::from_fn(200, 2, |i, d| -100.0 + i as f64 + d as f64);
    let p = fitted.predict(t.as_ref()).unwrap();
    let noise = fitted.noise_variance();
    for (i, v) in p.observed_variance().iter().enumerate() {
        assert!(*v >= noise, "point {i}: predictive variance {v} below the noise {noise}");
    }
    // Far from the data the predictive variance returns to the prior s² + σ².
    let far = p.observed_variance()[0];
    let prior = fitted.signal_variance() + noise;
    assert!((far - prior).abs() < 1e-6 * far, "far from the data {far}, prior {prior}, {:?}", fitted.hyper);
}

/// On a 1-D problem with a smooth function, a 20-point FITC and VFE fit predicts about as well as
/// the exact GP.
#[test]
fn fitted_sparse_gp_predicts_like_the_exact_gp() {
    let n = 400;
    let x = Mat::from_fn(n, 1, |i, _| -5.0 + 10.0 * i as f64 / n as f64);
    let noise: Vec<f64> = (0..n).map(|i| 0.1 * ((i * 7919 % 1000) as f64 / 1000.0 - 0.5)).collect();
    let y: Vec<f64> = (0..n).map(|i| (x[(i, 0)]).sin() * 2.0 + noise[i]).collect();
    let t = Mat::from_fn(97, 1, |i, _| -4.8 + 0.1 * i as f64);
    let truth: Vec<f64> = (0..97).map(|i| t[(i, 0)].sin() * 2.0).collect();
    let exact = GpConfig::default().with_restarts(0).fit(x.as_ref(), &y).unwrap();
    let rmse_exact = exact.predict(t.as_ref()).unwrap().rmse(&truth);
    for method in [SparseMethod::Fitc, SparseMethod::Vfe] {
        let fitted = SparseGpConfig::default().with_method(method).with_inducing(20).fit(x.as_ref(), &y).unwrap();
        let rmse = fitted.predict(t.as_ref()).unwrap().rmse(&truth);
        assert!(rmse < rmse_exact + 0.02, "{method:?}: RMSE {rmse} vs exact {rmse_exact}");
        assert!(fitted.runs[0].log_marginal_likelihood.is_finite());
    }
}

/// `restarts` reach the sparse GP as they reach the exact one: one run from the configured start
/// plus one per restart, the fitted model being the best of them (the CLI's `--sparse M
/// --restarts K` once silently ran a single start).
#[test]
fn sparse_restarts_run_and_the_best_start_wins() {
    let (x, y) = data(60);
    let single = SparseGpConfig::default().with_inducing(10).fit(x.as_ref(), &y).unwrap();
    assert_eq!(single.runs.len(), 1);
    let config = SparseGpConfig::default().with_inducing(10).with_gp(GpConfig::default().with_restarts(2));
    let multi = config.fit(x.as_ref(), &y).unwrap();
    assert_eq!(multi.runs.len(), 3);
    let best = multi.runs.iter().map(|r| r.log_marginal_likelihood).fold(f64::NEG_INFINITY, f64::max);
    // Run 0 is the single-start fit, so restarts can only help.
    assert_eq!(multi.runs[0].log_marginal_likelihood, single.runs[0].log_marginal_likelihood);
    assert!(best >= single.runs[0].log_marginal_likelihood);
    // The runs report the objective on standardised targets; objective() is on the original scale.
    let standardised = multi.objective() + 60.0 * multi.scaler.scale.ln();
    assert!((standardised - best).abs() < 1e-6 * best.abs().max(1.0), "{standardised} vs {best}");
}

/// Issue 17: `bayes gp --sparse 5000` on 277 rows silently fitted 277 pseudo-inputs and
/// labelled the model "fitc-5000". More pseudo-inputs than rows is now refused, naming both.
#[test]
fn more_pseudo_inputs_than_rows_is_refused() {
    let (x, y) = data(40);
    let msg = SparseGpConfig::default().with_inducing(41).fit(x.as_ref(), &y).err().unwrap().to_string();
    assert!(msg.contains("inducing") && msg.contains("41 pseudo-inputs for 40 training rows"), "{msg}");
    let fitted = SparseGpConfig::default().with_inducing(40).fit(x.as_ref(), &y).unwrap();
    assert!(fitted.predict(x.as_ref()).unwrap().mean.iter().all(|m| m.is_finite()));
}

/// Fitting from given pseudo-inputs (`fit_from`) with the hyper-parameters held at their initial
/// values (`with_optimise(false)`, `with_initial`) is the fixed-hyper-parameter fit on the same
/// pseudo-inputs; with the hyper-parameters optimised but the pseudo-inputs held
/// (`with_optimise_inducing(false)`), the pseudo-inputs come back unchanged; a noise floor
/// (`with_noise_floor`) bounds the fitted noise from below where the data would take it lower.
#[test]
fn fitting_from_given_pseudo_inputs_holds_what_it_is_told_to_hold() {
    let (x, y) = data(40);
    let z = Mat::from_fn(6, 2, |i, d| -1.0 + 0.4 * i as f64 + 0.3 * d as f64);
    let held = GpConfig::default().with_normalise_y(false).with_optimise(false).with_initial(1.5, 0.7, 0.05);
    let config = SparseGpConfig::default().with_jitter(0.0).with_gp(held);
    let from = config.fit_from(x.as_ref(), &y, z.clone()).unwrap();
    let h = GpHyperParameters { kernel: RbfKernel::new(1.5, vec![0.7, 0.7]), noise_variance: 0.05 };
    let fixed = hedge_bayes::sparse::fit_with(&config, x.as_ref(), &y, h, z.clone()).unwrap();
    let t = Mat::from_fn(9, 2, |i, d| -2.0 + 0.5 * i as f64 - 0.2 * d as f64);
    let (a, b) = (from.predict(t.as_ref()).unwrap(), fixed.predict(t.as_ref()).unwrap());
    for i in 0..9 {
        assert!((a.mean[i] - b.mean[i]).abs() < 1e-10 && (a.latent_variance[i] - b.latent_variance[i]).abs() < 1e-10);
    }

    let gp = GpConfig::default().with_normalise_y(false).with_restarts(0);
    let kept = SparseGpConfig::default().with_gp(gp.clone()).with_optimise_inducing(false);
    let fitted = kept.fit_from(x.as_ref(), &y, z.clone()).unwrap();
    assert_eq!(fitted.inducing, z, "pseudo-inputs held");
    assert!(fitted.hyper.noise_variance < 0.3, "this data takes the noise below 0.3: {:?}", fitted.hyper);
    let floored = SparseGpConfig::default()
        .with_gp(gp.with_noise_floor(0.3).with_initial(1.0, 1.0, 0.5))
        .with_optimise_inducing(false)
        .fit_from(x.as_ref(), &y, z)
        .unwrap();
    assert!(floored.hyper.noise_variance >= 0.3, "{:?}", floored.hyper);
}
