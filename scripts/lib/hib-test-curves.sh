# Sourced by scripts/hib-table.sh (and, in the history, the instance lever script studies/hib/instance-levers.toml replaced): the four Table 1 numbers
# on the test split against training minutes for the given runs (the test watches in each run's
# monitor.jsonl, each run labelled by its folder's name): OUT (when each first reached the
# paper's value, or its best and when) and one PNG per number beside it. $hedge is the binary;
# nothing is drawn without runs.
#
#   hib_test_curves OUT [RUN_DIR...]

hib_test_curves() {
    local out=$1 run
    shift
    [ $# -gt 0 ] || return 0
    local labelled=()
    for run in "$@"; do
        labelled+=("$(basename "$run")=$run")
    done
    "$hedge" hib time-to-quality --runs "$(IFS=,; echo "${labelled[*]}")" --set test \
        --out "$out" --overwrite >/dev/null
}
