#!/usr/bin/env bash
# power-plant at 300 and 100 epochs at the authors' protocol (issue 34): the check, at 120 labels, of
# what results/active/training-length/ and power-plant-300-epochs/ measured at hedge's 100-label
# protocol (that NeuralLinear's 1,000 epochs over-train power-plant, and that this, not the
# acquisition, keeps every method above Pinsler et al.'s Table 1). 40 seeds, the four methods
# with ACS-FW in closed form, and an exact GP fitted on every method's labels beside NeuralLinear
# (`--score-with-gp`: what the labels allow a model that is not over-trained); then ACS-FW on
# J = 10 projections, the same seeds.
#
#   scripts/power-plant-length-paper.sh
#
# Runs go to results/active/power-plant-300-epochs-paper-protocol{,-projections-10}/ (beside
# power-plant-300-epochs/, the same at hedge's protocol) and
# results/active/power-plant-100-epochs-paper-protocol/, and resume where they stopped. HEDGE is
# the binary (default ./target/release/hedge); HEDGE_DATA_DIR the data.
set -euo pipefail
{
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
root=results/active
# shellcheck source=scripts/lib/active-paper-run.sh
source scripts/lib/active-paper-run.sh
active_paper_run "$root/power-plant-300-epochs-paper-protocol" --dataset uci/power-plant --method random,maxent,acs-fw,lcmd \
    --closed-form --epochs 300 --score-with-gp
active_paper_run "$root/power-plant-300-epochs-paper-protocol-projections-10" --dataset uci/power-plant --method acs-fw \
    --projections 10 --epochs 300 --score-with-gp
active_paper_run "$root/power-plant-100-epochs-paper-protocol" --dataset uci/power-plant \
    --method random,maxent,acs-fw,lcmd --closed-form --epochs 100
exit
}
