"""Benchmark blocks (`<!-- bench:NAME:begin -->`):

- `fuzz`: the parsers' fuzz campaign (results/fuzz/campaign-600s.json, `hedge bench fuzz`).
- `libfuzzer`: the coverage-guided campaign (results/fuzz/<target>.json,
  `scripts/fuzz-campaign.sh`).
"""
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


BLOCKS = {"fuzz": fuzz_block, "libfuzzer": libfuzzer_block}
