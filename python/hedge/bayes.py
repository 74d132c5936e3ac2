"""Bayesian models on NumPy arrays as scikit-learn estimators: ``fit(X, y)`` then ``predict``
(and ``score``, pipelines, grid searches, pickling; ``check_estimator`` passes on each).

* :class:`GaussianProcessRegressor` -- exact GP, RBF or ARD kernel plus Gaussian noise,
  hyper-parameters by L-BFGS with restarts on the log marginal likelihood.
* :class:`SparseGPRegressor` -- FITC or VFE with ``inducing`` pseudo-inputs (O(N M^2)).
* :class:`BayesianLinearRegression` -- Gaussian prior; known noise, or the noise integrated out
  (normal--inverse-gamma, Student-t predictive).
* :class:`BayesianProbitRegression` -- Laplace approximation; ``predict_proba``.

With scikit-learn >= 1.6 installed each is a ``BaseEstimator`` with ``RegressorMixin`` (the
probit model ``ClassifierMixin``, binary), checked by scikit-learn's own input validation; without
it they keep the same API (hedge/_sklearn.py). A pickled model keeps its posterior: the GPs their
fitted hyper-parameters and training data (unpickling re-factorises, without the search), the
linear and probit models their posterior's mean and covariance.

Shapes: ``X`` is ``[n_samples, n_features]``, ``y`` is ``[n_samples]``. Inputs are used as
given (standardise them first, e.g. with ``sklearn.preprocessing.StandardScaler``, as hedge's
command line does); targets are standardised inside the GPs when ``normalise_y``.
"""

from __future__ import annotations

import json

import numpy as np

from ._native import _hedge
from ._sklearn import (
    BaseEstimator,
    NativeState,
    ClassifierMixin,
    RegressorMixin,
    check_classification_targets,
    check_features,
    check_features_and_target,
    check_fitted,
    encode_labels,
)

__all__ = [
    "BayesianLinearRegression",
    "BayesianProbitRegression",
    "GaussianProcessRegressor",
    "SparseGPRegressor",
]


def _predictive(raw, return_std: bool, include_noise: bool):
    mean, latent_variance, noise_variance, dof = raw
    if not return_std:
        return mean
    variance = latent_variance + noise_variance if include_noise else latent_variance
    if dof is not None and include_noise:
        # A Student-t with nu > 2 has variance scale^2 * nu / (nu - 2).
        variance = variance * dof / (dof - 2.0) if dof > 2 else np.full_like(variance, np.inf)
    return mean, np.sqrt(variance)


class GaussianProcessRegressor(NativeState, RegressorMixin, BaseEstimator):
    """Exact Gaussian-process regression (hedge_bayes::GpConfig).

    Parameters:
        kernel: ``"ard"`` (one lengthscale per feature) or ``"rbf"`` (one for all).
        signal_variance, lengthscale, noise_variance: initial values (fixed ones when
            ``optimise=False``), on the standardised target scale when ``normalise_y``.
        optimise: fit the hyper-parameters by maximising the log marginal likelihood.
        restarts: extra L-BFGS runs from random starts; max_iters: iterations per run.
        normalise_y: fit on (y - mean) / std and predict on the original scale.
        noise_floor: the noise variance never goes below it. seed: the restarts' starts.

    Fitted attributes: ``signal_variance_``, ``lengthscales_`` (``[n_features]`` or ``[1]``),
    ``noise_variance_`` (original target scale), ``log_marginal_likelihood_`` (of the
    training targets on their original scale), ``n_features_in_``, ``X_train_`` and ``y_train_``
    (what the posterior is conditioned on), ``posterior_``.
    """

    def __init__(
        self,
        kernel: str = "ard",
        signal_variance: float = 1.0,
        lengthscale: float = 1.0,
        noise_variance: float = 0.1,
        optimise: bool = True,
        restarts: int = 2,
        max_iters: int = 200,
        normalise_y: bool = True,
        noise_floor: float = 1e-6,
        seed: int = 0,
    ):
        self.kernel = kernel
        self.signal_variance = signal_variance
        self.lengthscale = lengthscale
        self.noise_variance = noise_variance
        self.optimise = optimise
        self.restarts = restarts
        self.max_iters = max_iters
        self.normalise_y = normalise_y
        self.noise_floor = noise_floor
        self.seed = seed

    def _settings(self) -> dict:
        if self.kernel not in ("ard", "rbf"):
            raise ValueError(f"kernel = {self.kernel!r}: use 'ard' or 'rbf'")
        return {
            "kernel": self.kernel,
            "signal_variance": float(self.signal_variance),
            "lengthscale": float(self.lengthscale),
            "noise_variance": float(self.noise_variance),
            "optimise": bool(self.optimise),
            "restarts": int(self.restarts),
            "max_iters": int(self.max_iters),
            "normalise_y": bool(self.normalise_y),
            "noise_floor": float(self.noise_floor),
            "seed": int(self.seed),
        }

    def _fit_posterior(self, x, y):
        settings = json.dumps(self._settings())
        return settings, _hedge.gp_fit(x, y, settings)

    def _condition(self, hyper: str):
        return _hedge.gp_condition(self.X_train_, self.y_train_, self._fit_settings, hyper)

    def fit(self, X, y) -> "GaussianProcessRegressor":
        """Conditions on ``X`` ``[n, d]`` and ``y`` ``[n]`` (and fits the hyper-parameters)."""
        x, y = check_features_and_target(self, X, y, min_samples=2)
        self._fit_settings, self.posterior_ = self._fit_posterior(x, y)
        self.X_train_, self.y_train_ = x, y
        self.signal_variance_ = self.posterior_.signal_variance
        self.noise_variance_ = self.posterior_.noise_variance
        self.lengthscales_ = np.asarray(self.posterior_.lengthscales)
        return self

    # Pickled, the posterior (a Rust object) is its hyper-parameters: the training data and the
    # settings it was fitted with are fitted attributes already.
    def _native_parts(self, posterior):
        return posterior.hyper_json

    def _rebuild_native(self, hyper):
        return self._condition(hyper)

    @property
    def log_marginal_likelihood_(self) -> float:
        check_fitted(self, "posterior_")
        return self.posterior_.objective

    def predict(self, X, return_std: bool = False, include_noise: bool = True):
        """The predictive mean ``[m]``; with ``return_std`` also its standard deviation ``[m]``:
        of y* (``include_noise``, the default) or of the latent f(x*)."""
        check_fitted(self, "posterior_")
        x = check_features(self, X, reset=False)
        return _predictive(self.posterior_.predict(x), return_std, include_noise)


