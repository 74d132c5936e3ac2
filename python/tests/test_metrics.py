"""hedge.metrics against scikit-learn and NumPy on the same arrays."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import average_precision_score, roc_auc_score

from hedge import metrics


@pytest.fixture
def scored():
    rng = np.random.default_rng(4)
    p = rng.uniform(0, 1, 2000)
    y = rng.uniform(0, 1, 2000) < p**2  # over-confident probabilities: a diagram off the diagonal
    return p, y


def test_reliability_diagram_is_scikit_learns_calibration_curve(scored):
    p, y = scored
    d = metrics.reliability_diagram(p, y, bins=10)
    true, pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    filled = [b for b in d.bins if b.count > 0]
    np.testing.assert_allclose([b.observed_frequency for b in filled], true, atol=1e-12)
    np.testing.assert_allclose([b.mean_probability for b in filled], pred, atol=1e-12)
    counts = np.bincount(np.minimum((p * 10).astype(int), 9), minlength=10)
    assert [b.count for b in d.bins] == counts.tolist()
    assert d.ece == pytest.approx(np.sum(counts[counts > 0] / len(p) * np.abs(true - pred)), abs=1e-12)
    assert d.ece > 0.1  # p² is far from p


def test_risk_coverage_and_error_detection_match_numpy_and_scikit_learn(scored):
    p, y = scored
    correct, uncertainty = metrics.verification_decisions(p, y)
    np.testing.assert_array_equal(correct, (p >= 0.5) == y)
    rc = metrics.risk_coverage(uncertainty, correct)
    order = np.argsort(uncertainty, kind="stable")
    risk = np.cumsum(~correct[order]) / np.arange(1, len(p) + 1)
    np.testing.assert_allclose(rc.risk, risk, atol=1e-15)
    assert rc.aurc == pytest.approx(risk.mean(), abs=1e-15)
    d = metrics.error_detection(uncertainty, correct)
    assert d.auroc == pytest.approx(roc_auc_score(~correct, uncertainty), abs=1e-12)
    assert d.auprc == pytest.approx(average_precision_score(~correct, uncertainty), abs=1e-12)
    assert d.error_rate == pytest.approx(1 - correct.mean())


def test_bad_arrays_are_refused_by_name():
    with pytest.raises(ValueError, match="outside"):
        metrics.reliability_diagram([0.5, 1.5], [True, False])
    with pytest.raises(ValueError, match="`correct` must hold booleans"):
        metrics.risk_coverage([0.1, 0.2], [0, 2])
    with pytest.raises(ValueError, match="length|lengths|differ"):
        metrics.error_detection([0.1, 0.2, 0.3], [True, False])
    with pytest.raises(ValueError, match="one-dimensional"):
        metrics.reliability_diagram(np.zeros((2, 2)), [True, False])
