#!/usr/bin/env python3
"""One target's campaign statistics, as JSON, from libFuzzer's log (scripts/fuzz-campaign.sh).

usage: fuzz-stats.py TARGET LOG SECONDS RC CORPUS_BEFORE CORPUS_AFTER CRASHES
"""
import json
import re
import sys

target, log, seconds, rc, before, after, crashes = sys.argv[1:8]
text = open(log, errors="replace").read()


def stat(name):
    m = re.findall(r"stat::%s:\s+(\d+)" % name, text)
    return int(m[-1]) if m else None


# The last status line before the final statistics: "#N DONE cov: C ft: F corp: U/S ...".
status = re.findall(r"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)\s+cov: (\d+) ft: (\d+) corp: (\d+)/", text)
last = status[-1] if status else None
json.dump(
    {
        "target": target,
        "seconds": float(seconds),
        "exit_code": int(rc),
        "executions": stat("number_of_executed_units"),
        "executions_per_second": stat("average_exec_per_sec"),
        "new_units_added": stat("new_units_added"),
        "peak_rss_mb": stat("peak_rss_mb"),
        "coverage_edges": int(last[1]) if last else None,
        "features": int(last[2]) if last else None,
        "corpus_before_cmin": int(before),
        "corpus_committed": int(after),
        "crashes": int(crashes),
    },
    sys.stdout,
    indent=2,
)
print()
