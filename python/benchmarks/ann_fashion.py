"""hedge's HNSW graph beside hnswlib and faiss at 784 dimensions: ann-benchmarks' Fashion-MNIST set.

    .venv/bin/python -m pip install hnswlib faiss-cpu    # the peers; not dependencies of hedge
    HEDGE_DATA_DIR=../shared/data .venv/bin/python python/benchmarks/ann_fashion.py
    # -> results/scale/ann-fashion-mnist.{json,png}; `hedge report` makes its table

The set is ann-benchmarks' ``fashion-mnist-784-euclidean``, rebuilt from the Fashion-MNIST files
under ``HEDGE_DATA_DIR`` (``fashion-mnist/``, see its ``SOURCE.md``): the 60,000 training images
are the base, the first 2,000 test images the queries, each image its 784 pixel values (0-255) as
float32, distance Euclidean. Every library gets M = 16, efConstruction = 200 and the same
threads (2 by default), and answers k = 10 at each ef of ``--efs``; recall@10 is against exact
search (NumPy, float64), a query rate the best of three passes over the queries.

Each build runs in a fresh process (so one library's freed memory cannot flatter another's
resident-set growth), the libraries alternating their order from repeat to repeat. The table
gives medians over repeats; for hedge against each peer, the ratios taken pair by pair (repeat i
against repeat i) of the build rate, of the query rate at the smallest ef whose recall reaches
``--recall`` (interpolated on each library's own curve) and of the memory, with their median,
smallest and largest. The figure draws recall@10 against queries/s, one curve per library and
repeat.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

# The timing and memory helpers of the synthetic-means benchmark beside this one.
from ann import best_of, exact_top10, rss_bytes  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIBRARIES = ("hedge", "hnswlib", "faiss")


def read_idx(path: pathlib.Path):
    import numpy as np

    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_mnist(queries: int):
    """(base [60000, 784], queries [queries, 784]) float32 pixel values, as ann-benchmarks has them."""
    data = os.environ.get("HEDGE_DATA_DIR", "data")
    folder = pathlib.Path(data) / "fashion-mnist"
    if not folder.is_dir():
        sys.exit(f"ann_fashion: no folder {folder}; set HEDGE_DATA_DIR to the folder that holds fashion-mnist/")
    base = read_idx(folder / "train-images-idx3-ubyte.gz").reshape(60_000, 784).astype("float32")
    test = read_idx(folder / "t10k-images-idx3-ubyte.gz").reshape(10_000, 784).astype("float32")
    return base, test[:queries]


def worker(library: str, queries: int, efs: list[int], threads: int, seed: int) -> dict:
    import numpy as np

    base, probe = fashion_mnist(queries)
    truth = exact_top10(base, probe)
    n, dim = base.shape
    # Imported before the clock and the memory count start (hedge imports torch).
    if library == "hnswlib":
        import hnswlib

        version = hnswlib.__version__ if hasattr(hnswlib, "__version__") else "0.8.0"
    elif library == "faiss":
        import faiss

        faiss.omp_set_num_threads(threads)
        version = faiss.__version__
    else:
        import hedge.ann

        described = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
        version = f"hedge-ann at {described.stdout.strip() or 'an unknown commit'}"
    before = rss_bytes()
    start = time.perf_counter()
    if library == "hnswlib":
        index = hnswlib.Index(space="l2", dim=dim)
        index.init_index(max_elements=n, ef_construction=200, M=16, random_seed=seed)
        index.set_num_threads(threads)
        index.add_items(base, num_threads=threads)
    elif library == "faiss":
        index = faiss.IndexHNSWFlat(dim, 16)
        index.hnsw.efConstruction = 200
        index.add(base)
    else:
        index = hedge.ann.HnswIndex.build(base, max_connections=16, ef_construction=200, ef_search=200)
    build = time.perf_counter() - start
    grown = rss_bytes() - before

    def answer(ef: int):
        if library == "hnswlib":
            index.set_ef(ef)
            return index.knn_query(probe, k=10, num_threads=threads)[0]
        if library == "faiss":
            index.hnsw.efSearch = ef
            return index.search(probe, 10)[1]
        return index.search(probe, k=10, ef=ef)[0]

    curve = []
    for ef in efs:
        seconds, ids = best_of(3, lambda: answer(ef))
        recall = sum(len(set(row.tolist()) & t) for row, t in zip(ids, truth)) / (10 * len(truth))
        curve.append({"ef": ef, "queries_per_second": len(probe) / seconds, "recall_at_10": recall})
    return {
        "library": library,
        "version": version,
        "points": n,
        "dim": dim,
        "queries": len(probe),
        "threads": threads,
        "seed": seed,
        "build_seconds": build,
        "inserts_per_second": n / build,
        "build_rss_bytes": grown,
        "curve": curve,
    }


def rate_at_recall(curve: list[dict], target: float) -> float | None:
    """Queries/s where the curve (ef ascending) first reaches `target` recall, interpolated
    linearly between the two efs around it; None when no ef reaches it."""
    previous = None
    for point in curve:
        if point["recall_at_10"] >= target:
            if previous is None or previous["recall_at_10"] >= target:
                return point["queries_per_second"]
            t = (target - previous["recall_at_10"]) / (point["recall_at_10"] - previous["recall_at_10"])
            return previous["queries_per_second"] + t * (point["queries_per_second"] - previous["queries_per_second"])
        previous = point
    return None


def summarise(runs: list[dict], target: float) -> tuple[list[dict], list[dict]]:
    rows = []
    for library in LIBRARIES:
        mine = [r for r in runs if r["library"] == library]
        if not mine:
            continue
        rates = [rate_at_recall(r["curve"], target) for r in mine]
        rows.append(
            {
                "library": library,
                "version": mine[0]["version"],
                "repeats": len(mine),
                "build_seconds": statistics.median(r["build_seconds"] for r in mine),
                "inserts_per_second": statistics.median(r["inserts_per_second"] for r in mine),
                "build_rss_bytes": statistics.median(r["build_rss_bytes"] for r in mine),
                "queries_per_second_at_recall": None if None in rates else statistics.median(rates),
                "curve": [
                    {
                        "ef": point["ef"],
                        "queries_per_second": statistics.median(r["curve"][i]["queries_per_second"] for r in mine),
                        "recall_at_10": statistics.median(r["curve"][i]["recall_at_10"] for r in mine),
                    }
                    for i, point in enumerate(mine[0]["curve"])
                ],
            }
        )
    ratios = []
    for peer in LIBRARIES[1:]:
        pairs = []
        for seed in sorted({r["seed"] for r in runs}):
            a = next((r for r in runs if r["library"] == "hedge" and r["seed"] == seed), None)
            b = next((r for r in runs if r["library"] == peer and r["seed"] == seed), None)
            if not (a and b):
                continue
            qa, qb = rate_at_recall(a["curve"], target), rate_at_recall(b["curve"], target)
            pairs.append(
                {
                    "inserts_per_second": a["inserts_per_second"] / b["inserts_per_second"],
                    "queries_per_second_at_recall": None if qa is None or qb is None else qa / qb,
                    "build_rss_bytes": a["build_rss_bytes"] / max(b["build_rss_bytes"], 1),
                }
            )
        if not pairs:
            continue
        row = {"peer": peer, "pairs": len(pairs)}
        for field in pairs[0]:
            values = [p[field] for p in pairs if p[field] is not None]
            row[field] = (
                {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else None
            )
        ratios.append(row)
    return rows, ratios


def table(rows: list[dict], ratios: list[dict], target: float) -> str:
    lines = [
        f"| library | repeats | build s | inserts/s | build RSS MiB | queries/s at recall@10 {target} |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        rate = row["queries_per_second_at_recall"]
        lines.append(
            f"| {row['library']} {row['version']} | {row['repeats']} | {row['build_seconds']:.1f} | "
            f"{row['inserts_per_second']:,.0f} | {row['build_rss_bytes'] / 2**20:,.0f} | "
            f"{'-' if rate is None else f'{rate:,.0f}'} |"
        )
    lines += [
        "",
        "recall@10 and queries/s at each ef (medians):",
        "",
        "| ef | " + " | ".join(row["library"] for row in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    for i, point in enumerate(rows[0]["curve"]):
        cells = " | ".join(
            f"{row['curve'][i]['recall_at_10']:.4f} at {row['curve'][i]['queries_per_second']:,.0f}/s" for row in rows
        )
        lines.append(f"| {point['ef']} | {cells} |")
    lines += [
        "",
        "hedge ÷ peer, pair by pair (median, [min, max]):",
        "",
        f"| peer | pairs | inserts/s | queries/s at recall@10 {target} | build RSS |",
        "|---|---|---|---|---|",
    ]
    for r in ratios:
        def cell(field):
            v = r[field]
            return "-" if v is None else f"{v['median']:.2f}x [{v['min']:.2f}, {v['max']:.2f}]"

        lines.append(
            f"| {r['peer']} | {r['pairs']} | {cell('inserts_per_second')} | {cell('queries_per_second_at_recall')} | "
            f"{cell('build_rss_bytes')} |"
        )
    return "\n".join(lines) + "\n"


def figure(runs: list[dict], path: pathlib.Path, target: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"hedge": "tab:blue", "hnswlib": "tab:orange", "faiss": "tab:green"}
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for library in LIBRARIES:
        for i, run in enumerate(r for r in runs if r["library"] == library):
            ax.plot(
                [p["recall_at_10"] for p in run["curve"]],
                [p["queries_per_second"] for p in run["curve"]],
                "o-",
                color=colours[library],
                alpha=0.8,
                markersize=3,
                label=library if i == 0 else None,
            )
    ax.axvline(target, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("recall@10 (against exact search)")
    ax.set_ylabel("queries / s")
    ax.set_yscale("log")
    ax.set_title("Fashion-MNIST, 784-D: 60,000 base, 2,000 queries, M 16, efC 200")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--efs", type=int, nargs="+", default=[10, 16, 24, 32, 48, 64, 96, 128, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--recall", type=float, default=0.99, help="the recall at which query rates are compared")
    parser.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=LIBRARIES)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "results/scale/ann-fashion-mnist")
    parser.add_argument("--worker", nargs=4, metavar=("LIB", "QUERIES", "THREADS", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    efs = sorted(args.efs)
    if args.worker:
        lib, queries, threads, seed = args.worker
        print(json.dumps(worker(lib, int(queries), efs, int(threads), int(seed))))
        return
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    runs = []
    for repeat in range(args.repeats):
        # Rotate which library goes first, so that none always meets a cold (or a warm) machine.
        order = args.libraries[repeat % len(args.libraries) :] + args.libraries[: repeat % len(args.libraries)]
        for lib in order:
            cmd = [sys.executable, __file__, "--worker", lib, str(args.queries), str(args.threads), str(repeat),
                   "--efs", *map(str, efs)]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            run = json.loads(out.strip().splitlines()[-1])
            runs.append(run)
            rate = rate_at_recall(run["curve"], args.recall)
            print(
                f"{lib:8s} repeat {repeat}: build {run['build_seconds']:.1f} s, {run['build_rss_bytes'] / 2**20:,.0f} MiB; "
                f"{'-' if rate is None else f'{rate:,.0f}'} queries/s at recall {args.recall}; "
                + ", ".join(f"ef {p['ef']} {p['recall_at_10']:.3f}/{p['queries_per_second']:,.0f}" for p in run["curve"]),
                flush=True,
            )
    rows, ratios = summarise(runs, args.recall)
    result = {
        "command": " ".join([pathlib.Path(sys.executable).name, "python/benchmarks/ann_fashion.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "processor": platform.processor()},
        "settings": {"max_connections": 16, "ef_construction": 200, "k": 10, "threads": args.threads,
                     "efs": efs, "recall": args.recall, "queries": args.queries},
        "medians": rows,
        "ratios": ratios,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(args.out.with_suffix(".json"))
    figure(runs, args.out.with_suffix(".png"), args.recall)
    print(table(rows, ratios, args.recall))


if __name__ == "__main__":
    main()
