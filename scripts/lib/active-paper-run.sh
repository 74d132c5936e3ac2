# Sourced by scripts/active-paper.sh, scripts/boston-uncensored-paper.sh and
# scripts/power-plant-length-paper.sh: one 40-seed run of `hedge active run` at the authors'
# protocol and the paper recipe into OUT, resumed from its checkpoint when OUT already holds one
# (its log appended to OUT.log). $hedge is the binary.
#
#   active_paper_run OUT [ARGS...]     ARGS: the dataset, methods and ACS-FW form

active_paper_run() {
    local out=$1
    shift
    if [ -f "$out/config.json" ]; then
        "$hedge" active run --resume "$out" >>"$out.log" 2>&1
    else
        "$hedge" active run --protocol paper --recipe paper --seeds 40 "$@" --out "$out" >"$out.log" 2>&1
    fi
    echo "$out: done"
}
