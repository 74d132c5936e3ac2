#!/usr/bin/env python3
"""Paired comparison of one lever folder against the 40-seed baseline in results/active/<dataset>.

    python3 scripts/active-paired.py LEVER_DIR DATASET

For each method in LEVER_DIR: mean ± se of the final RMSE over its seeds, the baseline's over
the same seeds, and the paired difference (lever − baseline; negative = the lever is better)
with the number of seeds on which the lever is better.
"""
import json, math, os, statistics, sys

def finals(folder):
    last = {}
    for line in open(os.path.join(folder, "rounds.jsonl")):
        r = json.loads(line)
        key = (r["method"], r["seed"])
        if key not in last or r["round"] > last[key]["round"]:
            last[key] = r
    return {k: r["test_rmse"] for k, r in last.items()}

lever, dataset = sys.argv[1], sys.argv[2]
base = finals(os.path.join("results", "active", dataset))
new = finals(lever)
for method in sorted({m for m, _ in new}):
    seeds = sorted(s for m, s in new if m == method and (m, s) in base)
    if len(seeds) < 2:
        continue
    a = [new[(method, s)] for s in seeds]
    b = [base[(method, s)] for s in seeds]
    d = [x - y for x, y in zip(a, b)]
    se = lambda v: statistics.stdev(v) / math.sqrt(len(v))
    print(f"{dataset} {method}: lever {statistics.mean(a):.3f} ± {se(a):.3f}, baseline {statistics.mean(b):.3f} ± {se(b):.3f}, "
          f"difference {statistics.mean(d):+.3f} ± {se(d):.3f} (lever better on {sum(x < 0 for x in d)}/{len(d)}), seeds {len(seeds)}")
