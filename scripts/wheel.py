"""Packs hedge's Python package and an extension cargo built into a wheel (PEP 427), for
scripts/build-wheel.sh, which then runs `auditwheel repair` on it.

    python scripts/wheel.py --extension target/release/lib_hedge.so --ann-extension target/release/lib_ann.so \
        --libtorch .libtorch/site/torch --out DIR

Why not `maturin build`: maturin compiles hedge-py in a cargo invocation of its own, whose
feature set differs from the workspace's, and recompiles a third of the workspace (6.5 minutes in
CI); the tests' cargo has already built the same extension. The wheel holds python/hedge (sources,
type stubs, py.typed), the extension under Python's own suffix with its run-time search path set to
the torch beside it (`$ORIGIN/../torch/lib`: hedge imports torch before it, whose libtorch the
extension then shares), the torch-free extension `hedge._ann` (no search path: it links no
libtorch), and `hedge/_build.py`, which names the torch release the extension was
compiled against. The version carries that release: 0.1.0+torch2.13.0.
"""

import argparse
import base64
import csv
import hashlib
import io
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def workspace_version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    section = text.split("[workspace.package]", 1)[1]
    match = re.search(r'^version\s*=\s*"([^"]+)"', section, re.M)
    if not match:
        sys.exit("wheel: no version in Cargo.toml's [workspace.package]")
    return match.group(1)


def torch_release(libtorch: pathlib.Path) -> str:
    """The torch release whose headers and libraries the extension was built with (its
    `version.py`, as python/build.rs reads it), without a local label (2.13.0, not 2.13.0+cu130)."""
    version_py = libtorch / "version.py"
    if not version_py.is_file():
        sys.exit(f"wheel: {version_py} does not exist: --libtorch is the torch package folder the extension was built against")
    match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", version_py.read_text(), re.M)
    if not match:
        sys.exit(f"wheel: no __version__ in {version_py}")
    return match.group(1).split("+")[0]


def metadata(version: str, torch: str) -> str:
    major_minor = ".".join(torch.split(".")[:2])
    readme = (ROOT / "python" / "README.md").read_text()
    lines = [
        "Metadata-Version: 2.1",
        "Name: hedge",
        f"Version: {version}",
        "Summary: Machine learning that knows when it is unsure and can prove what it ignores: hedged instance "
        "embeddings, concept-agnostic networks, Bayesian batch active learning",
        "License: Apache-2.0",
        "Requires-Python: >=3.9",
        # The extension runs on the libtorch of the torch beside it: the release it was built for.
        f"Requires-Dist: torch=={major_minor}.*",
        "Requires-Dist: numpy>=1.24",
        "Provides-Extra: scale",
        "Requires-Dist: ray[data]==2.60.0; extra == 'scale'",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ]
    return "\n".join(lines)


def record_line(name: str, data: bytes) -> list:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extension", required=True, type=pathlib.Path, help="the built lib_hedge.so")
    parser.add_argument("--ann-extension", required=True, type=pathlib.Path, help="the built lib_ann.so")
    parser.add_argument("--libtorch", required=True, type=pathlib.Path, help="the torch package folder it was built against")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="folder for the wheel")
    parser.add_argument("--patchelf", default="patchelf", help="the patchelf program")
    args = parser.parse_args()
    for built in (args.extension, args.ann_extension):
        if not built.is_file():
            sys.exit(f"wheel: {built} does not exist: build it first (cargo build --release -p hedge-py -p hedge-py-ann)")
    torch = torch_release(args.libtorch)
    version = f"{workspace_version()}+torch{torch}"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    wheel_tag = f"{tag}-{tag}-{platform}"
    name = f"hedge-{version}-{wheel_tag}.whl"
    dist_info = f"hedge-{version}.dist-info"

    with tempfile.TemporaryDirectory() as scratch:
        extension = pathlib.Path(scratch) / f"_hedge{suffix}"
        shutil.copyfile(args.extension, extension)
        # The repository's build points its search path at .libtorch/site; installed, the torch
        # the extension runs on sits beside the package.
        subprocess.run([args.patchelf, "--set-rpath", "$ORIGIN/../torch/lib", str(extension)], check=True)
        ann = pathlib.Path(scratch) / f"_ann{suffix}"
        shutil.copyfile(args.ann_extension, ann)
        subprocess.run([args.patchelf, "--remove-rpath", str(ann)], check=True)
        files = {}
        source = ROOT / "python" / "hedge"
        for path in sorted(source.iterdir()):
            if path.suffix in (".py", ".pyi") or path.name == "py.typed":
                if path.name != "_build.py":
                    files[f"hedge/{path.name}"] = path.read_bytes()
        files["hedge/_build.py"] = (
            '"""Written by scripts/wheel.py: the torch release the extension was compiled against."""\n\n'
            f'BUILT_FOR_TORCH = "{torch}"\n'
        ).encode()
        files[f"hedge/_hedge{suffix}"] = extension.read_bytes()
        files[f"hedge/_ann{suffix}"] = ann.read_bytes()
        files[f"{dist_info}/METADATA"] = metadata(version, torch).encode()
        files[f"{dist_info}/WHEEL"] = (
            f"Wheel-Version: 1.0\nGenerator: hedge scripts/wheel.py\nRoot-Is-Purelib: false\nTag: {wheel_tag}\n"
        ).encode()
        records = [record_line(n, d) for n, d in files.items()] + [[f"{dist_info}/RECORD", "", ""]]
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(records)
        files[f"{dist_info}/RECORD"] = buffer.getvalue().encode()

        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / name
        partial = target.with_name(target.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as wheel:
            for n, d in files.items():
                info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o755 if n.endswith(".so") else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                wheel.writestr(info, d)
        partial.replace(target)
    print(target)


if __name__ == "__main__":
    main()
