#!/usr/bin/env bash
# How short the main job's schedule can be (issue 79, item 4: the fastest recipe that keeps the
# verification AP on clean test pairs at or above .946, the 2,000 steps of 128 independent pairs
# the main job trained before): scripts/quickstart-recipe.toml trained for each step count, with
# and without its hidden layer, in f32 (the convolutions a CPU without native bf16 trains), each
# run's AP from the verification hedge writes when training ends (instance test split). One line
# a run to results/hib/quickstart/schedule.jsonl; a trial already there is kept, not rerun.
#
#   scripts/quickstart-schedule.sh "STEPS:HIDDEN:SEED ..."    (default: the trials committed)
#
# Training seconds are not the measure here (other work may share the machine): the timings are
# scripts/quickstart-timing.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/hib/quickstart/schedule.jsonl
trials=${1:-"300:0:0 300:64:0 400:0:0 400:64:0 400:64:1 300:64:1"}
cargo build --release --quiet -p hedge-cli
mkdir -p runs "$(dirname "$out")"
touch "$out"
for trial in $trials; do
    IFS=: read -r steps hidden seed <<<"$trial"
    if grep -q "\"trial\": \"$trial\"" "$out"; then
        echo "$trial: already in $out"
        continue
    fi
    run=runs/quickstart-schedule-$steps-$hidden-$seed
    rm -rf "$run"
    ./target/release/hedge hib train --config scripts/quickstart-recipe.toml --digits 2 --dim 2 \
        --steps "$steps" --hidden-units "$hidden" --seed "$seed" --precision f32 --out "$run" >"$run.log" 2>&1
    python3 - "$run" "$trial" "$out" <<'PY'
import json, sys
run, trial, out = sys.argv[1:]
load = lambda name: json.load(open(f"{run}/{name}"))
config, check = load("config.json")["hib"], load("verification.json")["variants"]
line = {
    "trial": trial,
    "steps": config["steps"],
    "hidden_units": config["hidden_units"],
    "seed": config["seed"],
    "conv_precision": config["conv_precision"],
    "ap_clean": check["clean"]["verification_ap"],
    "ap_corrupt": check["corrupt"]["verification_ap"],
    "command": f"scripts/quickstart-schedule.sh {trial}",
}
with open(out, "a") as f:
    f.write(json.dumps(line) + "\n")
print(json.dumps(line))
PY
done
