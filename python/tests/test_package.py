"""The package as installed: built for the torch it runs beside, on that torch's libtorch."""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

import hedge


def test_an_index_is_built_searched_and_pickled_without_importing_torch(tmp_path):
    """hedge.ann runs on its own extension, which links no libtorch: a process that only builds,
    saves, loads and searches an index (a Ray shard actor) never imports torch, and maps no
    libtorch."""
    script = textwrap.dedent(
        """
        import pathlib, pickle, sys
        import numpy as np
        import hedge
        from hedge.ann import HnswIndex

        points = np.random.default_rng(0).normal(size=(500, 16)).astype(np.float32)
        index = HnswIndex.build(points)
        index.save(sys.argv[1])
        again = pickle.loads(pickle.dumps(HnswIndex.load(sys.argv[1])))
        ids, distances = again.search(points[:5], k=1)
        assert ids[:, 0].tolist() == [0, 1, 2, 3, 4], ids
        maps = pathlib.Path("/proc/self/maps").read_text()
        print("torch" in sys.modules, "libtorch" in maps, type(index._graph).__module__)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "g.ann.safetensors")], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "hedge._ann"], out.stdout


def test_the_extension_loaded_was_compiled_against_the_running_torchs_minor():
    assert hedge.libtorch_version().split("+")[0] == hedge.BUILT_FOR_TORCH
    assert hedge.BUILT_FOR_TORCH in hedge.TORCH_RELEASES
    assert torch.__version__.split("+")[0].rsplit(".", 1)[0] == hedge.BUILT_FOR_TORCH.rsplit(".", 1)[0]


def test_one_libtorch_is_loaded_and_it_is_the_users_torchs():
    maps = pathlib.Path("/proc/self/maps").read_text()
    torch_lib = pathlib.Path(torch.__file__).parent.resolve() / "lib"
    for name in ("libtorch_cpu.so", "libtorch_python.so", "libc10.so"):
        loaded = {line.split()[-1] for line in maps.splitlines() if line.endswith("/" + name)}
        assert loaded == {str(torch_lib / name)}, (name, loaded)


INSTALLED = os.environ.get("HEDGE_INSTALLED_WHEEL") == "1"


@pytest.mark.skipif(not INSTALLED, reason="runs where scripts/test-wheel.sh installed the wheel")
def test_the_package_is_the_installed_wheel_beside_torch_and_numpy_alone():
    """scripts/test.sh runs this suite against the wheel (scripts/build-wheel.sh) installed in a fresh
    environment where no Rust toolchain is on the PATH: the package imported is that wheel's, it
    needs nothing but torch and NumPy, and its extension loads torch's libraries from the torch
    beside it."""
    from importlib import metadata

    repository = pathlib.Path(__file__).resolve().parents[2]
    package = pathlib.Path(hedge.__file__).resolve().parent
    assert repository not in package.parents, f"hedge imported from the source tree: {package}"
    assert package.parent == pathlib.Path(torch.__file__).resolve().parent.parent, "hedge and torch side by side"
    assert shutil.which("cargo") is None and shutil.which("rustc") is None, os.environ["PATH"]
    dist = metadata.distribution("hedge-ml")
    assert "+" not in dist.version, f"a local version label, which PyPI refuses: {dist.version}"
    needed = sorted(r.split(";")[0].replace(" ", "") for r in dist.requires if "extra ==" not in r)
    minors = sorted(tuple(int(p) for p in r.split(".")[:2]) for r in hedge.TORCH_RELEASES)
    low, high = "%d.%d" % minors[0], "%d.%d" % (minors[-1][0], minors[-1][1] + 1)
    assert needed == ["numpy>=1.24", f"torch>={low},<{high}"], needed
    tags = [line.split(": ", 1)[1] for line in dist.read_text("WHEEL").splitlines() if line.startswith("Tag: ")]
    assert tags and all("manylinux_" in t for t in tags), tags
    from hedge._native import _hedge

    extension = pathlib.Path(_hedge.__file__)
    dynamic = subprocess.run(["readelf", "-d", str(extension)], capture_output=True, text=True, check=True).stdout
    libraries = [line.rsplit("[", 1)[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line]
    runpath = [line.rsplit("[", 1)[1].rstrip("]") for line in dynamic.splitlines() if "PATH)" in line]
    assert extension.parent.name == "_torch" + hedge.BUILT_FOR_TORCH.rsplit(".", 1)[0].replace(".", "_"), extension
    assert runpath == ["$ORIGIN/../../torch/lib"], runpath
    assert {"libtorch_cpu.so", "libc10.so", "libtorch_python.so"} <= set(libraries), libraries
    print(f"\ninstalled wheel {dist.version}, tags {tags}, the extension needs {libraries}, runpath {runpath}")


def test_a_torch_without_an_extension_is_refused_in_one_sentence_naming_both(tmp_path):
    # A stand-in `torch` package of another release ahead of the real one on the path.
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = '2.5.1+cpu'\n")
    script = textwrap.dedent(
        """
        import hedge  # loads nothing that needs torch

        try:
            hedge.hib
        except ImportError as e:
            print(e)
        else:
            print("imported")
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(pathlib.Path(hedge.__file__).parent.parent)]))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    message = out.stdout.strip()
    from hedge._native import supported_range

    assert "2.5.1+cpu" in message and all(r in message for r in hedge.TORCH_RELEASES), message
    assert f"pip install '{supported_range()}'" in message and message.count(". ") == 0, message


@pytest.mark.parametrize("module", ["_hedge", "_ann"])
def test_the_type_stubs_describe_every_function_and_class_of_the_extension(module):
    """python/hedge/<module>.pyi names exactly what the compiled module exports (an editor's
    completion and a type checker see the extension as it is)."""
    import ast
    import importlib

    if module == "_hedge":
        from hedge._native import _hedge as extension
    else:
        extension = importlib.import_module(f"hedge.{module}")
    tree = ast.parse((pathlib.Path(hedge.__file__).parent / f"{module}.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    # Names a stub takes from another stub (`from ._ann import AnnGraph as AnnGraph`).
    stubbed |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.level for a in n.names}
    exported = {n for n in dir(extension) if not n.startswith("_")}
    assert exported - stubbed == set(), "exported but not in the stubs"
    assert stubbed - exported == set(), "in the stubs but not exported"
