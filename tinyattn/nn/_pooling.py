"""Pooling functions of ``nn.functional``: max, average, adaptive, power-average and unpooling.

Every pool here is a composite of differentiable ops, so its gradient (and, under
``create_graph``, its second derivative) is theirs:

- max pooling finds each window's argmax on arrays (torch's scan order: the first
  maximum in a tie, the last NaN when there is one), then ``gather``\\ s it:
  ``y = x_flat[idx]``, ``dx = scatter-add of g at idx`` (the gradient goes to the
  chosen element only);
- average pooling is ``unfold`` (im2col) of the zero-padded input summed over each
  window, over a constant divisor: ``dx[i] = sum over windows w holding i of g[w] / div[w]``;
- adaptive average pooling averages window ``[floor(i n / m), ceil((i + 1) n / m))``
  along each dim (``Resample``: ``y = W x``, ``dx = W^T g``);
- ``lp_pool`` is torch's formula ``(k * avg_pool(x^p))^(1/p)``;
- ``max_unpool`` scatters each value to its index: ``dx = g[idx]``.

1-D pools run as 2-D pools over a height-1 image; unbatched ``(C, *)`` input gets a
batch dim of 1 and loses it again.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._tensor import Tensor
from ..ops.creation import zeros
from ._conv import _ints
from ._spatial import Resample, pad, unfold

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "max_unpool1d",
    "max_unpool2d",
]


# -- arguments ----------------------------------------------------------------------------------


def _batched(input, n: int, op: str) -> tuple[Tensor, bool]:
    """``input`` as (N, C, *spatial) with n spatial dims, and whether it came unbatched."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: argument 'input' must be a Tensor, got {type(input).__name__}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"{op}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input, got shape "
            f"{list(input.shape)}"
        )
    if any(s == 0 for s in input.shape[-n:]):
        raise RuntimeError(
            f"{op}: expected input with non-zero spatial size, got shape {list(input.shape)}"
        )
    unbatched = input.ndim == n + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _as_2d(x: Tensor, n: int) -> Tensor:
    return x.unsqueeze(2) if n == 1 else x


def _restore(y: Tensor, n: int, unbatched: bool) -> Tensor:
    """(N, C, OH, OW) back to the caller's layout (1-D: drop the height; unbatched: the N)."""
    if n == 1:
        y = y.squeeze(2)
    return y.squeeze(0) if unbatched else y


def _pool_args(kernel_size, stride, padding, dilation, n: int, op: str):
    """(kernel, stride, padding, dilation) per spatial dim, 1-D lifted to 2-D, checked."""
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
    if n == 1:
        return (1, *kernel), (1, *stride), (0, *padding), (1, *dilation)
    return kernel, stride, padding, dilation


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling output size; with ``ceil_mode`` the last window must start inside."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _out_sizes(x: Tensor, kernel, stride, padding, dilation, ceil_mode, n: int, op: str):
    spatial = tuple(x.shape[2:])
    outs = tuple(
        _out_size(s, k, st, p, d, bool(ceil_mode))
        for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation)
    )
    if min(outs) < 1:
        raise RuntimeError(
            f"{op}: given input of spatial size {spatial[2 - n :]}, kernel_size="
            f"{kernel[2 - n :]}, stride={stride[2 - n :]}, padding={padding[2 - n :]}, "
            f"dilation={dilation[2 - n :]}: the output size {outs[2 - n :]} is too small "
            "(the dilated kernel is larger than the padded input)"
        )
    return outs


# -- max pooling --------------------------------------------------------------------------------


def _window_argmax(x: np.ndarray, rows, cols) -> np.ndarray:
    """Flat index (into H * W) of the maximum of each window of ``x`` (N, C, H, W).

    ``rows`` = (positions (T, OH), valid (T, OH)): input row of window tap t of output row o
    (likewise ``cols``). Taps are scanned row-major as torch does: a strictly larger value or
    a NaN takes over, so ties keep the first maximum and NaN wins; an all ``-inf`` window
    keeps its first valid position. One vectorised pass per tap, none per pixel.
    """
    (rpos, rvalid), (cpos, cvalid) = rows, cols
    height, width = x.shape[2:]
    # a window's starting index is its first tap at or past 0 (torch's: in a window wholly in
    # the padding, possible with dilation, that tap lies past the end; the output is -inf)
    first_r = rpos[(rpos >= 0).argmax(0), np.arange(rpos.shape[1])]
    first_c = cpos[(cpos >= 0).argmax(0), np.arange(cpos.shape[1])]
    shape = x.shape[:2] + (rpos.shape[1], cpos.shape[1])
    index = np.broadcast_to(first_r[:, None] * width + first_c[None, :], shape).copy()
    best = np.full(shape, -np.inf, dtype=x.dtype)
    for r, r_ok in zip(np.clip(rpos, 0, height - 1), rvalid):
        for c, c_ok in zip(np.clip(cpos, 0, width - 1), cvalid):
            value = x[:, :, r[:, None], c[None, :]]
            take = (r_ok[:, None] & c_ok[None, :]) & ((value > best) | np.isnan(value))
            best = np.where(take, value, best)
            index = np.where(take, r[:, None] * width + c[None, :], index)
    return index


