"""Active-learning blocks (`<!-- active:NAME:begin -->`), every number read from a run folder of
results/active/ (`summary.json`, and `rounds.jsonl` where two runs are paired seed by seed):

- `final-rmse`: the four UCI sets' final test RMSE per method beside the paper's Table 1, and
  each method's RMSE as a multiple of the paper's;
- `paired`: the paired differences every `summary.json` of the four sets holds, each marked
  as beyond or within two standard errors;
- `projections`: ACS-FW on J = 10 projections against the closed form and against Random;
- `ensemble`: three NeuralLinear fits per round, Random against ACS-FW (J = 10);
- `mse-recipe`: hedge's first (MSE) recipe beside the paper, with the multiples.
"""
import math

from .common import exists, load, load_lines, mean_se, pm, table

ACTIVE = ("results", "active")
DATASETS = ("yacht", "bostonHousing", "energy", "power-plant")
METHODS = (("random", "Random"), ("maxent", "MaxEnt"), ("acs-fw", "ACS-FW"), ("lcmd", "LCMD"))
PAPER_METHODS = METHODS[:3]
NAMES = dict(METHODS)


HEDGE_PROTOCOL = "hedge-protocol"


def hp(dataset):
    """The 40-seed run of `dataset` at hedge's own protocol (100 labels, minibatches of 64): the
    baseline every lever of issues 15–33 was paired against, kept in results/active/hedge-protocol/
    since the authors' protocol took results/active/<dataset>/."""
    return f"{HEDGE_PROTOCOL}/{dataset}"


def summary(run):
    return load(*ACTIVE, run, "summary.json")


def seconds_per_seed(run, method):
    """Mean over seeds of fit plus selection seconds summed over a seed's rounds."""
    per_seed = {}
    for r in rounds(run):
        if r["method"] == method:
            per_seed[r["seed"]] = per_seed.get(r["seed"], 0.0) + r["fit_seconds"] + r["selection_seconds"]
    return sum(per_seed.values()) / len(per_seed)


def paired(a, b):
    """`+d ± se (k/n)`: a − b over the seeds both runs hold, k = seeds where a is lower.

    a and b are (run folder, method)."""
    fa, fb = per_seed(*a), per_seed(*b)
    d = [fa[s] - fb[s] for s in sorted(set(fa) & set(fb))]
    mu, se = mean_se(d)
    return mu, se, sum(x < 0 for x in d), len(d)


def fmt_pair(p, better="a"):
    mu, se, lower, n = p
    return f"{pm(mu, se, sign=True)} ({lower if better == 'a' else n - lower}/{n})"


def rmse(run, method):
    r = summary(run)["methods"][method]["final_rmse"]
    return r["mean"], r["se"]


def paper(run, method):
    """The paper's Table 1 value for a run folder's dataset; a bare dataset name reads it from the
    dataset's hedge-protocol run (every run of a dataset records the same values)."""
    return summary(hp(run) if run in DATASETS else run)["methods"][method].get("paper_final_rmse")


def noise(mu, se):
    return "beyond 2 se" if abs(mu) > 2 * se else "within 2 se"


def finished(run):
    """Whether a run folder has written its summary (every seed finished)."""
    return exists(*ACTIVE, run, "summary.json")


def hedge_final_rmse_block():
    """The 100-label runs of hedge's protocol (results/active/hedge-protocol/<dataset>/)."""
    rows, protocols = [], set()
    for d in DATASETS:
        s = summary(hp(d))
        protocols.add((s.get("protocol", "hedge"), s["labels"], s["seeds"]))
        means = {m: s["methods"][m]["final_rmse"] for m, _ in METHODS if m in s["methods"]}
        best = min(means, key=lambda m: means[m]["mean"])
        cells = []
        for m, _ in METHODS:
            if m not in means:
                cells.append("–")
                continue
            text = pm(means[m]["mean"], means[m]["se"])
            cells.append(f"**{text}**" if m == best else text)
        papers = [s["methods"][m].get("paper_final_rmse") for m, _ in PAPER_METHODS]
        ratios = [f"{means[m]['mean'] / p:.2f}" for (m, _), p in zip(PAPER_METHODS, papers)]
        rows.append([d] + cells + [f"{p:.3f}" for p in papers] + [" / ".join(ratios)])
    head = "; ".join(f"`{p}` protocol, {labels} labels, {seeds} seeds" for p, labels, seeds in sorted(protocols))
    return (f"Final test RMSE (mean ± se; {head}; `results/active/hedge-protocol/<dataset>/summary.json`), lowest "
            "in bold, beside the paper's Table 1 (Pinsler et al., 40 seeds; its error bars are not in the material "
            "we have) and ours as a multiple of it:\n\n"
            + table(["dataset"] + [n for _, n in METHODS] + [f"paper {n}" for _, n in PAPER_METHODS]
                    + ["ours / paper (Random / MaxEnt / ACS-FW)"], rows))


def final_rmse_block():
    """The authors' protocol (results/active/<dataset>/ and <dataset>-projections-10/): every
    finished dataset's final RMSE per method, ACS-FW in both forms, beside Table 1; a dataset
    whose runs are still going says so instead of showing numbers."""
    rows, protocols = [], set()
    for d in DATASETS:
        papers = [paper(d, m) for m, _ in PAPER_METHODS]
        if not finished(d):
            rows.append([d, f"running (`results/active/paper-protocol/{d}/`)", "", "", "", ""] + [f"{p:.3f}" for p in papers] + [""])
            continue
        s = summary(d)
        protocols.add((s["protocol"], s["labels"], s["seeds"]))
        means = {m: s["methods"][m]["final_rmse"] for m, _ in METHODS}
        if finished(f"{d}-projections-10"):
            means["acs-fw-j10"] = summary(f"{d}-projections-10")["methods"]["acs-fw"]["final_rmse"]
        best = min(means, key=lambda m: means[m]["mean"])
        cells = []
        for m in ("random", "maxent", "acs-fw", "acs-fw-j10", "lcmd"):
            text = pm(means[m]["mean"], means[m]["se"]) if m in means else "running"
            cells.append(f"**{text}**" if m == best else text)
        ratios = [f"{means[m]['mean'] / p:.2f}" for (m, _), p in zip(PAPER_METHODS, papers)]
        if "acs-fw-j10" in means:
            ratios.append(f"{means['acs-fw-j10']['mean'] / papers[2]:.2f}")
        rows.append([d] + cells + [f"{p:.3f}" for p in papers] + [" / ".join(ratios)])
    head = "; ".join(f"`{p}` protocol, {labels} labels, {seeds} seeds" for p, labels, seeds in sorted(protocols))
    return (f"Final test RMSE (mean ± se; {head}; `results/active/<dataset>/summary.json`, ACS-FW on J = 10 "
            "projections from `<dataset>-projections-10/`, the same seeds), lowest in bold, beside the paper's Table 1 "
            "(Pinsler et al., 40 seeds; its error bars are not in the material we have) and ours as a multiple of it:\n\n"
            + table(["dataset", "Random", "MaxEnt", "ACS-FW (closed form)", "ACS-FW (J = 10)", "LCMD"]
                    + [f"paper {n}" for _, n in PAPER_METHODS]
                    + ["ours / paper (Random / MaxEnt / ACS-FW / J = 10)"], rows))


def paired_rows(run_of):
    rows = []
    for d in DATASETS:
        run = run_of(d)
        if not finished(run):
            continue
        for p in summary(run)["paired_differences"]:
            mu, se = p["difference"]["mean"], p["difference"]["se"]
            rows.append([d, f"{NAMES[p['a']]} − {NAMES[p['b']]}", pm(mu, se, sign=True),
                         f"{p['a_better']}/{p['seeds']}", noise(mu, se)])
    return rows


def paired_block(run_of=lambda d: d, projections=True):
    """The paired differences each dataset's summary.json holds (finished datasets only), and
    with `projections` ACS-FW on J = 10 projections against the others."""
    rows = paired_rows(run_of)
    if projections:
        # ACS-FW's two forms, paired on the same seeds, where both have finished.
        for d in DATASETS:
            proj = f"{d}-projections-10"
            if finished(d) and finished(proj):
                for other, name in (("acs-fw", "ACS-FW (closed form)"), ("random", "Random"), ("lcmd", "LCMD")):
                    mu, se, lower, n = paired((proj, "acs-fw"), (d, other))
                    rows.append([d, f"ACS-FW (J = 10) − {name}", pm(mu, se, sign=True), f"{lower}/{n}", noise(mu, se)])
    return ("Paired differences of the final RMSE (every seed shares its split and initial labels across "
            "methods; negative: the first is better):\n\n"
            + table(["dataset", "A − B", "mean ± se", "seeds where A is better", "mean against 2 se"], rows))


def ordering(values):
    """`A < B < C` for {name: value}, lowest first."""
    return " < ".join(NAMES[m] for m in sorted(values, key=values.get))


def ses(difference, se):
    """`+1.2 se`: a difference in standard errors."""
    return f"{difference / se:+.1f} se".replace("-", "−")


