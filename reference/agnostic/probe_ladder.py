"""scikit-learn's counterparts of hedge's probe ladder (crates/hedge-agnostic/src/ladder.rs), on
the arrays the Rust test builds: splitmix64 uniforms, Box-Muller normals, 6 coordinates and the
concept 1{x0^2 + x1^2 - 2 x2 x3 + 0.5 x4 + 0.5 noise > 1.5}; 3,000 train rows (seed 1) and
2,000 test rows (seed 2). Prints each rung's test accuracy; the test pastes them.

    .venv/bin/python reference/agnostic/probe_ladder.py
"""

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.svm import SVC

MASK = (1 << 64) - 1


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def quadratic_concept(n, seed):
    state = seed
    values = []
    for _ in range(n * 14):
        state, z = splitmix(state)
        values.append(((z >> 11) + 0.5) / float(1 << 53))
    u = np.array(values).reshape(n, 7, 2)
    normal = np.sqrt(-2.0 * np.log(u[..., 0])) * np.cos(2.0 * np.pi * u[..., 1])
    s = normal[:, 0] ** 2 + normal[:, 1] ** 2 - 2.0 * normal[:, 2] * normal[:, 3] + 0.5 * normal[:, 4] + 0.5 * normal[:, 6]
    return normal[:, :6].astype(np.float32).astype(np.float64), (s > 1.5).astype(np.int64)


def main():
    x, a = quadratic_concept(3000, 1)
    xt, at = quadratic_concept(2000, 2)
    z = StandardScaler().fit(x).transform(x)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(z), 2000), rng.integers(0, len(z), 2000)
    median = np.median(((z[i] - z[j]) ** 2).sum(1))
    probes = {
        "linear": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        "quadratic": make_pipeline(
            StandardScaler(), PolynomialFeatures(2, include_bias=False), StandardScaler(), LogisticRegression(max_iter=5000)
        ),
        "rbf": make_pipeline(
            StandardScaler(), GridSearchCV(SVC(kernel="rbf"), {"gamma": [c / median for c in (0.25, 1.0, 4.0)]})
        ),
        "mlp": make_pipeline(
            StandardScaler(),
            GridSearchCV(
                MLPClassifier(max_iter=500, random_state=0),
                {"hidden_layer_sizes": [(64,), (256,)], "alpha": [1e-4, 1e-2]},
            ),
        ),
        "forest": RandomForestClassifier(n_estimators=100, random_state=0),
    }
    for name, probe in probes.items():
        probe.fit(x, a)
        print(f"{name}: {probe.score(xt, at):.4f}")


if __name__ == "__main__":
    main()
