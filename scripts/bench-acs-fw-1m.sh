#!/usr/bin/env bash
# ACS-FW on a pool of 10^6 synthetic projections (J = 10, batches of 10): the pool held in memory
# and streamed from disk, each case in a fresh process (resident memory would otherwise carry an
# earlier case's allocations), into results/active/bench-acs-fw-1m.json. README.md's sentence on
# it is written from that file by `hedge report`. Run it on an otherwise idle machine.
#
#   scripts/bench-acs-fw-1m.sh        REPEATS (default 10), HEDGE, OUT
set -euo pipefail
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
repeats=${REPEATS:-10}
out=${OUT:-results/active/bench-acs-fw-1m.json}
python=${PYTHON:-python3}
case_command() { echo "$hedge bench acs-fw --pool 1000000 --projections 10 --batch 10 --repeats $repeats --storage $1 --json"; }
in_memory=$($(case_command in-memory))
streamed=$($(case_command streamed))
machine=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
IN_MEMORY="$in_memory" STREAMED="$streamed" MACHINE="$machine, $(nproc) cores" OUT="$out" \
IN_MEMORY_COMMAND="$(case_command in-memory)" STREAMED_COMMAND="$(case_command streamed)" "$python" - <<'PY'
import datetime, json, os
record = {
    "what": "ACS-FW batches of 10 on 10^6 synthetic projections (J = 10), the pool in memory and streamed",
    "date": datetime.date.today().isoformat(),
    "machine": os.environ["MACHINE"],
    "in_memory_command": os.environ["IN_MEMORY_COMMAND"],
    "streamed_command": os.environ["STREAMED_COMMAND"],
    "in_memory": json.loads(os.environ["IN_MEMORY"]),
    "streamed": json.loads(os.environ["STREAMED"]),
}
out = os.environ["OUT"]
with open(out + ".tmp", "w") as f:
    json.dump(record, f, indent=1)
    f.write("\n")
os.replace(out + ".tmp", out)
print(f"bench-acs-fw-1m: wrote {out}")
PY
