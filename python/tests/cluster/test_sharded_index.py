"""hedge.scale.ShardedIndex on a local three-node Ray cluster: the same neighbours as one
machine's index, an actor killed mid-search, a damaged shard file.

These tests run only inside the private network namespace that test_scale.py creates (only
``lo`` up, so no node can pick or reach another address); collected anywhere else they skip.
(The cluster fixture lives here, not in a conftest.py: a second conftest module would shadow
python/tests/conftest.py, which other tests import by name.)
"""

import os
import shutil
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import hedge.scale
from hedge.ann import HnswIndex

pytestmark = pytest.mark.skipif(
    os.environ.get("HEDGE_RAY_CLUSTER") != "1",
    reason="runs inside test_scale.py's private network namespace (HEDGE_RAY_CLUSTER=1)",
)


@pytest.fixture(scope="module")
def cluster():
    import ray
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
    c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        for _ in range(2):
            c.add_node(**node)
        ray.init(address=c.address, log_to_driver=False)
        alive = [n for n in ray.nodes() if n["Alive"]]
        assert len(alive) == 3, alive
        assert {n["NodeManagerAddress"] for n in alive} == {"127.0.0.1"}
        # Nothing listens beyond loopback.
        listening = subprocess.run(["ss", "-Htln"], capture_output=True, text=True, check=True).stdout
        local = [line.split()[3] for line in listening.splitlines()]
        outside = [a for a in local if not a.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:"))]
        assert not outside, f"listening beyond loopback: {outside}"
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


def clustered(n: int, q: int, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n // 10, dim))
    points = centres[np.arange(n) % len(centres)] + 0.1 * rng.standard_normal((n, dim))
    queries = centres[rng.integers(0, len(centres), q)] + 0.1 * rng.standard_normal((q, dim))
    return points.astype(np.float32), queries.astype(np.float32)


def exact(points, queries, k):
    d2 = (queries.astype(np.float64) ** 2).sum(1)[:, None] - 2 * queries.astype(np.float64) @ points.T.astype(np.float64)
    d2 += (points.astype(np.float64) ** 2).sum(1)[None, :]
    return np.argsort(d2, axis=1, kind="stable")[:, :k]


def recall(found, truth):
    return np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, truth)])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    points, queries = clustered(20_000, 500, 8, 3)
    folder = tmp_path_factory.mktemp("scale") / "shards"
    manifest = hedge.scale.write_shards(points, folder, shards=4)
    assert [s.points for s in manifest.shard_infos] == [5000] * 4
    return points, queries, folder


def test_the_sharded_index_finds_what_one_machine_finds(cluster, data):
    import ray

    points, queries, folder = data
    index = hedge.scale.ShardedIndex(folder)
    try:
        # The shards live on more than one node, and no shard's process imported torch.
        assert len({node for _, node in index.locations()}) >= 2
        assert index.imports_torch() == [False] * len(index.pids())
        ids, dist = index.search(queries, k=10)
        single_ids, single_dist = HnswIndex.build(points).search(queries, k=10)
        truth = exact(points, queries, 10)
        assert recall(ids, truth) >= 0.999 and recall(single_ids, truth) >= 0.999
        # Where both found the exact ten, they report the same ids and the same distances.
        same = (np.sort(ids, 1) == np.sort(truth, 1)).all(1) & (np.sort(single_ids, 1) == np.sort(truth, 1)).all(1)
        assert same.mean() > 0.99
        np.testing.assert_array_equal(ids[same], single_ids[same])
        np.testing.assert_allclose(dist[same], single_dist[same], rtol=1e-6)
        by_numpy = np.linalg.norm(points[ids] - queries[:, None, :], axis=-1)
        np.testing.assert_allclose(dist, by_numpy, rtol=1e-5, atol=1e-6)
        with pytest.raises(ValueError, match="queries.*3 columns"):
            index.search(np.zeros((2, 3), np.float32))
    finally:
        index.shutdown()
    assert ray.is_initialized()


def test_an_actor_killed_mid_search_is_restarted_and_the_search_retried(cluster, data):
    points, queries, folder = data
    many = np.repeat(queries, 200, axis=0)  # 100,000 queries: a search long enough to interrupt
    index = hedge.scale.ShardedIndex(folder, max_restarts=2)
    try:
        expected = index.search(queries, k=10)
        before = index.pids()
        answer = {}
        search = threading.Thread(target=lambda: answer.setdefault("r", index.search(many, k=10)))
        search.start()
        time.sleep(0.3)
        os.kill(before[1], signal.SIGKILL)
        search.join(timeout=300)
        assert not search.is_alive()
        ids, dist = answer["r"]
        np.testing.assert_array_equal(ids[::200], expected[0])
        np.testing.assert_array_equal(dist[::200], expected[1])
        after = index.pids()
        assert after[1] != before[1] and after[0] == before[0]
    finally:
        index.shutdown()


def test_a_shard_that_cannot_come_back_fails_the_search_by_name(cluster, data):
    _, queries, folder = data
    index = hedge.scale.ShardedIndex(folder, max_restarts=0)
    try:
        os.kill(index.pids()[2], signal.SIGKILL)
        with pytest.raises(hedge.scale.ShardUnavailable, match="shard-00002.*no partial answer"):
            index.search(queries, k=10)
    finally:
        index.shutdown()


def test_a_damaged_shard_file_is_refused_by_its_checksum(cluster, data, tmp_path):
    _, _, folder = data
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    shard = copy / "shard-00001.ann.safetensors"
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    shard.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="shard-00001.ann.safetensors.*SHA-256.*damaged"):
        hedge.scale.ShardedIndex(copy)


