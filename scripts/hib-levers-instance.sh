#!/usr/bin/env bash
# The HIB lever study on the paper's protocol (issue 33; results/hib/instance-levers/README.md):
# MoG-1, N = 2, D = 2, the instance tables (all 100 classes in training and in test), 5 % of
# every class's training images held out (seeded) as the validation images that choose the
# model, 20 minutes of training per run on 2 threads, watched every 1,000 steps on the
# validation images and the test split (test never chooses anything).
#
#   scripts/hib-levers-instance.sh SEED [RUN...]     e.g. scripts/hib-levers-instance.sh 0 a-constant b-cosine
#
# Runs go to results/hib/instance-levers/<RUN>-seed<SEED>. Seed 0 plans its step count from the
# speed of its first steps (20 minutes) and trains all of it (--finish-planned-steps, so work beside
# it stretches its wall-clock, not its recipe); every other seed trains exactly seed 0's step count, so a
# lever's seeds train the same recipe whatever else the machine did while they ran. A finished
# run (its folder holds `done`) is skipped and an unfinished one resumed from its last checkpoint,
# so the script can be re-run after an interruption (or in a later session, from committed
# checkpoints). Each run's log is <folder>.log; curves.md and its plots are redrawn at the end.
# HEDGE (default ./target/release/hedge) is the binary; MINUTES (default 20) the budget.
# STEPS=N makes seed 0 train exactly N steps instead of planning them from its own speed: for a
# seed 0 run on a CPU of another speed than the study's, N being the lever's equal-cost step count
# there (the study's README says how each such N was measured); it is recorded in config.json.
#
# PRECISION=f32 runs a second, self-contained study for CPUs without native bf16 (AVX2 only, as
# this project's CI kind): every lever in f32 into results/hib/instance-levers-f32/, seed 0
# planning its steps from its own 20 minutes there. Its budgets mean 20 minutes of such a CPU
# (about a sixth of the bf16 study's steps), so its levers are compared with each other, never
# with the bf16 study's; `/proc/cpuinfo`'s model name is written beside each run (cpu.txt).
set -euo pipefail
# The braces make bash read the whole script before running it, so editing the file while a
# long run is under way cannot change what the running copy does next.
{
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/hib-test-curves.sh
source scripts/lib/hib-test-curves.sh
seed=${1:?usage: scripts/hib-levers-instance.sh SEED [RUN...]}
shift
hedge=${HEDGE:-./target/release/hedge}
minutes=${MINUTES:-20}
precision=${PRECISION:-bf16}
case "$precision" in
bf16) root=results/hib/instance-levers ;;
f32) root=results/hib/instance-levers-f32 ;;
*)
    echo "PRECISION must be bf16 (the study) or f32 (the study for CPUs without native bf16), not '$precision'" >&2
    exit 2
    ;;
esac

# Watched about a dozen times a run in both studies: every 1,000 of the bf16 study's ~12,000 steps,
# every 250 of the f32 study's ~2,250 (the validation images choose among these watches).
watch_every=1000
[ "$precision" = f32 ] && watch_every=250
watch=(--watch-every "$watch_every" --watch test --threads 2)
# Every lever of a study trains its convolutions in that study's precision, named explicitly
# (`--precision auto` picks bf16 only on CPUs with native bf16, which would change the recipe).
base=(--protocol instance --model gaussian --validation-fraction 0.05 --precision "$precision" "${watch[@]}" --no-eval --seed "$seed")
# Seed 0 plans its step count from its own speed, so its budget means the same thing only on the
# kind of CPU the study's first runs planned on: one with native bf16 (avx512_bf16 or amx_bf16;
# they ran at 97 ms a step for b-cosine). On a CPU without it (AVX2 only: 570-615 ms a step for the
# same recipe in f32, measured) a 20-minute budget trains a sixth of the steps, so seed-0 runs
# there are refused; LEVERS_ANY_CPU=1 overrides (the budgets are then not comparable).
native_bf16() { grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; }
# The peak-rate recipe the other levers are added to one at a time (its batch shape apart, so a
# lever can change it: --group may be given once).
peak=(--lr 3e-3 --warmup 200 --lr-schedule cosine)

