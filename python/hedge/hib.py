"""Hedged instance embeddings (Oh et al., ICLR 2019) inside your own PyTorch code.

Every function takes and returns ``torch.Tensor`` objects -- the very tensors, on their device,
no copy -- and records its operations on torch's autograd graph, so a loss from here
back-propagates into your network. Samples are drawn from torch's own generator:
``torch.manual_seed`` makes them reproducible.

Shapes: ``B`` rows (pairs or inputs), ``C`` mixture components (1 for a Gaussian), ``D``
embedding dimensions, ``K`` samples. Means and variances are float32 ``[B, C, D]`` (or ``[B, D]``
for one component); a point embedding has ``variance=None``. Mixtures have equal weights, as in
the paper.

A training step::

    head = hedge.hib.MatchHead()                  # a, b of p(m) = sigmoid(-a||z1 - z2|| + b)
    optimiser = torch.optim.Adam([*net.parameters(), *head.parameters()], lr=1e-3)
    mean1, var1 = net(x1); mean2, var2 = net(x2)  # [B, C, D] each
    loss = hedge.hib.vib_loss(head, hedge.hib.Embedding(mean1, var1),
                              hedge.hib.Embedding(mean2, var2), is_match, samples=8, beta=1e-4)
    loss.total.backward(); optimiser.step()
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional, Sequence, Union

import numpy as np
import torch

from ._native import _hedge
from .metrics import ErrorDetection, ReliabilityDiagram

__all__ = [
    "Embedding",
    "MatchHead",
    "VibLoss",
    "contrastive",
    "csd",
    "csd_loss",
    "csd_match_probability",
    "closed_form_match_probability",
    "closed_form_self_mismatch",
    "closed_forms",
    "log_match",
    "match_probability",
    "match_probability_quadrature",
    "self_mismatch",
    "soft_contrastive",
    "vib_loss",
    # End to end: runs, embeddings, identification.
    "IdentityMatch",
    "Index",
    "ProbeResult",
    "Run",
    "SearchSummary",
    "resume",
    "train",
]


@dataclass
class Embedding:
    """A batch of embeddings: points, Gaussians or equal-weight mixtures (diagonal covariance).

    Attributes:
        mean: ``[B, C, D]`` (or ``[B, D]``) float32.
        variance: the same shape, positive; ``None`` for point embeddings.
        eta: optional ``[B]`` self-mismatch, filled in by :func:`hedge.hib.Run.embed`.
    """

    mean: torch.Tensor
    variance: Optional[torch.Tensor] = None
    eta: Optional[torch.Tensor] = None

    @property
    def weights(self) -> torch.Tensor:
        """``[B, C]`` mixture weights (equal: 1/C)."""
        b, c = self.mean.shape[0], (self.mean.shape[1] if self.mean.dim() == 3 else 1)
        return torch.full((b, c), 1.0 / c, dtype=self.mean.dtype, device=self.mean.device)

    def __len__(self) -> int:
        return self.mean.shape[0]


class MatchHead(torch.nn.Module):
    """The learnable soft threshold p(m | z1, z2) = sigmoid(-a ||z1 - z2|| + b) of Section 2.1.

    ``a = softplus(a_raw) > 0``. The defaults are hedge's (``HibConfig``: a = 1, b = 0).
    """

    def __init__(self, init_a: float = 1.0, init_b: float = 0.0):
        super().__init__()
        if not init_a > 0:
            raise ValueError(f"init_a = {init_a} must be > 0 (a is a scale)")
        a_raw = init_a if init_a > 20 else math.log(math.expm1(init_a))
        self.a_raw = torch.nn.Parameter(torch.tensor(a_raw, dtype=torch.float32))
        self.b = torch.nn.Parameter(torch.tensor(float(init_b), dtype=torch.float32))

    @property
    def a(self) -> torch.Tensor:
        """The scale a = softplus(a_raw)."""
        return torch.nn.functional.softplus(self.a_raw)


class VibLoss(NamedTuple):
    """Scalar tensors of one VIB step (Eq. 8), averaged over the pairs."""

    total: torch.Tensor
    """pair + beta * kl: what to minimise."""
    pair: torch.Tensor
    """the mean soft contrastive loss."""
    kl: torch.Tensor
    """the mean of KL(p(z1|x1) || N(0, I)) + KL(p(z2|x2) || N(0, I))."""


def _scalars(head: MatchHead) -> tuple[torch.Tensor, torch.Tensor]:
    """The head's ``(a_raw, b)``, read from its parameter registry where it has one: attribute
    lookup of a module's parameter runs ``nn.Module.__getattr__`` in Python (about 0.5 us each,
    a tenth of ``match_probability``'s overhead at B = 1)."""
    params = getattr(head, "_parameters", None)
    if params is not None and "a_raw" in params and "b" in params:
        return params["a_raw"], params["b"]
    return head.a_raw, head.b


