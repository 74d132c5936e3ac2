"""hedge's HNSW graph beside hnswlib, the field's standard, on the same points in one run.

    .venv/bin/python -m pip install hnswlib        # not a dependency of hedge: the peer
    .venv/bin/python python/benchmarks/ann.py      # -> results/scale/ann-vs-hnswlib.{json,md}

Points are synthetic embedding means shaped like a trained gallery: identities' centres drawn
from N(0, I), ten images of each around it (sd 0.1); queries are fresh images of random
identities. Both libraries get the same points, M = 16, efConstruction = efSearch = 200, k = 10,
and the same threads (2 by default). Each measurement runs in a fresh process (so that one
library's freed memory cannot flatter the other's resident-set growth), the two libraries
alternating; a query rate is the best of three passes over the queries. The table reports
medians over repeats and, because a shared machine's speed drifts, the ratios hedge ÷ hnswlib
taken pair by pair (repeat i of one against repeat i of the other), their median with the
smallest and largest. Recall@10 is measured against exact search (NumPy, float64) on the first
1,000 queries.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def synthetic(points: int, queries: int, dim: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    identities = max(points // 10, 1)
    centres = rng.standard_normal((identities, dim))
    gallery = centres[np.arange(points) % identities] + 0.1 * rng.standard_normal((points, dim))
    probe = centres[rng.integers(0, identities, queries)] + 0.1 * rng.standard_normal((queries, dim))
    return gallery.astype(np.float32), probe.astype(np.float32)


def exact_top10(gallery, probe):
    import numpy as np

    g = gallery.astype(np.float64)
    g2 = (g**2).sum(1)
    out = []
    for start in range(0, len(probe), 100):
        q = probe[start : start + 100].astype(np.float64)
        d2 = g2[None, :] - 2 * q @ g.T
        idx = np.argpartition(d2, 10, axis=1)[:, :10]
        out.extend(set(row) for row in idx)
    return out


def best_of(passes: int, run):
    """The shortest of `passes` timings of `run()` (a shared machine only ever slows a pass down),
    with the last pass's answer."""
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        answer = run()
        best = min(best, time.perf_counter() - start)
    return best, answer


def worker(library: str, points: int, queries: int, dim: int, threads: int, seed: int) -> dict:
    gallery, probe = synthetic(points, queries, dim, seed)
    # Imported before the clock and the memory count start (hedge imports torch).
    if library == "hnswlib":
        import hnswlib
    else:
        import hedge.ann
    before = rss_bytes()
    start = time.perf_counter()
    if library == "hnswlib":
        index = hnswlib.Index(space="l2", dim=dim)
        index.init_index(max_elements=points, ef_construction=200, M=16, random_seed=seed)
        index.set_num_threads(threads)
        index.add_items(gallery, num_threads=threads)
        index.set_ef(200)
        build = time.perf_counter() - start
        grown = rss_bytes() - before
        query, ids = best_of(3, lambda: index.knn_query(probe, k=10, num_threads=threads)[0])
        reported = None
        version = getattr(hnswlib, "__version__", "0.8.0")
    else:
        index = hedge.ann.HnswIndex.build(gallery, max_connections=16, ef_construction=200, ef_search=200)
        build = time.perf_counter() - start
        grown = rss_bytes() - before
        query, ids = best_of(3, lambda: index.search(probe, k=10)[0])
        reported = index.memory_bytes
        version = "hedge-ann (this commit)"
    truth = exact_top10(gallery, probe[:1000])
    recall = sum(len(set(row.tolist()) & t) for row, t in zip(ids[:1000], truth)) / (10 * len(truth))
    return {
        "library": library,
        "version": version,
        "points": points,
        "dim": dim,
        "queries": queries,
        "threads": threads,
        "seed": seed,
        "build_seconds": build,
        "inserts_per_second": points / build,
        "queries_per_second": queries / query,
        "recall_at_10": recall,
        "build_rss_bytes_per_point": grown / points,
        "reported_bytes_per_point": None if reported is None else reported / points,
    }


