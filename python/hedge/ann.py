"""Approximate nearest neighbours on NumPy arrays: hedge's HNSW graph (Malkov & Yashunin 2018).

The same graph ``hedge hib index`` builds over a gallery's embedding means, for your own
float32 points: parallel build, lock-free search, a safetensors file that NumPy reads back, and
pickling (so Ray and multiprocessing pass an index as an object)::

    index = hedge.ann.HnswIndex.build(points)          # [n, d] float32
    ids, distances = index.search(queries, k=10)       # [q, 10] each, nearest first
    index.save("gallery.ann.safetensors")
    same = hedge.ann.HnswIndex.load("gallery.ann.safetensors")

Distances are Euclidean. Settings: ``max_connections`` (M, links per point; layer 0 keeps 2M),
``ef_construction`` (candidates while inserting), ``ef_search`` (candidates while searching).
"""

from __future__ import annotations

import os
from typing import Union

import numpy as np

try:
    # The extension without libtorch (the wheel and the repository's build hold it): searching
    # an index never imports torch.
    from . import _ann as _ext
except ImportError:  # a build with the torch extension only (`pip install ./python`)
    from ._native import _hedge as _ext

__all__ = ["HnswIndex"]

PathLike = Union[str, "os.PathLike[str]"]


def _points(x, name: str, dim: int | None = None) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D, [n, d]; got shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"`{name}` is empty (shape {a.shape})")
    if dim is not None and a.shape[1] != dim:
        raise ValueError(f"`{name}` has {a.shape[1]} columns but the index holds points of dimension {dim}")
    a = np.ascontiguousarray(a, dtype=np.float32)
    if not np.isfinite(a).all():
        row = int(np.argwhere(~np.isfinite(a))[0][0])
        raise ValueError(f"`{name}` holds a non-finite value in row {row}")
    return a


def _from_bytes(data: bytes) -> "HnswIndex":
    return HnswIndex(_ext.ann_from_bytes(data))


class HnswIndex:
    """An HNSW graph over fixed points; build it with :meth:`build` or :meth:`load`."""

    def __init__(self, graph):
        self._graph = graph

    @classmethod
    def build(cls, points, max_connections: int = 16, ef_construction: int = 200, ef_search: int = 200) -> "HnswIndex":
        """Inserts every row of ``points`` (``[n, d]``), in parallel on all cores."""
        for name, value in (("max_connections", max_connections), ("ef_construction", ef_construction), ("ef_search", ef_search)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"`{name}` must be a positive whole number; got {value!r}")
        return cls(_ext.ann_build(_points(points, "points"), int(max_connections), int(ef_construction), int(ef_search)))

    @classmethod
    def load(cls, path: PathLike) -> "HnswIndex":
        """Reads a file :meth:`save` wrote; a damaged file raises ``ValueError`` naming it."""
        return cls(_ext.ann_load(os.fspath(path)))

    def save(self, path: PathLike) -> None:
        """Writes the graph (a temporary sibling file, then renamed)."""
        self._graph.save(os.fspath(path))

    def to_bytes(self) -> bytes:
        """The bytes :meth:`save` writes."""
        return self._graph.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "HnswIndex":
        return _from_bytes(bytes(data))

    def __reduce__(self):
        return (_from_bytes, (self.to_bytes(),))

    def __len__(self) -> int:
        return len(self._graph)

    @property
    def dim(self) -> int:
        return self._graph.dim

    @property
    def settings(self) -> dict:
        m, efc, ef = self._graph.settings
        return {"max_connections": m, "ef_construction": efc, "ef_search": ef}

    @property
    def memory_bytes(self) -> int:
        """Bytes the graph holds: points, levels, link lists and the searches' mark arrays."""
        return self._graph.memory_bytes

    def search(self, queries, k: int = 10, ef: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest points of every row of ``queries``: (ids int64 ``[q, k]``,
        distances float32 ``[q, k]``), nearest first; -1 and inf where the index holds fewer
        than ``k`` points. ``ef`` overrides ``ef_search`` for this call."""
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise ValueError(f"`k` must be a positive whole number; got {k!r}")
        if ef is not None and (not isinstance(ef, (int, np.integer)) or ef < 1):
            raise ValueError(f"`ef` must be a positive whole number; got {ef!r}")
        return self._graph.search(_points(queries, "queries", self.dim), int(k), None if ef is None else int(ef))

    def __repr__(self) -> str:
        s = self.settings
        return f"HnswIndex({len(self)} points of dim {self.dim}, M={s['max_connections']}, ef_search={s['ef_search']})"
