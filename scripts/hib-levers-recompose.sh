#!/usr/bin/env bash
# Recomposed training images (issue 33): on the instance protocol the long run's KNN clean reaches
# .85 on validation images, whose digit images training composites reuse, and stays near .52 on
# the test split's new MNIST digits, the same with the gallery cut to the validation images' size
# (results/hib/time-to-quality.md, section 2). The train table shows each of its 58,443 digit
# images in only a few composites; `hedge hib train --recompose` draws each step's images afresh
# from those same digit images (a class's digits, other images of them), so a class is seen in
# many more combinations without any image the table does not already hold. Not in the paper.
#
# This study trains the tables' recipe (results/hib/recipe.toml, MoG-1, N = 2, D = 2) with and
# without --recompose: `control` seed 0 plans its steps from MINUTES (default 20) of its own speed
# on 2 threads, and every other run (control seed 1, recompose seeds 0 and 1) trains exactly that
# step count, so the two arms differ only in their images. The validation images choose each
# run's weights; those weights are scored on the test split.
#
#   scripts/hib-levers-recompose.sh [SEED...]     SEED: 0 1 (default: both)
#
# Runs go to results/hib/recompose/<arm>-seed<N> (log beside it), their test scores to
# <arm>-seed<N>.test.json there (`hedge hib eval --json`). A run with its score is skipped and an
# unfinished one resumed from its last checkpoint. HEDGE (default ./target/release/hedge) is the
# binary. Both cores should be idle while control seed 0 plans (its first steps).
set -euo pipefail
{
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/hib-eval-scored.sh
source scripts/lib/hib-eval-scored.sh
hedge=${HEDGE:-./target/release/hedge}
minutes=${MINUTES:-20}
root=results/hib/recompose
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(0 1)
mkdir -p "$root"
watch=(--watch-every 500 --watch test --threads 2)
common=(--config results/hib/recipe.toml --digits 2 --dim 2 --model gaussian --no-eval)
planned_steps() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["hib"]["steps"])' "$root/control-seed0/config.json"
}
for seed in "${seeds[@]}"; do
    for arm in control recompose; do
        out=$root/$arm-seed$seed
        if [ -f "$out.test.json" ]; then
            echo "$out: done, skipped"
            continue
        fi
        if [ -f "$out/config.json" ]; then
            "$hedge" hib train --resume "$out" "${watch[@]}" >>"$out.log" 2>&1
        else
            if [ "$arm$seed" = control0 ]; then
                length=(--budget-minutes "$minutes" --finish-planned-steps)
            else
                [ -f "$root/control-seed0.test.json" ] || {
                    echo "control seed 0 first: it plans the step count every other run trains" >&2
                    exit 2
                }
                length=(--steps "$(planned_steps)")
            fi
            flags=()
            [ "$arm" = recompose ] && flags=(--recompose)
            "$hedge" hib train "${common[@]}" ${flags[@]+"${flags[@]}"} --seed "$seed" "${length[@]}" "${watch[@]}" \
                --out "$out" >"$out.log" 2>&1
        fi
        hib_eval_scored "$out" test "$out.test.json" 2 2>>"$out.log"
        echo "$out: finished"
    done
done
exit
}
