"""What calling hedge from Python costs: each call timed from Python and the same Rust call timed
in Rust (hooks of the extension, same process, same libtorch, same inputs).

    .venv/bin/python python/benchmarks/overhead.py [--out results/python] [--rounds 41] [--instructions]

Writes OUT/overhead.json (the measurements) and OUT/overhead.md (the table the README includes).
Embedding: a float32 Gaussian HIB network (the paper's architecture, D = 2) trained for 20 steps
on MNIST test digits into a temporary folder -- speed does not depend on training length -- embeds
the 10,000 MNIST test images from HEDGE_DATA_DIR.
"""

import argparse
import gzip
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import hedge
from hedge import hib
from hedge._native import _hedge

ROOT = pathlib.Path(__file__).resolve().parents[2]


def mnist_test():
    root = pathlib.Path(os.environ.get("HEDGE_DATA_DIR", "data")) / "mnist"
    with gzip.open(root / "t10k-images-idx3-ubyte.gz", "rb") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(root / "t10k-labels-idx1-ubyte.gz", "rb") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def per_call(fn, calls):
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def calls_for(fn, seconds=0.05):
    """How many calls of `fn` take about `seconds`: every timed block is about as long, whatever
    the call's size, so a round interleaves Python and Rust closely."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(20, int(seconds / once))


def paired(python, rust, rounds):
    """Medians over `rounds` alternating rounds: Python's time, Rust's, and their difference
    (alternating, so a slow moment of the machine falls on both)."""
    py, rs = [], []
    for _ in range(rounds):
        py.append(python())
        rs.append(rust())
    return statistics.median(py), statistics.median(rs), statistics.median(p - r for p, r in zip(py, rs))


def call_rows(rounds):
    rows = []
    head = hib.MatchHead()
    with torch.no_grad():
        for batch in (1, 256):
            log_p, log_not_p = torch.full((batch,), -0.5), torch.full((batch,), -1.0)
            is_match = torch.ones(batch, dtype=torch.bool)
            calls = calls_for(lambda: hib.soft_contrastive(log_p, log_not_p, is_match))
            timed = paired(
                lambda: per_call(lambda: hib.soft_contrastive(log_p, log_not_p, is_match), calls),
                lambda: _hedge.bench_soft_contrastive(batch, calls),
                rounds,
            )
            rows.append((f"soft_contrastive, B = {batch}", timed))
        for batch in (1, 256):
            mean = torch.zeros(batch, 1, 2)
            e = hib.Embedding(mean, torch.ones_like(mean))
            calls = calls_for(lambda: hib.match_probability(head, e, e, samples=8))
            timed = paired(
                lambda: per_call(lambda: hib.match_probability(head, e, e, samples=8), calls),
                lambda: _hedge.bench_match_probability(batch, 2, 8, calls),
                rounds,
            )
            rows.append((f"match_probability, B = {batch}, D = 2, K = 8", timed))
    return [{"call": name, "python_us": p * 1e6, "rust_us": r * 1e6, "overhead_us": d * 1e6} for name, (p, r, d) in rows]


def embed_row(repeats, tmp):
    images, labels = mnist_test()
    config = {"model": "gaussian", "dim": 2, "steps": 20, "conv_precision": "f32", "batch": "independent"}
    run = hib.train(tmp / "run", data=(images[:2000], labels[:2000]), config=config, progress=False)
    images = images.astype(np.float32) / 255.0
    run.embed(images[:100])  # loads the network once, as a session would

    def from_python():
        start = time.perf_counter()
        run.embed(images)
        return time.perf_counter() - start

    python, rust, overhead = paired(from_python, lambda: _hedge.bench_embed(run._run, images, 8, 1000), repeats)
    n = len(images)
    return {"call": f"Run.embed, {n} images [1, 28, 28], float32, K = 8 for eta", "python_images_per_s": n / python,
            "rust_images_per_s": n / rust, "python_s": python, "rust_s": rust, "overhead_ms": overhead * 1e3}


# The calls counted by --instructions: the Python call, and the same call in Rust's loop.
COUNTED = {
    "python": lambda head, e, n: [hib.match_probability(head, e, e, samples=8) for _ in range(n)],
    "rust": lambda head, e, n: _hedge.bench_match_probability(1, 2, 8, n),
}
COUNTED_CALLS = 2000


def count_loop(side, n):
    """The loop callgrind counts: `n` calls of `side` at B = 1 (after the same setup for any n)."""
    torch.set_num_threads(1)
    head = hib.MatchHead()
    mean = torch.zeros(1, 1, 2)
    e = hib.Embedding(mean, torch.ones_like(mean))
    with torch.no_grad():
        COUNTED[side](head, e, n)


def instruction_rows():
    """Instructions per call of match_probability at B = 1, from Python and in Rust, counted by
    callgrind: the same whole process with 0 and with COUNTED_CALLS calls, the difference
    divided by the calls. Counts do not wander with the machine's load as times do. Under
    valgrind libtorch takes its AVX2 kernels (valgrind has no AVX-512)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("overhead: --instructions needs valgrind (Debian's valgrind package)")
    jobs = {}
    with tempfile.TemporaryDirectory(prefix="hedge-callgrind-") as tmp:
        for side in COUNTED:
            for n in (0, COUNTED_CALLS):
                command = [valgrind, "--tool=callgrind", f"--callgrind-out-file={tmp}/{side}.{n}.out",
                           sys.executable, __file__, "--count", side, str(n)]
                jobs[side, n] = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        totals = {}
        for key, job in jobs.items():
            _, err = job.communicate()
            found = re.search(r"Collected : (\d+)", err)
            if job.returncode != 0 or found is None:
                sys.exit(f"overhead: callgrind of {key} failed:\n{err[-2000:]}")
            totals[key] = int(found.group(1))
    per_call = {side: (totals[side, COUNTED_CALLS] - totals[side, 0]) / COUNTED_CALLS for side in COUNTED}
    return {"call": "match_probability, B = 1, D = 2, K = 8", "calls": COUNTED_CALLS,
            "python_instructions": per_call["python"], "rust_instructions": per_call["rust"]}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--count":
        count_loop(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "python"))
    parser.add_argument("--rounds", type=int, default=41, help="alternating rounds of each small call (blocks of about 50 ms)")
    parser.add_argument("--repeats", type=int, default=5, help="alternating rounds of the embedding")
    parser.add_argument("--instructions", action="store_true",
                        help="also count match_probability's instructions at B = 1 under callgrind (minutes)")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    counted = instruction_rows() if args.instructions else None
    calls = call_rows(args.rounds)
    with tempfile.TemporaryDirectory(prefix="hedge-bench-") as tmp:
        embed = embed_row(args.repeats, pathlib.Path(tmp))
    result = {
        "command": " ".join([pathlib.Path(sys.executable).name, *sys.argv]),
        "torch": torch.__version__,
        "hedge_built_for": hedge.BUILT_FOR_TORCH,
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "calls": calls,
        "embed": embed,
        "instructions": counted,
    }
    (out / "overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"Python call against the same Rust call, one process, torch {torch.__version__}, "
        f"{result['threads']} threads (`{result['command']}`).",
        "",
        "Medians of alternating rounds; the overhead is the median of the rounds' differences, and its share"
        " of the Rust call's time.",
        "",
        "| call | from Python (µs) | in Rust (µs) | overhead (µs) | overhead / Rust |",
        "|---|---|---|---|---|",
    ]
    for r in calls:
        share = 100 * r["overhead_us"] / r["rust_us"]
        lines.append(
            f"| {r['call']} | {r['python_us']:.1f} | {r['rust_us']:.1f} | {r['overhead_us']:.1f} | {share:.0f} % |"
        )
    if counted is not None:
        share = 100 * (counted["python_instructions"] / counted["rust_instructions"] - 1)
        lines += [
            "",
            f"Instructions per call, counted by callgrind over {counted['calls']} calls (one thread; libtorch's AVX2"
            " kernels): the count does not wander with the machine's load as the times above do.",
            "",
            "| call | from Python (instructions) | in Rust (instructions) | overhead / Rust |",
            "|---|---|---|---|",
            f"| {counted['call']} | {counted['python_instructions']:.0f} | {counted['rust_instructions']:.0f}"
            f" | {share:.1f} % |",
        ]
    lines += [
        "",
        "| embedding | from Python (images/s) | in Rust (images/s) | overhead (ms per call) |",
        "|---|---|---|---|",
        f"| {embed['call']} | {embed['python_images_per_s']:.0f} | {embed['rust_images_per_s']:.0f} | {embed['overhead_ms']:.1f} |",
    ]
    (out / "overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
