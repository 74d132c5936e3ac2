#!/usr/bin/env bash
# Runs every test of the workspace, Rust and Python. Installs libtorch first if needed (scripts/setup-libtorch.sh).
# Data: $HEDGE_DATA_DIR (default ./data) must hold mnist/, fashion-mnist/, n-digit-mnist/, uci/, bsds500/ and adult/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Where the time goes, printed at the end (and on failure): CI machines differ several-fold in
# speed (the same suite took 24 min on an Intel Xeon with native bf16 and over 44 on a
# first-generation AMD EPYC), and the log says which CPU ran it.
# Each phase's share of the cores kept busy (from /proc/stat) says whether it waited on
# something or had more work than cores.
cpu_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6; exit}' /proc/stat 2>/dev/null || echo "0 0"; }
phase_name=setup phase_start=$(date +%s) suite_start=$(date +%s)
read -r phase_busy phase_idle < <(cpu_ticks)
phases=()
phase() {
  local now busy idle share=""
  now=$(date +%s)
  read -r busy idle < <(cpu_ticks)
  if [ $((busy + idle - phase_busy - phase_idle)) -gt 0 ]; then
    share=$(printf ', cores %d %% busy' $((100 * (busy - phase_busy) / (busy + idle - phase_busy - phase_idle))))
  fi
  phases+=("$(printf '%5d s  %s%s' $((now - phase_start)) "$phase_name" "$share")")
  phase_name=$1 phase_start=$now phase_busy=$busy phase_idle=$idle
}
report_phases() {
  phase end
  echo "test: time by phase on$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) cores:" >&2
  printf 'test: %s\n' "${phases[@]}" >&2
  echo "test: $(($(date +%s) - suite_start)) s in all" >&2
}
trap report_phases EXIT
bash scripts/setup-libtorch.sh
# The Python environment first (.venv, made once): every cargo command below then builds pyo3 for
# its interpreter, so no command rebuilds what another built. pyo3's build needs only the
# interpreter. The Python tests run in a fresh environment outside the repository, against the
# installed wheel (scripts/test-wheel.sh): torch 2.13 and its CUDA wheels (a few GB on a fresh
# machine: network and disk, two minutes in CI) install there in the background while the Rust
# checks compile, and .venv gets only the wheel's build tools (a second torch there ran CI out of
# disk). The Python tests wait for them.
bash scripts/setup-python.sh --venv-only
export PYO3_PYTHON="$root/.venv/bin/python"
python_log="$(mktemp)"
{ bash scripts/setup-python.sh --build-tools && bash scripts/test-wheel.sh env; } >"$python_log" 2>&1 &
python_env=$!
data="${HEDGE_DATA_DIR:-./data}"
if [ ! -d "$data" ]; then
  echo "test: data directory '$data' does not exist; set HEDGE_DATA_DIR to the folder holding mnist/, fashion-mnist/, n-digit-mnist/, uci/, bsds500/ and adult/" >&2
  exit 1
