"""hedge.ann: the HNSW graph against exact search by NumPy, its file and its pickling."""

import pickle

import numpy as np
import pytest

from hedge.ann import HnswIndex


def exact(points: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    d2 = ((queries[:, None, :].astype(np.float64) - points[None, :, :]) ** 2).sum(-1)
    ids = np.argsort(d2, axis=1, kind="stable")[:, :k]
    return ids, np.sqrt(np.take_along_axis(d2, ids, 1))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((400, 8))
    points = (centres[np.arange(4000) % 400] + 0.1 * rng.standard_normal((4000, 8))).astype(np.float32)
    queries = (centres[rng.integers(0, 400, 300)] + 0.1 * rng.standard_normal((300, 8))).astype(np.float32)
    return points, queries


def test_the_neighbours_and_distances_are_numpys(data):
    points, queries = data
    index = HnswIndex.build(points)
    assert (len(index), index.dim) == (4000, 8)
    ids, dist = index.search(queries, k=10)
    truth, truth_dist = exact(points, queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, truth)])
    assert recall >= 0.99, recall
    # Each reported distance is the Euclidean distance to the reported point, nearest first.
    by_numpy = np.linalg.norm(points[ids] - queries[:, None, :], axis=-1)
    np.testing.assert_allclose(dist, by_numpy, rtol=1e-5, atol=1e-6)
    assert (np.diff(dist, axis=1) >= 0).all()
    np.testing.assert_allclose(dist[:, 0], truth_dist[:, 0], rtol=1e-5, atol=1e-6)
    # The graph holds about 4·d + 4·(2M + 1) bytes per point, not kilobytes.
    assert index.memory_bytes / len(index) < 250


def test_file_pickle_and_bytes_give_the_same_answers(data, tmp_path):
    points, queries = data
    index = HnswIndex.build(points, max_connections=8, ef_construction=64, ef_search=64)
    ids, dist = index.search(queries, k=5)
    path = tmp_path / "g.ann.safetensors"
    index.save(path)
    for other in (HnswIndex.load(path), pickle.loads(pickle.dumps(index)), HnswIndex.from_bytes(index.to_bytes())):
        assert other.settings == {"max_connections": 8, "ef_construction": 64, "ef_search": 64}
        ids2, dist2 = other.search(queries, k=5)
        np.testing.assert_array_equal(ids, ids2)
        np.testing.assert_array_equal(dist, dist2)
    # The file is plain safetensors: NumPy reads the points back.
    from safetensors.numpy import load_file

    np.testing.assert_array_equal(load_file(str(path))["points"], points)


def test_bad_input_is_refused_by_name(data, tmp_path):
    points, queries = data
    index = HnswIndex.build(points[:50])
    ids, dist = index.search(queries[:2], k=60)
    assert (ids[:, 50:] == -1).all() and np.isinf(dist[:, 50:]).all() and (ids[:, :50] >= 0).all()
    with pytest.raises(ValueError, match="queries.*3 columns.*dimension 8"):
        index.search(np.zeros((1, 3), np.float32))
    with pytest.raises(ValueError, match="points.*non-finite.*row 1"):
        HnswIndex.build(np.array([[0.0, 1.0], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match="max_connections"):
        HnswIndex.build(points, max_connections=1)
    with pytest.raises(ValueError, match="`k`"):
        index.search(queries, k=0)
    path = tmp_path / "g.ann.safetensors"
    index.save(path)
    damaged = bytearray(path.read_bytes())
    damaged[-4:] = b"\xff\xff\xff\xff"  # the last level byte(s) or link: above the cap or out of range
    path.write_bytes(bytes(damaged[: len(damaged) // 2]))
    with pytest.raises(ValueError, match="g.ann.safetensors.*not an intact hedge HNSW graph"):
        HnswIndex.load(path)
