"""A Ray cluster of three nodes on this machine, every byte on loopback.

These tests run only inside the private network namespace that test_scale.py creates (only
``lo`` up, so no node can pick or reach another address); collected anywhere else they skip.
"""

import os
import subprocess

import pytest

INSIDE = os.environ.get("HEDGE_RAY_CLUSTER") == "1"


def pytest_collection_modifyitems(config, items):
    if INSIDE:
        return
    skip = pytest.mark.skip(reason="runs inside test_scale.py's private network namespace (HEDGE_RAY_CLUSTER=1)")
    for item in items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
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
