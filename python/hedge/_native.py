"""The extension that runs on libtorch, loaded after the user's torch: `from ._native import
_hedge` in every module that needs it. torch comes first because the extension shares its
libtorch (the process holds one copy, the user's). A wheel holds one extension per torch minor
(hedge/_build.py); the one compiled against the running torch's minor is loaded, and a torch
none of them was compiled against is refused here with both versions named: an extension of
another release would fail on undefined symbols, or worse."""

import importlib
import sys

import torch as _torch

from ._build import EXTENSIONS


def minor(version: str) -> str:
    """``"2.15"`` for ``"2.15.0+cu130"``."""
    return ".".join(version.split("+")[0].split(".")[:2])


def supported_range() -> str:
    """The pip requirement that names every torch this build has an extension for."""
    minors = sorted(EXTENSIONS, key=lambda m: tuple(int(p) for p in m.split(".")))
    low = minors[0]
    major, last = (int(p) for p in minors[-1].split("."))
    return f"torch>={low},<{major}.{last + 1}"


if minor(_torch.__version__) not in EXTENSIONS:
    _built = ", ".join(release for release, _ in EXTENSIONS.values())
    raise ImportError(
        f"hedge has no extension for torch {_torch.__version__} (imported from {_torch.__file__}): this "
        f"build of hedge was compiled against torch {_built}, so install one of those beside it "
        f"(pip install '{supported_range()}') or build hedge from source against your torch (python/README.md)."
    )

#: The torch release the loaded extension was compiled against (the running torch's minor).
BUILT_FOR_TORCH, _module = EXTENSIONS[minor(_torch.__version__)]

_hedge = importlib.import_module(f"{__package__}.{_module}")
# Under one name whichever extension was loaded: the extension's classes say they live in
# `hedge._hedge`, and pickle looks them up there.
sys.modules.setdefault(f"{__package__}._hedge", _hedge)

__all__ = ["BUILT_FOR_TORCH", "_hedge"]
