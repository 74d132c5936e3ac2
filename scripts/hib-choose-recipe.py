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
studies/hib/<study>.toml trains) must have finished at least --min-seeds seeds, so a lever
still training, or not started, cannot lose by being absent. The recipe is written to a
temporary file beside --out (default results/hib/recipe.toml) and renamed over it; --dry-run
prints it instead.

    python3 scripts/hib-choose-recipe.py --ab-study weight-decay [--min-seeds 2] [--out FILE] [--dry-run]

adds an A/B study's arm (studies/hib/ab-<study>.toml) to the base recipe the arms were trained on
(results/hib/ab-recipe.toml): of the arms that beat the study's control runs on the validation
score at every seed both have (the same images, digits and step count), the one with the best
mean wins, and the settings its seed-0 run sets away from hedge's defaults (weight decay, dropout,
recompose, digit shift, validation digits, hidden units) join the base recipe's. An arm whose
largest table network (N = 3, MoG-2, D = 3) has weights over 5 MB cannot win: the repository
keeps no file over 5 MB, and the tables' weights must stay in it to be scored again. A study whose
arms add one setting to another study's arm (hidden: to weight-decay's wd1e-1) is measured against
that arm's runs, and its winner carries that arm's settings too. Every arm the study trains must
have finished --min-seeds seeds; when no arm beats the control the base recipe stands and nothing
is written.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
HIB = os.path.join(ROOT, "results", "hib")
# What a lever of an instance lever study may change, and what the study fixed for all of its
# levers (the recipe this script writes; hedge-lab's HIB report names a table's recipe by them).
LEVER_KEYS = ("batch", "batch_pairs", "group_classes", "group_size", "pair_set", "learning_rate", "warmup_steps",
              "lr_schedule", "norm", "ema_decay", "channels")
STUDY_KEYS = ("protocol", "validation_fraction", "validation_seed", "conv_precision")
# What an arm of an A/B study (studies/hib/ab-*.toml) adds to the recipe, with the value a
# config written before the field existed means (hedge's default, the paper's).
AB_KEYS = {"weight_decay": 0.0, "dropout": 0.0, "recompose": False, "digit_shift": 0, "validation_digits": "shared",
           "hidden_units": 0}
RECIPE_STUDY = "instance-levers-f32"


def load(path):
    with open(path) as f:
        return json.load(f)


def lever_runs(study):
    """(lever, seed, folder) of every `<lever>-seed<N>` run folder under results/hib/<study>."""
    base = os.path.join(HIB, study)
    if not os.path.isdir(base):
        return []
    runs = []
    for d in sorted(os.listdir(base)):
        m = re.fullmatch(r"(.+)-seed([0-9]+)", d)
        if m and os.path.isdir(os.path.join(base, d)):
            runs.append((m.group(1), int(m.group(2)), os.path.join(base, d)))
    return runs


def ranked_levers(study):
    """(lever, mean validation score, runs) of a lever study's finished runs, best first; runs are
    (seed, best validation score, folder)."""
    scores = {}
    for lever, seed, folder in lever_runs(study):
        if os.path.exists(os.path.join(folder, "done")):
            scores.setdefault(lever, []).append((seed, load(os.path.join(folder, "best.json"))["score"], folder))
    means = {lever: sum(s for _, s, _ in runs) / len(runs) for lever, runs in scores.items()}
    return [(lever, means[lever], scores[lever]) for lever in sorted(scores, key=lambda k: -means[k])]


def recipe_keys(config):
    """The recipe fields of a run's `hib` config: LEVER_KEYS and STUDY_KEYS less the batch settings
    its batch composition does not use, then the A/B keys the config sets away from their defaults."""
    keys = []
    for key in LEVER_KEYS + STUDY_KEYS:
        if key == "batch_pairs" and config["batch"] == "grouped":
            continue
        if key in ("group_classes", "group_size") and config["batch"] != "grouped":
            continue
        keys.append(key)
    return keys + [key for key, default in AB_KEYS.items() if config.get(key, default) != default]


def load_toml_recipe(path=os.path.join(HIB, "recipe.toml")):
    """A recipe file's `key = value` lines (this script writes JSON-compatible values)."""
    recipe = {}
    with open(path) as f:
        for line in f:
            m = re.fullmatch(r"(\w+) = (.+)", line.strip())
            if m:
                recipe[m.group(1)] = json.loads(m.group(2))
    return recipe


def load_plan(name):
    """The study plan studies/hib/<name>.toml."""
    import tomllib
    path = os.path.join(ROOT, "studies", "hib", f"{name}.toml")
    if not os.path.exists(path):
        sys.exit(f"hib-choose-recipe: no study plan {os.path.relpath(path, ROOT)}; pass --levers")
    with open(path, "rb") as f:
        return tomllib.load(f)


