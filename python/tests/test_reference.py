"""The independent plain-PyTorch reference (reference/hib/hib_reference.py) against hedge on the
pieces both compute from the same inputs: the match log-probabilities and loss of given samples,
and the two KNN readings on a hand-worked gallery. The reference shares no code with hedge, so
agreement here is two implementations of the paper agreeing."""
import importlib.util
import math
import pathlib
import sys

import numpy as np
import torch

from hedge import hib

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hib_reference", ROOT / "reference" / "hib" / "hib_reference.py")
ref = importlib.util.module_from_spec(_spec)
sys.modules["hib_reference"] = ref  # its dataclasses look their module up there
_spec.loader.exec_module(ref)


class _Head:
    """What the reference's pair_logits reads of its model: a() and b."""

    def __init__(self, a: float, b: float):
        self._a, self.b = torch.tensor(a), torch.tensor(b)

    def a(self):
        return self._a


def test_hedge_and_the_reference_give_the_same_soft_contrastive_loss_of_given_samples():
    g = torch.Generator().manual_seed(4)
    z1, z2 = torch.randn(6, 8, 2, generator=g), torch.randn(6, 8, 2, generator=g) * 1.5
    is_match = torch.tensor([True, False, True, False, True, False])
    head = hib.MatchHead(init_a=1.7, init_b=0.4)
    log_p, log_not_p = hib.log_match(head, z1, z2)
    ours = hib.soft_contrastive(log_p, log_not_p, is_match)
    logits = ref.pair_logits(_Head(1.7, 0.4), z1, z2)
    sign = torch.where(is_match, 1.0, -1.0)[:, None, None]
    theirs = -(torch.logsumexp(torch.nn.functional.logsigmoid(sign * logits).flatten(1), 1) - math.log(64))
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    # Eq. 8 as written (the mean of the log) is another number for distributions (Jensen:
    # never below the log of the mean), one of the levers of issue 79.
    mean_log = -torch.nn.functional.logsigmoid(sign * logits).flatten(1).mean(1)
    assert (mean_log >= theirs - 1e-6).all() and (mean_log - theirs).max() > 1e-3


def test_both_knn_readings_agree_with_hedges_hand_worked_case():
    # Three tight classes of three points on a line, one unit apart (hedge-embed's
    # the_kept_gallery_counts_the_probe_as_its_own_neighbour): kept 1, left out 0.
    x = torch.tensor([c + d for c in (0.0, 1.0, 2.0) for d in (0.0, 0.01, 0.02)])
    z = torch.stack([x, torch.zeros_like(x)], 1)[:, None, :]
    labels = np.repeat(np.arange(3), 3)
    order = ref.nearest(_Head(1.0, 0.0), z, z, 5)
    assert ref.knn_accuracy(order, labels, 5, leave_out_self=False) == 1.0
    assert ref.knn_accuracy(order, labels, 5, leave_out_self=True) == 0.0


def test_the_references_occlusion_blacks_out_one_square_inside_each_digit():
    rng = np.random.default_rng(0)
    pixels = np.full((4, 28, 28), 255, np.uint8)
    table = ref.DigitTable(np.array([[0, 1], [2, 3]] * 50), np.zeros(100, np.int64), pixels, np.arange(4))
    images = ref.compose(table, np.arange(100), 1.0, rng)
    assert images.shape == (100, 1, 28, 56)
    for cell in (images[:, 0, :, :28], images[:, 0, :, 28:]):
        for digit in cell:
            black = np.argwhere(digit == 0)
            if len(black) == 0:
                continue  # a side of length 0
            rows, cols = black[:, 0], black[:, 1]
            side = rows.max() - rows.min() + 1
            assert side == cols.max() - cols.min() + 1 and len(black) == side * side


def test_a_hedge_run_loaded_into_the_reference_network_embeds_as_hedge_does():
    """reference/hib/cross_evaluate.py scores hedge's weights with the reference's evaluation;
    that is only meaningful if its parameter mapping is right: the reference's network holding a
    committed hedge run's weights gives hedge's own means and variances on the same images (both
    convolve in float32 here; a swapped or misread layer moves them by far more than rounding)."""
    spec = importlib.util.spec_from_file_location("cross_evaluate", ROOT / "reference" / "hib" / "cross_evaluate.py")
    cross = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cross)
    run_dir = ROOT / "results" / "hib" / "reference" / "runs" / "hedge-plain-mog1-seed0"
    model = cross.reference_network(run_dir, precision="f32")
    images = np.random.default_rng(0).random((6, 28, 56), dtype=np.float32)
    with torch.no_grad():
        ref_mean, ref_variance = model(torch.from_numpy(images)[:, None])
    ours = hib.Run(run_dir).embed(images)
    mean, variance = ours.mean.reshape(6, -1), ours.variance.reshape(6, -1)
    scale = mean.abs().max()
    assert torch.allclose(ref_mean, mean, atol=0.02 * scale, rtol=0), (ref_mean, mean)
    assert torch.allclose(ref_variance, variance, atol=0.02 * variance.max(), rtol=0), (ref_variance, variance)


def test_a_reference_run_renamed_for_hedge_has_exactly_a_hedge_runs_parameters():
    """`cross_evaluate.py --hedge-eval` hands hedge a reference run's weights under hedge's names;
    hedge loads them only if every name and shape is one of its own network's, each once, and the
    renaming must be the exact inverse of the forward mapping (the other direction is tested
    above by embedding)."""
    from safetensors.torch import load_file

    spec = importlib.util.spec_from_file_location("cross_evaluate", ROOT / "reference" / "hib" / "cross_evaluate.py")
    cross = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cross)
    runs = ROOT / "results" / "hib" / "reference" / "runs"
    theirs = load_file(str(runs / "ref-plain-mog1-seed0" / "model.safetensors"))
    ours = load_file(str(runs / "hedge-plain-mog1-seed0" / "model.safetensors"))
    renamed = cross.as_hedge_names(theirs)
    assert {k: tuple(v.shape) for k, v in renamed.items()} == {k: tuple(v.shape) for k, v in ours.items()}
    for name, value in renamed.items():
        assert torch.equal(value, theirs[cross.NAMES[name]]), name


def test_a_resumed_reference_run_keeps_only_the_metrics_its_checkpoint_covers(tmp_path):
    """A reference run killed between checkpoints logged steps its resume trains again; the
    resume must drop them (and a finished run's final evaluation, which a rerun writes again),
    or metrics.jsonl holds those steps twice."""
    import json

    path = tmp_path / "metrics.jsonl"
    lines = [
        {"step": 100, "loss": 1.0},
        {"step": 200, "loss": 0.9},
        {"step": 200, "eval": {"ap_clean": 0.5}},
        {"step": 300, "loss": 0.8},  # after the checkpoint at 200
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ref.cut_metrics_to_checkpoint(path, 200, 1000)
    assert [json.loads(line) for line in path.read_text().splitlines()] == lines[:3]
    # A finished run (checkpoint at its last step) drops its final evaluation only.
    final = [{"step": 1000, "loss": 0.5}, {"step": 1000, "eval": {"ap_clean": 0.9}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines[:3] + final))
    ref.cut_metrics_to_checkpoint(path, 1000, 1000)
    assert [json.loads(line) for line in path.read_text().splitlines()] == lines[:3] + final[:1]