def paper_protocol_notes_block():
    """Per finished dataset at the authors' protocol: whether the paper's ordering of Random,
    MaxEnt and ACS-FW holds, ACS-FW's two forms against Table 1 (in standard errors of ours), and
    the two forms paired."""
    lines = []
    for d in DATASETS:
        if not finished(d):
            lines.append(f"- **{d}**: running (`results/active/paper-protocol/{d}/`).")
            continue
        table1 = {m: paper(d, m) for m, _ in PAPER_METHODS}
        ours = {m: rmse(d, m)[0] for m, _ in PAPER_METHODS}
        same = ordering(ours) == ordering(table1)
        closed = rmse(d, "acs-fw")
        text = (f"- **{d}**: the paper's ordering {ordering(table1)} "
                + ("holds" if same else f"does not hold (ours: {ordering(ours)})")
                + f"; ACS-FW (closed form) {pm(*closed)} against Table 1's {table1['acs-fw']:.3f} "
                f"({ses(closed[0] - table1['acs-fw'], closed[1])})")
        proj = f"{d}-projections-10"
        if finished(proj):
            j10 = rmse(proj, "acs-fw")
            mu, se, lower, n = paired((proj, "acs-fw"), (d, "acs-fw"))
            text += (f", on J = 10 projections {pm(*j10)} ({ses(j10[0] - table1['acs-fw'], j10[1])}); "
                     f"J = 10 − closed form {pm(mu, se, sign=True)}, lower on {lower}/{n} seeds, {noise(mu, se)}")
        else:
            text += "; J = 10 projections running"
        lines.append(text + ".")
    return "\n".join(lines)


def projections_verdict_block():
    """Why ACS-FW's default form is J = 10 projections: every paired comparison of the two forms
    run (the hedge protocol's PROJECTIONS and each finished dataset at the authors' protocol)."""
    pairs = [(f"{label}, hedge protocol", (proj, "acs-fw"), (closed, "acs-fw")) for label, proj, closed, _ in PROJECTIONS]
    pairs += [(f"{d}, authors' protocol", (f"{d}-projections-10", "acs-fw"), (d, "acs-fw")) for d in DATASETS
              if finished(d) and finished(f"{d}-projections-10")]
    results = [(label, paired(a, b)) for label, a, b in pairs]
    lower = [label for label, (mu, *_r) in results if mu < 0]
    beyond = [label for label, (mu, se, *_r) in results if mu < -2 * se]
    higher = [label for label, (mu, *_r) in results if mu >= 0]
    return (f"**ACS-FW's default form is J = 10 random projections** (`--projections`, default 10; `--closed-form` "
            f"for the N × N inner products): of the {len(results)} paired comparisons of the two forms run (40 seeds "
            f"each), J = 10 is lower in {len(lower)}"
            + (f" (higher in: {', '.join(higher)})" if higher else "")
            + f", beyond two standard errors in {len(beyond)} ({'; '.join(beyond)}), and it selects in a fraction of the "
            "closed form's time.")


BLOCKS_PAPER = {"paper-notes": paper_protocol_notes_block, "projections-verdict": projections_verdict_block}


# (label, J = 10 run, closed-form run, Random's run); the closed form and Random ran beside the
# projections on the same machine where a run exists (gp-same-labels/), else the main table's run.
PROJECTIONS = (
    ("yacht", "gp-same-labels/yacht-projections-10", hp("yacht"), hp("yacht")),
    ("energy", "gp-same-labels/energy-projections-10", "gp-same-labels/energy", "gp-same-labels/energy"),
    ("bostonHousing", "gp-same-labels/bostonHousing-projections-10", "gp-same-labels/bostonHousing",
     "gp-same-labels/bostonHousing"),
    ("power-plant (300 epochs)", "gp-same-labels/power-plant-300-epochs-projections-10",
     "gp-same-labels/power-plant-300-epochs", "gp-same-labels/power-plant-300-epochs"),
    ("power-plant (1,000 epochs)", "gp-same-labels/power-plant-projections-10", hp("power-plant"), hp("power-plant")),
)


def projections_block():
    rows = []
    for label, proj, closed, rnd in PROJECTIONS:
        if not exists(*ACTIVE, proj, "summary.json"):
            continue
        vs_closed = paired((proj, "acs-fw"), (closed, "acs-fw"))
        vs_random = paired((proj, "acs-fw"), (rnd, "random"))
        rows.append([label, pm(*rmse(proj, "acs-fw")), pm(*rmse(closed, "acs-fw")),
                     f"{fmt_pair(vs_closed)}, {noise(*vs_closed[:2])}",
                     f"{fmt_pair(vs_random)}, {noise(*vs_random[:2])}", f"{paper(closed, 'acs-fw'):.3f}"])
    return ("ACS-FW on J = 10 projections (`gp-same-labels/<dataset>-projections-10/`) paired seed by seed "
            "with the closed form and with Random on the same splits and initial labels (`(k/n)`: seeds "
            "where J = 10 is lower):\n\n"
            + table(["dataset", "ACS-FW, J = 10", "closed form", "J = 10 − closed form", "J = 10 − Random",
                     "paper ACS-FW"], rows))


# (label, Random's run, ACS-FW's run), three fits per round, ACS-FW on J = 10 projections.
ENSEMBLE = (
    ("yacht", "ensemble/yacht-3-random", "ensemble/yacht-3-projections-10"),
    ("energy", "ensemble/energy-3", "ensemble/energy-3-projections-10"),
    ("bostonHousing", "ensemble/bostonHousing-3-random", "ensemble/bostonHousing-3-projections-10"),
    ("power-plant (300 epochs)", "ensemble/power-plant-300-epochs-3-projections-10",
     "ensemble/power-plant-300-epochs-3-projections-10"),
)
PAPER_OF = {"yacht": "yacht", "energy": "energy", "bostonHousing": "bostonHousing",
            "power-plant (300 epochs)": "power-plant"}  # the dataset whose Table 1 values stand beside


def ensemble_block():
    rows = []
    for label, rnd, acs in ENSEMBLE:
        r, a = rmse(rnd, "random"), rmse(acs, "acs-fw")
        diff = paired((rnd, "random"), (acs, "acs-fw"))
        main = PAPER_OF[label]
        rows.append([label, pm(*r), pm(*a), f"{fmt_pair(diff, better='b')}, {noise(*diff[:2])}",
                     f"{paper(main, 'random'):.3f}", f"{paper(main, 'acs-fw'):.3f}",
                     f"{seconds_per_seed(rnd, 'random'):.0f} / {seconds_per_seed(acs, 'acs-fw'):.0f}"])
    return ("Three NeuralLinear fits per round (`--ensemble 3`), 40 seeds, final test RMSE (mean ± se); "
            "`(k/n)`: seeds where ACS-FW is lower; seconds per seed are fit plus selection summed from "
            "`rounds.jsonl`:\n\n"
            + table(["dataset", "Random, 3 fits", "ACS-FW (J = 10), 3 fits", "Random − ACS-FW", "paper Random",
                     "paper ACS-FW", "s / seed (Random / ACS-FW)"], rows))


def mse_recipe_block():
    rows, ratios, seeds = [], [], set()
    for d in DATASETS:
        run = f"mse-recipe/{d}"
        s = summary(run)
        seeds.add(s["seeds"])
        cells, multiples = [], []
        for m, _ in PAPER_METHODS:
            mean, se = rmse(run, m)
            p = paper(d, m)
            cells.append(f"{pm(mean, se)} ({p:.3f})")
            multiples.append(mean / p)
        ratios += multiples
        rows.append([d] + cells + [" / ".join(f"{x:.2f}" for x in multiples)])
    return (f"hedge's first recipe (`--recipe mse`, {', '.join(map(str, sorted(seeds)))} seeds, "
            "`mse-recipe/<dataset>/`), final test RMSE (mean ± se; paper in brackets); the RMSEs are "
            f"{min(ratios):.2f}–{max(ratios):.2f}x the paper's:\n\n"
            + table(["dataset"] + [n for _, n in PAPER_METHODS] + ["ours / paper"], rows))


BLOCKS = {
    **BLOCKS_PAPER,
    "final-rmse": final_rmse_block,
    "paired": paired_block,
    "final-rmse-hedge": hedge_final_rmse_block,
    "paired-hedge": lambda: paired_block(hp, projections=False),
    "projections": projections_block,
    "ensemble": ensemble_block,
    "mse-recipe": mse_recipe_block,
}


def authors_reference_block():
    r = load(*ACTIVE, "reference", "authors-scripts-yacht.json")
    means = " / ".join(f"{NAMES[m]} {r['final_rmse_mean'][m]:.3f}" for m, _ in PAPER_METHODS)
    return (f"The authors' scripts on {r['dataset']} ({r['seeds']} seeds, final RMSE mean: {means}): "
            f"{r['source']}; protocol: {r['protocol']} (`results/active/reference/authors-scripts-yacht.json`).")


BLOCKS["authors-reference"] = authors_reference_block


# ---------------------------------------------------------------------------------------------
# Lever tables: each cell names the run folder(s) it is read from, so a table is its own recipe.
# A run's value per seed is the last round's `metric` (test_rmse, gp_test_rmse: the GP fitted
# beside NeuralLinear on the same labels, test_log_likelihood) or, with `labels`, the round
# that reached that many labels.
_ROUNDS = {}


