#!/usr/bin/env bash
# The workspace's Rust lines per crate: every line of the *.rs files under each crate's src/
# (crates/*/src, python/src, python/ann/src), the count issue 110 sets its targets in
# (crates/hedge-lab/src under 12,000; the CLI under 2,000; all of them not past the total when it
# was filed). vendor/ and the tests/ folders are not counted; a crate's unit-test modules inside
# src/ are. With REV (a commit), the same count at that commit beside today's.
#
#   bash scripts/rust-lines.sh [REV]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rev="${1:-}"
count() { # $1: folder, $2: revision or empty for the working tree
  if [ -z "$2" ]; then
    find "$1" -name '*.rs' -print0 2>/dev/null | xargs -0 -r cat | wc -l
  else
    git ls-tree -r --name-only "$2" -- "$1" | grep '\.rs$' | while read -r f; do git show "$2:$f"; done | wc -l
  fi
}
folders=(crates/*/src python/src python/ann/src)
printf '| crate | lines%s |\n|---|---:%s|\n' "${rev:+ at $rev | lines now}" "${rev:+|---:}"
total_then=0 total_now=0
for folder in "${folders[@]}"; do
  name="${folder%/src}"
  now=$(count "$folder" "")
  total_now=$((total_now + now))
  if [ -n "$rev" ]; then
    then=$(count "$folder" "$rev")
    total_then=$((total_then + then))
    printf '| %s | %d | %d |\n' "$name" "$then" "$now"
  else
    printf '| %s | %d |\n' "$name" "$now"
  fi
done
if [ -n "$rev" ]; then printf '| all | %d | %d |\n' "$total_then" "$total_now"; else printf '| all | %d |\n' "$total_now"; fi