def _gather_windows(x: Tensor, index: np.ndarray) -> Tensor:
    """y[n, c, o] = x[n, c].flatten()[index[n, c, o]] (differentiable ``gather``)."""
    n, c, oh, ow = index.shape
    flat = x.reshape(n, c, -1)
    return flat.gather(2, Tensor._make(index.reshape(n, c, oh * ow))).reshape(n, c, oh, ow)


def _regular_taps(size: int, out: int, k: int, s: int, p: int, d: int):
    """(positions, valid), each (k, out): input position of tap t of window o."""
    pos = np.arange(out)[None, :] * s - p + np.arange(k)[:, None] * d
    return pos, (pos >= 0) & (pos < size)


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, n, op):
    x, unbatched = _batched(input, n, op)
    if not x.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {x.dtype}")
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, dilation, n, op)
    x = _as_2d(x, n)
    outs = _out_sizes(x, kernel, stride, padding, dilation, ceil_mode, n, op)
    taps = [
        _regular_taps(s, o, k, st, p, d)
        for s, o, k, st, p, d in zip(x.shape[2:], outs, kernel, stride, padding, dilation)
    ]
    index = _window_argmax(x._data, *taps)
    empty = ~(taps[0][1].any(0)[:, None] & taps[1][1].any(0)[None, :])
    if empty.any():  # windows wholly in the padding: -inf, no gradient (torch's)
        inside = np.where(empty, 0, index)
        y = _gather_windows(x, inside).masked_fill(Tensor._make(empty), -math.inf)
    else:
        y = _gather_windows(x, index)
    y = _restore(y, n, unbatched)
    if not return_indices:
        return y
    return y, _restore(Tensor._make(index), n, unbatched)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = True,
):
    """:func:`max_pool2d` that returns ``(output, indices)`` (indices flat into H * W)."""
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
    """:func:`max_pool1d` that returns ``(output, indices)``."""
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


def _avg_divisor(size, out, k, s, p, count_include_pad: bool) -> np.ndarray:
    """Per output position along one dim: the window's length counted as torch counts it."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if count_include_pad:
        return (end - start).astype(np.float64)
    return (np.minimum(end, size) - np.maximum(start, 0)).astype(np.float64)


def _avg_pool(
    input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, n, op
):
    x, unbatched = _batched(input, n, op)
    if not x.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {x.dtype}")
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, 1, n, op)
    if divisor_override is not None and (
        not isinstance(divisor_override, numbers.Integral) or divisor_override == 0
    ):
        raise RuntimeError(f"{op}: divisor_override must be a non-zero int, got {divisor_override}")
    x = _as_2d(x, n)
    outs = _out_sizes(x, kernel, stride, padding, dilation, ceil_mode, n, op)
    spatial = x.shape[2:]
    # zero padding: p before; after, p plus whatever the last (ceil_mode) window overhangs
    extra = [
        max(0, (o - 1) * s + k - (h + 2 * p))
        for o, s, k, h, p in zip(outs, stride, kernel, spatial, padding)
    ]
    amounts = (padding[1], padding[1] + extra[1], padding[0], padding[0] + extra[0])
    if any(amounts):
        x = pad(x, amounts)
    batch, channels = x.shape[:2]
    cols = unfold(x, kernel, stride=stride)  # (N, C * kh * kw, OH * OW)
    sums = cols.reshape(batch, channels, kernel[0] * kernel[1], outs[0], outs[1]).sum(2)
    if divisor_override is not None:
        div = np.full(outs, float(divisor_override))
    else:
        dh, dw = (
            _avg_divisor(h, o, k, s, p, count_include_pad)
            for h, o, k, s, p in zip(spatial, outs, kernel, stride, padding)
        )
        div = dh[:, None] * dw[None, :]
    y = sums / Tensor._make(div.astype(x._data.dtype))
    return _restore(y, n, unbatched)


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
    spatial = x.shape[2:]
    out = []
    for s, size in zip(sizes, spatial):
        if s is None:
            out.append(size)
        elif not isinstance(s, numbers.Integral) or isinstance(s, bool) or s < 1:
            raise RuntimeError(
                f"{op}: output_size must be positive ints (or None), got {output_size!r}"
            )
        else:
            out.append(int(s))
    return tuple(out)


def _adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Window o covers ``[floor(o size / out), ceil((o + 1) size / out))``."""
    o = np.arange(out)
    return (o * size) // out, -((-(o + 1) * size) // out)


def _adaptive_taps(size: int, out: int):
    """(positions, valid), each (T, out) with T the longest window; invalid taps repeat the
    window's last position (so they never change a max)."""
    start, end = _adaptive_bounds(size, out)
    longest = int((end - start).max())
    pos = start[None, :] + np.arange(longest)[:, None]
    valid = pos < end[None, :]
    return np.minimum(pos, end[None, :] - 1), valid


