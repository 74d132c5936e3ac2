"""scikit-learn's exact GP on the same kin8nm rows as `hedge bench bayes`, for comparison.

Usage: HEDGE_DATA_DIR=... python benches/sklearn_gp.py [rows ...]   (default: 2000 5000)
Needs numpy and scikit-learn. Prints seconds per log-marginal-likelihood-and-gradient
evaluation, seconds per complete fit (L-BFGS-B, no restarts) and the test RMSE.
"""
import json, os, sys, time
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel as C, RBF, WhiteKernel

root = os.path.join(os.environ.get("HEDGE_DATA_DIR", "./data"), "uci", "kin8nm", "data")
data = np.loadtxt(os.path.join(root, "data.txt"))
features = np.loadtxt(os.path.join(root, "index_features.txt"), dtype=int)
target = int(np.loadtxt(os.path.join(root, "index_target.txt")))
train = np.loadtxt(os.path.join(root, "index_train_0.txt"), dtype=int)
test = np.loadtxt(os.path.join(root, "index_test_0.txt"), dtype=int)
X, y = data[:, features], data[:, target]
mean, std = X[train].mean(0), X[train].std(0)
std[std == 0] = 1.0
Xs = (X - mean) / std
for n in [int(a) for a in sys.argv[1:]] or [2000, 5000]:
    rows = train[:n]
    kernel = C(1.0) * RBF(np.ones(X.shape[1])) + WhiteKernel(0.1)
    gp = GaussianProcessRegressor(kernel, normalize_y=True, alpha=0.0, optimizer=None).fit(Xs[rows], y[rows])
    t = time.perf_counter()
    gp.log_marginal_likelihood(gp.kernel_.theta, eval_gradient=True)
    per_eval = time.perf_counter() - t
    gp = GaussianProcessRegressor(kernel, normalize_y=True, alpha=0.0, n_restarts_optimizer=0)
    t = time.perf_counter()
    gp.fit(Xs[rows], y[rows])
    fit = time.perf_counter() - t
    rmse = float(np.sqrt(np.mean((gp.predict(Xs[test]) - y[test]) ** 2)))
    print(json.dumps({"rows": n, "seconds_per_evaluation": per_eval, "fit_seconds": fit, "rmse": rmse,
                      "log_marginal_likelihood_standardised": float(gp.log_marginal_likelihood_value_)}))
