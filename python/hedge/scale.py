"""Past one machine on Ray: an HNSW index split into shards held by Ray actors.

A gallery (or any set of float32 points) is written as shards -- one HNSW graph file per shard
and a ``shards.json`` that lists every file with its SHA-256 -- and searched by fanning each
query batch out to one actor per shard and merging the answers: the ``k`` nearest over all
shards, by distance, then id. An actor checks its shard's SHA-256 before loading it, so a
damaged file is refused by name; an actor that dies is restarted from its file by Ray and the
search retried; when it cannot come back the search fails with :class:`ShardUnavailable` --
never a silently partial answer::

    import ray, hedge.scale
    ray.init()                                          # or ray.init(address="auto")
    hedge.scale.write_shards(points, "gallery-shards", shards=4)
    index = hedge.scale.ShardedIndex("gallery-shards")  # one actor per shard
    ids, distances = index.search(queries, k=10)        # global row ids, nearest first

Ray is imported only when a :class:`ShardedIndex` starts (``pip install ray``); writing and
checking shards needs nothing but hedge.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import uuid
from dataclasses import asdict, dataclass
from typing import Optional, Union

import numpy as np

from .ann import HnswIndex, _points

__all__ = [
    "GalleryEmbedder",
    "ShardInfo",
    "ShardManifest",
    "ShardUnavailable",
    "ShardedIdentifier",
    "ShardedIndex",
    "ShardedPool",
    "embed_to_shards",
    "load_shard",
    "local_top_b",
    "merge",
    "merge_top_b",
    "read_manifest",
    "shard_index",
    "sharded_lcmd",
    "write_gallery_shard",
    "write_pool_shards",
    "write_shards",
]

PathLike = Union[str, "os.PathLike[str]"]
MANIFEST = "shards.json"
FORMAT = "hedge-ann-shards"
VERSION = 1


class ShardUnavailable(RuntimeError):
    """A shard's actor died and could not be restarted: the search has no complete answer."""


@dataclass(frozen=True)
class ShardInfo:
    file: str
    sha256: str
    bytes: int
    #: Global id of the shard's first row; its rows are ``first_id .. first_id + points - 1``.
    first_id: int
    points: int


@dataclass(frozen=True)
class ShardManifest:
    format: str
    version: int
    dim: int
    points: int
    settings: dict
    shards: list

    @property
    def shard_infos(self) -> list[ShardInfo]:
        return [ShardInfo(**s) for s in self.shards]


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_shards(
    points,
    out: PathLike,
    shards: int,
    max_connections: int = 16,
    ef_construction: int = 200,
    ef_search: int = 200,
    overwrite: bool = False,
) -> ShardManifest:
    """Splits the rows of ``points`` (``[n, d]``) into ``shards`` contiguous parts, builds an HNSW
    graph over each and writes them with ``shards.json`` into the folder ``out`` (written beside
    it, then renamed; an existing folder is replaced only with ``overwrite`` and only when it
    holds a shard set and nothing else)."""
    points = _points(points, "points")
    n = len(points)
    if not isinstance(shards, (int, np.integer)) or isinstance(shards, bool) or not 1 <= shards <= n:
        raise ValueError(f"`shards` must be a whole number from 1 to the number of points ({n}); got {shards!r}")
    out = pathlib.Path(out)
    if out.exists():
        if not overwrite:
            raise ValueError(f"'{out}' already exists; choose another folder, or pass overwrite=True to replace it")
        _check_replaceable(out)
    tmp = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=False)
    try:
        infos = []
        bounds = np.linspace(0, n, shards + 1).round().astype(int)
        for s in range(shards):
            lo, hi = int(bounds[s]), int(bounds[s + 1])
            name = f"shard-{s:05d}.ann.safetensors"
            HnswIndex.build(points[lo:hi], max_connections, ef_construction, ef_search).save(tmp / name)
            infos.append(ShardInfo(name, _sha256(tmp / name), (tmp / name).stat().st_size, lo, hi - lo))
        manifest = ShardManifest(
            FORMAT,
            VERSION,
            int(points.shape[1]),
            n,
            {"max_connections": max_connections, "ef_construction": ef_construction, "ef_search": ef_search},
            [asdict(i) for i in infos],
        )
        (tmp / MANIFEST).write_text(json.dumps(asdict(manifest), indent=2) + "\n")
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _swap_into_place(tmp: pathlib.Path, out: pathlib.Path) -> None:
    """Renames the finished folder ``tmp`` to ``out``; an ``out`` already there (checked
    replaceable by the caller) is moved aside and deleted once the new one is in place."""
    if out.exists():
        old = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old)
    else:
        tmp.rename(out)


