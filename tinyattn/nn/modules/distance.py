"""``CosineSimilarity`` and ``PairwiseDistance``: thin over ``F`` (torch's arguments)."""

from __future__ import annotations

from ...tensor_api.tensor import Tensor
from .. import functional as F
from .module import Module


class CosineSimilarity(Module):
    """Cosine similarity of ``x1`` and ``x2`` along ``dim`` (default 1), norms clamped to ``eps``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """See :func:`F.cosine_similarity`. With ``u = x1 / ||x1||``, ``v = x2 / ||x2||``,
        ``y = sum(u v)``: ``d x1 = g (v - y u) / ||x1||``, ``d x2 = g (u - y v) / ||x2||``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """See :func:`F.pairwise_distance`. For p = 2, ``r = x1 - x2 + eps``:
        ``d x1 = g r / ||r||``, ``d x2 = -d x1``."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
