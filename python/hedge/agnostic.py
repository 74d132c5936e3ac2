"""Concept erasure and the fresh-probe audit on feature arrays you bring (assess apart from
mitigate, the fairlearn way).

* :class:`Leace` -- LEACE (Belrose et al., 2023): the least-squares affine map after which no
  linear classifier reads the concept from the features better than a constant; optional row
  weights (:func:`group_balancing_weights` fits it where the concept is independent of the task).
* :func:`probe` and :func:`audit` -- fresh probes trained on one split of frozen features and
  scored on another: accuracy, the 95 % interval of a chance-level classifier, and a lower bound
  on the mutual information I(concept; features) in bits. :func:`audit` runs a linear probe and
  an MLP probe tuned on a validation split, and, given the task classifier's decisions (logits),
  the same MLP probe on them: the *decision floor*. A classifier whose decisions are harder on
  one concept value leaks the concept through its confidence whatever its features do, so
  hedge judges features by what they reveal beyond the decision (``Audit.excess_over_decision``,
  passing at <= 0.01).

Shapes: features ``[n, d]`` (float), concepts ``[n]`` class indices 0, 1, ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _hedge
from ._arrays import Estimator, matrix, vector

__all__ = [
    "Audit",
    "Eraser",
    "Leace",
    "ProbeChoice",
    "ProbeResult",
    "audit",
    "erasers",
    "group_balancing_weights",
    "probe",
]

#: The audit's pass criterion: the tuned MLP probe reads at most this much more accuracy from
#: the features than from the decisions (results/agnostic/decision-floor/).
MAX_PROBE_EXCESS = 0.01


@dataclass(frozen=True)
class ProbeChoice:
    """The MLP probe the validation split chose."""

    hidden: int
    weight_decay: float
    validation_accuracy: float


@dataclass(frozen=True)
class ProbeResult:
    """What a probe could read on the test rows."""

    accuracy: float
    chance: float
    """the majority-class rate of the test concept."""
    chance_interval: tuple
    """95 % interval of a chance-level classifier's accuracy on this many rows."""
    at_chance: bool
    cross_entropy_bits: float
    entropy_bits: float
    """H(concept) on the test rows."""
    mutual_information_bits: float
    """max(0, H - cross-entropy): a lower bound on I(concept; features)."""
    test_points: int
    chosen: Optional[ProbeChoice] = None

    @classmethod
    def from_json(cls, text: str) -> "ProbeResult":
        d = json.loads(text)
        chosen = d.pop("chosen", None)
        d["chance_interval"] = tuple(d["chance_interval"])
        return cls(**d, chosen=ProbeChoice(**chosen) if chosen else None)


@dataclass(frozen=True)
class Audit:
    """The fresh-probe audit of one set of features."""

    linear: ProbeResult
    mlp: ProbeResult
    """the MLP probe tuned on a validation split."""
    decision: Optional[ProbeResult] = None
    """the same tuned MLP probe on the task classifier's decisions (the floor), if given."""

    @property
    def excess_over_decision(self) -> Optional[float]:
        """MLP probe accuracy on the features minus that on the decisions."""
        return None if self.decision is None else self.mlp.accuracy - self.decision.accuracy

    def passes(self, max_excess: float = MAX_PROBE_EXCESS) -> bool:
        """Whether the features reveal at most ``max_excess`` beyond the decision (without
        decisions: whether both probes stayed inside the chance interval)."""
        if self.decision is None:
            return self.linear.at_chance and self.mlp.at_chance
        return self.excess_over_decision <= max_excess


def _concept(a, rows: int, name: str) -> np.ndarray:
    c = vector(a, rows, name, dtype=np.int64)
    if c.min() < 0:
        raise ValueError(f"`{name}` must hold class indices >= 0; found {c.min()}")
    return c


def group_balancing_weights(target, concept) -> np.ndarray:
    """Row weights ``[n]`` that make every (target, concept) group count equally: under them the
    concept is independent of the target, so an eraser fitted with them spares the target."""
    t = np.asarray(target)
    c = np.asarray(concept)
    if t.shape != c.shape or t.ndim != 1:
        raise ValueError(f"`target` {t.shape} and `concept` {c.shape} must be 1-D of one length")
    _, group, counts = np.unique(np.stack([t, c], 1), axis=0, return_inverse=True, return_counts=True)
    return 1.0 / counts[group.ravel()]


class Leace(Estimator):
    """LEACE concept erasure, ``r(x) = x - strength * P (x - mu)``, fitted by least squares with
    the covariance shrunk towards a scaled identity (OAS), so it stays well posed when features
    outnumber rows. Fitted attributes: ``mean_`` ``[d]``, ``projection_`` ``[d, d]``,
    ``rank_`` (dimensions erased: at most the number of concept classes minus one)."""

    def __init__(self, strength: float = 1.0):
        self.strength = strength

    def fit(self, X, concept, sample_weight=None) -> "Leace":
        x = matrix(X)
        z = _concept(concept, x.shape[0], "concept")
        w = None if sample_weight is None else vector(sample_weight, x.shape[0], "sample_weight")
        self.eraser_ = _hedge.leace_fit(x, z, w)
        self.mean_ = self.eraser_.mean
        self.projection_ = self.eraser_.projection
        self.rank_ = self.eraser_.rank
        self.n_features_in_ = x.shape[1]
        return self

    def transform(self, X) -> np.ndarray:
        """``X`` ``[n, d]`` with the concept erased at ``strength`` (1: LEACE; lower values
        move each row part of the way)."""
        self._check_fitted("eraser_")
        return self.eraser_.erase(matrix(X, n_features=self.n_features_in_), float(self.strength))

    def fit_transform(self, X, concept, sample_weight=None) -> np.ndarray:
        return self.fit(X, concept, sample_weight).transform(X)


