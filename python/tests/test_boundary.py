"""The Python boundary is as safe as the command line (issue 80): every case here once killed the
interpreter (SIGABRT), raised pyo3's ``PanicException`` (a ``BaseException`` that ``except
Exception`` does not catch), returned NaN, or returned an empty or meaningless result. Each now
ends in a ``ValueError`` or ``MemoryError`` whose message names the argument and the fix, before
any memory is taken or any loop runs. One test per class of failure."""

import pathlib

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hedge import active, agnostic, ann, bayes, hib

ROOT = pathlib.Path(__file__).resolve().parents[2]
# A committed training run (config and weights): the CLI's hostile-input suite reads it too.
COMMITTED_RUN = ROOT / "results" / "hib" / "instance-levers" / "b-cosine-seed0"


@pytest.fixture(autouse=True)
def default_bounds(monkeypatch):
    """The memory budget and work bound the user did not set: hedge's defaults."""
    monkeypatch.delenv("HEDGE_MEMORY_BUDGET", raising=False)
    monkeypatch.delenv("HEDGE_WORK_BOUND", raising=False)


def embedding(batch=4, dim=2, variance=0.5):
    g = torch.Generator().manual_seed(0)
    mean = torch.randn(batch, 1, dim, generator=g)
    return hib.Embedding(mean, torch.full((batch, 1, dim), variance))


def fitted_nig(rows=30, features=3):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, features))
    y = x @ np.array([1.0, -2.0, 0.5])[:features] + 0.1 * rng.normal(size=rows)
    return bayes.BayesianLinearRegression(noise_variance=None).fit(x, y), x


# --- Sizes: over the memory budget is a MemoryError naming the argument, never an abort. ---


def test_sizes_past_the_memory_budget_are_memory_errors_naming_the_argument():
    points = np.random.default_rng(0).normal(size=(200, 8)).astype(np.float32)
    index = ann.HnswIndex.build(points)
    with pytest.raises(MemoryError, match=r"HnswIndex.search.*Largest values that fit.*\bk\b"):
        index.search(points[:5], k=10**12)
    model, x = fitted_nig()
    with pytest.raises(MemoryError, match=r"nig_projections.*projections"):
        active.nig_projections(model, x, projections=10**12)
    head = hib.MatchHead()
    e = embedding()
    with pytest.raises(MemoryError, match=r"match_probability.*samples"):
        hib.match_probability(head, e, e, samples=10**12)
    with pytest.raises(MemoryError, match=r"self_mismatch.*samples"):
        hib.self_mismatch(head, e, samples=10**12)
    # 200,000 rows: a 320 GB kernel matrix.
    with pytest.raises(MemoryError, match=r"exact GP.*training rows"):
        bayes.GaussianProcessRegressor().fit(np.zeros((200_000, 1)), np.zeros(200_000))
    # 200,000 features: a 320 GB covariance.
    with pytest.raises(MemoryError, match=r"eraser.*features"):
        agnostic.Leace().fit(np.random.default_rng(0).random((4, 200_000)), [0, 1, 0, 1])
    # The index still answers after the refusals: nothing was left half done.
    ids, _ = index.search(points[:1], k=1)
    assert ids[0, 0] == 0


# --- Loops: over the work bound is a ValueError naming the count that fits. ---


def test_loop_counts_past_the_work_bound_are_refused_before_the_first_iteration(monkeypatch):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 2)), rng.normal(size=40)
    with pytest.raises(ValueError, match=r"work bound.*restarts"):
        bayes.GaussianProcessRegressor(restarts=10**12).fit(x, y)
    # The bound is the user's to set, and the message says which one applied.
    monkeypatch.setenv("HEDGE_WORK_BOUND", "1s")
    with pytest.raises(ValueError, match=r"HEDGE_WORK_BOUND=1s"):
        bayes.GaussianProcessRegressor(restarts=10**6).fit(x, y)


# --- Empty or undefined input: a ValueError, never a PanicException. ---


