"""Notebook manners: Ctrl-C stops training with a run that resumes, progress as a tqdm bar or the
callback, and hedge's own messages as Python exceptions."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hedge import hib

TRAIN_UNTIL_INTERRUPTED = textwrap.dedent(
    """
    import sys
    import numpy as np
    from hedge import hib

    data = np.load(sys.argv[2])
    def report(step, planned, loss):
        print(step, planned, flush=True)
    hib.train(
        sys.argv[1],
        data=(data["images"], data["labels"]),
        config={"model": "gaussian", "dim": 2, "steps": 20000, "batch": "independent", "batch_pairs": 8},
        unseen_classes=2,
        progress=report,
        progress_every=1,
    )
    """
)


def interrupt_when(ready, script, *args, timeout=600):
    """Runs `script` in a fresh interpreter, sends it SIGINT once `ready(line)` is true of a line it
    printed, and returns (exit status, the rest of its stdout, its stderr)."""
    # A shell that starts a job in the background (`scripts/test.sh &`, nohup) hands it SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler in the child: the child sets
    # the one an interactive interpreter or a notebook kernel has before running the script.
    prelude = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    child = subprocess.Popen(
        [sys.executable, "-c", prelude + script, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    try:
        for line in child.stdout:
            if ready(line):
                break
        child.send_signal(signal.SIGINT)
        out, stderr = child.communicate(timeout=timeout)
    finally:
        child.kill()
    return child.returncode, out, stderr


def small_digits(mnist_test):
    images, labels = mnist_test
    rows = np.concatenate([np.flatnonzero(labels == c)[:20] for c in range(6)])
    return (images[rows, 0] * 255).round().astype(np.uint8), labels[rows]


@pytest.mark.conv_precision
def test_ctrl_c_stops_training_with_a_checkpoint_that_resume_continues(tmp_path, mnist_test):
    """SIGINT sent to a process training from Python: hib.train raises KeyboardInterrupt after the
    step under way, the run holds a checkpoint at that step (not the last regular one, every 1,000
    steps), and hib.resume continues from it to a new total."""
    x, y = small_digits(mnist_test)
    np.savez(tmp_path / "digits.npz", images=x, labels=y)
    run = tmp_path / "run"
    reported = []

    def started(line):
        reported.append(tuple(map(int, line.split())))
        return reported[-1][0] >= 5

    returncode, _, stderr = interrupt_when(started, TRAIN_UNTIL_INTERRUPTED, run, tmp_path / "digits.npz", timeout=120)
    assert reported and reported[-1][0] >= 5, stderr
    seen = reported[-1][0]
    assert {planned for _, planned in reported} == {20000}, reported
    assert returncode != 0 and "KeyboardInterrupt" in stderr, stderr
    assert "PanicException" not in stderr and "hedge could not complete" not in stderr, stderr
    state = json.loads((run / "state.json").read_text())
    stopped = state["step"]
    assert seen <= stopped < 1000, f"stopped at {stopped} after step {seen} was reported"
    # The run continues from that step (hedge's own resume) to a new total.
    reported = []
    resumed = hib.resume(
        run, steps=stopped + 10, progress=lambda s, p, loss: reported.append((s, p)), progress_every=1
    )
    assert reported[0] == (stopped + 1, stopped + 10) and reported[-1] == (stopped + 10, stopped + 10)
    assert json.loads((resumed.path / "state.json").read_text())["step"] == stopped + 10
    logged = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert logged == sorted(set(logged)) and logged[-1] == stopped + 10, logged[-5:]


@pytest.mark.conv_precision
def test_progress_is_a_tqdm_bar_when_tqdm_is_installed_and_the_line_otherwise(tmp_path, mnist_test, monkeypatch):
    """progress=True draws tqdm's bar (tqdm.auto: a widget in a notebook) where tqdm imports, and
    hedge's own line on stderr where it does not."""
    from hedge.hib import _print_progress, _progress_reporter, _TqdmProgress

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails: no tqdm
    assert _progress_reporter(True) is _print_progress
    calls = []

    class FakeTqdm:
        def __init__(self, total, **kwargs):
            self.total, self.n, self.closed = total, 0, False
            calls.append(self)

        def update(self, k):
            self.n += k

        def set_postfix(self, **kwargs):
            self.postfix = kwargs

        def close(self):
            self.closed = True

    class FakeModule:
        tqdm = FakeTqdm

    monkeypatch.setitem(sys.modules, "tqdm.auto", FakeModule)
    reporter = _progress_reporter(True)
    assert isinstance(reporter, _TqdmProgress)
    assert _progress_reporter(False) is None
    x, y = small_digits(mnist_test)
    config = {"model": "point", "dim": 2, "steps": 20, "batch": "independent", "batch_pairs": 8}
    hib.train(tmp_path / "run", data=(x, y), config=config, unseen_classes=2, progress=True, progress_every=5)
    (bar,) = calls
    assert (bar.total, bar.n, bar.closed) == (20, 20, True)
    assert float(bar.postfix["loss"]) > 0


LOOP_UNTIL_INTERRUPTED = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from hedge import active

    i = np.arange(300)
    X = np.stack([np.sin(i * (j + 3) * 0.37) * 2 for j in range(3)], axis=1)
    y = 3 * X[:, 0] - 2 * X[:, 1] + X[:, 2] ** 2 + 10
    settings = {"budget": 200, "model": {"steps": 300}}

    def announce(predictive):  # MaxEnt that says which round it is in
        print(len(predictive), flush=True)
        return predictive.entropy

    try:
        active.pool_loop(X, y, announce, settings=settings)
    except active.LoopInterrupted as e:
        rest = active.pool_loop(X, y, announce, settings=settings, resume=e.state)
        whole = active.pool_loop(X, y, announce, settings=settings)
        print(json.dumps({
            "before": [r.test_rmse for r in e.rounds],
            "after": [r.test_rmse for r in rest],
            "whole": [r.test_rmse for r in whole],
            "labels": [r.labels for r in e.rounds + rest],
            "state_round": e.state["round"],
        }))
    """
)


def test_ctrl_c_stops_the_active_loop_after_a_round_and_its_state_resumes_it():
    """SIGINT to a process running hedge.active.pool_loop: LoopInterrupted (a KeyboardInterrupt)
    comes back with the rounds run so far and the state, and pool_loop(resume=state) runs exactly
    the rounds an uninterrupted loop runs after them."""
    rounds = []

    def two_rounds_in(line):  # the acquisition prints once per round
        rounds.append(line)
        return len(rounds) >= 2

    returncode, out, stderr = interrupt_when(two_rounds_in, LOOP_UNTIL_INTERRUPTED)
    assert returncode == 0, stderr
    result = json.loads(out.strip().splitlines()[-1])
    before, after, whole = result["before"], result["after"], result["whole"]
    assert len(before) >= 1 and len(after) >= 1 and len(before) == result["state_round"], result
    assert before + after == whole, result
    assert result["labels"] == list(range(20, 201, 10)), result["labels"]
