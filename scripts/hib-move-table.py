#!/usr/bin/env python3
"""Move a HIB table aside before it is retrained on a re-chosen recipe (issue 33).

    python3 scripts/hib-move-table.py SETTING NEW_NAME [--dry-run]

`git mv`s results/hib/SETTING/ to results/hib/NEW_NAME/, with the files `studies/hib/table.toml`
writes beside it (SETTING.log, SETTING-curves.md and its PNGs) and the same runs' `test_seen`
reports (`studies/hib/test-seen.toml`'s results/hib/test-seen/SETTING/, which moves to
test-seen/NEW_NAME/), so that the SETTING step of `studies/hib/table.toml` trains the table afresh while the old
one stays as evidence. The JSON path fields of the
moved files (a report's `run` and `weights`, a summary's `runs`: every string value that starts
with `results/hib/SETTING/`) then name the new folder; the recorded commands keep the folder they
ran in (`--out results/hib/SETTING`), being what was run. The reproduction's checkpoint
(`checkpoint.json`'s hashes of `progress.json` and `runs.jsonl`) is rewritten to match, so the moved
folder still passes hedge's integrity check. Only tracked files move: a run folder git does not
know (a run started and never checkpointed) is refused by name, to be removed or committed first.
Each rewritten file goes to a temporary file beside it, then is renamed over it. The moved folder
gets a `moved-aside.json` marker (the setting it was, and which of its tables: 1 for the first),
from which `hedge report` finds and names the tables moved aside. The moved Markdown files keep
the count of hand-stated numbers scripts/prose-baseline.json allowed them (their generated prose).
"""
import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

HIB_REL = "results/hib"


def git(*args, capture=False):
    result = subprocess.run(["git", *args], cwd=ROOT, check=True, text=True,
                            stdout=subprocess.PIPE if capture else None)
    return result.stdout if capture else None


def companions(setting):
    """The files studies/hib/table.toml writes beside a setting's folder: (old, new suffix)."""
    base = os.path.join(ROOT, HIB_REL)
    names = [f"{setting}.log", f"{setting}-curves.md"]
    names += sorted(os.path.basename(p) for p in glob.glob(os.path.join(base, f"{setting}-curves_*.png")))
    return [name for name in names if os.path.exists(os.path.join(base, name))]


def rewrite(path, old_prefix, new_prefix):
    """Replace every JSON string value that starts with `old_prefix` (a quoted path) in `path`;
    a command, which starts with the binary, never does. Returns the count."""
    with open(path) as f:
        text = f.read()
    count = text.count(f'"{old_prefix}')
    if count:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text.replace(f'"{old_prefix}', f'"{new_prefix}'))
        os.replace(tmp, path)
    return count


def refresh_checkpoint(folder):
    """Rewrite a reproduction's checkpoint.json hashes and sizes of the files it lists."""
    path = os.path.join(folder, "checkpoint.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        checkpoint = json.load(f)
    for entry in checkpoint.get("files", []) + checkpoint.get("logs", []):
        with open(os.path.join(folder, entry["name"]), "rb") as f:
            data = f.read()
        entry["sha256"] = hashlib.sha256(data).hexdigest()
        entry["bytes"] = len(data)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(checkpoint, indent=2) + "\n")
    os.replace(tmp, path)


def carry_prose_baseline(moves):
    """Give each moved Markdown file the count scripts/prose-baseline.json allows its old path
    (the numbers a generated table states in its prose), so `scripts/docs.py --check` reads the
    moved table as it read the old one; the old path keeps its count, as the retrained table
    writes the same files there."""
    path = os.path.join(ROOT, "scripts", "prose-baseline.json")
    with open(path) as f:
        baseline = json.load(f)
    carried = dict(baseline)
    for src, dst in moves:
        for key, count in baseline.items():
            if key == src or key.startswith(src + "/"):
                carried[dst + key[len(src):]] = count
    if carried != baseline:
        with open(path + ".tmp", "w") as f:
            json.dump(carried, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("setting", help="a table folder under results/hib, e.g. n2-d2")
    parser.add_argument("new_name", help="its new folder name under results/hib, e.g. n2-d2-l-peak1e-2-16x16")
    parser.add_argument("--dry-run", action="store_true", help="say what would move, change nothing")
    args = parser.parse_args()
    old = os.path.join(HIB_REL, args.setting)
    new = os.path.join(HIB_REL, args.new_name)
    if not os.path.isdir(os.path.join(ROOT, old)):
        sys.exit(f"hib-move-table: {old} is not a folder")
    if os.path.exists(os.path.join(ROOT, new)):
        sys.exit(f"hib-move-table: {new} exists already; choose another name")
    moves = [(old, new)] + [(os.path.join(HIB_REL, name), os.path.join(HIB_REL, args.new_name + name[len(args.setting):]))
                            for name in companions(args.setting)]
    # The test_seen reports name the run folders they scored (their `weights`), so they follow.
    seen_old, seen_new = (os.path.join(HIB_REL, "test-seen", name) for name in (args.setting, args.new_name))
    rewritten = [new]
    if os.path.isdir(os.path.join(ROOT, seen_old)):
        if os.path.exists(os.path.join(ROOT, seen_new)):
            sys.exit(f"hib-move-table: {seen_new} exists already; choose another name")
        moves.append((seen_old, seen_new))
        rewritten.append(seen_new)
    for src in (old, seen_old):
        if not os.path.isdir(os.path.join(ROOT, src)):
            continue
        untracked = git("ls-files", "--others", "--exclude-standard", "--directory", src, capture=True).split()
        if untracked:
            sys.exit(f"hib-move-table: {src} holds files git does not track ({', '.join(untracked)}); commit "
                     "them or remove them first (a run folder without a checkpoint restarts from step 0 anyway)")
        if git("status", "--porcelain", "--", src, capture=True).strip():
            sys.exit(f"hib-move-table: {src} has uncommitted changes (a reproduction running or paused with "
                     f"--overwrite?); `git checkout {src}` or commit them first")
    for src, dst in moves:
        print(f"{src} -> {dst}")
    if args.dry_run:
        return
    for src, dst in moves:
        git("mv", src, dst)
    folder = os.path.join(ROOT, new)
    count = 0
    for moved in (os.path.join(ROOT, rel) for rel in rewritten):
        for path in sorted(glob.glob(os.path.join(moved, "**", "*.json"), recursive=True)
                           + glob.glob(os.path.join(moved, "**", "*.jsonl"), recursive=True)):
            if os.path.basename(path) != "checkpoint.json":
                count += rewrite(path, old + "/", new + "/")
    refresh_checkpoint(folder)
    earlier = 0
    for name in os.listdir(os.path.join(ROOT, HIB_REL)):
        marker = os.path.join(ROOT, HIB_REL, name, "moved-aside.json")
        if os.path.exists(marker):
            with open(marker) as f:
                earlier += json.load(f)["setting"] == args.setting
    carry_prose_baseline(moves)
    marker = os.path.join(folder, "moved-aside.json")
    with open(marker + ".tmp", "w") as f:
        f.write(json.dumps({"setting": args.setting, "table": earlier + 1}, indent=2) + "\n")
    os.replace(marker + ".tmp", marker)
    print(f"{new}: {count} path fields now name it; checkpoint.json rewritten; marked as {args.setting}'s "
          f"table {earlier + 1}; `git add -A {new}` and commit")


if __name__ == "__main__":
    main()
