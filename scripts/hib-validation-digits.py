#!/usr/bin/env python3
"""Does validation on new digit images choose levers as the test split would? (issue 33)

    HEDGE_DATA_DIR=../shared/data python3 scripts/hib-validation-digits.py [--repeats 3] [--tables-only]

Under `--protocol instance` hedge chooses models on 5 % of each class's training images held out
(`validation_fraction`). Those composites are new, but nearly all of their digit images recur in
training composites (`digit-overlap.json`: 99.8 %), while every test digit is new. `hedge hib eval
--split validation --validation-digits unused` scores the same held-out images with each digit
image redrawn from the MNIST training digits no training image uses (`validation_digits =
"unused"`). This script scores the final weights of finished runs three ways: the held-out
images as the table has them (`shared`), the same images on unused digits (`unused`), and the
test split (`test`), each with `--metrics verification_ap,knn_accuracy --repeats R`. Runs:

- `instance-levers-f32/`: the lever study (two seeds a lever), to compare how each validation
  ranks the levers with how the test split ranks them;
- `long-run/`: its checkpoints every 10,000 steps up to 100,000, to see what length does on each.

Writes `results/hib/validation-digits/scores.jsonl` (one line per run, weights and set; resumable:
lines already there are kept), then `summary.json` and `table.md` from it (temp file, then
rename). `--tables-only` rewrites the last two from `scores.jsonl` without evaluating anything.
Evaluates through the hedge package (`hedge.hib.Run.evaluate`, the numbers `hedge hib eval` gives).
"""
import argparse
import glob
import json
import math
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

OUT = os.path.join(ROOT, "results", "hib", "validation-digits")
SETS = ("test", "shared", "unused")
METRICS = (("verification_ap", "clean"), ("verification_ap", "corrupt"), ("knn_accuracy", "clean"),
           ("knn_accuracy", "corrupt"))
NAMES = ("AP clean", "AP corrupt", "KNN clean", "KNN corrupt")


def targets():
    """(study, run folder, label, weights file relative to the repository root)."""
    out = []
    for run in sorted(glob.glob(os.path.join(ROOT, "results/hib/instance-levers-f32/*-seed*"))):
        if os.path.isdir(run) and os.path.exists(os.path.join(run, "done")):
            rel = os.path.relpath(run, ROOT)
            out.append(("levers", rel, os.path.basename(run), os.path.join(rel, "model.safetensors")))
    for ckpt in sorted(glob.glob(os.path.join(ROOT, "results/hib/long-run/checkpoints/model-*.safetensors"))):
        step = int(os.path.basename(ckpt)[len("model-"):-len(".safetensors")])
        out.append(("long-run", "results/hib/long-run", str(step), os.path.relpath(ckpt, ROOT)))
    return out


