#!/usr/bin/env bash
# The HIB lever ladder of results/hib/open-set/levers/README.md: MoG-1, N = 2, D = 2, 8 minutes of
# training per run on 2 threads, 10 validation classes held out of train, every run watched
# every 400 steps on the validation classes and both test splits.
# SAME_STEPS=1 trains a seed other than 0 for exactly seed 0's step count instead of 8 minutes
# (seed 0's runs shared the cores with other jobs; a later seed alone on the machine would
# otherwise make twice the steps in the same minutes).
#
#   scripts/hib-levers.sh SEED [RUN...]     e.g. scripts/hib-levers.sh 1 a-baseline e-bn f-allpairs
#
# Seed 0 writes results/hib/open-set/levers/<RUN>, other seeds results/hib/open-set/levers/<RUN>-seed<SEED>.
# A finished run (its folder holds `done`) is skipped, so the script can be re-run after an
# interruption; an unfinished one is resumed. Each run's log is <folder>.log. HEDGE (default ./target/release/hedge) is the binary.
set -euo pipefail
# The braces make bash read the whole script before running it, so editing the file while a
# long run is under way cannot change what the running copy does next.
{
cd "$(dirname "$0")/.."
seed=${1:?usage: scripts/hib-levers.sh SEED [RUN...]}
shift
hedge=${HEDGE:-./target/release/hedge}

base=(--model gaussian --validation-classes 10 --watch-every 400 --watch test_seen,test_unseen --threads 2
    --no-eval --seed "$seed")
common=("${base[@]}" --budget-minutes 8)
head=(--lr 3e-3 --lr-schedule cosine --warmup 200 --head-lr-scale 30 --match-init first-batch)

levers() {
    case "$1" in
    a-baseline) echo --group 32x8 --lr 1e-3 ;;
    b-cosine) echo --group 32x8 --lr 1e-3 --lr-schedule cosine ;;
    c-lr3e-3-warmup) echo --group 32x8 --lr 3e-3 --lr-schedule cosine --warmup 200 ;;
    d-head) echo --group 32x8 "${head[@]}" ;;
    e-bn) echo --group 32x8 "${head[@]}" --norm batch ;;
    f-allpairs) echo --group 32x8 "${head[@]}" --norm batch --all-pairs ;;
    g-ema) echo --group 32x8 "${head[@]}" --norm batch --all-pairs --ema 0.999 ;;
    # Beyond the ladder: f's recipe with other batch shapes (60 x 4: every one of the 60 classes
    # left for training, 240 images; 16 x 16: 256 images) and a higher
    # peak learning rate.
    h-60x4) echo --group 60x4 "${head[@]}" --norm batch --all-pairs ;;
    i-16x16) echo --group 16x16 "${head[@]}" --norm batch --all-pairs ;;
    j-lr1e-2) echo --group 32x8 --lr 1e-2 --lr-schedule cosine --warmup 200 --head-lr-scale 30 \
        --match-init first-batch --norm batch --all-pairs ;;
    # f's levers at a's constant 1e-3 (the 3e-3 and 1e-2 peaks gave seed-dependent unseen-class
    # drops; see the README).
    k-bn-lr1e-3) echo --group 32x8 --lr 1e-3 --head-lr-scale 30 --match-init first-batch --norm batch --all-pairs ;;
    # a's rate and head with f's batch norm and all pairs: does the seed-1 drop need the fast head?
    l-bn-allpairs) echo --group 32x8 --lr 1e-3 --norm batch --all-pairs ;;
    *)
        echo "unknown run '$1'" >&2
        exit 2
        ;;
    esac
}

runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
    runs=(a-baseline b-cosine c-lr3e-3-warmup d-head e-bn f-allpairs g-ema h-60x4 i-16x16 j-lr1e-2 k-bn-lr1e-3 l-bn-allpairs)
fi
for name in "${runs[@]}"; do
    args=$(levers "$name")
    out=results/hib/open-set/levers/$name
    [ "$seed" = 0 ] || out=$out-seed$seed
    if [ -f "$out/done" ]; then
        echo "$out: done, skipped"
        continue
    fi
    if [ -f "$out/config.json" ]; then
        # shellcheck disable=SC2086
        "$hedge" hib train --resume "$out" --no-eval --watch-every 400 --watch test_seen,test_unseen --threads 2 \
            >>"$out.log" 2>&1
    elif [ "${SAME_STEPS:-0}" = 1 ] && [ "$seed" != 0 ]; then
        steps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['hib']['steps'])" \
            "results/hib/open-set/levers/$name/config.json")
        # shellcheck disable=SC2086
        "$hedge" hib train "${base[@]}" $args --steps "$steps" --out "$out" >"$out.log" 2>&1
    else
        # shellcheck disable=SC2086
        "$hedge" hib train "${common[@]}" $args --out "$out" >"$out.log" 2>&1
    fi
    touch "$out/done"
    echo "$out: finished"
done
exit
}