def rounds(run):
    """A run folder's rounds.jsonl, read once."""
    if run not in _ROUNDS:
        _ROUNDS[run] = load_lines(*ACTIVE, run, "rounds.jsonl")
    return _ROUNDS[run]


def per_seed(run, method, metric="test_rmse", seeds=None, labels=None):
    """{seed: value} of one method in one run folder."""
    chosen = {}
    for r in rounds(run):
        if r["method"] != method or (seeds is not None and r["seed"] not in seeds):
            continue
        if labels is not None:
            if r["labels"] == labels:
                chosen[r["seed"]] = (0, r[metric])
        elif r["seed"] not in chosen or r["round"] > chosen[r["seed"]][0]:
            chosen[r["seed"]] = (r["round"], r[metric])
    if not chosen:
        raise SystemExit(f"docs: results/active/{run}: no {method} rounds with {metric}"
                         + (f" at {labels} labels" if labels else ""))
    return {s: v for s, (_, v) in chosen.items()}


def S(run, method, metric="test_rmse", seeds=None, labels=None, digits=3):
    """`mean ± se` over the seeds."""
    return pm(*mean_se(list(per_seed(run, method, metric, seeds, labels).values())), digits=digits)


def M(run, method, metric="test_rmse", seeds=None, digits=3):
    """The mean alone."""
    v = list(per_seed(run, method, metric, seeds).values())
    return f"{sum(v) / len(v):.{digits}f}".replace("-", "−")


def D(a, b, seeds=None, count=True):
    """`+d ± se (k/n)`: a − b paired by seed over the seeds both hold, k = seeds where a is lower.
    a and b are (run, method) or (run, method, metric)."""
    d = diffs(a, b, seeds)
    text = pm(*mean_se(d), sign=True)
    return f"{text} ({sum(x < 0 for x in d)}/{len(d)})" if count else text


def SD(run, method, base, seeds=None):
    """`mean ± se (+d ± se, k/n lower)`: a lever run and its paired difference to `base` (a run folder,
    same method) over the lever's seeds."""
    va = per_seed(run, method, seeds=seeds)
    vb = per_seed(base, method, seeds=set(va))
    d = [va[s] - vb[s] for s in sorted(set(va) & set(vb))]
    return f"{S(run, method, seeds=seeds)} ({pm(*mean_se(d), sign=True)}, {sum(x < 0 for x in d)}/{len(d)} lower)"


def P(dataset, method):
    """The paper's Table 1 value (as the dataset's main summary.json records it)."""
    p = paper(dataset, method)
    return "–" if p is None else f"{p:.3f}"


EIGHT, TEN = set(range(8)), set(range(10))


def lever_table(header, rows, note=""):
    return (note + "\n\n" if note else "") + table(header, rows)


def weight_decay_block():
    rows = [["energy", "1.0 (`../hedge-protocol/energy`, seeds 0–9)", S(hp("energy"), "random", seeds=TEN), S(hp("energy"), "acs-fw", seeds=TEN), P(hp("energy"), "random") + " / " + P(hp("energy"), "acs-fw")]]
    for run, label in (("weight-decay/energy-wd0.015625", "1/64 (the \"sum\" reading)"), ("weight-decay/energy-wd3", "3.0")):
        rows.append(["energy", label, SD(run, "random", hp("energy")), SD(run, "acs-fw", hp("energy")), ""])
    rows.append(["bostonHousing", "1.0 (`../hedge-protocol/bostonHousing`, seeds 0–9)", S(hp("bostonHousing"), "random", seeds=TEN),
                 S(hp("bostonHousing"), "acs-fw", seeds=TEN), P(hp("bostonHousing"), "random") + " / " + P(hp("bostonHousing"), "acs-fw")])
    rows.append(["bostonHousing", "3.0", SD("weight-decay/bostonHousing-wd3", "random", hp("bostonHousing")),
                 SD("weight-decay/bostonHousing-wd3", "acs-fw", hp("bostonHousing")), ""])
    return lever_table(["dataset", "weight decay", "Random", "ACS-FW", "paper Random / ACS-FW"], rows,
                       "Final test RMSE, mean ± se over seeds 0–9; in brackets the paired difference to weight decay "
                       "1.0 on the same seeds (negative: this setting is better) and the seeds where it is lower:")


def eight_seed_lever_block(folder, label_of, note, extra=None):
    """Levers run on seeds 0–7 of energy and boston, each beside seeds 0–7 of the 40-seed run."""
    rows = []
    for d in ("energy", "bostonHousing"):
        row = [d, "the recipe (seeds 0–7 of `../hedge-protocol/" + d + "/`)", S(hp(d), "random", seeds=EIGHT), S(hp(d), "acs-fw", seeds=EIGHT)]
        if extra:
            row.append(extra(d, None))
        rows.append(row + [P(d, "random") + " / " + P(d, "acs-fw")])
        for run, label in label_of(d):
            row = [d, label, SD(f"{folder}/{run}", "random", hp(d)), SD(f"{folder}/{run}", "acs-fw", hp(d))]
            if extra:
                row.append(extra(d, f"{folder}/{run}"))
            rows.append(row + [""])
    header = ["dataset", "setting", "Random", "ACS-FW"] + (["test log-likelihood (Random)"] if extra else []) + ["paper Random / ACS-FW"]
    return lever_table(header, rows, note)


def noise_prior_block():
    return eight_seed_lever_block(
        "noise-prior", lambda d: [(f"{d}-b0.01", "b₀ = 0.01")] if d == "energy" else [(f"{d}-b0.012", "b₀ = 0.012")],
        "Final test RMSE, mean ± se over seeds 0–7; in brackets the paired difference to the recipe's b₀ = 1 "
        "on the same seeds (negative: better) and the seeds where it is lower:",
        extra=lambda d, run: M(run or hp(d), "random", "test_log_likelihood", seeds=EIGHT, digits=2))


def target_scaling_block():
    return eight_seed_lever_block(
        "target-scaling", lambda d: [(f"{d}-labelled", "targets standardised on every label")],
        "Final test RMSE, mean ± se over seeds 0–7; in brackets the paired difference to the recipe "
        "(targets standardised on the initial labels) on the same seeds and the seeds where it is lower:")


def split_block():
    rows = []
    for d in ("energy", "bostonHousing"):
        rows.append([d, f"80/20 (seeds 0–7 of `../hedge-protocol/{d}/`)", S(hp(d), "random", seeds=EIGHT), S(hp(d), "acs-fw", seeds=EIGHT),
                     P(d, "random") + " / " + P(d, "acs-fw")])
        run = f"split-90-10/{d}-test0.1"
        rows.append([d, "90/10", S(run, "random"), S(run, "acs-fw"), ""])
    return lever_table(["dataset", "split", "Random", "ACS-FW", "paper Random / ACS-FW"], rows,
                       "Final test RMSE, mean ± se over seeds 0–7 (the test sets differ, so no paired differences):")


def power_plant_levers_block():
    rows = [["the paper's power-plant recipe (lr 1e-3, weight decay 3, b₀ = 3; seeds 0–7 of `../hedge-protocol/power-plant/`)",
             S(hp("power-plant"), "random", seeds=EIGHT), S(hp("power-plant"), "acs-fw", seeds=EIGHT)]]
    for run, label in (("power-lr1e-2", "lr 1e-2"), ("power-lr1e-2-wd1", "lr 1e-2, weight decay 1 (the other datasets' settings, b₀ = 3)"),
                       ("power-b0-1", "b₀ = 1 (lr 1e-3, weight decay 3)")):
        folder = f"power-plant-levers/{run}"
        rows.append([f"`{run}`: {label}", SD(folder, "random", hp("power-plant")), SD(folder, "acs-fw", hp("power-plant"))])
    rows.append(["paper (Pinsler et al., Table 1)", P(hp("power-plant"), "random"), P(hp("power-plant"), "acs-fw")])
    rows.append(["hedge's MSE recipe (10 seeds, `../mse-recipe/power-plant/`)", S("mse-recipe/power-plant", "random"),
                 S("mse-recipe/power-plant", "acs-fw")])
    return lever_table(["setting", "Random", "ACS-FW"], rows,
                       "Final test RMSE, mean ± se over seeds 0–7; in brackets the paired difference to the paper's "
                       "power-plant recipe on the same seeds and the seeds where the lever is lower:")


def boston_uncensored_block():
    rows = []
    for run, label, full, method in (("random", "Random", hp("bostonHousing"), "random"),
                                     ("maxent", "MaxEnt", hp("bostonHousing"), "maxent"),
                                     ("acs-fw", "ACS-FW (closed form, the default)", hp("bostonHousing"), "acs-fw"),
                                     ("acs-fw-projections-10", "ACS-FW (J = 10 projections)",
                                      "gp-same-labels/bostonHousing-projections-10", "acs-fw")):
        folder = f"boston-uncensored/{run}"
        mean, se = mean_se(list(per_seed(folder, method).values()))
        p = paper("bostonHousing", method)
        rows.append([label, pm(mean, se), f"{p:.3f}", f"{pm(mean - p, se, sign=True)} ({abs(mean - p) / se:.1f} se)",
                     S(full, method), S(folder, method, metric="gp_test_rmse")])
    return lever_table(["method", "without the 16 rows", "paper", "difference to the paper",
                        "with them (`../hedge-protocol/bostonHousing/`, `../gp-same-labels/`)", "GP on the same labels, without them"], rows,
                       "Final test RMSE, mean ± se over 40 seeds:")


