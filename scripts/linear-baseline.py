#!/usr/bin/env python3
"""A linear reference for a UCI regression set at hedge's active-learning protocol: how well a
Bayesian linear regression on the raw inputs does with `--labels` random labels.

    .venv/bin/python scripts/linear-baseline.py [--dataset power-plant] [--labels 100] [--seeds 20] [--out FILE.json]

Per seed, as `hedge active run` does (its `protocol` line in config.json): a fresh random 80/20
pool/test split, inputs standardised on the pool, `--labels` pool rows drawn at random, targets
standardised on those labels, RMSE on the test rows in the target's original units. The model is
the posterior mean of the Normal-inverse-Gamma last layer of hedge's NeuralLinear (prior
precision 1 on every weight, a bias column included) fitted on the inputs themselves instead of
a network's features — ridge regression with λ = 1 in standardised units. The seeds draw their
own splits (NumPy's generator), so a seed here is not the same split as hedge's seed of the same
number: compare means, not seeds. Reads HEDGE_DATA_DIR (default ./data); NumPy only.
"""
import argparse
import json
import os
import sys

import numpy as np


def load(data_dir, dataset):
    folder = os.path.join(data_dir, "uci", dataset, "data")
    if not os.path.isdir(folder):
        sys.exit(f"linear-baseline: {folder} not found; set HEDGE_DATA_DIR to the folder that holds uci/")
    data = np.loadtxt(os.path.join(folder, "data.txt"))
    features = np.loadtxt(os.path.join(folder, "index_features.txt"), dtype=int, ndmin=1)
    target = int(np.loadtxt(os.path.join(folder, "index_target.txt"), dtype=int, ndmin=1)[0])
    return data[:, features], data[:, target]


def one_seed(x, y, labels, seed, prior_precision):
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    n_test = int(round(0.2 * len(y)))
    test, pool = order[:n_test], order[n_test:]
    mu, sd = x[pool].mean(0), x[pool].std(0)
    sd[sd == 0] = 1.0
    z = (x - mu) / sd
    chosen = rng.choice(pool, size=labels, replace=False)
    y_mu, y_sd = y[chosen].mean(), y[chosen].std()
    design = np.hstack([z[chosen], np.ones((labels, 1))])
    weights = np.linalg.solve(design.T @ design + prior_precision * np.eye(design.shape[1]),
                              design.T @ ((y[chosen] - y_mu) / y_sd))
    predicted = np.hstack([z[test], np.ones((n_test, 1))]) @ weights * y_sd + y_mu
    return float(np.sqrt(np.mean((predicted - y[test]) ** 2)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="power-plant")
    parser.add_argument("--labels", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--prior-precision", type=float, default=1.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    x, y = load(os.environ.get("HEDGE_DATA_DIR", "data"), args.dataset)
    if not 0 < args.labels <= 0.8 * len(y):
        sys.exit(f"linear-baseline: --labels {args.labels} must be between 1 and the pool's {int(0.8 * len(y))} rows")
    rmse = [one_seed(x, y, args.labels, s, args.prior_precision) for s in range(args.seeds)]
    result = {
        "command": ".venv/bin/python scripts/linear-baseline.py " + " ".join(sys.argv[1:]),
        "dataset": f"uci/{args.dataset}",
        "model": "Bayesian linear regression on the raw inputs (posterior mean, NIG prior precision on every weight)",
        "prior_precision": args.prior_precision,
        "labels": args.labels,
        "seeds": args.seeds,
        "final_rmse": {"mean": float(np.mean(rmse)), "se": float(np.std(rmse, ddof=1) / np.sqrt(len(rmse)))},
        "per_seed": rmse,
    }
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.out)
    print(f"{result['dataset']}: {args.labels} random labels, {args.seeds} seeds: RMSE "
          f"{result['final_rmse']['mean']:.3f} ± {result['final_rmse']['se']:.3f}")


if __name__ == "__main__":
    main()
