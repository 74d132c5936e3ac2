#!/usr/bin/env bash
# hedge against the independent plain-PyTorch reference (reference/hib/hib_reference.py) at equal
# steps (issue 79, item 1): point and MoG-1, N = 2, D = 2, instance protocol, on the plain recipe
# (128 independent pairs, half matching, Adam 1e-3) and on hedge's recipe
# (reference/hib/hedge-recipe.toml: 16 x 16 grouped batches, AdamW 1e-2 with weight decay 0.1,
# 500 warm-up steps, cosine), seeds 0 and 1, every run on all 100,000 training images and scored
# on its final weights (no validation choice in either).
#
#   scripts/hib-reference.sh [SEED...]     (default: 0 1)
#
# Runs go to results/hib/reference/runs/<impl>-<recipe>-<model>-seed<N>; hedge's score to
# eval-final.json there (`hedge hib eval --weights model.safetensors --json`), the reference's to
# reference_eval.json (its own schema: `eval*.json` names a hedge EvalReport). A scored run is
# skipped, an unfinished one resumed. STEPS (default 20000),
# PRECISION of the convolutions for both (default bf16; f32 where the CPU has no native bf16),
# HEDGE (default ./target/release/hedge), PYTHON (default .venv/bin/python).
set -euo pipefail
# The braces make bash read the whole script first, so editing it while the queue runs cannot
# change what the running copy does next.
{
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
python=${PYTHON:-.venv/bin/python}
steps=${STEPS:-20000}
precision=${PRECISION:-bf16}
root=${ROOT:-results/hib/reference/runs}
# A run trains in a staging folder and moves into $root once scored, so that the committed tables
# (`hedge report`) never count a run that is still going. The staging folder is committed with its
# checkpoints (.gitignore), so a run a session leaves unfinished resumes in the next one.
staging=${STAGING:-results/hib/reference/staging}
# Seed 0 of every cell trained bf16 convolutions on a CPU with native bf16; the other seeds must
# match it, and emulated bf16 (a CPU without AVX512-BF16 or AMX) is about ten times slower, so
# such a CPU is refused rather than left to crawl (scripts/hib-reference-levers.sh, f32, runs
# there instead).
# shellcheck source=scripts/lib/native-bf16.sh
source scripts/lib/native-bf16.sh
if [ "$precision" = bf16 ] && ! native_bf16 && [ -z "${ALLOW_EMULATED_BF16:-}" ]; then
    echo "hib-reference: this CPU has no native bf16; PRECISION=bf16 would be emulated (about ten times slower)." >&2
    echo "Run it on a CPU with native bf16, or set ALLOW_EMULATED_BF16=1 to run anyway." >&2
    exit 2
fi
mkdir -p "$root" "$staging"
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(0 1)
model_flag() { [ "$1" = mog1 ] && echo gaussian || echo point; }
run_reference() { # recipe model seed
    local name="ref-$1-$2-seed$3"
    local dir="$staging/$name"
    [ -f "$root/$name/reference_eval.json" ] && return 0
    echo "== $root/$name" >&2
    "$python" reference/hib/hib_reference.py --recipe "$1" --model "$(model_flag "$2")" --seed "$3" \
        --steps "$steps" --precision "$precision" --out "$dir" > /dev/null 2>> "$dir.log.tmp" || { cat "$dir.log.tmp" >&2; return 1; }
    mv "$dir.log.tmp" "$root/$name.log"
    mv "$dir" "$root/$name"
}
run_hedge() { # recipe model seed
    local name="hedge-$1-$2-seed$3"
    local dir="$staging/$name"
    [ -f "$root/$name/eval-final.json" ] && return 0
    echo "== $root/$name" >&2
    local config=()
    [ "$1" = hedge ] && config=(--config reference/hib/hedge-recipe.toml)
    # --continue starts the run, or continues an unfinished one from its own settings.
    "$hedge" hib train "${config[@]}" --protocol instance --digits 2 --dim 2 --model "$(model_flag "$2")" \
        --seed "$3" --steps "$steps" --precision "$precision" --no-eval --out "$dir" --continue >> "$dir.log" 2>&1
    "$hedge" hib eval --run "$dir" --weights "$dir/model.safetensors" --json > "$dir/eval-final.json.tmp" 2>> "$dir.log"
    mv "$dir/eval-final.json.tmp" "$dir/eval-final.json"
    mv "$dir.log" "$root/$name.log"
    mv "$dir" "$root/$name"
}
for seed in "${seeds[@]}"; do
    for recipe in plain hedge; do
        for model in mog1 point; do
            run_reference "$recipe" "$model" "$seed"
            run_hedge "$recipe" "$model" "$seed"
        done
    done
done
exit
}
