"""HIB blocks (`<!-- hib:NAME:begin -->`) not yet written by `hedge report` (the first
reproduction's experiments, the split curves, own data, identification and the GPU run are:
`crates/hedge-lab/src/hib/report.rs`):

- `open-set` (README.md, results/hib/README.md): Table 1 of every open-set setting
  (results/hib/open-set/<setting>/summary.json), ours beside the paper, and how far the two
  open-set test splits lie apart;
- `instance-levers` (results/hib/instance-levers/README.md, results/hib/README.md,
  results/hib/time-to-quality.md): per lever and seed of the instance-protocol lever study, the
  validation and test numbers of the model the validation images chose (best.json's watch) and of
  the last watch, and the mean validation score over seeds;
- `instance-levers-f32` (results/hib/instance-levers-f32/README.md, results/hib/time-to-quality.md):
  the same for the f32 study planned on an AVX2-only CPU;
- `instance-tables` (README.md, results/hib/README.md): Table 1 of every instance setting that
  has a summary.json (results/hib/<setting>/), the lever whose recipe each setting trained, and
  the run folders that have ended (a reproduction under way writes its summary.json only at its
  end); `paper-items` (results/hib/README.md) the file each of the paper's tables and figures
  went to in those folders, and the command that writes the ones still missing;
- `instance-acceptance` (results/hib/time-to-quality.md): issue 33's acceptance read from
  results/hib/n2-d2/summary.json (the newest table moved aside, until the retrained one ends) — each cell's distance to the paper, and HIB against point on the corrupt columns;
  `instance-acceptance-others` the same for every other instance setting; `n2-d2-against-second`
  (results/hib/time-to-quality.md) each ended run of n2-d2/ beside the same run of the second
  table moved aside, while the retrained table has no summary (`others-against-asides` the same for
  every other setting with a table moved aside); `n2-d2-tables` the same setting's
  summary beside every table moved aside from it, with the gain over each of as many seeds;
- `recompose`, `digit-shift`, `weight-decay`, `dropout` (results/hib/time-to-quality.md): the A/B
  studies of studies/hib/ab-*.toml, each arm's validation and test numbers and its gap to the
  control, seed by seed and over the run;
- `test-seen` (results/hib/README.md): the N = 3 tables' runs on the instance test table and on
  test_seen (100 classes of 100 images, the paper's first version's N = 3 test set);
- `n3-levers` (results/hib/time-to-quality.md): the batch shapes of studies/hib/n3-levers.toml at
  N = 3, D = 2, each run on both N = 3 test sets beside the first table's MoG-1 and the paper.
- `precision` (README.md): per result folder, how many committed runs trained their convolutions
  in bf16 and how many in f32 (each run's `config.json`), and on which device.
"""
import json
import math
import os
import re

from .common import ROOT, load_lines

HIB = os.path.join(ROOT, "results", "hib")
SETTINGS = ("n2-d2", "n2-d3", "n3-d2", "n3-d3")
# The first N = 2, D = 2 table, trained on the recipe the f32 lever study first chose (d-peak1e-2,
# 32 x 8 images, the long run's recipe) and moved aside when N = 2, D = 2 was retrained on the
# re-chosen recipe; its JSON path fields name the new folder, its recorded commands the old one.
N2D2_FIRST = "n2-d2-d-peak1e-2"
# The second, trained on the re-chosen recipe (l-peak1e-2-16x16, 16 x 16 images) and moved aside
# (`scripts/hib-move-table.py`) when N = 2, D = 2 was retrained on it with weight decay
# (`weight-decay/`): its first pass's summary (one seed a model) and the third pass's runs so far.
N2D2_SECOND = "n2-d2-l-peak1e-2-16x16"
# Every table moved aside (`scripts/hib-move-table.py`) before its setting was retrained on a
# re-chosen recipe: folder -> (setting, how a table row names it), newest first within a setting.
ASIDE_TABLES = {N2D2_SECOND: ("n2-d2", "second table"), N2D2_FIRST: ("n2-d2", "first table"),
                **{f"{setting}-l-peak1e-2-16x16": (setting, "first table") for setting in ("n2-d3", "n3-d2", "n3-d3", "n2-d1")}}


def asides(setting):
    """The folders moved aside from `setting`, newest first."""
    return [folder for folder, (of, _) in ASIDE_TABLES.items() if of == setting]


# Every instance table folder under results/hib, in the order the README tables list them: each
# setting, then the tables moved aside from it; Appendix D's number line last.
INSTANCE_TABLES = tuple(f for setting in SETTINGS + ("n2-d1",) for f in (setting, *asides(setting)))
# The folders of Tables 1 and 2 (all but the number line's).
TABLE_FOLDERS = tuple(f for f in INSTANCE_TABLES if ASIDE_TABLES.get(f, (f,))[0] in SETTINGS)
MODELS = (("point", "point"), ("mog1", "MoG-1"), ("mog2", "MoG-2"))
CELLS = (("verification_ap", "clean"), ("verification_ap", "corrupt"), ("knn_accuracy", "clean"),
         ("knn_accuracy", "corrupt"))
CELL_NAMES = ("AP clean", "AP corrupt", "KNN clean", "KNN corrupt")
WATCH_KEYS = ("ap_clean", "ap_corrupt", "knn_clean", "knn_corrupt")
# What a lever of an instance lever study may change, and what the study fixed for all of its
# levers: the recipe `scripts/hib-choose-recipe.py` writes, and what names a table's recipe.
LEVER_KEYS = ("batch", "batch_pairs", "group_classes", "group_size", "pair_set", "learning_rate", "warmup_steps",
              "lr_schedule", "norm", "ema_decay", "channels")
STUDY_KEYS = ("protocol", "validation_fraction", "validation_seed", "conv_precision")
# What an arm of an A/B study (studies/hib/ab-*.toml) adds to the recipe, with the value a
# config written before the field existed means (hedge's default, the paper's).
AB_KEYS = {"weight_decay": 0.0, "dropout": 0.0, "recompose": False, "digit_shift": 0, "validation_digits": "shared"}
# The A/B studies that train arms on the shared base recipe (`results/hib/ab-recipe.toml`), in the
# order they were run, with the study whose control runs they are measured against.
AB_STUDIES = {"recompose": "recompose", "digit-shift": "digit-shift", "weight-decay": "digit-shift",
              "dropout": "digit-shift"}
RECIPE_STUDY = "instance-levers-f32"


def setting_label(setting):
    """`n2-d3` -> `N = 2, D = 3`; the first N = 2, D = 2 table -> `N = 2, D = 2 (first table)`."""
    if setting in ASIDE_TABLES:
        of, name = ASIDE_TABLES[setting]
        return f"{setting_label(of)} ({name})"
    return setting.replace("n", "N = ").replace("-d", ", D = ")


def load(path):
    with open(path) as f:
        return json.load(f)


def cell(model, metric, variant):
    value = model[metric][variant]
    sd = model[metric].get(f"{variant}_std")
    return f"{value:.3f}" if sd is None else f"{value:.3f} ± {sd:.3f}"


def four_cells(report):
    """`AP clean / AP corrupt / KNN clean / KNN corrupt` of an eval report or a paper entry."""
    return " / ".join(f"{report[metric][variant]:.3f}" for metric, variant in CELLS)


def headline_cells(m):
    """The four Table 1 cells of a summary's model under the headline KNN reading: the probe's own
    image (twin) kept in the gallery (`knn_kept`, results/hib/README.md says why), as
    (metric, variant, value) with metric `knn_kept`; None for KNN where the runs lack the reading."""
    out = []
    for metric, variant in CELLS:
        if metric == "knn_accuracy":
            kept = m.get("knn_kept")
            out.append(("knn_kept", variant, kept[variant] if kept else None))
        else:
            out.append((metric, variant, m[metric][variant]))
    return out


def table1_rows(folder, label, both_knn=False):
    """Rows `| setting | model | seeds | AP c | AP k | KNN c | KNN k |`, ours (paper); with
    `both_knn`, the KNN columns under the headline reading (probe kept in the gallery) and then
    under leave-one-out."""
    s = load(os.path.join(folder, "summary.json"))
    rows = []
    columns = CELLS + ((("knn_accuracy", "clean"), ("knn_accuracy", "corrupt")) if both_knn else ())
    for key, name in MODELS:
        m = s["models"].get(key)
        if m is None:
            continue
        paper = (s.get("paper") or {}).get(key)
        cells = []
        for k, (metric, variant) in enumerate(columns):
            if both_knn and k in (2, 3):
                metric = "knn_kept"
                if not m.get(metric):
                    cells.append("not scored")
                    continue
            ours = cell(m, metric, variant)
            p = paper["knn_accuracy" if metric == "knn_kept" else metric][variant] if paper else None
            cells.append(f"{ours} ({p:.3f})" if p is not None else ours)
        # An instance table scored on another test set than `test` (N = 3: `test_seen`) says so.
        split = f", `{s['split']}`" if s.get("protocol") == "instance" and s.get("split", "test") != "test" else ""
        rows.append(f"| {label}{split} | {name} | {m['seeds']} | " + " | ".join(cells) + " |")
    return s, rows


