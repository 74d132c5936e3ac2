"""Concept erasure and the fresh-probe audit on feature arrays you bring (assess apart from
mitigate, the fairlearn way).

* :class:`Leace` -- LEACE (Belrose et al., 2023): the least-squares affine map after which no
  linear classifier reads the concept from the features better than a constant; optional row
  weights (:func:`group_balancing_weights` fits it where the concept is independent of the task).
* :func:`probe` and :func:`audit` -- fresh probes trained on one split of frozen features and
  scored on another: accuracy, the 95 % interval of a chance-level classifier, and a lower bound
  on the mutual information I(concept; features) in bits. :func:`audit` runs the *probe ladder*
  (:data:`RUNGS`): linear, quadratic (degree-2 features), RBF kernel (random Fourier features,
  bandwidth tuned), the tuned MLP and a random forest; given the task classifier's decisions
  (logits), the same ladder on them: the *decision floor*. A classifier whose decisions are
  harder on one concept value leaks the concept through its confidence whatever its features
  do, so hedge judges features by what they reveal beyond the decision, rung by rung
  (``Audit.worst_excess``, passing at <= 0.01).

Shapes: features ``[n, d]`` (float), concepts ``[n]`` class indices 0, 1, ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._native import _hedge
from ._arrays import matrix, vector
from ._sklearn import (
    BaseEstimator,
    NativeState,
    TransformerMixin,
    check_features,
    check_features_and_target,
    check_fitted,
    codes_of,
    encode_labels,
)

__all__ = [
    "Audit",
    "Eraser",
    "Leace",
    "ProbeChoice",
    "ProbeResult",
    "RUNGS",
    "Rung",
    "RungChoice",
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


#: The probe ladder's rungs, lowest first.
RUNGS = ("linear", "quadratic", "rbf", "mlp", "forest")


@dataclass(frozen=True)
class RungChoice:
    """What a tuned quadratic or RBF rung chose on its validation split."""

    weight_decay: float
    validation_accuracy: float
    gamma: Optional[float] = None
    """the RBF kernel's gamma in exp(-gamma |x - y|^2) on standardised features."""


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
    """the MLP probe's tuned setting."""
    setting: Optional[RungChoice] = None
    """a quadratic or RBF rung's tuned setting."""

    @classmethod
    def from_json(cls, text: str) -> "ProbeResult":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, d: dict) -> "ProbeResult":
        d = dict(d)
        chosen = d.pop("chosen", None)
        setting = d.pop("setting", None)
        d["chance_interval"] = tuple(d["chance_interval"])
        return cls(
            **d,
            chosen=ProbeChoice(**chosen) if chosen else None,
            setting=RungChoice(**setting) if setting else None,
        )


@dataclass(frozen=True)
class Rung:
    """One rung of the probe ladder: on the features, and on the decisions where given."""

    name: str
    features: ProbeResult
    decision: Optional[ProbeResult] = None

    @property
    def excess(self) -> Optional[float]:
        """Accuracy on the features minus accuracy on the decisions."""
        return None if self.decision is None else self.features.accuracy - self.decision.accuracy


@dataclass(frozen=True)
class Audit:
    """The fresh-probe audit of one set of features: the probe ladder (:data:`RUNGS`)."""

    rungs: tuple
    """every :class:`Rung`, lowest first."""

    @classmethod
    def from_json(cls, text: str) -> "Audit":
        d = json.loads(text)
        return cls(
            tuple(
                Rung(
                    r["rung"],
                    ProbeResult.from_dict(r["features"]),
                    ProbeResult.from_dict(r["decision"]) if r.get("decision") else None,
                )
                for r in d["rungs"]
            )
        )

    def rung(self, name: str) -> Rung:
        """The rung called ``name`` (one of :data:`RUNGS`)."""
        for r in self.rungs:
            if r.name == name:
                return r
        raise KeyError(f"no rung {name!r}; the rungs are {', '.join(r.name for r in self.rungs)}")

    @property
    def linear(self) -> ProbeResult:
        """the linear rung on the features."""
        return self.rung("linear").features

    @property
    def mlp(self) -> ProbeResult:
        """the tuned MLP rung on the features."""
        return self.rung("mlp").features

    @property
    def decision(self) -> Optional[ProbeResult]:
        """the tuned MLP rung on the decisions (the floor), if decisions were given."""
        return self.rung("mlp").decision

    @property
    def excess_over_decision(self) -> Optional[float]:
        """MLP rung accuracy on the features minus that on the decisions."""
        return self.rung("mlp").excess

    @property
    def worst_excess(self) -> Optional[float]:
        """The largest excess of a rung on the features over the same rung on the decisions."""
        excesses = [r.excess for r in self.rungs]
        return None if any(e is None for e in excesses) else max(excesses)

    @property
    def worst_rung(self) -> Optional[str]:
        """The rung with the largest excess (``None`` without decisions)."""
        if self.worst_excess is None:
            return None
        return max(self.rungs, key=lambda r: r.excess).name

    def passes(self, max_excess: float = MAX_PROBE_EXCESS) -> bool:
        """Whether on every rung the features reveal at most ``max_excess`` beyond the decision
        (without decisions: whether every rung stayed inside its chance interval)."""
        if self.worst_excess is None:
            return all(r.features.at_chance for r in self.rungs)
        return self.worst_excess <= max_excess


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


