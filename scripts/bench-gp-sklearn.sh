#!/usr/bin/env bash
# hedge's exact GP against scikit-learn's GaussianProcessRegressor on the same kin8nm rows (split 0,
# the first ROWS training rows, inputs standardised, ARD-RBF + noise, L-BFGS without restarts):
# seconds per objective evaluation and per fit, and the optimum each reached, into
# results/bayes/bench-gp-sklearn.json. README.md's sentence on it is written from that file by
# `hedge report`. Run it on an otherwise idle machine (pause other jobs with kill -STOP).
#
#   scripts/bench-gp-sklearn.sh        ROWS (default 2000,5000), HEDGE, PYTHON, OUT
set -euo pipefail
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
python=${PYTHON:-.venv/bin/python}
rows=${ROWS:-2000,5000}
out=${OUT:-results/bayes/bench-gp-sklearn.json}
hedge_command=("$hedge" bench bayes --json --fit --exact-rows "$rows" --inducing)
sklearn_command=("$python" benches/sklearn_gp.py ${rows//,/ })
hedge_json=$("${hedge_command[@]}")
sklearn_json=$("${sklearn_command[@]}")
machine=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
HEDGE_JSON="$hedge_json" SKLEARN_JSON="$sklearn_json" MACHINE="$machine, $(nproc) cores" \
HEDGE_COMMAND="${hedge_command[*]}" SKLEARN_COMMAND="${sklearn_command[*]}" OUT="$out" "$python" - <<'PY'
import datetime, json, os, sklearn
record = {
    "what": "hedge's exact GP against scikit-learn's GaussianProcessRegressor on the same kin8nm rows",
    "date": datetime.date.today().isoformat(),
    "machine": os.environ["MACHINE"],
    "scikit_learn": sklearn.__version__,
    "hedge_command": os.environ["HEDGE_COMMAND"],
    "sklearn_command": os.environ["SKLEARN_COMMAND"],
    "hedge": json.loads(os.environ["HEDGE_JSON"]),
    "sklearn": [json.loads(line) for line in os.environ["SKLEARN_JSON"].splitlines() if line.strip()],
}
out = os.environ["OUT"]
with open(out + ".tmp", "w") as f:
    json.dump(record, f, indent=1)
    f.write("\n")
os.replace(out + ".tmp", out)
print(f"bench-gp-sklearn: wrote {out}")
PY