def open_set_block():
    out = ["| N, D | model | seeds | AP clean | AP corrupt | KNN clean | KNN corrupt |",
           "|---|---|---|---|---|---|---|"]
    gaps = []
    budgets, held_out = set(), set()
    for setting in SETTINGS:
        folder = os.path.join(HIB, "open-set", setting)
        if not os.path.exists(os.path.join(folder, "summary.json")):
            continue
        s, rows = table1_rows(folder, setting_label(setting))
        out += rows
        budgets.add(s["budget_minutes"])
        for model in s["models"].values():
            for run in model["runs"]:
                held_out.add(load(os.path.join(ROOT, run, "config.json"))["hib"]["validation_classes"])
        other = s.get("other_split")
        if other:
            for key, name in MODELS:
                for metric, variant in CELLS:
                    a = s["models"][key][metric][variant]
                    b = other["models"][key][metric][variant]
                    gaps.append((abs(a - b), f"{setting} {name} {metric.split('_')[0].upper()} {variant}", a, b))
    budget = " or ".join(f"{b:g}" for b in sorted(budgets))
    classes = " or ".join(str(c) for c in sorted(held_out))
    out = [f"Open-set tables (hedge's extension, not the paper's Table 1): trained on the \"number\" tables' "
           f"training classes less {classes} held out as validation classes (at N = 2, {70 - min(held_out)} of 70), "
           f"scored on `test_unseen` (classes never trained on), {budget} minutes of training a model; ours "
           "(paper's Table 1), mean ± sd over seeds where there are several:", ""] + out
    if gaps:
        ap = max(g for g in gaps if "VERIFICATION" in g[1])
        knn = max(g for g in gaps if "KNN" in g[1])
        out += ["", f"`test_seen` beside `test_unseen` (each folder's `other_split`): verification AP differs by up "
                f"to {ap[0]:.3f} ({ap[1].replace('VERIFICATION', 'AP')}: {ap[2]:.3f} unseen, {ap[3]:.3f} seen), "
                f"KNN by up to {knn[0]:.3f} ({knn[1]}: {knn[2]:.3f} unseen, {knn[3]:.3f} seen)."]
    return "\n".join(out)


def instance_tables_block():
    out = ["| N, D | model | seeds | AP clean | AP corrupt | KNN clean | KNN corrupt | KNN clean, leave-one-out "
           "| KNN corrupt, leave-one-out |",
           "|---|---|---|---|---|---|---|---|---|"]
    found = False
    for setting in TABLE_FOLDERS:
        folder = os.path.join(HIB, setting)
        path = os.path.join(folder, "summary.json")
        if not os.path.exists(path) or load(path).get("protocol") != "instance":
            continue
        found = True
        out += table1_rows(folder, setting_label(setting), both_knn=True)[1]
    if not found:
        out = ["No instance-protocol table has finished yet (`scripts/hib-table.sh` trains them; "
               "`results/hib/time-to-quality.md` says where the study stands)."]
    note = ("KNN clean and KNN corrupt: each clean test image's K = 5 neighbours in the whole test gallery, "
            "its own image (or occluded twin) kept, the headline reading (`results/hib/README.md` says why, under "
            "\"KNN accuracy\"); "
            "the last two columns leave it out. A table whose runs were scored before the kept reading existed "
            "and was not scored again says `not scored`.")
    extra = [line for line in (note, recipes_line(), finished_runs_line()) if line]
    return "\n".join(out + [x for line in extra for x in ("", line)])


# The paper's results a reproduction writes, the file that holds each, and the instance table
# folders meant to hold it (Table 5 and Appendix B are trained where scripts/hib-table.sh asks).
PAPER_ITEMS = (
    ("Table 1: verification AP and KNN accuracy", "table1.md", TABLE_FOLDERS),
    ("Table 2: Kendall's τ between the η bin and AP or KNN", "table2.md", TABLE_FOLDERS),
    ("Table 5 (Appendix E): β = 0 against β = 1e-4", "table5.md",
     ("n2-d2", *asides("n2-d2"), "n3-d3", *asides("n3-d3"))),
    ("Table 6 (Appendix G): plurality KNN by gallery and probe", "table6.md", TABLE_FOLDERS),
    ("Table 7 (Appendix G): τ by gallery and probe", "table7.md", TABLE_FOLDERS),
    ("Appendix B (Figure 6): soft against vanilla contrastive loss, four margins", "appendix_b.md",
     ("n2-d2", *asides("n2-d2"))),
    ("Appendix D (Figure 11): the number line, adjacent pairs and run lengths", "appendix_d.md", ("n2-d1", *asides("n2-d1"))),
    ("Figure 5: AP and KNN by η bin (N = 3, D = 3, MoG-1)", "uncertainty_bins_mog1.png", ("n3-d3", *asides("n3-d3"))),
    ("Figures 3, 7, 8: embeddings of clean and corrupt test images", "embeddings_mog1.png", TABLE_FOLDERS),
)


def paper_items_block():
    """Where each of the paper's results lives among the instance tables: the folders whose file
    exists, and the command that writes the others."""
    rows = []
    for item, name, folders in PAPER_ITEMS:
        have = [f"`{f}/{name}`" for f in folders if os.path.exists(os.path.join(HIB, f, name))]
        missing = [f for f in folders if not os.path.exists(os.path.join(HIB, f, name))
                   and f not in ASIDE_TABLES]
        todo = ("not yet: " + ", ".join(f"`scripts/hib-table.sh {f}`" for f in missing)) if missing else ""
        rows.append(f"| {item} | {', '.join(have) or '—'} | {todo} |")
    return "\n".join(["| the paper's | written to | still to come |", "|---|---|---|"] + rows)


def recipe_keys(config):
    """The recipe fields of a run's `hib` config: LEVER_KEYS and STUDY_KEYS less the batch settings
    its batch composition does not use (config.json records both), then the A/B keys the config
    sets away from their defaults."""
    keys = []
    for key in LEVER_KEYS + STUDY_KEYS:
        if key == "batch_pairs" and config["batch"] == "grouped":
            continue
        if key in ("group_classes", "group_size") and config["batch"] != "grouped":
            continue
        keys.append(key)
    return keys + [key for key, default in AB_KEYS.items() if config.get(key, default) != default]


def recipe_value(config, key):
    """A recipe field of a `hib` config, an A/B key absent from an older config read as its default."""
    return config.get(key, AB_KEYS.get(key))


def same_recipe(a, b):
    """Whether two `hib` configs train the same recipe (the fields `recipe_keys` names in either)."""
    keys = dict.fromkeys(recipe_keys(a) + recipe_keys(b))
    return all(recipe_value(a, k) == recipe_value(b, k) for k in keys)


def recipe_lever(config, study=RECIPE_STUDY):
    """The lever of `study` whose seed-0 run trained the recipe of `config` (a `hib` config), or an
    A/B study's arm on it (`l-peak1e-2-16x16 + weight-decay/wd1e-1`), or None: how a table names
    the recipe it trained once `recipe.toml` has moved on."""
    for lever, seed, folder in lever_runs(study):
        if seed == 0 and same_recipe(load(os.path.join(folder, "config.json"))["hib"], config):
            return lever
    for ab_study in AB_STUDIES:
        for arm, seed, folder in lever_runs(ab_study):
            if seed != 0 or arm == "control":
                continue
            arm_config = load(os.path.join(folder, "config.json"))["hib"]
            if same_recipe(arm_config, config):
                # The arm's recipe less its own settings is a lever's (no arm sets none).
                named = recipe_lever({**arm_config, **AB_KEYS}, study)
                return f"{named or 'a recipe of no lever'} + {ab_study}/{arm}"
    return None


def recipes_line():
    """Which lever's recipe each instance setting trained (its `config.json`), so that tables
    trained before `recipe.toml` was re-chosen say so."""
    current = load_toml_recipe()
    named = []
    for setting in INSTANCE_TABLES:
        path = os.path.join(HIB, setting, "config.json")
        if not os.path.exists(path):
            continue
        config = load(path)["recipe"]
        lever = recipe_lever(config) or "a recipe of no lever"
        today = (all(recipe_value(config, k) == v for k, v in current.items())
                 and all(k in current for k in recipe_keys(config) if k in AB_KEYS))
        mark = " (today's `recipe.toml`)" if today else ""
        named.append(f"{setting_label(setting)} `{lever}`{mark}")
    if not named:
        return ""
    return (f"Recipe each setting trained (its `config.json`, named by the `{RECIPE_STUDY}/` lever whose "
            "seed 0 trained it, and the arm of an A/B study, `studies/hib/ab-*.toml`, added to it where "
            "one was): " + "; ".join(named) + ".")


