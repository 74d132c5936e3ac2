#!/usr/bin/env bash
# Classes a batch at N = 3 (issue 33): the instance tables' N = 3 runs score KNN near zero on the
# test table's 1,000 classes (10 images each) while a grouped batch of 16 classes meets each class
# only a few dozen times in 20 minutes. This study trains the tables' recipe (results/hib/recipe.toml,
# MoG-1, N = 3, D = 2, seed 0, 20 minutes on 2 threads, the same 256 images a step) with the batch
# split among more classes: 16 x 16 (the recipe, the control), 32 x 8, 64 x 4 and 128 x 2 classes
# x images. The validation images choose each run's weights; those weights are scored on `test`
# (1,000 classes x 10) and on `test_seen` (100 classes x 100; results/hib/README.md, "Which test
# set at N = 3").
#
#   scripts/hib-levers-n3.sh [LEVER...]     LEVER: 16x16 32x8 64x4 128x2 (default: all four)
#
# Runs go to results/hib/n3-levers/<LEVER>-seed0 (log beside it), their scores to
# <LEVER>-seed0.test.json and <LEVER>-seed0.test_seen.json there (`hedge hib eval --json`). A run
# with both scores is skipped and an unfinished one resumed from its last checkpoint. HEDGE
# (default ./target/release/hedge) is the binary, MINUTES (default 20) the budget.
set -euo pipefail
{
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/hib-eval-scored.sh
source scripts/lib/hib-eval-scored.sh
hedge=${HEDGE:-./target/release/hedge}
minutes=${MINUTES:-20}
root=results/hib/n3-levers
levers=("$@")
[ ${#levers[@]} -gt 0 ] || levers=(16x16 32x8 64x4 128x2)
mkdir -p "$root"
watch=(--watch-every 500 --watch test --threads 2)
for lever in "${levers[@]}"; do
    case "$lever" in
    16x16 | 32x8 | 64x4 | 128x2) ;;
    *)
        echo "unknown lever '$lever' (16x16, 32x8, 64x4, 128x2)" >&2
        exit 2
        ;;
    esac
    out=$root/$lever-seed0
    if [ -f "$out.test.json" ] && [ -f "$out.test_seen.json" ]; then
        echo "$out: done, skipped"
        continue
    fi
    if [ -f "$out/config.json" ]; then
        # The watch settings come back from the run's plan.json; --resume takes no --watch flags.
        "$hedge" hib train --resume "$out" --no-eval --threads 2 >>"$out.log" 2>&1
    else
        "$hedge" hib train --config results/hib/recipe.toml --digits 3 --dim 2 --model gaussian --seed 0 \
            --group "$lever" --budget-minutes "$minutes" --finish-planned-steps --no-eval "${watch[@]}" \
            --out "$out" >"$out.log" 2>&1
    fi
    for split in test test_seen; do
        hib_eval_scored "$out" "$split" "$out.$split.json" 2 2>>"$out.log"
    done
    echo "$out: finished"
done
exit
}
