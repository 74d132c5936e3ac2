"""Shared fixtures: the data root (HEDGE_DATA_DIR, as for the Rust tests) and real data readers."""

import gzip
import os
import pathlib

import numpy as np
import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "conv_precision: the test's model runs hedge's convolutions, whose precision path (bf16 or f32) "
        "the CPU chooses; scripts/test.sh runs these tests again with HEDGE_CONV_PRECISION forcing the "
        "path this CPU does not take by default",
    )
    config.addinivalue_line(
        "markers",
        "slow_when_emulated: a conv_precision test that takes minutes where bf16 is emulated in software "
        "(about ten times slower): it trains more than a few dozen steps, or it goes through the same "
        "Python calls as the tests left in that pass (test_hib_run.py, test_notebook.py) at a larger "
        "scale (the example scripts) or with another loss after the same convolutions; left out of "
        "that pass",
    )


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    root = pathlib.Path(os.environ.get("HEDGE_DATA_DIR", "data"))
    if not root.is_dir():
        pytest.fail(
            f"data directory '{root}' does not exist: set HEDGE_DATA_DIR to the folder holding mnist/ and uci/"
        )
    return root


def read_idx(path: pathlib.Path) -> np.ndarray:
    """An IDX file (MNIST's format), gzipped: big-endian dims after a magic number."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@pytest.fixture(scope="session")
def mnist_test(data_dir):
    """MNIST's 10,000 test images as float32 [N, 1, 28, 28] in [0, 1] and their labels."""
    images = read_idx(data_dir / "mnist" / "t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    labels = read_idx(data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz").astype(np.int64)
    return images[:, None, :, :], labels


def read_uci(data_dir: pathlib.Path, name: str):
    """A UCI regression set as hedge reads it: data.txt, the features and target columns from
    index_features.txt / index_target.txt (Gal & Ghahramani's layout)."""
    folder = data_dir / "uci" / name / "data"
    data = np.loadtxt(folder / "data.txt")
    features = np.loadtxt(folder / "index_features.txt", dtype=int).ravel()
    target = int(np.loadtxt(folder / "index_target.txt", dtype=int).ravel()[0])
    return data[:, features], data[:, target]


def gallery_images(mnist_test, per_class: int = 60):
    """MNIST test images as uint8 ``(images [N, 28, 28], labels)``: a gallery of ``per_class``
    images of each of the ten digits, then 10 validation and 8 probe images of each, all
    distinct: ``(gallery, validation, probes)``."""
    images, labels = mnist_test

    def digits(classes, count, skip=0):
        rows = np.concatenate([np.flatnonzero(labels == c)[skip : skip + count] for c in classes])
        return (images[rows, 0] * 255).round().astype(np.uint8), labels[rows]

    return digits(range(10), per_class), digits(range(10), 10, skip=per_class), digits(range(10), 8, skip=per_class + 10)


def gallery_run(out: pathlib.Path, mnist_test, seed: int = 0, **train_options):
    """The gallery fixture's model: MoG-2, D = 2, 40 steps of 32 independent pairs on 20 MNIST test
    images of each of the digits 0-5 (2 of them held out as unseen), trained into ``out``."""
    from hedge import hib

    images, labels = mnist_test
    rows = np.concatenate([np.flatnonzero(labels == c)[900:920] for c in range(6)])
    return hib.train(
        out,
        data=((images[rows, 0] * 255).round().astype(np.uint8), labels[rows]),
        config={"model": "mog", "components": 2, "dim": 2, "steps": 40, "batch": "independent", "batch_pairs": 32,
                "seed": seed},
        unseen_classes=2,
        **train_options,
    )


