"""hedge: machine learning that knows when it is unsure and can prove what it ignores.

The Rust library's algorithms for Python, on the libtorch of the user's own ``torch``:

* :mod:`hedge.hib` -- hedged instance embeddings (Oh et al., ICLR 2019): the soft contrastive
  loss with the VIB term, match probabilities and self-mismatch on torch tensors, autograd intact.
* :mod:`hedge.bayes` -- Gaussian-process and Bayesian linear/probit models, scikit-learn style.
* :mod:`hedge.active` -- batch acquisition (ACS-FW, MaxEnt/BALD, LCMD) as functions of arrays.
* :mod:`hedge.agnostic` -- concept erasure (LEACE) and the fresh-probe audit on feature arrays.
* :mod:`hedge.ann` -- the HNSW graph behind identification, on NumPy arrays.
* :mod:`hedge.metrics` -- uncertainty quality on arrays: reliability diagram and ECE,
  risk-coverage and AURC, AUROC/AUPRC of an uncertainty for the errors.
* :mod:`hedge.scale` -- past one machine on Ray: an index split into shards held by actors
  (``import hedge.scale``; needs ``pip install ray``).

``torch`` is imported first: the extension shares its libtorch (tensors pass without a copy),
so the two must be the same torch release.
"""

import torch as _torch

# The torch release the extension was compiled against (major.minor must match ``torch``).
from ._build import BUILT_FOR_TORCH


def _release(version: str) -> tuple:
    return tuple(version.split("+")[0].split(".")[:2])


if _release(_torch.__version__) != _release(BUILT_FOR_TORCH):
    raise ImportError(
        f"hedge was built against torch {BUILT_FOR_TORCH} (libtorch {BUILT_FOR_TORCH}) but this "
        f"environment imports torch {_torch.__version__} from {_torch.__file__}. The two must be "
        f"the same release: install torch=={'.'.join(_release(BUILT_FOR_TORCH))}.* beside hedge, or "
        f"rebuild hedge against your torch (python/README.md)."
    )

from . import _hedge  # noqa: E402  (only after the torch check: a mismatched libtorch crashes)
from . import active, agnostic, ann, bayes, hib, metrics  # noqa: E402

__all__ = ["BUILT_FOR_TORCH", "active", "agnostic", "ann", "bayes", "hib", "libtorch_version", "metrics"]


def libtorch_version() -> str:
    """The torch release whose libtorch headers the extension was compiled with."""
    return _hedge.libtorch_version()