@pytest.fixture(scope="module")
def identification(tmp_path_factory, mnist_test):
    from conftest import gallery_index

    tmp = tmp_path_factory.mktemp("identification")
    # Exhaustive graph searches (ef_search above the number of component means): the answers
    # of the whole gallery and of its shards agree where every search is exact.
    run, index_dir, probes = gallery_index(tmp, mnist_test, ef_search=4096)
    hedge.scale.shard_index(index_dir, tmp / "shards", shards=3)
    return index_dir, tmp / "shards", probes


def test_sharded_identification_answers_as_one_machine_and_survives_a_killed_shard(cluster, identification):
    from hedge import hib

    index_dir, folder, probes = identification
    want, want_summary = hib.Index(index_dir).search(*probes)
    sharded = hedge.scale.ShardedIdentifier(folder, max_restarts=2)
    try:
        assert len({node for _, node in sharded.locations()}) >= 2, "SPREAD puts the shards on several nodes"
        got, summary = sharded.search(*probes)
        assert got == want, "same identities, probabilities, gallery items and abstentions"
        assert 0 < sum(r.abstained for r in got) < len(got)
        assert (summary.accuracy, summary.coverage) == (want_summary.accuracy, want_summary.coverage)
        # A shard's actor dies: Ray restarts it from its folder and the search is retried.
        before = sharded.pids()
        os.kill(before[1], signal.SIGKILL)
        again, _ = sharded.search(*probes)
        assert again == want
        after = sharded.pids()
        assert after[1] != before[1] and after[0] == before[0]
        # A per-call target risk answers as the single index does for it.
        loose_want, _ = hib.Index(index_dir).search(*probes, target_risk=0.9)
        loose, _ = sharded.search(*probes, target_risk=0.9)
        assert loose == loose_want and sharded.search(*probes)[0] == want
    finally:
        sharded.shutdown()


def test_a_damaged_gallery_shard_is_refused_by_its_checksum(cluster, identification, tmp_path):
    _, folder, _ = identification
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    shard = copy / "shard-00002" / "gallery.safetensors"
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    shard.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="shard-00002/gallery.safetensors.*SHA-256.*damaged"):
        hedge.scale.ShardedIdentifier(copy)


def test_ray_data_embeds_a_gallery_into_shards_that_answer_as_one_machine(cluster, identification, mnist_test,
                                                                        tmp_path):
    import ray
    from conftest import assert_same_answers, gallery_images

    from hedge import hib

    index_dir, _, probes = identification
    (gallery, labels), validation, _ = gallery_images(mnist_test)
    # Five blocks and batches of 128: no boundary falls where a shard's does.
    dataset = ray.data.from_items([{"image": g, "label": int(l)} for g, l in zip(gallery, labels)],
                                  override_num_blocks=5)
    out = tmp_path / "embedded"
    # The target risk the fixture chose for its index (conftest.gallery_index).
    target_risk = hib.Index(index_dir).manifest["calibration"]["target_risk"]
    settings = dict(shards=3, validation=validation[0], validation_labels=validation[1], target_risk=target_risk,
                    candidates=20, top_k=3, ef_search=4096, batch_size=128, concurrency=2, num_cpus=0.5)
    sealed = hedge.scale.embed_to_shards(index_dir.parent / "run", dataset, out, **settings)
    assert [(s["first_item"], s["items"]) for s in sealed["shards"]] == [(0, 200), (200, 200), (400, 200)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["embedded"], "no temporary folder left behind"
    assert not dataset.context.execution_options.preserve_order, "the caller's dataset is left as it was"
    want, want_summary = hib.Index(index_dir).search(*probes)
    sharded = hedge.scale.ShardedIdentifier(out, max_restarts=1)
    try:
        got, summary = sharded.search(*probes)
    finally:
        sharded.shutdown()
    assert_same_answers(got, want)
    assert (summary.accuracy, summary.coverage) == (want_summary.accuracy, want_summary.coverage)
    with pytest.raises(ValueError, match="already exists"):
        hedge.scale.embed_to_shards(index_dir.parent / "run", dataset, out, **settings)
    with pytest.raises(ValueError, match="needs 'image' and 'label'"):
        hedge.scale.embed_to_shards(index_dir.parent / "run", dataset.rename_columns({"label": "digit"}),
                                    tmp_path / "other", **settings)


def test_sharded_acs_fw_and_lcmd_pick_what_one_machine_picks_and_survive_a_killed_shard(cluster, tmp_path):
    from hedge import active

    rng = np.random.default_rng(5)
    pool = 0.5 + rng.standard_normal((12_000, 10))
    hedge.scale.write_pool_shards(pool, tmp_path / "pool", shards=3)
    want = active.acs_fw(pool, batch_size=25)
    sharded = hedge.scale.ShardedPool(tmp_path / "pool", max_restarts=2)
    try:
        got = sharded.acs_fw(25)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
        # A shard's actor dies between batches: restarted from its file, it answers the same.
        before = sharded.pids()
        os.kill(before[2], signal.SIGKILL)
        again = sharded.acs_fw(25)
        for a, b in zip(again, want):
            np.testing.assert_array_equal(a, b)
        assert sharded.pids()[2] != before[2]
        # LCMD on the same actors (the rows as features): the whole pool's picks, and again
        # after another actor was killed.
        labelled = rng.standard_normal((6, 10))
        lcmd_want = active.lcmd(labelled, pool, 20)
        np.testing.assert_array_equal(sharded.lcmd(labelled, 20), lcmd_want)
        os.kill(sharded.pids()[0], signal.SIGKILL)
        np.testing.assert_array_equal(sharded.lcmd(labelled, 20), lcmd_want)
    finally:
        sharded.shutdown()
