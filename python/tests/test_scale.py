"""hedge.scale without a cluster (shard files, merging), and the cluster tests in cluster/ run
on a three-node Ray cluster inside a private network namespace that this test creates: only
``lo`` exists there, so every node is 127.0.0.1 and nothing leaves the machine."""

import os
import pathlib
import subprocess
import sys
import uuid

import numpy as np
import pytest

import hedge.scale

HERE = pathlib.Path(__file__).parent


def test_shards_cover_the_rows_and_overwrite_only_a_shard_set(tmp_path):
    rng = np.random.default_rng(0)
    points = rng.standard_normal((1003, 4)).astype(np.float32)
    out = tmp_path / "s"
    m = hedge.scale.write_shards(points, out, shards=3, max_connections=8, ef_construction=32)
    assert [(s.first_id, s.points) for s in m.shard_infos] == [(0, 334), (334, 335), (669, 334)]
    assert hedge.scale.read_manifest(out) == m
    with pytest.raises(ValueError, match="already exists.*overwrite=True"):
        hedge.scale.write_shards(points, out, shards=2)
    hedge.scale.write_shards(points, out, shards=2, overwrite=True)
    assert len(hedge.scale.read_manifest(out).shards) == 2 and not (out / "shard-00002.ann.safetensors").exists()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="notes.txt.*not part of the shard set"):
        hedge.scale.write_shards(points, out, shards=2, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"
    user = tmp_path / "user"
    user.mkdir()
    with pytest.raises(ValueError, match="not a shard set"):
        hedge.scale.write_shards(points, user, shards=2, overwrite=True)
    with pytest.raises(ValueError, match="`shards`"):
        hedge.scale.write_shards(points, tmp_path / "t", shards=0)


def test_merging_keeps_the_nearest_by_distance_then_id():
    a = (np.array([[4, 1]]), np.array([[0.5, 2.0]], np.float32))
    b = (np.array([[9, 7]]), np.array([[0.5, 1.0]], np.float32))
    ids, dist = hedge.scale.merge([a, b], 3)
    assert ids.tolist() == [[4, 9, 7]] and dist.tolist() == [[0.5, 0.5, 1.0]]
    ids, dist = hedge.scale.merge([a], 3)
    assert ids.tolist() == [[4, 1, -1]] and np.isinf(dist[0, 2])


def test_the_cluster_suite_passes_on_a_private_three_node_cluster():
    pytest.importorskip("ray", reason="pip install ray (scripts/setup-python.sh installs it)")
    if os.geteuid() != 0:
        pytest.fail("the Ray cluster tests need root to create a network namespace (ip netns add)")
    ns = f"hedge-ray-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        env = dict(os.environ, HEDGE_RAY_CLUSTER="1", RAY_USAGE_STATS_ENABLED="0")
        cmd = ["ip", "netns", "exec", ns, sys.executable, "-m", "pytest", str(HERE / "cluster"), "-q", "-p", "no:cacheprovider"]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
        print(run.stdout[-6000:], run.stderr[-3000:])
        assert run.returncode == 0, run.stdout[-3000:]
        assert " passed" in run.stdout and "skipped" not in run.stdout
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=False)
