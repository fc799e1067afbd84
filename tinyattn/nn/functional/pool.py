"""Pooling functions of ``nn.functional``: max, average, adaptive, power-average and unpooling.

Max, average and adaptive pooling (1-D, 2-D and 3-D) are each one pair of Functions in
``_pooling_fn`` over windows of input positions, run by numba kernels:

- max pooling finds each window's argmax (torch's scan order: the first maximum in a
  tie, the last NaN when there is one), then gathers it: ``y = x[idx]``,
  ``dx = scatter-add of g at idx`` (the gradient goes to the chosen element only);
- average pooling sums each window over a divisor (its size, counted with or without
  the zero padding, or ``divisor_override``): ``dx[i] = sum over windows w holding i of
  g[w] / div[w]``;
- adaptive pooling pools window ``[floor(i n / m), ceil((i + 1) n / m))`` along each dim;
- ``lp_pool`` and ``max_unpool`` are in ``_pooling_lp_unpool`` (re-exported here).

Unbatched ``(C, *)`` input pools as it is: the Functions pool the last 1-3 dims.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...foundations.type_names import type_name
from ...kernels import pool as kernels
from ...tensor_api.tensor import Tensor
from .conv import _ints
from .pool_windows import AvgPool, MaxPool, adaptive_windows, avg_windows, max_windows

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "max_unpool1d",
    "max_unpool2d",
]


# -- arguments ----------------------------------------------------------------------------------


def _check_rank(input, n: int, op: str) -> None:
    """``input`` must be a Tensor (N, C, *spatial) or (C, *spatial) with n spatial dims."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: argument 'input' must be a Tensor, got {type_name(input)}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"{op}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input, got shape "
            f"{list(input.shape)}"
        )


def _check_input(input, n: int, op: str, empty_channels: bool = False) -> None:
    """``input`` must be a floating (N, C, *spatial) or (C, *spatial) with n spatial dims.

    Only the batch dim may be 0, and the channels when ``empty_channels`` (as in torch)."""
    _check_rank(input, n, op)
    if any(s == 0 for s in input.shape[-n:]):
        raise RuntimeError(
            f"{op}: expected input with non-zero spatial size, got shape {list(input.shape)}"
        )
    if not empty_channels and 0 in input.shape[-n - 1 :]:
        raise RuntimeError(
            f"{op}: expected non-zero channels (only the batch dim may be 0), got shape "
            f"{list(input.shape)}"
        )
    if not input.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {input.dtype}")


def _pool_args(kernel_size, stride, padding, dilation, n: int, op: str):
    """(kernel, stride, padding, dilation), n ints each, checked."""
    kernel = _ints(kernel_size, n, "kernel_size", op)
    stride = kernel if stride is None or stride == [] or stride == () else stride
    stride = _ints(stride, n, "stride", op)
    padding = _ints(padding, n, "padding", op)
    dilation = _ints(dilation, n, "dilation", op)
    for name, value, least in (
        ("kernel_size", kernel, 1),
        ("stride", stride, 1),
        ("dilation", dilation, 1),
        ("padding", padding, 0),
    ):
        if min(value) < least:
            raise RuntimeError(f"{op}: {name} must be >= {least}, got {name}={value}")
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise RuntimeError(
            f"{op}: padding should be at most half of kernel_size, got padding={padding} "
            f"and kernel_size={kernel}"
        )
    return kernel, stride, padding, dilation


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling output size; with ``ceil_mode`` the last window must start inside."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _out_sizes(x: Tensor, kernel, stride, padding, dilation, ceil_mode, n: int, op: str):
    spatial = tuple(x.shape[-n:])
    outs = tuple(
        _out_size(s, k, st, p, d, bool(ceil_mode))
        for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation)
    )
    if min(outs) < 1:
        raise RuntimeError(
            f"{op}: given input of spatial size {spatial}, kernel_size={kernel}, "
            f"stride={stride}, padding={padding}, dilation={dilation}: the output size {outs} "
            "is too small (the dilated kernel is larger than the padded input)"
        )
    return spatial, outs


# -- max pooling --------------------------------------------------------------------------------


