"""Argument checks shared by the array-taking modules: the scikit-learn conventions (anything
array-like in, float64 out), each error naming the argument, its shape and the fix."""

from __future__ import annotations

import numpy as np


def matrix(x, name: str = "X", n_features: int | None = None) -> np.ndarray:
    """``x`` as a C-contiguous float64 ``[n, d]`` array with finite values."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1 and n_features is not None and n_features == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(
            f"`{name}` must be 2-D, [n_samples, n_features]; got shape {a.shape}"
            + (" (one feature: reshape(-1, 1))" if a.ndim == 1 else "")
        )
    if a.shape[0] == 0:
        raise ValueError(f"`{name}` has no rows")
    if not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"`{name}` holds {a[bad[0], bad[1]]} (NaN or inf: a non-finite value) at row {bad[0]}, column {bad[1]}")
    _refuse_huge(a, name)
    if n_features is not None and a.shape[1] != n_features:
        raise ValueError(f"`{name}` has {a.shape[1]} features but the model was fitted on {n_features}")
    return np.ascontiguousarray(a)


def vector(y, rows: int, name: str = "y", dtype=np.float64) -> np.ndarray:
    """``y`` as a C-contiguous 1-D array of ``rows`` finite values."""
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1 or a.shape[0] != rows:
        raise ValueError(f"`{name}` must be 1-D with {rows} values (one per row of X); got shape {a.shape}")
    a = a.astype(dtype)
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        at = int(np.argwhere(~np.isfinite(a))[0][0])
        raise ValueError(f"`{name}` holds {a[at]} (NaN or inf: a non-finite value) at position {at}")
    if a.dtype.kind == "f":
        _refuse_huge(a, name)
    return np.ascontiguousarray(a)


LARGEST_MAGNITUDE = 1e150
"""The largest magnitude a value may have (as hedge's Rust checks): its square, and a sum of many
such squares, stay within float64's range, so means, variances and kernels stay finite."""


def _refuse_huge(a: np.ndarray, name: str) -> None:
    """Refuses a finite value so large that its square overflows, naming where the largest is."""
    if a.size == 0:
        return
    flat = int(np.argmax(np.abs(a)))
    value = a.flat[flat]
    if abs(value) > LARGEST_MAGNITUDE:
        where = np.unravel_index(flat, a.shape)
        at = f"row {where[0]}, column {where[1]}" if a.ndim == 2 else f"position {where[0]}"
        raise ValueError(
            f"`{name}` holds {value:.3g} at {at}: finite, but so large that its square overflows float64 "
            f"(every value must lie within ±{LARGEST_MAGNITUDE:g}); rescale it, e.g. divide by a power of ten"
        )
