#!/usr/bin/env bash
# The main job in one command: train a 2-D Gaussian hedged instance embedding on 2-digit MNIST
# (a short run of scripts/quickstart-recipe.toml, the paper's instance protocol: all 100
# classes), check its verification AP on the
# test split (other images of the same classes), and embed that test set, clean and occluded,
# into .npz files. Installs libtorch and builds `hedge` if needed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup-libtorch.sh
cargo build --release --quiet -p hedge-cli
hedge="$root/target/release/hedge"
run="${1:-runs/quickstart-$(date +%Y%m%d-%H%M%S)}"
steps="${HEDGE_QUICKSTART_STEPS:-400}"
"$hedge" hib train --config scripts/quickstart-recipe.toml --digits 2 --dim 2 --steps "$steps" --out "$run"
"$hedge" hib embed --run "$run" --split test --variant clean --out "$run/test_clean.npz"
"$hedge" hib embed --run "$run" --split test --variant corrupt --out "$run/test_corrupt.npz"
echo
echo "outputs in $run:"
ls -1 "$run" | sed 's/^/  /'
echo "load them with: python3 -c \"import numpy as np; d = np.load('$run/test_clean.npz'); print({k: d[k].shape for k in d})\""