def load_toml_recipe(path=os.path.join(HIB, "recipe.toml")):
    """A recipe file's `key = value` lines (default `results/hib/recipe.toml`; the chooser writes
    JSON-compatible values)."""
    recipe = {}
    with open(path) as f:
        for line in f:
            m = re.fullmatch(r"(\w+) = (.+)", line.strip())
            if m:
                recipe[m.group(1)] = json.loads(m.group(2))
    return recipe


def seed_ranges(seeds):
    """`[0, 1, 2, 4]` -> `0–2, 4`."""
    parts, start = [], None
    for i, seed in enumerate(seeds):
        if start is None:
            start = seed
        if i + 1 == len(seeds) or seeds[i + 1] != seed + 1:
            parts.append(f"{start}" if start == seed else f"{start}–{seed}")
            start = None
    return ", ".join(parts)


def finished_runs_line():
    """Which run folders of each instance setting have ended (`runs/*/eval.json`), so that the
    state of a reproduction still under way is read from the committed folders, not from prose:
    `summary.json` (the table above) is written only when every run of a reproduction has ended."""
    settings = []
    for setting in INSTANCE_TABLES:
        by_model = {}
        for model, seed, folder in lever_runs(os.path.join(setting, "runs")):
            if os.path.exists(os.path.join(folder, "eval.json")):
                by_model.setdefault(model, []).append(seed)
        if by_model:
            count = sum(len(v) for v in by_model.values())
            models = "; ".join(f"`{model}` seed{'s' if len(seeds) > 1 else ''} {seed_ranges(sorted(seeds))}"
                               for model, seeds in by_model.items())
            line = f"{setting_label(setting)}, {count} run{'s' if count > 1 else ''} ({models})"
            if not os.path.exists(os.path.join(HIB, setting, "summary.json")):
                # No table row yet: each ended run's own four test numbers.
                line += ", test AP clean / AP corrupt / KNN clean / KNN corrupt: " + "; ".join(
                    f"`{model}-seed{seed}` " + four_cells(e)
                    for model, seed, folder in lever_runs(os.path.join(setting, "runs"))
                    if os.path.exists(os.path.join(folder, "eval.json"))
                    for e in [load(os.path.join(folder, "eval.json"))])
            settings.append(line)
    if not settings:
        return ""
    return ("Runs that have ended (`<setting>/runs/*/eval.json`; a table row above comes from its "
            "setting's `summary.json`, rewritten only when every run of the folder's reproduction has ended): "
            + "; ".join(settings) + ".")


def lever_runs(study="instance-levers"):
    """(lever, seed, folder) of every `<lever>-seed<N>` run folder under results/hib/<study> (an
    instance lever study, or a table's `<setting>/runs`, whose "levers" are its models)."""
    base = os.path.join(HIB, study)
    if not os.path.isdir(base):
        return []
    runs = []
    for d in sorted(os.listdir(base)):
        m = re.fullmatch(r"(.+)-seed([0-9]+)", d)
        if m and os.path.isdir(os.path.join(base, d)):
            runs.append((m.group(1), int(m.group(2)), os.path.join(base, d)))
    return runs


def ranked_levers(study="instance-levers"):
    """(lever, mean validation score, runs) of a lever study's finished runs, best first; runs are
    (seed, best validation score, folder), best.json's score being the mean of the four Table 1
    numbers on the validation images at the chosen watch."""
    scores = {}
    for lever, seed, folder in lever_runs(study):
        if os.path.exists(os.path.join(folder, "done")):
            scores.setdefault(lever, []).append((seed, load(os.path.join(folder, "best.json"))["score"], folder))
    means = {lever: sum(s for _, s, _ in runs) / len(runs) for lever, runs in scores.items()}
    return [(lever, means[lever], scores[lever]) for lever in sorted(scores, key=lambda k: -means[k])]


def fmt(q, dot=False):
    """A watch's four numbers, `a / b / c / d` (`.973` rather than `0.973` with `dot`)."""
    return " / ".join(f"{q[k]:.3f}"[1 if dot else 0:] for k in WATCH_KEYS)


def instance_levers_block(study="instance-levers"):
    out = ["| lever | seed | steps | training min (recorded) | chosen at step | validation (chosen) | test (chosen) | test (last watch) |",
           "|---|---|---|---|---|---|---|---|"]
    for lever, seed, folder in lever_runs(study):
        if not os.path.exists(os.path.join(folder, "done")):
            continue
        config = load(os.path.join(folder, "config.json"))["hib"]
        records = load_lines(os.path.join(folder, "monitor.jsonl"))
        best = load(os.path.join(folder, "best.json"))
        chosen = next(r for r in records if r["step"] == best["step"])
        last = records[-1]
        minutes = load(os.path.join(folder, "state.json"))["seconds"] / 60
        out.append(f"| {lever} | {seed} | {config['steps']} | {minutes:.1f} | {best['step']} | "
                   f"{fmt(chosen['sets']['validation'])} | {fmt(chosen['sets']['test'])} | {fmt(last['sets']['test'])} |")
    ranked = ranked_levers(study)
    if not ranked:
        return "No lever run has finished yet."
    out += ["", "| lever | seeds | mean validation score (mean of the four numbers at the chosen step) | by seed |",
            "|---|---|---|---|"]
    for lever, mean, runs in ranked:
        by_seed = " / ".join(f"{score:.4f}" for _, score, _ in sorted(runs))
        out.append(f"| {lever} | {len(runs)} | {mean:.4f} | {by_seed} |")
    return "\n".join(out)


BLOCKS = {
    "open-set": open_set_block,
    "instance-tables": instance_tables_block,
    "paper-items": paper_items_block,
    "instance-levers": instance_levers_block,
    "instance-levers-f32": lambda: instance_levers_block("instance-levers-f32"),
}


def paper_mog1_n2d2():
    """The paper's Table 1 MoG-1 values at N = 2, D = 2 (as the open-set summary records them)."""
    p = load(os.path.join(HIB, "open-set", "n2-d2", "summary.json"))["paper"]["mog1"]
    return [p[metric][variant] for metric, variant in CELLS]


def recipe_45min_block(steps=(2000, 4000, 5000, 7000, 9000)):
    folder = os.path.join(HIB, "open-set", "recipe-45min")
    records = load_lines(os.path.join(folder, "monitor.jsonl"))
    best = load(os.path.join(folder, "best.json"))["step"]
    rows = []
    for r in records:
        end = r is records[-1]
        if r["step"] not in steps and r["step"] != best and not end:
            continue
        v, t = r["sets"]["validation"], r["sets"]["test_unseen"]
        label = f"{r['train_seconds'] / 60:.1f}" + (" (best on validation)" if r["step"] == best else "") + (
            " (end of the budget)" if end else "")
        rows.append(f"| {label} | {r['step']:,} | {sum(v[k] for k in WATCH_KEYS) / 4:.3f} | "
                    f"{t['ap_clean']:.3f} / {t['ap_corrupt']:.3f} | {t['knn_clean']:.3f} / {t['knn_corrupt']:.3f} |")
    p = paper_mog1_n2d2()
    rows.append(f"| paper, 500k steps | | | {p[0]:.3f} / {p[1]:.3f} | {p[2]:.3f} / {p[3]:.3f} |")
    return "\n".join(["| minutes | step | validation score | test_unseen AP clean / corrupt | KNN clean / corrupt |",
                      "|---|---|---|---|---|"] + rows)


BLOCKS["recipe-45min"] = recipe_45min_block


# The open-set lever ladder (results/hib/open-set/levers/): seed 0 of RUN is RUN/, seed S is
# RUN-seedS/; a run counts once its folder holds `done`; numbers are its last watch.
LEVERS = os.path.join(HIB, "open-set", "levers")
LADDER = (
    ("a-baseline", "Adam 1e-3 constant (the committed grouped recipe)"),
    ("b-cosine", "cosine decay from 1e-3"),
    ("c-lr3e-3-warmup", "peak 3e-3, 200 warm-up steps, cosine"),
    ("d-head", "+ a, b at 30x the learning rate, b from the first batch"),
    ("e-bn", "+ batch norm after each conv"),
    ("f-allpairs", "+ all 32,640 pairs of the 256 images"),
    ("g-ema", "+ EMA of the weights, decay 0.999"),
)


def open_set_lever(folder):
    path = os.path.join(LEVERS, folder)
    if not os.path.exists(os.path.join(path, "done")):
        return None
    record = load_lines(os.path.join(path, "monitor.jsonl"))[-1]
    seconds = load(os.path.join(path, "state.json"))["seconds"]
    sets = {name: [q[k] for k in WATCH_KEYS] for name, q in record["sets"].items()}
    return {"step": record["step"], "minutes": seconds / 60, "ms": 1000 * seconds / record["step"], **sets}


def slash(values):
    return " / ".join(f"{v:.3f}" for v in values)


