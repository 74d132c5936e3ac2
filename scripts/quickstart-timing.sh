#!/usr/bin/env bash
# The main job's training time on this machine, as a user without native bf16 meets it and as
# one with it (issue 79, item 4): scripts/quickstart.sh twice, once with oneDNN and ATen held to
# AVX2 (ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2: no bf16 dot products, so `auto` trains
# f32 convolutions) and once as the machine is. Each run's training seconds (state.json), steps,
# convolution precision (config.json) and verification AP on the instance test split
# (verification.json) go to results/hib/quickstart/<setting>.json, with the CPU's model name and
# thread count; README.md's `hib:quickstart` block is generated from them.
#
#   scripts/quickstart-timing.sh [avx2|native|no-bf16]...    (default: avx2 native)
#
# no-bf16: as the machine is, on a CPU that has no native bf16 dot products (refused on one that
# has them): the user the avx2 setting imitates, measured on such a CPU itself
# (results/hib/quickstart/no-bf16.json).
#
# Nothing else should run on the machine meanwhile: the numbers are wall-clock.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/native-bf16.sh
source scripts/lib/native-bf16.sh
out=results/hib/quickstart
mkdir -p runs
mkdir -p "$out"
settings=("$@")
[ ${#settings[@]} -gt 0 ] || settings=(avx2 native)
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
for setting in "${settings[@]}"; do
    run=runs/quickstart-timing-$setting
    rm -rf "$run"
    case "$setting" in
    avx2) env_vars=(ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2) ;;
    native) env_vars=() ;;
    no-bf16)
        env_vars=()
        if native_bf16; then
            echo "no-bf16: this CPU has native bf16 dot products; use the avx2 setting here" >&2
            exit 2
        fi
        ;;
    *) echo "unknown setting '$setting' (avx2, native, no-bf16)" >&2; exit 2 ;;
    esac
    started=$(date +%s.%N)
    env ${env_vars[@]+"${env_vars[@]}"} bash scripts/quickstart.sh "$run" > "$run.log" 2>&1
    ended=$(date +%s.%N)
    python3 - "$run" "$out/$setting.json" "$setting" "$cpu" "$(nproc)" "$started" "$ended" "${env_vars[*]-}" <<'PY'
import json, sys
run, path, setting, cpu, cores, started, ended, env = sys.argv[1:]
load = lambda name: json.load(open(f"{run}/{name}"))
state, config, check = load("state.json"), load("config.json"), load("verification.json")
result = {
    "setting": setting,
    "environment": env,
    "cpu": cpu,
    "cores": int(cores),
    "conv_precision": config["hib"]["conv_precision"],
    "hidden_units": config["hib"]["hidden_units"],
    "steps": state["step"],
    "train_seconds": state["seconds"],
    "quickstart_wall_seconds": float(ended) - float(started),
    "ap_clean": check["variants"]["clean"]["verification_ap"],
    "ap_corrupt": check["variants"]["corrupt"]["verification_ap"],
    "split": check["split"],
    "command": "scripts/quickstart-timing.sh " + setting,
}
with open(path + ".tmp", "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
import os
os.replace(path + ".tmp", path)
print(json.dumps(result))
PY
done
