"""Active learning on your own CSV: ACS-FW against random batches with a Bayesian linear model,
learning curves plotted.

    .venv/bin/python python/examples/active_learning_csv.py TABLE.csv --target COLUMN [--out curve.png]

Numeric columns other than the target are the inputs (standardised on the labelled rows, plus
an intercept). 20 % of the rows are the test set; the pool starts with `--initial` labelled rows
and acquires `--rounds` batches of `--batch`. The model is Bayesian linear regression with the
noise integrated out (normal--inverse-gamma); ACS-FW uses its closed-form inner products.
"""

import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from hedge import active, bayes  # noqa: E402


def read_table(path, target):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or target not in rows[0]:
        raise SystemExit(f"{path}: no column {target!r} (columns: {', '.join(rows[0]) if rows else 'none'})")
    columns = [c for c in rows[0] if c != target]
    x = np.array([[float(r[c]) for c in columns] for r in rows])
    y = np.array([float(r[target]) for r in rows])
    return x, y


def features(x, mean, sd):
    return np.hstack([np.ones((len(x), 1)), (x - mean) / sd])


def curve(x, y, train, test, initial, batch, rounds, method, seed):
    rng = np.random.default_rng(seed)
    labelled = list(rng.choice(train, initial, replace=False))
    rmse = []
    for round_ in range(rounds + 1):
        mean, sd = x[labelled].mean(0), x[labelled].std(0)
        sd[sd == 0] = 1
        model = bayes.BayesianLinearRegression(noise_variance=None).fit(features(x[labelled], mean, sd), y[labelled])
        rmse.append(np.sqrt(np.mean((model.predict(features(x[test], mean, sd)) - y[test]) ** 2)))
        if round_ == rounds:
            break
        pool = np.setdiff1d(train, labelled)
        if method == "acs-fw":
            picks = active.acs_fw_select(model, features(x[pool], mean, sd), batch_size=batch).indices
        else:
            picks = rng.choice(len(pool), batch, replace=False)
        labelled += list(pool[picks])
    return np.array(rmse)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("table")
    parser.add_argument("--target", required=True)
    parser.add_argument("--initial", type=int, default=20)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default="learning_curve.png")
    args = parser.parse_args()
    x, y = read_table(args.table, args.target)
    labels = args.initial + args.batch * np.arange(args.rounds + 1)
    fig, ax = plt.subplots(figsize=(6, 4))
    for method in ("random", "acs-fw"):
        curves = []
        for seed in range(args.seeds):
            order = np.random.default_rng(1000 + seed).permutation(len(y))
            test, train = order[: len(y) // 5], order[len(y) // 5 :]
            curves.append(curve(x, y, train, test, args.initial, args.batch, args.rounds, method, seed))
        curves = np.array(curves)
        se = curves.std(0, ddof=1) / np.sqrt(len(curves)) if len(curves) > 1 else 0 * curves[0]
        ax.errorbar(labels, curves.mean(0), yerr=se, capsize=3, label=method)
        print(f"{method}: test RMSE {curves[:, 0].mean():.3f} at {labels[0]} labels -> {curves[:, -1].mean():.3f} at {labels[-1]}")
    ax.set_xlabel("labelled rows")
    ax.set_ylabel(f"test RMSE of {args.target} (mean ± s.e. over {args.seeds} splits)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"figure: {args.out}")


if __name__ == "__main__":
    main()
