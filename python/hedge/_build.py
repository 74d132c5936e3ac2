"""The torch release the extension is compiled against (the repository's build: libtorch from
scripts/setup-libtorch.sh). A wheel carries its own copy, written by scripts/wheel.py."""

BUILT_FOR_TORCH = "2.13.0"
