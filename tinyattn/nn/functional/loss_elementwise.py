"""Elementwise losses with torch's rules: regression (l1, smooth l1, huber), binary cross entropy,
Gaussian and Poisson negative log-likelihoods (the margin losses are in ``_losses_margin``).

All but ``binary_cross_entropy`` are compositions of differentiable ops written as torch
writes them (so the kinks take torch's side and second derivatives come for free);
``binary_cross_entropy`` is a ``Function`` for torch's clamped logs and its clamped gradient.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ... import ops
from ...core.function import Function
from ...foundations.type_names import type_name
from ...ops.elementwise.arithmetic import where
from ...tensor_api.tensor import Tensor
from .loss import _as_array, _check_broadcastable, _check_reduction, _numeric_target, _reduce

__all__ = [
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
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
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type_name(value)}")


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
    diff = input - _numeric_target(input, target)
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
    diff = input - _numeric_target(input, target)
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
    if target.dtype != input.dtype:  # torch does not promote here
        raise RuntimeError(
            f"binary_cross_entropy: Found dtype {target.dtype} but expected {input.dtype} "
            "(target must have the input's dtype)"
        )
    x = input._data
    for name, values in (("input", x), ("target", target._data)):  # NaN fails too, as torch
        if values.size and not ((values >= 0) & (values <= 1)).all():
            raise RuntimeError(
                f"binary_cross_entropy: all elements of {name} should be between 0 and 1 "
                f"(got values in [{np.nanmin(values)}, {np.nanmax(values)}]"
                f"{', and NaN' if np.isnan(values).any() else ''})"
            )
    w = None
    if weight is not None:
        _check_broadcastable(input, weight, "binary_cross_entropy (weight)")
        w = np.broadcast_to(_as_array(weight, x.dtype), x.shape)
    return _reduce(BinaryCrossEntropy.apply(input, target, w), reduction)


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
        var = ops.creation.factories.full_like(input, max(float(var), eps))
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
    loss = 0.5 * (ops.elementwise.unary.log(var) + diff * diff / var)
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
        loss = ops.elementwise.unary.exp(input) - target * input
    else:
        loss = input - target * ops.elementwise.unary.log(input + eps)
    if full:
        log = ops.elementwise.unary.log
        stirling = target * log(target) - target + 0.5 * log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)
