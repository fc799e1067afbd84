"""More losses with torch's rules: regression (l1, smooth l1, huber), binary cross entropy,
margin and embedding losses, multi-label / multi-class margins, triplet, Gaussian and
Poisson negative log-likelihoods.

All but ``binary_cross_entropy`` are compositions of differentiable ops written as torch
writes them (so the kinks take torch's side and second derivatives come for free);
``binary_cross_entropy`` is a ``Function`` for torch's clamped logs and its clamped gradient.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import ops
from .._tensor import Tensor
from ..autograd.function import Function
from ..ops.arithmetic import where
from ..ops.unary import clamp
from ._activations import logsigmoid
from ._distance import pairwise_distance
from ._loss import _as_array, _check_broadcastable, _check_reduction, _reduce

__all__ = [
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "soft_margin_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "triplet_margin_loss",
    "gaussian_nll_loss",
    "poisson_nll_loss",
]


def _legacy(size_average, reduce, reduction: str) -> str:
    """torch's mapping of the deprecated ``size_average`` / ``reduce`` flags (with its warning)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else "mean" if size_average else "sum"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
        "instead.",
        UserWarning,
        stacklevel=3,
    )
    return reduction


def _tensors(op: str, **named) -> None:
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{op}(): argument '{name}' must be a Tensor, not {type(value).__name__}"
            )


