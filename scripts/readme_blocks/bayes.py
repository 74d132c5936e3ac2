"""Bayesian-toolbox blocks (`<!-- bayes:NAME:begin -->`):

- `gp`: the GP suite's runs (exact ARD GP on standard split 0, FITC and VFE on protein) in one
  table, from each folder's `summary.json`.
"""
from .common import load, table

GP_RUNS = ("gp-split0", "protein-fitc256", "protein-vfe256")


def gp_block():
    rows = []
    for run in GP_RUNS:
        for r in load("results", "bayes", run, "summary.json"):
            model = r["model"].replace("fitc-", "FITC, M = ").replace("vfe-", "VFE, M = ")
            rmse = f"{r['rmse']:.4f}" if r["rmse"] < 0.1 else f"{r['rmse']:.3f}"
            rows.append([r["dataset"].removeprefix("uci/"), model, f"{r['train_rows']:,} / {r['test_rows']:,}", rmse,
                         f"{r['nll']:.3f}".replace("-", "−"), f"{r['fit_seconds']:.1f}", f"`results/bayes/{run}/`"])
    return ("GP regression on standard split 0 (ARD-RBF kernel, inputs standardised on the training rows; RMSE "
            "and mean test NLL on the original target scale; fit seconds on the 2 cores):\n\n"
            + table(["data", "model", "train / test rows", "test RMSE", "test NLL", "fit s", "folder"], rows))


BLOCKS = {"gp": gp_block}