def log_match(head: MatchHead, z1: torch.Tensor, z2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Monte-Carlo ``log p(m | x1, x2)`` and ``log(1 - p)`` from samples (Eq. 5), log-sum-exp stable.

    Args:
        z1: ``[B, K1, D]`` samples of the first embeddings.
        z2: ``[B, K2, D]`` samples of the second.
    Returns:
        two ``[B]`` tensors.
    """
    return _hedge.hib_log_match(z1, z2, head.a_raw, head.b)


def match_probability(head: MatchHead, e1: Embedding, e2: Embedding, samples: int = 8) -> torch.Tensor:
    """p(m | x1, x2) by Monte Carlo with ``samples`` draws from each embedding (Eq. 5).

    Samples are stratified: ``samples / C`` from every component, so ``samples`` must be a
    multiple of each side's C. Returns ``[B]``.
    """
    a_raw, b = _scalars(head)
    return _hedge.hib_match_probability(e1.mean, e1.variance, e2.mean, e2.variance, a_raw, b, samples)


def match_probability_quadrature(head: MatchHead, e1: Embedding, e2: Embedding, points: int = 16) -> torch.Tensor:
    """p(m | x1, x2) without sampling noise: z1 - z2 is a Gaussian mixture, so the expectation is
    a Gauss--Hermite product rule with ``points`` nodes per dimension (``points ** D`` nodes in
    all, at most 2**20). Returns ``[B]``."""
    return _hedge.hib_match_probability_quadrature(
        e1.mean, e1.variance, e2.mean, e2.variance, head.a_raw, head.b, points
    )


def self_mismatch(head: MatchHead, e: Embedding, samples: int = 8) -> torch.Tensor:
    """Self-mismatch uncertainty eta(x) = 1 - p(m | x, x) (Eq. 9) from two independent sample
    sets of ``samples`` each. Returns ``[B]``; a point embedding gets 1 - sigmoid(b)."""
    return _hedge.hib_self_mismatch(e.mean, e.variance, head.a_raw, head.b, samples)


def soft_contrastive(log_p: torch.Tensor, log_not_p: torch.Tensor, is_match: torch.Tensor) -> torch.Tensor:
    """The soft contrastive loss per pair (Eq. 3): ``-log p`` for matches, ``-log(1 - p)``
    otherwise. ``log_p``, ``log_not_p``: ``[B]``; ``is_match``: ``[B]`` bool. Returns ``[B]``."""
    return _hedge.hib_soft_contrastive(log_p, log_not_p, is_match)


def csd(e1: Embedding, e2: Embedding) -> torch.Tensor:
    """PCME++'s closed-form sampled distance (Chun, ICLR 2024) of aligned rows:
    ``E||z1 - z2||^2 = ||mu1 - mu2||^2 + sum(sigma1^2 + sigma2^2)``. A mixture is scored by its
    mean and total variance (the same expectation); a point embedding by the squared distance.
    Differentiable. Returns ``[B]``."""
    return _hedge.hib_csd(e1.mean, e1.variance, e2.mean, e2.variance)


def csd_match_probability(head: MatchHead, e1: Embedding, e2: Embedding) -> torch.Tensor:
    """PCME++'s match probability ``sigmoid(-a * csd(e1, e2) + b)``: exact, no sampling.
    Differentiable. Returns ``[B]``."""
    return _hedge.hib_csd_match_probability(e1.mean, e1.variance, e2.mean, e2.variance, head.a_raw, head.b)


def closed_forms() -> list:
    """The names of the registered losses' closed-form match probabilities (``"csd"``, ...):
    what :func:`closed_form_match_probability` takes and what ``evaluate`` reports as the
    estimator of a model trained with such a loss."""
    return list(_hedge.hib_closed_forms())


def closed_form_match_probability(form: str, head: MatchHead, e1: Embedding, e2: Embedding) -> torch.Tensor:
    """``p(m | x1, x2)`` of aligned rows under the registered closed form ``form`` (one of
    :func:`closed_forms`): exact, no sampling, differentiable. What a model trained with that
    loss is scored, ranked and searched by."""
    return _hedge.hib_closed_form_match_probability(
        form, e1.mean, e1.variance, e2.mean, e2.variance, head.a_raw, head.b
    )


def closed_form_self_mismatch(form: str, head: MatchHead, e: Embedding) -> torch.Tensor:
    """Self-mismatch ``1 - p(m | x, x)`` under the registered closed form ``form``:
    exact, differentiable."""
    return _hedge.hib_closed_form_self_mismatch(form, e.mean, e.variance, head.a_raw, head.b)


def csd_loss(head: MatchHead, e1: Embedding, e2: Embedding, is_match: torch.Tensor) -> torch.Tensor:
    """The CSD loss per pair: binary cross-entropy of ``csd_match_probability`` (``-log p`` for
    matches, ``-log(1 - p)`` otherwise, from log-sigmoids). ``is_match``: ``[B]`` bool.
    Differentiable; what ``train(settings={"loss": "csd"})`` minimises (plus beta * KL).
    Returns ``[B]``."""
    return _hedge.hib_csd_loss(e1.mean, e1.variance, e2.mean, e2.variance, is_match, head.a_raw, head.b)


def contrastive(z1: torch.Tensor, z2: torch.Tensor, is_match: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """The contrastive loss of point embeddings (Eq. 1): ``||z1 - z2||^2`` for matches,
    ``max(margin - ||z1 - z2||, 0)^2`` otherwise. ``z1``, ``z2``: ``[B, D]``. Returns ``[B]``."""
    return _hedge.hib_contrastive(z1, z2, is_match, margin)


def vib_loss(
    head: MatchHead,
    e1: Embedding,
    e2: Embedding,
    is_match: torch.Tensor,
    samples: int = 8,
    beta: float = 1e-4,
) -> VibLoss:
    """The VIB embedding loss of Eq. 8 for ``B`` pairs: the soft contrastive loss of the
    Monte-Carlo match probability (``samples`` draws per input) plus ``beta`` times the KL
    divergence of each embedding from N(0, I) (closed form for a Gaussian, Monte Carlo for a
    mixture, zero for points).

    Draw order (for reproducing it by hand): ``e1``'s samples, then ``e2``'s, each as
    ``torch.randn(B, C, samples // C, D)`` scaled by the standard deviation and shifted by
    the mean.
    """
    total, pair, kl = _hedge.hib_vib_loss(
        e1.mean, e1.variance, e2.mean, e2.variance, is_match, head.a_raw, head.b, samples, beta
    )
    return VibLoss(total, pair, kl)


# --- End to end: train a run, embed with it, identify against a gallery. ----------------------

PathLike = Union[str, "os.PathLike[str]"]


def _print_progress(step: int, planned: int, loss: float) -> None:
    """The progress report without tqdm: one line on stderr, redrawn in place."""
    width = 30
    done = int(width * step / max(planned, 1))
    end = "\n" if step >= planned else ""
    print(f"\r[{'#' * done}{'.' * (width - done)}] {step}/{planned} steps  loss {loss:.4f}", end=end, file=sys.stderr, flush=True)


class _TqdmProgress:
    """The progress report as a tqdm bar (tqdm.auto: a widget in a notebook, text on a terminal)."""

    def __init__(self, tqdm):
        self._tqdm = tqdm
        self._bar = None

    def __call__(self, step: int, planned: int, loss: float) -> None:
        if self._bar is None:
            self._bar = self._tqdm(total=planned, unit="step", dynamic_ncols=True)
        if self._bar.total != planned:
            self._bar.total = planned
        self._bar.update(step - self._bar.n)
        self._bar.set_postfix(loss=f"{loss:.4f}", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _progress_reporter(progress):
    """`progress` as the callable the trainer calls: True: a tqdm bar when tqdm is installed, else
    a line on stderr; False: none; a callable: itself."""
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return _print_progress
        return _TqdmProgress(tqdm)
    return progress or None


def _train_reporting(train, progress):
    """Runs `train(callback)` with `progress`'s reporter and closes a bar it opened."""
    reporter = _progress_reporter(progress)
    try:
        return train(reporter)
    finally:
        if isinstance(reporter, _TqdmProgress):
            reporter.close()


def _images_npz(images, labels, path: pathlib.Path) -> pathlib.Path:
    """Arrays as the image .npz hedge reads (``images`` [N, H, W] or [N, C, H, W], uint8 or float
    in [0, 1]; ``labels`` integers), written to ``path`` (refused if it exists)."""
    if path.exists():
        raise FileExistsError(f"{path} exists; hedge writes the arrays there and never replaces a file it did not write")
    images = images.detach().cpu().numpy() if isinstance(images, torch.Tensor) else np.asarray(images)
    labels = labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    if images.dtype not in (np.uint8, np.float32, np.float64):
        raise ValueError(f"`images` are {images.dtype}; give uint8 (0-255) or float (0-1) pixels")
    if labels.dtype.kind not in "iu":
        raise ValueError(f"`labels` are {labels.dtype}; give integer identities (np.unique(names, return_inverse=True))")
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, images=images, labels=labels.astype(np.int64))
    os.replace(tmp, path)
    return path


def train(
    out: PathLike,
    *,
    data: Union[PathLike, tuple, None] = None,
    config: Union[dict, PathLike, None] = None,
    unseen_classes: Optional[int] = None,
    seen_test_fraction: float = 0.2,
    split_seed: int = 0,
    device: str = "cpu",
    overwrite: bool = False,
    progress: Union[bool, Callable[[int, int, float], None]] = True,
    progress_every: int = 10,
) -> "Run":
    """Trains a HIB model into the new run directory ``out`` -- what ``hedge hib train`` does.

    Args:
        data: an image folder (``ROOT/<identity>/<image>.png``), an image ``.npz`` (``images``,
            ``labels``), or a tuple ``(images, labels)`` of arrays (saved beside the run as
            ``<out>.images.npz`` first, so the run can be evaluated and resumed); ``None``:
            N-digit MNIST from ``HEDGE_DATA_DIR``.
        config: HibConfig settings as a dict (``{"model": "mog", "components": 2, "dim": 2,
            "steps": 2000, ...}``; unnamed ones keep hedge's defaults) or a TOML recipe file.
        unseen_classes, seen_test_fraction, split_seed: how a user's images are split (whole
            identities held out as ``test_unseen``; a share of each other one as ``test_seen``).
        progress: ``True`` draws a bar (tqdm's when tqdm is installed, else a line on stderr),
            ``False`` nothing, or a callable ``progress(step, planned_steps, loss)`` called every
            ``progress_every`` steps.

    Ctrl-C (KeyboardInterrupt) stops training after the step under way, with a checkpoint there,
    and re-raises: :func:`resume` continues the run from that step.
    """
    out = pathlib.Path(out)
    if isinstance(data, tuple):
        if len(data) != 2:
            raise ValueError("`data` as arrays is a tuple (images, labels)")
        data = _images_npz(data[0], data[1], out.with_name(out.name + ".images.npz"))
    settings = config_file = None
    if isinstance(config, dict):
        settings = json.dumps(config)
    elif config is not None:
        config_file = str(config)
    path = _train_reporting(
        lambda callback: _hedge.hib_train(
            str(out),
            settings,
            config_file,
            None if data is None else str(data),
            unseen_classes,
            float(seen_test_fraction),
            int(split_seed),
            device,
            bool(overwrite),
            callback,
            int(progress_every),
        ),
        progress,
    )
    return Run(path)


def resume(
    run: PathLike,
    *,
    steps: Optional[int] = None,
    device: str = "cpu",
    progress: Union[bool, Callable[[int, int, float], None]] = True,
    progress_every: int = 10,
) -> "Run":
    """Continues the run directory ``run`` from its last checkpoint, with its own settings, to its
    planned steps (``steps``: a new total) -- what ``hedge hib train --resume`` does, after a
    Ctrl-C in :func:`train` or a process that died. ``progress`` as for :func:`train`."""
    path = _train_reporting(
        lambda callback: _hedge.hib_resume(
            str(run), None if steps is None else int(steps), device, callback, int(progress_every)
        ),
        progress,
    )
    return Run(path)


class Run:
    """A trained run directory (``hedge hib train`` or :func:`train`) opened for embedding."""

    def __init__(self, path: PathLike):
        self._run = _hedge.hib_open_run(str(path))
        self.path = pathlib.Path(self._run.path)
        #: The run's HibConfig settings (as its config files write them).
        self.config: dict = json.loads(self._run.config_json)
        #: ``[channels, height, width]`` of the images the network takes.
        self.input_shape: tuple = tuple(self._run.input_shape)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, model={self.config.get('model')!r}, dim={self.config.get('dim')})"

    def match_head(self) -> MatchHead:
        """The trained match head (a, b) as a :class:`MatchHead` (for :func:`match_probability`)."""
        a_raw, b = self._run.match_head()
        head = MatchHead()
        with torch.no_grad():
            head.a_raw.fill_(a_raw)
            head.b.fill_(b)
        return head

    def embed(self, images, samples: int = 8, seed: int = 0, batch: int = 1000, device: str = "cpu") -> Embedding:
        """Embeds images ``[N, C, H, W]`` (or ``[N, H, W]``; float in [0, 1] or uint8) with the
        run's network: means and variances ``[N, C', D]`` and eta ``[N]`` from ``samples`` draws
        seeded by ``seed`` -- the numbers ``hedge hib embed`` gives for the same images."""
        x = images.detach().cpu().numpy() if isinstance(images, torch.Tensor) else np.asarray(images)
        if x.dtype == np.uint8:
            x = x.astype(np.float32) / 255.0
        x = np.ascontiguousarray(x, dtype=np.float32)
        if x.ndim == 3:
            x = x[:, None]
        if x.ndim != 4:
            raise ValueError(f"`images` must be [N, C, H, W] or [N, H, W]; got shape {x.shape}")
        if x.size and (x.min() < 0 or x.max() > 1):
            raise ValueError(f"`images` pixels lie in [{x.min()}, {x.max()}]; float images must lie in [0, 1]")
        mean, variance, eta = self._run.embed(x, samples, seed, batch, device)
        return Embedding(mean, variance, eta)

    def embed_split(self, split: str, samples: int = 8, device: str = "cpu", corrupt: bool = False,
                    weights: Optional[Union[str, os.PathLike]] = None) -> tuple:
        """A split of the run's own data (``train``, ``test``, ``test_seen``, ``test_unseen``)
        embedded as ``hedge hib embed --split`` does: ``(Embedding, labels)``. ``corrupt=True``
        embeds the evaluation's occluded twins (``--variant corrupt``); ``weights``, a weights file of the
        same model such as the run's ``model_best.safetensors`` (the validation's choice), replaces
        its final weights (``--weights``)."""
        mean, variance, eta, labels = self._run.embed_split(split, samples, device, corrupt,
                                                            None if weights is None else os.fspath(weights))
        return Embedding(mean, variance, eta), np.asarray(labels, dtype=np.int64)

    def evaluate(self, split: Optional[str] = None, estimator: str = "mc", samples: int = 8,
                 points: Optional[int] = None, repeats: int = 10, candidates: int = 100, metrics: Sequence[str] = (),
                 exclude_metrics: Sequence[str] = (), per_class: Optional[int] = None,
                 device: str = "cpu", weights: Optional[Union[str, os.PathLike]] = None,
                 validation_digits: Optional[str] = None) -> "EvalReport":
        """The run evaluated on ``split`` (default: its protocol's main test split) exactly as
        ``hedge hib eval --json`` does -- verification AP, KNN, ECE and the reliability diagram,
        AURC of identification and verification, AUROC/AUPRC of the uncertainty for the errors --
        without writing into the run. ``estimator``: ``"mc"`` (``samples`` draws, ``repeats``
        repeats) or ``"quadrature"`` (``points`` nodes per axis; default: the measured count for
        the run's D). A model trained with a loss that has its own closed form (:func:`closed_forms`) is scored by it.
        ``weights``: another weights file of the run's model, such as ``model_best.safetensors``
        (``--weights``); ``validation_digits``: with ``split="validation"``, ``"shared"`` or
        ``"unused"`` digit images (``--validation-digits``)."""
        text = self._run.evaluate(split, estimator, samples, points, repeats, candidates, ",".join(metrics),
                                  ",".join(exclude_metrics), per_class, device,
                                  None if weights is None else os.fspath(weights), validation_digits)
        return EvalReport.from_json(text)