def plan_runs(name):
    """The names of the [[runs]] of the study plan studies/hib/<name>.toml."""
    return [run["name"] for run in load_plan(name).get("runs", [])]


def ab_studies():
    """The A/B studies that train arms on the shared base recipe: their plans studies/hib/ab-*.toml."""
    folder = os.path.join(ROOT, "studies", "hib")
    return sorted(f[len("ab-"):-len(".toml")] for f in os.listdir(folder) if f.startswith("ab-") and f.endswith(".toml"))


def ab_control(study):
    """(study, arm) whose runs an A/B study is measured against: its plan's [report] control_from
    (an arm of another study its arms add one setting to), else its own control."""
    source = load_plan(f"ab-{study}").get("report", {}).get("control_from")
    return (source["study"], source["arm"]) if source else (study, "control")


def study_levers(study):
    """The levers the study plan of `study` trains (studies/hib/<study>.toml)."""
    return plan_runs(study)


def ab_study_arms(study):
    """The lever arms the A/B study plan studies/hib/ab-<study>.toml trains beside its control."""
    return [arm for arm in plan_runs(f"ab-{study}") if arm != "control"]


def ab_runs(study):
    """(arm, seed, folder, test report) of an A/B study's runs: the shell loop's `<arm>-seed<N>/`
    with `<arm>-seed<N>.test.json` beside it, and `hedge study`'s `runs/<arm>,seed=<N>/` with
    its `eval.json`."""
    runs = [(arm, seed, folder, f"{folder}.test.json") for arm, seed, folder in lever_runs(study)]
    base = os.path.join(HIB, study, "runs")
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        m = re.fullmatch(r"(.+),seed=([0-9]+)", d)
        if m and os.path.isdir(os.path.join(base, d)):
            folder = os.path.join(base, d)
            runs.append((m.group(1), int(m.group(2)), folder, os.path.join(folder, "eval.json")))
    return runs


def finished_scores(study, arms):
    """{arm: {seed: (validation score, folder)}} of a study's finished runs (its test score written)."""
    scores = {}
    for arm, seed, folder, test in ab_runs(study):
        if arm in arms and os.path.exists(test):
            scores.setdefault(arm, {})[seed] = (load(os.path.join(folder, "best.json"))["score"], folder)
    return scores


# The repository keeps no file over 5 MB, and a table's weights must stay in it: later sessions
# score them again (studies/hib/test-seen.toml) from a clean checkout.
MAX_WEIGHT_BYTES = 5_000_000


def largest_table_weight_bytes(config):
    """Bytes of the f32 weights of the largest network the tables train with this recipe: N = 3
    (28 x 84 images: 7 x 21 pooled positions), MoG-2 at D = 3 (2 components x mean and variance x
    3 outputs), plus the match head's a and b."""
    c1, c2 = config.get("channels", [32, 64])
    features = c2 * 7 * 21
    hidden = config.get("hidden_units", 0)
    outputs = 2 * 2 * 3
    convs = 25 * (1 * c1 + c1 * c2) + c1 + c2
    head_inputs = hidden or features
    return 4 * (convs + (features * hidden + hidden if hidden else 0) + head_inputs * outputs + outputs + 2)


def choose_ab_arm(study, min_seeds):
    """(arm, mean score, seeds, folder of its seed-0 run) of the A/B arm that beats the control at
    every shared seed with the best mean validation score, among those whose largest table's
    weights the repository can hold (MAX_WEIGHT_BYTES), or None; the verdict of each arm."""
    arms = ab_study_arms(study)
    scores = finished_scores(study, arms)
    control_study, control_arm = ab_control(study)
    control = finished_scores(control_study, [control_arm]).get(control_arm, {})
    short = [f"{arm} ({len(scores.get(arm, {}))})" for arm in arms if len(scores.get(arm, {})) < min_seeds]
    if short or len(control) < min_seeds:
        sys.exit(f"hib-choose-recipe: results/hib/{study}: fewer than {min_seeds} finished seeds for "
                 f"{', '.join(short + ([f'control ({len(control)})'] if len(control) < min_seeds else []))}; "
                 f"finish them (hedge study studies/hib/ab-{study}.toml) or lower --min-seeds")
    best, verdicts = None, []
    for arm in arms:
        seeds = sorted(scores[arm])
        mean = sum(scores[arm][s][0] for s in seeds) / len(seeds)
        shared = [s for s in seeds if s in control]
        beats = bool(shared) and all(scores[arm][s][0] > control[s][0] for s in shared)
        weights = largest_table_weight_bytes(load(os.path.join(scores[arm][min(seeds)][1], "config.json"))["hib"])
        fits = weights <= MAX_WEIGHT_BYTES
        verdicts.append(f"{arm} {mean:.4f} over seeds {', '.join(map(str, seeds))}, "
                        + ("above" if beats else "not above") + " the control at every seed"
                        + ("" if fits else f"; its N = 3 weights ({weights / 1e6:.1f} MB) exceed the "
                           f"{MAX_WEIGHT_BYTES / 1e6:.0f} MB a file in the repository may take"))
        if beats and fits and (best is None or mean > best[1]):
            best = (arm, mean, seeds, scores[arm][min(seeds)][1])
    return best, verdicts


