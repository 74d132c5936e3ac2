#!/usr/bin/env bash
# Which torch releases hedge's wheel works with (issue 84, item 2): for each release, build the
# wheel against its libtorch (HEDGE_TORCH=<release> scripts/build-wheel.sh; 2.13.0, tch 0.26's own,
# from the repository's build), install it into a fresh environment with that torch
# (scripts/test-wheel.sh), and run the whole Python suite against it.
#
#   bash scripts/torch-releases.sh [RELEASE...]        (default: 2.12.1 2.13.0 2.14.1)
#
# Writes results/python/torch-releases.json (per release: whether the extension built, the wheel,
# the suite's counts) and torch-releases.md (the table the README includes); a build's or a test
# run's output goes to results/python/torch-<release>.log. HEDGE_DATA_DIR as for the tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(2.12.1 2.13.0 2.14.1)
out=results/python
mkdir -p "$out"
for release in "${releases[@]}"; do
  log="$out/torch-$release.log"
  # SUMMARY_ONLY=1: only the table, from the logs an earlier run wrote.
  [ "${SUMMARY_ONLY:-0}" = 1 ] && continue
  : > "$log"
  wheel=""
  if [ "$release" = 2.13.0 ]; then
    # The repository's own build (the tests' cargo invocation), packed as scripts/test.sh does.
    PYO3_PYTHON="$root/.venv/bin/python" cargo build --release --workspace --all-targets 2>>"$log" &&
      wheel="$(bash scripts/build-wheel.sh --no-build 2>>"$log")" || true
  else
    wheel="$(HEDGE_TORCH="$release" bash scripts/build-wheel.sh 2>>"$log")" || true
  fi
  if [ -n "$wheel" ]; then
    echo "torch-releases: built $wheel" >>"$log"
    env_release=()
    [ "$release" = 2.13.0 ] || env_release=(HEDGE_TORCH="$release")
    env "${env_release[@]}" bash scripts/test-wheel.sh env >>"$log" 2>&1
    env "${env_release[@]}" bash scripts/test-wheel.sh install "$wheel" >>"$log" 2>&1
    env "${env_release[@]}" bash scripts/test-wheel.sh pytest python/tests -q -rfE >>"$log" 2>&1 || true
  else
    echo "torch-releases: the extension did not build against torch $release (its errors above)" >>"$log"
  fi
done
python3 - "$out" "${releases[@]}" <<'PY'
import json, os, re, sys

out, releases = sys.argv[1], sys.argv[2:]
rows = []
for release in releases:
    text = open(f"{out}/torch-{release}.log").read()
    built = re.search(r"^torch-releases: built (\S+)$", text, re.M)
    row = {"release": release, "built": bool(built), "wheel": os.path.basename(built.group(1)) if built else None}
    summary = re.findall(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s", text, re.M)
    if built and summary:
        counts = dict((word, int(n)) for n, word in re.findall(r"(\d+) (\w+)", summary[-1]))
        row["tests"] = {k: counts.get(k, 0) for k in ("passed", "failed", "skipped", "errors")}
        row["tests"]["failing"] = re.findall(r"^FAILED (\S+)", text, re.M)
    rows.append(row)
with open(f"{out}/torch-releases.json.tmp", "w") as f:
    json.dump(rows, f, indent=2)
    f.write("\n")
md = ["| torch | the extension builds (tch 0.26) | the Python suite against the installed wheel | wheel |", "|---|---|---|---|"]
for r in rows:
    t = r.get("tests")
    suite = "—" if t is None else "{passed} passed, {failed} failed, {skipped} skipped".format(**t)
    wheel = f"`{r['wheel']}`" if r["wheel"] else "—"
    md.append(f"| {r['release']} | {'yes' if r['built'] else 'no'} | {suite} | {wheel} |")
with open(f"{out}/torch-releases.md.tmp", "w") as f:
    f.write("\n".join(md) + "\n")
PY
mv "$out/torch-releases.json.tmp" "$out/torch-releases.json"
mv "$out/torch-releases.md.tmp" "$out/torch-releases.md"
cat "$out/torch-releases.md"
