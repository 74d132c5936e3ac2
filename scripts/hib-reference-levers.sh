#!/usr/bin/env bash
# The paper's unstated details as levers (issue 79, item 2), tried on the plain-PyTorch reference
# (reference/hib/hib_reference.py), the fastest bench: MoG-1, N = 2, D = 2, the instance protocol,
# the paper's plain recipe (128 independent pairs, Adam 1e-3, 20 % occlusion) as the control,
# each lever one flag added to it, 2 seeds each, STEPS steps (default 5000), f32 convolutions
# (PRECISION: the study spans sessions on machines with and without native bf16, and f32 runs the
# same arithmetic on both; bf16 without native support is about ten times slower). 5 % of every class's training images are held out and redrawn on unused MNIST
# digits (--validation-fraction 0.05): the validation numbers choose a lever, the test numbers
# are reported beside them and never choose.
#
#   scripts/hib-reference-levers.sh [LEVER...]     (default: all, control first, widths last)
#
# Levers: widths (conv widths 64, 128 instead of 32, 64), hidden (a fully connected layer of 256
# before the outputs), glorot (TensorFlow's Glorot-uniform initialiser, zero biases), sgd (SGD
# with momentum 0.9 at 1e-2 instead of Adam 1e-3), share25 (a quarter of the pairs matching
# instead of half), expvar (the variance as exp of the raw output instead of softplus),
# meanlog (Eq. 8 as written: the mean over sample pairs of -log p(m | z1, z2) instead of -log of
# their mean). The test-time occlusion lever (test images occluded like training, each digit
# with probability 0.2, against every digit) costs no training: every run's reference_eval.json scores it
# (`*_p20`).
#
# Runs go to results/hib/reference/levers/<lever>-seed<N>; a run with its reference_eval.json is skipped,
# an unfinished one resumed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
steps=${STEPS:-5000}
precision=${PRECISION:-f32}
root=results/hib/reference/levers
mkdir -p "$root"
levers=("$@")
# The levers that cost what the control costs first; widths (about four times the convolutions'
# arithmetic: 62 img/s against about 250 on a 2-core AMD EPYC) last.
[ ${#levers[@]} -gt 0 ] || levers=(control glorot sgd share25 expvar meanlog hidden widths)
flags() {
    case "$1" in
    control) ;;
    widths) echo --channels 64 128 ;;
    hidden) echo --hidden 256 ;;
    glorot) echo --init glorot ;;
    sgd) echo --optimizer sgd --lr 0.01 ;;
    share25) echo --match-share 0.25 ;;
    expvar) echo --variance exp ;;
    meanlog) echo --pair-loss mean-log ;;
    *) echo "unknown lever '$1'" >&2; return 2 ;;
    esac
}
for seed in 0 1; do
    for lever in "${levers[@]}"; do
        extra=$(flags "$lever")
        dir=$root/$lever-seed$seed
        [ -f "$dir/reference_eval.json" ] && continue
        echo "== $dir" >&2
        # shellcheck disable=SC2086
        "$python" reference/hib/hib_reference.py --recipe plain --model gaussian --seed "$seed" --steps "$steps" \
            --precision "$precision" --validation-fraction 0.05 $extra --out "$dir" > /dev/null 2>> "$dir.log"
    done
done
