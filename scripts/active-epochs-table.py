#!/usr/bin/env python3
"""The training-length table of results/active/epochs-sweep/README.md.

    python3 scripts/active-epochs-table.py SWEEP_DIR

SWEEP_DIR holds one `hedge active run` folder per (dataset, epochs), named `<dataset>-ep<E>`;
the 1,000-epoch column is read from seeds 0..7 of the 40-seed runs in results/active/<dataset>
(the same splits and initial labels). For each dataset and method: the final RMSE (each seed's
last round) as mean ± standard error over seeds 0..7, the paper's value beside it, and the
paired difference to the 1,000-epoch recipe. Standard library only.
"""
import json
import math
import os
import statistics
import sys

PAPER = {  # Pinsler et al. 2019, Table 1 (final RMSE, 40 seeds)
    "yacht": {"random": 1.272, "acs-fw": 1.031},
    "bostonHousing": {"random": 4.068, "acs-fw": 3.799},
    "energy": {"random": 0.959, "acs-fw": 0.855},
    "power-plant": {"random": 5.108, "acs-fw": 4.984},
}
SEEDS = range(8)
sweep = sys.argv[1]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results", "active")


def finals(folder):
    last = {}
    for line in open(os.path.join(folder, "rounds.jsonl")):
        r = json.loads(line)
        key = (r["method"], r["seed"])
        if r["seed"] in SEEDS and (key not in last or r["round"] > last[key]["round"]):
            last[key] = r
    return {key: r["test_rmse"] for key, r in last.items()}


def mean_se(values):
    return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))


for dataset, paper in PAPER.items():
    runs = {1000: finals(os.path.join(root, dataset))}
    for name in os.listdir(sweep):
        if name.startswith(dataset + "-ep") and os.path.exists(os.path.join(sweep, name, "rounds.jsonl")):
            runs[int(name.rsplit("-ep", 1)[1])] = finals(os.path.join(sweep, name))
    epochs = sorted(runs)
    print(f"\n**{dataset}** (seeds 0–7; paired difference to 1,000 epochs, negative = better)\n")
    print("| method | " + " | ".join(f"{e} epochs" for e in epochs) + " | paper |")
    print("|---|" + "---|" * (len(epochs) + 1))
    for method in ("random", "acs-fw"):
        cells = []
        for e in epochs:
            seeds = [s for s in SEEDS if (method, s) in runs[e] and (method, s) in runs[1000]]
            if len(seeds) < 2:
                cells.append("–")
                continue
            m, se = mean_se([runs[e][(method, s)] for s in seeds])
            cell = f"{m:.3f} ± {se:.3f}"
            if e != 1000:
                d, dse = mean_se([runs[e][(method, s)] - runs[1000][(method, s)] for s in seeds])
                cell += f" ({d:+.3f} ± {dse:.3f})"
            if len(seeds) < len(SEEDS):
                cell += f" [{len(seeds)} seeds]"
            cells.append(cell)
        print(f"| {method} | " + " | ".join(cells) + f" | {paper[method]} |")