def test_empty_and_degenerate_input_is_a_value_error_not_a_panic():
    run = hib.Run(COMMITTED_RUN)
    with pytest.raises(ValueError, match=r"`images` holds no image"):
        run.embed(np.zeros((0, 28, 56), np.float32))
    with pytest.raises(ValueError, match=r"probe steps.*at least one training step"):
        agnostic.probe(np.eye(4), [0, 1, 0, 1], np.eye(4), [0, 1, 0, 1], steps=0)


def test_shard_methods_called_out_of_order_are_value_errors_naming_the_argument():
    """The shard classes hedge.scale's actors hold, called with sizes that disagree (a driver
    bug, or a user composing them by hand): a ValueError naming the argument, not a panic."""
    from hedge._native import _hedge

    rng = np.random.default_rng(0)
    lcmd = _hedge.LcmdShard(0, rng.normal(size=(6, 3)), rng.normal(size=(2, 3)))
    with pytest.raises(ValueError, match=r"`clusters` is 1 but this shard holds 2 centres"):
        lcmd.masses(1)
    assert len(lcmd.masses(2)) == 2
    with pytest.raises(ValueError, match=r"`features` has 2 values but the shard's points have 3"):
        lcmd.add_pick(2, 0, np.zeros(2))
    with pytest.raises(ValueError, match=r"masses name 3 clusters but `clusters` is 2"):
        _hedge.lcmd_heaviest_cluster([[1.0, None, 2.0]], 2)
    pool = _hedge.PoolShard(0, rng.normal(size=(6, 3)))
    with pytest.raises(ValueError, match=r"`residual` has 4 values but the shard's rows have 3 columns"):
        pool.best(np.zeros(4), True)


# --- Hostile arguments, drawn by hypothesis: every call returns or raises an Exception. ---

# The values a careless or hostile caller passes: ordinary, zero, huge, tiny, NaN and infinite.
hostile_floats = st.one_of(
    st.floats(-3, 3),
    st.sampled_from([0.0, -1.0, 1e300, -1e308, 1e-310, float("nan"), float("inf"), -float("inf")]),
)
# The same for float32 tensors, whose largest finite value is about 3.4e38.
hostile_float32 = st.one_of(
    st.floats(-3, 3, width=32),
    st.sampled_from([0.0, -1.0, 3e38, -3e38, 1e-45, float("nan"), float("inf"), -float("inf")]),
)
# Counts a caller means (0 to 8) and ones no caller means, which every bound refuses at once (a
# count in between, such as a billion Frank–Wolfe iterations over six points, is within the work
# bound and runs its hours; it has no place in a test).
hostile_counts = st.one_of(st.integers(0, 8), st.sampled_from([10**12, 10**15, 2**63 - 1]))
# Time-bounded: at most this many examples per test, no per-example deadline (a refused
# allocation is fast; an accepted small one trains nothing).
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def returns_or_refuses(call):
    """Runs `call`; a refusal must be an ordinary Exception (ValueError, MemoryError, TypeError),
    never a BaseException such as pyo3's PanicException; a result must hold no NaN."""
    try:
        result = call()
    except (ValueError, MemoryError, TypeError):
        return None
    except Exception as e:  # noqa: BLE001  (any other Exception is a finding too)
        raise AssertionError(f"unexpected {type(e).__name__}: {e}") from e
    for value in result if isinstance(result, tuple) else (result,):
        if isinstance(value, torch.Tensor):
            assert not torch.isnan(value).any(), f"NaN returned: {result}"
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert not np.isnan(value).any(), f"NaN returned: {result}"
    return result


@FUZZ
@given(
    rows=st.integers(1, 6),
    cols=st.integers(1, 4),
    fill=hostile_floats,
    batch=hostile_counts,
    distinct=st.booleans(),
)
def test_acs_fw_and_bald_on_hostile_arrays(rows, cols, fill, batch, distinct):
    x = np.random.default_rng(rows * 7 + cols).normal(size=(rows, cols))
    x[0, 0] = fill
    batch_result = returns_or_refuses(lambda: active.acs_fw(x, batch_size=batch, distinct=distinct))
    if batch_result is not None and distinct:
        assert len(batch_result.indices) >= 1
    with np.errstate(over="ignore", invalid="ignore"):
        gram = x @ x.T
    returns_or_refuses(lambda: active.acs_fw(gram=gram, batch_size=batch))
    p = np.full((2, rows, 2), 0.5)
    p[0, 0, 0] = fill
    returns_or_refuses(lambda: active.bald(p))
    returns_or_refuses(lambda: active.top_b(x[:, 0], batch))


