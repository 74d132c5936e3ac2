#!/usr/bin/env bash
# Point, HIB MoG-1, PCME++'s CSD and PFE's mutual likelihood score (issue 110) side by side at
# equal training time, 3 seeds (issue 82, item 6), on the same data, the same evaluation and the
# same identification:
#
# - mnist-n2-d2: 2-digit MNIST, D = 2, the instance protocol, hedge's recipe
#   (reference/hib/hedge-recipe.toml), 4 minutes of training per run (700-800 steps on one thread);
# - fashion-d2, fashion-d16, fashion-d64: Fashion-MNIST as an image folder (1,000 training
#   images per class, 3 classes held out as unseen identities, split seed 0; the settings of
#   results/own-data), 90 seconds per run.
#
# Equal time: `calibrate` times two copies of a short run of every model and setting side by side
# (one thread each, as the training runs two at a time; nothing else on the machine) into calibration.json; every seed of a model then trains
# budget x its measured steps per second, so the step counts follow each model's own cost and
# not what else the machine did during a run. Every run uses one thread, two runs at a time.
#
#   scripts/side-by-side.sh calibrate  # 12 timing runs: about 4 minutes, keep the machine quiet
#   scripts/side-by-side.sh train      # 36 runs: about 40 minutes on 2 cores
#   scripts/side-by-side.sh eval [SEED...]      # eval.json per run (MoG-1: Monte Carlo, 3 repeats, and quadrature where D <= 3)
#   scripts/side-by-side.sh identify [SEED...]  # Fashion-MNIST: the held-out classes identified, abstaining at target risks 0.1 and 0.3
#   scripts/side-by-side.sh collect    # the runs' small files into results/hib/side-by-side/runs
#   MODELS=mls scripts/side-by-side.sh calibrate  # ... and so on: one model added to the study
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
calibration=results/hib/side-by-side/calibration.json
calibration_steps=60
# Repeats of the Monte-Carlo evaluation (quadrature and CSD are deterministic: one).
repeats=3
# Identification sets of split seed 0's held-out classes (data_split.json of every Fashion run):
# their first 1,000 training images each as the gallery, the first 500 test images each as
# validation probes (where the abstention threshold is chosen), the next 500 as probes.
search=$work/identification-sets
held_out=coat,shirt,t-shirt
fashion=data/own/fashion-mnist
mkdir -p "$work"
settings=(mnist-n2-d2 fashion-d2 fashion-d16 fashion-d64)
# MODELS="mls" limits every step to the models named (a model added to a finished study).
read -r -a models <<< "${MODELS:-point mog1 csd mls}"
model_flags() { # model
    case $1 in
        point) echo "--model point" ;;
        mog1) echo "--model gaussian" ;;
        csd) echo "--model gaussian --loss csd" ;;
        mls) echo "--model gaussian --loss mls" ;;
    esac
}
data_flags() { # setting
    case $1 in
        mnist-n2-d2) echo "--config reference/hib/hedge-recipe.toml --protocol instance --digits 2 --dim 2" ;;
        fashion-d*) echo "--data $fashion --unseen-classes 3 --split-seed 0 --group 7x16 --dim ${1#fashion-d}" ;;
    esac
}
calibrate_one() { # setting model: two copies timed side by side (the training's two runs at a time)
    local copy
    [ -f "$work/calibration/$1-$2-copy0/state.json" ] && [ -f "$work/calibration/$1-$2-copy1/state.json" ] && return 0
    for copy in 0 1; do
        local dir="$work/calibration/$1-$2-copy$copy"
        echo "== calibrate $dir" >&2
        mkdir -p "$work/calibration"
        # shellcheck disable=SC2046
        "$hedge" hib train $(data_flags "$1") $(model_flags "$2") --seed "$copy" --steps "$calibration_steps" \
            --warmup 0 --threads 1 --no-eval --out "$dir" --overwrite >> "$dir.log" 2>&1 &
    done
    wait
}
train_one() { # setting model seed
    local dir="$work/$1/$2-seed$3"
    [ -f "$dir/model.safetensors" ] && [ -f "$dir/trained" ] && return 0
    mkdir -p "$(dirname "$dir")"
    echo "== train $dir" >&2
    # shellcheck disable=SC2046
    "$hedge" hib train $(data_flags "$1") $(model_flags "$2") --seed "$3" --steps "$(steps_of "$1" "$2")" \
        --threads 1 --no-eval --out "$dir" --continue >> "$dir.log" 2>&1
    touch "$dir/trained"
}
steps_of() { # setting model: the calibrated steps
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]]["steps"])' \
        "$calibration" "$1" "$2"
}
export_fashion() {
    [ -d "$fashion" ] || "$hedge" data export-images --dataset fashion-mnist --per-class 1000 --out "$fashion"
}
eval_one() { # setting model seed: eval.json (MoG-1: eval-quadrature.json first where D <= 3)
    local dir="$work/$1/$2-seed$3"
    [ -f "$dir/eval.json" ] && return 0
    echo "== eval $dir" >&2
    local dim=${1##*-d}
    if [ "$2" = mog1 ] && [ "$dim" -le 3 ] && [ ! -f "$dir/eval-quadrature.json" ]; then
        # The table's metrics only: quadrature scores every candidate pair on a grid of nodes,
        # and the other gallery/probe passes would triple its time.
        "$hedge" hib eval --run "$dir" --match-estimator quadrature --metrics verification_ap,knn_accuracy,ece,aurc \
            --threads 1 --json > "$dir/eval-quadrature.json.tmp" 2>> "$dir.log"
        mv "$dir/eval-quadrature.json.tmp" "$dir/eval-quadrature.json"
    fi
    "$hedge" hib eval --run "$dir" --repeats "$repeats" --threads 1 >> "$dir.log" 2>&1
}
identify_one() { # setting model seed: the held-out classes identified, abstaining at target risks 0.1 and 0.3
    local dir="$work/$1/$2-seed$3"
    local scores=(eta margin)
    [ "$2" = point ] && scores=(margin)
    for score in "${scores[@]}"; do
        local out="$dir/identification-$score"
        [ -f "$out/summary.json" ] && continue
        echo "== identify $out" >&2
        "$hedge" hib index --run "$dir" --gallery "$search/gallery" --validation "$search/validation" \
            --target-risk 0.1 --abstain-by "$score" --threads 1 --out "$dir/index-$score" --overwrite >> "$dir.log" 2>&1
        "$hedge" hib search --index "$dir/index-$score" --probe "$search/probe" --threads 1 --out "$out" \
            --overwrite >> "$dir.log" 2>&1
    done
    # A looser target too: with three look-alike classes held out, few answers reach 0.1.
    for score in "${scores[@]}"; do
        local out="$dir/identification-$score-risk0.3"
        [ -f "$out/summary.json" ] && continue
        "$hedge" hib search --index "$dir/index-$score" --probe "$search/probe" --target-risk 0.3 --threads 1 \
            --out "$out" --overwrite >> "$dir.log" 2>&1
    done
}
jobs_for_seeds() { # seeds...: one line per run
    for seed in "$@"; do
        for setting in "${settings[@]}"; do
            for model in "${models[@]}"; do echo "$setting $model $seed"; done
        done
    done
}
export -f calibrate_one train_one steps_of model_flags data_flags eval_one identify_one
export hedge work fashion calibration calibration_steps repeats search
case ${1:-} in
    calibrate)
        export_fashion
        # Only the models calibration.json lacks: a model added later is timed alone, and the
        # budgets of those already trained stay as they were.
        jobs_for_seeds 0 | cut -d' ' -f1,2 | while read -r setting model; do
            python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); sys.exit(0 if sys.argv[3] in c.get(sys.argv[2], {}) else 1)' \
                "$calibration" "$setting" "$model" 2>/dev/null || echo "$setting $model"
        done | xargs -r -L 1 bash -c 'calibrate_one "$@"' _
        # Steps per second over the timed run (state.json's training seconds), and the steps
        # the budget buys.
        python3 - "$work/calibration" "$calibration" "${settings[@]}" <<'PY'
