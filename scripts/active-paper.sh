#!/usr/bin/env bash
# Issue 34: the four UCI sets of Pinsler et al. at the authors' protocol (`--protocol paper`: 20 +
# 100 = 120 labels, their minibatch rule), 40 seeds, NeuralLinear with the paper recipe:
# Random, MaxEnt, ACS-FW (closed form) and LCMD in results/active/paper-protocol/<set>/, and ACS-FW
# on J = 10 random projections in results/active/paper-protocol/<set>-projections-10/ (the same
# seeds, so the two ACS-FW forms pair seed by seed with `scripts/active-paired.py`).
#
#   scripts/active-paper.sh [SET...]        SET: yacht bostonHousing energy power-plant (default: all)
#
# Each folder continues where it stopped (the same `hedge active run` command, given again), so the script can be started
# again after an interruption, in a later session too. HEDGE (default ./target/release/hedge) is
# the binary.
set -euo pipefail
{
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(yacht bostonHousing energy power-plant)
root=results/active/paper-protocol
mkdir -p "$root"
# shellcheck source=scripts/lib/active-paper-run.sh
source scripts/lib/active-paper-run.sh
for set in "${sets[@]}"; do
    active_paper_run "$root/$set" --dataset "uci/$set" --method random,maxent,acs-fw,lcmd --closed-form
    active_paper_run "$root/$set-projections-10" --dataset "uci/$set" --method acs-fw --projections 10
done
exit
}
