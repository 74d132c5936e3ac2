"""Batch acquisition from Python against references written here in NumPy from the papers'
descriptions (ACS-FW's Algorithm 1, LCMD, BALD), on real UCI data."""

import numpy as np
import pytest
from conftest import read_uci

from hedge import active, bayes


def reference_frank_wolfe(k, iterations, distinct):
    """Pinsler et al. (2019), Algorithm 1 on K = <L_n, L_m>: from w = 0 step towards the
    vertex (sigma / sigma_f) e_f best aligned with the residual, exact line search."""
    n = k.shape[0]
    sigma_n = np.sqrt(np.clip(np.diag(k), 0, None))
    sigma = sigma_n.sum()
    w = np.zeros(n)
    ones = np.ones(n)
    objective = [ones @ k @ ones]
    picks, chosen = [], np.zeros(n, bool)
    for _ in range(iterations):
        alignment = k @ (ones - w) / np.where(sigma_n > 0, sigma_n, np.inf)
        if distinct:
            alignment[chosen] = -np.inf
        f = int(np.argmax(alignment))  # the first of ties: the lowest index
        vertex = np.zeros(n)
        vertex[f] = sigma / sigma_n[f]
        d = vertex - w
        gamma = np.clip((ones - w) @ k @ d / (d @ k @ d), 0.0, 1.0)
        w = w + gamma * d
        objective.append((ones - w) @ k @ (ones - w))
        picks.append(f)
        chosen[f] = True
    indices = np.flatnonzero(chosen) if distinct else np.flatnonzero(w > 0)
    return indices, w, np.array(objective), picks


def yacht_pool(data_dir, labelled=20, seed=0):
    x, y = read_uci(data_dir, "yacht")
    x = (x - x.mean(0)) / x.std(0)
    x = np.hstack([np.ones((len(x), 1)), x])
    order = np.random.default_rng(seed).permutation(len(x))
    return x[order[:labelled]], y[order[:labelled]], x[order[labelled:]]


def test_acs_fw_on_the_closed_form_gram_matrix_follows_algorithm_1(data_dir):
    xl, yl, pool = yacht_pool(data_dir)
    model = bayes.BayesianLinearRegression(prior_precision=1.0, noise_variance=4.0).fit(xl, yl)
    k = active.linear_gram(model, pool)
    # Known noise: <L_n, L_m> = (x_n.x_m / s^4) x_n S x_m, S the posterior covariance.
    cov = np.linalg.inv(np.eye(xl.shape[1]) + xl.T @ xl / 4.0)
    np.testing.assert_allclose(k, (pool @ pool.T) * (pool @ cov @ pool.T) / 16.0, rtol=1e-9)
    for distinct in (True, False):
        got = active.acs_fw(gram=k, batch_size=10, distinct=distinct)
        indices, w, objective, picks = reference_frank_wolfe(k, 10, distinct)
        assert list(got.picks) == picks
        np.testing.assert_array_equal(got.indices, indices)
        np.testing.assert_allclose(got.weights, w, rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(got.objective, objective, rtol=1e-7)
        assert np.all(np.diff(got.objective) <= 1e-9 * objective[0])
    assert len(active.acs_fw(gram=k, batch_size=10).indices) == 10


def test_projections_and_their_gram_matrix_give_the_same_batch(data_dir):
    xl, yl, pool = yacht_pool(data_dir)
    model = bayes.BayesianLinearRegression(noise_variance=None).fit(xl, yl)
    p = active.nig_projections(model, pool, projections=10, seed=3)
    assert p.shape == (len(pool), 10)
    np.testing.assert_array_equal(p, active.nig_projections(model, pool, projections=10, seed=3))
    by_vectors = active.acs_fw(p, batch_size=8)
    by_gram = active.acs_fw(gram=p @ p.T, batch_size=8)
    np.testing.assert_array_equal(by_vectors.indices, by_gram.indices)
    # The projected path keeps unit directions in float32: weights agree to single precision.
    np.testing.assert_allclose(by_vectors.weights, by_gram.weights, rtol=1e-4, atol=1e-8)
    closed = active.acs_fw_select(model, pool, batch_size=8)
    assert len(closed.indices) == 8


def test_probit_gram_is_the_covariance_of_the_probit_outputs(data_dir):
    x, y = read_uci(data_dir, "bostonHousing")
    x = (x - x.mean(0)) / x.std(0)
    labels = (y > np.median(y)).astype(int)
    model = bayes.BayesianProbitRegression().fit(x[:60], labels[:60])
    pool = x[60:90]
    k = active.probit_gram(model, pool)
    # x_n.x_m Cov[Phi(x_n.w), Phi(x_m.w)] with w ~ N(mode, covariance), by sampling.
    from scipy.stats import norm

    w = np.random.default_rng(0).multivariate_normal(model.coef_, model.covariance_, size=200_000)
    phi = norm.cdf(pool @ w.T)
    mc = (pool @ pool.T) * np.cov(phi)
    np.testing.assert_allclose(k, mc, atol=0.02 * np.abs(k).max())
    assert len(active.acs_fw_select(model, pool, batch_size=5).indices) == 5


def test_bald_and_entropy_equal_their_definitions():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(30, 50, 4))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)

    def entropy(q):
        return -(q * np.log(q)).sum(-1)

    np.testing.assert_allclose(active.bald(p), entropy(p.mean(0)) - entropy(p).mean(0), rtol=1e-10)
    np.testing.assert_allclose(active.max_entropy(p[0]), entropy(p[0]), rtol=1e-12)
    scores = np.array([0.1, 0.9, 0.5, 0.9, 0.2])
    np.testing.assert_array_equal(active.top_b(scores, 3), [1, 2, 3])