@dataclass(frozen=True)
class CleanCorrupt:
    """A metric on clean images and on their occluded (corrupt) twins (None: not computed)."""

    clean: Optional[float]
    corrupt: Optional[float]


@dataclass(frozen=True)
class MeanStd:
    """A mean over repeats and its sample standard deviation (n - 1; 0 for one repeat)."""

    mean: float
    std: float
    n: int


@dataclass(frozen=True)
class EvalReport:
    """One model's evaluation (``eval.json``, or :meth:`Run.evaluate`): the numbers every model
    is compared by; ``json`` keeps the whole report as written."""

    model: str
    split: str
    match_estimator: dict
    repeats: int
    verification_ap: CleanCorrupt
    knn_accuracy: CleanCorrupt
    ece: Optional[float]
    reliability: Optional[ReliabilityDiagram]
    """p(match) of the clean and corrupt verification pairs of every repeat."""
    aurc: Optional[float]
    """Identification (KNN) AURC, probes rejected by eta (a point model: nearest-neighbour distance)."""
    aurc_uncertainty: Optional[str]
    error_auroc: Optional[MeanStd]
    """AUROC of that uncertainty for the identification errors."""
    error_auprc: Optional[MeanStd]
    verification_aurc: Optional[MeanStd]
    """Selective verification, decisions rejected by their own confidence 1 - max(p, 1 - p)."""
    verification_aurc_eta: Optional[MeanStd]
    """The same decisions rejected by the pair's larger eta (stochastic models)."""
    mean_eta: CleanCorrupt
    json: dict

    @classmethod
    def from_json(cls, text: str) -> "EvalReport":
        d = json.loads(text)

        def twin(x: dict) -> CleanCorrupt:
            return CleanCorrupt(x.get("clean"), x.get("corrupt"))

        def spread(x) -> Optional[MeanStd]:
            return MeanStd(**x) if x else None

        reliability = d.get("reliability")
        return cls(
            model=d["model"],
            split=d["split"],
            match_estimator=d["match_estimator"],
            repeats=d["repeats"],
            verification_ap=twin(d["verification_ap"]),
            knn_accuracy=twin(d["knn_accuracy"]),
            ece=d.get("ece"),
            reliability=ReliabilityDiagram.from_dict(reliability) if reliability else None,
            aurc=d.get("aurc"),
            aurc_uncertainty=d.get("aurc_uncertainty"),
            error_auroc=spread(d.get("error_auroc")),
            error_auprc=spread(d.get("error_auprc")),
            verification_aurc=spread(d.get("verification_aurc")),
            verification_aurc_eta=spread(d.get("verification_aurc_eta")),
            mean_eta=twin(d["mean_eta"]),
            json=d,
        )