class _ConceptEraser(NativeState, TransformerMixin, BaseEstimator):
    """What :class:`Leace` and :class:`Eraser` share: scikit-learn's transformer API with the
    concept as the target ``y`` (required; ``concept=`` names it too), read as labels of any kind
    (``concept_classes_``), and an optional ``sample_weight``. The fitted Rust eraser is
    ``eraser_``; a pickle rebuilds it from the fitted attributes."""

    _native = "eraser_"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _fit_inputs(self, X, y, sample_weight, concept):
        if concept is not None:
            if y is not None:
                raise ValueError("give the concept labels once: as `y` or as `concept`, not both")
            y = concept
        x, y = check_features_and_target(self, X, y, classifier=True, min_samples=2)
        self.concept_classes_, z = encode_labels(y, "concept")
        w = None
        if sample_weight is not None:
            w = vector(sample_weight, x.shape[0], "sample_weight")
            if (w < 0).any():
                raise ValueError(f"`sample_weight` holds {w[w < 0][0]}: weights must be >= 0")
            if not (w > 0).any():
                raise ValueError("`sample_weight` is zero everywhere: at least one row must carry a weight above zero")
        return x, z, w


class Leace(_ConceptEraser):
    """LEACE concept erasure, ``r(x) = x - strength * P (x - mu)``, fitted by least squares with
    the covariance shrunk towards a scaled identity (OAS), so it stays well posed when features
    outnumber rows. Fitted attributes: ``mean_`` ``[d]``, ``projection_`` ``[d, d]``,
    ``rank_`` (dimensions erased: at most the number of concept classes minus one),
    ``concept_classes_`` (the concept's labels as fit saw them), ``n_features_in_``."""

    def __init__(self, strength: float = 1.0):
        self.strength = strength

    def fit(self, X, y=None, sample_weight=None, *, concept=None) -> "Leace":
        """Fits the eraser of the concept ``y`` ``[n]`` (labels of any kind) from ``X`` ``[n, d]``."""
        x, z, w = self._fit_inputs(X, y, sample_weight, concept)
        self.eraser_ = _hedge.leace_fit(x, z, w)
        self.mean_ = self.eraser_.mean
        self.projection_ = self.eraser_.projection
        self.rank_ = self.eraser_.rank
        return self

    def _rebuild_native(self, parts):
        # The Rust eraser is its mean, projection and rank, which are fitted attributes too.
        return _hedge.leace_from_parts(self.mean_, self.projection_, int(self.rank_))

    def transform(self, X) -> np.ndarray:
        """``X`` ``[n, d]`` with the concept erased at ``strength`` (1: LEACE; lower values
        move each row part of the way)."""
        check_fitted(self, "eraser_")
        return self.eraser_.erase(check_features(self, X, reset=False), float(self.strength))

    def fit_transform(self, X, y=None, sample_weight=None, *, concept=None) -> np.ndarray:
        return self.fit(X, y, sample_weight, concept=concept).transform(X)


def erasers() -> dict:
    """The registered concept erasers, ``{kind: what it does}``: every one :class:`Eraser` and
    ``hedge agnostic sweep --removal`` take (an eraser added to hedge appears here by itself)."""
    return dict(_hedge.eraser_kinds())


