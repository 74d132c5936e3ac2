"""Packs hedge's Python package and the extensions cargo built into one wheel (PEP 427), for
scripts/build-wheel.sh, which then runs `auditwheel repair` on it.

    python scripts/wheel.py --extension .libtorch/site/torch=target/release/lib_hedge.so \
        [--extension .libtorch/torch-2.15.0/torch=target/torch-2.15.0/release/lib_hedge.so ...] \
        --ann-extension target/release/lib_ann.so --out DIR

One extension per torch minor: each `--extension LIBTORCH=EXTENSION` pairs an extension with the
torch package folder whose headers it was compiled against (its `version.py` names the release).
The extension of torch 2.N lands in `hedge/_torch2_N/` with its run-time search path set to the
torch beside the package (`$ORIGIN/../../torch/lib`); `hedge/_build.py` maps each minor to its
release and module, and `import hedge` loads the one of the running torch (hedge/_native.py).
The wheel requires `torch>=LOWEST,<HIGHEST+1` over the minors it holds, so pip never changes the
user's torch inside that range, and carries no local version label (PyPI refuses those).

The torch-free extension `hedge._ann` is one for all (no search path: it links no libtorch).

Why not `maturin build`: maturin compiles hedge-py in a cargo invocation of its own, whose
feature set differs from the workspace's, and recompiles a third of the workspace (6.5 minutes in
CI); the tests' cargo has already built the same extension. The wheel holds python/hedge (sources,
type stubs, py.typed) and the extensions.
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


#: The distribution's name on PyPI (`hedge` there is an unrelated Python 2 package); the import
#: name stays `hedge`.
DISTRIBUTION = "hedge-ml"


def minor_of(release: str) -> tuple:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def torch_requirement(releases: list) -> str:
    """`torch>=2.13,<2.16` for extensions built against 2.13, 2.14 and 2.15: every minor in
    between must be among them (a gap would let pip keep a torch the wheel cannot load)."""
    minors = sorted({minor_of(r) for r in releases})
    if any(b != (a[0], a[1] + 1) for a, b in zip(minors, minors[1:])):
        sys.exit(f"wheel: the extensions' torch minors {minors} are not contiguous: build the ones between too")
    (low_major, low_minor), (high_major, high_minor) = minors[0], minors[-1]
    return f"torch>={low_major}.{low_minor},<{high_major}.{high_minor + 1}"


def metadata(version: str, releases: list) -> str:
    readme = (ROOT / "python" / "README.md").read_text()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {DISTRIBUTION}",
        f"Version: {version}",
        "Summary: Machine learning that knows when it is unsure and can prove what it ignores: hedged instance "
        "embeddings, concept-agnostic networks, Bayesian batch active learning",
        "License: Apache-2.0",
        "Requires-Python: >=3.9",
        # Each extension runs on the libtorch of the torch beside it; the wheel holds one for every
        # minor in this range, so pip keeps whichever of them the environment has.
        f"Requires-Dist: {torch_requirement(releases)}",
        "Requires-Dist: numpy>=1.24",
        "Provides-Extra: sklearn",
        "Requires-Dist: scikit-learn>=1.6; extra == 'sklearn'",
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
    parser.add_argument(
        "--extension",
        required=True,
        action="append",
        metavar="LIBTORCH=EXTENSION",
        help="a built lib_hedge.so and the torch package folder it was compiled against (repeat: one per torch minor)",
    )
    parser.add_argument("--ann-extension", required=True, type=pathlib.Path, help="the built lib_ann.so")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="folder for the wheel")
    parser.add_argument("--patchelf", default="patchelf", help="the patchelf program")
    args = parser.parse_args()
    builds = {}
    for spec in args.extension:
        if "=" not in spec:
            sys.exit(f"wheel: --extension {spec!r}: give LIBTORCH=EXTENSION (the torch folder, then the built lib_hedge.so)")
        libtorch, built = (pathlib.Path(p) for p in spec.split("=", 1))
        if not built.is_file():
            sys.exit(f"wheel: {built} does not exist: build it first (scripts/build-wheel.sh)")
        release = torch_release(libtorch)
        minor = "%d.%d" % minor_of(release)
        if minor in builds:
            sys.exit(f"wheel: two extensions for torch {minor} ({builds[minor][1]} and {built}): give one per minor")
        builds[minor] = (release, built)
    if not args.ann_extension.is_file():
        sys.exit(f"wheel: {args.ann_extension} does not exist: build it first (cargo build --release -p hedge-py-ann)")
    releases = [release for release, _ in builds.values()]
    version = workspace_version()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    wheel_tag = f"{tag}-{tag}-{platform}"
    stem = DISTRIBUTION.replace("-", "_")
    name = f"{stem}-{version}-{wheel_tag}.whl"
    dist_info = f"{stem}-{version}.dist-info"

    with tempfile.TemporaryDirectory() as scratch:
        files = {}
        source = ROOT / "python" / "hedge"
        for path in sorted(source.iterdir()):
            if path.suffix in (".py", ".pyi") or path.name == "py.typed":
                if path.name != "_build.py":
                    files[f"hedge/{path.name}"] = path.read_bytes()
        table = []
        for minor in sorted(builds, key=lambda m: minor_of(m)):
            release, built = builds[minor]
            package = "_torch" + minor.replace(".", "_")
            extension = pathlib.Path(scratch) / f"{package}{suffix}"
            shutil.copyfile(built, extension)
            # The repository's build points its search path at .libtorch; installed, the torch
            # the extension runs on sits beside the package, two folders up from this one.
            subprocess.run([args.patchelf, "--set-rpath", "$ORIGIN/../../torch/lib", str(extension)], check=True)
            files[f"hedge/{package}/__init__.py"] = (
                f'"""The extension compiled against torch {release}: hedge/_native.py loads it where torch {minor} runs."""\n'
            ).encode()
            files[f"hedge/{package}/_hedge{suffix}"] = extension.read_bytes()
            table.append(f'    "{minor}": ("{release}", "{package}._hedge"),')
        files["hedge/_build.py"] = (
            '"""Written by scripts/wheel.py: the torch releases this wheel\'s extensions were compiled against,\n'
            'by torch minor, and the module each one is (hedge/_native.py imports the running torch\'s)."""\n\n'
            "EXTENSIONS = {\n" + "\n".join(table) + "\n}\n"
        ).encode()
        ann = pathlib.Path(scratch) / f"_ann{suffix}"
        shutil.copyfile(args.ann_extension, ann)
        subprocess.run([args.patchelf, "--remove-rpath", str(ann)], check=True)
        files[f"hedge/_ann{suffix}"] = ann.read_bytes()
        files[f"{dist_info}/METADATA"] = metadata(version, releases).encode()
        files[f"{dist_info}/WHEEL"] = (
            f"Wheel-Version: 1.0\nGenerator: hedge scripts/wheel.py\nRoot-Is-Purelib: false\nTag: {wheel_tag}\n"
        ).encode()
        files[f"{dist_info}/top_level.txt"] = b"hedge\n"
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