@FUZZ
@given(
    mean=hostile_float32,
    variance=hostile_float32,
    samples=hostile_counts,
    margin=hostile_floats,
    dim=st.integers(1, 3),
)
def test_hib_functions_on_hostile_tensors(mean, variance, samples, margin, dim):
    head = hib.MatchHead()
    m = torch.zeros(3, 1, dim)
    m[0, 0, 0] = mean
    v = torch.full((3, 1, dim), 0.5)
    v[1, 0, 0] = variance
    e = hib.Embedding(m, v)
    returns_or_refuses(lambda: hib.match_probability(head, e, e, samples=samples))
    returns_or_refuses(lambda: hib.self_mismatch(head, e, samples=samples))
    returns_or_refuses(lambda: hib.vib_loss(head, e, e, torch.ones(3, dtype=torch.bool), samples=samples).total)
    returns_or_refuses(lambda: hib.contrastive(m[:, 0], m[:, 0], torch.ones(3, dtype=torch.bool), margin=margin))


@FUZZ
@given(k=hostile_counts, ef=hostile_counts, fill=hostile_floats, restarts=st.sampled_from([0, 1, 2, 10**9, 10**12]))
def test_ann_and_gp_on_hostile_arguments(k, ef, fill, restarts):
    points = np.random.default_rng(1).normal(size=(20, 3)).astype(np.float32)
    index = ann.HnswIndex.build(points)
    queries = points[:2].copy()
    queries[0, 0] = np.float32(fill) if np.isfinite(fill) and abs(fill) < 1e38 else np.float32("nan")
    returns_or_refuses(lambda: index.search(queries, k=k, ef=ef))
    x = np.random.default_rng(2).normal(size=(12, 2))
    y = x[:, 0].copy()
    y[3] = fill
    returns_or_refuses(lambda: bayes.GaussianProcessRegressor(restarts=restarts, max_iters=5).fit(x, y))


# --- No silent NaN: non-finite or invalid numbers are refused by name. ---


def test_non_finite_inputs_and_invalid_variances_are_refused_not_returned_as_nan():
    head = hib.MatchHead()
    e = embedding()
    bad_mean = e.mean.clone()
    bad_mean[1, 0, 0] = float("nan")
    for f in (
        lambda b: hib.match_probability(head, b, e),
        lambda b: hib.self_mismatch(head, b),
        lambda b: hib.vib_loss(head, b, e, torch.ones(4, dtype=torch.bool)),
    ):
        with pytest.raises(ValueError, match=r"`mean1?` holds NaN at flat position 2"):
            f(hib.Embedding(bad_mean, e.variance))
        with pytest.raises(ValueError, match=r"`variance1?` holds -0.5: variances must be positive"):
            f(hib.Embedding(e.mean, -e.variance))
    z = torch.randn(4, 2)
    with pytest.raises(ValueError, match=r"`margin` = NaN must be finite"):
        hib.contrastive(z, z, torch.ones(4, dtype=torch.bool), margin=float("nan"))
    run = hib.Run(COMMITTED_RUN)
    images = np.zeros((2, 28, 56), np.float32)
    images[1, 3, 4] = np.nan
    with pytest.raises(ValueError, match=r"`images` holds NaN at image 1"):
        run.embed(images)
    with pytest.raises(ValueError, match=r"`probabilities` holds NaN"):
        active.bald(np.array([[[0.5, np.nan]], [[0.5, 0.5]]]))


def strided(t):
    """The same values in a non-contiguous layout: every other column of a wider tensor."""
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1])
    wide[..., ::2] = t
    view = wide[..., ::2]
    assert not view.is_contiguous() and torch.allclose(view, t, equal_nan=True)
    return view