def _adaptive_avg(input, output_size, n: int, op: str) -> Tensor:
    x, unbatched = _batched(input, n, op)
    if not x.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {x.dtype}")
    outs = _adaptive_sizes(x, output_size, n, op)
    spatial = tuple(x.shape[2:])
    if all(size % out == 0 for size, out in zip(spatial, outs)):
        # equal windows that tile the input (global pooling, 32 -> 8 ...): a reshape and a
        # mean, ~20x faster than the tap-by-tap resample at (8, 16, 32, 32) -> 1
        split = tuple(d for size, out in zip(spatial, outs) for d in (out, size // out))
        y = x.reshape(*x.shape[:2], *split).mean(tuple(range(3, 3 + 2 * n, 2)))
        return y.squeeze(0) if unbatched else y
    dtype = x._data.dtype
    weights = []
    for i, (size, out) in enumerate(zip(x.shape[2:], outs)):
        pos, valid = _adaptive_taps(size, out)
        share = (1.0 / valid.sum(0)).astype(dtype)
        taps = tuple((p, np.where(v, share, 0).astype(dtype)) for p, v in zip(pos, valid))
        weights.append((2 + i, taps))
    y = Resample.apply(x, tuple(weights))
    return y.squeeze(0) if unbatched else y


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


def _adaptive_max(input, output_size, return_indices: bool, n: int, op: str):
    x, unbatched = _batched(input, n, op)
    if not x.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {x.dtype}")
    outs = _adaptive_sizes(x, output_size, n, op)
    x = _as_2d(x, n)
    outs = (1, *outs) if n == 1 else outs
    taps = [_adaptive_taps(size, out) for size, out in zip(x.shape[2:], outs)]
    index = _window_argmax(x._data, *taps)
    empty = ~(taps[0][1].any(0)[:, None] & taps[1][1].any(0)[None, :])
    if empty.any():  # windows wholly in the padding: -inf, no gradient (torch's)
        inside = np.where(empty, 0, index)
        y = _gather_windows(x, inside).masked_fill(Tensor._make(empty), -math.inf)
    else:
        y = _gather_windows(x, index)
    y = _restore(y, n, unbatched)
    if not return_indices:
        return y
    return y, _restore(Tensor._make(index), n, unbatched)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max over the windows of :func:`adaptive_avg_pool2d`; ``return_indices`` as in
    :func:`max_pool2d`. Gradient: ``dx[i] = sum of g[o] over windows whose max is i``."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max over the windows of :func:`adaptive_avg_pool1d`.

    Gradient: ``dx[i] = sum of g[o] over the windows o whose maximum is input i``.
    """
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """:func:`adaptive_max_pool2d` returning ``(output, indices)``."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """:func:`adaptive_max_pool1d` returning ``(output, indices)``."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


# -- power-average pooling ----------------------------------------------------------------------


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n: int, op: str) -> Tensor:
    if not isinstance(norm_type, numbers.Real) or norm_type == 0:
        raise ValueError(f"{op}: norm_type must be a non-zero number, got {norm_type!r}")
    kernel = _ints(kernel_size, n, "kernel_size", op)
    if norm_type == math.inf:  # the limit: the largest |x| of each window (torch's)
        max_pool = max_pool2d if n == 2 else max_pool1d
        return max_pool(input.abs(), kernel, stride, 0, ceil_mode=ceil_mode)
    pool = avg_pool2d if n == 2 else avg_pool1d
    out = pool(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    count = int(np.prod(kernel))
    return (out.sign() * out.abs().relu()).mul(count).pow(1.0 / norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``y = (sum over the window of x^p)^(1/p)`` (torch's formula
    ``(k * avg_pool2d(x^p))^(1/p)``; p = inf is max pooling of ``|x|``, p = 1 sum pooling).

    Gradient: ``dx = g * x^(p-1) * y^(1-p)`` per window element (via the composite).
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling along L: ``y = (sum over the window of x^p)^(1/p)``.

    Gradient: ``dx = g * x^(p-1) * y^(1-p)`` per window element (via the composite).
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


# -- unpooling ----------------------------------------------------------------------------------


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n: int, op: str):
    x, unbatched = _batched(input, n, op)
    if not isinstance(indices, Tensor) or tuple(indices.shape) != tuple(input.shape):
        got = list(indices.shape) if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(
            f"{op}: expected indices of the input's shape {list(input.shape)}, got {got}"
        )
    if indices._data.dtype.kind not in "iu":
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
    if min(outs) < 1:
        raise RuntimeError(f"{op}: the output size {outs} must be positive")
    total = int(np.prod(outs))
    idx = indices._data.reshape(x.shape[0], x.shape[1], -1).astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        bad = int(idx.min() if idx.min() < 0 else idx.max())
        raise RuntimeError(
            f"{op}: found an invalid max index {bad} (output spatial size {outs} holds "
            f"{total} positions)"
        )
    flat = x.reshape(x.shape[0], x.shape[1], -1)
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
