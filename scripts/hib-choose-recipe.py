#!/usr/bin/env python3
"""Choose the instance tables' recipe from a finished lever study (issue 33).

    python3 scripts/hib-choose-recipe.py [--study instance-levers-f32] [--min-seeds 2] [--out FILE] [--dry-run]

The lever with the best mean validation score over its seeds (best.json's score: the mean of the
four Table 1 numbers on the held-out training images at the watch they chose; test images choose
nothing) wins, and its seed-0 run's config.json gives the recipe: the settings the levers vary
(batch shape, pair set, learning rate and its schedule, normalisation, EMA, conv widths) and the
study's protocol, validation share and precision. The others (loss, beta, samples, occlusion, ...)
stay hedge's defaults, the paper's, as in every lever run; each table run sets digits, dim, model,
steps and seed itself. Every lever of the study (--levers; default: those
scripts/hib-levers-instance.sh trains when given none) must have finished at least --min-seeds seeds, so a lever
still training, or not started, cannot lose by being absent. The recipe is written to a
temporary file beside --out (default results/hib/recipe.toml) and renamed over it; --dry-run
prints it instead.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_blocks.common import ROOT  # noqa: E402
from readme_blocks.hib import HIB, RECIPE_STUDY, lever_runs, load, ranked_levers, recipe_keys  # noqa: E402


def study_levers():
    """The levers scripts/hib-levers-instance.sh trains when given none (its `runs=(...)` line)."""
    with open(os.path.join(ROOT, "scripts", "hib-levers-instance.sh")) as f:
        m = re.search(r"^\s*runs=\(([a-z0-9 -]+)\)$", f.read(), re.M)
    if not m:
        sys.exit("hib-choose-recipe: scripts/hib-levers-instance.sh has no default `runs=(...)` line; pass --levers")
    return m.group(1).split()


def toml_value(value):
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", default=RECIPE_STUDY, help="a lever study's folder under results/hib")
    parser.add_argument("--min-seeds", type=int, default=2, help="seeds every lever must have finished")
    parser.add_argument("--out", default=os.path.join(HIB, "recipe.toml"))
    parser.add_argument("--levers", help="comma-separated levers that must all have finished (default: the lever script's default list)")
    parser.add_argument("--dry-run", action="store_true", help="print the recipe, write nothing")
    args = parser.parse_args()

    if not lever_runs(args.study):
        sys.exit(f"hib-choose-recipe: results/hib/{args.study} holds no lever run (scripts/hib-levers-instance.sh makes them)")
    levers = args.levers.split(",") if args.levers else study_levers()
    ranked = ranked_levers(args.study)
    counts = {lever: len(runs) for lever, _, runs in ranked}
    short = [f"{lever} ({counts.get(lever, 0)})" for lever in levers if counts.get(lever, 0) < args.min_seeds]
    if short:
        sys.exit(f"hib-choose-recipe: results/hib/{args.study}: these levers have fewer than {args.min_seeds} "
                 f"finished seeds: {', '.join(short)}; finish them (scripts/hib-levers-instance.sh SEED) "
                 f"or lower --min-seeds")
    winner, mean, runs = ranked[0]
    folder = min(runs)[2]
    config = load(os.path.join(folder, "config.json"))["hib"]
    rel = os.path.relpath(folder, ROOT)
    lines = [
        "# The recipe of the instance-protocol tables (results/hib/README.md): MoG-1's settings, applied to",
        "# point, MoG-1 and MoG-2 by `hedge hib reproduce --config` (scripts/hib-table.sh).",
        "#",
        f"# Written by `python3 scripts/hib-choose-recipe.py --study {args.study}`: the lever with the best",
        f"# mean validation score over its seeds, {winner} ({mean:.4f} over {len(runs)} seeds; the ranking is",
        f"# in results/hib/{args.study}/README.md). From {rel}/config.json:",
        "# the settings the levers vary and the ones the study fixed; the rest are hedge's defaults (the",
        "# paper's), as in every lever run.",
        'model = "gaussian"',
    ]
    for key in recipe_keys(config):
        lines.append(f"{key} = {toml_value(config[key])}")
    text = "\n".join(lines) + "\n"
    if args.dry_run:
        sys.stdout.write(text)
        return
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print(f"{args.out}: {winner} ({mean:.4f}, {len(runs)} seeds)")


if __name__ == "__main__":
    main()