fi
# Tests run from each crate's folder, so hand them an absolute path.
export HEDGE_DATA_DIR="$(cd "$data" && pwd)"
# Parallel tests share the cores; libtorch's OpenMP workers spin while they wait by default and
# starve each other's tests (an agnostic training test took 343 s beside two other jobs, 10 s
# with passive waiting).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
# Hygiene first (seconds when it fails): formatting, lints with warnings denied, and docs whose
# links resolve. --release shares the build scripts' outputs (libtorch's C++ glue) with the tests.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi
phase "format, docs check, clippy, rustdoc"
cargo fmt --all --check
# Every table of the READMEs is a fragment `hedge report` wrote (results/<area>/report/; the test
# the_committed_fragments_are_what_the_result_files_give holds them to their result files); a
# README whose copy differs from its fragment, or prose with a new number by hand, fails here.
python3 scripts/docs.py --check
cargo clippy --release --workspace --all-targets -- -D warnings
# The ACS-FW core builds without libtorch (hedge-active without its default `torch` feature).
cargo clippy --release -p hedge-active --no-default-features --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --no-deps
# Both precision paths of HIB's convolutions (README: "Precision of the convolutions"). The first
# pass of each suite runs on the path `auto` takes on this CPU; the tests whose models go through
# hedge's convolutions run again on the other one, forced by HEDGE_CONV_PRECISION. Native bf16 as
# hedge_embed::config::cpu_has_native_bf16 decides it (scripts/lib/native-bf16.sh).
# shellcheck source=scripts/lib/native-bf16.sh
source scripts/lib/native-bf16.sh
if native_bf16; then bf16_is_native=true; else bf16_is_native=false; fi
if $bf16_is_native; then first_precision=bf16; else first_precision=f32; fi
# A HEDGE_CONV_PRECISION set by the caller chose the first pass's path: the second takes the other.
case "${HEDGE_CONV_PRECISION:-auto}" in [Ff]32) first_precision=f32 ;; [Bb][Ff]16) first_precision=bf16 ;; esac
if [ "$first_precision" = bf16 ]; then other_precision=f32; else other_precision=bf16; fi
emulated_bf16_pass=false
if [ "$other_precision" = bf16 ] && ! $bf16_is_native; then emulated_bf16_pass=true; fi
# Everything is built before any test runs: the tests of every crate (cargo-nextest, where
# installed, builds them in one invocation), then every target (the tests' feature set: only the
# Python extension is new), then the wheel, installed into the fresh environment with no Rust on
# the PATH.
phase "build: the tests, every target, the Python extension and its wheel"
if cargo nextest --version >/dev/null 2>&1; then have_nextest=true; else have_nextest=false; fi
if $have_nextest; then
  cargo nextest run --release --workspace --no-run
  # Each crate's unit-test binary and the folder it runs in, from nextest's list. (`cargo test
  # --lib` would also build and run a test harness for the Python extensions, whose `test = false`
  # it overrides; selecting crates with -p or --exclude changes the features and rebuilds.)
  unit_binaries="$(cargo nextest list --release --workspace -E 'kind(lib)' --message-format json |
    python3 -c 'import json, sys
for suite in json.load(sys.stdin)["rust-suites"].values():
    if suite["kind"] == "lib" and suite["testcases"]:
        print(suite["cwd"] + "\t" + suite["binary-path"])')"
fi
cargo build --release --workspace --all-targets
if ! wait "$python_env"; then
  cat "$python_log" >&2
  echo "test: making the Python environments failed (scripts/setup-python.sh --build-tools, scripts/test-wheel.sh env; output above)" >&2
  exit 1
fi
cat "$python_log" >&2
wheel="$(bash scripts/build-wheel.sh --no-build)"
bash scripts/test-wheel.sh install "$wheel"