@dataclass(frozen=True)
class IdentityMatch:
    identity: str
    probability: float
    """p(m | probe, the identity's best gallery image)."""
    gallery_item: str


@dataclass(frozen=True)
class ProbeResult:
    """The answer for one probe (a row of ``hib search``'s search.jsonl)."""

    probe: str
    eta: float
    margin: float
    abstained: bool
    matches: list
    label: Optional[str] = None
    prediction: Optional[str] = None
    """the top identity; None when the probe abstained."""

    @classmethod
    def from_json(cls, text: str) -> "ProbeResult":
        d = json.loads(text)
        d["matches"] = [IdentityMatch(**m) for m in d["matches"]]
        return cls(**d)


@dataclass(frozen=True)
class SelectiveQuality:
    """Selective identification ranked by one uncertainty score ('eta' or 'margin'): the area
    under its risk-coverage curve (lower is better) and its error detection (None where every
    answer is right or every one wrong)."""

    score: str
    aurc: float
    error_detection: Optional[ErrorDetection]

    @classmethod
    def from_dict(cls, d: dict) -> "SelectiveQuality":
        detection = d.get("error_detection")
        return cls(d["score"], d["aurc"], ErrorDetection(**detection) if detection else None)


@dataclass(frozen=True)
class SearchSummary:
    """Numbers over a labelled probe set (``hib search``'s summary.json)."""

    probes: int
    known_identity: int
    accuracy: float
    top_k_accuracy: float
    top_k: int
    rule: dict
    target_risk: float
    coverage: float
    accuracy_answered: Optional[float]
    ann_recall_at_10: Optional[float]
    probes_per_second: float
    candidate_recall_at_10: Optional[float] = None
    """For a model scored by a closed form whose candidates are found by the means (``mls``):
    the share of the closed form's exact top 10 among the proposed candidates; None otherwise."""
    selective: list = field(default_factory=list)
    """[SelectiveQuality] by eta (stochastic models) and by margin."""
    undefined: list = field(default_factory=list)

    @classmethod
    def from_json(cls, text: str) -> "SearchSummary":
        d = json.loads(text)
        d["selective"] = [SelectiveQuality.from_dict(q) for q in d.get("selective", [])]
        return cls(**d)


