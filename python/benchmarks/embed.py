"""Embedding a gallery into identification shards: Ray Data workers (hedge.scale.embed_to_shards)
against one process (hedge.hib.Index.build), on the same images, on this machine.

    .venv/bin/python python/benchmarks/embed.py     # -> results/scale/embed.{json,md}

The images are real two-digit MNIST images (two MNIST test digits side by side, 28 x 56, the
identity the two digits), embedded with a trained N = 2 run (default: the paper-schedule MoG-1
run in results/hib/paper-schedule-gpu/). Rows:

* the embedding alone: ``Run.embed`` in this process (libtorch's threads on every core), and
  Ray Data's ``map_batches`` with 1 and 2 :class:`hedge.scale.GalleryEmbedder` workers of one
  CPU each (the run loaded once per worker; images/s from the first batch handed to Ray to the
  materialised result);
* a whole gallery index: ``Index.build`` (embed, one graph, the abstention rule on validation
  images) against ``embed_to_shards`` into 4 shards (embed, a Ray task per shard's graph, the
  rule chosen once over the shards).

Ray runs as one local node (``ray.init``) with as many CPUs as the machine has.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import platform
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def read_idx(path: pathlib.Path) -> np.ndarray:
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def two_digit_images(data: pathlib.Path, count: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` 28 x 56 images: MNIST test digit i beside digit i + offset (mod 10,000)."""
    images = read_idx(data / "mnist" / "t10k-images-idx3-ubyte.gz")
    labels = read_idx(data / "mnist" / "t10k-labels-idx1-ubyte.gz").astype(np.int64)
    left = np.arange(count) % len(images)
    right = (left + offset) % len(images)
    return np.concatenate([images[left], images[right]], axis=2), 10 * labels[left] + labels[right]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=pathlib.Path, default=ROOT / "results/hib/paper-schedule-gpu/gaussian-seed0")
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--validation", type=int, default=1_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "results/scale/embed")
    args = parser.parse_args()

    import ray

    from hedge import hib, scale

    data = pathlib.Path(os.environ.get("HEDGE_DATA_DIR", "data"))
    gallery, labels = two_digit_images(data, args.images, offset=1)
    validation, validation_labels = two_digit_images(data, args.validation, offset=7)
    # A validation identity needs two images at least (hedge refuses a class of one).
    values, counts = np.unique(validation_labels, return_counts=True)
    keep = np.isin(validation_labels, values[counts >= 2])
    validation, validation_labels = validation[keep], validation_labels[keep]
    run = hib.Run(args.run)
    settings = dict(target_risk=0.05, candidates=100, top_k=5)
    rows = []

    def record(row: dict) -> None:
        rows.append(row)
        print(row, flush=True)

    start = time.perf_counter()
    run.embed(gallery)
    seconds = time.perf_counter() - start
    record({"what": "Run.embed in this process", "stage": "embed", "workers": 0, "seconds": seconds,
            "images_per_second": args.images / seconds})
    with tempfile.TemporaryDirectory(prefix="hedge-embed-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        start = time.perf_counter()
        hib.Index.build(run, gallery, tmp / "index", gallery_labels=labels, validation=validation,
                        validation_labels=validation_labels, **settings)
        seconds = time.perf_counter() - start
        record({"what": "Index.build in this process", "stage": "index", "workers": 0, "seconds": seconds,
                "images_per_second": args.images / seconds})
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
        try:
            for workers in args.workers:
                dataset = ray.data.from_items([{"image": g, "label": int(l)} for g, l in zip(gallery, labels)],
                                              override_num_blocks=40).materialize()
                search = json.loads((tmp / "index" / "index.json").read_text())["search"]
                start = time.perf_counter()
                dataset.map_batches(
                    scale.GalleryEmbedder,
                    fn_constructor_kwargs={"run": str(args.run), "samples": search["eta_samples"], "seed": search["seed"]},
                    batch_size=500, compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=1, batch_format="numpy",
                ).materialize()
                seconds = time.perf_counter() - start
                record({"what": f"Ray Data, {workers} worker(s)", "stage": "embed", "workers": workers,
                        "seconds": seconds, "images_per_second": args.images / seconds})
                start = time.perf_counter()
                scale.embed_to_shards(args.run, dataset, tmp / f"shards-{workers}", shards=args.shards,
                                      validation=validation, validation_labels=validation_labels,
                                      concurrency=workers, num_cpus=1, **settings)
                seconds = time.perf_counter() - start
                record({"what": f"embed_to_shards, {workers} worker(s), {args.shards} shards", "stage": "index",
                        "workers": workers, "seconds": seconds, "images_per_second": args.images / seconds})
        finally:
            ray.shutdown()

    result = {
        "images": args.images,
        "image_shape": [1, 28, 56],
        "validation_images": int(len(validation)),
        "run": str(args.run.resolve().relative_to(ROOT)) if args.run.resolve().is_relative_to(ROOT) else str(args.run),
        "shards": args.shards,
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "command": " ".join([".venv/bin/python", "python/benchmarks/embed.py", *sys.argv[1:]]),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_json = args.out.with_suffix(".json.tmp")
    tmp_json.write_text(json.dumps(result, indent=2) + "\n")
    tmp_json.replace(args.out.with_suffix(".json"))
    lines = [
        f"{args.images:,} two-digit MNIST images (28 x 56) embedded with `{result['run']}`; "
        f"indexes with {len(validation):,} validation images, {args.shards} shards:",
        "",
        "| what | stage | seconds | images/s |",
        "|---|---|---|---|",
        *[f"| {r['what']} | {r['stage']} | {r['seconds']:.1f} | {r['images_per_second']:,.0f} |" for r in rows],
    ]
    tmp_md = args.out.with_suffix(".md.tmp")
    tmp_md.write_text("\n".join(lines) + "\n")
    tmp_md.replace(args.out.with_suffix(".md"))


if __name__ == "__main__":
    main()
