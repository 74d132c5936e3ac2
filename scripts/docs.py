#!/usr/bin/env python3
"""Copies what hedge wrote into the Markdown files that include it, and checks their prose.

    python3 scripts/docs.py                       rewrite every generated block
    python3 scripts/docs.py --check               exit 1 if a block differs from what the files give
    python3 scripts/docs.py --check --file F.md   the same for F.md only (any path)
    python3 scripts/docs.py --list                the blocks there are and the files that hold them
    python3 scripts/docs.py --committed [--check] the same from HEAD's committed files only

A generated block sits between `<!-- FAMILY:NAME:begin -->` and `<!-- FAMILY:NAME:end -->` in a
Markdown file; everything outside the markers is left as it is. The one family is
`include:PATH`: a Markdown file hedge wrote (a run's `table.md`, `pareto.md`, `bench.md`, or a
fragment `hedge report` writes from the typed result files into `results/<area>/report/`: every
table and measured sentence a README shows), copied as it is; PATH is relative to the repository root, or, when it starts with `./`, to the
  folder of the file that holds the block (what `hib reproduce` writes into its README).

Every Markdown file of the repository (README.md, python/README.md and everything under results/) is scanned, so a
block added anywhere is checked. `--check` also fails on a table of numbers (a cell below the
header with a decimal number) in README.md or a results/**/README.md that sits outside every
generated block, unless the line before it is `<!-- hand: WHY -->` saying why no result file
holds it (a table of settings, paths or commands; a printout the project did not keep).
`--committed` runs in a clean worktree of HEAD and copies the files it rewrote back (refusing any
with uncommitted edits): while a reproduction runs, its folder's summary is gone until its last
run ends, and the working tree's blocks would read that half-written folder. Standard library only; `scripts/test.sh` runs `--check`, so a
number that its result file no longer supports fails the tests.

Prose: a number outside generated blocks and code, in any Markdown file of the repository, is a
number by hand: a decimal, an integer or a percentage, with or without a unit ("0.937", "4.6x",
"58 ms", "26 MB", "120 labels", "12 %"), even where a generated block of the same file or a
result folder's config.json holds the same value (prose is not regenerated: when the result moves,
the copy in the prose goes stale). Not counted: citations (a paper's section, table, figure or
equation, an issue, a software version: "Section 4.3", "Table 1", "issue 33", "tch 0.26"), the
numbers of an ordered list, and numbers inside words, paths and links ("bf16", "seed0",
"1810.00319"). `scripts/prose-baseline.json` counts them per file; `--check` fails when a file
has more than its count (a new number by hand: generate it, or say it without the number) or
fewer (run `python3 scripts/docs.py`, which lowers the counts and never raises them).
`--prose F.md` lists a file's numbers by hand with their lines. A copy outside the repository is
held to the count of the file named by `--as REL`, or to none.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MARKER = re.compile(r"<!-- ([a-z]+):([A-Za-z0-9_./-]+):begin -->.*?<!-- \1:\2:end -->", re.S)


def include(path, folder):
    if path.startswith("./"):
        full = os.path.normpath(os.path.join(folder, path))
        if not os.path.isfile(full):
            raise SystemExit(f"docs: include:{path} in {folder}: no such file beside it")
    else:
        full = os.path.normpath(os.path.join(ROOT, path))
        if not full.startswith(ROOT + os.sep) or not os.path.isfile(full):
            raise SystemExit(f"docs: include:{path}: no such file under the repository")
    with open(full) as f:
        return f.read().strip("\n")


def block(family, name, folder):
    if family != "include":
        raise SystemExit(f"docs: unknown family '{family}:{name}': hedge report writes every table into "
                         "results/<area>/report/, which a README includes as `include:PATH`")
    return include(name, folder)


def regenerate(text, cache, folder):
    def fill(m):
        key = (m.group(1), m.group(2))
        if key[1].startswith("./"):
            key = key + (folder,)
        if key not in cache:
            cache[key] = block(key[0], key[1], folder)
        return f"<!-- {key[0]}:{key[1]}:begin -->\n{cache[key]}\n<!-- {key[0]}:{key[1]}:end -->"
    return MARKER.sub(fill, text)


HAND = re.compile(r"<!-- hand: [^>]+ -->\n$")
TABLE = re.compile(r"(?:^\|.*\n)+", re.M)


def unchecked_tables(text):
    """The first lines of the tables of numbers outside generated blocks and without a hand marker."""
    found = []
    outside = MARKER.sub(lambda m: "<!-- generated -->", text)
    for m in TABLE.finditer(outside):
        lines = m.group(0).rstrip("\n").split("\n")
        if len(lines) < 3 or not re.search(r"\d\.\d", "\n".join(lines[2:])):
            continue
        if HAND.search(outside[:m.start()]):
            continue
        found.append(lines[0][:80])
    return found


BASELINE = os.path.join(ROOT, "scripts", "prose-baseline.json")
# A decimal number, not a piece of a version ("2.13.0"); a number that ends a sentence counts (its
# full stop is no decimal point: the pattern once skipped every "... 0.937.").
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?!\w|\.\d)")
# Any number in prose: an integer (thousands separated by commas or not), a decimal, a
# percentage, with a unit or none after it ("4.6x", "58ms"), not inside a word, path, link or
# version ("bf16", "seed0", "v2", "2.13.0", "1810.00319").
NUMBER = re.compile(r"(?<![\w.\-/#:=@\\])\d+(?:,\d{3})*(?:\.\d+)?(?![\d.]\d|[\w.]*[/\\]|-\w)")
# A number that names a place in a paper or a software version is no measurement: "Section 4.3",
# "Appendix B.2", "Table 1", "tch 0.26", "Ray 2.60".
CITATION = re.compile(r"\b(?:Sections?|Appendix|Tables?|Figures?|Fig\.|Eqs?\.|Equations?|Algorithm|Lemma|"
                      r"Theorem|Proposition|issues?|PR|§|tch|libtorch|torch|PyTorch|Ray|Python|faer|version|v)"
                      r"\s*\d+(?:\.\d+)*(?:\s*(?:[–-]|and|,)\s*\d+(?:\.\d+)*)*")


def published_settings():
    """Every number of a result folder's config.json or reference/*.json (settings, the papers' values)."""
    import json
    found = set()

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            found.add(float(v))
    for base, dirs, names in os.walk(os.path.join(ROOT, "results")):
        for n in names:
            if n == "config.json" or (n.endswith(".json") and os.path.basename(base) == "reference"):
                try:
                    with open(os.path.join(base, n)) as f:
                        walk(json.load(f))
                except (OSError, ValueError):
                    pass
    return found


def hand_numbers(text, settings=None):
    """(line, number) of each number by hand in `text` (see the module's docs). `settings` is
    no longer read: a setting written in prose goes stale as a result does."""
    outside = MARKER.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    outside = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), outside, flags=re.S)
    outside = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), outside, flags=re.S)
    found = []
    for i, line in enumerate(outside.split("\n"), 1):
        line = re.sub(r"`[^`]*`", "", line)
        line = re.sub(r"\]\([^)]*\)", "]", line)  # a link's target
        line = re.sub(r"<[^>]+>", "", line)  # an HTML tag
        line = re.sub(r"^\s*(?:[-*]\s+)?\d+\.\s", "", line)  # an ordered list's number
        line = re.sub(r"^#+\s*\d+(?:\.\d+)*\.?\s", "", line)  # a numbered heading
        line = CITATION.sub("", line)
        found += [(i, n) for n in NUMBER.findall(line)]
    return found


# Folders whose Markdown is not the project's own prose: builds, environments, vendored data.
NOT_PROSE = {".git", "target", ".venv", "node_modules", "shared", "__pycache__", ".pytest_cache"}
# The fragments `hedge report` writes from typed result files (`hedge report --check` and the test
# `the_committed_fragments_are_what_the_result_files_give` hold them to those files): generated
# text, no prose.
FRAGMENT = re.compile(r"^results/[^/]+/report/[^/]+\.md$")


def markdown_files():
    """Every Markdown file of the repository (git's tracked and new ones where git is there, so a
    file git ignores is not the project's), README.md first."""
    import subprocess
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.split()
        files = [f for f in listed if os.path.isfile(os.path.join(ROOT, f)) and not set(f.split("/")) & NOT_PROSE
                 and not FRAGMENT.match(f)]
        return sorted(files, key=lambda f: (f != "README.md", f))
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for base, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in NOT_PROSE and not d.startswith("."))
        files += [os.path.relpath(os.path.join(base, n), ROOT) for n in sorted(names)
                  if n.endswith(".md") and not FRAGMENT.match(os.path.relpath(os.path.join(base, n), ROOT))]
    return sorted(files, key=lambda f: (f != "README.md", f))


def main(check, listing, files, prose=None, alias=None):
    cache = {}
    stale, unchecked, miscounted = [], [], []
    settings = published_settings()
    import json
    with open(BASELINE) as f:
        baseline = json.load(f)
    counts = {}
    if prose:
        with open(prose) as f:
            for line, n in hand_numbers(f.read(), settings):
                print(f"{prose}:{line}: {n}")
        return 0
    for rel in files:
        path = os.path.join(ROOT, rel)
        with open(path) as f:
            text = f.read()
        if listing:
            for m in MARKER.finditer(text):
                print(f"{rel}: {m.group(1)}:{m.group(2)}")
            continue
        new = regenerate(text, cache, os.path.dirname(path))
        if os.path.basename(rel) == "README.md" and check:
            for head in unchecked_tables(text):
                unchecked.append(f"{rel}: {head}")
        if True:
            key = os.path.relpath(path, ROOT)
            if key.startswith(".."):
                key = alias
            if key is not None:
                counts[key] = len(hand_numbers(new, settings))
                if check and counts[key] != baseline.get(key, 0):
                    miscounted.append((rel, key, counts[key], baseline.get(key, 0)))
        if new != text:
            stale.append(rel)
            if not check:
                tmp = path + ".tmp"
                with open(tmp, "w") as f:
                    f.write(new)
                os.replace(tmp, path)
    if listing:
        return 0
    if not check:
        lowered = {k: min(v, counts.get(k, v)) for k, v in baseline.items()}
        lowered = {k: v for k, v in lowered.items() if v > 0}
        if lowered != baseline:
            with open(BASELINE + ".tmp", "w") as f:
                json.dump(lowered, f, indent=1, sort_keys=True)
                f.write("\n")
            os.replace(BASELINE + ".tmp", BASELINE)
    for rel, key, now, allowed in miscounted:
        if now > allowed:
            print(f"docs: {rel} states {now} numbers by hand in its prose, {now - allowed} more than "
                  f"scripts/prose-baseline.json allows for {key}: generate them from their result files or say "
                  f"it without them (python3 scripts/docs.py --prose {rel} lists them)", file=sys.stderr)
        else:
            print(f"docs: {rel} states {now} numbers by hand, fewer than the {allowed} scripts/prose-baseline.json "
                  f"counts for {key}: run python3 scripts/docs.py to lower the count", file=sys.stderr)
    if check and unchecked:
        print("docs: tables of numbers outside generated blocks (generate them from their result files, or mark "
              "a table no result file can hold with `<!-- hand: WHY -->` on the line before it):\n  "
              + "\n  ".join(unchecked), file=sys.stderr)
    if check and stale:
        print("docs: these files state numbers their result files no longer give: "
              f"{', '.join(stale)}; run python3 scripts/docs.py", file=sys.stderr)
    if check and (stale or unchecked or miscounted):
        return 1
    print("docs: " + ("up to date" if check else f"rewrote {', '.join(stale) or 'nothing'}")
          + f" ({len(cache)} blocks)")
    return 0


def committed(check):
    """docs.py run in a clean worktree of HEAD; the Markdown files (and prose counts) it rewrote are
    copied back, each through a temporary file, unless one has uncommitted edits here."""
    import shutil
    import subprocess
    import tempfile

    def git(*args, cwd=ROOT):
        return subprocess.run(["git", "-C", cwd, *args], capture_output=True, text=True, check=True).stdout

    with tempfile.TemporaryDirectory() as tmp:
        head = os.path.join(tmp, "head")
        git("worktree", "add", "-q", "--detach", head, "HEAD")
        try:
            script = os.path.join(head, "scripts", "docs.py")
            rc = subprocess.run([sys.executable, script] + (["--check"] if check else [])).returncode
            if check or rc:
                return rc
            changed = git("diff", "--name-only", cwd=head).split()
            dirty = git("diff", "--name-only", "HEAD", "--", *changed).split() if changed else []
            if dirty:
                raise SystemExit(f"docs: --committed would replace uncommitted edits in {', '.join(dirty)}; commit "
                                 "or stash them first")
            for rel in changed:
                shutil.copyfile(os.path.join(head, rel), os.path.join(ROOT, rel) + ".tmp")
                os.replace(os.path.join(ROOT, rel) + ".tmp", os.path.join(ROOT, rel))
            print(f"docs: copied {', '.join(changed) or 'nothing'} from HEAD's worktree")
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", head], capture_output=True)
    return 0


def parse(argv):
    check, listing, files, prose, alias = False, False, [], None, None
    args = iter(argv)
    for arg in args:
        if arg == "--check":
            check = True
        elif arg == "--prose":
            prose = next(args, None)
            if prose is None or not os.path.isfile(prose):
                raise SystemExit("docs: --prose needs a Markdown file's path")
        elif arg == "--as":
            alias = next(args, None)
            if alias is None:
                raise SystemExit("docs: --as needs the repository-relative name the copy stands for")
        elif arg == "--list":
            listing = True
        elif arg == "--file":
            path = next(args, None)
            if path is None:
                raise SystemExit("docs: --file needs a Markdown file's path")
            if not os.path.isfile(path):
                raise SystemExit(f"docs: --file {path}: no such file")
            files.append(os.path.abspath(path))
        else:
            raise SystemExit(f"docs: unknown argument '{arg}' (usage: [--check] [--list] [--file F.md ...] "
                             "[--as REL] [--prose F.md] | --committed [--check])")
    return check, listing, files or markdown_files(), prose, alias


if __name__ == "__main__":
    if "--committed" in sys.argv[1:]:
        rest = [a for a in sys.argv[1:] if a != "--committed"]
        if rest not in ([], ["--check"]):
            raise SystemExit("docs: --committed takes --check only")
        sys.exit(committed(bool(rest)))
    sys.exit(main(*parse(sys.argv[1:])))
