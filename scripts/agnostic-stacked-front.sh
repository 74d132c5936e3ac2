#!/usr/bin/env bash
# Issue 83, item 3: erasers stacked on adversarially trained networks (`--erase-on-alpha`): the
# network trains with its own adversary at that α, then a post-hoc eraser removes what the
# adversary left, and G_y is retrained on the erased features. 3 repeats each:
#   ctx-hsic09-kernel-rN   reweighing + HSIC + 64-unit bottleneck at α = 0.9 (the best method's
#                          strongest setting), then N rounds of kernel erasure
#   ctx-hsic09-qleace      the same network, then quadratic LEACE (an oracle: it reads each row's
#                          concept)
#   ctx-twinlab05-kernel-rN  the twin ceiling (twins labelled, 64-unit bottleneck) at α = 0.5, then
#                          N rounds of kernel erasure
#   adult-grl07-kernel-rN  Adult, GRL with 50 G_p updates at α = 0.7, then N rounds
#
#   HEDGE_DATA_DIR=../shared/data scripts/agnostic-stacked-front.sh
#
# Sweeps go to results/agnostic/stacked-front/<name> (a finished one is skipped); the fronts to
# results/agnostic/ladder-front-{context,adult}/ with every sweep of scripts/agnostic-ladder-front.sh.
# JOBS picks a subset (two copies with disjoint lists use two cores).
set -euo pipefail
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
root=results/agnostic/stacked-front
mkdir -p "$root"
jobs=${JOBS:-ctx-hsic09-kernel-r1 ctx-hsic09-kernel-r2 ctx-hsic09-kernel-r4 ctx-hsic09-qleace ctx-twinlab05-kernel-r1 ctx-twinlab05-kernel-r2 adult-grl07-kernel-r1 adult-grl07-kernel-r3}
for name in $jobs; do
  out="$root/$name"
  [ -f "$out/summary.json" ] && continue
  case "$name" in
    ctx-hsic09-*) flags=(--dataset context-mnist --reweigh --adversary hsic --bottleneck 64 --erase-on-alpha 0.9) ;;
    ctx-twinlab05-*) flags=(--dataset context-mnist --adversary twin-labelled --bottleneck 64 --erase-on-alpha 0.5) ;;
    adult-grl07-*) flags=(--dataset adult --adversary-steps 50 --erase-on-alpha 0.7) ;;
    *) echo "agnostic-stacked-front: unknown job '$name'" >&2; exit 2 ;;
  esac
  case "$name" in
    *-kernel-r*) flags+=(--removal kernel --eraser-param "rounds=${name##*-r}") ;;
    *-qleace) flags+=(--removal quadratic-leace) ;;
  esac
  "$hedge" agnostic sweep "${flags[@]}" --alphas 1 --repeats 3 --threads 1 --out "$out" > "$out.log" 2>&1
done