def boston_uncensored_paper_block():
    """ACS-FW in both forms without the censored rows at the authors' protocol
    (`boston-uncensored/paper-protocol{,-projections-10}/`), beside the same with the rows
    (`bostonHousing{,-projections-10}/`) and Table 1; a line per form while it runs."""
    rows = []
    for label, run, full in (("ACS-FW (closed form)", "boston-uncensored/paper-protocol", "bostonHousing"),
                             ("ACS-FW (J = 10 projections)", "boston-uncensored/paper-protocol-projections-10",
                              "bostonHousing-projections-10")):
        p = paper("bostonHousing", "acs-fw")
        if not finished(run):
            rows.append([label, f"running (`{run}/`)", f"{p:.3f}", "", pm(*rmse(full, "acs-fw"))])
            continue
        mean, se = rmse(run, "acs-fw")
        rows.append([label, pm(mean, se), f"{p:.3f}", f"{pm(mean - p, se, sign=True)} ({abs(mean - p) / se:.1f} se)",
                     pm(*rmse(full, "acs-fw"))])
    return lever_table(["method", "without the 16 rows", "paper", "difference to the paper",
                        "with them (`../bostonHousing/`, `../bostonHousing-projections-10/`)"], rows,
                       "At the authors' protocol (120 labels, their minibatch rule), final test RMSE, mean ± se over 40 seeds:")


def boston_uncensored_paired_block():
    """The methods' paired differences without the censored rows (same split and initial labels
    per seed), beside the paper's differences of its Table 1 means."""
    u = "boston-uncensored/"
    pairs = (("Random − ACS-FW (closed form)", (u + "random", "random"), (u + "acs-fw", "acs-fw"), ("random", "acs-fw")),
             ("Random − ACS-FW (J = 10)", (u + "random", "random"), (u + "acs-fw-projections-10", "acs-fw"), ("random", "acs-fw")),
             ("Random − MaxEnt", (u + "random", "random"), (u + "maxent", "maxent"), ("random", "maxent")),
             ("MaxEnt − ACS-FW (closed form)", (u + "maxent", "maxent"), (u + "acs-fw", "acs-fw"), ("maxent", "acs-fw")),
             ("MaxEnt − ACS-FW (J = 10)", (u + "maxent", "maxent"), (u + "acs-fw-projections-10", "acs-fw"), ("maxent", "acs-fw")))
    rows = []
    for label, a, b, (pa, pb) in pairs:
        d = paper("bostonHousing", pa) - paper("bostonHousing", pb)
        rows.append([label, D(a, b), f"{d:+.3f}".replace("-", "−")])
    return lever_table(["difference", "without the 16 rows, paired (seeds where the first is lower)", "paper (Table 1 means)"],
                       rows)


def gp_same_labels_block():
    rows = []
    for label, run, methods in (("energy", "gp-same-labels/energy", ("random", "maxent", "acs-fw", "lcmd")),
                                ("bostonHousing", "gp-same-labels/bostonHousing", ("random", "acs-fw", "lcmd")),
                                ("power-plant (300 epochs)", "gp-same-labels/power-plant-300-epochs", ("random", "acs-fw", "lcmd"))):
        d = label.split(" ")[0]
        for m in methods:
            rows.append([label, NAMES[m], S(run, m), S(run, m, "gp_test_rmse"),
                         D((run, m), (run, m, "gp_test_rmse"), count=False), P(d, m)])
    return lever_table(["dataset", "method", "NeuralLinear", "GP on the same labels", "NL − GP", "paper"], rows,
                       "Final test RMSE, mean ± se over 40 seeds; \"NL − GP\" is paired on the same labels (positive: "
                       "the GP predicts better from them):")


def gp_same_labels_paired_block():
    """Which labels serve each model better: final RMSE differences between methods, paired by
    seed, of the GP and of NeuralLinear on each method's labels."""
    rows = []
    for label, run in (("energy", "gp-same-labels/energy"), ("bostonHousing", "gp-same-labels/bostonHousing"),
                       ("power-plant (300 epochs)", "gp-same-labels/power-plant-300-epochs")):
        rows.append([label, D((run, "random", "gp_test_rmse"), (run, "acs-fw", "gp_test_rmse")),
                     D((run, "acs-fw", "gp_test_rmse"), (run, "lcmd", "gp_test_rmse")),
                     D((run, "random"), (run, "acs-fw")), D((run, "acs-fw"), (run, "lcmd"))])
    return lever_table(["dataset", "GP: Random − ACS-FW", "GP: ACS-FW − LCMD", "NeuralLinear: Random − ACS-FW",
                        "NeuralLinear: ACS-FW − LCMD"], rows,
                       "Final RMSE differences between methods, paired by seed (seeds where the first is lower):")


def layer_init_block(suffix, seeds_note):
    rows = []
    for d in ("energy", "bostonHousing"):
        run = f"layer-init/{d}-pytorch{suffix}"
        for m in ("random", "acs-fw"):
            seeds = set(per_seed(run, m))
            va, vb = per_seed(run, m), per_seed(hp(d), m, seeds=seeds)
            diff = [va[s] - vb[s] for s in sorted(va)]
            rows.append([d, NAMES[m], S(run, m), S(hp(d), m, seeds=seeds), pm(*mean_se(diff), sign=True),
                         f"{sum(x < 0 for x in diff)}/{len(diff)}", P(d, m)])
    return lever_table(["dataset", "method", f"PyTorch start{seeds_note}", "tch start (same seeds)", "difference",
                        "seeds better", "paper"], rows)


def gp_reference_block():
    rows = []
    for d in DATASETS:
        gp = f"gp-reference/{d}"
        rows.append([d, S(gp, "random"), S(hp(d), "random"), D((gp, "random"), (hp(d), "random")), P(d, "random"),
                     S(gp, "maxent"), S(hp(d), "maxent"), D((gp, "maxent"), (hp(d), "maxent")), P(d, "maxent"),
                     P(d, "acs-fw"), S(hp(d), "acs-fw")])
    rows.append(["power-plant, NeuralLinear at 300 epochs (`../power-plant-300-epochs`)", "",
                 S("power-plant-300-epochs", "random"), D(("gp-reference/power-plant", "random"), ("power-plant-300-epochs", "random")),
                 "", "", S("power-plant-300-epochs", "maxent"),
                 D(("gp-reference/power-plant", "maxent"), ("power-plant-300-epochs", "maxent")), "", "",
                 S("power-plant-300-epochs", "acs-fw")])
    return lever_table(["dataset", "GP Random", "NeuralLinear Random", "GP − NL (paired)", "paper Random", "GP MaxEnt",
                        "NL MaxEnt", "GP − NL", "paper MaxEnt", "paper ACS-FW", "NL ACS-FW"], rows)


def learning_curve_block():
    run = "gp-reference/bostonHousing-learning-curve"
    counts = sorted({r["labels"] for r in load_lines(*ACTIVE, run, "rounds.jsonl")})
    shown = [c for c in counts if c in (20, 60, 100, 140, 180, 200, 240, 300, 400)]
    return table(["labels"] + [str(c) for c in shown],
                 [["GP RMSE (mean ± se)"] + [S(run, "random", labels=c) for c in shown]])


def training_length_block():
    out = []
    for d, epochs in (("yacht", (300, 1000)), ("bostonHousing", (100, 300, 1000, 3000)),
                      ("energy", (100, 300, 1000, 3000)), ("power-plant", (100, 300, 1000))):
        rows = []
        for m in ("random", "acs-fw"):
            cells = []
            for e in epochs:
                cells.append(S(hp(d), m, seeds=EIGHT) if e == 1000 else SD(f"training-length/{d}-ep{e}", m, hp(d), seeds=EIGHT))
            rows.append([NAMES[m]] + cells + [P(d, m)])
        out.append(f"**{d}**\n\n" + table(["method"] + [f"{e} epochs" for e in epochs] + ["paper"], rows))
    return "\n\n".join(out)


PP_300 = "power-plant-300-epochs-paper-protocol"
PP_100 = "power-plant-100-epochs-paper-protocol"


def shorter(run, method, long):
    """`mean ± se (d ± se, k/n lower)`: a shorter training's final RMSE and its difference to the
    1,000-epoch run, paired by seed; "running" until the run has finished."""
    if not (finished(run) and finished(long)):
        return "running"
    d = diffs((run, method), (long, method))
    return f"{S(run, method)} ({pm(*mean_se(d), sign=True)}, {sum(x < 0 for x in d)}/{len(d)} lower)"


