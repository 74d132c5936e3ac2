#!/usr/bin/env bash
# The long run of issue 33: MoG-1, N = 2, D = 2 on the instance protocol with the tables' recipe
# (results/hib/recipe.toml when the run starts: the committed run trained d-peak1e-2, the recipe
# first chosen, and a resumed run keeps its own config.json's), its schedule laid over STEPS
# (default 100,000) steps, trained across sessions with --resume from the committed run folder. A
# copy of the inference weights is kept every 10,000 steps (checkpoints/, committed) and `hedge hib
# curve` evaluates each of them on the test split (curve.json, curve.png: the four Table 1 numbers
# against steps, 10 Monte-Carlo repeats); the validation images and the test split are also
# watched every 5,000 steps (monitor.jsonl).
#
#   scripts/hib-long-run.sh            start, or continue where the last session stopped
#
# Stop it at any time (the run resumes from its last checkpoint, every 1,000 steps, bit for bit).
# HEDGE (default ./target/release/hedge) is the binary, OUT (default results/hib/long-run) the run.
set -euo pipefail
{
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
out=${OUT:-results/hib/long-run}
steps=${STEPS:-100000}
# --continue starts the run, or continues it from its own config.json and plan.json (watches
# included) when "$out" holds it: the run trained an earlier recipe, which it keeps.
"$hedge" hib train --config results/hib/recipe.toml --digits 2 --dim 2 --model gaussian --seed 0 \
    --steps "$steps" --keep-every 10000 --no-eval --watch-every 5000 --watch test --threads 2 \
    --out "$out" --continue >>"$out.log" 2>&1
"$hedge" hib curve --run "$out" --repeats 10 --threads 2 >>"$out.log" 2>&1
echo "$out: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" "$out/state.json") steps"
exit
}
