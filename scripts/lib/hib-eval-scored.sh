# Sourced by scripts/hib-test-seen.sh (and, in the history, the lever scripts studies/hib/*.toml replaced):
# a run's report on a split with the weights its table scores (model_best.safetensors where
# validation chose them, else its own), as JSON into OUT (written beside it, then renamed).
# $hedge is the binary.
#
#   hib_eval_scored RUN_DIR SPLIT OUT THREADS

hib_eval_scored() {
    local run=$1 split=$2 out=$3 threads=$4
    local weights=()
    [ -f "$run/model_best.safetensors" ] && weights=(--weights "$run/model_best.safetensors")
    "$hedge" hib eval --run "$run" --split "$split" ${weights[@]+"${weights[@]}"} --json --threads "$threads" \
        >"$out.tmp"
    mv "$out.tmp" "$out"
}
