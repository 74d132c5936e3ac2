#!/usr/bin/env bash
# Issue 33, item 6, and issue 79, item 5: on one CUDA GPU, all runs at once, N = 2, D = 2,
# instance protocol:
#   gaussian-seed0, point-seed0: the paper's schedule (independent batches of 128 pairs, Adam 1e-3
#     constant, beta 1e-4, 500,000 steps, f32) for MoG-1 and point;
#   recipe-gaussian-seed0: the tables' recipe (results/hib/recipe.toml, the best lever combination
#     the CPU studies chose by validation: grouped batches, AdamW with weight decay, warm-up and a
#     cosine decay, a hidden layer) for MoG-1 at 100,000 steps, the cosine spread over all of them.
# Runs on the GPU machine as .gpu/run.sh, with the hedge that scripts/gpu/build-for-image-torch.sh
# built against the image's libtorch (libtorch 2.13's CUDA libraries, about 1 GB, cannot travel
# there). Trains for SECONDS, stops the runs (they continue from their last 1,000-step
# checkpoint; a run that has reached its steps ends by itself) and packs them into
# $OUT/runs.tar.xz. RUNS (space-separated names from the list above) trains fewer.
#
# To continue the committed runs (results/hib/paper-schedule-gpu/README.md says it step by step):
#   tar -C results/hib/paper-schedule-gpu -cJf .gpu/runs.tar.xz --ignore-failed-read \
#     gaussian-seed0 point-seed0 recipe-gaussian-seed0 sessions.jsonl
# then run `bash .gpu/run.sh SECONDS` there and unpack what comes back over that folder.
set -u
seconds=${1:-500}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
out=${OUT:-/tmp/out}
mkdir -p "$out" runs
if [ -f runs.tar.xz ]; then tar -C runs -xJf runs.tar.xz; fi
TL=$(python3 -c "import torch,os;print(os.path.dirname(torch.__file__))")/lib
python3 -c "import torch;print('torch', torch.__version__, torch.cuda.get_device_name())"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
export LD_LIBRARY_PATH=$TL:$here/lib HEDGE_DATA_DIR=$here/data OMP_WAIT_POLICY=passive
export LD_PRELOAD=$TL/libtorch_cuda.so
chmod +x ./hedge
./hedge --version || { echo "hedge does not start"; ldd ./hedge; exit 3; }
read -r -a runs <<<"${RUNS:-gaussian-seed0 point-seed0 recipe-gaussian-seed0}"
# Each run's own settings; --continue starts the run, or continues it from its last checkpoint
# with the settings it began with.
settings() {
  case "$1" in
  gaussian-seed0) echo --model gaussian --batch 128 --steps 500000 --precision f32 ;;
  point-seed0) echo --model point --batch 128 --steps 500000 --precision f32 ;;
  recipe-gaussian-seed0) echo --config recipe.toml --model gaussian --steps 100000 ;;
  *) echo "unknown run '$1' (gaussian-seed0, point-seed0, recipe-gaussian-seed0)" >&2; return 2 ;;
  esac
}
for run in "${runs[@]}"; do settings "$run" >/dev/null || exit 2; done
# Where each run stands before this call, for the line this call adds to runs/sessions.jsonl.
state() { python3 -c 'import json,sys
try: s = json.load(open(sys.argv[1]))
except OSError: s = {"step": 0, "seconds": 0.0}
print(s["step"], s["seconds"])' "runs/$1/state.json"; }
declare -A before
for run in "${runs[@]}"; do before[$run]=$(state "$run"); done
pids=()
for run in "${runs[@]}"; do
  # shellcheck disable=SC2046 # settings() prints flags meant to split
  ./hedge hib train --protocol instance --digits 2 --dim 2 $(settings "$run") --seed 0 --device cuda \
    --keep-every 10000 --no-eval --threads 4 --out "runs/$run" --continue >>"runs/$run.log" 2>&1 &
  pids+=($!)
done
# Polls rather than sleeping the whole budget: a run that fails at once (a library missing on a
# new image, say) returns the machine in seconds instead of holding it idle.
started=$SECONDS
reported=0
while [ $((SECONDS - started)) -lt "$seconds" ]; do
  alive=0
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=$((alive + 1)); done
  if [ "$alive" -eq 0 ]; then echo "every run ended after $((SECONDS - started)) s"; break; fi
  if [ "$reported" -eq 0 ] && [ $((SECONDS - started)) -ge 45 ]; then
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
    for run in "${runs[@]}"; do tail -n 2 "runs/$run.log"; done
    reported=1
  fi
  sleep 5
done
kill -TERM "${pids[@]}" 2>/dev/null
wait "${pids[@]}"
for run in "${runs[@]}"; do
  echo "== $run"; tail -n 3 "runs/$run.log"
  cat "runs/$run/state.json"; echo
done
# One line per call: the date, the GPU and each run's steps and training seconds before and after.
args=()
for run in "${runs[@]}"; do args+=("$run" "${before[$run]}" "$(state "$run")"); done
python3 - "$(date -u +%F)" "${args[@]}" <<'PY' >>runs/sessions.jsonl
import json, sys, torch
date, rest, runs = sys.argv[1], sys.argv[2:], {}
for name, a, b in zip(rest[0::3], rest[1::3], rest[2::3]):
    (s0, t0), (s1, t1) = a.split(), b.split()
    runs[name] = {"from_step": int(s0), "from_seconds": float(t0), "to_step": int(s1), "to_seconds": float(t1)}
print(json.dumps({"date": date, "device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": runs}))
PY
tail -n 1 runs/sessions.jsonl
tar -C runs -cJf "$out/runs.tar.xz" . && ls -la "$out"
