"""Uncertainty quality on your own arrays: the functions ``hedge hib eval`` and ``hedge hib
search`` report with, so numbers computed here and in a report are the same numbers.

* :func:`reliability_diagram` -- calibration of probabilities (per-bin mean prediction against
  the observed frequency, and the ECE).
* :func:`risk_coverage` -- selective prediction: the risk among the most certain answers at every
  coverage, and its area (AURC).
* :func:`error_detection` -- how well an uncertainty predicts the wrong answers (AUROC, AUPRC).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._native import _hedge

__all__ = ["ReliabilityBin", "ReliabilityDiagram", "RiskCoverage", "ErrorDetection", "reliability_diagram",
           "risk_coverage", "error_detection", "verification_decisions"]


@dataclass(frozen=True)
class ReliabilityBin:
    """Predictions whose probability lies in [lower, upper) (the last bin also takes 1)."""

    lower: float
    upper: float
    count: int
    mean_probability: Optional[float]
    """None for an empty bin."""
    observed_frequency: Optional[float]
    """The share of positive outcomes; None for an empty bin."""


@dataclass(frozen=True)
class ReliabilityDiagram:
    """Equal-width bins of [0, 1]; a calibrated model's points lie on the diagonal. The
    non-empty bins are scikit-learn's ``calibration_curve(strategy="uniform")`` points."""

    bins: list
    """[ReliabilityBin], empty ones kept so that diagrams of different models line up."""
    ece: float
    """Expected calibration error: sum over bins of (count / n) |observed - mean prediction|."""

    @classmethod
    def from_dict(cls, d: dict) -> "ReliabilityDiagram":
        return cls([ReliabilityBin(**b) for b in d["bins"]], d["ece"])

    def plot(self, ax=None, label: str = "model"):
        """Draws the diagram (and the diagonal) on a matplotlib axis; returns the axis."""
        import matplotlib.pyplot as plt

        ax = ax if ax is not None else plt.gca()
        filled = [b for b in self.bins if b.count > 0]
        ax.plot([0, 1], [0, 1], color="grey", linestyle="--", label="perfect calibration")
        ax.plot([b.mean_probability for b in filled], [b.observed_frequency for b in filled], marker="o",
                label=f"{label} (ECE {self.ece:.3f})")
        ax.set_xlabel("mean predicted probability in the bin")
        ax.set_ylabel("observed frequency")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend()
        return ax


@dataclass(frozen=True)
class RiskCoverage:
    coverage: np.ndarray
    """k / n for k = 1..n."""
    risk: np.ndarray
    """The error rate among the k most certain answers."""
    aurc: float
    """The mean risk over every k (Geifman et al.'s AURC; lower is better)."""


@dataclass(frozen=True)
class ErrorDetection:
    """ROC AUC and average precision of an uncertainty for the wrong answers (0.5 AUROC knows
    nothing; the AUPRC's floor is the error rate)."""

    auroc: float
    auprc: float
    error_rate: float


def _floats(name: str, x) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    if a.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional; got shape {a.shape}")
    return a


def _bools(name: str, x) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional; got shape {a.shape}")
    if a.dtype != np.bool_:
        if not np.isin(a, [0, 1]).all():
            raise ValueError(f"`{name}` must hold booleans (or 0 and 1)")
        a = a.astype(np.bool_)
    return np.ascontiguousarray(a)


def reliability_diagram(p, y, bins: int = 10) -> ReliabilityDiagram:
    """The reliability diagram of probabilities ``p`` for binary outcomes ``y``."""
    return ReliabilityDiagram.from_dict(json.loads(_hedge.eval_reliability_diagram(_floats("p", p), _bools("y", y),
                                                                                    bins)))


def risk_coverage(uncertainty, correct) -> RiskCoverage:
    """The risk-coverage curve of answers ``correct`` ranked by ``uncertainty`` (higher = less
    sure; ties keep the input order)."""
    coverage, risk, aurc = _hedge.eval_risk_coverage(_floats("uncertainty", uncertainty), _bools("correct", correct))
    return RiskCoverage(np.asarray(coverage), np.asarray(risk), aurc)


def error_detection(uncertainty, correct) -> ErrorDetection:
    """AUROC and AUPRC of ``uncertainty`` for the wrong answers among ``correct`` (a
    ValueError where every answer is right or every one wrong)."""
    return ErrorDetection(*_hedge.eval_error_detection(_floats("uncertainty", uncertainty), _bools("correct", correct)))


def verification_decisions(p, is_match) -> tuple:
    """Selective verification as ``hedge hib eval`` scores it: a pair is declared a match where
    p >= 1/2. Returns ``(correct, uncertainty)`` with uncertainty 1 - max(p, 1 - p)."""
    p = _floats("p", p)
    m = _bools("is_match", is_match)
    return (p >= 0.5) == m, 1.0 - np.maximum(p, 1.0 - p)