def _same_shape(op: str, **named) -> None:
    """Raise naming every argument and its shape unless all shapes are equal."""
    shapes = {n: tuple(t.shape) for n, t in named.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{n} of shape {list(s)}" for n, s in shapes.items())
        raise ValueError(f"{op}: expected {', '.join(shapes)} of the same shape, got {listed}")


def _warn_target_size(input: Tensor, target: Tensor, op: str) -> None:
    _check_broadcastable(input, target, op)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


def _weighted(loss: Tensor, weight) -> Tensor:
    return loss * weight if weight is not None else loss


def _check_loss_weight(input: Tensor, weight, op: str) -> None:
    """torch 2.13's rule for the regression losses' ``weight``: exactly the input's shape."""
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError(
            f"{op}: Weights and input must have the same size: weight {list(weight.shape)}, "
            f"input {list(input.shape)}"
        )


# -- regression ------------------------------------------------------------------------------


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None) -> Tensor:
    """Mean absolute error ``|input - target|`` (times ``weight``), reduced.

    Inputs broadcast together (a warning when the shapes differ, as torch). ``weight`` (the
    input's shape): 'mean' is then ``sum(w l) / sum(w)``, as torch 2.13. Gradient:
    ``d input = g sign(input - target)`` (0 where equal), ``d target = -d input``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "l1_loss")
    _tensors("l1_loss", input=input, target=target)
    _warn_target_size(input, target, "l1_loss")
    _check_loss_weight(input, weight, "l1_loss")
    loss = (input - target).abs()
    if weight is not None and reduction == "mean":
        return (loss * weight).sum() / weight.sum()
    return _reduce(_weighted(loss, weight), reduction)


def smooth_l1_loss(
    input, target, size_average=None, reduce=None, reduction="mean", beta: float = 1.0
) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``).

    ``beta = 0`` is :func:`l1_loss`. Gradient: ``d input = g d / beta`` where ``|d| < beta``,
    ``g sign(d)`` elsewhere; ``d target = -d input``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "smooth_l1_loss")
    _tensors("smooth_l1_loss", input=input, target=target)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta, got {beta}.")
    _warn_target_size(input, target, "smooth_l1_loss")
    diff = input - target
    absdiff = diff.abs()
    if beta == 0:
        return _reduce(absdiff, reduction)
    loss = where(absdiff < beta, 0.5 * diff * diff / beta, absdiff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta: float = 1.0, weight=None) -> Tensor:
    """``0.5 d^2`` where ``|d| <= delta``, else ``delta (|d| - 0.5 delta)`` (times ``weight``).

    ``weight`` has the input's shape; 'mean' averages ``w l`` over the elements (torch 2.13:
    unlike ``l1_loss``/``mse_loss``, it does not divide by ``sum(w)``).
    Gradient: ``d input = g d`` where ``|d| <= delta``, ``g delta sign(d)`` elsewhere;
    ``d target = -d input``.
    """
    _check_reduction(reduction, "huber_loss")
    _tensors("huber_loss", input=input, target=target)
    if delta <= 0:
        raise RuntimeError(
            f"huber_loss does not support non-positive values for delta, got {delta}."
        )
    _warn_target_size(input, target, "huber_loss")
    _check_loss_weight(input, weight, "huber_loss")
    diff = input - target
    absdiff = diff.abs()
    loss = where(absdiff <= delta, 0.5 * diff * diff, delta * (absdiff - 0.5 * delta))
    return _reduce(_weighted(loss, weight), reduction)


# -- binary cross entropy --------------------------------------------------------------------


_BCE_EPS = float(np.float32(1e-12))  # torch's EPSILON is a float literal, in every dtype


class BinaryCrossEntropy(Function):
    """Binary cross entropy of probabilities ``x`` in [0, 1], torch's clamped form:

    l = -w (t max(log x, -100) + (1 - t) max(log(1 - x), -100))
    dx = g w (x - t) / max(x (1 - x), 1e-12)   (1e-12 rounded to float32, as torch's constant),
    dt = g w (max(log(1 - x), -100) - max(log x, -100))      (w is a constant)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, t, weight):
        with np.errstate(divide="ignore"):
            log_x = np.maximum(np.log(x), -100)
            log_1mx = np.maximum(np.log1p(-x), -100)
        loss = (t - 1) * log_1mx - t * log_x
        ctx.save_for_backward(x, t, weight)
        return (loss * weight if weight is not None else loss).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, t, weight = ctx.saved_tensors
        gw = g * weight if weight is not None else g
        dx = gw * (x - t) / xp.maximum(x * (1 - x), _BCE_EPS)
        dt = None
        if ctx.needs_input_grad[1]:
            with xp.errstate(divide="ignore"):
                dt = gw * (xp.maximum(xp.log1p(-x), -100) - xp.maximum(xp.log(x), -100))
        return dx, dt, None


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
) -> Tensor:
    """Binary cross entropy of probabilities ``input`` against ``target`` (same shape).

    ``l = -w (t log x + (1 - t) log(1 - x))`` with each log clamped at -100 (torch's rule,
    so ``x = 0`` or ``1`` gives 100, not inf); ``weight`` broadcasts to the input and gets
    no gradient. Gradient: ``d input = g w (x - t) / max(x (1 - x), 1e-12)``,
    ``d target = g w (log(1 - x) - log x)``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "binary_cross_entropy")
    _tensors("binary_cross_entropy", input=input, target=target)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"binary_cross_entropy: Using a target size ({list(target.shape)}) that is different "
            f"to the input size ({list(input.shape)}) is deprecated. Please ensure they have the "
            "same size."
        )
    x = input._data
    if x.size and not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError(
            f"binary_cross_entropy: all elements of input should be between 0 and 1 (got "
            f"values in [{x.min()}, {x.max()}])"
        )
    w = None
    if weight is not None:
        _check_broadcastable(input, weight, "binary_cross_entropy (weight)")
        w = np.broadcast_to(_as_array(weight, x.dtype), x.shape)
    return _reduce(BinaryCrossEntropy.apply(input, target, w), reduction)


# -- margin and embedding losses ---------------------------------------------------------------


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))``, target in {-1, 1}.

    Gradient: ``d input = -g t sigmoid(-t x)``, ``d target = -g x sigmoid(-t x)``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "soft_margin_loss")
    _tensors("soft_margin_loss", input=input, target=target)
    _check_broadcastable(input, target, "soft_margin_loss")
    return _reduce(ops.unary.log1p(ops.unary.exp(-input * target)), reduction)


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
    counts = np.zeros((n, c))  # how often row n lists class j before its first -1
    for row in range(n):
        listed = t2[row]
        stop = np.flatnonzero(listed == -1)
        for j in listed[: stop[0] if stop.size else c]:
            counts[row, j] += 1
    is_target = counts > 0
    pairs = counts[:, :, None] * ~is_target[:, None, :]  # (N, j, k)
    z = 1 - x.unsqueeze(2) + x.unsqueeze(1)
    hinge = where(z > 0, z, 0.0) * Tensor._make(pairs.astype(x._data.dtype))
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
    _check_reduction(reduction, "triplet_margin_loss")
    _tensors("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError(
            "triplet_margin_loss: The anchor, positive, and negative tensors are expected to "
            f"have the same number of dimensions, but got: anchor {dims[0]}D, positive "
            f"{dims[1]}D, and negative {dims[2]}D inputs"
        )
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ops.arithmetic.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(clamp(margin + d_pos - d_neg, min=0), reduction)


def gaussian_nll_loss(
    input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """Gaussian negative log-likelihood ``0.5 (log(var) + (input - target)^2 / var)`` (+ const).

    ``var`` (a Tensor or a number) is shaped like ``input``, or like it without the last dim
    (one variance per sample), or with last dim 1. Its values are clamped to ``eps`` without
    recording the clamp (torch's rule), so the gradient flows as if unclamped:
    ``d input = g (input - target) / var``, ``d target = -d input``,
    ``d var = g (1 / var - (input - target)^2 / var^2) / 2``.
    """
    _check_reduction(reduction, "gaussian_nll_loss")
    _tensors("gaussian_nll_loss", input=input, target=target)
    if isinstance(var, numbers.Real):
        if var < 0:
            raise ValueError(f"gaussian_nll_loss: var has negative entry/entries ({var})")
        var = ops.creation.full_like(input, max(float(var), eps))
    _tensors("gaussian_nll_loss", var=var)
    shape, vshape = tuple(input.shape), tuple(var.shape)
    if vshape != shape:
        if shape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif not (shape[:-1] == vshape[:-1] and vshape[-1:] == (1,)):
            raise ValueError(
                f"gaussian_nll_loss: var is of incorrect size: got {list(vshape)} for input of "
                f"size {list(shape)} (expected {list(shape)}, {list(shape[:-1])} or "
                f"{list(shape[:-1]) + [1]})"
            )
    _check_broadcastable(input, target, "gaussian_nll_loss")
    if (var._data < 0).any():
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    lifted = np.maximum(var._data, eps) - var._data  # clamp's value, not its gradient
    var = var + Tensor._make(lifted.astype(var._data.dtype, copy=False))
    diff = input - target
    loss = 0.5 * (ops.unary.log(var) + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(
    input,
    target,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction="mean",
) -> Tensor:
    """Poisson negative log-likelihood: ``exp(x) - t x`` (``log_input``), else
    ``x - t log(x + eps)``; ``full`` adds Stirling's ``t log t - t + 0.5 log(2 pi t)`` where
    ``t > 1``. Gradient (log_input): ``d input = g (exp(x) - t)``, ``d target = -g x``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "poisson_nll_loss")
    _tensors("poisson_nll_loss", input=input, target=target)
    _check_broadcastable(input, target, "poisson_nll_loss")
    if log_input:
        loss = ops.unary.exp(input) - target * input
    else:
        loss = input - target * ops.unary.log(input + eps)
    if full:
        log = ops.unary.log
        stirling = target * log(target) - target + 0.5 * log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)