def _image_source(images, labels, folder: pathlib.Path, name: str) -> str:
    """A path hedge reads images from: the given folder/.npz, or arrays saved to one."""
    if labels is None:
        return str(images)
    return str(_images_npz(images, labels, folder / f"{name}.npz"))


class Index:
    """An identification index (``hedge hib index``): a gallery embedded with a run's model,
    an ANN graph over the means, and the abstention rule for a target risk."""

    def __init__(self, path: PathLike):
        self.path = pathlib.Path(path)
        #: The index's manifest (identities, calibration, settings).
        self.manifest: dict = json.loads((self.path / "index.json").read_text()) if (self.path / "index.json").exists() else {}

    @classmethod
    def build(
        cls,
        run: Union[Run, PathLike],
        gallery,
        out: PathLike,
        *,
        gallery_labels=None,
        validation=None,
        validation_labels=None,
        target_risk: float = 0.05,
        abstain_by: str = "eta",
        candidates: int = 100,
        top_k: int = 5,
        max_connections: int = 16,
        ef_construction: int = 200,
        ef_search: int = 200,
        overwrite: bool = False,
        device: str = "cpu",
        candidates_by: Optional[str] = None,
    ) -> "Index":
        """Indexes ``gallery`` (a folder or image ``.npz``; or image arrays with
        ``gallery_labels``) into the new folder ``out``; the eta threshold for ``target_risk``
        is chosen on ``validation`` probes (or leave-one-out on the gallery without them).

        ``candidates_by`` is where the ANN stage finds candidates: ``"means"`` (Euclidean
        distance between component means) or the name of a closed form with an exact search
        space, such as ``"csd"`` (PCME++'s closed-form sampled distance, which counts both
        sides' variances); ``None`` picks the exact space of the model's loss where it has one,
        means otherwise."""
        run_path = run.path if isinstance(run, Run) else pathlib.Path(run)
        with tempfile.TemporaryDirectory(prefix="hedge-index-") as tmp:
            g = _image_source(gallery, gallery_labels, pathlib.Path(tmp), "gallery")
            v = None if validation is None else _image_source(validation, validation_labels, pathlib.Path(tmp), "validation")
            manifest = _hedge.hib_build_index(
                str(run_path), g, str(out), v, float(target_risk), abstain_by, int(candidates), int(top_k),
                int(max_connections), int(ef_construction), int(ef_search), bool(overwrite), device,
                candidates_by,
            )
        index = cls(out)
        index.manifest = json.loads(manifest)
        return index

    def search(self, probes, labels=None, *, target_risk: Optional[float] = None, run: Optional[PathLike] = None, device: str = "cpu"):
        """Identifies ``probes`` (a folder or image ``.npz``; or image arrays with ``labels``):
        ``(list of ProbeResult, SearchSummary)``, the same as ``hedge hib search``."""
        with tempfile.TemporaryDirectory(prefix="hedge-search-") as tmp:
            p = _image_source(probes, labels, pathlib.Path(tmp), "probes")
            rows, summary = _hedge.hib_search(
                str(self.path), p, target_risk, None if run is None else str(run), device
            )
        return [ProbeResult.from_json(r) for r in rows], SearchSummary.from_json(summary)
