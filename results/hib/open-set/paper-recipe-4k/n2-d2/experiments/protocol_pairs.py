"""Which pairing does the paper's "corrupt" verification AP use?

Independent check (NumPy + scikit-learn, not hedge's code) on a point model's embeddings:
AP of -distance over 5,000 matching + 5,000 non-matching test_unseen pairs when both images are
clean, both corrupt, or the first clean and the second corrupt.

    hedge hib embed --run RUN --split test_unseen --variant clean   --out clean.npz
    hedge hib embed --run RUN --split test_unseen --variant corrupt --out corrupt.npz
    python protocol_pairs.py clean.npz corrupt.npz [OUT.json]

With OUT.json the three APs are also written there (the README's table is generated from it).
"""
import json
import os
import sys

import numpy as np
from sklearn.metrics import average_precision_score

clean, corrupt = np.load(sys.argv[1]), np.load(sys.argv[2])
zc, zk, y = clean["mean"][:, 0], corrupt["mean"][:, 0], clean["label"]
rng = np.random.default_rng(0)
n = len(y)
by_class = {label: np.flatnonzero(y == label) for label in np.unique(y)}
left, right, match = [], [], []
while len(match) < 10_000:
    i = rng.integers(n)
    want = len(match) < 5_000
    if want:
        j = rng.choice(by_class[y[i]])
        if j == i:
            continue
    else:
        j = rng.integers(n)
        if y[j] == y[i]:
            continue
    left.append(i)
    right.append(j)
    match.append(want)
left, right, match = map(np.array, (left, right, match))
result = {"pairs": {"matching": int(match.sum()), "non_matching": int((~match).sum())}, "ap": {}}
for name, a, b in [("clean-clean", zc, zc), ("corrupt-corrupt", zk, zk), ("clean-corrupt", zc, zk)]:
    distance = np.linalg.norm(a[left] - b[right], axis=1)
    result["ap"][name] = float(average_precision_score(match, -distance))
    print(f"{name:16s} AP {result['ap'][name]:.3f}")
if len(sys.argv) > 3:
    with open(sys.argv[3] + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(sys.argv[3] + ".tmp", sys.argv[3])