def power_plant_length_paper_block():
    """power-plant at the authors' protocol at 1,000 epochs (the recipe's, `power-plant{,-projections-10}/`),
    300 (`power-plant-300-epochs-paper-protocol{,-projections-10}/`, an exact GP fitted beside NeuralLinear
    on the same labels) and 100 (`power-plant-100-epochs-paper-protocol/`), per method beside Table 1; a
    cell whose run has not finished says so. Then whether Table 1's ordering holds at each length."""
    rows = []
    specs = [("random", "Random", ""), ("maxent", "MaxEnt", ""), ("acs-fw", "ACS-FW (closed form)", ""),
             ("acs-fw", "ACS-FW (J = 10)", "-projections-10"), ("lcmd", "LCMD", "")]
    for m, name, suffix in specs:
        long, mid = f"power-plant{suffix}", f"{PP_300}{suffix}"
        p = paper("power-plant", m)
        rows.append([name, S(long, m) if finished(long) else "running", shorter(mid, m, long),
                     shorter(PP_100, m, long) if not suffix else "not run",
                     S(mid, m, "gp_test_rmse") if finished(mid) else "running", "–" if p is None else f"{p:.3f}"])
    text = ("At the authors' protocol (120 labels, minibatches of min(labelled, 32)), final test RMSE, mean ± se over "
            "40 seeds; in brackets the difference to 1,000 epochs, paired by seed (seeds where the shorter training "
            "is lower); the GP is fitted on the 300-epoch run's labels:\n\n"
            + table(["method", "NeuralLinear, 1,000 epochs (`power-plant/`)", f"300 epochs (`{PP_300}/`)",
                     f"100 epochs (`{PP_100}/`)", "GP on the same labels", "paper"], rows))
    table1 = {m: paper("power-plant", m) for m, _ in PAPER_METHODS}
    verdicts = []
    for label, run, metric in (("NeuralLinear at 1,000 epochs", "power-plant", "test_rmse"),
                               ("NeuralLinear at 300 epochs", PP_300, "test_rmse"),
                               ("NeuralLinear at 100 epochs", PP_100, "test_rmse"),
                               ("the GP on the 300-epoch run's labels", PP_300, "gp_test_rmse")):
        if finished(run):
            ours = {m: mean_se(list(per_seed(run, m, metric).values()))[0] for m, _ in PAPER_METHODS}
            verdicts.append(f"{label} " + ("it holds" if ordering(ours) == ordering(table1)
                                           else f"it does not ({ordering(ours)})"))
    if verdicts:
        text += f"\n\nTable 1's ordering is {ordering(table1)}; for " + "; for ".join(verdicts) + "."
    if finished(PP_100):
        gap = {m: (rmse(PP_100, m)[0] - table1[m], rmse("power-plant", m)[0] - table1[m]) for m, _ in PAPER_METHODS}
        text += (" At 100 epochs, paired by seed (seeds where the first is lower): Random − ACS-FW "
                 f"{D((PP_100, 'random'), (PP_100, 'acs-fw'))}, MaxEnt − ACS-FW {D((PP_100, 'maxent'), (PP_100, 'acs-fw'))}; "
                 "the gap to Table 1 is " + ", ".join(
                     f"{NAMES[m]} {g:+.3f} (at 1,000 epochs {g0:+.3f})".replace(" -", " −").replace("(-", "(−")
                     for m, (g, g0) in gap.items())
                 + ".")
    return text


BLOCKS.update({
    "power-plant-length-paper": power_plant_length_paper_block,
    "weight-decay": weight_decay_block,
    "noise-prior": noise_prior_block,
    "target-scaling": target_scaling_block,
    "split-90-10": split_block,
    "power-plant-levers": power_plant_levers_block,
    "boston-uncensored": boston_uncensored_block,
    "boston-uncensored-paper": boston_uncensored_paper_block,
    "boston-uncensored-paired": boston_uncensored_paired_block,
    "gp-same-labels": gp_same_labels_block,
    "gp-same-labels-paired": gp_same_labels_paired_block,
    "layer-init-24": lambda: layer_init_block("", ", seeds 0–23"),
    "layer-init-40": lambda: layer_init_block("-40", ", 40 seeds"),
    "gp-reference": gp_reference_block,
    "learning-curve": learning_curve_block,
    "training-length": training_length_block,
})


def mse_paired_block():
    rows = []
    for d in DATASETS:
        run = f"mse-recipe/{d}"
        rows.append([d, D((run, "acs-fw"), (run, "random")), D((run, "acs-fw"), (run, "maxent")),
                     D((run, "maxent"), (run, "random"))])
    return ("Paired differences of the final RMSE (every seed shares its split and initial labels across methods; "
            "mean ± se of the per-seed difference, and the seeds on which the first method is lower):\n\n"
            + table(["dataset", "ACS-FW − Random", "ACS-FW − MaxEnt", "MaxEnt − Random"], rows))


def protein_curve_scores(run="protein-large-pool", first=400, last=2000, step=200):
    """The bmdal benchmark's score: per seed the mean log RMSE over a grid of label counts (each
    seed read at its latest round at or below each grid point); per method the geometric-mean
    RMSE and, but for Random, the paired difference to Random in percent (mean, se) and the seeds
    better than Random: {method: (rmse, percent, se, better, seeds)}."""
    import math
    curves = {}
    for r in load_lines(*ACTIVE, run, "rounds.jsonl"):
        curves.setdefault((r["method"], r["seed"]), []).append((r["labels"], r["test_rmse"]))
    grid = range(first, last + 1, step)

    def at(curve, labels):
        return [v for n, v in sorted(curve) if n <= labels][-1]

    score = {k: sum(math.log(at(c, g)) for g in grid) / len(grid) for k, c in curves.items()}
    seeds = sorted({s for _, s in curves})
    out = {}
    for m, _ in METHODS:
        if (m, seeds[0]) not in score:
            continue
        gm = math.exp(sum(score[(m, s)] for s in seeds) / len(seeds))
        if m == "random":
            out[m] = (gm, None, None, None, len(seeds))
            continue
        diff = [score[(m, s)] - score[("random", s)] for s in seeds]
        mu, se = mean_se(diff)
        out[m] = (gm, 100 * (math.exp(mu) - 1), 100 * se, sum(x < 0 for x in diff), len(seeds))
    return out


def protein_curve_block(run="protein-large-pool", first=400, last=2000, step=200):
    """`protein_curve_scores` as a table."""
    rows = []
    for m, (gm, pct, se, better, n) in protein_curve_scores(run, first, last, step).items():
        if pct is None:
            rows.append([NAMES[m], f"{gm:.3f}", "–", "–"])
        else:
            rows.append([NAMES[m], f"{gm:.3f}", f"{pct:+.1f} % ± {se:.1f}".replace("-", "−"), f"{better}/{n}"])
    return table(["method", f"geometric-mean RMSE, {first}–{last} labels", "vs Random", "seeds better than Random"], rows)


def protein_sentence_block():
    """README's protein sentence: the learning-curve scores beside Random's, in words."""
    sc = protein_curve_scores()

    def rel(m):
        return f"{abs(sc[m][1]):.1f} % {'below' if sc[m][1] < 0 else 'above'}"

    return (f"setting) LCMD's learning curve is {rel('lcmd')} Random's, ACS-FW's (J = 300 projections) "
            f"{rel('acs-fw')},\nMaxEnt's {rel('maxent')} (`results/active/README.md`, the protein table).")


def fashion_paired_block(run="fashion-mnist"):
    rows = []
    for a, b in (("acs-fw", "random"), ("acs-fw", "maxent"), ("acs-fw", "bald"), ("maxent", "random"), ("bald", "random")):
        va, vb = per_seed(run, a, "test_accuracy"), per_seed(run, b, "test_accuracy")
        d = [va[s] - vb[s] for s in sorted(va)]
        rows.append([f"{NAMES.get(a, 'BALD')} − {NAMES.get(b, 'BALD')}", pm(*mean_se(d), digits=4, sign=True),
                     f"{sum(x > 0 for x in d)}/{len(d)}"])
    return table(["A − B (accuracy)", "mean ± se", "seeds where A is better"], rows)


BLOCKS.update({"mse-paired": mse_paired_block, "protein-curve": protein_curve_block,
               "fashion-paired": fashion_paired_block})


def ensemble_vs_one_fit(dataset, rows_spec):
    """Three fits against one on the same splits: rows of (label, ensemble run, method, one-fit run)."""
    rows = []
    for label, ens, m, one in rows_spec:
        rows.append([label, S(f"ensemble/{ens}", m), S(one, m), D((f"ensemble/{ens}", m), (one, m)),
                     S(f"ensemble/{ens}", m, "gp_test_rmse"), P(dataset, m)])
    return table(["method", "ensemble of 3", "one fit, same splits", "ensemble − one fit (k/n: ensemble lower)",
                  "GP on the ensemble's labels", "paper"], rows)


