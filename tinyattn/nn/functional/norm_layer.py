"""Layer and RMS normalization: ``layer_norm``, ``rms_norm`` and their autograd Functions.

Part of ``tinyattn.nn.functional`` (which re-exports them); kept apart to keep files short.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...autograd.xp import numpy_xp, tensor_xp
from ...core.function import Function
from ...kernels import gelu_layer_norm as kernels
from ...ops._accumulation import accumulates_in_float32
from ...ops._util import forward_without_graph, records_no_graph
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor as _check_tensor


def _norm_axes(x: np.ndarray, k: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - k, x.ndim))


class LayerNormFunction(Function):
    """Normalise over the last k dims, then scale and shift.

    mu = mean(x),  var = mean((x - mu)^2),  rstd = 1 / sqrt(var + eps),
    xhat = (x - mu) rstd,  y = xhat * weight + bias       (means over the last k dims)

    g' = g * weight:
    dx = rstd (g' - mean(g') - xhat mean(g' xhat)),   dweight = sum(g xhat),   dbias = sum(g)
    (dweight / dbias summed over the leading dims: returned full-size by the formula, the
    engine reduces; the numba kernel (first order, float32/float64) returns them reduced.)
    The forward saves mu and rstd, not xhat; the backward recomputes xhat = (x - mu) rstd.
    NaN/inf: as torch, except that with an infinite ``weight`` element dx may hold ±inf
    where torch's fused kernel (the same formula arranged differently) gives NaN.
    """

    node_name = "LayerNormBackward0"  # (the class is not called LayerNorm: that is the nn Module)

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, weight, bias, k, eps):
        axes = _norm_axes(x, k)
        ctx.axes, ctx.k, ctx.eps = axes, k, eps
        if kernels.fits(x, weight, bias):  # the numba kernel: the same math, fused
            y, mu, rstd = kernels.layer_norm(x, weight, bias, k, eps)
            ctx.save_for_backward(x, weight, mu, rstd)
            return y
        mu = x.mean(axis=axes, keepdims=True)
        xc = x - mu
        rstd = 1.0 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
        y = xc * rstd
        if weight is not None:
            y = y * weight
        if bias is not None:
            y = y + bias
        ctx.save_for_backward(x, weight, mu, rstd)  # mu, rstd: 2 numbers a row, not xhat
        return y

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, weight, mu, rstd = ctx.saved_tensors
        need_w, need_b = ctx.needs_input_grad[1:3]
        if xp is numpy_xp and kernels.fits(x, g, weight, mu, rstd):
            dx, dweight, dbias = kernels.layer_norm_backward(g, x, weight, mu, rstd, ctx.k)
            return dx, dweight if need_w else None, dbias if need_b else None, None, None
        axes = ctx.axes
        if xp is tensor_xp:  # create_graph: mu and rstd as functions of x, in the graph
            mu = xp.mean(x, axis=axes, keepdims=True)
            xc = x - mu
            rstd = 1.0 / xp.sqrt(xp.mean(xc * xc, axis=axes, keepdims=True) + ctx.eps)
        xhat = (x - mu) * rstd
        gw = g * weight if weight is not None else g
        dx = rstd * (
            gw
            - xp.mean(gw, axis=axes, keepdims=True)
            - xhat * xp.mean(gw * xhat, axis=axes, keepdims=True)
        )
        dweight = g * xhat if need_w else None
        dbias = g if need_b else None
        return dx, dweight, dbias, None, None


def _check_normalized_shape(input: Tensor, normalized_shape, op: str) -> tuple[int, ...]:
    if type(normalized_shape) is tuple and normalized_shape:  # a module's: ints already
        trailing = input._data.shape[input._data.ndim - len(normalized_shape) :]
        if trailing == normalized_shape:
            return normalized_shape
    shape = (
        (int(normalized_shape),)
        if isinstance(normalized_shape, numbers.Integral)
        else tuple(int(s) for s in normalized_shape)
    )
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k :]) != shape:
        raise RuntimeError(
            f"{op}: input shape {list(input.shape)} does not end with normalized_shape "
            f"{list(shape)} (expected input of shape [*, {', '.join(map(str, shape))}])"
        )
    return shape


def _check_affine(param, shape, op: str, arg: str) -> None:
    if param is None:
        return
    # (a Tensor's array shape: no Size object per call; a NumPy weight passes as before)
    if (param._data.shape if isinstance(param, Tensor) else tuple(param.shape)) != shape:
        raise RuntimeError(
            f"{op}: {arg} must have shape {list(shape)} (normalized_shape), got {list(param.shape)}"
        )


@accumulates_in_float32("input", "weight", "bias")
def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Layer normalisation over the trailing ``normalized_shape`` dims (biased variance).

    Shapes: ``input`` (*, *normalized_shape); ``weight``, ``bias`` normalized_shape; ``y`` as
    ``input``. With means over the trailing dims::

        rstd = 1 / sqrt(mean((x - mean(x))^2) + eps),  xhat = (x - mean(x)) rstd
        y = xhat * weight + bias

    Gradient, with ``g' = g * weight``::

        d input  = rstd (g' - mean(g') - xhat mean(g' xhat))
        d weight = sum of g xhat over the leading dims,   d bias = sum of g
    """
    _check_tensor(input, "layer_norm")
    shape = _check_normalized_shape(input, normalized_shape, "layer_norm")
    _check_affine(weight, shape, "layer_norm", "weight")
    _check_affine(bias, shape, "layer_norm", "bias")
    if records_no_graph(input, weight, bias):
        w = None if weight is None else weight._data
        b = None if bias is None else bias._data
        return forward_without_graph(LayerNormFunction, input._data, w, b, len(shape), float(eps))
    return LayerNormFunction.apply(input, weight, bias, len(shape), float(eps))


class RMSNormFunction(Function):
    """y = x * rstd * weight,  rstd = 1 / sqrt(mean(x^2) + eps)   (means over the last k dims).

    xhat = x rstd,  g' = g * weight:
    dx = rstd (g' - xhat mean(g' xhat)),   dweight = sum(g xhat)  (the engine reduces)
    """

    node_name = "RMSNormBackward0"  # (the class is not called RMSNorm: that is the nn Module)

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, weight, k, eps):
        axes = _norm_axes(x, k)
        rstd = 1.0 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
        xhat = x * rstd
        ctx.axes, ctx.eps = axes, eps
        ctx.save_for_backward(x, weight, xhat, rstd)
        return xhat * weight if weight is not None else xhat

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, weight, xhat, rstd = ctx.saved_tensors
        if xp is tensor_xp:  # create_graph: xhat and rstd as functions of x, in the graph
            rstd = 1.0 / xp.sqrt(xp.mean(x * x, axis=ctx.axes, keepdims=True) + ctx.eps)
            xhat = x * rstd
        gw = g * weight if weight is not None else g
        dx = rstd * (gw - xhat * xp.mean(gw * xhat, axis=ctx.axes, keepdims=True))
        dweight = g * xhat if ctx.needs_input_grad[1] else None
        return dx, dweight, None, None


@accumulates_in_float32("input", "weight")
def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """Root-mean-square normalisation; ``eps=None`` means ``finfo(input.dtype).eps`` (torch).

    Shapes as :func:`layer_norm`. ``rstd = 1 / sqrt(mean(x^2) + eps)`` over the trailing dims,
    ``xhat = x rstd``, ``y = xhat * weight``. Gradient, with ``g' = g * weight``:
    ``d input = rstd (g' - xhat mean(g' xhat))``, ``d weight = sum of g xhat`` over the
    leading dims.
    """
    _check_tensor(input, "rms_norm")
    shape = _check_normalized_shape(input, normalized_shape, "rms_norm")
    _check_affine(weight, shape, "rms_norm", "weight")
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps)
    return RMSNormFunction.apply(input, weight, len(shape), float(eps))
