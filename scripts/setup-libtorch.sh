#!/usr/bin/env bash
# Installs libtorch 2.13.0 from the PyPI torch wheel into .libtorch/site, once.
# For CPU three wheels are enough (libc10/libtorch_cpu link against libcudart and libcupti);
# HEDGE_CUDA=1 also installs torch's CUDA dependencies so `--device cuda` works.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
site="$root/.libtorch/site"
want="torch==2.13.0 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85"
stamp="$site/.hedge-installed"
[ "${HEDGE_CUDA:-0}" = 1 ] && want="$want +cuda"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$site/torch/lib/libtorch_cpu.so" ]; then
  exit 0
fi
python="${PYTHON:-python3}"
if ! "$python" -m pip --version >/dev/null 2>&1; then
  echo "setup-libtorch: '$python -m pip' is not available; install Python 3 with pip (or set PYTHON)" >&2
  exit 1
fi
echo "setup-libtorch: installing libtorch 2.13.0 (PyPI wheel) into $site" >&2
rm -rf "$site.partial"
mkdir -p "$site.partial"
if [ "${HEDGE_CUDA:-0}" = 1 ]; then
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$site.partial" torch==2.13.0
else
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$site.partial" \
    torch==2.13.0 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85
fi
# Replace atomically so an interrupted install never leaves a half-filled .libtorch/site.
rm -rf "$site"
mv "$site.partial" "$site"
echo "$want" > "$stamp"
echo "setup-libtorch: done" >&2
