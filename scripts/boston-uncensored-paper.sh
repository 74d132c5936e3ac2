#!/usr/bin/env bash
# boston without its 16 censored targets at the authors' protocol (issue 34): ACS-FW in both
# forms (closed form; J = 10 projections), 40 seeds, `--protocol paper` — the check, at 120
# labels, of what results/active/boston-uncensored/ measured at hedge's 100-label protocol (that
# the top-coded rows are what keeps boston above Pinsler et al.'s Table 1).
#
#   scripts/boston-uncensored-paper.sh [COPY]     COPY: where the copy of the data goes
#                                                 (default ../boston-uncensored-data, kept)
#
# Runs go to results/active/boston-uncensored/paper-protocol{,-projections-10}/ and resume where
# they stopped (the copy is re-made, byte for byte, if it is gone). HEDGE is the binary (default
# ./target/release/hedge); HEDGE_DATA_DIR the source data.
set -euo pipefail
{
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
copy=${1:-../boston-uncensored-data}
[ -d "$copy/uci/bostonHousing" ] || python3 scripts/boston-uncensored.py "${HEDGE_DATA_DIR:-./data}" "$copy"
export HEDGE_DATA_DIR="$copy"
root=results/active/boston-uncensored
mkdir -p "$root"
# shellcheck source=scripts/lib/active-paper-run.sh
source scripts/lib/active-paper-run.sh
active_paper_run "$root/paper-protocol" --dataset uci/bostonHousing --method acs-fw --closed-form
active_paper_run "$root/paper-protocol-projections-10" --dataset uci/bostonHousing --method acs-fw --projections 10
exit
}
