"""ACS-FW (Pinsler et al. 2019, Algorithm 1) in NumPy on the pools `hedge bench acs-fw` exported,
for comparison with the Rust implementation on the same machine.

Usage:
    hedge bench acs-fw --export DIR
    python benches/acs_fw_numpy.py DIR [repeats]

Two NumPy versions of the same algorithm, both vectorised over the pool:
  * "columns": as the paper writes it, through K's columns K[:, f] = P @ P[f] and the
    running vector K w (every iteration touches several length-N arrays);
  * "residual": the projections' own space, the residual r = L - L(w) is a J-vector and an
    iteration is (P @ r) / sigma plus an argmax (the form the Rust code uses).
Both must pick the same points as Rust (printed as `same picks`). Needs numpy only.
"""
import json
import os
import sys
import time

import numpy as np

# Stop once L is reproduced to rounding error, as hedge's frank_wolfe does without --distinct.
EXACT_FIT = 1e-12


def fw_columns(P, b):
    n = P.shape[0]
    sigma_n = np.sqrt((P * P).sum(1))
    sigma = sigma_n.sum()
    k1 = P @ P.sum(0)
    total_sq = k1.sum()
    w = np.zeros(n)
    kw = np.zeros(n)
    w_kw = l_kw = 0.0
    picks = []
    for _ in range(b):
        f = int(np.argmax((k1 - kw) / sigma_n))
        s = sigma / sigma_n[f]
        kf = P @ P[f]
        along = s * (k1[f] - kw[f]) - (l_kw - w_kw)
        d_sq = s * s * kf[f] - 2.0 * s * kw[f] + w_kw
        gamma = min(max(along / d_sq, 0.0), 1.0) if d_sq > 0 else 0.0
        w *= 1.0 - gamma
        w[f] += gamma * s
        kw = (1.0 - gamma) * kw + gamma * s * kf
        w_kw = w @ kw
        l_kw = w @ k1
        picks.append(f)
        if total_sq - 2 * l_kw + w_kw <= EXACT_FIT * total_sq:
            break
    return picks, total_sq - 2 * l_kw + w_kw


def fw_residual(P, b):
    n = P.shape[0]
    sigma_n = np.sqrt((P * P).sum(1))
    sigma = sigma_n.sum()
    inv_sigma = 1.0 / sigma_n
    total = P.sum(0)
    fitted = np.zeros(P.shape[1])
    residual = total.copy()
    w = np.zeros(n)
    picks = []
    start = residual @ residual
    for _ in range(b):
        f = int(np.argmax((P @ residual) * inv_sigma))
        s = sigma / sigma_n[f]
        d = s * P[f] - fitted
        d_sq = d @ d
        gamma = min(max((residual @ d) / d_sq, 0.0), 1.0) if d_sq > 0 else 0.0
        fitted += gamma * d
        residual = total - fitted
        w *= 1.0 - gamma
        w[f] += gamma * s
        picks.append(f)
        if residual @ residual <= EXACT_FIT * start:
            break
    return picks, residual @ residual


def timed(fn, P, b, repeats):
    fn(P, b)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn(P, b)
    return (time.perf_counter() - start) / repeats, out


def main():
    folder = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    rust = json.load(open(os.path.join(folder, "rust.json")))
    print(f"numpy {np.__version__}; {repeats} timed batches per case")
    print("| pool N | J | b | iterations run | Rust ms | NumPy columns ms | NumPy residual ms | speed-up vs columns | vs residual | same picks |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for case in rust["cases"]:
        if case.get("storage", "in-memory") != "in-memory":
            continue  # streamed pools are compared with the in-memory path by hedge itself
        n, b = case["pool"], case["iterations"]
        data = np.load(os.path.join(folder, f"pool_{n}_{case['projections']}.npz"))
        P = np.ascontiguousarray(data["vectors"])
        reference = [int(f) for f in data[f"picks_{b}"]]
        t_col, (picks_col, _) = timed(fw_columns, P, b, repeats)
        t_res, (picks_res, _) = timed(fw_residual, P, b, repeats)
        same = picks_col == reference and picks_res == reference
        t_rust = case["seconds_per_batch"]
        rows.append(dict(pool=n, projections=P.shape[1], iterations=b, rust_s=t_rust, numpy_columns_s=t_col,
                         numpy_residual_s=t_res, same_picks=same))
        print(f"| {n} | {P.shape[1]} | {b} | {len(reference)} | {t_rust * 1e3:.2f} | {t_col * 1e3:.2f} | {t_res * 1e3:.2f} | "
              f"{t_col / t_rust:.1f}x | {t_res / t_rust:.1f}x | {same} |")
    json.dump(rows, open(os.path.join(folder, "numpy.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