BLOCKS.update({
    "ensemble-energy-closed": lambda: ensemble_vs_one_fit("energy", (
        ("Random", "energy-3", "random", "gp-same-labels/energy"),
        ("ACS-FW", "energy-3", "acs-fw", "gp-same-labels/energy"))),
    "ensemble-energy": lambda: ensemble_vs_one_fit("energy", (
        ("Random", "energy-3", "random", "gp-same-labels/energy"),
        ("MaxEnt", "energy-3-maxent", "maxent", "gp-same-labels/energy"),
        ("ACS-FW (J = 10)", "energy-3-projections-10", "acs-fw", "gp-same-labels/energy-projections-10"))),
    "ensemble-power-plant": lambda: ensemble_vs_one_fit("power-plant", (
        ("Random", "power-plant-300-epochs-3-projections-10", "random", "gp-same-labels/power-plant-300-epochs"),
        ("ACS-FW (J = 10)", "power-plant-300-epochs-3-projections-10", "acs-fw",
         "gp-same-labels/power-plant-300-epochs-projections-10"))),
    "ensemble-boston": lambda: ensemble_vs_one_fit("bostonHousing", (
        ("Random", "bostonHousing-3-random", "random", "gp-same-labels/bostonHousing"),
        ("ACS-FW (J = 10)", "bostonHousing-3-projections-10", "acs-fw", "gp-same-labels/bostonHousing-projections-10"))),
    "ensemble-yacht": lambda: ensemble_vs_one_fit("yacht", (
        ("Random", "yacht-3-random", "random", hp("yacht")),
        ("ACS-FW (J = 10)", "yacht-3-projections-10", "acs-fw", "gp-same-labels/yacht-projections-10"))),
})


def fashion_mnist_block():
    """The classification run's final accuracies and how often ACS-FW beat Random seed by seed."""
    run, metric = "fashion-mnist", "test_accuracy"
    final = {m: M(run, m, metric) for m, _ in (("random", 0), ("maxent", 0), ("bald", 0), ("acs-fw", 0))}
    a, r = per_seed(run, "acs-fw", metric), per_seed(run, "random", metric)
    common = sorted(set(a) & set(r))
    better = sum(a[s] > r[s] for s in common)
    return (f"Fashion-MNIST (CNN + Laplace last layer, pool 5,000, 20 → 200 labels, {len(common)} seeds): accuracy\n"
            f"Random {final['random']}, MaxEnt {final['maxent']}, BALD {final['bald']}, ACS-FW {final['acs-fw']} "
            f"(better than Random on {better} of {len(common)} seeds).")


BLOCKS["fashion-mnist"] = fashion_mnist_block


def linear_baseline_block():
    """The linear reference of `scripts/linear-baseline.py` for power-plant, as a sentence."""
    r = load(*ACTIVE, "training-length", "linear-power-plant.json")
    return (f"A Bayesian linear regression on the four raw inputs of {r['labels']} random labels (the NIG "
            f"last layer's posterior mean fitted on the inputs instead of a network's features, prior precision "
            f"{r['prior_precision']:g}; `scripts/linear-baseline.py`) scores "
            f"{r['final_rmse']['mean']:.3f} ± {r['final_rmse']['se']:.3f} on the same protocol ({r['seeds']} seeds, NumPy).")


BLOCKS["linear-baseline"] = linear_baseline_block


def gp_same_labels_repeat_block():
    """NeuralLinear in gp-same-labels/ paired against the 40-seed folders it re-ran (the same seeds
    written in another session, on another host)."""
    def d(run, base, m):
        return D((f"gp-same-labels/{run}", m), (hp(base), m), count=False)

    return (f"paired against those folders, energy Random {d('energy', 'energy', 'random')}, "
            f"ACS-FW {d('energy', 'energy', 'acs-fw')}, boston ACS-FW "
            f"{d('bostonHousing', 'bostonHousing', 'acs-fw')}; power-plant repeats")


BLOCKS["gp-same-labels-repeat"] = gp_same_labels_repeat_block


def signed(x, plus="+"):
    """`x` with three decimals and a typographic minus; `plus` before a positive value."""
    return (plus if x >= 0 else "−") + f"{abs(x):.3f}"


def gp_reference_energy_gain_block():
    """energy: ACS-FW's gain over Random (NeuralLinear, `../hedge-protocol/energy`) beside the paper's, and each
    method's distance to the paper."""
    gap = {m: M(hp("energy"), m) for m in ("random", "acs-fw")}
    dist = {m: float(gap[m].replace("−", "-")) - paper("energy", m) for m in gap}
    return (f"ACS-FW's gain over Random is the paper's (hedge {D((hp('energy'), 'acs-fw'), (hp('energy'), 'random'), count=False)}, "
            f"paper {signed(paper(hp('energy'), 'acs-fw') - paper(hp('energy'), 'random'))}), so ACS-FW's gap to the paper "
            f"({gap['acs-fw']} vs {P(hp('energy'), 'acs-fw')}) is the same fit gap carried along (Random {gap['random']} vs "
            f"{P(hp('energy'), 'random')}: {signed(dist['random'], '')}; ACS-FW: {signed(dist['acs-fw'], '')}).")


def gp_reference_boston_fit_block():
    """bostonHousing: NeuralLinear's test log-likelihood against the GP's, and the paper's Random
    against the GP's RMSE in standard errors."""
    gp = per_seed("gp-reference/bostonHousing", "random")
    mu, se = mean_se(list(gp.values()))
    return (f"overconfident there (test log-likelihood {M(hp('bostonHousing'), 'random', 'test_log_likelihood', digits=2)} "
            f"against the GP's {M('gp-reference/bostonHousing', 'random', 'test_log_likelihood', digits=2)}). The paper's "
            f"Random ({P(hp('bostonHousing'), 'random')}) is below even the GP ({S('gp-reference/bostonHousing', 'random')}, "
            f"{(mu - paper(hp('bostonHousing'), 'random')) / se:.1f} se):")


BLOCKS.update({
    "gp-reference-energy-gain": gp_reference_energy_gain_block,
    "gp-reference-boston-fit": gp_reference_boston_fit_block,
    "gp-reference-boston-90-10": lambda: S("gp-reference/bostonHousing-90-10", "random"),
    "gp-reference-boston-uncensored": lambda: S("gp-reference/bostonHousing-uncensored", "random"),
})


def layer_init_orderings_block():
    """The paper's ordering (ACS-FW − Random) in the 40-seed PyTorch-start runs."""
    e, b = ("layer-init/energy-pytorch-40", "layer-init/bostonHousing-pytorch-40")
    return (f"(energy: ACS-FW − Random {D((e, 'acs-fw'), (e, 'random'), count=False)}; "
            f"boston {D((b, 'acs-fw'), (b, 'random'), count=False)}).")


def layer_init_repeat_block():
    """The largest per-seed difference of final RMSE between the 40-seed and the 24-seed
    PyTorch-start runs on the seeds both hold (same command and config)."""
    def largest(d):
        diffs = []
        for m in ("random", "acs-fw"):
            a, b = per_seed(f"layer-init/{d}-pytorch-40", m), per_seed(f"layer-init/{d}-pytorch", m)
            diffs += [abs(a[s] - b[s]) for s in b if s in a]
        return max(diffs)

    return f"differs by up to {largest('energy'):.2f} on energy and {largest('bostonHousing'):.1f} on boston),"


BLOCKS.update({"layer-init-orderings": layer_init_orderings_block, "layer-init-repeat": layer_init_repeat_block})


def ensemble_boston_notes_block():
    """boston with three and ten fits: the bullets under `ensemble-boston`."""
    r, a, t = ("ensemble/bostonHousing-3-random", "ensemble/bostonHousing-3-projections-10",
               "ensemble/bostonHousing-10-projections-10")
    one = {"random": "gp-same-labels/bostonHousing", "acs-fw": "gp-same-labels/bostonHousing-projections-10"}
    drop = [-mean_se(diffs((run, m), (one[m], m)))[0] for run, m in ((r, "random"), (a, "acs-fw"))]
    ten = set(per_seed(t, "acs-fw"))
    ten_mu, ten_se = mean_se(list(per_seed(t, "acs-fw").values()))
    paper_gap = paper(hp("bostonHousing"), "random") - paper(hp("bostonHousing"), "acs-fw")
    return "\n".join([
        f"- Three fits lower both methods by ≈ {sum(drop) / 2:.2f} and keep the paper's ordering with a wider margin:",
        f"  Random − ACS-FW {D((r, 'random'), (a, 'acs-fw'), count=False)} (ACS-FW better on "
        f"{sum(v < 0 for v in diffs((a, 'acs-fw'), (r, 'random')))}/{len(diffs((a, 'acs-fw'), (r, 'random')))}; "
        f"the paper: {signed(paper_gap)}). With three",
        f"  members NeuralLinear on ACS-FW's labels beats the GP on them "
        f"({D((a, 'acs-fw'), (a, 'acs-fw', 'gp_test_rmse'), count=False)}); on Random's it",
        f"  is {D((r, 'random'), (r, 'random', 'gp_test_rmse'), count=False)} above it.",
        f"- More members, lower again. On seeds {min(ten)}–{max(ten)} (ACS-FW, J = 10): one fit "
        f"{M(one['acs-fw'], 'acs-fw', seeds=ten)}, three {M(a, 'acs-fw', seeds=ten)}, ten",
        f"  **{pm(ten_mu, ten_se)}** (ten − three {D((t, 'acs-fw'), (a, 'acs-fw'), seeds=ten, count=False)}, better on "
        f"{sum(v < 0 for v in diffs((t, 'acs-fw'), (a, 'acs-fw'), ten))}/{len(ten)}), the paper "
        f"{P(hp('bostonHousing'), 'acs-fw')} — {(ten_mu - paper(hp('bostonHousing'), 'acs-fw')) / ten_se:.1f} standard",
        f"  errors away, but at {seconds_per_seed(t, 'acs-fw'):.0f} s per seed against "
        f"{seconds_per_seed(a, 'acs-fw'):.0f} s for three fits, beyond the",
        "  issue's 45 s ceiling and not the paper's recipe.",
        f"- What is left is not the fit alone: Random's labels with three members ({M(r, 'random')}) stay "
        f"{float(M(r, 'random')) - paper(hp('bostonHousing'), 'random'):.2f} above",
        f"  the paper's Random ({P(hp('bostonHousing'), 'random')}), and even the GP on Random's labels needs more "
        "labels to reach it",
    ])


