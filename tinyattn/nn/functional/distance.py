"""Norm-based functions: ``F.normalize``, ``F.cosine_similarity``, ``F.pairwise_distance``.

All three are compositions of ``linalg.vector_norm``, ``clamp`` and elementwise ops, so
first and second derivatives come from those ops.
"""

from __future__ import annotations

import numpy as np

from ... import linalg
from ...foundations.type_names import type_name
from ...ops._accumulation import accumulates_in_float32
from ...ops._util import normalize_dim
from ...ops.elementwise.unary import clamp
from ...tensor_api.tensor import Tensor

__all__ = ["normalize", "cosine_similarity", "pairwise_distance"]


def _check_tensor(x, op: str, arg: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be a Tensor, not {type_name(x)}")
    return x


def _broadcast_pair(x1: Tensor, x2: Tensor, op: str) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    except ValueError:
        raise RuntimeError(
            f"{op}: x1 of shape {list(x1.shape)} and x2 of shape {list(x2.shape)} are not "
            "broadcastable"
        ) from None


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """``y = x / max(||x||_p, eps)``, the norm along ``dim``; same shape as ``x``.

    Gradient, with ``n = ||x||_p`` (p = 2) where ``n > eps``: ``d input = (g - y sum(g y)) / n``
    (the sum along ``dim``); where ``n < eps`` the denominator is the constant ``eps``:
    ``d input = g / eps``.

    Composes: linalg.vector_norm, clamp, Tensor.__truediv__
    """
    _check_tensor(input, "normalize", "input")
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported by tinyattn")
    d = normalize_dim(dim, input.ndim, "normalize")
    norm = linalg.vector_norm(input, p, dim=d, keepdim=True)
    return input / clamp(norm, min=eps)


@accumulates_in_float32("x1", "x2")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (torch's formula).

    ``y = sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim``; ``x1``, ``x2``
    broadcast together to (*, D, *), ``y`` is that shape without ``dim``. As torch, the
    clamp to ``eps`` is applied to the norms' values but not recorded: the gradient flows
    through the unclamped norms. Gradient (norms above eps, ``u = x1 / ||x1||``,
    ``v = x2 / ||x2||``): ``d x1 = g (v - y u) / ||x1||``, ``d x2 = g (u - y v) / ||x2||``.
    """
    _check_tensor(x1, "cosine_similarity", "x1")
    _check_tensor(x2, "cosine_similarity", "x2")
    shape = _broadcast_pair(x1, x2, "cosine_similarity")
    d = normalize_dim(dim, len(shape), "cosine_similarity")
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    n1 = _clamped_value(linalg.vector_norm(x1, 2, dim=d, keepdim=True), eps)
    n2 = _clamped_value(linalg.vector_norm(x2, 2, dim=d, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(d)


def _clamped_value(norm: Tensor, eps: float) -> Tensor:
    """``max(norm, eps)`` as a value, with the gradient of ``norm`` itself (torch clamps its
    norms in place under no_grad)."""
    lifted = np.maximum(norm._data, eps) - norm._data
    return norm + Tensor._make(lifted.astype(norm._data.dtype, copy=False))


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """``y = ||x1 - x2 + eps||_p`` along the last dim; ``x1``, ``x2`` broadcast to (*, D).

    Shapes: (*, D) -> (*) (or (*, 1) with ``keepdim``). Gradient (p = 2, ``r = x1 - x2 +
    eps``): ``d x1 = g r / y``, ``d x2 = -d x1``.

    Composes: linalg.vector_norm, Tensor.__sub__
    """
    _check_tensor(x1, "pairwise_distance", "x1")
    _check_tensor(x2, "pairwise_distance", "x2")
    shape = _broadcast_pair(x1, x2, "pairwise_distance")
    if len(shape) == 0:
        raise IndexError("pairwise_distance: expected inputs with at least 1 dimension, got 0-d")
    return linalg.vector_norm(x1 - x2 + eps, p, dim=-1, keepdim=keepdim)