levers() {
    case "$1" in
    a-constant) echo --group 32x8 --lr 1e-3 ;;
    b-cosine) echo --group 32x8 "${peak[@]}" ;;
    c-step) echo --group 32x8 --lr 3e-3 --warmup 200 --lr-schedule step ;;
    d-peak1e-2) echo --group 32x8 --lr 1e-2 --warmup 500 --lr-schedule cosine ;;
    e-bn) echo --group 32x8 "${peak[@]}" --norm batch ;;
    f-64x8) echo --group 64x8 "${peak[@]}" ;;
    g-wide) echo --group 32x8 "${peak[@]}" --channels 64,128 ;;
    h-allpairs) echo --group 32x8 "${peak[@]}" --all-pairs ;;
    i-ema) echo --group 32x8 "${peak[@]}" --ema 0.999 ;;
    j-16x16) echo --group 16x16 "${peak[@]}" ;;
    # The three leaders of the f32 study's seed 0 (16 x 16, all pairs, EMA; the next two close
    # behind) together, added once every single lever had its seed 0: whether their gains add up.
    k-leaders) echo --group 16x16 "${peak[@]}" --all-pairs --ema 0.999 ;;
    # The top two single levers of the f32 study (16 x 16 batches, the 1e-2 peak) together, added
    # after the study had chosen its recipe: the lever section 1 of time-to-quality.md named next.
    l-peak1e-2-16x16) echo --group 16x16 --lr 1e-2 --warmup 500 --lr-schedule cosine ;;
    *)
        echo "unknown run '$1'" >&2
        exit 2
        ;;
    esac
}

runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
    runs=(a-constant b-cosine c-step e-bn f-64x8 g-wide h-allpairs i-ema d-peak1e-2 j-16x16 k-leaders l-peak1e-2-16x16)
fi
mkdir -p "$root"
for name in "${runs[@]}"; do
    args=$(levers "$name")
    out=$root/$name-seed$seed
    if [ -f "$out/done" ]; then
        echo "$out: done, skipped"
        continue
    fi
    if [ -f "$out/config.json" ]; then
        "$hedge" hib train --resume "$out" --no-eval "${watch[@]}" >>"$out.log" 2>&1
    elif [ "$seed" != 0 ] || [ -n "${STEPS:-}" ]; then
        # A fixed step count: seed 0's for every other seed, or STEPS for seed 0.
        steps=${STEPS:-}
        if [ "$seed" != 0 ]; then
            first=$root/$name-seed0
            if [ ! -f "$first/done" ]; then
                echo "$out: waits for $first (its step count)" >&2
                continue
            fi
            steps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['hib']['steps'])" "$first/config.json")
        fi
        # shellcheck disable=SC2086
        "$hedge" hib train "${base[@]}" $args --steps "$steps" --out "$out" >"$out.log" 2>&1
    else
        if [ "$precision" = bf16 ] && ! native_bf16 && [ "${LEVERS_ANY_CPU:-0}" != 1 ]; then
            echo "$out: refused: this CPU has no native bf16 (avx512_bf16/amx_bf16), so a 20-minute budget here is not the study's; run seed 0 on such a CPU, run the f32 study here (PRECISION=f32), or set LEVERS_ANY_CPU=1" >&2
            continue
        fi
        # shellcheck disable=SC2086
        "$hedge" hib train "${base[@]}" $args --budget-minutes "$minutes" --finish-planned-steps --out "$out" \
            >"$out.log" 2>&1
    fi
    grep -m1 "model name" /proc/cpuinfo >"$out/cpu.txt" || true
    touch "$out/done"
    echo "$out: finished"
done
# Every finished run of the study (both seeds), redrawn after each call: curves.md and its plots.
finished=()
for done_file in "$root"/*-seed*/done; do
    [ -f "$done_file" ] && finished+=("$(dirname "$done_file")")
done
hib_test_curves "$root/curves.md" ${finished[@]+"${finished[@]}"}
exit
}