class SparseGPRegressor(GaussianProcessRegressor):
    """Sparse GP regression with ``inducing`` pseudo-inputs (hedge_bayes::SparseGpConfig):
    ``method="fitc"`` (Snelson & Ghahramani) or ``"vfe"`` (Titsias, a lower bound on the exact
    log marginal likelihood). The pseudo-inputs start at a random subset of X (``seed``) and move
    with the hyper-parameters when ``optimise_inducing``.

    Fitted attributes as :class:`GaussianProcessRegressor`, plus ``inducing_points_``
    ``[inducing, n_features]`` and ``objective_`` (FITC's log marginal likelihood or VFE's bound).
    """

    def __init__(
        self,
        inducing: int = 256,
        method: str = "fitc",
        optimise_inducing: bool = True,
        jitter: float = 1e-6,
        kernel: str = "ard",
        signal_variance: float = 1.0,
        lengthscale: float = 1.0,
        noise_variance: float = 0.1,
        optimise: bool = True,
        restarts: int = 0,
        max_iters: int = 200,
        normalise_y: bool = True,
        noise_floor: float = 1e-6,
        seed: int = 0,
    ):
        super().__init__(
            kernel, signal_variance, lengthscale, noise_variance, optimise, restarts, max_iters, normalise_y, noise_floor, seed
        )
        self.inducing = inducing
        self.method = method
        self.optimise_inducing = optimise_inducing
        self.jitter = jitter

    def _fit_posterior(self, x, y):
        if self.method not in ("fitc", "vfe"):
            raise ValueError(f"method = {self.method!r}: use 'fitc' or 'vfe'")
        settings = {
            "gp": self._settings(),
            "method": self.method,
            "inducing": int(self.inducing),
            "optimise_inducing": bool(self.optimise_inducing),
            "jitter": float(self.jitter),
        }
        settings = json.dumps(settings)
        return settings, _hedge.sparse_gp_fit(x, y, settings)

    def _condition(self, hyper: str):
        return _hedge.sparse_gp_condition(self.X_train_, self.y_train_, self._fit_settings, hyper, self.inducing_points_)

    def fit(self, X, y) -> "SparseGPRegressor":
        super().fit(X, y)
        self.inducing_points_ = self.posterior_.inducing_points
        self.objective_ = self.posterior_.objective
        return self

    @property
    def log_marginal_likelihood_(self) -> float:
        raise AttributeError("a sparse GP has `objective_` (FITC likelihood or VFE bound), not the exact likelihood")


