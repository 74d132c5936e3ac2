#!/usr/bin/env python3
"""The seed table of results/hib/open-set/levers/README.md, read from each finished run's last watch.

    python3 scripts/levers-table.py [RUN...]       (default: every run folder)

Seed 0 of RUN is results/hib/open-set/levers/RUN, seed S is RUN-seedS. For each run with a `done`
marker: steps, training minutes, the validation numbers (AP clean / AP corrupt / KNN clean /
KNN corrupt) and their mean (the score levers are chosen by), test_unseen and test_seen; then the
mean over seeds where there are several. Standard library only.
"""
import json
import os
import re
import sys

BASE = os.path.join(os.path.dirname(__file__), "..", "results", "hib", "open-set", "levers")
KEYS = ("ap_clean", "ap_corrupt", "knn_clean", "knn_corrupt")


def all_runs():
    """Every run name with a seed-0 folder, in the ladder's order (its names start a-, b-, ...)."""
    return sorted(d for d in os.listdir(BASE)
                  if os.path.isdir(os.path.join(BASE, d)) and not re.search(r"-seed[0-9]+$", d))


def last_watch(folder):
    path = os.path.join(BASE, folder)
    if not os.path.exists(os.path.join(path, "done")):
        return None
    with open(os.path.join(path, "monitor.jsonl")) as f:
        record = [json.loads(line) for line in f if line.strip()][-1]
    with open(os.path.join(path, "state.json")) as f:
        minutes = json.load(f)["seconds"] / 60
    sets = {name: [q[k] for k in KEYS] for name, q in record["sets"].items()}
    return {"step": record["step"], "minutes": minutes, **sets}


def fmt(values):
    return " / ".join(f"{v:.3f}" for v in values)


def mean(rows, key):
    return [sum(r[key][i] for r in rows) / len(rows) for i in range(4)]


def main(runs):
    print("| run | seed | steps | min | validation | val. score | test_unseen | test_seen |")
    print("|---|---|---|---|---|---|---|---|")
    for run in runs:
        rows = []
        for seed in range(10):
            r = last_watch(run if seed == 0 else f"{run}-seed{seed}")
            if r is None:
                continue
            rows.append(r)
            score = sum(r["validation"]) / 4
            print(f"| {run} | {seed} | {r['step']} | {r['minutes']:.1f} | {fmt(r['validation'])} | "
                  f"{score:.3f} | {fmt(r['test_unseen'])} | {fmt(r['test_seen'])} |")
        if len(rows) > 1:
            v = mean(rows, "validation")
            print(f"| **{run}** | mean of {len(rows)} | | | {fmt(v)} | **{sum(v) / 4:.3f}** | "
                  f"{fmt(mean(rows, 'test_unseen'))} | {fmt(mean(rows, 'test_seen'))} |")


if __name__ == "__main__":
    main(sys.argv[1:] or all_runs())
