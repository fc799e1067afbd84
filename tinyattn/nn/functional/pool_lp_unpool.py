"""Power-average pooling and unpooling, built on the pools of ``_pooling``.

- ``lp_pool1d/2d/3d`` is torch's formula ``(k * avg_pool(x^p))^(1/p)`` with ``k`` the window
  size; ``p = +inf`` is max pooling of ``|x|`` and ``p = -inf`` its min (torch special-cases
  both); ``p = 0`` raises torch's ``ZeroDivisionError`` (here also a ``ValueError``);
- ``max_unpool1d/2d/3d`` puts each value at its flat index into the output's spatial dims.
  With duplicate indices the forward keeps the value latest in the input's row-major order
  (torch's CPU result there is unspecified), and the gradient is torch's gather
  ``dx = g.flatten(2)[indices]``: every input reads the gradient at its index, whether or
  not its value was the one kept (this is torch's formula, not the forward's derivative).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...foundations.type_names import type_name
from ...ops.creation.factories import zeros
from ...tensor_api.tensor import Tensor
from .conv import _ints
from .pool import (
    _check_rank,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)

__all__ = [
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]


# -- power-average pooling ----------------------------------------------------------------------


class NormTypeError(ValueError, ZeroDivisionError):
    """``norm_type == 0``: torch's lp_pool fails on ``1.0 / norm_type`` (ZeroDivisionError);
    a ValueError too, the error this library raises for a bad argument."""


_MAX_POOL = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}
_AVG_POOL = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n: int, op: str) -> Tensor:
    """torch's composite, step for step, so values and gradients agree at every edge
    (zeros, negative x with odd p, NaN, the ±inf limits)."""
    if not isinstance(norm_type, numbers.Real):
        raise TypeError(f"{op}: norm_type must be a number, got {type_name(norm_type)}")
    if norm_type == 0:
        raise NormTypeError(f"{op}: norm_type must be a non-zero number, got {norm_type!r}")
    kernel = _ints(kernel_size, n, "kernel_size", op)
    if norm_type == math.inf:  # the limit p -> inf: the largest |x| of each window
        return _MAX_POOL[n](input.abs(), kernel, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:  # p -> -inf: the smallest |x|
        return -_MAX_POOL[n](-input.abs(), kernel, stride, 0, 1, ceil_mode)
    out = _AVG_POOL[n](input.pow(norm_type), kernel, stride, 0, ceil_mode)
    count = int(np.prod(kernel))
    return (out.sign() * out.abs().relu()).mul(count).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling along L: ``y = (sum over the window of x^p)^(1/p)``, computed
    as ``(sign(a) * relu(|a|) * k)^(1/p)`` with ``a = avg_pool1d(x^p)``; ``p = ±inf`` is
    the max / min of ``|x|`` over the window.

    Gradient: ``dx = g * x^(p-1) * y^(1-p)`` per window element (via the composite);
    ``p = ±inf``: ``g * sign(x)`` at the window's arg max / min of ``|x|``.
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``y = (sum over the window of x^p)^(1/p)`` (torch's formula
    ``(k * avg_pool2d(x^p))^(1/p)``; ``p = ±inf`` is the max / min of ``|x|``, p = 1 sum
    pooling).

    Gradient: ``dx = g * x^(p-1) * y^(1-p)`` per window element (via the composite);
    ``p = ±inf``: ``g * sign(x)`` at the window's arg max / min of ``|x|``.
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(
    input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False
) -> Tensor:
    """Power-average pooling over (D, H, W): ``y = (sum over the window of x^p)^(1/p)``.

    ``input`` (N, C, D, H, W) or (C, D, H, W) -> (N, C, OD, OH, OW), windows as
    :func:`avg_pool3d` with no padding. Computed as torch does,
    ``(sign(a) * relu(|a|) * k)^(1/p)`` with ``a = avg_pool3d(x^p)`` and ``k = kd * kh * kw``;
    ``p = ±inf`` is the max / min of ``|x|``.

    Gradient (through the composite): ``dx = g * x^(p-1) * y^(1-p)`` per window element.
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")


# -- unpooling ----------------------------------------------------------------------------------


def _batched(input, n: int, op: str) -> tuple[Tensor, bool]:
    """``input`` as (N, C, *spatial) with n spatial dims, and whether it came unbatched."""
    _check_rank(input, n, op)
    unbatched = input.ndim == n + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n: int, op: str):
    x, unbatched = _batched(input, n, op)
    if not isinstance(indices, Tensor) or tuple(indices.shape) != tuple(input.shape):
        got = list(indices.shape) if isinstance(indices, Tensor) else type_name(indices)
        raise RuntimeError(
            f"{op}: expected indices of the input's shape {list(input.shape)}, got {got}"
        )
    if indices._data.dtype != np.int64:
        raise RuntimeError(f"{op}: expected int64 indices, got {indices.dtype}")
    kernel = _ints(kernel_size, n, "kernel_size", op)
    stride = _ints(kernel if stride is None else stride, n, "stride", op)
    padding = _ints(padding, n, "padding", op)
    spatial = x.shape[2:]
    default = tuple(
        (s - 1) * st - 2 * p + k for s, st, p, k in zip(spatial, stride, padding, kernel)
    )
    if output_size is None:
        outs = default
    else:
        outs = tuple(int(s) for s in output_size)
        if len(outs) == n + 2:  # (N, C, *spatial) given
            outs = outs[2:]
        if len(outs) != n:
            raise ValueError(
                f"{op}: output_size must have {n} spatial entries (or include batch and "
                f"channel), got {tuple(output_size)}"
            )
        for dim, (size, d, st) in enumerate(zip(outs, default, stride)):
            if not d - st < size < d + st:  # torch's range: sizes max_pool maps to the input
                raise ValueError(
                    f"{op}: invalid output_size {outs}: dim {dim} must be between "
                    f"{d - st} and {d + st} (exclusive), got {size}"
                )
    if min(outs) < 1:
        raise RuntimeError(f"{op}: the output size {outs} must be positive")
    total = int(np.prod(outs))
    flat_size = int(np.prod(x.shape[2:]))  # (not -1: there may be no planes)
    idx = indices._data.reshape(x.shape[0], x.shape[1], flat_size)
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        bad = int(idx.min() if idx.min() < 0 else idx.max())
        raise RuntimeError(
            f"{op}: found an invalid max index {bad} (output spatial size {outs} holds "
            f"{total} positions)"
        )
    flat = x.reshape(x.shape[0], x.shape[1], flat_size)
    out = zeros(x.shape[0], x.shape[1], total, dtype=x.dtype)
    y = out.scatter(2, Tensor._make(idx), flat).reshape(x.shape[0], x.shape[1], *outs)
    return y.squeeze(0) if unbatched else y


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of :func:`max_pool2d`: zeros of ``(N, C, OH, OW)`` with each input
    value put at its flat ``indices`` entry. ``OH = (H - 1) * stride - 2 * padding + kernel``
    unless ``output_size`` says otherwise.

    Gradient: ``dx = g.flatten(2)[indices]``.
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of :func:`max_pool1d`: zeros with each value put at its index.

    Gradient: ``dx = g[indices]``.
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of :func:`max_pool3d`: zeros of ``(N, C, OD, OH, OW)`` with each input
    value put at its flat ``indices`` entry; ``OD = (D - 1) * stride - 2 * padding + kernel``
    (likewise OH, OW) unless ``output_size`` says otherwise.

    Gradient: ``dx = g.flatten(2)[indices]``.
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")