def paired_values(a, b, seeds=None):
    """The per-seed values of a and b ((run, method[, metric])) over the seeds both hold."""
    va, vb = per_seed(*a, seeds=seeds), per_seed(*b, seeds=seeds)
    common = sorted(set(va) & set(vb))
    return [va[s] for s in common], [vb[s] for s in common]


def diffs(a, b, seeds=None):
    """a − b per seed over the seeds both hold."""
    return [x - y for x, y in zip(*paired_values(a, b, seeds))]


BLOCKS["ensemble-boston-notes"] = ensemble_boston_notes_block


BLOCKS["protein-sentence"] = protein_sentence_block


def _better(a, b, seeds=None):
    """`k/n`: seeds where b is lower than a."""
    d = diffs(a, b, seeds)
    return f"{sum(x > 0 for x in d)}/{len(d)}"


def ensemble_boston_gap_block():
    a, t = "ensemble/bostonHousing-3-projections-10", "ensemble/bostonHousing-10-projections-10"
    gap = float(M(a, "acs-fw")) - paper(hp("bostonHousing"), "acs-fw")
    return (f"- boston stays {gap:.2f} above the paper (ten fits: {S(t, 'acs-fw')} on "
            f"{len(per_seed(t, 'acs-fw'))} seeds, below).")


def ensemble_energy_notes_block():
    e3, e3p, e3m = "ensemble/energy-3", "ensemble/energy-3-projections-10", "ensemble/energy-3-maxent"
    return "\n".join([
        f"- ACS-FW on projections with three fits reaches {M(e3p, 'acs-fw')} against the paper's "
        f"{P(hp('energy'), 'acs-fw')} and beats Random with",
        f"  three fits by {D((e3, 'random'), (e3p, 'acs-fw'), count=False).lstrip('+')} ({_better((e3, 'random'), (e3p, 'acs-fw'))} "
        f"seeds), the closed form with three fits by {D((e3, 'acs-fw'), (e3p, 'acs-fw'), count=False).lstrip('+')}",
        f"  ({_better((e3, 'acs-fw'), (e3p, 'acs-fw'))}). {seconds_per_seed(e3p, 'acs-fw'):.0f} s per seed.",
        "- **The ensemble reverses MaxEnt's failure on energy.** With one fit MaxEnt is the worst method",
        f"  ({M('gp-same-labels/energy', 'maxent')}; the paper's ordering ACS-FW < Random < MaxEnt, which hedge "
        "reproduces with the paper's",
        "  recipe). With three fits the mixture's variance includes the members' disagreement, and MaxEnt",
        f"  drops to {M(e3m, 'maxent')}, better than Random by {D((e3, 'random'), (e3m, 'maxent'), count=False).lstrip('+')} "
        f"({_better((e3, 'random'), (e3m, 'maxent'))}) and behind ACS-FW by "
        f"{D((e3m, 'maxent'), (e3p, 'acs-fw'), count=False).lstrip('+')}",
        f"  (ACS-FW better on {_better((e3m, 'maxent'), (e3p, 'acs-fw'))}): the ordering becomes ACS-FW < MaxEnt < Random.",
    ])


def ensemble_power_plant_notes_block():
    pp = "ensemble/power-plant-300-epochs-3-projections-10"
    return "\n".join([
        f"- ACS-FW reaches {M(pp, 'acs-fw')} against the paper's {P(hp('power-plant'), 'acs-fw')} and Random "
        f"{M(pp, 'random')} against the paper's {P(hp('power-plant'), 'random')}, with",
        f"  the paper's ordering: Random − ACS-FW {D((pp, 'random'), (pp, 'acs-fw'), count=False)} (ACS-FW better on "
        f"{_better((pp, 'random'), (pp, 'acs-fw'))}; the GP on their",
        f"  labels: {D((pp, 'random', 'gp_test_rmse'), (pp, 'acs-fw', 'gp_test_rmse'), count=False)}). So power-plant's "
        "gap to the paper was the variance of a single",
        "  network's fit, which `../gp-same-labels/` had located in the fit and which three starts remove",
        f"  (the ensemble still sits above the GP on the same labels: {M(pp, 'random')} against "
        f"{M(pp, 'random', 'gp_test_rmse')}, {M(pp, 'acs-fw')} against",
        f"  {M(pp, 'acs-fw', 'gp_test_rmse')}).",
    ])


def ensemble_yacht_notes_block():
    y3, yr = "ensemble/yacht-3-projections-10", "ensemble/yacht-3-random"
    gap = paper(hp("yacht"), "acs-fw") - float(M(y3, "acs-fw"))
    return "\n".join([
        f"- ACS-FW with three fits is {gap:.2f} below the paper's {P(hp('yacht'), 'acs-fw')} and below the authors' "
        "scripts run on this",
        "  kind of machine (`../reference/authors-scripts-yacht.json`); it is also below MaxEnt with one fit "
        f"({S(hp('yacht'), 'maxent')};",
        f"  paired {D((y3, 'acs-fw'), (hp('yacht'), 'maxent'))}).",
        f"- On Random's labels three fits still trail the GP ({D((yr, 'random'), (yr, 'random', 'gp_test_rmse'), count=False)}), "
        "on ACS-FW's they beat it",
        f"  ({D((y3, 'acs-fw'), (y3, 'acs-fw', 'gp_test_rmse'), count=False)}).",
    ])


BLOCKS.update({"ensemble-boston-gap": ensemble_boston_gap_block, "ensemble-energy-notes": ensemble_energy_notes_block,
               "ensemble-power-plant-notes": ensemble_power_plant_notes_block,
               "ensemble-yacht-notes": ensemble_yacht_notes_block})


def mse_notes_block():
    """What the MSE recipe's 10-seed runs show, every number from `mse-recipe/<dataset>/`."""
    def run(d):
        return f"mse-recipe/{d}"

    def spread(values):
        return max(values) - min(values)

    pp_paper = [paper("power-plant", m) for m, _ in PAPER_METHODS]
    pp_ours = [rmse(run("power-plant"), m)[0] for m, _ in PAPER_METHODS]
    pp = diffs((run("power-plant"), "acs-fw"), (run("power-plant"), "random"))
    pp_mu, pp_se = mean_se(pp)
    multiples = {d: [rmse(run(d), m)[0] / paper(d, m) for m, _ in PAPER_METHODS] for d in DATASETS}
    lo = min(min(v) for v in multiples.values())
    hi = max(max(v) for v in multiples.values())
    closest = min(multiples, key=lambda d: max(multiples[d]))
    furthest = max(multiples, key=lambda d: max(multiples[d]))
    small = [summary(run(d))["methods"]["acs-fw"]["selection_seconds"]["mean"] for d in DATASETS if d != "power-plant"]
    big = summary(run("power-plant"))["methods"]["acs-fw"]["selection_seconds"]["mean"]
    maxent = max(summary(run(d))["methods"]["maxent"]["selection_seconds"]["mean"] for d in DATASETS)
    return "\n".join([
        "- **energy, the telling case, reproduces**: MaxEnt is clearly worse than Random (worse on "
        f"{sum(x > 0 for x in diffs((run('energy'), 'maxent'), (run('energy'), 'random')))} of "
        f"{len(per_seed(run('energy'), 'maxent'))}",
        "  seeds) and ACS-FW is clearly better than MaxEnt (better on "
        f"{sum(x < 0 for x in diffs((run('energy'), 'acs-fw'), (run('energy'), 'maxent')))} of "
        f"{len(per_seed(run('energy'), 'acs-fw'))} seeds) and the best on",
        f"  average, as in the paper. ACS-FW vs Random is within noise here "
        f"({D((run('energy'), 'acs-fw'), (run('energy'), 'random'), count=False)}).",
        "- **yacht and bostonHousing**: the paper's ordering (MaxEnt < ACS-FW < Random on boston;",
        "  MaxEnt < ACS-FW < Random on yacht) holds in the means for boston and nearly for yacht (ACS-FW",
        "  and MaxEnt tie), but every paired difference is within "
        f"{max(abs(m) / e for m, e in (mean_se(diffs((run(d), a), (run(d), b))) for d in ('yacht', 'bostonHousing') for a, b in (('acs-fw', 'random'), ('acs-fw', 'maxent'), ('maxent', 'random')))):.1f} se: "
        "ten seeds cannot separate",
        "  these methods at our noise level.",
        f"- **power-plant**: the paper's three numbers lie within {spread(pp_paper):.2f} of each other; ours within "
        f"{spread(pp_ours):.2f},",
        f"  with ACS-FW last ({pm(pp_mu, pp_se, sign=True)} against Random, {pp_mu / pp_se:.1f} se). "
        "Neither ordering is resolved by 10 seeds.",
        f"- **Absolute RMSEs are higher than the paper's** ({lo:.2f}–{hi:.2f}x; {closest} closest, {furthest}",
        "  furthest). The evidence points at the network fit, not the acquisitions: on yacht with random",
        "  acquisition (100 labels, 2 seeds, runs not kept) more Adam steps lowered the RMSE steeply up to",
        "  8,000 steps and barely beyond; the paper's training schedule and hyper-parameter selection are",
        "  not in the notes, and we did not tune per dataset.",
        f"- Selection cost per round: ACS-FW {min(small):.3f}–{max(small):.3f} s on the small pools and "
        f"{big:.1f} s on power-plant",
        f"  (dense N × N NIG Gram on ~7,600 points), MaxEnt < {10 ** math.ceil(math.log10(maxent)):g} s.",
    ])


