"""python/README.md's code runs as written: every ```python block, and every `python -c` line of
its shell blocks, in a fresh interpreter in an empty folder; and both example scripts on real data."""

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest
from conftest import read_uci

PYTHON_DIR = pathlib.Path(__file__).resolve().parents[1]
README = (PYTHON_DIR / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
COMMANDS = [
    line
    for block in re.findall(r"```bash\n(.*?)```", README, re.S)
    for line in block.splitlines()
    if re.match(r"\S*python -c ", line)
]


def run(args, cwd, timeout=600):
    env = dict(os.environ, MPLBACKEND="Agg")
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{args}\n{out.stdout}\n{out.stderr}"
    return out.stdout


def test_the_readme_has_its_examples():
    assert len(BLOCKS) == 6 and len(COMMANDS) == 2


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_python_c_lines_run_as_written(command, tmp_path, data_dir):
    args = shlex.split(command)
    assert "hedge on torch" in run([sys.executable, *args[1:]], tmp_path)


def block_marks(block):
    """A block that trains, embeds or indexes with a HIB run goes through hedge's convolutions; one
    that trains more than 50 steps is left out where bf16 is emulated (scripts/test.sh)."""
    if not re.search(r"hib\.(train|Run|Index)", block):
        return []
    steps = [int(n) for n in re.findall(r"\"steps\": (\d+)", block)]
    return [pytest.mark.conv_precision] + ([pytest.mark.slow_when_emulated] if max(steps, default=0) > 50 else [])


@pytest.mark.parametrize("index", [pytest.param(i, marks=block_marks(b)) for i, b in enumerate(BLOCKS)])
def test_readme_python_blocks_run_as_written(index, tmp_path, data_dir):
    out = run([sys.executable, "-c", BLOCKS[index]], tmp_path)
    assert out.strip(), "every block prints what it shows"


@pytest.mark.conv_precision
@pytest.mark.slow_when_emulated  # 187 s with emulated bf16 on a 2-core AMD EPYC
def test_the_example_scripts_run_on_real_data(tmp_path, data_dir, mnist_test):
    # An image folder of MNIST digits (6 identities, 2 held out by the example's split).
    from PIL import Image

    images, labels = mnist_test
    folder = tmp_path / "digits"
    for digit in range(6):
        (folder / str(digit)).mkdir(parents=True)
        for i, row in enumerate(np.flatnonzero(labels == digit)[:25]):
            Image.fromarray((images[row, 0] * 255).astype(np.uint8)).save(folder / str(digit) / f"{i}.png")
    out = run([sys.executable, PYTHON_DIR / "examples" / "hib_image_folder.py", folder, "--out", tmp_path / "run",
               "--steps", "30", "--unseen-classes", "2"], tmp_path)
    assert "mean eta" in out and (tmp_path / "run" / "embedding.png").stat().st_size > 10_000
    # The same example on PCME++'s loss: a model trained with it embeds and scores the same way.
    out = run([sys.executable, PYTHON_DIR / "examples" / "hib_image_folder.py", folder, "--out", tmp_path / "csd",
               "--steps", "30", "--unseen-classes", "2", "--loss", "csd"], tmp_path)
    assert "csd loss; mean eta" in out and (tmp_path / "csd" / "embedding.png").stat().st_size > 10_000
    config = json.loads((tmp_path / "csd" / "config.json").read_text())
    assert config["hib"]["loss"] == "csd"

    x, y = read_uci(data_dir, "yacht")
    table = tmp_path / "yacht.csv"
    header = ",".join([f"x{j}" for j in range(x.shape[1])] + ["resistance"])
    np.savetxt(table, np.hstack([x, y[:, None]]), delimiter=",", header=header, comments="")
    out = run([sys.executable, PYTHON_DIR / "examples" / "active_learning_csv.py", table, "--target", "resistance",
               "--rounds", "3", "--seeds", "2", "--out", tmp_path / "curve.png"], tmp_path)
    assert "acs-fw: test RMSE" in out and (tmp_path / "curve.png").stat().st_size > 10_000