def _check_replaceable(out: pathlib.Path) -> None:
    if not (out / MANIFEST).is_file():
        raise ValueError(f"'{out}' is not a shard set (no {MANIFEST}); overwrite replaces only a folder hedge wrote")
    manifest = read_manifest(out)
    ours = {MANIFEST, *(s.file for s in manifest.shard_infos)}
    foreign = sorted(p.name for p in out.iterdir() if p.name not in ours)
    if foreign:
        raise ValueError(f"'{out}' holds '{foreign[0]}', which is not part of the shard set; move it out first")


def read_manifest(folder: PathLike) -> ShardManifest:
    """``shards.json`` of a shard set, checked (the shard files themselves are checked by the
    actors that load them)."""
    path = pathlib.Path(folder) / MANIFEST
    if not path.is_file():
        raise ValueError(f"'{folder}' has no {MANIFEST}; write a shard set with hedge.scale.write_shards")
    try:
        raw = json.loads(path.read_text())
        manifest = ShardManifest(**raw)
        infos = manifest.shard_infos
    except (ValueError, TypeError) as e:
        raise ValueError(f"'{path}' is not a shard manifest ({e}); rewrite the shard set") from None
    if manifest.format != FORMAT or manifest.version != VERSION:
        raise ValueError(f"'{path}' is {manifest.format} version {manifest.version}; this hedge reads {FORMAT} {VERSION}")
    expected = 0
    for info in infos:
        if info.first_id != expected or info.points < 1 or "/" in info.file or info.file.startswith("."):
            raise ValueError(f"'{path}': shard '{info.file}' does not continue the rows at {expected}; rewrite the shard set")
        expected += info.points
    if expected != manifest.points:
        raise ValueError(f"'{path}': the shards hold {expected} rows, the manifest says {manifest.points}")
    return manifest


def load_shard(folder: PathLike, info: ShardInfo) -> HnswIndex:
    """One shard's graph, refused unless its SHA-256 is the manifest's."""
    path = pathlib.Path(folder) / info.file
    if not path.is_file():
        raise ValueError(f"shard file '{path}' is missing; rewrite the shard set")
    digest = _sha256(path)
    if digest != info.sha256:
        raise ValueError(
            f"shard file '{path}' differs from the SHA-256 in {MANIFEST} ({digest[:12]}… instead of "
            f"{info.sha256[:12]}…): it was damaged or replaced; rewrite the shard set"
        )
    index = HnswIndex.load(path)
    if len(index) != info.points:
        raise ValueError(f"shard file '{path}' holds {len(index)} points, the manifest says {info.points}")
    return index


