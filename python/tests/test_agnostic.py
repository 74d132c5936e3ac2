"""Concept erasure and the probe audit on real features (MNIST digits pooled to 7 x 7; the
concept is the digit's parity): LEACE's guarantees, probes against scikit-learn's logistic
regression, the decision floor."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from hedge import agnostic


@pytest.fixture(scope="module")
def pooled(mnist_test):
    images, labels = mnist_test
    x = images[:, 0].reshape(-1, 7, 4, 7, 4).mean((2, 4)).reshape(-1, 49).astype(np.float64)
    parity = (labels % 2).astype(np.int64)
    high = (labels >= 5).astype(np.int64)
    return x[:3000], parity[:3000], high[:3000], x[3000:5000], parity[3000:5000], high[3000:5000]


def test_leace_equalises_the_concepts_class_means_and_leaves_linear_probes_at_chance(pooled):
    xtr, ztr, _, xte, zte, _ = pooled
    eraser = agnostic.Leace().fit(xtr, ztr)
    erased = eraser.transform(xtr)
    assert eraser.rank_ == 1
    gap = erased[ztr == 1].mean(0) - erased[ztr == 0].mean(0)
    assert np.abs(gap).max() < 1e-9 * np.abs(xtr).max()
    p = eraser.projection_
    np.testing.assert_allclose(p @ p, p, atol=1e-8)  # an (oblique) projection
    np.testing.assert_allclose(agnostic.Leace(strength=0.0).fit(xtr, ztr).transform(xte), xte)
    raw = LogisticRegression(max_iter=2000).fit(xtr, ztr).score(xte, zte)
    after = LogisticRegression(max_iter=2000).fit(erased, ztr).score(eraser.transform(xte), zte)
    chance = max(zte.mean(), 1 - zte.mean())
    assert raw > 0.8, raw
    assert after < chance + 0.04, (after, chance)


def test_group_balancing_weights_make_each_group_count_equally():
    t = np.array([0, 0, 0, 1, 1, 0])
    c = np.array([0, 0, 1, 1, 1, 0])
    w = agnostic.group_balancing_weights(t, c)
    np.testing.assert_allclose(w, [1 / 3, 1 / 3, 1.0, 0.5, 0.5, 1 / 3])
    for group in [(0, 0), (0, 1), (1, 1)]:
        rows = (t == group[0]) & (c == group[1])
        assert w[rows].sum() == pytest.approx(1.0)


def test_linear_probe_reads_what_scikit_learns_logistic_regression_reads(pooled):
    xtr, ztr, _, xte, zte, _ = pooled
    ours = agnostic.probe(xtr, ztr, xte, zte, kind="linear", steps=500)
    theirs = LogisticRegression(max_iter=2000).fit(xtr, ztr).score(xte, zte)
    assert ours.accuracy == pytest.approx(theirs, abs=0.03), (ours.accuracy, theirs)
    assert not ours.at_chance and ours.mutual_information_bits > 0.3
    assert ours.test_points == len(zte) and 0.49 < ours.chance < 0.52
    assert ours.entropy_bits == pytest.approx(-sum(q * np.log2(q) for q in (zte.mean(), 1 - zte.mean())), rel=1e-6)


def test_the_audit_scores_features_beyond_the_decision(pooled):
    xtr, ztr, ytr, xte, zte, yte = pooled
    # The task: digit >= 5. Its classifier's logits are the decisions.
    task = LogisticRegression(max_iter=2000).fit(xtr, ytr)
    d_train, d_test = task.predict_log_proba(xtr), task.predict_log_proba(xte)
    result = agnostic.audit(xtr, ztr, xte, zte, train_decisions=d_train, test_decisions=d_test, steps=300)
    assert result.mlp.chosen is not None and result.mlp.chosen.hidden in (64, 256)
    # The raw pixels show parity far better than the "digit >= 5" decision does: they fail.
    assert result.mlp.accuracy > 0.8 and result.decision.accuracy < result.mlp.accuracy - 0.1
    assert result.excess_over_decision == pytest.approx(result.mlp.accuracy - result.decision.accuracy)
    # Every rung has its floor; the worst excess is the largest of them.
    assert all(r.decision is not None for r in result.rungs)
    assert result.worst_excess == pytest.approx(max(r.features.accuracy - r.decision.accuracy for r in result.rungs))
    assert result.worst_excess >= result.excess_over_decision and result.worst_rung in agnostic.RUNGS
    assert not result.passes()
    # LEACE's guarantee is linear: the linear probe falls to chance on erased features.
    eraser = agnostic.Leace().fit(xtr, ztr)
    erased = agnostic.probe(eraser.transform(xtr), ztr, eraser.transform(xte), zte, kind="linear", steps=300)
    assert erased.accuracy < erased.chance_interval[1] + 0.02, erased


def test_every_ladder_rung_reads_what_its_scikit_learn_counterpart_reads(pooled):
    """The probe ladder on real features (pooled MNIST, the concept the digit's parity), each rung
    against scikit-learn on the same arrays: logistic regression; degree-2 features + logistic
    regression; an RBF SVM with the bandwidth chosen by cross-validation over the rung's multiples
    of the median heuristic; an MLP of the width and decay the rung chose; a random forest of 100
    trees. Accuracy within 0.02."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler
    from sklearn.svm import SVC

    xtr, ztr, _, xte, zte, _ = pooled
    ours = agnostic.audit(xtr, ztr, xte, zte, steps=500)
    assert [r.name for r in ours.rungs] == list(agnostic.RUNGS)
    mlp = ours.mlp
    z = StandardScaler().fit_transform(xtr)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(z), 2000), rng.integers(0, len(z), 2000)
    median = np.median(((z[i] - z[j]) ** 2).sum(1))
    theirs = {
        "linear": make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)),
        "quadratic": make_pipeline(
            StandardScaler(), PolynomialFeatures(2, include_bias=False), StandardScaler(), LogisticRegression(max_iter=3000)
        ),
        "rbf": make_pipeline(
            StandardScaler(), GridSearchCV(SVC(kernel="rbf"), {"gamma": [c / median for c in (0.25, 1.0, 4.0)]})
        ),
        "mlp": make_pipeline(
            StandardScaler(),
            MLPClassifier((mlp.chosen.hidden,), alpha=mlp.chosen.weight_decay, max_iter=500, random_state=0),
        ),
        "forest": RandomForestClassifier(n_estimators=100, random_state=0),
    }
    for name, model in theirs.items():
        reference = model.fit(xtr, ztr).score(xte, zte)
        got = ours.rung(name).features.accuracy
        assert got == pytest.approx(reference, abs=0.02), (name, got, reference)
    assert ours.worst_excess is None and ours.worst_rung is None and not ours.passes()