def test_the_checks_read_a_non_contiguous_layout_as_they_read_a_contiguous_one():
    """The input checks read a contiguous CPU float32 tensor in place and ask libtorch about any
    other layout: a strided view of the same values gets the same refusal and the same result."""
    head = hib.MatchHead()
    e = embedding()
    bad_mean = e.mean.clone()
    bad_mean[1, 0, 0] = float("nan")
    for mean in (bad_mean, strided(bad_mean)):
        with pytest.raises(ValueError, match=r"`mean1` holds NaN at flat position 2"):
            hib.match_probability(head, hib.Embedding(mean, e.variance), e)
    for variance in (-e.variance, strided(-e.variance)):
        with pytest.raises(ValueError, match=r"`variance2` holds -0.5: variances must be positive"):
            hib.match_probability(head, e, hib.Embedding(e.mean, variance))
    with pytest.raises(ValueError, match=r"`mean1` has shape \[1, 1, 1, 1, 4\]; it must have 2 or 3 dimensions"):
        hib.match_probability(head, hib.Embedding(torch.zeros(1, 1, 1, 1, 4)), e)
    with pytest.raises(ValueError, match=r"`mean1` is Double"):
        hib.match_probability(head, hib.Embedding(e.mean.double(), e.variance.double()), e)
    same = []
    for layout in (lambda t: t, strided):
        torch.manual_seed(3)
        same.append(hib.match_probability(head, hib.Embedding(layout(e.mean), layout(e.variance)), e))
    assert torch.equal(same[0], same[1])


def test_huge_finite_values_are_named_as_huge_not_as_non_finite():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 2)), rng.normal(size=30)
    with pytest.raises(ValueError, match=r"`y` holds -2.2e\+300 at position 9: finite, but so large"):
        bayes.GaussianProcessRegressor(restarts=0).fit(x, y * 1e300)
    with pytest.raises(ValueError, match=r"`X` holds -1e\+308 at row 3, column 1: finite"):
        big = x.copy()
        big[3, 1] = -1e308
        bayes.GaussianProcessRegressor(restarts=0).fit(big, y)


# --- No silent empty result: ACS-FW refuses a pool it cannot weigh. ---


def test_acs_fw_refuses_a_pool_it_cannot_weigh_instead_of_returning_an_empty_batch():
    with pytest.raises(ValueError, match=r"every vector is zero"):
        active.acs_fw(np.zeros((50, 10)), batch_size=3)
    with pytest.raises(ValueError, match=r"so large that its square overflows"):
        active.acs_fw(np.random.default_rng(0).normal(size=(50, 10)) * 1e300, batch_size=5)
    with pytest.raises(ValueError, match=r"`gram`\[0, 0\] = -1 is negative"):
        active.acs_fw(gram=-np.eye(20), batch_size=3)
    # A well-posed pool still gives min(batch_size, N) distinct points.
    batch = active.acs_fw(np.random.default_rng(0).normal(size=(50, 10)), batch_size=3)
    assert len(batch.indices) == 3


# --- One command per folder: a folder of another kind is never overwritten. ---


def test_overwrite_refuses_a_folder_another_command_made(data_dir, tmp_path):
    """``hib.train(..., overwrite=True)`` into a folder hedge made for an agnostic sweep (its
    ``.hedge-owned`` marker, as ``hedge agnostic sweep`` writes it) is refused naming both kinds,
    and the sweep's files stay as they were."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    marker = '{"hedge": "0.1.0", "folder": true, "kind": "agnostic sweep", "command": "hedge agnostic sweep", "files": []}'
    (sweep / ".hedge-owned").write_text(marker)
    (sweep / "table.md").write_text("the sweep's table")
    with pytest.raises(ValueError, match=r"of kind 'agnostic sweep'.*of kind 'hib training run'"):
        hib.train(sweep, config={"steps": 1}, overwrite=True, progress=False)
    assert sorted(p.name for p in sweep.iterdir()) == [".hedge-owned", "table.md"]
    assert (sweep / "table.md").read_text() == "the sweep's table"
    assert (sweep / ".hedge-owned").read_text() == marker
