#!/usr/bin/env bash
# Which torch releases hedge's one wheel works with (issue 109): builds the release wheel, one
# extension per torch minor (scripts/build-wheel.sh --torch R ...), then for each release makes a
# fresh environment holding that torch and NumPy and the test tools and no Rust
# (scripts/test-wheel.sh env), installs the wheel with the README's install line, `pip install
# WHEEL` without --no-deps (scripts/test-wheel.sh install: `pip freeze` before and after, torch
# unchanged or it fails), and runs the whole Python suite against the installed package.
#
#   bash scripts/torch-releases.sh [RELEASE...]        (default: 2.13.0 2.14.1 2.15.0)
#
# Writes results/python/torch-releases.json (the wheel, its torch requirement, and per release:
# torch in `pip freeze` before and after the install, the suite's counts and failing tests) and
# torch-releases.md (the table python/README.md includes); each release's install and test output
# goes to results/python/torch-<release>.log, the build's to target/torch-releases-build.log.
# HEDGE_DATA_DIR as for the tests. SUMMARY_ONLY=1: only the table, from the logs an earlier run wrote.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(2.13.0 2.14.1 2.15.0)
out=results/python
mkdir -p "$out" target
build_log=target/torch-releases-build.log
if [ "${SUMMARY_ONLY:-0}" != 1 ]; then
  torch_flags=()
  for release in "${releases[@]}"; do torch_flags+=(--torch "$release"); done
  PYO3_PYTHON="$root/.venv/bin/python" cargo build --release --workspace --all-targets >"$build_log" 2>&1
  wheel="$(bash scripts/build-wheel.sh "${torch_flags[@]}" 2>>"$build_log")" || {
    tail -40 "$build_log" >&2
    echo "torch-releases: the wheel did not build (its output: $build_log)" >&2
    exit 1
  }
  echo "torch-releases: built $wheel" >&2
  for release in "${releases[@]}"; do
    log="$out/torch-$release.log"
    {
      echo "torch-releases: wheel $(basename "$wheel")"
      echo "torch-releases: $(unzip -p "$wheel" '*.dist-info/METADATA' | grep '^Requires-Dist: torch')"
    } >"$log"
    echo "torch-releases: torch $release: a fresh environment, the install line, the Python suite" >&2
    HEDGE_TORCH="$release" bash scripts/test-wheel.sh env >>"$log" 2>&1
    HEDGE_TORCH="$release" bash scripts/test-wheel.sh install "$wheel" >>"$log" 2>&1 || echo "torch-releases: the install failed" >>"$log"
    HEDGE_TORCH="$release" bash scripts/test-wheel.sh pytest python/tests -q -rfE -p no:cacheprovider >>"$log" 2>&1 || true
  done
fi
python3 - "$out" "${releases[@]}" <<'PY'
import json, re, sys

out, releases = sys.argv[1], sys.argv[2:]
rows, wheel, requirement = [], None, None
for release in releases:
    text = open(f"{out}/torch-{release}.log").read()
    wheel = wheel or re.search(r"^torch-releases: wheel (\S+)$", text, re.M).group(1)
    requirement = requirement or re.search(r"^torch-releases: Requires-Dist: (.+)$", text, re.M).group(1)
    installed = re.search(r"pip freeze before and after: (\S+) both times; changed: (.*)$", text, re.M)
    changed = re.search(r"changed torch: '(\S*)' before, '(\S*)' after", text)
    row = {
        "release": release,
        "installed": bool(installed),
        "torch_before": installed.group(1) if installed else (changed.group(1) if changed else None),
        "torch_after": installed.group(1) if installed else (changed.group(2) if changed else None),
        "freeze_changes": installed.group(2).split() if installed else None,
    }
    summary = re.findall(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s", text, re.M)
    if summary:
        counts = dict((word, int(n)) for n, word in re.findall(r"(\d+) (\w+)", summary[-1]))
        row["tests"] = {k: counts.get(k, 0) for k in ("passed", "failed", "skipped", "xfailed", "errors")}
        row["tests"]["failing"] = re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)
    rows.append(row)
result = {"wheel": wheel, "requires": requirement, "releases": rows}
with open(f"{out}/torch-releases.json.tmp", "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
md = [
    f"One wheel, `{wheel}` (`Requires-Dist: {requirement}`), installed with `pip install WHEEL` into a fresh "
    "environment per torch release that held torch, NumPy and the test tools and no Rust:",
    "",
    "| torch | `pip freeze` before → after the install | what the install changed | the Python suite against the installed wheel |",
    "|---|---|---|---|",
]
for r in rows:
    t = r.get("tests")
    suite = "—" if t is None else "{passed} passed, {failed} failed, {skipped} skipped, {xfailed} expected failures".format(**t)
    if t and t["errors"]:
        suite += f", {t['errors']} errors"
    freeze = "not installed" if not r["installed"] else f"`{r['torch_before']}` → `{r['torch_after']}`"
    changes = " ".join(f"`{c}`" for c in r["freeze_changes"] or []) or "—"
    md.append(f"| {r['release']} | {freeze} | {changes} | {suite} |")
with open(f"{out}/torch-releases.md.tmp", "w") as f:
    f.write("\n".join(md) + "\n")
PY
mv "$out/torch-releases.json.tmp" "$out/torch-releases.json"
mv "$out/torch-releases.md.tmp" "$out/torch-releases.md"
cat "$out/torch-releases.md"
