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

import math
from dataclasses import dataclass
from typing import NamedTuple, Optional

import torch

from . import _hedge

__all__ = [
    "Embedding",
    "MatchHead",
    "VibLoss",
    "contrastive",
    "log_match",
    "match_probability",
    "match_probability_quadrature",
    "self_mismatch",
    "soft_contrastive",
    "vib_loss",
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
    return _hedge.hib_match_probability(e1.mean, e1.variance, e2.mean, e2.variance, head.a_raw, head.b, samples)


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
