"""Benchmark blocks (`<!-- bench:NAME:begin -->`):

- `fuzz`: the parsers' fuzz campaign (results/fuzz/campaign-600s.json, `hedge bench fuzz`).
- `libfuzzer`: the coverage-guided campaign (results/fuzz/<target>.json,
  `scripts/fuzz-campaign.sh`).
- `scale-capacity`: what 10^9 embedding means would take, from the 10^6-point measurement of
  hedge's HNSW graph (results/scale/ann-vs-hnswlib-1m.json, `python/benchmarks/ann.py`).
- `malloc-tunables` (README.md): hedge's glibc malloc settings against glibc's defaults
  (results/bench/malloc-tunables.json).
"""
import math
import glob
import json
import os

from .common import load, path, table


def fuzz_block():
    rows = []
    for t in load("results", "fuzz", "campaign-600s.json"):
        rows.append([t["target"], t["executions"], f"{t['seconds']:.0f}", f"{t['executions'] / t['seconds']:.0f}",
                     t["accepted"], t["panic_count"]])
    return table(["target", "executions", "seconds", "executions/s", "accepted", "panics"], rows)


def libfuzzer_block():
    rows = []
    for found in sorted(glob.glob(path("results", "fuzz", "*.json"))):
        if os.path.basename(found).startswith("campaign-"):
            continue
        with open(found) as f:
            t = json.load(f)
        rows.append([t["target"], t["executions"], f"{t['seconds']:.0f}", t["executions_per_second"],
                     t["coverage_edges"], t["features"], t["corpus_committed"], t["crashes"]])
    return table(["target", "executions", "seconds", "executions/s", "coverage (edges)", "features",
                  "corpus kept", "crashes"], rows)


def scale_capacity_block():
    bench = load("results", "scale", "ann-vs-hnswlib-1m.json")
    row = next(r for r in bench["medians"] if r["library"] == "hedge")
    threads = bench["settings"]["threads"]
    total = 10**9
    per_point = row["build_rss_bytes_per_point"]
    rows = []
    for node_gib in (64, 128, 512):
        # Three quarters of a node's memory for the graph: the rest for the process, the payload
        # of the candidates a query fetches, and the operating system.
        usable = 0.75 * node_gib * 2**30
        shards = math.ceil(total * per_point / usable)
        points = total / shards
        build_hours = points / row["inserts_per_second"] / 3600
        rows.append([
            f"{node_gib} GiB",
            f"{shards:,}",
            f"{points / 1e6:,.0f} M",
            f"{build_hours:,.1f} h",
            f"{threads / row['queries_per_second'] * 1e3:.2f} ms",
            f"{row['queries_per_second']:,.0f}",
        ])
    head = (f"10^9 means of D = {row['dim']} at the measured {per_point:,.0f} bytes per point "
            f"({total * per_point / 2**30:,.0f} GiB of graph and points in all), M = "
            f"{bench['settings']['max_connections']}, measured on {row['points']:,} points with {threads} threads:\n\n")
    return head + table(["node memory", "shards", "points per shard", "build per shard (2 cores, rate at 10^6)",
                         "latency per shard query (2 cores, at 10^6)", "cluster queries/s, one replica per shard"],
                        rows)


BLOCKS = {"fuzz": fuzz_block, "libfuzzer": libfuzzer_block, "scale-capacity": scale_capacity_block}


def malloc_tunables_block():
    """hedge's glibc malloc settings against glibc's defaults (results/bench/malloc-tunables.json)."""
    b = load("results", "bench", "malloc-tunables.json")
    a, d = b["median"]["a"], b["median"]["b"]
    f = b["page_faults_3_digit_d3_point_40_steps"]
    return (f"Measured as whole processes (`hib train`, N = 2, D = 2, the tables' MoG-1 recipe, 60 steps, 2 threads, "
            f"{b['runs']} runs each in turn against the build before the change; `results/bench/malloc-tunables.json`): "
            f"median wall {a['wall_s']:.1f} s against {d['wall_s']:.1f} s ({b['ratio_a_over_b_median']['wall']:.2f}x), "
            f"kernel time {a['sys_s']:.1f} s against {d['sys_s']:.1f} s, peak memory {a['peak_mib']:.0f} MiB against "
            f"{d['peak_mib']:.0f} MiB. At N = 3, D = 3 (point, 40 steps): {f['a']['minor_faults']:,} page faults "
            f"against {f['b']['minor_faults']:,}.")
BLOCKS["malloc-tunables"] = malloc_tunables_block