class BayesianLinearRegression(NativeState, RegressorMixin, BaseEstimator):
    """Bayesian linear regression y = X w + noise with prior w ~ N(0, prior_precision^-1 I).

    ``noise_variance`` set: that noise is known (Gaussian predictive; ``log_evidence_``).
    ``noise_variance=None``: the noise gets an inverse-gamma prior IG(a0, b0) and the weights
    N(0, sigma^2 / prior_precision I) -- integrated out, a Student-t predictive. No intercept is
    added: append a column of ones to X for one.

    Fitted attributes: ``coef_`` ``[n_features]`` (posterior mean), ``log_evidence_`` (known
    noise only), ``n_features_in_``.
    """

    def __init__(self, prior_precision: float = 1.0, noise_variance: float | None = 1.0, a0: float = 1.0, b0: float = 1.0):
        self.prior_precision = prior_precision
        self.noise_variance = noise_variance
        self.a0 = a0
        self.b0 = b0

    def fit(self, X, y) -> "BayesianLinearRegression":
        x, y = check_features_and_target(self, X, y)
        if self.noise_variance is None:
            settings = {"prior_precision": float(self.prior_precision), "a0": float(self.a0), "b0": float(self.b0)}
            self.posterior_ = _hedge.linear_fit(x, y, json.dumps(settings), False)
        else:
            settings = {"prior_precision": float(self.prior_precision), "noise_variance": float(self.noise_variance)}
            self.posterior_ = _hedge.linear_fit(x, y, json.dumps(settings), True)
        self.coef_ = self.posterior_.coef
        self.log_evidence_ = self.posterior_.log_evidence
        return self

    def _native_parts(self, posterior):
        return posterior.parts()

    def _rebuild_native(self, parts):
        return _hedge.linear_from_parts(*parts)

    def predict(self, X, return_std: bool = False, include_noise: bool = True):
        """The predictive mean ``[m]`` (and standard deviation ``[m]`` with ``return_std``)."""
        check_fitted(self, "posterior_")
        x = check_features(self, X, reset=False)
        return _predictive(self.posterior_.predict(x), return_std, include_noise)


class BayesianProbitRegression(NativeState, ClassifierMixin, BaseEstimator):
    """Bayesian probit classification p(y = 1 | x, w) = Phi(w^T x), prior w ~ N(0, prior_variance I),
    posterior by the Laplace approximation (Newton's method). A binary classifier: ``y`` holds
    two labels of any kind, the larger (``classes_[1]``) read as y = 1. No intercept is added.

    Fitted attributes: ``coef_`` (the posterior mode), ``covariance_``, ``log_evidence_``
    (Laplace), ``n_features_in_``, ``classes_`` (the two labels, sorted).
    """

    def __init__(self, prior_variance: float = 1.0, max_iters: int = 100, tolerance: float = 1e-10):
        self.prior_variance = prior_variance
        self.max_iters = max_iters
        self.tolerance = tolerance

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y) -> "BayesianProbitRegression":
        x, labels = check_features_and_target(self, X, y, classifier=True)
        check_classification_targets(labels)
        classes, codes = encode_labels(labels)
        if len(classes) != 2:
            raise ValueError(
                f"Only binary classification is supported: BayesianProbitRegression needs `y` with samples of 2 "
                f"classes, and this one has {len(classes)} class{'es' if len(classes) != 1 else ''} ({classes.tolist()[:5]})"
            )
        settings = {
            "prior_variance": float(self.prior_variance),
            "max_iters": int(self.max_iters),
            "tolerance": float(self.tolerance),
        }
        self.posterior_ = _hedge.probit_fit(x, codes.astype(np.uint8), json.dumps(settings))
        self.coef_ = self.posterior_.coef
        self.covariance_ = self.posterior_.covariance
        self.log_evidence_ = self.posterior_.log_evidence
        self.classes_ = classes
        return self

    def _native_parts(self, posterior):
        return (posterior.coef, posterior.covariance, posterior.log_evidence, posterior.iterations)

    def _rebuild_native(self, parts):
        return _hedge.probit_from_parts(*parts)

    def predict_proba(self, X) -> np.ndarray:
        """``[m, 2]``: p(y = classes_[0] | x) and p(y = classes_[1] | x), the weights integrated
        out (Phi(m^T x / sqrt(1 + x^T S x)))."""
        check_fitted(self, "posterior_")
        p = self.posterior_.predict_proba(check_features(self, X, reset=False))
        return np.stack([1 - p, p], axis=1)

    def predict(self, X) -> np.ndarray:
        """The more probable label per row."""
        more_probable = (self.predict_proba(X)[:, 1] > 0.5).astype(np.int64)
        return self.classes_[more_probable]