def test_bad_arguments_are_refused():
    x = np.zeros((4, 2))
    # Concept labels of any kind, as scikit-learn reads a target: -1, 0 and 1 are three classes.
    assert agnostic.Leace().fit(np.eye(4, 2), [0, 1, -1, 0]).concept_classes_.tolist() == [-1, 0, 1]
    with pytest.raises(ValueError, match="`test_features` has 3 features but the model was fitted on 2"):
        agnostic.probe(x, [0, 1, 0, 1], np.zeros((2, 3)), [0, 1])
    with pytest.raises(ValueError, match='probe kind "svm"'):
        agnostic.probe(x, [0, 1, 0, 1], x, [0, 1, 0, 1], kind="svm")
    with pytest.raises(ValueError, match="both `train_decisions` and `test_decisions`"):
        agnostic.audit(x, [0, 1, 0, 1], x, [0, 1, 0, 1], train_decisions=x)


def test_every_registered_eraser_runs_through_one_class(pooled):
    """``agnostic.Eraser(kind)`` reaches every eraser of the library's registry: LEACE through
    it is the same map as :class:`Leace`; the mean-difference eraser equalises the parity
    classes' means (checked with NumPy) and removes one dimension; INLP takes its parameter;
    quadratic LEACE, an oracle, refuses to erase without the rows' labels; unknown kinds and
    parameters are refused naming the known ones."""
    xtr, ztr, _, xte, zte, _ = pooled
    assert {"leace", "inlp", "quadratic-leace", "mean-difference"} <= set(agnostic.erasers())
    np.testing.assert_allclose(
        agnostic.Eraser("leace").fit(xtr, ztr).transform(xte), agnostic.Leace().fit(xtr, ztr).transform(xte), atol=1e-10
    )
    md = agnostic.Eraser("mean-difference").fit(xtr, ztr)
    erased = md.transform(xtr)
    assert md.rank_ == 1 and not md.reads_concept_
    gap = erased[ztr == 1].mean(0) - erased[ztr == 0].mean(0)
    assert np.abs(gap).max() < 1e-9 * np.abs(xtr).max()
    # An orthogonal projection: what it removes is one direction, orthogonal to what it keeps.
    removed = xtr - erased
    assert np.linalg.matrix_rank(removed - removed.mean(0), tol=1e-8) == 1
    np.testing.assert_allclose(agnostic.Eraser("mean-difference", strength=0.0).fit(xtr, ztr).transform(xte), xte)
    assert agnostic.Eraser("inlp", params={"iterations": 2}).fit(xtr, ztr).rank_ >= 2
    quadratic = agnostic.Eraser("quadratic-leace").fit(xtr, ztr)
    assert quadratic.reads_concept_
    with pytest.raises(ValueError, match="pass `concept`"):
        quadratic.transform(xte)
    assert quadratic.transform(xte, zte).shape == xte.shape
    with pytest.raises(ValueError, match="leace, inlp"):
        agnostic.Eraser("pca").fit(xtr, ztr)
    with pytest.raises(ValueError, match="no parameters"):
        agnostic.Eraser("leace", params={"iterations": 3}).fit(xtr, ztr)