def median_rows(runs: list[dict]) -> list[dict]:
    keys = sorted({(r["points"], r["dim"], r["library"]) for r in runs})
    rows = []
    for points, dim, library in keys:
        mine = [r for r in runs if (r["points"], r["dim"], r["library"]) == (points, dim, library)]
        row = {"library": library, "points": points, "dim": dim, "repeats": len(mine)}
        for field in ("inserts_per_second", "queries_per_second", "recall_at_10", "build_rss_bytes_per_point"):
            row[field] = statistics.median(r[field] for r in mine)
        rows.append(row)
    return rows


def pair_ratios(runs: list[dict]) -> list[dict]:
    """hedge ÷ hnswlib for each repeat, then median, min and max per size."""
    out = []
    for points, dim in sorted({(r["points"], r["dim"]) for r in runs}):
        pairs = []
        for seed in sorted({r["seed"] for r in runs}):
            mine = [r for r in runs if (r["points"], r["dim"], r["seed"]) == (points, dim, seed)]
            a = next((r for r in mine if r["library"] == "hedge"), None)
            b = next((r for r in mine if r["library"] == "hnswlib"), None)
            if a and b:
                pairs.append(
                    {
                        field: a[field] / b[field]
                        for field in ("inserts_per_second", "queries_per_second", "build_rss_bytes_per_point")
                    }
                )
        if not pairs:
            continue
        row = {"points": points, "dim": dim, "pairs": len(pairs)}
        for field in pairs[0]:
            values = [p[field] for p in pairs]
            row[field] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        out.append(row)
    return out


def table(rows: list[dict], ratios: list[dict]) -> str:
    lines = [
        "| points | D | library | repeats | inserts/s | queries/s | recall@10 | build RSS bytes/point |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['points']:,} | {row['dim']} | {row['library']} | {row['repeats']} | {row['inserts_per_second']:,.0f} | "
            f"{row['queries_per_second']:,.0f} | {row['recall_at_10']:.4f} | {row['build_rss_bytes_per_point']:,.0f} |"
        )
    lines += [
        "",
        "hedge ÷ hnswlib, pair by pair (median, [min, max]):",
        "",
        "| points | D | pairs | inserts/s | queries/s | build RSS bytes/point |",
        "|---|---|---|---|---|---|",
    ]
    for r in ratios:
        cell = lambda f: f"{r[f]['median']:.2f}x [{r[f]['min']:.2f}, {r[f]['max']:.2f}]"  # noqa: E731
        lines.append(
            f"| {r['points']:,} | {r['dim']} | {r['pairs']} | {cell('inserts_per_second')} | "
            f"{cell('queries_per_second')} | {cell('build_rss_bytes_per_point')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, nargs="+", default=[100_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 16])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "results/scale/ann-vs-hnswlib")
    parser.add_argument("--worker", nargs=6, metavar=("LIB", "POINTS", "QUERIES", "DIM", "THREADS", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        lib, points, queries, dim, threads, seed = args.worker
        print(json.dumps(worker(lib, int(points), int(queries), int(dim), int(threads), int(seed))))
        return
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    runs = []
    for points in args.points:
        for dim in args.dims:
            for repeat in range(args.repeats):
                # Alternate which library goes first, so that neither always meets a cold machine.
                order = ["hedge", "hnswlib"] if repeat % 2 == 0 else ["hnswlib", "hedge"]
                for lib in order:
                    cmd = [sys.executable, __file__, "--worker", lib, str(points), str(args.queries), str(dim), str(args.threads), str(repeat)]
                    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
                    run = json.loads(out.strip().splitlines()[-1])
                    runs.append(run)
                    print(
                        f"{lib:8s} n={points:>9,} D={dim:>2} repeat {repeat}: {run['inserts_per_second']:>8,.0f} inserts/s "
                        f"{run['queries_per_second']:>8,.0f} queries/s recall {run['recall_at_10']:.4f} "
                        f"{run['build_rss_bytes_per_point']:>6,.0f} B/point",
                        flush=True,
                    )
    rows = median_rows(runs)
    ratios = pair_ratios(runs)
    result = {
        "command": " ".join([pathlib.Path(sys.executable).name, "python/benchmarks/ann.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "processor": platform.processor()},
        "settings": {"max_connections": 16, "ef_construction": 200, "ef_search": 200, "k": 10, "threads": args.threads},
        "medians": rows,
        "ratios": ratios,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(args.out.with_suffix(".json"))
    args.out.with_suffix(".md").write_text(table(rows, ratios))
    print(table(rows, ratios))


if __name__ == "__main__":
    main()
