"""The torch releases hedge's extensions are compiled against, by torch minor, and the module each
one is. The repository's build has one, ``hedge/_hedge``, compiled against libtorch 2.13.0
(scripts/setup-libtorch.sh); a wheel carries its own copy, written by scripts/wheel.py, with one
extension per minor (``hedge/_torch2_13/_hedge``, ...)."""

EXTENSIONS = {
    "2.13": ("2.13.0", "_hedge"),
}
