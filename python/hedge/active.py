"""Bayesian batch active learning as pure functions of arrays (acquisitions the baal way).

* :func:`acs_fw` -- Frank--Wolfe sparse subset approximation (Pinsler et al., NeurIPS 2019,
  Algorithm 1) over a Gram matrix ``K[n, m] = <L_n, L_m>`` or explicit vectors (random
  projections) ``[N, J]``; :func:`linear_gram`, :func:`probit_gram` and :func:`nig_projections`
  build them from a fitted :mod:`hedge.bayes` model, and :func:`acs_fw_select` does both.
* :func:`bald`, :func:`max_entropy` -- scores for classification; with :func:`top_b`, the
  batch. For a Gaussian regression predictive, MaxEnt is ``top_b(std, b)``.
* :func:`lcmd` -- LCMD (Holzmueller et al., JMLR 2023): clusters around the labelled points,
  farthest point of the heaviest cluster.
* :func:`pool_loop` -- hedge's pool-based loop on your regression data (NeuralLinear or a GP
  refitted every round), driven by a registered acquisition (:func:`acquisitions`) or by your
  own: a callable that reads the round's :class:`PoolPredictive` and returns scores or rows.

Pool indices are rows of the pool arrays you pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Callable, NamedTuple, Optional, Union

import numpy as np

from ._native import _hedge
from ._arrays import matrix
from ._sklearn import check_fitted
from .bayes import BayesianLinearRegression, BayesianProbitRegression

__all__ = [
    "Batch",
    "PoolPredictive",
    "Round",
    "acquisitions",
    "LoopInterrupted",
    "pool_loop",
    "acs_fw",
    "acs_fw_select",
    "bald",
    "lcmd",
    "linear_gram",
    "max_entropy",
    "nig_projections",
    "probit_gram",
    "top_b",
]


class Batch(NamedTuple):
    """A Frank--Wolfe batch."""

    indices: np.ndarray
    """selected pool rows (the support of ``weights``), ascending."""
    weights: np.ndarray
    """``[N]`` the sparse weights w (the batch's L(w) approximates the whole pool's L)."""
    objective: np.ndarray
    """``||L - L(w)||^2`` before the first and after each iteration."""
    picks: np.ndarray
    """the vertex chosen at each iteration (re-picks show as repeats when not ``distinct``)."""


def _batch_size(batch_size: int) -> int:
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"`batch_size` = {batch_size} must be a positive integer")
    return int(batch_size)


def acs_fw(projections=None, *, gram=None, batch_size: int, distinct: bool = True) -> Batch:
    """ACS-FW with ``batch_size`` Frank--Wolfe iterations over exactly one of ``projections``
    ``[N, J]`` (each row a vector L_n) or ``gram`` ``[N, N]`` (symmetric, K = <L_n, L_m>).

    ``distinct=True`` never re-picks a point, so the batch has ``min(batch_size, N)`` points;
    ``False`` is the paper's algorithm (re-picks allowed, batches can come out smaller).
    Ties go to the lowest pool index.
    """
    if (projections is None) == (gram is None):
        raise ValueError("pass exactly one of `projections` ([N, J]) and `gram` ([N, N])")
    b = _batch_size(batch_size)
    if gram is not None:
        raw = _hedge.acs_fw_gram(matrix(gram, "gram"), b, distinct)
    else:
        raw = _hedge.acs_fw_projections(matrix(projections, "projections"), b, distinct)
    indices, weights, objective, picks = raw
    return Batch(np.asarray(indices, dtype=np.int64), weights, objective, np.asarray(picks, dtype=np.int64))


def _fitted(model, kind):
    if not isinstance(model, kind):
        raise TypeError(f"`model` must be a fitted hedge.bayes.{kind.__name__}, not {type(model).__name__}")
    check_fitted(model, "posterior_")
    return model.posterior_


def linear_gram(model: BayesianLinearRegression, X_pool) -> np.ndarray:
    """``[N, N]`` closed-form weighted Fisher inner products of a fitted Bayesian linear
    regression over the pool rows ``X_pool`` ``[N, d]`` (known noise: (x_n.x_m / s^4) x_n S x_m;
    noise integrated out: (a/b) (x_n S x_m)(x_n.x_m))."""
    posterior = _fitted(model, BayesianLinearRegression)
    return _hedge.linear_gram(posterior, matrix(X_pool, "X_pool", n_features=model.n_features_in_))


def probit_gram(model: BayesianProbitRegression, X_pool) -> np.ndarray:
    """``[N, N]`` closed-form inner products of a fitted Bayesian probit regression
    (x_n.x_m Cov[Phi(x_n.w), Phi(x_m.w)] under the Laplace posterior)."""
    posterior = _fitted(model, BayesianProbitRegression)
    return _hedge.probit_gram(posterior, matrix(X_pool, "X_pool", n_features=model.n_features_in_))


def nig_projections(model: BayesianLinearRegression, X_pool, projections: int = 10, seed: int = 0) -> np.ndarray:
    """``[N, J]`` random projections of the log-posterior vectors of a normal--inverse-gamma
    regression (``noise_variance=None``), from J posterior draws (seeded)."""
    posterior = _fitted(model, BayesianLinearRegression)
    return _hedge.linear_projections(
        posterior, matrix(X_pool, "X_pool", n_features=model.n_features_in_), int(projections), int(seed)
    )


def acs_fw_select(model, X_pool, batch_size: int, projections: int | None = None, seed: int = 0, distinct: bool = True) -> Batch:
    """ACS-FW for a fitted :mod:`hedge.bayes` linear or probit model: the closed-form Gram
    matrix, or ``projections`` random projections (normal--inverse-gamma regression only)."""
    if projections is not None:
        return acs_fw(nig_projections(model, X_pool, projections, seed), batch_size=batch_size, distinct=distinct)
    if isinstance(model, BayesianProbitRegression):
        return acs_fw(gram=probit_gram(model, X_pool), batch_size=batch_size, distinct=distinct)
    return acs_fw(gram=linear_gram(model, X_pool), batch_size=batch_size, distinct=distinct)


def bald(probabilities) -> np.ndarray:
    """BALD scores ``[N]``, I[y; theta | x] = H[E p] - E H[p], from class probabilities
    ``[S, N, C]`` under S posterior draws (MC dropout passes, Laplace samples, ...)."""
    p = np.ascontiguousarray(np.asarray(probabilities, dtype=np.float64))
    if p.ndim != 3 or 0 in p.shape:
        raise ValueError(f"`probabilities` must be [samples, pool, classes]; got shape {p.shape}")
    return _hedge.bald_scores(p)


def max_entropy(probabilities) -> np.ndarray:
    """Predictive entropies ``[N]`` of categorical predictions ``[N, C]`` (MaxEnt)."""
    p = matrix(probabilities, "probabilities")
    return _hedge.entropy_scores(p)


def top_b(scores, b: int) -> np.ndarray:
    """Indices of the ``b`` largest scores, ascending (ties to the lower index)."""
    s = np.ascontiguousarray(np.asarray(scores, dtype=np.float64))
    if s.ndim != 1:
        raise ValueError(f"`scores` must be 1-D; got shape {s.shape}")
    return np.asarray(_hedge.top_b_indices(s, _batch_size(b)), dtype=np.int64)


def lcmd(labelled_features, pool_features, batch_size: int) -> np.ndarray:
    """LCMD's picks (in pick order) from ``pool_features`` ``[M, k]`` given the labelled points'
    features ``[N, k]`` (e.g. a network's last hidden layer)."""
    labelled = matrix(labelled_features, "labelled_features")
    pool = matrix(pool_features, "pool_features", n_features=labelled.shape[1])
    return np.asarray(_hedge.lcmd_batch(labelled, pool, _batch_size(batch_size)), dtype=np.int64)


PoolPredictive = _hedge.PoolPredictive
"""What a round's fit predicts about the unlabelled pool points, as your acquisition reads it:
``entropy``, ``mean`` and ``variance`` ``[n]`` (standardised targets), ``features`` ``[n, k]`` and
``labelled_features`` (NeuralLinear's last layer; the GP has none: reading them raises
``ValueError``), ``batch_size`` (rows to return), ``distinct`` and ``seed`` (drawn from the loop's
own stream: use it for any random choice, so that a resumed loop chooses alike). ``len()`` is
the number of unlabelled points."""


@dataclass(frozen=True)
class Round:
    """One round of :func:`pool_loop` (after fitting on ``labels`` points)."""

    seed: int
    method: str
    round: int
    labels: int
    test_rmse: float
    test_log_likelihood: float
    """mean Student-t log density of the test targets (original scale)."""
    fit_seconds: float
    selection_seconds: float
    batch_size: int
    """points added after this round (0 after the last)."""
    gp_test_rmse: Optional[float] = None
    gp_test_log_likelihood: Optional[float] = None


def acquisitions() -> dict:
    """The registered acquisitions: ``{name: (what it does, [what it reads])}``."""
    return {name: (about, list(reads)) for name, about, reads in _hedge.acquisition_kinds()}


def _rows_from(choice, predictive) -> list:
    """Your acquisition's answer as rows: integers are rows, floats one score per point (the
    ``batch_size`` highest are taken)."""
    out = np.asarray(choice)
    if out.ndim != 1:
        raise ValueError(f"an acquisition returns a 1-D array of rows or scores; got shape {out.shape}")
    if out.dtype.kind in "iu":
        return [int(i) for i in out]
    if out.dtype.kind == "f":
        if out.shape[0] != len(predictive):
            raise ValueError(
                f"an acquisition's scores hold one value per unlabelled point ({len(predictive)}); "
                f"got {out.shape[0]}"
            )
        return list(_hedge.top_b_indices(np.ascontiguousarray(out, dtype=np.float64), predictive.batch_size))
    raise ValueError(f"an acquisition returns integer rows or float scores; got dtype {out.dtype}")


class LoopInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`pool_loop` after a finished round: :attr:`rounds` holds the rounds it
    ran, :attr:`state` what ``pool_loop(..., resume=state)`` continues from (the rest of the
    rounds an uninterrupted loop would have run). A KeyboardInterrupt, so an ``except
    KeyboardInterrupt`` sees it as one."""

    def __init__(self, rounds: list, state: Optional[dict]):
        super().__init__(f"pool_loop stopped after {len(rounds)} rounds; resume with pool_loop(..., resume=e.state)")
        self.rounds = rounds
        self.state = state


def pool_loop(
    X,
    y,
    acquisition: Union[str, Callable[[PoolPredictive], object]] = "acs-fw",
    *,
    seed: int = 0,
    settings: Optional[dict] = None,
    resume: Optional[dict] = None,
) -> list:
    """One seed of hedge's pool-based active-learning loop on your regression data, as
    ``hedge active run`` runs it: a ``test_fraction`` of the rows held out, ``init`` random
    labels, then rounds of fit -> score on the test rows -> acquire ``batch`` more until
    ``budget`` labels. Returns a :class:`Round` per round.

    ``acquisition`` is a registered name (:func:`acquisitions`) or your own callable, which gets
    the round's :class:`PoolPredictive` and returns either ``batch_size`` integer rows of it or
    one float score per unlabelled point (the highest are labelled). An exception it raises
    stops the loop and comes back to you as it was raised.

    ``settings`` overrides the loop's settings in their serde form (the ``loop`` section of an
    experiment's ``config.json``), e.g. ``{"budget": 60, "model": {"epochs": 100}}``; a key that
    does not exist is refused by name.

    Ctrl-C stops the loop after the round under way and raises :class:`LoopInterrupted` with the
    rounds so far and the ``state`` that ``resume`` takes: the same data, acquisition, seed and
    settings with ``resume=e.state`` run the remaining rounds.
    """
    x = matrix(X, "X")
    targets = np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(-1))
    if callable(acquisition):
        user = acquisition

        def call(predictive):
            return _rows_from(user(predictive), predictive)

        name = getattr(user, "__name__", type(user).__name__)
        chosen = call
    elif isinstance(acquisition, str):
        name, chosen = acquisition, acquisition
    else:
        raise ValueError(f"`acquisition` is a registered name or a callable; got {type(acquisition).__name__}")
    if int(seed) != seed or seed < 0:
        raise ValueError(f"`seed` = {seed} must be a non-negative integer")
    lines, state, interrupted = _hedge.pool_loop(
        x, targets, chosen, name, json.dumps(settings or {}), int(seed), None if resume is None else json.dumps(resume)
    )
    known = {f.name for f in fields(Round)}
    rounds = [Round(**{k: v for k, v in json.loads(line).items() if k in known}) for line in lines]
    if interrupted:
        raise LoopInterrupted(rounds, None if state is None else json.loads(state))
    return rounds
