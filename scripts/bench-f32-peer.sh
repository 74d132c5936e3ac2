#!/usr/bin/env bash
# hedge's f32 training speed beside PyTorch's on the same CPU (issue 79, item 4): `hedge bench
# train --precision f32` (the HIB network, MoG-1, 256 images a step) against the plain-PyTorch
# reference's `--bench` (the same network and batch, reference/hib/hib_reference.py), contiguous
# and channels-last, each with oneDNN and ATen held to AVX2 and as the machine is, in turn,
# REPEATS times (default 3), 2 threads. Images/s of each try go to results/bench/hib-f32-peer.json;
# README.md's `hib:f32-peer` block is generated from it. Nothing else should run meanwhile.
#
# On a CPU without native bf16 the AVX2 limits change nothing, so there
#   SETTINGS=native OUT=results/bench/hib-f32-peer-no-bf16.json scripts/bench-f32-peer.sh
# measures that CPU as it is, into a file of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
hedge=${HEDGE:-./target/release/hedge}
python=${PYTHON:-.venv/bin/python}
repeats=${REPEATS:-3}
read -r -a settings <<< "${SETTINGS:-avx2 native}"
out=${OUT:-results/bench/hib-f32-peer.json}
command="scripts/bench-f32-peer.sh"
[ -z "${SETTINGS:-}" ] || command="SETTINGS=${SETTINGS} OUT=$out $command"
steps=${STEPS:-20}
export OMP_WAIT_POLICY=passive
tries=()
for ((r = 0; r < repeats; r++)); do
    for setting in "${settings[@]}"; do
        env_vars=()
        [ "$setting" = avx2 ] && env_vars=(ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2)
        h=$(env ${env_vars[@]+"${env_vars[@]}"} "$hedge" bench train --precision f32 --threads 2 --steps "$steps" --json 2>/dev/null |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["train_images_per_s"])')
        p=$(env ${env_vars[@]+"${env_vars[@]}"} "$python" reference/hib/hib_reference.py --bench "$steps" --precision f32 2>/dev/null |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["images_per_second"])')
        c=$(env ${env_vars[@]+"${env_vars[@]}"} "$python" reference/hib/hib_reference.py --bench "$steps" --precision f32 --channels-last 2>/dev/null |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["images_per_second"])')
        tries+=("{\"setting\": \"$setting\", \"hedge\": $h, \"pytorch\": $p, \"pytorch_channels_last\": $c}")
        echo "$setting: hedge $h, pytorch $p, pytorch channels-last $c" >&2
    done
done
mkdir -p "$(dirname "$out")"
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
torch=$("$python" -c 'import torch; print(torch.__version__)')
{
    printf '{\n  "cpu": "%s",\n  "threads": 2,\n  "steps_timed": %s,\n  "torch": "%s",\n  "command": "%s",\n  "tries": [\n' "$cpu" "$steps" "$torch" "$command"
    for ((i = 0; i < ${#tries[@]}; i++)); do
        printf '    %s%s\n' "${tries[$i]}" "$([ $i -lt $((${#tries[@]} - 1)) ] && echo ,)"
    done
    printf '  ]\n}\n'
} > "$out.tmp"
mv "$out.tmp" "$out"
