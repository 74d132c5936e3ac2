"""Benchmark blocks (`<!-- bench:NAME:begin -->`):

- `fuzz`: the parsers' fuzz campaign (results/fuzz/campaign-600s.json, `hedge bench fuzz`).
"""
from .common import load, table


def fuzz_block():
    rows = []
    for t in load("results", "fuzz", "campaign-600s.json"):
        rows.append([t["target"], t["executions"], f"{t['seconds']:.0f}", f"{t['executions'] / t['seconds']:.0f}",
                     t["accepted"], t["panic_count"]])
    return table(["target", "executions", "seconds", "executions/s", "accepted", "panics"], rows)


BLOCKS = {"fuzz": fuzz_block}
