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
from .common import exists, load, load_lines, mean_se, pm, table

ACTIVE = ("results", "active")
DATASETS = ("yacht", "bostonHousing", "energy", "power-plant")
METHODS = (("random", "Random"), ("maxent", "MaxEnt"), ("acs-fw", "ACS-FW"), ("lcmd", "LCMD"))
PAPER_METHODS = METHODS[:3]
NAMES = dict(METHODS)


def summary(run):
    return load(*ACTIVE, run, "summary.json")


def finals(run):
    """{(method, seed): test RMSE of the last round} of a run folder's rounds.jsonl."""
    last = {}
    for r in load_lines(*ACTIVE, run, "rounds.jsonl"):
        key = (r["method"], r["seed"])
        if key not in last or r["round"] > last[key][0]:
            last[key] = (r["round"], r["test_rmse"])
    return {k: v[1] for k, v in last.items()}


def seconds_per_seed(run, method):
    """Mean over seeds of fit plus selection seconds summed over a seed's rounds."""
    per_seed = {}
    for r in load_lines(*ACTIVE, run, "rounds.jsonl"):
        if r["method"] == method:
            per_seed[r["seed"]] = per_seed.get(r["seed"], 0.0) + r["fit_seconds"] + r["selection_seconds"]
    return sum(per_seed.values()) / len(per_seed)


def paired(a, b):
    """`+d ± se (k/n)`: a − b over the seeds both runs hold, k = seeds where a is lower.

    a and b are (run folder, method)."""
    fa, fb = finals(a[0]), finals(b[0])
    seeds = sorted(s for (m, s) in fa if m == a[1] and (b[1], s) in fb)
    d = [fa[(a[1], s)] - fb[(b[1], s)] for s in seeds]
    mu, se = mean_se(d)
    return mu, se, sum(x < 0 for x in d), len(d)


def fmt_pair(p, better="a"):
    mu, se, lower, n = p
    return f"{pm(mu, se, sign=True)} ({lower if better == 'a' else n - lower}/{n})"


def rmse(run, method):
    r = summary(run)["methods"][method]["final_rmse"]
    return r["mean"], r["se"]


def paper(run, method):
    return summary(run)["methods"][method].get("paper_final_rmse")


def noise(mu, se):
    return "beyond 2 se" if abs(mu) > 2 * se else "within 2 se"


def final_rmse_block():
    rows, protocols = [], set()
    for d in DATASETS:
        s = summary(d)
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
    return (f"Final test RMSE (mean ± se; {head}; `results/active/<dataset>/summary.json`), lowest in bold, "
            "beside the paper's Table 1 (Pinsler et al., 40 seeds; its error bars are not in the material we "
            "have) and ours as a multiple of it:\n\n"
            + table(["dataset"] + [n for _, n in METHODS] + [f"paper {n}" for _, n in PAPER_METHODS]
                    + ["ours / paper (Random / MaxEnt / ACS-FW)"], rows))


def paired_block():
    rows = []
    for d in DATASETS:
        for p in summary(d)["paired_differences"]:
            mu, se = p["difference"]["mean"], p["difference"]["se"]
            rows.append([d, f"{NAMES[p['a']]} − {NAMES[p['b']]}", pm(mu, se, sign=True),
                         f"{p['a_better']}/{p['seeds']}", noise(mu, se)])
    return ("Paired differences of the final RMSE (every seed shares its split and initial labels across "
            "methods; negative: the first is better):\n\n"
            + table(["dataset", "A − B", "mean ± se", "seeds where A is better", "mean against 2 se"], rows))


# (label, J = 10 run, closed-form run, Random's run); the closed form and Random ran beside the
# projections on the same machine where a run exists (gp-same-labels/), else the main table's run.
PROJECTIONS = (
    ("yacht", "gp-same-labels/yacht-projections-10", "yacht", "yacht"),
    ("energy", "gp-same-labels/energy-projections-10", "gp-same-labels/energy", "gp-same-labels/energy"),
    ("bostonHousing", "gp-same-labels/bostonHousing-projections-10", "gp-same-labels/bostonHousing",
     "gp-same-labels/bostonHousing"),
    ("power-plant (300 epochs)", "gp-same-labels/power-plant-300-epochs-projections-10",
     "gp-same-labels/power-plant-300-epochs", "gp-same-labels/power-plant-300-epochs"),
    ("power-plant (1,000 epochs)", "gp-same-labels/power-plant-projections-10", "power-plant", "power-plant"),
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
            "power-plant (300 epochs)": "power-plant"}


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
    "final-rmse": final_rmse_block,
    "paired": paired_block,
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