# The Rust and the Python tests run side by side. The Python suite alone keeps about one core
# busy (407 s of wall time for 451 s of CPU time, its Ray cluster's daemons aside), so run after
# the Rust tests it left the other core mostly idle. On a 2-core AMD EPYC, one after the other:
# nextest 818 s, the Python suite 407 s, and the other-precision passes 52 s and 102 s; side by
# side, everything took 1,292 s (the Python suite finished last). Each test's
# libtorch keeps to one thread (OMP_NUM_THREADS, unless the caller set it): nextest runs as many
# tests at once as there are cores, and two tests of two threads each on two cores wait on each
# other's parallel regions (seven of the slow tests took 149 s with libtorch's default threads
# and 134 s with one, two at a time on a 2-core AMD EPYC).
# No test's outcome may depend on the thread count or on what runs beside it.
test_threads="${OMP_NUM_THREADS:-1}"
# Runs the unit-test binaries of $unit_binaries, each in its crate's folder, in the caller's
# environment; with arguments, only the crates named there (`crates/NAME`, or `crates/NAME=FILTER`
# for the tests whose names hold FILTER).
run_unit_binaries() {
  local failed="" folder binary crate spec filter arg
  while IFS=$'\t' read -r folder binary; do
    crate=${folder#"$root"/} filter=""
    if [ $# -gt 0 ]; then
      spec=""
      for arg in "$@"; do [ "${arg%%=*}" = "$crate" ] && spec=$arg; done
      [ -n "$spec" ] || continue
      [ "$spec" = "$crate" ] || filter=${spec#*=}
    fi
    echo "test: unit tests of $crate${filter:+ matching $filter}${HEDGE_CONV_PRECISION:+, HEDGE_CONV_PRECISION=$HEDGE_CONV_PRECISION}"
    (cd "$folder" && OMP_NUM_THREADS=$test_threads "$binary" -q ${filter:+"$filter"}) || failed+=" $crate"
  done <<<"$unit_binaries"
  if [ -n "$failed" ]; then echo "test: unit tests failed in:$failed"; return 1; fi
}
phase "tests: Rust and Python side by side"
python_tests_log="$(mktemp)"
(
  set -euo pipefail
  start=$(date +%s)
  export OMP_NUM_THREADS=$test_threads
  # The Python tests marked conv_precision (python/tests/conftest.py), on the other path; where
  # bf16 is emulated, those not marked slow_when_emulated (the README's 150-step block took 209 s
  # there; the Ray cluster tests and the example scripts 437 s of that pass's 537 s on a 2-core EPYC;
  # the cluster suite is no longer marked conv_precision: test_scale.py says why).
  # This pass runs beside the first (its own pytest, temporary folder and log): run after it, it
  # was the last 155 s of CI's tests on a 2-core AMD EPYC, one core mostly idle (the Rust tests
  # had ended 200 s before the Python ones).
  marked=conv_precision
  if $emulated_bf16_pass; then marked='conv_precision and not slow_when_emulated'; fi
  other_log="$(mktemp)"
  HEDGE_CONV_PRECISION=$other_precision bash scripts/test-wheel.sh pytest python/tests -q -m "$marked" \
    -p no:cacheprovider --basetemp "$(mktemp -d)" >"$other_log" 2>&1 &
  other=$!
  first_failed=false other_failed=false
  # The slowest fifteen are listed, as nextest lists every Rust test's time: where CI's time goes.
  bash scripts/test-wheel.sh pytest python/tests -q --durations=15 || first_failed=true
  wait "$other" || other_failed=true
  echo "test: the Python tests marked $marked again, with HEDGE_CONV_PRECISION=$other_precision:"
  cat "$other_log"
  if $first_failed || $other_failed; then exit 1; fi
  echo "test: the Python tests took $(($(date +%s) - start)) s"
) >"$python_tests_log" 2>&1 &
python_tests=$!
# A failing Rust test does not leave the Python tests running unseen: their log is printed, and
# the suite fails, once both are done.
rust_failed="" rust_start=$(date +%s)
# cargo-nextest runs the integration tests of every crate from one queue on both cores (`cargo
# test` runs the binaries one after another, so a binary's slowest test leaves a core idle); it
# runs no doctests, so they follow. Passing tests' output is printed too (the short training
# prints its AP). Each crate's unit tests run beside them, one process per crate (libtest's
# threads, as `cargo test` runs them): nextest starts a process per test, and every test process
# loads libtorch first (0.4 s of CPU on a 2-core AMD EPYC, even for a test that never calls it:
# every test binary of the workspace links it). The 331 unit tests took 329 CPU-s through nextest
# and 215 in one process per crate there. Without nextest, `cargo test` runs every test.
if $have_nextest; then
  unit_tests_log="$(mktemp)"
  run_unit_binaries >"$unit_tests_log" 2>&1 &
  unit_tests=$!
  OMP_NUM_THREADS=$test_threads cargo nextest run --release --workspace --no-fail-fast \
    --success-output final --failure-output final -E 'not kind(lib)' || rust_failed+=" tests"
  # A doctest is linked in a temporary folder, where the binaries' relative rpath does not reach
  # libtorch (every crate's doctest links it: hedge-run's `torch` helpers are on in the workspace).
  LD_LIBRARY_PATH="$root/.libtorch/site/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    cargo test --release --workspace --doc || rust_failed+=" doctests"
else
  LD_LIBRARY_PATH="$root/.libtorch/site/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    cargo test --release --workspace -- --show-output || rust_failed+=" tests"
fi
echo "test: the convolution-precision tests again, with HEDGE_CONV_PRECISION=$other_precision"
# hedge-embed whole; in hedge-lab the HIB modules' unit tests; in the CLI the commands that
# train, embed, index or search with a HIB network. (hedge-lab's HIB fault-injection tests, 13
# and 27 s of that pass on a 2-core Intel Xeon, run once: resumed training equal to uninterrupted
# training on both paths is hedge-embed's checkpoint_resume.) The unit tests run from their
# crates' binaries, one process each, as in the first pass (nextest's process per test loads
# libtorch each time; hedge-embed has 63 unit tests, hedge-lab 25 HIB ones).
precision_tests='(package(hedge-embed) & !kind(lib))'
precision_tests+=' | (package(hedge-cli) & test(/^(cli|identification_cli|hostile_input)::/))'
precision_tests+=' | (package(hedge-cli) & test(/^own_data_cli::(a_hedged_embedding|colour_images)/))'
if $emulated_bf16_pass; then
  # bf16 emulated in software trains about ten times slower (600 steps of short_training: over
  # six minutes against 45 s native, measured on 2 cores): hedge-embed's tests that train a few
  # steps each, and the CLI's check that the variable forces the path. Left out beside
  # short_training, as they train many times over: the run stopped after each of its 38 writes and
  # resumed (115 s emulated, 18 s in the f32 pass), the watched run whose budget is three times its
  # calibration (52 s against 15 s) and the 40 steps beside a budget (27 s), measured in one CI
  # run on a 2-core AMD EPYC (the pass: 142 s with them, 52 s without). Resumed training equal to
  # uninterrupted training still runs here, and a CPU with native bf16 runs all three in bf16 in
  # the first pass.
  echo "test: bf16 is emulated on this CPU: the precision tests that train a few steps only"
  precision_tests='(package(hedge-embed) & !kind(lib) & !test(/short_training/)'
  precision_tests+=' & !test(=checkpoint_resume::a_run_stopped_after_any_single_write_resumes_to_the_same_bytes)'
  precision_tests+=' & !test(=recipe::a_watched_run_keeps_the_best_validation_model_and_stops_at_its_budget)'
  precision_tests+=' & !test(=checkpoint_resume::a_budget_beside_a_step_count_does_not_replan_it))'
  precision_tests+=' | (package(hedge-cli) & test(=cli::the_environment_forces_either_convolution_precision_on_any_cpu))'
fi
if $have_nextest; then
  precision_units_log="$(mktemp)"
  precision_units_crates=(crates/hedge-embed)
  $emulated_bf16_pass || precision_units_crates+=(crates/hedge-lab=hib)
  HEDGE_CONV_PRECISION=$other_precision run_unit_binaries "${precision_units_crates[@]}" >"$precision_units_log" 2>&1 &
  precision_units=$!
fi
export HEDGE_CONV_PRECISION=$other_precision
if $have_nextest; then
  OMP_NUM_THREADS=$test_threads cargo nextest run --release --workspace --no-fail-fast \
    --success-output final --failure-output final -E "$precision_tests" || rust_failed+=" precision-tests"
elif $emulated_bf16_pass; then
  { cargo test --release -p hedge-embed --lib --test training -- \
    --show-output --skip short_training --skip a_run_stopped_after_any_single_write_resumes_to_the_same_bytes \
    --skip a_watched_run_keeps_the_best_validation_model_and_stops_at_its_budget \
    --skip a_budget_beside_a_step_count_does_not_replan_it &&
    cargo test --release -p hedge-cli --test commands -- \
      cli::the_environment_forces_either_convolution_precision_on_any_cpu; } || rust_failed+=" precision-tests"
else
  { cargo test --release -p hedge-embed -- --show-output &&
    cargo test --release -p hedge-lab --lib -- hib &&
    cargo test --release -p hedge-cli --test commands -- \
      cli:: identification_cli:: hostile_input:: own_data_cli::a_hedged_embedding own_data_cli::colour_images; } ||
    rust_failed+=" precision-tests"
fi
unset HEDGE_CONV_PRECISION
# The unit tests ran beside the other Rust tests, on the first pass's path (the variable was set
# after they started).
if $have_nextest; then
  wait "$unit_tests" || rust_failed+=" unit-tests"
  echo "test: the unit tests' output (one process per crate):"
  cat "$unit_tests_log"
  wait "$precision_units" || rust_failed+=" precision-unit-tests"
  echo "test: the unit tests' output with HEDGE_CONV_PRECISION=$other_precision:"
  cat "$precision_units_log"
fi
echo "test: the Rust tests took $(($(date +%s) - rust_start)) s; waiting for the Python tests"
python_failed=false
wait "$python_tests" || python_failed=true
echo "test: the Python tests' output:" >&2
cat "$python_tests_log" >&2
if [ -n "$rust_failed" ] || $python_failed; then
  echo "test: failed:${rust_failed:+ Rust${rust_failed}}$($python_failed && echo ' Python')" >&2
  exit 1
fi
