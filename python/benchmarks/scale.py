"""Build and query throughput and memory per point of hedge.scale.ShardedIndex for 1, 2 and 4
shards on this machine (one Ray node), against the single in-process index on the same points.

    .venv/bin/python python/benchmarks/scale.py     # -> results/scale/shards.{json,md}

The points are the synthetic embedding means of python/benchmarks/ann.py. A build is
`write_shards` (each shard's graph built in turn, every core on it); a query rate is the best of
three passes of all queries through the fan-out (object store, one call per shard, the merge);
memory is what the shards' graphs hold and the actors' resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from ann import best_of, exact_top10, synthetic  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "results/scale/shards")
    args = parser.parse_args()

    import ray

    import hedge.ann
    import hedge.scale

    gallery, probe = synthetic(args.points, args.queries, args.dim, 0)
    truth = exact_top10(gallery, probe[:1000])
    recall = lambda ids: sum(len(set(r.tolist()) & t) for r, t in zip(ids[:1000], truth)) / (10 * len(truth))  # noqa: E731
    rows = []
    start = time.perf_counter()
    single = hedge.ann.HnswIndex.build(gallery)
    build = time.perf_counter() - start
    seconds, ids = best_of(3, lambda: single.search(probe, k=10)[0])
    rows.append({"shards": 0, "what": "one index in this process", "build_seconds": build,
                 "inserts_per_second": args.points / build, "queries_per_second": args.queries / seconds,
                 "recall_at_10": recall(ids), "graph_bytes_per_point": single.memory_bytes / args.points,
                 "resident_bytes_per_point": None})
    print(rows[-1], flush=True)
    del single
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    work = pathlib.Path(tempfile.mkdtemp(prefix="hedge-scale-bench-"))
    try:
        for shards in args.shards:
            folder = work / f"s{shards}"
            start = time.perf_counter()
            hedge.scale.write_shards(gallery, folder, shards=shards)
            build = time.perf_counter() - start
            index = hedge.scale.ShardedIndex(folder, num_cpus=0.01)
            seconds, ids = best_of(3, lambda: index.search(probe, k=10)[0])
            memory = index.memory()
            rows.append({"shards": shards, "what": f"{shards} shard actor(s)", "build_seconds": build,
                         "inserts_per_second": args.points / build, "queries_per_second": args.queries / seconds,
                         "recall_at_10": recall(ids),
                         "graph_bytes_per_point": sum(m[0] for m in memory) / args.points,
                         "resident_bytes_per_point": sum(m[1] for m in memory) / args.points})
            print(rows[-1], flush=True)
            index.shutdown()
    finally:
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "command": " ".join([pathlib.Path(sys.executable).name, "python/benchmarks/scale.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "points": args.points, "dim": args.dim, "queries": args.queries,
        "settings": {"max_connections": 16, "ef_construction": 200, "ef_search": 200, "k": 10},
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(args.out.with_suffix(".json"))
    lines = [
        f"{args.points:,} points of D = {args.dim}, {args.queries:,} queries, M = 16, ef = 200, k = 10:",
        "",
        "| index | build inserts/s | queries/s | recall@10 | graph bytes/point | actors' resident bytes/point |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        resident = "—" if r["resident_bytes_per_point"] is None else f"{r['resident_bytes_per_point']:,.0f}"
        lines.append(f"| {r['what']} | {r['inserts_per_second']:,.0f} | {r['queries_per_second']:,.0f} | "
                     f"{r['recall_at_10']:.4f} | {r['graph_bytes_per_point']:,.0f} | {resident} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