class Eraser(_ConceptEraser):
    """Any registered concept eraser (:func:`erasers`), fitted on features and concept labels and
    applied at ``strength`` (1: full erasure; lower values move each row part of the way).
    ``params`` are the eraser's settings (``Eraser("inlp", params={"iterations": 4})``); an
    unknown kind or parameter is a ``ValueError`` naming the known ones. Fitted attributes:
    ``rank_`` (dimensions erased), ``reads_concept_`` (whether :meth:`transform` needs each
    row's concept label, as quadratic LEACE's oracle does), ``concept_classes_``,
    ``n_features_in_``. A pickled ``Eraser`` keeps the rows it was fitted on and fits again,
    with the same seed, when it is loaded (the registered erasers have no common saved form)."""

    def __init__(self, kind: str = "leace", strength: float = 1.0, params: Optional[dict] = None, seed: int = 0):
        self.kind = kind
        self.strength = strength
        self.params = params
        self.seed = seed

    def _fit_eraser(self, x, z, w):
        return _hedge.eraser_fit(str(self.kind), json.dumps(self.params or {}), x, z, w, int(self.seed))

    def fit(self, X, y=None, sample_weight=None, *, concept=None) -> "Eraser":
        """Fits the eraser of the concept ``y`` ``[n]`` (labels of any kind) from ``X`` ``[n, d]``."""
        x, z, w = self._fit_inputs(X, y, sample_weight, concept)
        self.eraser_ = self._fit_eraser(x, z, w)
        self._fitted_on = (str(self.kind), self.params, int(self.seed), x, z, w)
        self.rank_ = self.eraser_.rank
        self.reads_concept_ = self.eraser_.reads_concept
        return self

    def _rebuild_native(self, parts):
        kind, params, seed, x, z, w = self._fitted_on
        return _hedge.eraser_fit(kind, json.dumps(params or {}), x, z, w, seed)

    def transform(self, X, concept=None) -> np.ndarray:
        """``X`` ``[n, d]`` with the concept erased at ``strength``."""
        check_fitted(self, "eraser_")
        x = check_features(self, X, reset=False)
        z = None
        if concept is not None:
            labels = np.asarray(concept)
            if labels.ndim != 1 or labels.shape[0] != x.shape[0]:
                raise ValueError(f"`concept` must be 1-D with {x.shape[0]} labels (one per row of X); got shape {labels.shape}")
            z = codes_of(self.concept_classes_, labels, "concept")
        return self.eraser_.erase(x, z, float(self.strength))

    def fit_transform(self, X, y=None, sample_weight=None, *, concept=None) -> np.ndarray:
        self.fit(X, y, sample_weight, concept=concept)
        return self.transform(X, y if concept is None else concept)


def _split(train_features, train_concept, test_features, test_concept):
    tf = matrix(train_features, "train_features")
    sf = matrix(test_features, "test_features", n_features=tf.shape[1])
    return tf, _concept(train_concept, tf.shape[0], "train_concept"), sf, _concept(test_concept, sf.shape[0], "test_concept")


def probe(train_features, train_concept, test_features, test_concept, kind: str = "linear", steps: int = 500, seed: int = 0) -> ProbeResult:
    """One fresh probe scored on the test rows: ``"linear"`` (multinomial logistic regression) or
    ``"mlp"`` (64 ReLU units, untuned), full-batch Adam for ``steps`` on standardised training
    features; or a ladder rung as the audit runs it: ``"quadratic"``, ``"rbf"``, ``"forest"``."""
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
    """The audit of frozen features: the probe ladder (:data:`RUNGS`; the gradient-trained rungs
    take ``steps`` Adam steps, the tuned ones choose on 20 % of the training rows), and -- given
    the task classifier's decisions (logits, ``[n, classes]``) on the same rows -- the same ladder
    on those, the decision floor."""
    tf, ta, sf, sa = _split(train_features, train_concept, test_features, test_concept)
    if (train_decisions is None) != (test_decisions is None):
        raise ValueError("pass both `train_decisions` and `test_decisions`, or neither")
    td = sd = None
    if train_decisions is not None:
        td = matrix(train_decisions, "train_decisions")
        sd = matrix(test_decisions, "test_decisions", n_features=td.shape[1])
        if td.shape[0] != tf.shape[0] or sd.shape[0] != sf.shape[0]:
            raise ValueError("the decisions must have one row per feature row (train and test)")
    return Audit.from_json(_hedge.probe_ladder(tf, ta, sf, sa, td, sd, int(steps), int(seed)))
