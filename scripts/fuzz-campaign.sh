#!/usr/bin/env bash
# Issue 35: the coverage-guided fuzzing campaign (libFuzzer through cargo fuzz, nightly Rust) of
# every parser that reads a user's file, the image decoders, index.json and config files.
#
#   scripts/fuzz-campaign.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 600); TARGETs (default all): idx npy npz uci adult jpeg csv png
# image-npz index-json toml ann-graph. Two targets run at a time (one core each). For each target the
# corpus in fuzz/corpus/<target>/ (seeded from `hedge bench fuzz --seeds` the first time) is
# fuzzed, then minimised (`cargo fuzz cmin`) so that what is committed stays small; libFuzzer's
# final statistics go to results/fuzz/<target>.json and its log to results/fuzz/logs/. A crash
# (a panic, an abort, an allocation past -malloc_limit_mb, a leak of RSS past -rss_limit_mb) is
# copied to results/fuzz/crashes/ and fails the script: each becomes a regression test.
#
# Needs: rustup's nightly toolchain and `cargo install cargo-fuzz`; HEDGE_DATA_DIR for the JPEG
# seed (a BSDS500 photograph). The libtorch targets (index-json, toml) load libtorch from
# .libtorch/ (scripts/setup-libtorch.sh). A fuzzing build (`--cfg fuzzing`) does not check
# index.json's own SHA-256, so mutants reach the checks behind it.
set -euo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$PWD/.libtorch/site/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(idx npy npz uci adult jpeg csv png image-npz index-json toml ann-graph)
out=results/fuzz
mkdir -p "$out/logs" fuzz/corpus
hedge=${HEDGE:-./target/release/hedge}

# The targets whose corpus is still empty start from fuzz/seeds/<target>/ where it exists, the
# rest from the seeds `hedge bench fuzz --seeds` writes for all of them in one call.
generated=()
for t in "${targets[@]}"; do
    [ -d "fuzz/corpus/$t" ] && [ -n "$(ls -A "fuzz/corpus/$t")" ] && continue
    if [ -d "fuzz/seeds/$t" ]; then
        mkdir -p "fuzz/corpus/$t"
        cp "fuzz/seeds/$t"/* "fuzz/corpus/$t/"
    else
        generated+=("$t")
    fi
done
if [ ${#generated[@]} -gt 0 ]; then
    tmp=$(mktemp -d)
    rmdir "$tmp"
    "$hedge" bench fuzz --target "$(IFS=,; echo "${generated[*]}")" --seeds "$tmp" >/dev/null
    for t in "${generated[@]}"; do
        mkdir -p "fuzz/corpus/$t"
        cp "$tmp/$t"/* "fuzz/corpus/$t/"
    done
    rm -rf "$tmp"
fi

flags() {
    case $1 in
        index-json | toml) echo "--features embed" ;;
        *) echo "" ;;
    esac
}

campaign() {
    local t=$1
    local log="$out/logs/$t.log"
    local rc=0
    # shellcheck disable=SC2046
    (cd fuzz && cargo +nightly fuzz run $(flags "$t") "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -malloc_limit_mb=2048 -print_final_stats=1 \
        -close_fd_mask=3) >"$log" 2>&1 || rc=$?
    local before after
    before=$(ls "fuzz/corpus/$t" | wc -l)
    # shellcheck disable=SC2046
    (cd fuzz && cargo +nightly fuzz cmin $(flags "$t") "$t" "corpus/$t") >>"$log" 2>&1 || true
    after=$(ls "fuzz/corpus/$t" | wc -l)
    local crashes=0
    if [ -d "fuzz/artifacts/$t" ]; then
        crashes=$(ls "fuzz/artifacts/$t" | wc -l)
        if [ "$crashes" -gt 0 ]; then
            mkdir -p "$out/crashes/$t"
            cp "fuzz/artifacts/$t"/* "$out/crashes/$t/"
        fi
    fi
    python3 scripts/fuzz-stats.py "$t" "$log" "$seconds" "$rc" "$before" "$after" "$crashes" >"$out/$t.json"
    echo "$t: rc $rc, $crashes crash(es), corpus $before -> $after files"
}

# Build every target first (one build at a time), then fuzz two at a time.
for t in "${targets[@]}"; do
    # shellcheck disable=SC2046
    (cd fuzz && cargo +nightly fuzz build $(flags "$t") "$t") >/dev/null 2>&1
done
running=0
for t in "${targets[@]}"; do
    campaign "$t" &
    running=$((running + 1))
    if [ "$running" -ge 2 ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait
failed=$(python3 -c "
import json, glob
bad = [json.load(open(f)) for f in glob.glob('$out/*.json') if not f.split('/')[-1].startswith('campaign-')]
print(sum(b['crashes'] for b in bad))")
# The table of results/fuzz/README.md: hedge report writes it from the JSON files, docs.py copies it in.
"${HEDGE:-./target/release/hedge}" report >/dev/null 2>&1 && python3 scripts/docs.py --file "$out/README.md" >/dev/null 2>&1 || true
[ "$failed" = 0 ] || { echo "fuzz: $failed crash(es) in $out/crashes" >&2; exit 1; }