def _max_pool_over(x: Tensor, windows, return_indices: bool):
    """y = MaxPool(x) at each window's argmax; (y, torch's indices) if ``return_indices``."""
    index = kernels.max_pool_argmax(x._data, windows)
    empty = windows.empty()
    # a window wholly in the padding gives -inf and no gradient (index -1 in the gather)
    safe = np.where(empty, -1, index) if empty.any() else index
    y = MaxPool.apply(x, safe, windows.ndim, -math.inf)
    return (y, Tensor._make(index)) if return_indices else y


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, n, op):
    _check_input(input, n, op)
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, dilation, n, op)
    spatial, outs = _out_sizes(input, kernel, stride, padding, dilation, ceil_mode, n, op)
    windows = max_windows(spatial, outs, kernel, stride, padding, dilation)
    return _max_pool_over(input, windows, return_indices)


def max_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over each ``kernel_size`` window of (N, C, D, H, W) or (C, D, H, W) input, as
    :func:`max_pool2d` with a depth dim; indices are flat into ``D * H * W``.

    Gradient: ``dx[i] = sum of g[o] over the windows o whose (first) maximum is input i``.
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d"
    )


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = True,
):
    """:func:`max_pool3d` that returns ``(output, indices)`` (indices flat into D * H * W).

    Gradient: ``dx[i] = sum of g[o] over the windows o whose (first) maximum is input i``.
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d"
    )


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = True,
):
    """:func:`max_pool2d` that returns ``(output, indices)`` (indices flat into H * W).

    Gradient: ``dx[i] = sum of g[o] over the windows o whose (first) maximum is input i``.
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d"
    )


def max_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over each ``kernel_size`` window of (N, C, H, W) or (C, H, W) input.

    ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel) pads with
    ``-inf``; ``dilation`` spaces the window's taps; ``OH = (H + 2p - d (k - 1) - 1) / s + 1``
    rounded down (up with ``ceil_mode``, when that window starts inside the input).
    ``return_indices`` also returns each maximum's flat index into ``H * W`` (int64).

    Gradient: ``dx[i] = sum of g[o] over the windows o whose maximum is input i`` (in a
    tie the first maximum in row-major order gets it, as in torch).
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d"
    )


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = True,
):
    """:func:`max_pool1d` that returns ``(output, indices)``.

    Gradient: ``dx[i] = sum of g[o] over the windows o whose (first) maximum is input i``.
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d"
    )


def max_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over each window of (N, C, L) or (C, L) input: :func:`max_pool2d` along L.

    Gradient: ``dx[i] = sum of g[o] over the windows o whose (first) maximum is input i``.
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d"
    )


# -- average pooling ----------------------------------------------------------------------------


def _avg_pool(
    input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, n, op
):
    _check_input(input, n, op)
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, 1, n, op)
    if divisor_override is not None and (
        not isinstance(divisor_override, numbers.Integral) or divisor_override == 0
    ):
        raise RuntimeError(f"{op}: divisor_override must be a non-zero int, got {divisor_override}")
    if n == 3 and any(s < k for s, k in zip(input.shape[-3:], kernel)):
        # torch's avg_pool3d (unlike 1-D/2-D and max_pool3d) refuses this, padding or not
        raise RuntimeError(
            f"{op}: input image (T, H, W) = {tuple(input.shape[-3:])} smaller than "
            f"kernel_size {kernel}"
        )
    spatial, outs = _out_sizes(input, kernel, stride, padding, dilation, ceil_mode, n, op)
    windows, divisor = avg_windows(
        spatial, outs, kernel, stride, padding, count_include_pad, divisor_override
    )
    return AvgPool.apply(input, windows, divisor)


def avg_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over each ``kernel_size`` window of (N, C, D, H, W) or (C, D, H, W) input, as
    :func:`avg_pool2d` with a depth dim.

    Gradient: ``dx[i] = sum over the windows w that hold i of g[w] / divisor[w]``.
    """
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        3,
        "avg_pool3d",
    )


