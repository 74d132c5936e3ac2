"""Bayesian models on NumPy arrays, scikit-learn style: ``fit(X, y)`` then ``predict``.

* :class:`GaussianProcessRegressor` -- exact GP, RBF or ARD kernel plus Gaussian noise,
  hyper-parameters by L-BFGS with restarts on the log marginal likelihood.
* :class:`SparseGPRegressor` -- FITC or VFE with ``inducing`` pseudo-inputs (O(N M^2)).
* :class:`BayesianLinearRegression` -- Gaussian prior; known noise, or the noise integrated out
  (normal--inverse-gamma, Student-t predictive).
* :class:`BayesianProbitRegression` -- Laplace approximation; ``predict_proba``.

Shapes: ``X`` is ``[n_samples, n_features]``, ``y`` is ``[n_samples]``. Inputs are used as
given (standardise them first, e.g. with ``sklearn.preprocessing.StandardScaler``, as hedge's
command line does); targets are standardised inside the GPs when ``normalise_y``.
"""

from __future__ import annotations

import json

import numpy as np

from ._native import _hedge
from ._arrays import Estimator, matrix, vector

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


class GaussianProcessRegressor(Estimator):
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
    training targets on their original scale), ``n_features_in_``, ``posterior_``.
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
        return _hedge.gp_fit(x, y, json.dumps(self._settings()))

    def fit(self, X, y) -> "GaussianProcessRegressor":
        """Conditions on ``X`` ``[n, d]`` and ``y`` ``[n]`` (and fits the hyper-parameters)."""
        x = matrix(X)
        y = vector(y, x.shape[0])
        self.posterior_ = self._fit_posterior(x, y)
        self.n_features_in_ = x.shape[1]
        self.signal_variance_ = self.posterior_.signal_variance
        self.noise_variance_ = self.posterior_.noise_variance
        self.lengthscales_ = np.asarray(self.posterior_.lengthscales)
        return self

    @property
    def log_marginal_likelihood_(self) -> float:
        self._check_fitted("posterior_")
        return self.posterior_.objective

    def predict(self, X, return_std: bool = False, include_noise: bool = True):
        """The predictive mean ``[m]``; with ``return_std`` also its standard deviation ``[m]``:
        of y* (``include_noise``, the default) or of the latent f(x*)."""
        self._check_fitted("posterior_")
        x = matrix(X, n_features=self.n_features_in_)
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
        return _hedge.sparse_gp_fit(x, y, json.dumps(settings))

    def fit(self, X, y) -> "SparseGPRegressor":
        super().fit(X, y)
        self.inducing_points_ = self.posterior_.inducing_points
        self.objective_ = self.posterior_.objective
        return self

    @property
    def log_marginal_likelihood_(self) -> float:
        raise AttributeError("a sparse GP has `objective_` (FITC likelihood or VFE bound), not the exact likelihood")


class BayesianLinearRegression(Estimator):
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
        x = matrix(X)
        y = vector(y, x.shape[0])
        if self.noise_variance is None:
            settings = {"prior_precision": float(self.prior_precision), "a0": float(self.a0), "b0": float(self.b0)}
            self.posterior_ = _hedge.linear_fit(x, y, json.dumps(settings), False)
        else:
            settings = {"prior_precision": float(self.prior_precision), "noise_variance": float(self.noise_variance)}
            self.posterior_ = _hedge.linear_fit(x, y, json.dumps(settings), True)
        self.coef_ = self.posterior_.coef
        self.log_evidence_ = self.posterior_.log_evidence
        self.n_features_in_ = x.shape[1]
        return self

    def predict(self, X, return_std: bool = False, include_noise: bool = True):
        """The predictive mean ``[m]`` (and standard deviation ``[m]`` with ``return_std``)."""
        self._check_fitted("posterior_")
        x = matrix(X, n_features=self.n_features_in_)
        return _predictive(self.posterior_.predict(x), return_std, include_noise)


class BayesianProbitRegression(Estimator):
    """Bayesian probit classification p(y = 1 | x, w) = Phi(w^T x), prior w ~ N(0, prior_variance I),
    posterior by the Laplace approximation (Newton's method). Labels 0/1. No intercept is added.

    Fitted attributes: ``coef_`` (the posterior mode), ``covariance_``, ``log_evidence_``
    (Laplace), ``n_features_in_``, ``classes_`` = [0, 1].
    """

    def __init__(self, prior_variance: float = 1.0, max_iters: int = 100, tolerance: float = 1e-10):
        self.prior_variance = prior_variance
        self.max_iters = max_iters
        self.tolerance = tolerance

    def fit(self, X, y) -> "BayesianProbitRegression":
        x = matrix(X)
        labels = np.asarray(y)
        if labels.ndim != 1 or labels.shape[0] != x.shape[0] or not np.isin(labels, (0, 1)).all():
            raise ValueError(f"`y` must hold one 0/1 label per row of X ({x.shape[0]}); got shape {labels.shape}")
        settings = {
            "prior_variance": float(self.prior_variance),
            "max_iters": int(self.max_iters),
            "tolerance": float(self.tolerance),
        }
        self.posterior_ = _hedge.probit_fit(x, np.ascontiguousarray(labels.astype(np.uint8)), json.dumps(settings))
        self.coef_ = self.posterior_.coef
        self.covariance_ = self.posterior_.covariance
        self.log_evidence_ = self.posterior_.log_evidence
        self.n_features_in_ = x.shape[1]
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X) -> np.ndarray:
        """``[m, 2]``: p(y = 0 | x) and p(y = 1 | x), the weights integrated out
        (Phi(m^T x / sqrt(1 + x^T S x)))."""
        self._check_fitted("posterior_")
        p = self.posterior_.predict_proba(matrix(X, n_features=self.n_features_in_))
        return np.stack([1 - p, p], axis=1)

    def predict(self, X) -> np.ndarray:
        """The more probable label per row."""
        return (self.predict_proba(X)[:, 1] > 0.5).astype(np.int64)
