#!/usr/bin/env python3
"""An independent plain-PyTorch implementation of hedged instance embeddings on N-digit MNIST.

It shares no code with hedge: its own reading of the MNIST IDX files and the N-digit index
tables, its own pair sampling, its own occlusion (Appendix A of Oh et al.), its own network,
loss and optimiser set-up, and its own evaluation (scikit-learn's average precision, KNN in
NumPy over PyTorch distance blocks). It exists to check that hedge's training equals a plain
implementation at equal steps, and as the bench on which the paper's unstated details are tried
as levers (`reference/hib/README.md`).

    HEDGE_DATA_DIR=../shared/data .venv/bin/python reference/hib/hib_reference.py \
        --model gaussian --recipe plain --steps 20000 --seed 0 --out results/hib/reference/runs/ref-plain-mog1-seed0

A run directory holds `config.json` (every setting), `command.txt`, `metrics.jsonl` (training
loss lines and evaluations), `model.safetensors` (final weights), `reference_eval.json` (the final
evaluation) and `checkpoints/resume.pt` (what a resumed run needs; rerunning the same command
continues from it).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from sklearn.metrics import average_precision_score

DIGIT = 28
# Fixed seeds of the evaluation, independent of the training seed: every model of a comparison
# is scored on the same test pairs and the same occluded test images.
EVAL_PAIR_SEED = 20_190_501
EVAL_OCCLUSION_SEED = 20_190_502
EVAL_SAMPLE_SEED = 20_190_503
VALIDATION_SEED = 20_190_504


# ---------------------------------------------------------------- settings


@dataclasses.dataclass
class Settings:
    digits: int = 2
    dim: int = 2
    model: str = "gaussian"  # point | gaussian (one Gaussian, "MoG-1")
    recipe: str = "plain"  # plain | hedge: the defaults below it fills in
    steps: int = 20_000
    seed: int = 0
    beta: float = 1e-4
    samples: int = 8
    occlusion: float = 0.2
    # Filled in from the recipe unless given on the command line.
    batch: str = ""  # pairs | grouped
    pairs: int = 128  # batch = pairs: pairs a step
    match_share: float = 0.5  # batch = pairs: share of matching pairs
    group_classes: int = 16  # batch = grouped: classes a step
    group_size: int = 16  # batch = grouped: images of each class
    optimizer: str = ""  # adam | adamw | sgd
    lr: float = 0.0
    momentum: float = 0.9  # sgd only
    weight_decay: float = 0.0  # adamw: decoupled, conv and head weights only
    warmup: int = 0
    schedule: str = ""  # constant | cosine
    # The paper's unstated details, as levers.
    channels: tuple[int, int] = (32, 64)
    hidden: int = 0  # a hidden fully connected layer (ReLU) before the D outputs; 0: none
    init: str = "torch"  # torch (PyTorch's defaults) | glorot (TensorFlow's: Glorot uniform, zero bias)
    variance: str = "softplus"  # softplus(raw) + 1e-6 | exp (raw is log-variance)
    pair_loss: str = "log-mean"  # log-mean: -log of the K x K average (Eq. 3 with Eq. 5) | mean-log: Eq. 8 as written
    precision: str = "f32"  # f32 | bf16 (the convolutions only, f32 weights kept)
    channels_last: bool = False  # images and conv weights in NHWC memory (oneDNN's preferred layout)
    # Share of every class's training images held out (seeded) to choose levers on, never the test split.
    validation_fraction: float = 0.0
    threads: int = 2
    eval_every: int = 0
    checkpoint_every: int = 1000
    log_every: int = 100

    def resolve(self) -> "Settings":
        plain = dict(batch="pairs", optimizer="adam", lr=1e-3, warmup=0, schedule="constant", weight_decay=0.0)
        hedge = dict(batch="grouped", optimizer="adamw", lr=1e-2, warmup=500, schedule="cosine", weight_decay=0.1)
        defaults = {"plain": plain, "hedge": hedge}.get(self.recipe)
        if defaults is None:
            raise SystemExit(f"--recipe {self.recipe!r}: choose plain or hedge")
        for key, value in defaults.items():
            if not getattr(self, key):
                setattr(self, key, value)
        checks = [
            (self.model in ("point", "gaussian"), "--model: point or gaussian"),
            (self.batch in ("pairs", "grouped"), "--batch: pairs or grouped"),
            (self.optimizer in ("adam", "adamw", "sgd"), "--optimizer: adam, adamw or sgd"),
            (self.schedule in ("constant", "cosine"), "--schedule: constant or cosine"),
            (self.init in ("torch", "glorot"), "--init: torch or glorot"),
            (self.variance in ("softplus", "exp"), "--variance: softplus or exp"),
            (self.pair_loss in ("log-mean", "mean-log"), "--pair-loss: log-mean or mean-log"),
            (self.precision in ("f32", "bf16"), "--precision: f32 or bf16"),
            (0.0 < self.match_share < 1.0, "--match-share: between 0 and 1"),
            (self.steps >= 1 and self.lr > 0, "--steps and --lr must be positive"),
            (self.warmup < self.steps, "--warmup must be below --steps"),
            (self.digits in (2, 3) and self.dim >= 1, "--digits 2 or 3, --dim at least 1"),
            (0.0 <= self.validation_fraction <= 0.5, "--validation-fraction: between 0 and 0.5"),
        ]
        for ok, message in checks:
            if not ok:
                raise SystemExit(message)
        return self

    def lr_at(self, step: int) -> float:
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        if self.schedule == "cosine":
            progress = (step - self.warmup) / max(1, self.steps - self.warmup)
            return self.lr * 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.lr


# ---------------------------------------------------------------- data


def read_idx(path: Path) -> np.ndarray:
    """An MNIST IDX file (gzip): the magic number's third byte is the type, the fourth the rank."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise SystemExit(f"{path}: not an unsigned-byte IDX file")
    rank = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(rank))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank).reshape(shape)


