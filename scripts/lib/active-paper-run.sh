# Sourced by scripts/active-paper.sh, scripts/boston-uncensored-paper.sh and
# scripts/power-plant-length-paper.sh: one 40-seed run of `hedge active run` at the authors'
# protocol and the paper recipe into OUT (its log appended to OUT.log). The same command given
# again continues the experiment in OUT from its last finished round. $hedge is the binary.
#
#   active_paper_run OUT [ARGS...]     ARGS: the dataset, methods and ACS-FW form

active_paper_run() {
    local out=$1
    shift
    "$hedge" active run --protocol paper --recipe paper --seeds 40 "$@" --out "$out" >>"$out.log" 2>&1
    echo "$out: done"
}
