"""The package as installed: built for the torch it runs beside, on that torch's libtorch."""

import os
import pathlib
import subprocess
import sys
import textwrap

import torch

import hedge


def test_extension_was_compiled_against_the_release_the_import_check_names():
    assert hedge.libtorch_version().split("+")[0] == hedge.BUILT_FOR_TORCH
    assert torch.__version__.split("+")[0].rsplit(".", 1)[0] == hedge.BUILT_FOR_TORCH.rsplit(".", 1)[0]


def test_one_libtorch_is_loaded_and_it_is_the_users_torchs():
    maps = pathlib.Path("/proc/self/maps").read_text()
    loaded = {line.split()[-1] for line in maps.splitlines() if line.endswith("libtorch_cpu.so")}
    torch_lib = pathlib.Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    assert loaded == {str(torch_lib.resolve())}, loaded


def test_a_different_torch_is_refused_with_both_versions_named(tmp_path):
    # A stand-in `torch` package of another release ahead of the real one on the path.
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = '2.5.1+cpu'\n")
    script = textwrap.dedent(
        """
        try:
            import hedge
        except ImportError as e:
            print(e)
        else:
            print("imported")
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(pathlib.Path(hedge.__file__).parent.parent)]))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    message = out.stdout
    assert "2.5.1+cpu" in message and "2.13.0" in message and "torch==2.13.*" in message, message


def test_the_type_stubs_describe_every_function_and_class_of_the_extension():
    """python/hedge/_hedge.pyi names exactly what the compiled module exports (an editor's
    completion and a type checker see the extension as it is)."""
    import ast

    from hedge import _hedge

    tree = ast.parse((pathlib.Path(hedge.__file__).parent / "_hedge.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    exported = {n for n in dir(_hedge) if not n.startswith("_")}
    assert exported - stubbed == set(), "exported but not in _hedge.pyi"
    assert stubbed - exported == set(), "in _hedge.pyi but not exported"
