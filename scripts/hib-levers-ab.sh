#!/usr/bin/env bash
# Two-arm lever studies on the tables' recipe (issue 33), each aimed at the test split's new MNIST
# digits: on the instance protocol the long run's KNN clean reaches .85 on validation images, whose
# digit images training composites reuse, and stays near .52 on the test split's new digits
# (results/hib/time-to-quality.md, section 2).
#
# - `recompose` (results/hib/recompose/): `control` against `recompose`, `hedge hib train
#   --recompose` (each step's images drawn afresh from the train table's own 58,443 digit images:
#   a class in many more combinations, no image the table does not hold). Chosen on the validation
#   images as the table has them.
# - `digit-shift` (results/hib/digit-shift/): `control` against `shift2`, `--digit-shift 2` (every
#   training digit moved within its cell by up to 2 pixels each way, each step). Both arms are
#   chosen on validation images with unused digits (`--validation-digits unused`), which track the
#   test split where the table's own held-out images do not (time-to-quality.md, section 2).
# - `weight-decay` (results/hib/weight-decay/): `wd5e-2`, `--weight-decay 5e-2` (decoupled weight
#   decay of the conv and head weights, AdamW, in the middle of the 0.01-0.1 it is usually run
#   with), then `wd1e-1` and `wd2e-1` (its strength), against the digit-shift study's control
#   runs, which are these arms' recipe, validation digits and step count without the decay: they
#   are read from results/hib/digit-shift/, not trained again.
# - `dropout` (results/hib/dropout/): `drop5e-1`, `--dropout 0.5` (the trunk's features dropped out
#   before the head while training, at the rate of the classic MNIST CNNs), against the same
#   digit-shift control runs.
#
# Every arm, control included, trains results/hib/ab-recipe.toml (the lever study's recipe the
# studies started from), not results/hib/recipe.toml, which may since have taken an arm on: a
# control read from another study stays the recipe its arms add one setting to. None of the levers is in the paper. `control` seed 0 plans its steps from MINUTES (default 20)
# of its own speed on 2 threads, and every other run (control seed 1, the lever's seeds 0 and 1)
# trains exactly that step count, so the two arms differ only in the lever. The validation images
# choose each run's weights; those weights are scored on the test split.
#
#   scripts/hib-levers-ab.sh STUDY [SEED...]     STUDY: recompose, digit-shift, weight-decay or dropout; SEED: 0 1 (default: both)
#
# Runs go to results/hib/<STUDY>/<arm>-seed<N> (log beside it), their test scores to
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
study=${1:-}
unused=(--validation-digits unused)
# The lever arms of each study, and the flags of an arm (the control's are the study's own).
case "$study" in
    recompose) levers=(recompose); control_study=recompose; control_flags=() ;;
    digit-shift) levers=(shift2); control_study=digit-shift; control_flags=("${unused[@]}") ;;
    weight-decay) levers=(wd5e-2 wd1e-1 wd2e-1); control_study=digit-shift; control_flags=("${unused[@]}") ;;
    dropout) levers=(drop5e-1); control_study=digit-shift; control_flags=("${unused[@]}") ;;
    *) echo "usage: scripts/hib-levers-ab.sh recompose|digit-shift|weight-decay|dropout [SEED...]" >&2; exit 2 ;;
esac
arm_flags() {
    case "$1" in
        recompose) echo --recompose ;;
        shift2) echo "${unused[@]}" --digit-shift 2 ;;
        wd*) echo "${unused[@]}" --weight-decay "${1#wd}" ;;
        drop5e-1) echo "${unused[@]}" --dropout 0.5 ;;
    esac
}
shift
root=results/hib/$study
control_root=results/hib/$control_study
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(0 1)
mkdir -p "$root"
watch=(--watch-every 500 --watch test --threads 2)
common=(--config results/hib/ab-recipe.toml --digits 2 --dim 2 --model gaussian --no-eval)
planned_steps() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["hib"]["steps"])' "$control_root/control-seed0/config.json"
}
for seed in "${seeds[@]}"; do
    for arm in control "${levers[@]}"; do
        if [ "$arm" = control ]; then out=$control_root/$arm-seed$seed; else out=$root/$arm-seed$seed; fi
        if [ -f "$out.test.json" ]; then
            echo "$out: done, skipped"
            continue
        fi
        if [ "$arm" = control ] && [ "$control_root" != "$root" ]; then
            echo "$out: the control of $study is $control_study's; run scripts/hib-levers-ab.sh $control_study $seed first" >&2
            exit 2
        fi
        if [ -f "$out/config.json" ]; then
            # --resume restores the watches (and every other setting) from the run's config.json.
            "$hedge" hib train --resume "$out" --no-eval --threads 2 >>"$out.log" 2>&1
        else
            if [ "$arm$seed" = control0 ]; then
                length=(--budget-minutes "$minutes" --finish-planned-steps)
            else
                [ -f "$control_root/control-seed0.test.json" ] || {
                    echo "control seed 0 first: it plans the step count every other run trains" >&2
                    exit 2
                }
                length=(--steps "$(planned_steps)")
            fi
            flags=(${control_flags[@]+"${control_flags[@]}"})
            # shellcheck disable=SC2207  # the flags are words without spaces
            [ "$arm" = control ] || flags=($(arm_flags "$arm"))
            "$hedge" hib train "${common[@]}" ${flags[@]+"${flags[@]}"} --seed "$seed" "${length[@]}" "${watch[@]}" \
                --out "$out" >"$out.log" 2>&1
        fi
        hib_eval_scored "$out" test "$out.test.json" 2 2>>"$out.log"
        echo "$out: finished"
    done
done
exit
}
