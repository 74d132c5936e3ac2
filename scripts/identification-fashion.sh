#!/usr/bin/env bash
# Identification on Fashion-MNIST classes a run never trained on (issue 18's acceptance):
# the run's held-out classes as a gallery (their 1,000 training images each), validation
# probes (the first 500 test images of each) on which the abstention threshold is chosen, and
# probes (the next 500 test images of each) that are searched. For each run and abstention
# score (eta, margin), an index at target risk 0.05 is searched at target risks 0.05, 0.1, 0.2.
#
#   scripts/identification-fashion.sh            # the three runs of results/own-data
#
# Needs HEDGE_DATA_DIR (Fashion-MNIST) and the runs of results/own-data (their data folder
# data/own/fashion-mnist: see results/own-data/README.md). Writes data/own/search/ (images and
# indexes, not committed) and results/own-data/identification/<run>-<score>-risk<r>/.
set -euo pipefail
{
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
work=data/own/search
out=results/own-data/identification
mkdir -p "$work" "$out"
export_set() { # NAME SPLIT SKIP CLASSES
    [ -d "$work/$1" ] || "$hedge" data export-images --dataset fashion-mnist --split "$2" --per-class "${5:-500}" \
        --skip "$3" --classes "$4" --out "$work/$1"
}
for entry in "fashion-mnist-d8-split1 dress,sandal,t-shirt" "fashion-mnist-d8 coat,shirt,t-shirt" \
    "fashion-mnist-d2 coat,shirt,t-shirt"; do
    set -- $entry
    run=$1 classes=$2 tag=${2//,/-}
    export_set "$tag-gallery" train 0 "$classes" 1000
    export_set "$tag-validation" test 0 "$classes"
    export_set "$tag-probe" test 500 "$classes"
    for score in eta margin; do
        index=$work/index-$run-$score
        "$hedge" hib index --run "results/own-data/$run" --gallery "$work/$tag-gallery" \
            --validation "$work/$tag-validation" --target-risk 0.05 --abstain-by "$score" --threads 1 \
            --out "$index" --overwrite
        for risk in 0.05 0.1 0.2; do
            "$hedge" hib search --index "$index" --probe "$work/$tag-probe" --target-risk "$risk" --threads 1 \
                --out "$out/$run-$score-risk$risk" --overwrite
        done
    done
done
exit
}