class _Shard:
    """The body of a shard actor: loads (and on a restart reloads) its file, answers searches."""

    def __init__(self, folder: str, info: dict):
        self.info = ShardInfo(**info)
        self.index = load_shard(folder, self.info)

    def pid(self) -> int:
        return os.getpid()

    def memory(self) -> tuple[int, int]:
        """(bytes the graph holds, the actor process's resident memory)."""
        with open("/proc/self/statm") as f:
            resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        return self.index.memory_bytes, resident

    def imports_torch(self) -> bool:
        """Whether this actor's process has imported torch (it need not: hedge.ann's extension
        links no libtorch)."""
        import sys

        return "torch" in sys.modules

    def location(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def search(self, queries: np.ndarray, k: int, ef: Optional[int]) -> tuple[np.ndarray, np.ndarray]:
        ids, dist = self.index.search(queries, k=min(k, len(self.index)), ef=ef)
        return ids + self.info.first_id, dist


def merge(parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest per row over every shard's answer, by distance then id; -1 and inf pad
    rows when all shards together hold fewer than ``k`` points."""
    ids = np.concatenate([p[0] for p in parts], axis=1)
    dist = np.concatenate([p[1] for p in parts], axis=1)
    order = np.lexsort((ids, dist), axis=1)[:, :k]
    ids, dist = np.take_along_axis(ids, order, 1), np.take_along_axis(dist, order, 1)
    if ids.shape[1] < k:
        pad = k - ids.shape[1]
        ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
        dist = np.pad(dist, ((0, 0), (0, pad)), constant_values=np.inf)
    return ids, dist


def _call_actors(ray, actors: list, names: list[str], folder: str, call) -> list:
    """``call`` on every actor, answers in order. A shard that refused to load surfaces the
    library's ValueError; one whose actor is gone for good raises :class:`ShardUnavailable`."""
    futures = [call(a) for a in actors]
    out = []
    for name, future in zip(names, futures):
        try:
            out.append(ray.get(future))
        except ray.exceptions.RayActorError as e:
            if getattr(e, "actor_init_failed", False):
                # The shard refused to load (a damaged or missing file): the library's own
                # message, not Ray's traceback.
                refusal = [line.strip() for line in str(e).splitlines() if line.strip().startswith("ValueError:")]
                if refusal:
                    raise ValueError(refusal[-1].removeprefix("ValueError:").strip()) from None
            raise ShardUnavailable(
                f"shard '{name}' of {folder} died and could not be restarted ({type(e).__name__}); "
                f"no partial answer is returned: check the node's memory and the shard file, then retry"
            ) from e
        except ray.exceptions.RayTaskError as e:
            cause = e.as_instanceof_cause()
            if isinstance(cause, ValueError):
                raise ValueError(str(cause).splitlines()[-1]) from None
            raise
    return out


class _ShardActors:
    """One Ray actor per shard, spread over the nodes, restarted by Ray when it dies."""

    def _start(self, body, args: list[tuple], names: list[str], max_restarts: int, num_cpus: float) -> None:
        import ray

        self._ray = ray
        if not ray.is_initialized():
            raise RuntimeError("Ray is not running in this process: call ray.init() (or ray.init(address=...)) first")
        # SPREAD: shards on as many nodes as there are, so that one node's loss is one shard's.
        actor = ray.remote(body).options(
            max_restarts=max_restarts, max_task_retries=max_restarts, num_cpus=num_cpus, scheduling_strategy="SPREAD"
        )
        self._names = names
        self._actors = [actor.remote(*a) for a in args]
        # Every shard loads (and checks its SHA-256) now: a damaged set fails here, by name.
        self._call_all(lambda a: a.pid.remote())

    def _call_all(self, call) -> list:
        return _call_actors(self._ray, self._actors, self._names, self.folder, call)

    def pids(self) -> list[int]:
        """The process id of each shard's actor (tests kill them)."""
        return self._call_all(lambda a: a.pid.remote())

    def locations(self) -> list[tuple[int, str]]:
        """(process id, Ray node id) of each shard's actor."""
        return self._call_all(lambda a: a.location.remote())

    def shutdown(self) -> None:
        """Stops the shard actors."""
        for a in self._actors:
            self._ray.kill(a, no_restart=True)
        self._actors = []


class ShardedIndex(_ShardActors):
    """One Ray actor per shard of a shard set; :meth:`search` fans out and merges.

    ``max_restarts`` is how often Ray restarts a dead shard actor (reloading its file) and
    retries the search it was running; past that a search raises :class:`ShardUnavailable`.
    ``num_cpus`` is reserved per actor (a fraction lets several shards share a core).
    """

    def __init__(self, folder: PathLike, max_restarts: int = 3, num_cpus: float = 0.5):
        self.folder = str(pathlib.Path(folder).resolve())
        self.manifest = read_manifest(self.folder)
        infos = self.manifest.shard_infos
        self._start(_Shard, [(self.folder, asdict(i)) for i in infos], [i.file for i in infos], max_restarts, num_cpus)

    @property
    def dim(self) -> int:
        return self.manifest.dim

    def __len__(self) -> int:
        return self.manifest.points

    def memory(self) -> list[tuple[int, int]]:
        """(bytes its graph holds, its process's resident memory) of each shard's actor."""
        return self._call_all(lambda a: a.memory.remote())

    def imports_torch(self) -> list[bool]:
        """Whether each shard's actor has imported torch: none does (about 0.6 GB and 2.7 s a
        process saved), since an ANN shard runs on hedge's torch-free extension."""
        return self._call_all(lambda a: a.imports_torch.remote())

    def search(self, queries, k: int = 10, ef: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest rows of the whole set for every row of ``queries``: (global ids
        int64 ``[q, k]``, Euclidean distances float32 ``[q, k]``)."""
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise ValueError(f"`k` must be a positive whole number; got {k!r}")
        queries = _points(queries, "queries", self.dim)
        ref = self._ray.put(queries)
        parts = self._call_all(lambda a: a.search.remote(ref, int(k), ef))
        return merge(parts, int(k))


# --- Sharded identification -------------------------------------------------------------------


def shard_index(index: PathLike, out: PathLike, shards: int, overwrite: bool = False) -> dict:
    """Splits an identification index (``hedge hib index``, :meth:`hedge.hib.Index.build`) into
    ``shards`` contiguous shards under the new folder ``out``: each shard an index folder of its
    own (its items' embeddings, a graph over their means, the same settings and abstention
    rule), and ``shards.json`` with each shard's item range and the SHA-256 of its
    ``index.json``. Returns ``shards.json`` as a dict."""
    from ._native import _hedge

    if not isinstance(shards, (int, np.integer)) or isinstance(shards, bool):
        raise ValueError(f"`shards` must be a whole number; got {shards!r}")
    return json.loads(_hedge.hib_shard_index(str(index), str(out), int(shards), bool(overwrite)))


class _GalleryShard:
    """The body of a gallery-shard actor: loads (and on a restart reloads) its shard, checked
    against ``shards.json`` and its own ``index.json``, and answers with its nearest items."""

    def __init__(self, folder: str, shard: int):
        from ._native import _hedge

        self.shard = _hedge.GalleryShard(folder, shard)

    def pid(self) -> int:
        return os.getpid()

    def location(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def candidates(self, means):
        return self.shard.candidates(means)


class ShardedIdentifier(_ShardActors):
    """Identification against a gallery split by :func:`shard_index`: one Ray actor per shard
    holds that shard's graph and embeddings; the driver (this object) embeds the probes with the
    run's model, fans their means out, merges each probe's nearest candidates over all shards,
    and applies the exact match-probability re-rank and the abstention rule once. Where every
    shard's ANN search is exact, the answers are :meth:`hedge.hib.Index.search`'s on the whole
    gallery. ``max_restarts`` and ``num_cpus`` are as for :class:`ShardedIndex`."""

    def __init__(
        self,
        folder: PathLike,
        run: Optional[PathLike] = None,
        max_restarts: int = 3,
        num_cpus: float = 0.5,
        device: str = "cpu",
    ):
        from ._native import _hedge

        self.folder = str(pathlib.Path(folder).resolve())
        #: ``shards.json``.
        self.manifest: dict = json.loads((pathlib.Path(self.folder) / MANIFEST).read_text()) if (
            pathlib.Path(self.folder) / MANIFEST
        ).is_file() else {}
        self._rules = _hedge.ShardRules(self.folder, None if run is None else str(run), device)
        names = [s["name"] for s in self.manifest["shards"]]
        self._start(_GalleryShard, [(self.folder, i) for i in range(len(names))], names, max_restarts, num_cpus)

    def __len__(self) -> int:
        return int(self.manifest["items"])

    def validation_curve(self, probes, labels=None) -> tuple[list, list]:
        """For labelled ``probes`` (a folder or image ``.npz``; or image arrays with ``labels``):
        each probe's uncertainty (the set's score, eta or margin) and whether its top identity
        is its label -- the curve an abstention rule is chosen on."""
        import tempfile

        from .hib import _image_source

        with tempfile.TemporaryDirectory(prefix="hedge-validation-") as tmp:
            embedded = self._rules.embed(_image_source(probes, labels, pathlib.Path(tmp), "probes"))
        ref = self._ray.put(embedded.means)
        return self._rules.validate(embedded, self._call_all(lambda a: a.candidates.remote(ref)))

    def search(self, probes, labels=None, *, target_risk: Optional[float] = None):
        """Identifies ``probes`` (a folder or image ``.npz``; or image arrays with ``labels``):
        ``(list of ProbeResult, SearchSummary)`` as :meth:`hedge.hib.Index.search` gives. The
        summary's ``ann_recall_at_10`` is None: no machine holds the whole gallery."""
        import tempfile
        import time

        from .hib import ProbeResult, SearchSummary, _image_source

        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="hedge-search-") as tmp:
            embedded = self._rules.embed(_image_source(probes, labels, pathlib.Path(tmp), "probes"))
        ref = self._ray.put(embedded.means)
        answers = self._call_all(lambda a: a.candidates.remote(ref))
        risk = None if target_risk is None else float(target_risk)
        rows, summary = self._rules.decide(embedded, answers, time.perf_counter() - start, risk)
        return [ProbeResult.from_json(r) for r in rows], SearchSummary.from_json(summary)


# --- Embedding a large image set with Ray Data -----------------------------------------------


def _images_chw(images, shape: tuple, column: str = "image") -> np.ndarray:
    """A batch of images as ``[B, C, H, W]`` for a model that takes ``shape`` = (C, H, W): given
    as ``[B, C, H, W]``, ``[B, H, W, C]`` (Ray's ``read_images``) or ``[B, H, W]`` (one channel)."""
    x = np.stack(list(images)) if getattr(images, "dtype", None) == object or isinstance(images, list) else np.asarray(images)
    c, h, w = shape
    if x.shape[1:] == (c, h, w):
        return x
    if x.shape[1:] == (h, w, c):
        return np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    if c == 1 and x.shape[1:] == (h, w):
        return x[:, None]
    raise ValueError(
        f"column '{column}' holds images of shape {x.shape[1:]}; the run's model takes {c} x {h} x {w} "
        f"(give [C, H, W], [H, W, C] or, for one channel, [H, W]; resize the images first)"
    )


class GalleryEmbedder:
    """Ray Data's ``map_batches`` worker that embeds images with a trained run, loaded once per
    worker: a batch with ``image`` and ``label`` (or ``path``, as ``ray.data.read_images(...,
    include_paths=True)`` gives: the identity is the image's folder name) becomes ``mean``,
    ``variance`` (not for a point model), ``eta``, ``label`` and ``name`` (given, or
    ``<folder>/<file>`` for a path; rows without either are named by position when written).

    A batch's eta draws its samples from ``seed`` (as :meth:`hedge.hib.Run.embed` does), so a
    gallery item's stored eta depends on its batch; decisions use the probes' eta, never the
    gallery's, so the answers do not."""

    def __init__(self, run: PathLike, samples: int = 8, seed: int = 0, device: str = "cpu"):
        from .hib import Run

        self.run = Run(run)
        self.samples, self.seed, self.device = int(samples), int(seed), device

    def __call__(self, batch: dict) -> dict:
        if "image" not in batch or not ({"label", "path"} & set(batch)):
            raise ValueError(
                f"a gallery batch has columns {sorted(batch)}; it needs 'image' and 'label' (or 'path', whose "
                f"folder name is the identity)"
            )
        images = _images_chw(batch["image"], self.run.input_shape)
        e = self.run.embed(images, samples=self.samples, seed=self.seed, batch=500, device=self.device)
        out = {"mean": e.mean.numpy(), "eta": e.eta.numpy()}
        if e.variance is not None:
            out["variance"] = e.variance.numpy()
        if "label" in batch:
            out["label"] = np.asarray(batch["label"])
            if "name" in batch:
                out["name"] = np.asarray(batch["name"]).astype(str)
        else:
            paths = [pathlib.PurePath(str(p)) for p in batch["path"]]
            out["label"] = np.array([p.parent.name for p in paths])
            out["name"] = np.array([f"{p.parent.name}/{p.name}" for p in paths])
        return out


def _class_names(labels) -> list:
    """The identities in hedge's order: integer labels numerically (an image .npz's), names
    alphabetically (an image folder's)."""
    values = list(labels)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
        return [str(v) for v in sorted(int(v) for v in values)]
    if all(isinstance(v, (str, np.str_)) for v in values):
        return sorted(str(v) for v in values)
    raise ValueError("the 'label' column mixes integers and names (or holds something else); give one kind")


def write_gallery_shard(template: str, batches, first_item: int, out: PathLike) -> int:
    """Writes the shard folder ``out`` from embedded batches (:class:`GalleryEmbedder`'s output,
    in gallery order, the shard's first row being gallery item ``first_item``) under the set's
    ``template`` (JSON from ``hedge._hedge.hib_index_template``); returns the items written.
    Rows without a ``name`` are named ``#<gallery position>``, as an image ``.npz``'s are."""
    import torch

    from ._native import _hedge

    columns: dict = {}
    for b in batches:
        for k, v in b.items():
            columns.setdefault(k, []).append(np.asarray(v))
    if "mean" not in columns:
        raise ValueError(f"shard {out} received no embedded rows; give every shard at least one item")
    cat = {k: np.concatenate(v) for k, v in columns.items()}
    n = len(cat["mean"])
    index = {name: i for i, name in enumerate(json.loads(template)["class_names"])}
    unknown = sorted({str(v) for v in cat["label"]} - index.keys())
    if unknown:
        raise ValueError(f"shard {out}: identity '{unknown[0]}' is not among the set's {len(index)} identities")
    labels = np.array([index[str(v)] for v in cat["label"]], dtype=np.int64)
    names = [str(v) for v in cat["name"]] if "name" in cat else [f"#{first_item + i}" for i in range(n)]
    variance = torch.from_numpy(np.ascontiguousarray(cat["variance"], np.float32)) if "variance" in cat else None
    _hedge.hib_write_embedded_shard(
        template,
        torch.from_numpy(np.ascontiguousarray(cat["mean"], np.float32)),
        variance,
        torch.from_numpy(np.ascontiguousarray(cat["eta"], np.float32)),
        labels,
        names,
        str(out),
    )
    return n


def _write_part(template: str, part, first_item: int, out: str) -> int:
    """A Ray task: one shard from its part of the embedded dataset."""
    return write_gallery_shard(template, part.iter_batches(batch_size=4096, batch_format="numpy"), first_item, out)


def embed_to_shards(
    run: PathLike,
    dataset,
    out: PathLike,
    *,
    shards: int,
    validation,
    validation_labels=None,
    target_risk: float = 0.05,
    abstain_by: str = "eta",
    candidates: int = 100,
    top_k: int = 5,
    max_connections: int = 16,
    ef_construction: int = 200,
    ef_search: int = 200,
    batch_size: int = 500,
    concurrency: int = 1,
    num_cpus: float = 1.0,
    source: str = "ray.data.Dataset",
    overwrite: bool = False,
    candidates_by: Optional[str] = None,
) -> dict:
    """Embeds the images of a Ray ``dataset`` with the run's model (``map_batches`` with
    :class:`GalleryEmbedder`, ``concurrency`` workers of ``num_cpus`` each, the run loaded once
    per worker) and writes them as the shard set ``out`` that :class:`ShardedIdentifier`
    searches: ``shards`` contiguous shards in the dataset's order, each built by a Ray task (its
    graph over its items' means), then the abstention rule for ``target_risk`` chosen once on the
    labelled ``validation`` probes (a folder or image ``.npz``, or arrays with
    ``validation_labels``) searched against all shards, and written into every shard.
    ``candidates_by`` is as in :meth:`hedge.hib.Index.build`. The
    answers are those of :meth:`hedge.hib.Index.build` on the same images, split by
    :func:`shard_index`. ``out`` must be a folder every node sees; it is written beside itself
    and renamed. Returns ``shards.json``.

    Every column but ``image`` and ``label`` / ``path`` / ``name`` is ignored. Validation probes
    are required: leave-one-out over a gallery of this size is not what one wants."""
    import tempfile

    import ray

    from ._native import _hedge
    from .hib import _image_source

    if not ray.is_initialized():
        raise RuntimeError("Ray is not running in this process: call ray.init() (or ray.init(address=...)) first")
    if not isinstance(shards, (int, np.integer)) or isinstance(shards, bool) or shards < 1:
        raise ValueError(f"`shards` must be a whole number of at least 1; got {shards!r}")
    names = set(dataset.schema().names)
    if "image" not in names or not ({"label", "path"} & names):
        raise ValueError(
            f"the dataset has columns {sorted(names)}; it needs 'image' and 'label' (or 'path', as "
            f"ray.data.read_images(..., include_paths=True) gives, whose folder names are the identities)"
        )
    out = pathlib.Path(out)
    _hedge.hib_check_shard_set_out(str(out), bool(overwrite))
    run = str(pathlib.Path(run).resolve())
    # The settings are checked (and the weights hashed) once, before any image is read; the
    # identities are filled in when the embeddings are there.
    template = json.loads(_hedge.hib_index_template(
        run, [], source, float(target_risk), abstain_by, int(candidates), int(top_k), int(max_connections),
        int(ef_construction), int(ef_search), candidates_by))
    search = template["search"]
    # Shards are contiguous ranges of the dataset's rows, so every stage must keep their order. A
    # Dataset carries the context it was made with (its children share that object): a deep copy
    # gets a context of its own, so the caller's dataset is left as it was.
    dataset = ray.data.Dataset.copy(dataset, _deep_copy=True)
    dataset.context.execution_options.preserve_order = True
    embedded = dataset.map_batches(
        GalleryEmbedder,
        fn_constructor_kwargs={"run": run, "samples": search["eta_samples"], "seed": search["seed"]},
        batch_size=int(batch_size),
        compute=ray.data.ActorPoolStrategy(size=int(concurrency)),
        num_cpus=float(num_cpus),
        batch_format="numpy",
    ).materialize()
    n = embedded.count()
    if not 1 <= shards <= n:
        raise ValueError(f"`shards` must be from 1 to the number of images ({n}); got {shards}")
    # Only the label column comes to the driver, a block at a time (a hash aggregation costs
    # seconds of Ray tasks on a small set).
    distinct: set = set()
    for b in embedded.select_columns(["label"]).iter_batches(batch_size=None, batch_format="numpy"):
        distinct.update(np.unique(b["label"]).tolist())
    class_names = _class_names(distinct)
    template = json.dumps({**template, "class_names": class_names})
    bounds = [s * n // shards for s in range(shards + 1)]
    parts = embedded.split_at_indices(bounds[1:-1]) if shards > 1 else [embedded]
    tmp = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=False)
    try:
        write = ray.remote(num_cpus=1)(_write_part)
        entries = [(f"shard-{s:05d}", bounds[s + 1] - bounds[s]) for s in range(shards)]
        written = ray.get([write.remote(template, part, bounds[s], str(tmp / name))
                           for s, (part, (name, _)) in enumerate(zip(parts, entries))])
        if written != [items for _, items in entries]:
            raise RuntimeError(f"the shards received {written} items, not {[i for _, i in entries]}")
        _hedge.hib_seal_shard_set(str(tmp), source, entries, None)
        identifier = ShardedIdentifier(tmp, run=run)
        try:
            with tempfile.TemporaryDirectory(prefix="hedge-validation-") as scratch:
                probes = _image_source(validation, validation_labels, pathlib.Path(scratch), "validation")
                uncertainty, correct = identifier.validation_curve(probes)
        finally:
            identifier.shutdown()
        described = f"labelled probes {validation}" if validation_labels is None else "labelled probes (arrays)"
        sealed = _hedge.hib_seal_shard_set(str(tmp), source, entries, (described, uncertainty, correct))
        # Checked again: the folder may have changed while the set was built.
        _hedge.hib_check_shard_set_out(str(out), bool(overwrite))
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return json.loads(sealed)


# --- Sharded ACS-FW ---------------------------------------------------------------------------

POOL_MANIFEST = "pool.json"
POOL_FORMAT = "hedge-acs-fw-pool"


def write_pool_shards(projections, out: PathLike, shards: int, overwrite: bool = False) -> dict:
    """Splits an ACS-FW pool (``[N, J]`` float64, each row a vector L_n, e.g. random
    projections) into ``shards`` ``.npy`` files under the new folder ``out`` with
    ``pool.json`` (each file's first row, rows and SHA-256). Shards start at multiples of the
    block size L is summed over (4,096 rows), so a sharded batch is the in-memory one to the bit;
    a pool of fewer blocks than ``shards`` gets fewer shards."""
    from ._native import _hedge  # noqa: F401  (the block size below is the library's)

    x = np.ascontiguousarray(np.asarray(projections, dtype=np.float64))
    if x.ndim != 2 or len(x) == 0 or x.shape[1] == 0:
        raise ValueError(f"`projections` must be a non-empty [N, J] array; got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"`projections` row {int(np.flatnonzero(~np.isfinite(x).all(1))[0])} holds a non-finite value")
    if not isinstance(shards, (int, np.integer)) or isinstance(shards, bool) or shards < 1:
        raise ValueError(f"`shards` must be a positive whole number; got {shards!r}")
    blocks = -(-len(x) // POOL_BLOCK)
    per = -(-blocks // int(shards))
    starts = list(range(0, len(x), per * POOL_BLOCK))
    out = pathlib.Path(out)
    if out.exists():
        if not overwrite:
            raise ValueError(f"'{out}' already exists; choose another folder, or pass overwrite=True to replace it")
        ours = {POOL_MANIFEST} | {p.name for p in out.glob("pool-*.npy")}
        foreign = sorted(p.name for p in out.iterdir() if p.name not in ours)
        if foreign or not (out / POOL_MANIFEST).is_file():
            raise ValueError(f"'{out}' is not a pool shard set hedge wrote (it holds {foreign[:1] or 'no pool.json'})")
    tmp = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        entries = []
        for s, lo in enumerate(starts):
            hi = min(lo + per * POOL_BLOCK, len(x))
            name = f"pool-{s:05d}.npy"
            np.save(tmp / name, x[lo:hi])
            entries.append({"file": name, "first": lo, "rows": hi - lo, "sha256": _sha256(tmp / name)})
        manifest = {"format": POOL_FORMAT, "version": 1, "rows": len(x), "cols": int(x.shape[1]), "shards": entries}
        (tmp / POOL_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


#: Rows per block of the sums L is built from (hedge_active::SHARD_ROW_MULTIPLE).
POOL_BLOCK = 4096


class _PoolShard:
    """The body of a pool-shard actor: loads (and on a restart reloads) its rows, checked by
    SHA-256, and reports its best vertex for a residual."""

    def __init__(self, folder: str, entry: dict):
        from ._native import _hedge

        path = pathlib.Path(folder) / entry["file"]
        if not path.is_file() or _sha256(path) != entry["sha256"]:
            raise ValueError(
                f"pool shard '{path}' is missing or differs from the SHA-256 in {POOL_MANIFEST}: it was damaged "
                f"or replaced; write the pool shards again"
            )
        rows = np.load(path, allow_pickle=False)
        if rows.shape[0] != entry["rows"]:
            raise ValueError(f"pool shard '{path}' holds {rows.shape[0]} rows, {POOL_MANIFEST} says {entry['rows']}")
        self.first = int(entry["first"])
        self.rows = np.ascontiguousarray(rows, dtype=np.float64)
        # Built on first use: ACS-FW's shard (a copy of the rows with their norms), and per
        # LCMD batch its shard (a copy with each row's nearest centre).
        self._shard = None
        self._lcmd = None

    @property
    def shard(self):
        from ._native import _hedge

        if self._shard is None:
            self._shard = _hedge.PoolShard(self.first, self.rows)
        return self._shard

    def pid(self) -> int:
        return os.getpid()

    def location(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def setup(self):
        return self.shard.setup()

    def best(self, residual, distinct: bool, picks: list):
        # The batch's picks so far come with every call: a shard restarted from its file, or
        # asked for another batch, holds exactly them.
        self.shard.set_chosen([int(p) for p in picks])
        return self.shard.best(residual, distinct)

    def lcmd(self, batch: str, labelled, picks: list, features: list, cluster: Optional[int]):
        """One half of an LCMD step: every cluster's mass here (``cluster`` None), or this
        shard's farthest unpicked point of ``cluster``. The batch's picks so far (rows and
        features) come with every call: a shard restarted from its file, or asked for another
        batch, rebuilds its clusters from the labelled centres and replays them."""
        from ._native import _hedge

        if self._lcmd is None or self._lcmd[0] != batch or self._lcmd[2] > len(picks):
            self._lcmd = [batch, _hedge.LcmdShard(self.first, self.rows, labelled), 0]
        _, shard, applied = self._lcmd
        n = len(labelled)
        for i in range(applied, len(picks)):
            shard.add_pick(n + i, int(picks[i]), features[i])
        self._lcmd[2] = len(picks)
        return shard.masses(n + len(picks)) if cluster is None else shard.farthest(int(cluster))


class ShardedPool(_ShardActors):
    """An ACS-FW pool split by :func:`write_pool_shards`, one Ray actor per shard. Per
    Frank--Wolfe step every actor reports its best vertex for the current residual and the driver
    (this object) takes the step: the batch of :func:`hedge.active.acs_fw` on the whole pool,
    picks, weights and objective to the bit."""

    def __init__(self, folder: PathLike, max_restarts: int = 3, num_cpus: float = 0.5):
        self.folder = str(pathlib.Path(folder).resolve())
        path = pathlib.Path(self.folder) / POOL_MANIFEST
        if not path.is_file():
            raise ValueError(f"'{folder}' has no {POOL_MANIFEST}; write pool shards with hedge.scale.write_pool_shards")
        self.manifest = json.loads(path.read_text())
        if self.manifest.get("format") != POOL_FORMAT:
            raise ValueError(f"'{path}' is not a pool shard manifest")
        entries = self.manifest["shards"]
        self._start(_PoolShard, [(self.folder, e) for e in entries], [e["file"] for e in entries], max_restarts, num_cpus)

    def __len__(self) -> int:
        return int(self.manifest["rows"])

    def acs_fw(self, batch_size: int, distinct: bool = True):
        """ACS-FW with ``batch_size`` Frank--Wolfe iterations: a :class:`hedge.active.Batch`."""
        from ._native import _hedge
        from .active import Batch, _batch_size

        b = _batch_size(batch_size)
        driver = _hedge.ShardedFrankWolfe(self._call_all(lambda a: a.setup.remote()), bool(distinct))
        picks: list[int] = []
        while driver.steps < b and not driver.finished:
            residual = self._ray.put(driver.residual)
            vertices = self._call_all(lambda a: a.best.remote(residual, bool(distinct), list(picks)))
            picked = driver.step(vertices)
            if picked is None:
                break
            picks.append(int(picked))
        indices, weights, objective, steps = driver.finish()
        return Batch(np.asarray(indices, dtype=np.int64), weights, objective, np.asarray(steps, dtype=np.int64))

    def lcmd(self, labelled_features, batch_size: int) -> np.ndarray:
        """LCMD's picks (in pick order) over this pool of features ``[M, k]`` given the labelled
        points' features ``[N, k]``: :func:`hedge.active.lcmd` on the whole pool. Per step every
        actor reports its clusters' masses, the driver takes the heaviest cluster, every actor
        reports its farthest point there, the driver takes the farthest."""
        from ._arrays import matrix
        from .active import _batch_size

        cols = int(self.manifest["cols"])
        centres = matrix(labelled_features, "labelled_features", n_features=cols)
        if centres.shape[1] != cols:
            raise ValueError(f"`labelled_features` has {centres.shape[1]} features per row, the pool {cols}")
        batch, labelled = uuid.uuid4().hex, self._ray.put(centres)

        def ask(picks, features, cluster):
            rows, points = self._ray.put(picks), self._ray.put(features)
            return self._call_all(lambda a: a.lcmd.remote(batch, labelled, rows, points, cluster))

        return sharded_lcmd(ask, len(centres), _batch_size(batch_size), len(self))


def sharded_lcmd(ask, labelled: int, batch_size: int, pool_rows: int) -> np.ndarray:
    """LCMD's driver over pool shards (``hedge_active::lcmd_sharded``'s loop): ``ask(picks,
    features, cluster)`` returns every shard's answer to ``lcmd`` given the batch's picks so far
    (pool rows and their features) -- each cluster's mass when ``cluster`` is None, else its
    farthest point there. ``labelled`` centres start the clusters. Returns the picks in order."""
    from ._native import _hedge

    picks: list[int] = []
    features: list[np.ndarray] = []
    while len(picks) < min(int(batch_size), int(pool_rows)):
        cluster = _hedge.lcmd_heaviest_cluster(ask(picks, features, None), labelled + len(picks))
        if cluster is None:
            break
        pick = _hedge.lcmd_farthest_pick(ask(picks, features, cluster))
        if pick is None:
            break
        picks.append(int(pick[0]))
        features.append(pick[1])
    return np.asarray(picks, dtype=np.int64)


# --- Sharded top-b (BALD, MaxEnt, any per-point score) ----------------------------------------


def local_top_b(scores, first: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """A shard's part of a global top-b: its ``b`` best points as (global indices, scores),
    where ``scores`` are the shard's per-point scores (``hedge.active.bald`` or ``max_entropy``
    of its rows, which depend on no other point) and ``first`` its first row in the pool."""
    from .active import top_b

    s = np.ascontiguousarray(np.asarray(scores, dtype=np.float64))
    keep = top_b(s, min(int(b), len(s)))
    return keep + int(first), s[keep]


def merge_top_b(parts: list[tuple[np.ndarray, np.ndarray]], b: int) -> np.ndarray:
    """The pool's ``b`` best points from every shard's :func:`local_top_b`, ascending, ties to
    the lower index: ``hedge.active.top_b`` over the whole pool's scores."""
    from .active import _batch_size

    b = _batch_size(b)
    index = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts])
    score = np.concatenate([np.asarray(p[1], dtype=np.float64) for p in parts])
    # A NaN score has no place in an order of informativeness: refuse it rather than guess.
    if np.isnan(score).any():
        raise ValueError("a shard's scores hold NaN; score the pool again")
    order = np.lexsort((index, -score))[:b]
    return np.sort(index[order])