def write_recipe(text, out, dry_run, said):
    if dry_run:
        sys.stdout.write(text)
        return
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    print(f"{out}: {said}")


def main_ab(args):
    best, verdicts = choose_ab_arm(args.ab_study, args.min_seeds)
    if best is None:
        sys.exit(f"hib-choose-recipe: no arm of results/hib/{args.ab_study} beats its control at every seed "
                 f"({'; '.join(verdicts)}); the base recipe stands, nothing written")
    arm, mean, seeds, folder = best
    config = load(os.path.join(folder, "config.json"))["hib"]
    base_path = os.path.join(HIB, "ab-recipe.toml")
    base = load_toml_recipe(base_path)
    differs = [k for k in recipe_keys(config) if k not in AB_KEYS and config[k] != base.get(k)]
    if differs:
        sys.exit(f"hib-choose-recipe: {os.path.relpath(folder, ROOT)}/config.json differs from "
                 f"results/hib/ab-recipe.toml in {', '.join(differs)}: the arm was not trained on that base recipe")
    added = [k for k in AB_KEYS if k in recipe_keys(config)]
    with open(base_path) as f:
        base_lines = [line.rstrip("\n") for line in f if re.fullmatch(r"\w+ = .+", line.strip())]
    lines = [
        "# The recipe of the instance-protocol tables (results/hib/README.md): MoG-1's settings, applied to",
        "# point, MoG-1 and MoG-2 by `hedge hib reproduce --config` (studies/hib/table.toml).",
        "#",
        f"# Written by `python3 scripts/hib-choose-recipe.py --ab-study {args.ab_study}`: the base recipe the",
        "# A/B studies train on (results/hib/ab-recipe.toml, itself the lever study's choice) and the",
        f"# settings of the arm {arm}{on_top(args.ab_study)}, above the control at every seed on the validation score (mean",
        f"# {mean:.4f} over seeds {', '.join(map(str, seeds))}; the runs are in results/hib/{args.ab_study}/,",
        "# time-to-quality.md section 2). Every arm's mean validation score:",
        *(f"#   {verdict}" for verdict in verdicts),
        *base_lines,
        *(f"{k} = {toml_value(config[k])}" for k in added),
    ]
    write_recipe("\n".join(lines) + "\n", args.out, args.dry_run, f"base recipe + {args.ab_study}/{arm} ({mean:.4f})")


def on_top(study):
    """` (added to weight-decay/wd1e-1, its control)` for a study measured against another's arm."""
    other, arm = ab_control(study)
    return "" if arm == "control" else f" (added to {other}/{arm}, its control)"


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
    parser.add_argument("--levers", help="comma-separated levers that must all have finished (default: the study plan's runs)")
    parser.add_argument("--dry-run", action="store_true", help="print the recipe, write nothing")
    parser.add_argument("--ab-study", choices=ab_studies(), help="add the best arm of this A/B study to results/hib/ab-recipe.toml")
    args = parser.parse_args()
    if args.ab_study:
        return main_ab(args)

    if not lever_runs(args.study):
        sys.exit(f"hib-choose-recipe: results/hib/{args.study} holds no lever run (hedge study studies/hib/{args.study}.toml makes them)")
    levers = args.levers.split(",") if args.levers else study_levers(args.study)
    ranked = ranked_levers(args.study)
    counts = {lever: len(runs) for lever, _, runs in ranked}
    short = [f"{lever} ({counts.get(lever, 0)})" for lever in levers if counts.get(lever, 0) < args.min_seeds]
    if short:
        sys.exit(f"hib-choose-recipe: results/hib/{args.study}: these levers have fewer than {args.min_seeds} "
                 f"finished seeds: {', '.join(short)}; finish them (hedge study studies/hib/{args.study}.toml) "
                 f"or lower --min-seeds")
    winner, mean, runs = ranked[0]
    folder = min(runs)[2]
    config = load(os.path.join(folder, "config.json"))["hib"]
    rel = os.path.relpath(folder, ROOT)
    lines = [
        "# The recipe of the instance-protocol tables (results/hib/README.md): MoG-1's settings, applied to",
        "# point, MoG-1 and MoG-2 by `hedge hib reproduce --config` (studies/hib/table.toml).",
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
    write_recipe("\n".join(lines) + "\n", args.out, args.dry_run, f"{winner} ({mean:.4f}, {len(runs)} seeds)")


if __name__ == "__main__":
    main()