def gallery_index(tmp: pathlib.Path, mnist_test, per_class: int = 60, ef_search: int = 200):
    """A small HIB run (MoG-2, D = 2, 40 steps on six digits) and an identification index over
    ``per_class`` MNIST test images of each of the ten digits (validation and probe images are
    others of the same digits, :func:`gallery_images`): (run, index folder, probes as (images,
    labels)). ``ef_search`` at least the number of component means makes the graph search
    exhaustive, hence exact (the build leaves no point unreachable).

    The index's abstention rule both answers and abstains on the probes, established here rather
    than hoped for: what a 40-step model's eta ranks depends on the precision path its
    convolutions took (on a CPU with native bf16 a fixed target risk of 0.5 once abstained on all
    80 probes). The target risk is chosen from the validation probes' risk curve so that its eta
    threshold splits the probes' own etas nearest to half (:func:`splitting_target_risk`); the
    index stores it (``manifest["calibration"]["target_risk"]``) for the tests that rebuild the
    rule elsewhere."""
    from hedge import hib

    run = gallery_run(tmp / "run", mnist_test)
    gallery, validation, probes = gallery_images(mnist_test, per_class)

    def build(target_risk: float, overwrite: bool):
        return hib.Index.build(run, gallery[0], tmp / "index", gallery_labels=gallery[1], validation=validation[0],
                               validation_labels=validation[1], target_risk=target_risk, candidates=20, top_k=3,
                               ef_search=ef_search, overwrite=overwrite)

    # A target risk of 1 answers every probe: the eta of each.
    answer_all = build(1.0, False)
    answered, _ = answer_all.search(*probes)
    target_risk = splitting_target_risk(answer_all.manifest["calibration"], [r.eta for r in answered])
    index = build(target_risk, True)
    results, _ = index.search(*probes)
    abstained = sum(r.abstained for r in results)
    assert 0 < abstained < len(results), (
        f"fixture: the rule at target risk {target_risk} abstains on {abstained} of {len(results)} probes; "
        "the tests need both answers and abstentions"
    )
    return run, tmp / "index", probes


def splitting_target_risk(calibration: dict, probe_etas) -> float:
    """A target risk whose rule, chosen on the validation probes of ``calibration`` (an index
    manifest's), abstains on some of ``probe_etas`` and answers the others, nearest to half.

    The rule (``Calibration::rechoose``) answers the k validation probes of lowest eta for the
    largest k whose risk (errors among them / k) is at most the target, cutting only between
    distinct etas; so the target risk_k picks exactly k where risk_k is below every later cut's
    risk, and its threshold is the k-th lowest eta. Of splits equally near half, the larger k
    (more coverage). Fails, naming the curve, when no such k splits the probes."""
    uncertainty, correct = calibration["uncertainty"], calibration["correct"]
    n = len(uncertainty)
    cuts, errors = [], 0
    for k in range(1, n + 1):
        errors += not correct[k - 1]
        if k == n or uncertainty[k] > uncertainty[k - 1]:
            cuts.append((k, errors / k))
    reachable, lowest_later = [], float("inf")
    for k, risk in reversed(cuts):
        if risk < lowest_later:
            reachable.append((k, risk))
            lowest_later = risk
    etas = np.asarray(probe_etas)
    splits = []
    for k, risk in reachable:
        abstaining = int((etas > uncertainty[k - 1]).sum())
        if 0 < abstaining < len(etas):
            splits.append((abs(abstaining - len(etas) / 2), -k, risk))
    if not splits:
        pytest.fail(f"fixture: no target risk splits the probes; reachable (k, risk) {reachable}, "
                    f"probe etas {np.quantile(etas, [0, 0.5, 1])} (min, median, max)")
    return min(splits)[2]


def assert_same_answers(got, want, tolerance: float = 1e-6):
    """Two lists of ``hib.ProbeResult`` give the same answers: the same probes, identities, gallery
    items, abstentions and predictions in the same order, and every probability, η and margin
    within ``tolerance``. Not bit-for-bit: a gallery embedded in batches of other sizes rounds
    differently on some CPUs (AVX-512 convolution kernels: 3e-8 apart, measured), where a wrong
    shard offset or item moves an answer by far more."""
    assert [r.probe for r in got] == [r.probe for r in want]
    for g, w in zip(got, want):
        where = f"probe {g.probe}"
        assert (g.abstained, g.prediction, g.label) == (w.abstained, w.prediction, w.label), where
        assert [(m.identity, m.gallery_item) for m in g.matches] == [(m.identity, m.gallery_item) for m in w.matches], where
        assert np.allclose([g.eta, g.margin, *(m.probability for m in g.matches)],
                           [w.eta, w.margin, *(m.probability for m in w.matches)], rtol=0, atol=tolerance), where