BLOCKS["mse-notes"] = mse_notes_block


def fashion_at_100_block():
    """Fashion-MNIST accuracy at 100 labels per method (`fashion-mnist/summary.json`), best first."""
    methods = load(*ACTIVE, "fashion-mnist", "summary.json")["methods"]
    names = {"random": "Random", "maxent": "MaxEnt", "bald": "BALD", "acs-fw": "ACS-FW"}
    at = {m: v["accuracy_by_labels"]["100"]["mean"] for m, v in methods.items()}
    return "Accuracy at 100 labels: " + ", ".join(f"{names.get(m, m)} {a:.3f}" for m, a in
                                                sorted(at.items(), key=lambda kv: -kv[1])) + \
        " (`summary.json` has every grid point)."


BLOCKS["fashion-at-100"] = fashion_at_100_block


def projections_notes_block():
    """The bullets under `projections`: energy at the paper's level, what the projections cost and
    change, and where each dataset stands (folders as in PROJECTIONS)."""
    ep, ec = "gp-same-labels/energy-projections-10", "gp-same-labels/energy"
    pp, ppc = "gp-same-labels/power-plant-300-epochs-projections-10", "gp-same-labels/power-plant-300-epochs"
    bp = "gp-same-labels/bostonHousing-projections-10"
    mu, se = rmse(ep, "acs-fw")
    proj_sel = [summary(p)["methods"]["acs-fw"]["selection_seconds"]["mean"] for _, p, _, _ in PROJECTIONS[:4]]
    per_seed_s = [seconds_per_seed(p, "acs-fw") for _, p, _, _ in PROJECTIONS[:3]]

    def unsigned(a, b):
        return D(a, b, count=False).lstrip("+")

    return "\n".join([
        f"- **energy: ACS-FW reaches the paper's number**, {pm(mu, se)} against {P(hp('energy'), 'acs-fw')} "
        f"({abs(mu - paper(hp('energy'), 'acs-fw')) / se:.1f} se), and the",
        f"  paper's ordering holds with margins: ACS-FW better than Random by {unsigned((ec, 'random'), (ep, 'acs-fw'))} "
        f"({_better((ec, 'random'), (ep, 'acs-fw'))} seeds;",
        f"  the paper: {paper(hp('energy'), 'random') - paper(hp('energy'), 'acs-fw'):.3f}) and Random better than MaxEnt by "
        f"{unsigned((ec, 'maxent'), (ec, 'random'))} ({_better((ec, 'maxent'), (ec, 'random'))};",
        f"  `{ec}`). The projections pick better labels, not just a better fit: a GP on",
        f"  them scores {S(ep, 'acs-fw', 'gp_test_rmse')} against {M(ec, 'acs-fw', 'gp_test_rmse')} on the closed form's "
        f"labels (paired {D((ep, 'acs-fw', 'gp_test_rmse'), (ec, 'acs-fw', 'gp_test_rmse'), count=False)},",
        f"  {sum(x < 0 for x in diffs((ep, 'acs-fw', 'gp_test_rmse'), (ec, 'acs-fw', 'gp_test_rmse')))}/"
        f"{len(diffs((ep, 'acs-fw', 'gp_test_rmse'), (ec, 'acs-fw', 'gp_test_rmse')))}).",
        "- The projections are lower than the closed form on every dataset, beyond two standard errors",
        "  only on energy and power-plant at 300 epochs (the table's fourth column) and cost less "
        f"({min(proj_sel):.4f}–{max(proj_sel):.3f} s per selection against the closed form's",
        f"  N × N matrix: {summary(ppc)['methods']['acs-fw']['selection_seconds']['mean']:.1f} s on power-plant's pool). "
        "On power-plant ACS-FW no longer trails Random",
        f"  ({D((pp, 'acs-fw'), (ppc, 'random'), count=False)}, from {D((ppc, 'acs-fw'), (ppc, 'random'), count=False)}). "
        f"Per seed, fit plus selection took {min(per_seed_s):.0f}–{max(per_seed_s):.0f} s (power-plant",
        f"  at 300 epochs {seconds_per_seed(pp, 'acs-fw'):.0f} s), measured beside a CI run on the 2 cores.",
        "- Where it stands against the paper: yacht and energy at or below it; power-plant "
        f"{float(M(pp, 'acs-fw')) - paper(hp('power-plant'), 'acs-fw'):.2f} above it",
        f"  (the GP on the same labels scores {S(pp, 'acs-fw', 'gp_test_rmse')}, so the labels allow it and NeuralLinear's fit",
        "  is the gap: `gp-same-labels/README.md`; an ensemble of three fits closes it, "
        f"{S('ensemble/power-plant-300-epochs-3-projections-10', 'acs-fw')},",
        f"  below); boston {float(M(bp, 'acs-fw')) - paper(hp('bostonHousing'), 'acs-fw'):.2f} above it on the full data, "
        "and at it without boston's 16 censored targets",
        f"  ({S('boston-uncensored/acs-fw-projections-10', 'acs-fw')}, `boston-uncensored/README.md`).",
    ])


BLOCKS["projections-notes"] = projections_notes_block


def _protein_rounds(run="protein-large-pool"):
    curves = {}
    for r in load_lines(*ACTIVE, run, "rounds.jsonl"):
        curves.setdefault((r["method"], r["seed"]), []).append(r)
    return curves


def protein_final_block(run="protein-large-pool"):
    """Final RMSE per method on the protein pool."""
    s = summary(run)
    return ("Final RMSE at " + f"{s['labels']:,} labels: " +
            ", ".join(f"{NAMES[m]} {pm(*rmse(run, m))}" for m, _ in METHODS if m in s["methods"]) + ".")


def protein_notes_block(run="protein-large-pool", early=400):
    """The protein bullets: the curves at `early` labels (each seed's latest round at or below it) and
    the costs (selection seconds per batch, fit seconds, seconds per seed and method)."""
    curves = _protein_rounds(run)

    def at(method):
        v = [[r["test_rmse"] for r in sorted(c, key=lambda r: r["labels"]) if r["labels"] <= early][-1]
             for (m, _), c in curves.items() if m == method]
        return sum(v) / len(v)

    fits = [r["fit_seconds"] for c in curves.values() for r in c]
    sel = {m: summary(run)["methods"][m]["selection_seconds"]["mean"] for m in ("acs-fw", "lcmd", "maxent")}
    per = [seconds_per_seed(run, m) for m, _ in METHODS]
    return "\n".join([
        "- bmdal's ordering holds: LCMD best (better than Random on every seed; at "
        f"{early} labels {at('lcmd'):.2f}",
        f"  against Random's {at('random'):.2f}), ACS-FW with projections second, MaxEnt worst (it piles its batches",
        "  onto the most uncertain corner). The gains are smaller than bmdal's (≈ 17 % for the best",
        "  methods, ≈ 11 % for ACS-FW with random features): theirs average 15 datasets with budgets to",
        "  ≈ 4,000 labels and larger networks; ours is one dataset, 5 seeds, a 2 × 30 network. By the last round",
        "  the methods meet, except MaxEnt (the final RMSEs above).",
        f"- Cost on 41,157 pool points: ACS-FW {sel['acs-fw']:.1f} s per batch (posterior projections plus Frank–Wolfe),",
        f"  LCMD {sel['lcmd']:.1f} s, MaxEnt {sel['maxent']:.2f} s; fits {min(fits):.1f}–{max(fits):.0f} s; "
        f"{min(per):.0f}–{max(per):.0f} s per seed and method.",
    ])


def mse_rounds_block():
    """The MSE recipe's ACS-FW rounds (re-picks make more than the budget's eight)."""
    r = [summary(f"mse-recipe/{d}")["methods"]["acs-fw"]["rounds"]["mean"] for d in DATASETS]
    return f"(hence {min(r):.1f}–{max(r):.1f} rounds\ninstead of 8)."


BLOCKS.update({"protein-final": protein_final_block, "protein-notes": protein_notes_block,
               "mse-rounds": mse_rounds_block})
