"""Shared fixtures: the data root (HEDGE_DATA_DIR, as for the Rust tests) and real data readers."""

import gzip
import os
import pathlib

import numpy as np
import pytest


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


def gallery_index(tmp: pathlib.Path, mnist_test, per_class: int = 60, ef_search: int = 200):
    """A small HIB run (MoG-2, D = 2, 40 steps on six digits) and an identification index over
    ``per_class`` MNIST test images of each of the ten digits (validation and probe images are
    others of the same digits, :func:`gallery_images`): (run, index folder, probes as (images,
    labels)). ``ef_search`` at least the number of component means makes the graph search
    exhaustive, hence exact (the build leaves no point unreachable)."""
    from hedge import hib

    images, labels = mnist_test
    rows = np.concatenate([np.flatnonzero(labels == c)[900:920] for c in range(6)])
    run = hib.train(
        tmp / "run",
        data=((images[rows, 0] * 255).round().astype(np.uint8), labels[rows]),
        config={"model": "mog", "components": 2, "dim": 2, "steps": 40, "batch": "independent", "batch_pairs": 32},
        unseen_classes=2,
    )
    gallery, validation, probes = gallery_images(mnist_test, per_class)
    hib.Index.build(run, gallery[0], tmp / "index", gallery_labels=gallery[1], validation=validation[0],
                    validation_labels=validation[1], target_risk=0.5, candidates=20, top_k=3, ef_search=ef_search)
    return run, tmp / "index", probes


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