def evaluate(run, weights, which, repeats):
    """The four numbers of `weights` on `which` set, and the call that scored them."""
    from hedge import hib

    split = dict(split="validation", validation_digits=which) if which != "test" else {}
    report = hib.Run(os.path.join(ROOT, run)).evaluate(
        metrics=["verification_ap", "knn_accuracy"], repeats=repeats, weights=os.path.join(ROOT, weights), **split)
    values = [getattr(getattr(report, m), v) for m, v in METRICS]
    arguments = ", ".join(f"{k}={v!r}" for k, v in split.items())
    call = (f"hedge.hib.Run({run!r}).evaluate(metrics=['verification_ap', 'knn_accuracy'], repeats={repeats}, "
            f"weights={weights!r}{', ' + arguments if arguments else ''})")
    return values, call


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: -values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def tables(rows, repeats):
    by = {}
    for r in rows:
        by.setdefault((r["study"], r["label"]), {})[r["set"]] = r["values"]
    complete = {k: v for k, v in by.items() if all(s in v for s in SETS)}
    fmt = lambda xs: " / ".join(f"{x:.3f}" for x in xs)  # noqa: E731
    lines = [
        "Final weights of finished runs scored three ways with `hedge hib eval --metrics "
        f"verification_ap,knn_accuracy --repeats {repeats}`: the test split, the held-out training images as "
        "the table has them (`validation`, shared digits) and the same images with every digit image "
        "redrawn from the MNIST training digits no training image uses (`--validation-digits unused`). "
        "Each cell is AP clean / AP corrupt / KNN clean / KNN corrupt "
        "(`results/hib/validation-digits/scores.jsonl`, written by `scripts/hib-validation-digits.py`).",
        "",
    ]
    summary = {"repeats": repeats}
    levers = sorted(k[1] for k in complete if k[0] == "levers")
    if levers:
        lines += ["| lever run | test | validation, shared digits | validation, unused digits |",
                  "|---|---|---|---|"]
        lines += [f"| {l} | {fmt(complete[('levers', l)]['test'])} | {fmt(complete[('levers', l)]['shared'])} | "
                  f"{fmt(complete[('levers', l)]['unused'])} |" for l in levers]
        gaps = {s: [sum(abs(complete[("levers", l)][s][i] - complete[("levers", l)]["test"][i]) for l in levers)
                    / len(levers) for i in range(4)] for s in ("shared", "unused")}
        lines += ["", "Mean distance from the test split's value, over the runs above:", "",
                  "| validation | " + " | ".join(NAMES) + " |", "|---|---|---|---|---|"]
        lines += [f"| {s} digits | " + " | ".join(f"{g:.3f}" for g in gaps[s]) + " |" for s in ("shared", "unused")]
        # Levers: the mean over seeds of the mean of the four numbers.
        lever_names = sorted({l.rsplit("-seed", 1)[0] for l in levers})
        score = {s: [] for s in SETS}
        for name in lever_names:
            seeds = [l for l in levers if l.rsplit("-seed", 1)[0] == name]
            for s in SETS:
                score[s].append(sum(sum(complete[("levers", l)][s]) / 4 for l in seeds) / len(seeds))
        best = {s: lever_names[max(range(len(lever_names)), key=lambda i: score[s][i])] for s in SETS}
        rho = {s: spearman(score[s], score["test"]) for s in ("shared", "unused")}
        lines += ["", f"The {len(lever_names)} levers ranked by the mean of the four numbers (mean over their "
                  "seeds) on each set: Spearman's rank correlation with the test split's ranking, and the lever "
                  "each puts first.", "",
                  "| ranked on | rank correlation with test | first |", "|---|---|---|"]
        lines += [f"| validation, {s} digits | {rho[s]:.2f} | {best[s]} |" for s in ("shared", "unused")]
        lines += [f"| test | 1.00 | {best['test']} |"]
        summary["levers"] = {"runs": len(levers), "levers": lever_names, "mean_abs_gap": gaps,
                             "rank_correlation_with_test": rho, "first": best,
                             "score": {s: dict(zip(lever_names, score[s])) for s in SETS}}
    steps = sorted((int(k[1]) for k in complete if k[0] == "long-run"))
    if steps:
        lines += ["", "The long run (`long-run/`, one MoG-1 trained to 100,000 steps), its checkpoints:", "",
                  "| step | test | validation, shared digits | validation, unused digits |", "|---|---|---|---|"]
        lines += [f"| {n:,} | {fmt(complete[('long-run', str(n))]['test'])} | "
                  f"{fmt(complete[('long-run', str(n))]['shared'])} | {fmt(complete[('long-run', str(n))]['unused'])} |"
                  for n in steps]
        diff = {s: [complete[("long-run", str(n))][s][2] - complete[("long-run", str(n))]["test"][2] for n in steps]
                for s in ("shared", "unused")}
        signed = lambda x: f"{x:+.3f}".replace("-", "−")  # noqa: E731
        lines += ["", "KNN clean on the validation images less the test split's, over the kept copies: shared digits "
                  f"{signed(min(diff['shared']))} to {signed(max(diff['shared']))}, unused digits "
                  f"{signed(min(diff['unused']))} to {signed(max(diff['unused']))}."]
        summary["long_run"] = {str(n): complete[("long-run", str(n))] for n in steps}
        summary["long_run_knn_clean_minus_test"] = diff
    return "\n".join(lines) + "\n", summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args()
    if args.repeats < 1:
        sys.exit(f"error: --repeats {args.repeats} must be at least 1")
    os.makedirs(OUT, exist_ok=True)
    scores = os.path.join(OUT, "scores.jsonl")
    rows = []
    if os.path.exists(scores):
        with open(scores) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    if not args.tables_only:
        have = {(r["study"], r["label"], r["set"]) for r in rows if r["repeats"] == args.repeats}
        todo = [(t, s) for t in targets() for s in SETS if (t[0], t[2], s) not in have]
        for n, ((study, run, label, weights), which) in enumerate(todo, 1):
            print(f"[{n}/{len(todo)}] {study} {label} {which}", file=sys.stderr, flush=True)
            values, command = evaluate(run, weights, which, args.repeats)
            row = {"study": study, "label": label, "run": run, "weights": weights, "set": which,
                   "repeats": args.repeats, "values": values, "command": command}
            rows.append(row)
            with open(scores, "a") as f:
                f.write(json.dumps(row) + "\n")
    rows = [r for r in rows if r["repeats"] == args.repeats]
    text, summary = tables(rows, args.repeats)
    # The command that scores (--tables-only rewrites the same tables from its lines).
    summary["command"] = f"python3 scripts/hib-validation-digits.py --repeats {args.repeats}"
    write(os.path.join(OUT, "summary.json"), json.dumps(summary, indent=2) + "\n")
    write(os.path.join(OUT, "table.md"), text)
    print(text)


if __name__ == "__main__":
    main()
