#!/usr/bin/env bash
# Issue 83, item 3: iterative kernel erasure (`--removal kernel`) against the probe ladder, its
# strength (the number of rounds) swept to a front, 3 repeats each, on Context-MNIST (a reweighed
# network with a 64-unit bottleneck, as the best method's) and on Adult; then the fronts beside
# the best method's ladder sweeps.
#
#   HEDGE_DATA_DIR=../shared/data scripts/agnostic-ladder-front.sh
#
# Sweeps go to results/agnostic/kernel-front/<ctx|adult>-kernel-r<rounds> (a finished one is
# skipped); the fronts to results/agnostic/ladder-front-{context,adult}/, with the stacked erasers'
# sweeps (scripts/agnostic-stacked-front.sh) where they have run. About 3 min per
# Context-MNIST network and 1 min per Adult network on one thread; run two copies with disjoint
# job lists to use two cores (JOBS="ctx:1 ctx:2" ...).
set -euo pipefail
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
root=results/agnostic/kernel-front
mkdir -p "$root"
# A job is DATA:ROUNDS, or DATA:ROUNDS:task for the eraser told the task (keep-task=1).
jobs=${JOBS:-ctx:1 ctx:2 ctx:4 ctx:8 adult:1 adult:3 adult:8 ctx:4:task ctx:8:task adult:3:task adult:8:task}
for job in $jobs; do
  IFS=: read -r data rounds task <<< "$job"
  params=(--eraser-param "rounds=$rounds")
  name="$data-kernel-r$rounds"
  if [ "$task" = task ]; then
    params+=(--eraser-param keep-task=1)
    name="$data-kernel-task-r$rounds"
  fi
  if [ "$data" = ctx ]; then
    flags=(--dataset context-mnist --reweigh --bottleneck 64)
  else
    flags=(--dataset adult)
  fi
  out="$root/$name"
  [ -f "$out/summary.json" ] && continue
  "$hedge" agnostic sweep "${flags[@]}" --removal kernel "${params[@]}" --alphas 1 --repeats 3 \
    --threads 1 --out "$out" > "$out.log" 2>&1
done
# The sweep folders of one dataset, comma-separated (their logs left out), with the stacked
# erasers of scripts/agnostic-stacked-front.sh where they have run.
folders() {
  find "$root" results/agnostic/stacked-front -mindepth 1 -maxdepth 1 -type d -name "$1-*" 2>/dev/null |
    while read -r d; do [ -f "$d/summary.json" ] && echo "$d"; done | sort | paste -sd, -
}
ctx="results/agnostic/context-mnist,$(folders ctx)"
adult="results/agnostic/adult-grl-k50-ladder,$(folders adult)"
"$hedge" agnostic pareto --sweeps "$ctx" --out results/agnostic/ladder-front-context --overwrite
"$hedge" agnostic pareto --sweeps "$adult" --out results/agnostic/ladder-front-adult --overwrite
