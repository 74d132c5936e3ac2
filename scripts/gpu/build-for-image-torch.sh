#!/usr/bin/env bash
# Builds `hedge` against another libtorch than the project's 2.13.0: the one a GPU machine's
# image already holds (torch 2.11.0+cu130 on the device machines so far). libtorch 2.13's CUDA
# libraries (about 1 GB) cannot travel to such a machine; the image's own can be used in place.
#
#   scripts/gpu/build-for-image-torch.sh [TORCH_VERSION]      -> .gpu/hedge (+ .gpu/lib, .gpu/data)
#
# tch 0.26's generated wrapper names 15 operators that torch 2.11 lacks (philox keys, lanczos
# upsampling, a flash-attention variant, an MPS attention signature); hedge uses none of them,
# so a copy of torch-sys without them is patched in, in a copy of the workspace (the
# repository's own build is untouched). The binary loads the image's libtorch through
# LD_LIBRARY_PATH and its CUDA backend through LD_PRELOAD (scripts/gpu/hib-paper-schedule.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
version=${1:-2.11.0}
work=${WORK:-/tmp/hedge-torch-$version}
mkdir -p "$work"
if [ ! -f "$work/site/torch/lib/libtorch_cpu.so" ]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 -d "$work" "torch==$version"
  python3 -m zipfile -e "$work"/torch-"$version"-*.whl "$work/site"
fi
rm -rf "$work/torch-sys" "$work/ws"
cp -r "$(dirname "$(cargo metadata --format-version 1 --manifest-path "$root/Cargo.toml" \
  | python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="torch-sys"))')")" \
  "$work/torch-sys"
python3 - "$work/torch-sys/libtch/torch_api_generated.cpp" <<'PY'
import re, sys
missing = {"_flash_attention_forward_no_dropout_inplace", "_philox_key_fold_in", "_philox_key_split",
           "_philox_normal", "_philox_normal_", "_philox_normal_out", "_philox_uniform", "_philox_uniform_",
           "_philox_uniform_out", "_scaled_dot_product_attention_math_for_mps", "_upsample_lanczos2d_aa",
           "_upsample_lanczos2d_aa_backward", "_upsample_lanczos2d_aa_backward_grad_input",
           "_upsample_lanczos2d_aa_out", "_upsample_lanczos2d_aa_vec"}
path = sys.argv[1]
out, skip = [], False
for line in open(path).read().split("\n"):
    m = re.match(r"^\S.*\batg_(\w+)\(", line)
    if m and m.group(1) in missing and not line.rstrip().endswith(";"):
        skip = True
    if not skip:
        out.append(line)
    if skip and line == "}":
        skip = False
open(path, "w").write("\n".join(out))
PY
mkdir -p "$work/ws"
cp -r "$root/Cargo.toml" "$root/Cargo.lock" "$root/crates" "$work/ws/"
sed -i 's/, "python"\]/]/' "$work/ws/Cargo.toml"
printf '\n[patch.crates-io]\ntorch-sys = { path = "%s" }\n' "$work/torch-sys" >>"$work/ws/Cargo.toml"
(cd "$work/ws" && LIBTORCH="$work/site/torch" LIBTORCH_BYPASS_VERSION_CHECK=1 \
  RUSTFLAGS="-C link-arg=-Wl,-rpath-link,$root/.libtorch/site/nvidia/cu13/lib" \
  cargo build --release -p hedge-cli --target-dir "$work/target")
# What travels: the binary, the system libraries the image lacks (fontconfig and freetype for
# the plots, with their own needs), the N = 2 instance tables with MNIST and the tables' recipe.
mkdir -p "$root/.gpu/lib" "$root/.gpu/data/n-digit-mnist/standard_datasets" "$root/.gpu/data/mnist"
cp "$work/target/release/hedge" "$root/.gpu/hedge"
for n in fontconfig.so.1 freetype.so.6 png16.so.16 brotlidec.so.1 brotlicommon.so.1 expat.so.1; do
  cp -L "/lib/x86_64-linux-gnu/lib$n" "$root/.gpu/lib/"
done
data=${HEDGE_DATA_DIR:-$root/data}
cp "$data"/n-digit-mnist/standard_datasets/dataset_mnist_2_instance_*.npz "$root/.gpu/data/n-digit-mnist/standard_datasets/"
cp "$data"/mnist/*.gz "$root/.gpu/data/mnist/"
cp "$root/scripts/gpu/hib-paper-schedule.sh" "$root/.gpu/run.sh"
cp "$root/results/hib/recipe.toml" "$root/.gpu/recipe.toml"
grep -qx '/.gpu/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu/' >>"$root/.git/info/exclude"
echo "built $root/.gpu/hedge against torch $version"
