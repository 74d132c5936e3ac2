"""Learning-curve summary of an `hedge active run` folder, as the bmdal benchmark scores methods:
per seed the mean of log RMSE over a grid of label counts (each seed read at its latest round at
or below each grid point), then per method the geometric-mean RMSE and the paired difference to
Random (percent, with the standard error of the mean log difference). Standard library only.

Usage: python3 scripts/curve-log-rmse.py RUN_DIR FIRST LAST STEP
"""
import collections
import json
import math
import statistics
import sys

folder, first, last, step = sys.argv[1], *map(int, sys.argv[2:5])
curves = collections.defaultdict(list)
for line in open(f"{folder}/rounds.jsonl"):
    r = json.loads(line)
    curves[(r["method"], r["seed"])].append((r["labels"], r["test_rmse"]))
grid = range(first, last + 1, step)


def at(curve, labels):
    return [rmse for n, rmse in sorted(curve) if n <= labels][-1]


score = {key: statistics.mean(math.log(at(c, g)) for g in grid) for key, c in curves.items()}
methods = sorted({m for m, _ in curves}, key=lambda m: ["random", "maxent", "acs-fw", "lcmd"].index(m))
seeds = sorted({s for _, s in curves})
print(f"| method | geometric-mean RMSE, {first}–{last} labels | vs Random | seeds better than Random |")
print("|---|---|---|---|")
for m in methods:
    diff = [score[(m, s)] - score[("random", s)] for s in seeds]
    gm = math.exp(statistics.mean(score[(m, s)] for s in seeds))
    if m == "random":
        print(f"| {m} | {gm:.3f} | – | – |")
    else:
        se = statistics.stdev(diff) / math.sqrt(len(diff))
        print(f"| {m} | {gm:.3f} | {100 * (math.exp(statistics.mean(diff)) - 1):+.1f} % ± {100 * se:.1f} | {sum(d < 0 for d in diff)}/{len(diff)} |")
