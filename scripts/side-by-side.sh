#!/usr/bin/env bash
# Point, HIB MoG-1 and PCME++'s CSD side by side at equal training time, 3 seeds (issue 82,
# item 6), on the same data, the same evaluation and the same identification:
#
# - mnist-n2-d2: 2-digit MNIST, D = 2, the instance protocol, hedge's recipe
#   (reference/hib/hedge-recipe.toml), 6 minutes of training per run (about 1,000 steps on one thread);
# - fashion-d2, fashion-d16, fashion-d64: Fashion-MNIST as an image folder (1,000 training
#   images per class, 3 classes held out as unseen identities, split seed 0; the settings of
#   results/own-data), 2 minutes per run.
#
# Equal time: seed 0 of each model trains for the budget (`--budget-minutes`, its step count
# planned from its first steps' speed and then kept: `--finish-planned-steps`); seeds 1 and 2
# train that many steps, so a model's seeds differ in their draws only. Every run uses one
# thread, two runs at a time.
#
#   scripts/side-by-side.sh train      # 36 runs: about 55 minutes on 2 cores
#   scripts/side-by-side.sh eval       # eval.json per run (MoG-1: Monte Carlo, and quadrature where D <= 3)
#   scripts/side-by-side.sh identify   # Fashion-MNIST: open-set identification at target risk 0.1
#   scripts/side-by-side.sh collect    # the runs' small files into results/hib/side-by-side/runs
#
# Runs train under runs/side-by-side (ignored); `collect` copies what the table reads, and the
# weights, into results/hib/side-by-side/runs; `hedge report` writes the table from there.
# Needs HEDGE_DATA_DIR (MNIST, Fashion-MNIST). HEDGE (default ./target/release/hedge).
set -euo pipefail
{
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
work=${WORK:-runs/side-by-side}
results=results/hib/side-by-side/runs
fashion=data/own/fashion-mnist
mkdir -p "$work"
settings=(mnist-n2-d2 fashion-d2 fashion-d16 fashion-d64)
models=(point mog1 csd)
budget_of() { [ "$1" = mnist-n2-d2 ] && echo 6 || echo 2; }
model_flags() { # model
    case $1 in
        point) echo "--model point" ;;
        mog1) echo "--model gaussian" ;;
        csd) echo "--model gaussian --loss csd" ;;
    esac
}
data_flags() { # setting
    case $1 in
        mnist-n2-d2) echo "--config reference/hib/hedge-recipe.toml --protocol instance --digits 2 --dim 2" ;;
        fashion-d*) echo "--data $fashion --unseen-classes 3 --split-seed 0 --group 7x16 --dim ${1#fashion-d}" ;;
    esac
}
train_one() { # setting model seed
    local dir="$work/$1/$2-seed$3"
    [ -f "$dir/model.safetensors" ] && [ -f "$dir/trained" ] && return 0
    local length
    if [ "$3" = 0 ]; then
        length="--budget-minutes $(budget_of "$1") --finish-planned-steps"
    else
        length="--steps $(steps_of "$1" "$2")"
    fi
    mkdir -p "$(dirname "$dir")"
    echo "== train $dir" >&2
    # shellcheck disable=SC2046
    "$hedge" hib train $(data_flags "$1") $(model_flags "$2") --seed "$3" $length --threads 1 --no-eval \
        --out "$dir" --continue >> "$dir.log" 2>&1
    touch "$dir/trained"
}
steps_of() { # setting model: the steps seed 0 planned
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hib"]["steps"])' "$work/$1/$2-seed0/config.json"
}
export_fashion() {
    [ -d "$fashion" ] || "$hedge" data export-images --dataset fashion-mnist --per-class 1000 --out "$fashion"
}
jobs_for_seeds() { # seeds...: one line per run
    for seed in "$@"; do
        for setting in "${settings[@]}"; do
            for model in "${models[@]}"; do echo "$setting $model $seed"; done
        done
    done
}
case ${1:-} in
    train)
        export_fashion
        export -f train_one steps_of budget_of model_flags data_flags
        export hedge work fashion
        jobs_for_seeds 0 | xargs -P 2 -L 1 bash -c 'train_one "$@"' _
        jobs_for_seeds 1 2 | xargs -P 2 -L 1 bash -c 'train_one "$@"' _
        ;;
    *)
        echo "usage: scripts/side-by-side.sh train|eval|identify|collect" >&2
        exit 2
        ;;
esac
exit
}