def erasers() -> dict:
    """The registered concept erasers, ``{kind: what it does}``: every one :class:`Eraser` and
    ``hedge agnostic sweep --removal`` take (an eraser added to hedge appears here by itself)."""
    return dict(_hedge.eraser_kinds())


class Eraser(Estimator):
    """Any registered concept eraser (:func:`erasers`), fitted on features and concept labels and
    applied at ``strength`` (1: full erasure; lower values move each row part of the way).
    ``params`` are the eraser's settings (``Eraser("inlp", params={"iterations": 4})``); an
    unknown kind or parameter is a ``ValueError`` naming the known ones. Fitted attributes:
    ``rank_`` (dimensions erased) and ``reads_concept_`` (whether :meth:`transform` needs each
    row's concept label, as quadratic LEACE's oracle does)."""

    def __init__(self, kind: str = "leace", strength: float = 1.0, params: Optional[dict] = None, seed: int = 0):
        self.kind = kind
        self.strength = strength
        self.params = params
        self.seed = seed

    def fit(self, X, concept, sample_weight=None) -> "Eraser":
        x = matrix(X)
        z = _concept(concept, x.shape[0], "concept")
        w = None if sample_weight is None else vector(sample_weight, x.shape[0], "sample_weight")
        self.eraser_ = _hedge.eraser_fit(str(self.kind), json.dumps(self.params or {}), x, z, w, int(self.seed))
        self.rank_ = self.eraser_.rank
        self.reads_concept_ = self.eraser_.reads_concept
        self.n_features_in_ = x.shape[1]
        return self

    def transform(self, X, concept=None) -> np.ndarray:
        """``X`` ``[n, d]`` with the concept erased at ``strength``."""
        self._check_fitted("eraser_")
        x = matrix(X, n_features=self.n_features_in_)
        z = None if concept is None else _concept(concept, x.shape[0], "concept")
        return self.eraser_.erase(x, z, float(self.strength))

    def fit_transform(self, X, concept, sample_weight=None) -> np.ndarray:
        return self.fit(X, concept, sample_weight).transform(X, concept)


def _split(train_features, train_concept, test_features, test_concept):
    tf = matrix(train_features, "train_features")
    sf = matrix(test_features, "test_features", n_features=tf.shape[1])
    return tf, _concept(train_concept, tf.shape[0], "train_concept"), sf, _concept(test_concept, sf.shape[0], "test_concept")


def probe(train_features, train_concept, test_features, test_concept, kind: str = "linear", steps: int = 500, seed: int = 0) -> ProbeResult:
    """One fresh probe (``"linear"``: multinomial logistic regression; ``"mlp"``: 64 ReLU units),
    full-batch Adam for ``steps`` on standardised training features, scored on the test rows."""
    tf, ta, sf, sa = _split(train_features, train_concept, test_features, test_concept)
    return ProbeResult.from_json(_hedge.probe_one(tf, ta, sf, sa, kind, int(steps), int(seed)))


def audit(
    train_features,
    train_concept,
    test_features,
    test_concept,
    *,
    train_decisions=None,
    test_decisions=None,
    steps: int = 500,
    seed: int = 0,
) -> Audit:
    """The audit of frozen features: a linear probe and the tuned MLP probe (four settings, the
    best on 20 % of the training rows), and -- given the task classifier's decisions (logits,
    ``[n, classes]``) on the same rows -- the tuned MLP probe on those, the decision floor."""
    tf, ta, sf, sa = _split(train_features, train_concept, test_features, test_concept)
    linear, mlp = _hedge.probe_linear_and_mlp(tf, ta, sf, sa, int(steps), int(seed))
    decision = None
    if (train_decisions is None) != (test_decisions is None):
        raise ValueError("pass both `train_decisions` and `test_decisions`, or neither")
    if train_decisions is not None:
        td = matrix(train_decisions, "train_decisions")
        sd = matrix(test_decisions, "test_decisions", n_features=td.shape[1])
        if td.shape[0] != tf.shape[0] or sd.shape[0] != sf.shape[0]:
            raise ValueError("the decisions must have one row per feature row (train and test)")
        _, d_mlp = _hedge.probe_linear_and_mlp(td, ta, sd, sa, int(steps), int(seed))
        decision = ProbeResult.from_json(d_mlp)
    return Audit(ProbeResult.from_json(linear), ProbeResult.from_json(mlp), decision)
