#!/usr/bin/env bash
# The installed-wheel check (scripts/test.sh runs it): hedge's Python tests against the wheel
# installed in a fresh environment outside the repository, where no Rust toolchain is on the PATH.
#
#   bash scripts/test-wheel.sh env              a fresh environment: torch==2.13.0 (HEDGE_TORCH) and NumPy (what the
#                                               wheel needs), then the test suite's own tools
#   bash scripts/test-wheel.sh install WHEEL    installs the wheel there with the README's install line,
#                                               `pip install WHEEL` (dependencies resolved, no --no-deps),
#                                               and fails unless `pip freeze` shows the same torch after as
#                                               before (the wheel's torch range holds the one there)
#   bash scripts/test-wheel.sh pytest ARGS...   python -m pytest ARGS in that environment
#
# install and pytest run with every folder that holds cargo or rustc taken off the PATH. The
# environment: $HEDGE_WHEEL_ENV, default a folder under ${TMPDIR:-/tmp} named after this checkout
# (and the torch release). HEDGE_TORCH=2.15.0: an environment with that torch (scripts/torch-releases.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
torch="${HEDGE_TORCH:-2.13.0}"
env_dir="${HEDGE_WHEEL_ENV:-${TMPDIR:-/tmp}/hedge-wheel-env-$(printf '%s' "$root" | sha256sum | cut -c1-12)${HEDGE_TORCH:+-torch$HEDGE_TORCH}}"
python="${PYTHON:-python3}"
case "$env_dir" in
  "$root" | "$root"/*) echo "test-wheel: HEDGE_WHEEL_ENV must lie outside the repository ($env_dir)" >&2; exit 2 ;;
esac
# The PATH without cargo and rustc.
without_rust() {
  local kept=() dir
  local IFS=:
  for dir in $PATH; do
    [ -n "$dir" ] && { [ -x "$dir/cargo" ] || [ -x "$dir/rustc" ]; } && continue
    kept+=("$dir")
  done
  printf '%s' "${kept[*]}"
}
pip() { "$env_dir/bin/python" -m pip --disable-pip-version-check "$@"; }
case "${1:-}" in
  env)
    rm -rf "$env_dir"
    "$python" -m venv "$env_dir"
    pip install --quiet "torch==$torch" "numpy>=1.24"
    echo "test-wheel: a fresh $env_dir with $(pip freeze | grep -iE '^(torch|numpy)==' | paste -sd' ') (and their dependencies)" >&2
    # The test suite's own tools.
    pip install --quiet pytest "hypothesis>=6.100" "scikit-learn>=1.6" matplotlib safetensors "ray[data]==2.60.0"
    ;;
  install)
    wheel="${2:?test-wheel: install needs the path of the wheel}"
    [ -x "$env_dir/bin/python" ] || { echo "test-wheel: no environment at $env_dir: run 'scripts/test-wheel.sh env' first" >&2; exit 1; }
    # A wheel installed there before goes first, so that `before` is the environment without it.
    PATH="$(without_rust)" pip uninstall --quiet --yes hedge-ml >/dev/null 2>&1 || true
    pip freeze --all >"$env_dir/freeze-before.txt"
    # The README's install line: pip resolves the wheel's dependencies against what is installed.
    PATH="$(without_rust)" pip install --quiet "$wheel"
    pip freeze --all >"$env_dir/freeze-after.txt"
    torch_before="$(grep -i '^torch==' "$env_dir/freeze-before.txt" || true)"
    torch_after="$(grep -i '^torch==' "$env_dir/freeze-after.txt" || true)"
    if [ "$torch_before" != "$torch_after" ]; then
      echo "test-wheel: installing $(basename "$wheel") changed torch: '$torch_before' before, '$torch_after' after" >&2
      exit 1
    fi
    # What the install changed, by name: +added, -removed (a changed version shows as both).
    changed="$({ diff "$env_dir/freeze-before.txt" "$env_dir/freeze-after.txt" || true; } |
      sed -n 's/^> \([^=@ ]*\).*/+\1/p; s/^< \([^=@ ]*\).*/-\1/p' | paste -sd' ')"
    echo "test-wheel: installed $(basename "$wheel") into $env_dir; pip freeze before and after: $torch_after both times; changed: ${changed:-nothing}" >&2
    PATH="$(without_rust)" pip check >&2
    ;;
  pytest)
    shift
    [ -x "$env_dir/bin/python" ] || { echo "test-wheel: no environment at $env_dir: run 'scripts/test-wheel.sh env' first" >&2; exit 1; }
    # Run from the repository root: python/ is not on the path, so `import hedge` is the wheel's.
    cd "$root"
    HEDGE_INSTALLED_WHEEL=1 PATH="$(without_rust)" exec "$env_dir/bin/python" -m pytest "$@"
    ;;
  *) echo "test-wheel: use 'env', 'install WHEEL' or 'pytest ARGS...'" >&2; exit 2 ;;
esac
