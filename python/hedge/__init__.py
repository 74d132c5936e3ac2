"""hedge: machine learning that knows when it is unsure and can prove what it ignores.

The Rust library's algorithms for Python, on the libtorch of the user's own ``torch``:

* :mod:`hedge.hib` -- hedged instance embeddings (Oh et al., ICLR 2019): the soft contrastive
  loss with the VIB term, match probabilities and self-mismatch on torch tensors, autograd intact.
* :mod:`hedge.bayes` -- Gaussian-process and Bayesian linear/probit models as scikit-learn estimators.
* :mod:`hedge.active` -- batch acquisition (ACS-FW, MaxEnt/BALD, LCMD) as functions of arrays.
* :mod:`hedge.agnostic` -- concept erasure (LEACE) and the fresh-probe audit on feature arrays.
* :mod:`hedge.ann` -- the HNSW graph behind identification, on NumPy arrays.
* :mod:`hedge.metrics` -- uncertainty quality on arrays: reliability diagram and ECE,
  risk-coverage and AURC, AUROC/AUPRC of an uncertainty for the errors.
* :mod:`hedge.scale` -- past one machine on Ray: an index split into shards held by actors
  (``import hedge.scale``; needs ``pip install ray``).

``import hedge`` itself loads nothing heavy: each module loads on first use (``hedge.hib``,
``from hedge import bayes``). The modules that run on libtorch import ``torch`` first (the
extension shares its libtorch: tensors pass without a copy); a wheel holds one extension per
torch minor (2.13, 2.14 and 2.15) and loads the one of the running torch. :mod:`hedge.ann` runs
on its own extension without libtorch, so a process that only searches an index (a Ray shard
actor) never imports torch.
"""

import importlib

from ._build import EXTENSIONS as _EXTENSIONS

#: The torch releases this build's extensions were compiled against, one per torch minor.
TORCH_RELEASES = tuple(release for release, _ in _EXTENSIONS.values())

__all__ = ["BUILT_FOR_TORCH", "TORCH_RELEASES", "active", "agnostic", "ann", "bayes", "hib", "libtorch_version", "metrics"]

_MODULES = {"active", "agnostic", "ann", "bayes", "hib", "metrics", "scale"}


def __getattr__(name: str):
    # PEP 562: a module on first use, so that `import hedge` loads neither torch nor the extension.
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name == "BUILT_FOR_TORCH":
        # The release of the extension the running torch loads (imports torch).
        return importlib.import_module("._native", __name__).BUILT_FOR_TORCH
    raise AttributeError(f"module 'hedge' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _MODULES | {"BUILT_FOR_TORCH"})


def libtorch_version() -> str:
    """The torch release whose libtorch headers the extension was compiled with."""
    from ._native import _hedge

    return _hedge.libtorch_version()
