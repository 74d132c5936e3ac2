#!/usr/bin/env bash
# The instance tables' runs scored on a second test set, `test_seen`: the number tables' test
# images of training classes, 100 classes of 100 images at N = 3 (70 of 142 at N = 2), MNIST
# test digits like the instance test images. At N = 3 it is the test set the paper's first
# version describes (its Appendix A: "for testing, we decided to enforce a minimal number of
# samples per class ... we limited the number of classes in the test set to 100 seen and unseen
# classes"), where the instance test table has 1,000 classes of 10 images; under the instance
# protocol every one of its classes is a training class.
#
#   scripts/hib-test-seen.sh [SETTING...]     SETTING: n3-d2 n3-d3 (default) or n2-d2, n2-d3
#
# Each Table 1 run of results/hib/SETTING/runs/ is evaluated (`hedge hib eval --split test_seen
# --json`, the evaluation settings of the tables) with the weights its table scored
# (model_best.safetensors where validation chose them) into
# results/hib/test-seen/SETTING/<run>.json; a run with a report there is skipped. HEDGE (the
# binary, default ./target/release/hedge) and THREADS (default 2) may be set in the environment.
set -euo pipefail
{
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/hib-eval-scored.sh
source scripts/lib/hib-eval-scored.sh
hedge=${HEDGE:-./target/release/hedge}
settings=("$@")
[ ${#settings[@]} -gt 0 ] || settings=(n3-d2 n3-d3)
for setting in "${settings[@]}"; do
    case "$setting" in
    n2-d2 | n2-d3 | n3-d2 | n3-d3) ;;
    *)
        echo "unknown setting '$setting' (n2-d2, n2-d3, n3-d2, n3-d3)" >&2
        exit 2
        ;;
    esac
    out=results/hib/test-seen/$setting
    mkdir -p "$out"
    for run in results/hib/"$setting"/runs/{point,mog1,mog2}-seed*; do
        # Only runs whose table scored them (their eval.json written at the end of training).
        [ -f "$run/eval.json" ] || continue
        report=$out/$(basename "$run").json
        [ -f "$report" ] && continue
        hib_eval_scored "$run" test_seen "$report" "${THREADS:-2}"
        echo "$report"
    done
done
exit
}