def avg_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over each ``kernel_size`` window of (N, C, H, W) or (C, H, W) input.

    Zero ``padding`` (at most half the kernel) counts in the mean when
    ``count_include_pad`` (the window as clipped to the padded input), else only the input
    elements count; ``divisor_override`` replaces the count. Output sizes as in
    :func:`max_pool2d` (no dilation).

    Gradient: ``dx[i] = sum over the windows w that hold i of g[w] / divisor[w]``.
    """
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        2,
        "avg_pool2d",
    )


def avg_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over each window of (N, C, L) or (C, L) input: :func:`avg_pool2d` along L.

    Gradient: ``dx[i] = sum over the windows w that hold i of g[w] / divisor[w]``.
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d"
    )


# -- adaptive pooling ---------------------------------------------------------------------------


def _adaptive_sizes(x: Tensor, output_size, n: int, op: str) -> tuple[int, ...]:
    """Output size per spatial dim; ``None`` keeps the input's."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != n:
            raise ValueError(
                f"{op}: output_size must be an int or {n} ints (or None), got {output_size!r}"
            )
        sizes = tuple(output_size)
    else:
        sizes = (output_size,) * n
    out = []
    for s, size in zip(sizes, x.shape[-n:]):
        if s is None:
            out.append(size)
        elif not isinstance(s, numbers.Integral) or isinstance(s, bool) or s < 1:
            raise RuntimeError(
                f"{op}: output_size must be positive ints (or None), got {output_size!r}"
            )
        else:
            out.append(int(s))
    return tuple(out)


def _adaptive(input, output_size, n: int, op: str, empty_channels: bool = False):
    _check_input(input, n, op, empty_channels)
    outs = _adaptive_sizes(input, output_size, n, op)
    return adaptive_windows(tuple(input.shape[-n:]), outs)


def _adaptive_avg(input, output_size, n: int, op: str) -> Tensor:
    """Adaptive average pooling over the last n dims (also ``interpolate``'s 'area' mode)."""
    # torch's 1d and 2d (not 3d) adaptive average pools accept 0 channels
    windows = _adaptive(input, output_size, n, op, empty_channels=n < 3)
    return AvgPool.apply(input, *windows)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Mean over windows that tile (N, C, D, H, W) or (C, D, H, W) input into
    ``output_size``, as :func:`adaptive_avg_pool2d` with a depth dim.

    Gradient: ``dx[i] = sum over the windows w that hold i of g[w] / len(w)``.
    """
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Mean over windows that tile (N, C, H, W) or (C, H, W) input into ``output_size``.

    Window ``o`` of a dim of size ``n`` pooled to ``m`` covers
    ``[floor(o n / m), ceil((o + 1) n / m))``; a ``None`` in ``output_size`` keeps that dim.
    Gradient: ``dx[i] = sum over the windows w that hold i of g[w] / len(w)``.
    """
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Mean over windows that tile (N, C, L) or (C, L) input into ``output_size`` positions.

    Gradient: ``dx[i] = sum over the windows w that hold i of g[w] / len(w)``.
    """
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max over the windows of :func:`adaptive_avg_pool3d`; indices flat into D * H * W.

    Gradient: ``dx[i] = sum of g[o] over the windows o whose (first) maximum is input i``.
    """
    windows, _ = _adaptive(input, output_size, 3, "adaptive_max_pool3d")
    return _max_pool_over(input, windows, return_indices)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """:func:`adaptive_max_pool3d` returning ``(output, indices)``."""
    return adaptive_max_pool3d(input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max over the windows of :func:`adaptive_avg_pool2d`; ``return_indices`` as in
    :func:`max_pool2d`. Gradient: ``dx[i] = sum of g[o] over windows whose max is i``."""
    windows, _ = _adaptive(input, output_size, 2, "adaptive_max_pool2d")
    return _max_pool_over(input, windows, return_indices)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max over the windows of :func:`adaptive_avg_pool1d`.

    Gradient: ``dx[i] = sum of g[o] over the windows o whose maximum is input i``.
    """
    windows, _ = _adaptive(input, output_size, 1, "adaptive_max_pool1d")
    return _max_pool_over(input, windows, return_indices)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """:func:`adaptive_max_pool2d` returning ``(output, indices)``."""
    return adaptive_max_pool2d(input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """:func:`adaptive_max_pool1d` returning ``(output, indices)``."""
    return adaptive_max_pool1d(input, output_size, return_indices)


# (power-average pooling and unpooling: ``_pooling_lp_unpool``, which builds on the pools above)
from .pool_lp_unpool import (  # noqa: E402
    lp_pool1d,
    lp_pool2d,
    max_unpool1d,
    max_unpool2d,
)
