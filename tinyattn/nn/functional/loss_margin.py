"""Margin and embedding losses with torch's rules: soft margin, margin ranking, hinge and
cosine embedding, multi-label soft margin, multi-class and multi-label margin, triplet.

Compositions of differentiable ops written as torch writes them, so each hinge's kink
takes torch's side (``clamp`` passes the gradient at 0 where torch uses ``clamp_min``; a
``where(z > 0, ...)`` gives 0 there where torch's kernels test ``z > 0``).
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...ops.elementwise.arithmetic import where
from ...ops.elementwise.unary import clamp
from ...tensor_api.tensor import Tensor
from .activation import logsigmoid
from .distance import pairwise_distance
from .loss import _as_array, _check_broadcastable, _check_reduction, _reduce
from .loss_elementwise import _legacy, _same_shape, _tensors, _weighted

__all__ = [
    "soft_margin_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


# -- margin and embedding losses ---------------------------------------------------------------


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))``, target in {-1, 1}.

    Gradient: ``d input = -g t sigmoid(-t x)``, ``d target = -g x sigmoid(-t x)``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "soft_margin_loss")
    _tensors("soft_margin_loss", input=input, target=target)
    _check_broadcastable(input, target, "soft_margin_loss")
    return _reduce(
        ops.elementwise.unary.log1p(ops.elementwise.unary.exp(-input * target)), reduction
    )


def margin_ranking_loss(
    input1, input2, target, margin: float = 0, size_average=None, reduce=None, reduction="mean"
) -> Tensor:
    """``max(0, -target (input1 - input2) + margin)``; all three the same shape.

    Gradient, where the hinge is active (``>= 0``, torch's clamp_min): ``d input1 = -g t``,
    ``d input2 = g t``, ``d target = -g (input1 - input2)``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "margin_ranking_loss")
    _tensors("margin_ranking_loss", input1=input1, input2=input2, target=target)
    _same_shape("margin_ranking_loss", input1=input1, input2=input2, target=target)
    return _reduce(clamp(-target * (input1 - input2) + margin, min=0), reduction)


def hinge_embedding_loss(
    input, target, margin: float = 1.0, size_average=None, reduce=None, reduction="mean"
) -> Tensor:
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1`` (torch's form:
    the two terms are added, each masked by ``target != -1`` / ``target != 1``).

    Gradient: ``d input = g`` (target 1), ``-g`` where target -1 and ``margin - x >= 0``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "hinge_embedding_loss")
    _tensors("hinge_embedding_loss", input=input, target=target)
    _check_broadcastable(input, target, "hinge_embedding_loss")
    hinge = where(target != 1, clamp(margin - input, min=0), 0.0)
    own = where(target != -1, input, 0.0)
    return _reduce(hinge + own, reduction)