@dataclasses.dataclass
class DigitTable:
    """Images of one N-digit table: digit indices into one MNIST split, and a class per image."""

    digits: np.ndarray  # [images, N] indices into `pixels`
    labels: np.ndarray  # [images] class (the number)
    pixels: np.ndarray  # [mnist images, 28, 28] uint8
    digit_labels: np.ndarray  # [mnist images] the MNIST label of each digit image


def load_table(data_dir: Path, digits: int, split: str) -> DigitTable:
    name = f"dataset_mnist_{digits}_instance_{split}.npz"
    path = data_dir / "n-digit-mnist" / "standard_datasets" / name
    if not path.exists():
        raise SystemExit(f"{path} not found: set HEDGE_DATA_DIR to the folder holding n-digit-mnist/ and mnist/")
    table = np.load(path)
    ids = table["image_ids"]  # [classes, per class, N]
    numbers = table["chosen_numbers"]
    mnist = "train" if split == "train" else "t10k"
    pixels = read_idx(data_dir / "mnist" / f"{mnist}-images-idx3-ubyte.gz")
    mnist_labels = read_idx(data_dir / "mnist" / f"{mnist}-labels-idx1-ubyte.gz")
    # The table's own integrity rule: digit p of a class's number is the MNIST label at slot p.
    powers = 10 ** np.arange(digits - 1, -1, -1)
    expected = (numbers[:, None] // powers[None, :]) % 10
    if not (mnist_labels[ids] == expected[:, None, :]).all():
        raise SystemExit(f"{path}: digit labels disagree with chosen_numbers")
    classes, per_class, _ = ids.shape
    return DigitTable(
        digits=ids.reshape(classes * per_class, digits).astype(np.int64),
        labels=np.repeat(numbers.astype(np.int64), per_class),
        pixels=pixels,
        digit_labels=mnist_labels,
    )


def compose(table: DigitTable, rows: np.ndarray, occlusion: float, rng: np.random.Generator) -> np.ndarray:
    """Images `rows` of the table, each digit occluded with probability `occlusion` by a black
    square of side L ~ U{0, ..., 28} placed uniformly so that it fits (Appendix A).

    Returns float32 [len(rows), 1, 28, 28 N] in [0, 1].
    """
    n, digits = len(rows), table.digits.shape[1]
    cells = table.pixels[table.digits[rows]].astype(np.float32) / 255.0  # [n, N, 28, 28]
    if occlusion > 0:
        occluded = rng.random((n, digits)) < occlusion
        side = rng.integers(0, DIGIT + 1, size=(n, digits))
        top = np.floor(rng.random((n, digits)) * (DIGIT - side + 1)).astype(np.int64)
        left = np.floor(rng.random((n, digits)) * (DIGIT - side + 1)).astype(np.int64)
        grid = np.arange(DIGIT)
        in_rows = (grid >= top[..., None]) & (grid < (top + side)[..., None])  # [n, N, 28]
        in_cols = (grid >= left[..., None]) & (grid < (left + side)[..., None])
        patch = in_rows[..., :, None] & in_cols[..., None, :] & occluded[..., None, None]
        cells[patch] = 0.0
    return cells.transpose(0, 2, 1, 3).reshape(n, 1, DIGIT, DIGIT * digits)


def pair_batch(labels: np.ndarray, by_class: list[np.ndarray], s: Settings, rng: np.random.Generator):
    """Image rows and (left, right, match) positions of one step.

    pairs: `s.pairs` pairs, a `match_share` of them matching (first image at random, the second
    another image of its class, or of another class); images left then right.
    grouped: `group_classes` classes of `group_size` images; every within-class pair and as many
    cross-class pairs drawn at random.
    """
    if s.batch == "pairs":
        n_match = int(round(s.pairs * s.match_share))
        first = rng.integers(0, len(labels), size=s.pairs)
        second = np.empty_like(first)
        for k, i in enumerate(first):
            members = by_class[labels[i]]
            if k < n_match:
                j = i
                while j == i:
                    j = members[rng.integers(len(members))]
            else:
                c = labels[i]
                while c == labels[i]:
                    c = rng.integers(len(by_class))
                j = by_class[c][rng.integers(len(by_class[c]))]
            second[k] = j
        match = np.arange(s.pairs) < n_match
        order = rng.permutation(s.pairs)
        first, second, match = first[order], second[order], match[order]
        rows = np.concatenate([first, second])
        return rows, np.arange(s.pairs), np.arange(s.pairs, 2 * s.pairs), match
    classes = rng.choice(len(by_class), size=s.group_classes, replace=False)
    rows = np.concatenate([rng.choice(by_class[c], size=s.group_size, replace=False) for c in classes])
    group = np.repeat(np.arange(s.group_classes), s.group_size)
    left, right = np.triu_indices(len(rows), k=1)
    same = group[left] == group[right]
    pos_l, pos_r = left[same], right[same]
    n = len(pos_l)
    neg_l = rng.integers(0, len(rows), size=4 * n)
    neg_r = rng.integers(0, len(rows), size=4 * n)
    keep = group[neg_l] != group[neg_r]
    neg_l, neg_r = neg_l[keep][:n], neg_r[keep][:n]
    left = np.concatenate([pos_l, neg_l])
    right = np.concatenate([pos_r, neg_r])
    match = np.concatenate([np.ones(n, bool), np.zeros(len(neg_l), bool)])
    return rows, left, right, match


# ---------------------------------------------------------------- model


class Embedder(torch.nn.Module):
    """conv 5x5 -> ReLU -> max-pool 2, twice ("same" padding), then a fully connected layer to
    the embedding: D means, and for a Gaussian D variances."""

    def __init__(self, s: Settings):
        super().__init__()
        c1, c2 = s.channels
        self.conv1 = torch.nn.Conv2d(1, c1, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(c1, c2, 5, padding=2)
        features = c2 * (DIGIT // 4) * (DIGIT * s.digits // 4)
        self.hidden = torch.nn.Linear(features, s.hidden) if s.hidden else None
        width = s.hidden or features
        self.out = torch.nn.Linear(width, s.dim * (2 if s.model == "gaussian" else 1))
        self.gaussian = s.model == "gaussian"
        self.dim = s.dim
        self.variance_kind = s.variance
        self.bf16 = s.precision == "bf16"
        # The match head: p(m | z1, z2) = sigmoid(-a ||z1 - z2|| + b), a = softplus(a_raw) > 0.
        self.a_raw = torch.nn.Parameter(torch.tensor(math.log(math.e - 1.0)))  # a = 1
        self.b = torch.nn.Parameter(torch.tensor(0.0))
        if s.init == "glorot":
            for layer in [self.conv1, self.conv2, self.hidden, self.out]:
                if layer is not None:
                    torch.nn.init.xavier_uniform_(layer.weight)
                    torch.nn.init.zeros_(layer.bias)

    def conv(self, x: torch.Tensor, layer: torch.nn.Conv2d) -> torch.Tensor:
        if not self.bf16:
            return layer(x)
        w, b = layer.weight.to(torch.bfloat16), layer.bias.to(torch.bfloat16)
        return F.conv2d(x.to(torch.bfloat16), w, b, padding=2).float()

    def forward(self, x: torch.Tensor):
        h = F.max_pool2d(F.relu(self.conv(x, self.conv1)), 2)
        h = F.max_pool2d(F.relu(self.conv(h, self.conv2)), 2).flatten(1)
        if self.hidden is not None:
            h = F.relu(self.hidden(h))
        o = self.out(h)
        if not self.gaussian:
            return o, None
        mean, raw = o[:, : self.dim], o[:, self.dim :]
        variance = raw.exp() if self.variance_kind == "exp" else F.softplus(raw) + 1e-6
        return mean, variance

    def a(self) -> torch.Tensor:
        return F.softplus(self.a_raw)

    def decayed(self) -> list[torch.nn.Parameter]:
        return [m.weight for m in [self.conv1, self.conv2, self.hidden, self.out] if m is not None]


def draw(mean: torch.Tensor, variance: torch.Tensor | None, k: int, generator=None) -> torch.Tensor:
    """[B, K, D] samples (a point embedding: [B, 1, D])."""
    if variance is None:
        return mean[:, None, :]
    noise = torch.randn((mean.shape[0], k, mean.shape[1]), generator=generator, dtype=mean.dtype)
    return mean[:, None, :] + variance.sqrt()[:, None, :] * noise


def pair_logits(model: Embedder, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """[B, K1, K2] logits -a ||z1_i - z2_j|| + b."""
    distance = ((z1[:, :, None, :] - z2[:, None, :, :]).pow(2).sum(-1) + 1e-12).sqrt()
    return -model.a() * distance + model.b


def loss_of(model: Embedder, s: Settings, mean, variance, left, right, match, generator):
    z = draw(mean, variance, s.samples, generator)
    logits = pair_logits(model, z[left], z[right])
    sign = torch.where(match, 1.0, -1.0)[:, None, None]
    log_p = F.logsigmoid(sign * logits)  # log p(m = m_hat | z1, z2) for every sample pair
    if s.pair_loss == "log-mean":
        pair = -(torch.logsumexp(log_p.flatten(1), 1) - math.log(log_p[0].numel()))
    else:
        pair = -log_p.flatten(1).mean(1)
    kl = torch.zeros(())
    if variance is not None:
        # KL(N(mu, diag v) || N(0, I)) per image, summed over the two images of each pair.
        per_image = 0.5 * (variance + mean.pow(2) - 1.0 - variance.log()).sum(1)
        kl = (per_image[left] + per_image[right]).mean()
    return pair.mean() + s.beta * kl, pair.mean(), kl


# ---------------------------------------------------------------- evaluation


@torch.no_grad()
def embed(model: Embedder, images: np.ndarray) -> tuple[torch.Tensor, torch.Tensor | None]:
    model.eval()
    means, variances = [], []
    for start in range(0, len(images), 1000):
        m, v = model(torch.from_numpy(images[start : start + 1000]))
        means.append(m)
        variances.append(v)
    model.train()
    return torch.cat(means), (torch.cat(variances) if variances[0] is not None else None)


@torch.no_grad()
def match_scores(model: Embedder, z: torch.Tensor, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """p(m | x1, x2) of pairs, from per-image samples z [n, K, D] (the K x K average, Eq. 5)."""
    out = []
    for start in range(0, len(left), 2000):
        l, r = left[start : start + 2000], right[start : start + 2000]
        out.append(torch.sigmoid(pair_logits(model, z[l], z[r])).mean((1, 2)))
    return torch.cat(out).double().numpy()


@torch.no_grad()
def nearest(model: Embedder, zp: torch.Tensor, zg: torch.Tensor, k: int) -> np.ndarray:
    """The k + 1 gallery items with the highest match probability for every probe, best first.

    Every probe is scored against the whole gallery: -distance for points (monotone in p), the
    K x K Monte-Carlo match probability for distributions. [probes, k + 1] gallery rows.
    """
    # Written into one array made up front: small results kept from every block would sit
    # between the blocks' large temporaries and fragment glibc's heap (it grew to 23 GB).
    out = np.empty((len(zp), k + 1), dtype=np.int64)
    chunk = 8 if zp.shape[1] > 1 else 500
    for start in range(0, len(zp), chunk):
        p = zp[start : start + chunk]  # [c, K, D]
        if zp.shape[1] == 1:
            score = -torch.cdist(p[:, 0, :], zg[:, 0, :])
        else:
            d = torch.cdist(p.reshape(-1, p.shape[2]), zg.reshape(-1, zg.shape[2]))  # [c K, n K]
            d = d.view(p.shape[0], p.shape[1], zg.shape[0], zg.shape[1])
            score = torch.sigmoid(-model.a() * d + model.b).mean((1, 3))
        out[start : start + len(p)] = torch.topk(score, k + 1, dim=1).indices.numpy()
    return out


def knn_accuracy(order: np.ndarray, labels: np.ndarray, k: int, leave_out_self: bool) -> float:
    """Majority KNN: a probe is right when more than k/2 of its k neighbours have its class.
    Probe i and gallery item i are the same image (or its occluded twin)."""
    rows = []
    for i, row in enumerate(order):
        row = row[row != i][:k] if leave_out_self else row[:k]
        rows.append(row)
    neighbours = np.stack(rows)
    votes = (labels[neighbours] == labels[:, None]).sum(1)
    return float((votes > k / 2).mean())


def evaluate(model: Embedder, s: Settings, test: DigitTable, test_occlusions: tuple[float, ...] = (1.0,)) -> dict:
    """Table 1's four numbers (and the second KNN reading) on the test table.

    Verification: 5,000 matching and 5,000 non-matching pairs (seeded), AP of p(m | x1, x2), on
    clean images and with both images occluded. KNN (K = 5, majority): each clean image a probe
    against a clean gallery and against the occluded twin gallery; `loo` leaves the probe's own
    image (twin) out, `kept` keeps it.
    """
    rng = np.random.default_rng(EVAL_PAIR_SEED)
    labels = test.labels
    by_class = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    index_of_class = {int(c): i for i, c in enumerate(np.unique(labels))}
    left = rng.integers(0, len(labels), size=10_000)
    right = np.empty_like(left)
    for k, i in enumerate(left):
        members = by_class[index_of_class[int(labels[i])]]
        if k < 5_000:
            j = i
            while j == i:
                j = members[rng.integers(len(members))]
        else:
            j = i
            while labels[j] == labels[i]:
                j = rng.integers(len(labels))
        right[k] = j
    is_match = labels[left] == labels[right]
    all_rows = np.arange(len(labels))
    clean = compose(test, all_rows, 0.0, rng)
    generator = torch.Generator().manual_seed(EVAL_SAMPLE_SEED)
    k_samples = s.samples if s.model == "gaussian" else 1
    mean, variance = embed(model, clean)
    z_clean = draw(mean, variance, k_samples, generator)
    result = {"ap_clean": float(average_precision_score(is_match, match_scores(model, z_clean, left, right)))}
    probes = nearest(model, z_clean, z_clean, 5)
    result["knn_clean_loo"] = knn_accuracy(probes, labels, 5, True)
    result["knn_clean_kept"] = knn_accuracy(probes, labels, 5, False)
    for p in test_occlusions:
        tag = "" if p == 1.0 else f"_p{round(p * 100)}"
        corrupt = compose(test, all_rows, p, np.random.default_rng(EVAL_OCCLUSION_SEED))
        mean_c, var_c = embed(model, corrupt)
        z_corrupt = draw(mean_c, var_c, k_samples, generator)
        scores = match_scores(model, z_corrupt, left, right)
        result[f"ap_corrupt{tag}"] = float(average_precision_score(is_match, scores))
        order = nearest(model, z_clean, z_corrupt, 5)
        result[f"knn_corrupt{tag}_loo"] = knn_accuracy(order, labels, 5, True)
        result[f"knn_corrupt{tag}_kept"] = knn_accuracy(order, labels, 5, False)
    return result


# ---------------------------------------------------------------- training


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def cut_metrics_to_checkpoint(path: Path, step: int, steps: int) -> None:
    """Keeps the lines of `path` a run resumed at checkpoint `step` (of `steps`) does not write
    again: those logged after the checkpoint, and the final evaluation (written after the last
    checkpoint; a rerun of a finished run evaluates again), are dropped."""
    kept = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        final_eval = "eval" in record and record["step"] == steps
        if record["step"] <= step and not final_eval:
            kept.append(line + "\n")
    write_atomically(path, "".join(kept))


def train(s: Settings, out: Path, data_dir: Path, overwrite: bool) -> dict:
    torch.set_num_threads(s.threads)
    out.mkdir(parents=True, exist_ok=True)
    resume_path = out / "checkpoints" / "resume.pt"
    config_path = out / "config.json"
    config = dataclasses.asdict(s)
    if config_path.exists() and not overwrite:
        # A setting added since the run began counts as its default there.
        defaults = {f.name: f.default for f in dataclasses.fields(Settings)}
        stored = {**json.loads(json.dumps(defaults)), **json.loads(config_path.read_text())}
        if stored != json.loads(json.dumps(config)):
            raise SystemExit(f"{config_path} holds other settings: choose another --out or pass --overwrite")
    write_atomically(config_path, json.dumps(config, indent=2) + "\n")
    write_atomically(out / "command.txt", shlex.join([sys.executable, *sys.argv]) + "\n")
    train_table = load_table(data_dir, s.digits, "train")
    test_table = load_table(data_dir, s.digits, "test")
    classes = np.unique(train_table.labels)
    label_index = np.searchsorted(classes, train_table.labels)  # classes as 0..C-1
    by_class = [np.flatnonzero(label_index == c) for c in range(len(classes))]
    validation_table = None
    if s.validation_fraction > 0:
        # The same images held out whatever the training seed, so levers are ranked on one set.
        pick = np.random.default_rng(VALIDATION_SEED)
        held, kept = [], []
        for members in by_class:
            order = pick.permutation(members)
            cut = int(round(len(members) * s.validation_fraction))
            held.append(order[:cut])
            kept.append(np.sort(order[cut:]))
        by_class = kept
        rows = np.concatenate(held)
        # Each held-out image redrawn on MNIST training digits no training image uses (same
        # digit labels): new digit images, as the test split has, not crops training has seen.
        used = np.zeros(len(train_table.pixels), bool)
        used[train_table.digits[np.concatenate(by_class)].ravel()] = True
        digits = train_table.digits[rows].copy()
        for d in range(10):
            pool = np.flatnonzero((train_table.digit_labels == d) & ~used)
            slots = train_table.digit_labels[digits] == d
            digits[slots] = pick.choice(pool, size=int(slots.sum()), replace=len(pool) < slots.sum())
        validation_table = DigitTable(digits, train_table.labels[rows], train_table.pixels, train_table.digit_labels)

    torch.manual_seed(s.seed)
    model = Embedder(s)
    if s.channels_last:
        model = model.to(memory_format=torch.channels_last)
    head = [model.a_raw, model.b]
    decayed = {id(p) for p in model.decayed()}
    rest = [p for p in model.parameters() if id(p) not in decayed and all(p is not h for h in head)]
    if s.optimizer == "sgd":
        optimiser = torch.optim.SGD(model.parameters(), lr=s.lr, momentum=s.momentum)
    elif s.optimizer == "adam":
        optimiser = torch.optim.Adam(model.parameters(), lr=s.lr)
    else:
        groups = [
            {"params": model.decayed(), "weight_decay": s.weight_decay},
            {"params": rest + head, "weight_decay": 0.0},
        ]
        optimiser = torch.optim.AdamW(groups, lr=s.lr)
    step, seconds = 0, 0.0
    metrics_path = out / "metrics.jsonl"
    if resume_path.exists() and not overwrite:
        state = torch.load(resume_path, weights_only=True)
        model.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        step, seconds = int(state["step"]), float(state["seconds"])
        print(f"resuming {out} at step {step}", file=sys.stderr)
        if metrics_path.exists():
            cut_metrics_to_checkpoint(metrics_path, step, s.steps)
    elif metrics_path.exists():
        metrics_path.unlink()
    metrics = metrics_path.open("a")
    started = time.time()
    window = []
    while step < s.steps:
        tick = time.perf_counter()
        rng = np.random.default_rng([s.seed, step])
        generator = torch.Generator().manual_seed(s.seed * 1_000_003 + step)
        rows, left, right, match = pair_batch(label_index, by_class, s, rng)
        images = torch.from_numpy(compose(train_table, rows, s.occlusion, rng))
        if s.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        for group in optimiser.param_groups:
            group["lr"] = s.lr_at(step)
        mean, variance = model(images)
        total, pair, kl = loss_of(model, s, mean, variance, left, right, torch.from_numpy(match), generator)
        optimiser.zero_grad(set_to_none=True)
        total.backward()
        optimiser.step()
        step += 1
        elapsed = time.perf_counter() - tick
        seconds += elapsed
        window.append(elapsed)
        if step % s.log_every == 0 or step == s.steps:
            rate = len(rows) * len(window) / sum(window)
            line = {"step": step, "loss": total.detach().item(), "pair": pair.detach().item(), "kl": float(kl.detach()), "images_per_s": rate}
            metrics.write(json.dumps(line) + "\n")
            metrics.flush()
            print(f"step {step}/{s.steps} loss {line['loss']:.4f} {rate:.0f} img/s", file=sys.stderr)
            window = []
        if s.eval_every and step % s.eval_every == 0 and step < s.steps:
            metrics.write(json.dumps({"step": step, "eval": evaluate(model, s, test_table)}) + "\n")
            metrics.flush()
        if step % s.checkpoint_every == 0 or step == s.steps:
            resume_path.parent.mkdir(exist_ok=True)
            state = {"model": model.state_dict(), "optimiser": optimiser.state_dict(), "step": step, "seconds": seconds}
            torch.save(state, resume_path.with_name("resume.pt.tmp"))
            os.replace(resume_path.with_name("resume.pt.tmp"), resume_path)
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(out / "model.safetensors.tmp"))
    os.replace(out / "model.safetensors.tmp", out / "model.safetensors")
    result = evaluate(model, s, test_table, (1.0, 0.2))
    report = {"step": step, "training_seconds": seconds, "wall_seconds_this_call": time.time() - started, **result}
    if validation_table is not None:
        report["validation"] = evaluate(model, s, validation_table)
    metrics.write(json.dumps({"step": step, "eval": result}) + "\n")
    metrics.close()
    write_atomically(out / "reference_eval.json", json.dumps(report, indent=2) + "\n")
    return report


def bench(s: Settings, data_dir: Path, steps: int, warmup: int = 5) -> dict:
    """Training images/s of `steps` timed steps after `warmup` untimed ones (no evaluation, no
    files): the peer of `hedge bench train` for speed comparisons."""
    torch.set_num_threads(s.threads)
    table = load_table(data_dir, s.digits, "train")
    classes = np.unique(table.labels)
    label_index = np.searchsorted(classes, table.labels)
    by_class = [np.flatnonzero(label_index == c) for c in range(len(classes))]
    torch.manual_seed(s.seed)
    model = Embedder(s)
    if s.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimiser = torch.optim.Adam(model.parameters(), lr=s.lr)
    images_seen, seconds = 0, 0.0
    for step in range(warmup + steps):
        rng = np.random.default_rng([s.seed, step])
        rows, left, right, match = pair_batch(label_index, by_class, s, rng)
        images = torch.from_numpy(compose(table, rows, s.occlusion, rng))
        tick = time.perf_counter()
        if s.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        mean, variance = model(images)
        total, _, _ = loss_of(model, s, mean, variance, left, right, torch.from_numpy(match), None)
        optimiser.zero_grad(set_to_none=True)
        total.backward()
        optimiser.step()
        if step >= warmup:
            seconds += time.perf_counter() - tick
            images_seen += len(rows)
    return {"images_per_second": images_seen / seconds, "steps": steps, "images_per_step": images_seen // steps,
            "threads": s.threads, "precision": s.precision, "channels_last": s.channels_last}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    for name, field in fields.items():
        flag = "--" + name.replace("_", "-")
        if name == "channels":
            parser.add_argument(flag, type=int, nargs=2, default=None, metavar=("C1", "C2"))
        elif isinstance(field.default, bool):
            parser.add_argument(flag, action="store_true", default=None)
        else:
            kind = type(field.default)
            parser.add_argument(flag, type=kind, default=None)
    parser.add_argument("--out", type=Path, help="run directory (a rerun resumes it)")
    parser.add_argument("--bench", type=int, metavar="STEPS", help="time this many training steps and print images/s")
    parser.add_argument("--overwrite", action="store_true", help="start the run directory's training afresh")
    args = parser.parse_args(argv)
    settings = Settings()
    for name in fields:
        value = getattr(args, name)
        if value is not None:
            setattr(settings, name, tuple(value) if name == "channels" else value)
    settings.resolve()
    data_dir = Path(os.environ.get("HEDGE_DATA_DIR", "data"))
    if args.bench:
        print(json.dumps(bench(settings, data_dir, args.bench)))
        return
    if args.out is None:
        raise SystemExit("--out: the run directory is required (or --bench STEPS for a speed measurement)")
    report = train(settings, args.out, data_dir, args.overwrite)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