def reference_lcmd(labelled, pool, b):
    """LCMD (TP mode) as its paper describes it: clusters of pool points around centres (the
    labelled points, then the picks); pick the farthest point of the cluster whose squared
    distances sum highest."""
    centres = list(labelled)
    picked = []
    for _ in range(b):
        d = ((pool[:, None, :] - np.array(centres)[None]) ** 2).sum(-1)
        owner, dist = d.argmin(1), d.min(1)
        free = np.ones(len(pool), bool)
        free[picked] = False
        mass = np.bincount(owner[free], weights=dist[free], minlength=len(centres))
        heaviest = int(np.argmax(mass))
        candidates = np.flatnonzero(free & (owner == heaviest))
        pick = int(candidates[np.argmax(dist[candidates])])
        picked.append(pick)
        centres.append(pool[pick])
    return picked


def test_lcmd_follows_its_definition(data_dir):
    xl, _, pool = yacht_pool(data_dir)
    got = active.lcmd(xl, pool, 12)
    assert list(got) == reference_lcmd(xl, pool, 12)
    assert len(set(got)) == 12


def test_bad_arguments_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="exactly one of"):
        active.acs_fw(np.eye(3), gram=np.eye(3), batch_size=2)
    with pytest.raises(ValueError, match="`gram` must be square"):
        active.acs_fw(gram=np.ones((3, 2)), batch_size=2)
    with pytest.raises(ValueError, match="`batch_size` = 0"):
        active.acs_fw(np.eye(3), batch_size=0)
    known = bayes.BayesianLinearRegression().fit(np.eye(3), np.arange(3.0))
    with pytest.raises(ValueError, match=r"noise_variance=None"):
        active.nig_projections(known, np.eye(3))
    with pytest.raises(TypeError, match="must be a fitted hedge.bayes.BayesianLinearRegression"):
        active.linear_gram(object(), np.eye(3))
    with pytest.raises(ValueError, match="must be \\[samples, pool, classes\\]"):
        active.bald(np.ones((3, 4)))