def cosine_embedding_loss(
    input1, input2, target, margin: float = 0, size_average=None, reduce=None, reduction="mean"
) -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where -1.

    Shapes: ``input1``, ``input2`` (N, D) or (D,), ``target`` (N,) or (). As torch,
    ``cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12)(sum(x2^2) + 1e-12))``. Gradient (target 1):
    ``d x1 = -g (x2 / (|x1| |x2|) - cos x1 / |x1|^2)``, and the same with the sign flipped
    where target is -1 and the hinge is active.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "cosine_embedding_loss")
    _tensors("cosine_embedding_loss", input1=input1, input2=input2, target=target)
    _same_shape("cosine_embedding_loss", input1=input1, input2=input2)
    if (
        input1.ndim not in (1, 2)
        or target.ndim != input1.ndim - 1
        or (input1.ndim == 2 and target.shape[0] != input1.shape[0])
    ):
        raise RuntimeError(
            f"cosine_embedding_loss: expected inputs (N, D) with target (N,) or inputs (D,) "
            f"with a 0-D target, got input1 {list(input1.shape)} and target {list(target.shape)}"
        )
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + 1e-12
    mag2 = (input2 * input2).sum(dim) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    pos = where(target == 1, 1 - cos, 0.0)
    neg = where(target == -1, clamp(cos - margin, min=0), 0.0)
    return _reduce(pos + neg, reduction)


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
) -> Tensor:
    """Per-class logistic loss averaged over the C classes: input, target (N, C) or (C,).

    ``l_n = -sum_c w_c (t log sigmoid(x) + (1 - t) log sigmoid(-x)) / C``. Gradient:
    ``d input = g w (sigmoid(x) - t) / C``.

    Composes: F.logsigmoid, Tensor.sum
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "multilabel_soft_margin_loss")
    _tensors("multilabel_soft_margin_loss", input=input, target=target)
    _check_broadcastable(input, target, "multilabel_soft_margin_loss")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    loss = _weighted(loss, weight)
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def _class_target(input: Tensor, target, op: str) -> np.ndarray:
    """Integer class indices (N,) for input (N, C) or a 0-d/1-element target for input (C,)."""
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: expected integer class-index target, got dtype {t.dtype}")
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise RuntimeError(
            f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )
    n = input.shape[0] if input.ndim == 2 else 1
    if t.ndim > 1 or t.size != n:
        raise RuntimeError(
            f"{op}: target tensor should be 1-D with size equal to the number of input samples "
            f"(batch size). Expected target size [{n}], but got {list(t.shape)}. Input has "
            f"shape {list(input.shape)}."
        )
    c = input.shape[-1]
    if t.size and (t.min() < 0 or t.max() >= c):
        raise IndexError(f"{op}: target out of range: expected classes in [0, {c - 1}], got {t}")
    return t.reshape(n).astype(np.int64)


def multi_margin_loss(
    input,
    target,
    p: int = 1,
    margin: float = 1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
) -> Tensor:
    """Multi-class hinge loss: ``l_n = sum_{j != y} w_y max(0, margin - x[y] + x[j])^p / C``.

    Shapes: ``input`` (N, C) or (C,), ``target`` (N,) or () class indices, ``weight`` (C,).
    Gradient, with ``z_j = margin - x[y] + x[j] > 0`` (0 at ``z = 0``, as torch):
    ``d x[j] = g w_y p z_j^(p-1) / C`` and ``d x[y] = -sum_j d x[j]``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "multi_margin_loss")
    _tensors("multi_margin_loss", input=input)
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 supported, got p={p}")
    t = _class_target(input, target, "multi_margin_loss")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    c = x.shape[1]
    picked = x.gather(1, Tensor._make(t[:, None]))
    z = margin - picked + x
    hinge = where(z > 0, z, 0.0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        if tuple(weight.shape) != (c,):
            raise RuntimeError(
                f"multi_margin_loss: weight must have shape [{c}] (one per class), got "
                f"{list(weight.shape)}"
            )
        hinge = hinge * Tensor._make(_as_array(weight, x._data.dtype)[t][:, None])
    others = Tensor._make(np.arange(c)[None, :] != t[:, None])
    loss = where(others, hinge, 0.0).sum(1) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(
    input, target, size_average=None, reduce=None, reduction="mean"
) -> Tensor:
    """Multi-label hinge loss: ``target`` (N, C) lists each row's classes, ended by -1.

    ``l_n = sum_{j in targets} sum_{k not in targets} max(0, 1 - (x[j] - x[k])) / C``.
    Gradient, where ``z = 1 - x[j] + x[k] > 0``: ``d x[j] -= g / C``, ``d x[k] += g / C``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "multilabel_margin_loss")
    _tensors("multilabel_margin_loss", input=input)
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if input.ndim not in (1, 2) or tuple(t.shape) != tuple(input.shape):
        raise RuntimeError(
            f"multilabel_margin_loss: inconsistent target size: {list(t.shape)} for input of "
            f"size: {list(input.shape)}"
        )
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t2 = t.reshape(x.shape).astype(np.int64)
    n, c = x.shape
    if t2.size and (t2.max() >= c or t2.min() < -1):
        raise IndexError(f"multilabel_margin_loss: target values must be in [-1, {c - 1}]")
    listed = np.cumprod(t2 != -1, axis=1).astype(bool)  # the entries before the first -1
    width = max(int(listed.sum(1).max()), 1) if n else 1  # (a prefix of each row)
    is_target = np.zeros((n, c), dtype=bool)
    rows, cols = np.nonzero(listed)
    is_target[rows, t2[rows, cols]] = True
    # z[n, i, k] = 1 - x[n, j_i] + x[n, k] for the i-th listed class j_i: O(N * width * C)
    picked = x.gather(1, Tensor._make(np.where(listed, t2, 0)[:, :width]))
    z = 1 - picked.unsqueeze(2) + x.unsqueeze(1)
    pairs = listed[:, :width, None] & ~is_target[:, None, :]  # (repeats count twice, as torch)
    hinge = where(Tensor._make(pairs) & (z > 0), z, 0.0)
    loss = hinge.sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction="mean",
) -> Tensor:
    """``max(0, margin + d(a, pos) - d(a, neg))`` with ``d`` :func:`pairwise_distance`.

    Shapes (N, D) or (D,), all three with the same number of dims. ``swap``: ``d(a, neg)``
    becomes ``min(d(a, neg), d(pos, neg))``. Gradient (hinge active, p = 2, ``r = a - pos +
    eps``, ``s = a - neg + eps``): ``d anchor = g (r / |r| - s / |s|)``,
    ``d positive = -g r / |r|``, ``d negative = g s / |s|``.
    """
    reduction = _legacy(size_average, reduce, reduction)

    def distance(x1, x2):
        return pairwise_distance(x1, x2, p, eps)

    return _triplet(
        anchor, positive, negative, distance, margin, swap, reduction, "triplet_margin_loss"
    )


def _triplet(anchor, positive, negative, distance, margin, swap, reduction, op: str) -> Tensor:
    """``max(0, margin + distance(a, pos) - distance(a, neg))``, checked and reduced."""
    _check_reduction(reduction, op)
    _tensors(op, anchor=anchor, positive=positive, negative=negative)
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError(
            f"{op}: The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and "
            f"negative {dims[2]}D inputs"
        )
    if margin <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = ops.elementwise.arithmetic.minimum(d_neg, distance(positive, negative))
    return _reduce(clamp(margin + d_pos - d_neg, min=0), reduction)


def triplet_margin_with_distance_loss(
    anchor,
    positive,
    negative,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """:func:`triplet_margin_loss` with any ``distance_function(x1, x2)`` (default
    :func:`pairwise_distance`): ``max(0, margin + d(a, pos) - d(a, neg))``.

    Gradient, where the hinge is active: ``d anchor = g (dd(a, pos)/da - dd(a, neg)/da)``,
    ``d positive = g dd(a, pos)/dpos``, ``d negative = -g dd(a, neg)/dneg``.
    """
    distance = distance_function if distance_function is not None else pairwise_distance
    op = "triplet_margin_with_distance_loss"
    return _triplet(anchor, positive, negative, distance, margin, swap, reduction, op)