def open_set_ladder_block():
    rows = []
    for run, levers in LADDER:
        r = open_set_lever(run)
        rows.append(f"| {run} | {levers} | {r['step']} | {r['minutes']:.1f} | {r['ms']:.0f} | {slash(r['validation'])} | "
                    f"{sum(r['validation']) / 4:.3f} | {slash(r['test_unseen'])} | {slash(r['test_seen'])} |")
    rows.append(f"| paper (500k steps) | | | | | | | {slash(paper_mog1_n2d2())} (Table 1, MoG-1) | |")
    return "\n".join(["| run | levers added | steps | min | ms/step | validation (AP c / AP k / KNN c / KNN k) | val. score | test_unseen | test_seen |",
                      "|---|---|---|---|---|---|---|---|---|"] + rows)


def open_set_seeds_block():
    runs = sorted(d for d in os.listdir(LEVERS)
                  if os.path.isdir(os.path.join(LEVERS, d)) and not re.search(r"-seed[0-9]+$", d))
    out = ["| run | seed | steps | min | validation | val. score | score − seed 0's | test_unseen | test_seen |",
           "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        rows = []
        for seed in range(10):
            r = open_set_lever(run if seed == 0 else f"{run}-seed{seed}")
            if r is None:
                continue
            rows.append(r)
            score = sum(r['validation']) / 4
            gap = f"{score - sum(rows[0]['validation']) / 4:+.3f}".replace("-", "−") if seed > 0 else ""
            out.append(f"| {run} | {seed} | {r['step']} | {r['minutes']:.1f} | {slash(r['validation'])} | "
                       f"{score:.3f} | {gap} | {slash(r['test_unseen'])} | {slash(r['test_seen'])} |")
        if len(rows) > 1:
            mean = {k: [sum(r[k][i] for r in rows) / len(rows) for i in range(4)] for k in ("validation", "test_unseen", "test_seen")}
            out.append(f"| **{run}** | mean of {len(rows)} | | | {slash(mean['validation'])} | **{sum(mean['validation']) / 4:.3f}** | | "
                       f"{slash(mean['test_unseen'])} | {slash(mean['test_seen'])} |")
    return "\n".join(out)


BLOCKS["open-set-ladder"] = open_set_ladder_block
BLOCKS["open-set-seeds"] = open_set_seeds_block


def cells4(r, dot=False):
    values = [r["verification_ap"]["clean"], r["verification_ap"]["corrupt"], r["knn_accuracy"]["clean"],
              r["knn_accuracy"]["corrupt"]]
    return [(f"{v:.3f}"[1:] if dot else f"{v:.3f}") for v in values]


def gpu_calls():
    """One record per call on a GPU machine (scripts/gpu/hib-paper-schedule.sh appends it to
    results/hib/paper-schedule-gpu/sessions.jsonl)."""
    return load_lines(os.path.join(HIB, "paper-schedule-gpu", "sessions.jsonl"))


LONG_RUN_STEPS = 100_000


def long_run_cost_block():
    """What the long run's 100,000 steps cost where hedge has trained MoG-1 at N = 2, D = 2: the
    measured seconds a step (training clock, state.json) of the lever studies' finished runs of the
    peak-rate recipe (b-cosine; a-constant, which costs the same a step, until it has finished), of
    the first N = 2, D = 2 table's MoG-1 seeds (the recipe itself), and of the paper-schedule GPU run's
    calls (sessions.jsonl)."""
    rows = []
    for study, where in (("instance-levers", "CPU with native bf16, 2 threads (bf16 study)"),
                         ("instance-levers-f32", "AVX2-only CPU, 2 threads (f32 study)")):
        runs = {lever: folder for lever, seed, folder in lever_runs(study)
                if seed == 0 and os.path.exists(os.path.join(folder, "done"))}
        lever = next((name for name in ("b-cosine", "a-constant") if name in runs), None)
        if lever is None:
            continue
        state = load(os.path.join(runs[lever], "state.json"))
        per_step = state["seconds"] / state["step"]
        rows.append(f"| {where} | 32 x 8 images, {lever} seed 0 | {per_step * 1e3:.0f} | "
                    f"{per_step * LONG_RUN_STEPS / 3600:.1f} h |")
    # The long run trains the first N = 2, D = 2 table's recipe (f32 convolutions), so that table's own
    # MoG-1 seeds give its cost most directly; their spread is the machine's load while each ran.
    table = [load(os.path.join(folder, "state.json")) for lever, seed, folder in lever_runs(f"{N2D2_FIRST}/runs")
             if lever == "mog1" and os.path.exists(os.path.join(folder, "eval.json"))]
    if table:
        per_step = sorted(state["seconds"] / state["step"] for state in table)
        lo, hi = per_step[0], per_step[-1]
        rows.append(f"| CPU with native bf16, 2 threads, f32 (the first N = 2, D = 2 table) | 32 x 8 images, the recipe's "
                    f"MoG-1, {len(table)} seed{'s' if len(table) > 1 else ''} | {lo * 1e3:.0f}–{hi * 1e3:.0f} | "
                    f"{lo * LONG_RUN_STEPS / 3600:.1f}–{hi * LONG_RUN_STEPS / 3600:.1f} h |")
    calls = gpu_calls()
    if calls:
        last = calls[-1]
        r = last["runs"]["gaussian-seed0"]
        per_step = (r["to_seconds"] - r["from_seconds"]) / (r["to_step"] - r["from_step"])
        rows.append(f"| {last['device']} ({last['date']}, beside the point run) | 128 pairs, MoG-1 of "
                    f"`paper-schedule-gpu/` | {per_step * 1e3:.1f} | {per_step * LONG_RUN_STEPS / 60:.0f} min |")
    return "\n".join([f"| where | run measured | ms a training step | {LONG_RUN_STEPS:,} steps |", "|---|---|---|---|"]
                     + rows)


BLOCKS["long-run-cost"] = long_run_cost_block


def planned_steps(runs):
    """The distinct step counts (config.json) the run folders `runs` (relative to ROOT) planned, sorted."""
    return sorted({load(os.path.join(ROOT, r, "config.json"))["hib"]["steps"] for r in runs})


def long_run_progress_block(run="long-run"):
    """Where the long run stands as committed: the step a resume starts from and its training
    clock (state.json), and the test split and validation images watched every 5,000 steps
    (monitor.jsonl) until the kept copies' curve (curve.json) is drawn at its end."""
    folder = os.path.join(HIB, run)
    if not os.path.exists(os.path.join(folder, "state.json")):
        return "Not started."
    state = load(os.path.join(folder, "state.json"))
    steps = load(os.path.join(folder, "config.json"))["hib"]["steps"]
    out = [f"Trained so far (`{run}/state.json`, where `--resume` starts): {state['step']:,} of {steps:,} steps, "
           f"{state['seconds'] / 60:.1f} minutes of training."]
    monitor = os.path.join(folder, "monitor.jsonl")
    watches = [w for w in load_lines(monitor) if w["step"] <= state["step"]] if os.path.exists(monitor) else []
    if watches:
        out += ["", "| step | training min | test: AP clean / corrupt / KNN clean / corrupt | validation: the same |",
                "|---|---|---|---|"]
        for w in watches:
            test, validation = (fmt(w["sets"][name], dot=True) if name in w["sets"] else "" for name in ("test", "validation"))
            out.append(f"| {w['step']:,} | {w['train_seconds'] / 60:.1f} | {test} | {validation} |")
    curve_path = os.path.join(folder, "curve.json")
    if os.path.exists(curve_path):
        curve = load(curve_path)
        table = load(os.path.join(HIB, N2D2_FIRST, "summary.json"))
        paper = table["paper"]["mog1"]
        out += ["", f"The kept copies on the test split (`{run}/curve.json`, `hib curve`, "
                f"{curve[0]['repeats']} Monte-Carlo repeats), beside the table's MoG-1 and the paper:", "",
                "| step | training min | AP clean / corrupt / KNN clean / corrupt |", "|---|---|---|"]
        out += [f"| {r['step']:,} | {r['train_seconds'] / 60:.1f} | " + " / ".join(cells4(r, dot=True)) + " |"
                for r in curve]
        mog1 = table["models"]["mog1"]
        steps = planned_steps(mog1["runs"])
        minutes = [load(os.path.join(ROOT, r, "state.json"))["seconds"] / 60 for r in mog1["runs"]]
        out.append(f"| the first N = 2, D = 2 table's MoG-1 (`{N2D2_FIRST}/`, {mog1['seeds']} seeds of "
                   f"{' or '.join(f'{n:,}' for n in steps)} steps, its cosine ended) | "
                   f"{min(minutes):.0f}–{max(minutes):.0f} | " + " / ".join(cells4(mog1, dot=True)) + " |")
        out.append("| paper, 500,000 | | " + " / ".join(cells4(paper, dot=True)) + " |")
    return "\n".join(out)


BLOCKS["long-run-progress"] = long_run_progress_block


def long_run_gallery_block(run="long-run"):
    """Whether gallery size explains the long run's validation/test gap: its last kept copy on
    the test split cut to 50 images a class (`eval_test_50_per_class.json`, `hib eval
    --per-class 50`), the validation images' size, beside the whole test split (curve.json) and
    the last validation watch (monitor.jsonl)."""
    folder = os.path.join(HIB, run)
    path = os.path.join(folder, "eval_test_50_per_class.json")
    if not os.path.exists(path):
        return "Not measured yet."
    cut = load(path)
    last = load(os.path.join(folder, "curve.json"))[-1]
    watch = [w for w in load_lines(os.path.join(folder, "monitor.jsonl")) if w["step"] == last["step"]][-1]
    if not cut["weights"].endswith(f"model-{last['step']:07}.safetensors") or cut["split"] != "test":
        raise SystemExit(f"{path}: not the test report of curve.json's last kept copy (step {last['step']})")
    validation = watch["sets"]["validation"]
    per_class = load(os.path.join(HIB, "digit-overlap.json"))["held_out_per_class"]
    return (f"| step {last['step']:,} | gallery | AP clean / corrupt / KNN clean / corrupt |\n|---|---|---|\n"
            f"| test split (`curve.json`, {last['repeats']} repeats) | 100 images a class | {' / '.join(cells4(last, dot=True))} |\n"
            f"| test split, first {cut['images_per_class']} images a class (`eval_test_50_per_class.json`, "
            f"{cut['repeats']} repeats) | {cut['images_per_class']} a class | {' / '.join(cells4(cut, dot=True))} |\n"
            f"| validation images (`monitor.jsonl`, 1 repeat) | {per_class} a class | "
            + " / ".join(f"{validation[k]:.3f}".lstrip("0") for k in WATCH_KEYS) + " |\n"
            f"| paper, MoG-1 (Table 1, its test split, 500,000 steps) | 100 a class | "
            + " / ".join(cells4(load(os.path.join(HIB, N2D2_FIRST, "summary.json"))["paper"]["mog1"], dot=True)) + " |")


BLOCKS["long-run-gallery"] = long_run_gallery_block


def ab_block(study, levers, control_study=None):
    """The runs of A/B study STUDY (studies/hib/ab-STUDY.toml; committed by its former shell loop): each finished run's (`<arm>-seed<N>.test.json`)
    steps, the validation images at the step they chose (best.json) and the test split with those
    weights, then each of `levers` (an arm name, or several in the script's order) − control seed
    by seed. The control runs are `control_study`'s where the study shares another's (the same
    recipe, validation digits and step count)."""
    levers = (levers,) if isinstance(levers, str) else tuple(levers)
    order = {arm: i for i, arm in enumerate(("control",) + levers)}
    runs = {(arm, seed): folder for arm, seed, folder in lever_runs(study)
            if os.path.exists(f"{folder}.test.json") and (control_study is None or arm in levers)}
    if control_study is not None:
        runs.update({(arm, seed): folder for arm, seed, folder in lever_runs(control_study)
                     if arm == "control" and os.path.exists(f"{folder}.test.json")})
    if not runs or (control_study is not None and not any(arm in levers for arm, _ in runs)):
        return f"Not run yet (`hedge hib study --plan studies/hib/ab-{study}.toml`)."
    tests = {key: load(f"{folder}.test.json") for key, folder in runs.items()}
    # Runs written before `validation_digits` existed validated on the held-out images' own digits.
    digits = sorted({load(os.path.join(folder, "config.json"))["hib"].get("validation_digits", "shared")
                     for folder in runs.values()})
    out = [f"| arm | seed | steps | chosen at step | validation, {' / '.join(digits)} digits (chosen) | "
           "test (chosen weights) |", "|---|---|---|---|---|---|"]
    for (arm, seed), folder in sorted(runs.items(), key=lambda kv: (kv[0][1], order.get(kv[0][0], len(order)))):
        steps = load(os.path.join(folder, "config.json"))["hib"]["steps"]
        best = load(os.path.join(folder, "best.json"))
        test = tests[(arm, seed)]
        out.append(f"| {arm} | {seed} | {steps:,} | {best['step']:,} | {fmt(best['validation'], dot=True)} | "
                   + " / ".join(cells4(test, dot=True)) + " |")
    arms = sorted({arm for arm, _ in runs}, key=lambda arm: order.get(arm, len(order)))
    out += ["", "| arm | seeds | validation score, mean over seeds | test, mean over seeds | "
            "test, seed range (max − min) |", "|---|---|---|---|---|"]
    for arm in arms:
        of_arm = [t for (a, _), t in sorted(tests.items()) if a == arm]
        # best.json's score: the mean of the four numbers on the validation images at the chosen step.
        scores = [load(os.path.join(folder, "best.json"))["score"] for (a, _), folder in sorted(runs.items()) if a == arm]
        means = {m: {v: sum(t[m][v] for t in of_arm) / len(of_arm) for v in ("clean", "corrupt")}
                 for m in ("verification_ap", "knn_accuracy")}
        ranges = [max(t[m][v] for t in of_arm) - min(t[m][v] for t in of_arm) for m, v in CELLS]
        out.append(f"| {arm} | {len(of_arm)} | {sum(scores) / len(scores):.4f} | " + " / ".join(cells4(means, dot=True)) + " | "
                   + (" / ".join(f"{x:.3f}" for x in ranges) if len(of_arm) > 1 else "—") + " |")
    for lever in levers:
        pairs = sorted(seed for arm, seed in runs if arm == lever and ("control", seed) in runs)
        if not pairs:
            continue
        out += ["", f"{lever} − control on the test split, seed by seed (AP clean / AP corrupt / KNN clean / "
                "KNN corrupt): " + "; ".join(
                    f"seed {seed}: " + " / ".join(
                        f"{tests[(lever, seed)][m][v] - tests[('control', seed)][m][v]:+.3f}".replace("-", "−")
                        for m, v in CELLS)
                    for seed in pairs) + "."]
        out += ["", *ab_gap_over_run(runs, lever, pairs)]
    return "\n".join(out)


def ab_gap_over_run(runs, lever, pairs):
    """`lever` − control on the test split at the watches both arms of a seed share (every 1,000
    steps and the last; each run's `monitor.jsonl`, 1 Monte-Carlo repeat, the last record of a
    step a resumed run watched twice): a gap that narrows as the run goes is a lever that only
    lags, one that holds is a cost."""
    watched = {}
    for seed in pairs:
        by_arm = []
        for arm in ("control", lever):
            by_step = {w["step"]: w["sets"]["test"] for w in load_lines(os.path.join(runs[(arm, seed)], "monitor.jsonl"))}
            by_arm.append(by_step)
        last = min(max(by_arm[0]), max(by_arm[1]))
        for step in sorted(set(by_arm[0]) & set(by_arm[1])):
            if step % 1000 == 0 or step == last:
                watched.setdefault(step, {})[seed] = [by_arm[1][step][k] - by_arm[0][step][k]
                                                      for k in ("ap_corrupt", "knn_clean", "knn_corrupt")]
    head = " | ".join(f"seed {seed}" for seed in pairs)
    out = [f"{lever} − control on the test split over the run (AP corrupt / KNN clean / KNN corrupt at each "
           "watch both arms share, `monitor.jsonl`, 1 repeat):", "",
           f"| step | {head} |", "|---|" + "---|" * len(pairs)]
    for step, gaps in sorted(watched.items()):
        # A gap that rounds to zero prints as +0.000, not −0.000.
        cells = [" / ".join(f"{g + 0.0:+.3f}".replace("-0.000", "+0.000").replace("-", "−") for g in gaps[seed])
                 if seed in gaps else "—"
                 for seed in pairs]
        out.append(f"| {step:,} | " + " | ".join(cells) + " |")
    return out


BLOCKS["recompose"] = lambda: ab_block("recompose", "recompose")
BLOCKS["digit-shift"] = lambda: ab_block("digit-shift", "shift2")
BLOCKS["weight-decay"] = lambda: ab_block("weight-decay", ("wd5e-2", "wd1e-1", "wd2e-1"), control_study="digit-shift")
BLOCKS["dropout"] = lambda: ab_block("dropout", "drop5e-1", control_study="digit-shift")


# A gain under SPREAD of the table's seed standard deviations is not told apart from seed noise;
# a projection past FAR_STEPS (a hundred times the paper's schedule) is not worth a number.
SPREAD = 2
FAR_STEPS = 50_000_000


def long_run_length_block(run="long-run"):
    """What length alone bought once the long run ended: its last kept copy (curve.json) against
    the first N = 2, D = 2 table's MoG-1 (the same recipe, its cosine laid over fewer steps), as a gain
    per doubling of the steps, and at that gain how many steps, and hours of these cores at the
    long run's own speed, each paper value would need."""
    folder = os.path.join(HIB, run)
    curve_path = os.path.join(folder, "curve.json")
    if not os.path.exists(curve_path):
        return "The long run has not ended yet (no `curve.json`)."
    steps = load(os.path.join(folder, "config.json"))["hib"]["steps"]
    last = load(curve_path)[-1]
    if last["step"] < steps:
        return f"The long run's kept copies reach {last['step']:,} of {steps:,} steps; it has not ended yet."
    state = load(os.path.join(folder, "state.json"))
    seconds_a_step = state["seconds"] / state["step"]
    table = load(os.path.join(HIB, N2D2_FIRST, "summary.json"))
    mog1, paper = table["models"]["mog1"], table["paper"]["mog1"]
    table_steps = planned_steps(mog1["runs"])
    doublings = math.log2(steps / table_steps[-1])
    rows = []
    for (metric, variant), name in zip(CELLS, CELL_NAMES):
        long_value, short_value = last[metric][variant], mog1[metric][variant]
        short_std, target = mog1[metric][f"{variant}_std"], paper[metric][variant]
        gain = (long_value - short_value) / doublings
        # Doublings still needed, compared in log space: a small gain makes 2 ** doublings overflow.
        still = (target - long_value) / gain if gain > 0 else math.inf
        if long_value >= target:
            needed = "reached"
        elif long_value - short_value <= SPREAD * short_std:
            needed = "no gain beyond the seeds' spread"
        elif still > math.log2(FAR_STEPS / steps):
            needed = f"beyond {FAR_STEPS:,} steps"
        else:
            at = steps * 2**still
            needed = f"{at:,.0f} steps, {at * seconds_a_step / 3600:,.0f} h"
        rows.append(f"| {name} | {short_value:.3f} ± {short_std:.3f} | {long_value:.3f} | "
                    + f"{gain:+.3f}".replace("-", "−") + f" | {target:.3f} | {needed} |")
    return (f"The same recipe with its cosine laid over {steps:,} steps instead of "
            f"{' or '.join(f'{n:,}' for n in table_steps)} ({doublings:.1f} doublings): the first N = 2, D = 2 table's MoG-1 "
            f"(`{N2D2_FIRST}/`, "
            f"mean ± std of {mog1['seeds']} seeds) against the long run's last kept copy (seed 0, "
            f"{last['repeats']} Monte-Carlo repeats), the gain per doubling of the steps, and, were that gain "
            f"to hold, the steps (and hours at the long run's {seconds_a_step * 1000:.0f} ms a step) each paper "
            f"value would need (a gain under {SPREAD} of the table's standard deviations counts as none):\n\n"
            "| number | table, end of its cosine | long run, end of its cosine | gain per doubling | paper | "
            "paper reached at |\n|---|---|---|---|---|---|\n" + "\n".join(rows))


BLOCKS["long-run-length"] = long_run_length_block


def table_against_aside_block(setting="n2-d2", aside=N2D2_SECOND):
    """Each run of a table under way that has ended (`runs/*/eval.json`) beside the same model and
    seed of the table moved aside before it: what the re-chosen recipe changed on the test split,
    before the table's own summary (means over seeds) exists."""
    rows = []
    for name, seed, folder in lever_runs(os.path.join(setting, "runs")):
        old = os.path.join(HIB, aside, "runs", f"{name}-seed{seed}")
        if not all(os.path.exists(os.path.join(f, "eval.json")) for f in (folder, old)):
            continue
        new_eval, old_eval = (load(os.path.join(f, "eval.json")) for f in (folder, old))
        steps = [load(os.path.join(f, "config.json"))["hib"]["steps"] for f in (folder, old)]
        gaps = [a - b for a, b in zip(
            (new_eval[m][v] for m, v in CELLS), (old_eval[m][v] for m, v in CELLS))]
        rows.append(f"| {name} | {seed} | {steps[0]:,} / {steps[1]:,} | " + " / ".join(cells4(new_eval, dot=True))
                    + " | " + " / ".join(cells4(old_eval, dot=True)) + " | "
                    + " / ".join(f"{g:+.3f}".replace("-", "−") for g in gaps) + " |")
    if not rows:
        return f"No run of `{setting}/` has ended yet."
    return "\n".join([f"| model | seed | steps (`{setting}/` / `{aside}/`) | `{setting}/`, test | `{aside}/`, test | "
                      "difference |", "|---|---|---|---|---|---|"] + rows)


BLOCKS["n2-d2-against-second"] = table_against_aside_block


def others_against_asides_block():
    """The same for every setting besides N = 2, D = 2 that has a table moved aside: its retrained
    runs that have ended beside the same runs of the newest table moved aside from it."""
    out = []
    for setting in (*SETTINGS[1:], "n2-d1"):
        if asides(setting):
            out += [f"**{setting_label(setting)}.**", "", table_against_aside_block(setting, asides(setting)[0]), ""]
    return "\n".join(out).rstrip("\n") or "No other setting has been moved aside."


BLOCKS["others-against-asides"] = others_against_asides_block


def table_means_against_asides_block(setting="n2-d2"):
    """A setting's table beside every table moved aside from it, model by model (each
    `summary.json`'s means over its seeds, with the recipe it trained and the steps of each run),
    and the table's gain over each aside table that has as many seeds of the model: what the
    re-chosen recipes bought, once the retrained table's summary exists."""
    path = os.path.join(HIB, setting, "summary.json")
    if not os.path.exists(path):
        return f"`{setting}/` has no `summary.json` yet."
    folders = [f for f in (setting, *asides(setting)) if os.path.exists(os.path.join(HIB, f, "summary.json"))]
    summaries = {f: load(os.path.join(HIB, f, "summary.json")) for f in folders}
    recipes = {f: recipe_lever(load(os.path.join(HIB, f, "config.json"))["recipe"]) or "a recipe of no lever"
               for f in folders}
    rows, gains = [], []
    for key, name in MODELS:
        own = summaries[setting]["models"].get(key)
        if own is None:
            continue
        for f in folders:
            m = summaries[f]["models"].get(key)
            if m is None:
                continue
            steps = planned_steps(m["runs"])
            label = "this table" if f == setting else ASIDE_TABLES[f][1]
            rows.append(f"| {name} | {label} (`{recipes[f]}`) | {m['seeds']} | "
                        + ", ".join(f"{s:,}" for s in steps) + " | "
                        + " / ".join(f"{m[metric][variant]:.3f}" for metric, variant in CELLS) + " |")
            if f != setting and m["seeds"] == own["seeds"]:
                gap = " / ".join(f"{own[metric][variant] - m[metric][variant]:+.3f}".replace("-", "−")
                                 for metric, variant in CELLS)
                gains.append(f"{name} over the {ASIDE_TABLES[f][1]} ({m['seeds']} seeds each): {gap}")
    out = [f"| model | table (recipe) | seeds | steps a run | test, mean over seeds: AP clean / AP corrupt / "
           "KNN clean / KNN corrupt |", "|---|---|---|---|---|"] + rows
    if gains:
        out += ["", "This table's gain, mean against mean (AP clean / AP corrupt / KNN clean / KNN corrupt): "
                + "; ".join(gains) + "."]
    return "\n".join(out)


BLOCKS["n2-d2-tables"] = table_means_against_asides_block


ACCEPTANCE_GAP = 0.03


def acceptance_source(setting):
    """(folder, summary, lead-in lines) the acceptance of `setting` is read from: its own
    instance-protocol `summary.json`, or, until the retrained table's exists, the newest table
    moved aside from it, said to be that; None when neither exists."""
    for folder in (setting, *asides(setting)):
        path = os.path.join(HIB, folder, "summary.json")
        if os.path.exists(path) and (s := load(path)).get("protocol") == "instance":
            lead = [] if folder == setting else [
                f"`{setting}/` is being retrained on today's `recipe.toml` (no `summary.json` yet); until it "
                f"ends, the {ASIDE_TABLES[folder][1]}, `{folder}/`, on its earlier recipe:", ""]
            return folder, s, lead
    return None


def instance_acceptance_block(setting="n2-d2"):
    """Issue 33's acceptance, read from the instance table's summary.json: each cell's distance to
    the paper (ours − paper, within 0.03 or not) and whether HIB scores at least the point model on
    the corrupt columns."""
    source = acceptance_source(setting)
    if source is None:
        return f"No instance-protocol summary in `{setting}/` yet."
    setting, s, lead = source
    models = [(key, name) for key, name in MODELS if key in s["models"]]
    kept = all(s["models"][key].get("knn_kept") for key, _ in models)
    knn = "KNN clean | KNN corrupt" if kept else "KNN clean, leave-one-out | KNN corrupt, leave-one-out"
    out = [f"| model | seeds | AP clean | AP corrupt | {knn} |", "|---|---|---|---|---|---|"]
    within = 0
    worst = {"headline": (0.0, ""), "leave-one-out": (0.0, "")}
    for key, name in models:
        m, paper = s["models"][key], s["paper"][key]
        cells = []
        for (metric, variant), (head_metric, _, head) in zip(CELLS, headline_cells(m)):
            p = paper[metric][variant]
            loo = m[metric][variant] - p
            label = f"{name} {CELL_NAMES[CELLS.index((metric, variant))]}"
            if abs(loo) > worst["leave-one-out"][0]:
                worst["leave-one-out"] = (abs(loo), label)
            gap = head - p if kept else loo
            if abs(gap) > worst["headline"][0]:
                worst["headline"] = (abs(gap), label)
            ok = abs(gap) <= ACCEPTANCE_GAP
            within += ok
            cells.append(f"{gap:+.3f} {'within' if ok else 'out'}")
        out.append(f"| {name} | {m['seeds']} | " + " | ".join(cells) + " |")
    kept_note = ", the kept-gallery KNN reading" if kept and "KNN" in worst["headline"][1] else ""
    largest = (f"Largest distance to the paper: {worst['headline'][0]:.3f} ({worst['headline'][1]}{kept_note})"
               + (f"; with KNN left one out, {worst['leave-one-out'][0]:.3f} ({worst['leave-one-out'][1]})." if kept
                  else "."))
    point = s["models"].get("point")
    checks, held = [], 0
    for key, name in models:
        if key == "point" or point is None:
            continue
        for metric, label in (("verification_ap", "AP"), ("knn_accuracy", "KNN")):
            hib, base = s["models"][key][metric]["corrupt"], point[metric]["corrupt"]
            held += hib >= base
            checks.append(f"{name} {label} corrupt {hib:.3f} {'≥' if hib >= base else '<'} point {base:.3f}")
    seeds = sorted({s["models"][key]["seeds"] for key, _ in models})
    return "\n".join(
        lead + [f"Ours − paper for `{setting}/summary.json` ({' or '.join(map(str, seeds))} "
         f"seed{'' if seeds == [1] else 's'} a model; "
         f"`within` when the distance is at most {ACCEPTANCE_GAP}):", ""] + out
        + ["", f"{within} of {4 * len(models)} cells within {ACCEPTANCE_GAP} of the paper. {largest} HIB at least the "
           f"point model on corrupt inputs in {held} of {len(checks)} comparisons: " + "; ".join(checks) + "."])


BLOCKS["instance-acceptance"] = instance_acceptance_block


def instance_acceptance_others_block():
    """The same reading for the instance settings besides N = 2, D = 2, each from its own
    summary.json once its reproduction has ended (until then, the newest table moved aside)."""
    out = []
    for setting in SETTINGS[1:]:
        if acceptance_source(setting) is not None:
            out += [f"**{setting_label(setting)}.** " + instance_acceptance_block(setting), ""]
        else:
            out += [f"**{setting_label(setting)}.** Not ended yet (`scripts/hib-table.sh {setting}`).", ""]
    return "\n".join(out).rstrip("\n")


BLOCKS["instance-acceptance-others"] = instance_acceptance_others_block


def digit_overlap_block():
    """How much of the instance protocol's validation images training has already seen, digit by
    digit (scripts/hib-digit-overlap.py's digit-overlap.json)."""
    path = os.path.join(HIB, "digit-overlap.json")
    if not os.path.exists(path):
        return "Not measured yet (`.venv/bin/python scripts/hib-digit-overlap.py`)."
    d = load(path)
    return (f"Of the {d['held_out_per_class']} training images held out per class for validation, "
            f"{100 * d['validation_all_digits_trained']:.1f} % (± {100 * d['validation_all_digits_trained_std']:.1f}) "
            f"have every digit image also in a training composite and "
            f"{100 * d['validation_any_digit_trained']:.1f} % at least one ({d['draws']} draws of the hold-out rule, "
            f"`digit-overlap.json`; the train table's {d['train_composites']:,} composites use "
            f"{d['distinct_training_digit_images']:,} distinct MNIST training digits). The "
            f"{d['test_composites']:,} test images are built from MNIST test digits, none of them trained on.")


BLOCKS["digit-overlap"] = digit_overlap_block


def paper_values(folder):
    """The paper's Table 1 values for an instance table folder's setting, by model: from its own
    summary.json, else the open-set one (the paper's values are the same under either protocol,
    and the open-set summary has them while the instance reproduction is under way); {} if neither."""
    of = ASIDE_TABLES.get(folder, (folder,))[0]
    for parts in ((folder,), ("open-set", of)):
        path = os.path.join(HIB, *parts, "summary.json")
        paper = load(path).get("paper") if os.path.exists(path) else None
        if paper:
            return paper
    return {}


def headline_four(report):
    """`four_cells` of an eval report with the kept-gallery KNN where the report has it, else the
    leave-one-out KNN marked `(l-o-o)`."""
    if not report.get("knn_kept"):
        return four_cells(report) + " (l-o-o)"
    return " / ".join(f"{value:.3f}" for _, _, value in headline_cells(report))


def test_seen_block():
    """The instance tables' N = 3 runs on their two test sets: the instance test table (1,000
    classes of 10 images) from each run's eval.json, and test_seen (100 classes of 100 images, the
    test set the paper's first version describes) from scripts/hib-test-seen.sh's
    results/hib/test-seen/<setting>/<run>.json, the same weights scored on both."""
    rows = []
    for setting in ("n3-d2", *asides("n3-d2"), "n3-d3", *asides("n3-d3")):
        paper = paper_values(setting)
        for key, name in MODELS:
            run = os.path.join(HIB, setting, "runs", f"{key}-seed0")
            seen_path = os.path.join(HIB, "test-seen", setting, f"{key}-seed0.json")
            if not (os.path.exists(os.path.join(run, "eval.json")) and os.path.exists(seen_path)):
                continue
            test, seen = load(os.path.join(run, "eval.json")), load(seen_path)
            if seen["weights"] != test["weights"] or seen["split"] != "test_seen":
                raise SystemExit(f"{seen_path}: not the test_seen report of the weights {run}/eval.json scored")
            p = paper.get(key)
            cols = [headline_four(test), headline_four(seen), four_cells(p) if p else "—"]
            rows.append(f"| {setting_label(setting)} | {name} | " + " | ".join(cols) + " |")
    if not rows:
        return "Not measured yet (`scripts/hib-test-seen.sh` once an N = 3 table's runs have ended)."
    return "\n".join(
        ["| N, D | model (seed 0) | `test`: 1,000 classes x 10 images | `test_seen`: 100 classes x 100 images | paper |",
         "|---|---|---|---|---|"] + rows
        + ["", "Each cell: AP clean / AP corrupt / KNN clean / KNN corrupt, the same weights (the ones the "
           "table scored) on both test sets; KNN with the probe's own image (twin) kept in the gallery, the headline "
           "reading, or left out where a report was written before that reading existed (marked l-o-o)."])


BLOCKS["test-seen"] = test_seen_block


N3_LEVERS = ("16x16", "32x8", "64x4", "128x2")


def ms_a_step(run):
    """A run folder's training milliseconds a step so far (state.json; watches left out)."""
    state = load(os.path.join(run, "state.json"))
    return 1000 * state["seconds"] / state["step"]


def n3_levers_block(folder="n3-levers"):
    """The batch shapes of studies/hib/n3-levers.toml at N = 3, D = 2 (MoG-1, seed 0, one budget): each
    run's step count and pace (config.json, state.json), the step its validation images chose
    (best.json, with its validation score) and those weights on both N = 3 test sets (`<lever>-seed0.test.json`,
    `.test_seen.json`), beside the first N = 3, D = 2 table's MoG-1 and the paper."""
    root = os.path.join(HIB, folder)
    rows, pending = [], []
    for lever in N3_LEVERS:
        run = os.path.join(root, f"{lever}-seed0")
        reports = [os.path.join(root, f"{lever}-seed0.{split}.json") for split in ("test", "test_seen")]
        if not all(os.path.exists(p) for p in reports):
            if os.path.exists(os.path.join(run, "state.json")):
                state = load(os.path.join(run, "state.json"))
                steps = load(os.path.join(run, "config.json"))["hib"]["steps"]
                pending.append(f"{lever} (committed at step {state['step']:,} of {steps:,})")
            else:
                pending.append(f"{lever} (not started)")
            continue
        test, seen = (load(p) for p in reports)
        best = load(os.path.join(run, "best.json"))
        if test["weights"] != seen["weights"] or test["split"] != "test" or seen["split"] != "test_seen":
            raise SystemExit(f"{run}: its two reports do not score the same weights on test and test_seen")
        hib = load(os.path.join(run, "config.json"))["hib"]
        classes, images = lever.split("x")
        if (hib["group_classes"], hib["group_size"]) != (int(classes), int(images)):
            raise SystemExit(f"{run}/config.json: not {lever} classes x images")
        rows.append(f"| {classes} x {images} | {hib['steps']:,} ({ms_a_step(run):.0f} ms) | {best['step']:,} | "
                    f"{best['score']:.4f} | {four_cells(test)} | {four_cells(seen)} |")
    if not rows:
        return "No run has ended yet (`hedge hib study --plan studies/hib/n3-levers.toml`)."
    # The table the study set out from (trained before it, on the recipe without weight decay).
    table = "n3-d2-l-peak1e-2-16x16"
    table_run = os.path.join(HIB, table, "runs", "mog1-seed0")
    seen_path = os.path.join(HIB, "test-seen", table, "mog1-seed0.json")
    if os.path.exists(os.path.join(table_run, "eval.json")) and os.path.exists(seen_path):
        hib = load(os.path.join(table_run, "config.json"))["hib"]
        rows.append(f"| the first N = 3, D = 2 table's MoG-1 (`{table}/`, {hib['group_classes']} x {hib['group_size']}) | "
                    f"{hib['steps']:,} ({ms_a_step(table_run):.0f} ms) | | | "
                    f"{four_cells(load(os.path.join(table_run, 'eval.json')))} | {four_cells(load(seen_path))} |")
    paper = paper_values(table).get("mog1")
    if paper:
        rows.append(f"| paper (500,000 steps of 128 pairs) | | | | {four_cells(paper)} | |")
    out = ["| classes x images a step | steps (pace) | chosen step | validation score | `test`: 1,000 classes x 10 | "
           "`test_seen`: 100 classes x 100 |", "|---|---|---|---|---|---|"] + rows
    out += ["", "Each cell: AP clean / AP corrupt / KNN clean / KNN corrupt of the weights the validation images "
            "chose; validation score: the mean of the same four on the validation images at that step (`best.json`), "
            "what chose it; 256 images a step in every run; pace: training seconds a step (`state.json`), "
            "watches left out."]
    if pending:
        out += ["", "Still to end: " + "; ".join(pending) + "."]
    return "\n".join(out)


BLOCKS["n3-levers"] = n3_levers_block


def precision_block():
    """Which convolution precision trained each committed HIB run: per result folder, the runs
    whose `config.json` records bf16 and those that record f32 (hedge records the precision a run
    resolved `auto` to), and the devices they ran on."""
    folders = {}
    for top in ("hib", "own-data"):
        base = os.path.join(ROOT, "results", top)
        for dirpath, _, files in os.walk(base):
            if "config.json" not in files:
                continue
            with open(os.path.join(dirpath, "config.json")) as f:
                config = json.load(f)
            hib = config.get("hib") if isinstance(config, dict) else None
            if not isinstance(hib, dict) or "conv_precision" not in hib:
                continue
            rel = os.path.relpath(dirpath, os.path.join(ROOT, "results")).split(os.sep)
            folder = "/".join(rel[:2])
            counts = folders.setdefault(folder, {"bf16": 0, "f32": 0, "devices": set()})
            counts[hib["conv_precision"]] += 1
            counts["devices"].add(config.get("device", "cpu"))
    rows = ["| result folder | runs in bf16 | runs in f32 | device |", "|---|---|---|---|"]
    for folder in sorted(folders):
        c = folders[folder]
        rows.append(f"| `results/{folder}/` | {c['bf16']} | {c['f32']} | {', '.join(sorted(c['devices']))} |")
    return "\n".join(rows)


BLOCKS["precision"] = precision_block


REFERENCE = os.path.join(HIB, "reference", "runs")
# (name in a table, the reference's reference_eval.json key, the key path in hedge's eval report)
REFERENCE_CELLS = (("AP clean", "ap_clean", ("verification_ap", "clean")),
                   ("AP corrupt", "ap_corrupt", ("verification_ap", "corrupt")),
                   ("KNN clean", "knn_clean_kept", ("knn_kept", "clean")),
                   ("KNN corrupt", "knn_corrupt_kept", ("knn_kept", "corrupt")),
                   ("KNN clean, leave-one-out", "knn_clean_loo", ("knn_accuracy", "clean")),
                   ("KNN corrupt, leave-one-out", "knn_corrupt_loo", ("knn_accuracy", "corrupt")))
# Two means agree when they lie within this of each other or within the larger seed range.
REFERENCE_TOLERANCE = 0.01


def reference_values(impl, recipe, model):
    """Per seed, the six numbers of a scored run of `impl` (`ref` or `hedge`), {} if none ended."""
    out = {}
    for seed in range(10):
        folder = os.path.join(REFERENCE, f"{impl}-{recipe}-{model}-seed{seed}")
        path = os.path.join(folder, "reference_eval.json" if impl == "ref" else "eval-final.json")
        if not os.path.exists(path):
            continue
        r = load(path)
        if impl == "ref":
            out[seed] = [r[key] for _, key, _ in REFERENCE_CELLS]
        else:
            out[seed] = [(r.get(a) or {}).get(b) for _, _, (a, b) in REFERENCE_CELLS]
    return out


def reference_block():
    """hedge against the plain-PyTorch reference at equal steps (scripts/hib-reference.sh):
    per recipe and model, each number's mean over the seeds that ended (range in brackets) for
    the reference and for hedge, and whether they agree."""
    rows = ["| recipe | model | number | reference (seeds) | hedge (seeds) | hedge − reference | agree |",
            "|---|---|---|---|---|---|---|"]
    verdicts, pending = [], []
    for recipe in ("plain", "hedge"):
        for model, name in (("mog1", "MoG-1"), ("point", "point")):
            ref, hed = reference_values("ref", recipe, model), reference_values("hedge", recipe, model)
            if not ref or not hed:
                pending.append(f"{recipe} {name}")
                continue
            for k, (label, _, _) in enumerate(REFERENCE_CELLS):
                a = [v[k] for v in ref.values() if v[k] is not None]
                b = [v[k] for v in hed.values() if v[k] is not None]
                if not a or not b:
                    continue
                ma, mb = sum(a) / len(a), sum(b) / len(b)
                spread = max(max(a) - min(a), max(b) - min(b))
                agree = abs(mb - ma) <= max(REFERENCE_TOLERANCE, spread)
                verdicts.append(agree)

                def show(v, seeds):
                    m = sum(v) / len(v)
                    tail = f" [{min(v):.3f}, {max(v):.3f}]" if len(v) > 1 else ""
                    return f"{m:.3f}{tail} ({'/'.join(str(s) for s in seeds)})"
                rows.append(f"| {recipe} | {name} | {label} | {show(a, sorted(ref))} | {show(b, sorted(hed))} | "
                            f"{mb - ma:+.3f} | {'yes' if agree else 'no'} |")
    if not verdicts:
        return "No pair of a reference run and a hedge run has ended yet (`scripts/hib-reference.sh`)."
    out = rows + ["", f"{sum(verdicts)} of {len(verdicts)} numbers agree (means within {REFERENCE_TOLERANCE} "
                      "of each other, or within the larger of the two seed ranges)."]
    if pending:
        out.append("Not ended yet: " + ", ".join(pending) + ".")
    return "\n".join(out)


BLOCKS["reference"] = reference_block


def quickstart_block():
    """The main job's training time and AP, measured by scripts/quickstart-timing.sh with oneDNN
    and ATen held to AVX2 and as the machine is (results/hib/quickstart/<setting>.json)."""
    parts = []
    names = {"avx2": "with oneDNN and ATen held to AVX2 (no bf16 dot products: f32 convolutions)",
             "native": "as this CPU is"}
    cpu = None
    for setting in ("avx2", "native"):
        path = os.path.join(HIB, "quickstart", f"{setting}.json")
        if not os.path.exists(path):
            continue
        r = load(path)
        cpu = r["cpu"]
        parts.append(f"{names[setting]}: {r['train_seconds'] / 60:.1f} minutes of training "
                     f"({r['steps']:,} steps, {r['conv_precision']} convolutions), verification AP "
                     f"{r['ap_clean']:.3f} on clean and {r['ap_corrupt']:.3f} on occluded test pairs")
    if not parts:
        return "Not measured yet (`scripts/quickstart-timing.sh`)."
    return (f"Measured on {cpu}, 2 cores (`scripts/quickstart-timing.sh`, `results/hib/quickstart/`): "
            + "; ".join(parts) + ".")


BLOCKS["quickstart"] = quickstart_block


def f32_peer_block():
    """hedge's f32 training images/s beside PyTorch's (scripts/bench-f32-peer.sh,
    results/bench/hib-f32-peer.json): the median over tries of each setting, and hedge's ratio."""
    path = os.path.join(ROOT, "results", "bench", "hib-f32-peer.json")
    if not os.path.exists(path):
        return "Not measured yet (`scripts/bench-f32-peer.sh`)."
    d = load(path)

    def median(v):
        v = sorted(v)
        n = len(v)
        return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    out = ["| setting | tries | hedge f32 | PyTorch f32, contiguous | PyTorch f32, channels-last | hedge against the faster PyTorch |",
           "|---|---|---|---|---|---|"]
    names = {"avx2": "oneDNN and ATen held to AVX2", "native": "as the CPU is"}
    for setting in ("avx2", "native"):
        tries = [t for t in d["tries"] if t["setting"] == setting]
        if not tries:
            continue
        h, p, c = (median([t[k] for t in tries]) for k in ("hedge", "pytorch", "pytorch_channels_last"))
        out.append(f"| {names[setting]} | {len(tries)} | {h:,.0f} img/s | {p:,.0f} img/s | {c:,.0f} img/s | "
                   f"{h / max(p, c):.2f}x |")
    return "\n".join(out + ["", f"Training images/s, medians over the tries, MoG-1, 256 images a step, 2 threads, "
                                f"{d['cpu']}, torch {d['torch']} (`{d['command']}`; the PyTorch side is "
                                "`reference/hib/hib_reference.py --bench`)."])


BLOCKS["f32-peer"] = f32_peer_block