import json, pathlib, sys
root, out, settings = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3:]
budget = {s: 240 if s == "mnist-n2-d2" else 90 for s in settings}
table = json.loads(out.read_text()) if out.exists() else {}
for s in settings:
    table.setdefault(s, {})
    for m in ["point", "mog1", "csd", "mls"]:
        if m in table[s]:
            continue
        states = [json.loads((root / f"{s}-{m}-copy{c}" / "state.json").read_text()) for c in (0, 1)]
        rate = sum(st["step"] for st in states) / sum(st["seconds"] for st in states)
        table[s][m] = {"budget_seconds": budget[s], "timed_steps": [st["step"] for st in states],
                       "timed_seconds": [round(st["seconds"], 2) for st in states],
                       "steps_per_second": round(rate, 3), "steps": int(budget[s] * rate)}
out.parent.mkdir(parents=True, exist_ok=True)
tmp = out.with_suffix(".json.tmp")
tmp.write_text(json.dumps(table, indent=2) + "\n")
tmp.rename(out)
print(json.dumps(table, indent=1))
PY
        ;;
    train)
        export_fashion
        jobs_for_seeds 0 1 2 | xargs -P 2 -L 1 bash -c 'train_one "$@"' _
        ;;
    eval)
        shift
        [ $# -gt 0 ] || set -- 0 1 2
        jobs_for_seeds "$@" | xargs -P 2 -L 1 bash -c 'eval_one "$@"' _
        ;;
    identify)
        for r in "$work"/fashion-d*/*-seed*/data_split.json; do
            python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["unseen_classes"]; assert sorted(u)==sorted(sys.argv[2].split(",")), (sys.argv[1], u)' "$r" "$held_out"
        done
        mkdir -p "$search"
        [ -d "$search/gallery" ] || "$hedge" data export-images --dataset fashion-mnist --split train --per-class 1000 --classes "$held_out" --out "$search/gallery"
        [ -d "$search/validation" ] || "$hedge" data export-images --dataset fashion-mnist --split test --per-class 500 --classes "$held_out" --out "$search/validation"
        [ -d "$search/probe" ] || "$hedge" data export-images --dataset fashion-mnist --split test --skip 500 --per-class 500 --classes "$held_out" --out "$search/probe"
        shift
        [ $# -gt 0 ] || set -- 0 1 2
        jobs_for_seeds "$@" | grep '^fashion' | xargs -P 2 -L 1 bash -c 'identify_one "$@"' _
        ;;
    collect)
        # What the table reads and the weights; not the optimizer state or the indexes.
        for dir in "$work"/*/*-seed*/; do
            rel=${dir#"$work"/}
            mkdir -p "$results/$rel"
            for f in config.json state.json metrics.jsonl model.safetensors data_split.json eval.json eval-quadrature.json \
                reliability.png; do
                [ -f "$dir/$f" ] && cp "$dir/$f" "$results/$rel/$f"
            done
            for id in "$dir"/identification-*/; do
                [ -d "$id" ] || continue
                mkdir -p "$results/$rel/$(basename "$id")"
                cp "$id/summary.json" "$id/risk_coverage.png" "$results/$rel/$(basename "$id")/"
            done
        done
        ;;
    *)
        echo "usage: scripts/side-by-side.sh train|eval|identify|collect" >&2
        exit 2
        ;;
esac
exit
}