def _smooth_regression(n=300):
    """A smooth 3-input function of deterministic inputs (the Rust loop tests' set)."""
    i = np.arange(n)
    X = np.stack([np.sin(i * (j + 3) * 0.37) * 2 for j in range(3)], axis=1)
    return X, 3 * X[:, 0] - 2 * X[:, 1] + X[:, 2] ** 2 + 10


# Short fits: the loop's own default (the mse recipe) with fewer steps, four acquisition rounds.
SHORT = {"budget": 60, "model": {"steps": 300}}


def test_a_callable_acquisition_runs_in_the_pool_loop_as_a_registered_one():
    """A user's MaxEnt (scores = the predictive's entropy) chooses exactly what the registered
    one does, round after round; a user's rows are labelled as given; the predictive it sees
    shrinks by one batch per round."""
    X, y = _smooth_regression()
    registered = active.pool_loop(X, y, "maxent", settings=SHORT)
    seen = []

    def my_maxent(predictive):
        seen.append((len(predictive), predictive.batch_size, predictive.features.shape))
        assert predictive.labelled_features.shape[0] + len(predictive) == 240  # the pool: 80 % of 300
        return predictive.entropy

    mine = active.pool_loop(X, y, my_maxent, settings=SHORT)
    assert [r.test_rmse for r in mine] == [r.test_rmse for r in registered]
    assert [r.labels for r in mine] == [20, 30, 40, 50, 60]
    assert {r.method for r in mine} == {"my_maxent"}
    assert [s[:2] for s in seen] == [(220, 10), (210, 10), (200, 10), (190, 10)]
    assert all(s[2][0] == s[0] for s in seen)

    # Rows: the lowest-variance points (the opposite of MaxEnt), as integers.
    def least_variance(predictive):
        return np.argsort(predictive.variance, kind="stable")[: predictive.batch_size]

    rows = active.pool_loop(X, y, least_variance, settings=SHORT)
    assert [r.labels for r in rows] == [20, 30, 40, 50, 60]
    assert [r.batch_size for r in rows] == [10, 10, 10, 10, 0]

    # Random choices from the round's seed repeat exactly.
    def seeded(predictive):
        return np.random.default_rng(predictive.seed).permutation(len(predictive))[: predictive.batch_size]

    once, again = (active.pool_loop(X, y, seeded, settings=SHORT) for _ in range(2))
    assert [r.test_rmse for r in once] == [r.test_rmse for r in again]


def test_a_callable_acquisition_s_mistakes_are_reported_as_such():
    X, y = _smooth_regression()

    class Stop(Exception):
        pass

    def raises(predictive):
        raise Stop("my acquisition gave up")

    with pytest.raises(Stop, match="gave up"):
        active.pool_loop(X, y, raises, settings=SHORT)

    def twice(predictive):
        return np.zeros(predictive.batch_size, dtype=np.int64)

    with pytest.raises(ValueError, match=r"acquisition 'twice' returned row 0 twice"):
        active.pool_loop(X, y, twice, settings=SHORT)
    with pytest.raises(ValueError, match="one value per unlabelled point"):
        active.pool_loop(X, y, lambda p: np.ones(3), settings=SHORT)
    # The GP has no last-layer features: reading them says so.
    with pytest.raises(ValueError, match="the GP surrogate gives no last-layer features"):
        active.pool_loop(X, y, lambda p: p.features[:, 0], settings={"budget": 30, "surrogate": "gp"})
    # A registered acquisition that reads what the model does not give is refused before any fit.
    with pytest.raises(ValueError, match="class probabilities.*NeuralLinear regression does not give"):
        active.pool_loop(X, y, "bald", settings=SHORT)
    with pytest.raises(ValueError, match="no such acquisition; hedge has random, maxent"):
        active.pool_loop(X, y, "max-ent", settings=SHORT)
    with pytest.raises(ValueError, match=r"model\.stpes"):
        active.pool_loop(X, y, "random", settings={"model": {"stpes": 10}})
    assert set(active.acquisitions()) >= {"random", "maxent", "bald", "acs-fw", "lcmd", "least-confidence"}
