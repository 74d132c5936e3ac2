"""The extension that runs on libtorch, loaded after the user's torch: `from ._native import
_hedge` in every module that needs it. torch comes first because the extension shares its
libtorch (the process holds one copy, the user's), and a torch of another release is refused
here with both versions named: a mismatched libtorch would crash with undefined symbols."""

import torch as _torch

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

from . import _hedge  # noqa: E402  (only after the torch check)

__all__ = ["_hedge"]
