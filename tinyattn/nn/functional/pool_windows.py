"""The pooling ``Function``\\ s and the windows they pool over (for ``nn._pooling``).

Every pool reads, for each output position, a window of input positions: per spatial dim,
window ``o`` covers ``range(start[o], stop[o], step)`` clipped to the input
(:class:`~tinyattn.kernels.pool.Windows`). The pools are linear in x once the windows
(and, for max pooling, each window's argmax) are fixed, so each comes as a pair of
Functions, each the other's adjoint:

- ``MaxPool`` gathers each window's argmax, ``MaxPoolGrad`` scatter-adds back to it;
- ``AvgPool`` averages each window, ``AvgPoolGrad`` spreads ``g / divisor`` over it.

A pair's backward calls the other through ``ctx.xp.apply``: on arrays that runs the
numba kernel (``tinyattn.kernels.pool``), under ``create_graph`` it records the other
Function, so second derivatives work with no extra formula.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...core.function import Function
from ...kernels import pool as kernels
from ...kernels.pool import Windows

__all__ = [
    "MaxPool",
    "MaxPoolGrad",
    "AvgPool",
    "AvgPoolGrad",
    "Windows",
    "max_windows",
    "avg_windows",
    "adaptive_windows",
]


class MaxPool(Function):
    """Max pooling given each window's argmax ``index`` (``kernels.pool.max_pool_argmax``),
    over the ``n`` last dims of x (flattened: ``x[..., i]``)::

        y[..., o] = x[..., index[..., o]]     (``fill``, -inf, where index is -1: an
                                               empty window, wholly in the padding)
        dx[..., i] = sum of g[..., o] over the o with index[..., o] = i   (``MaxPoolGrad``)

    In a tie the first maximum is the argmax, so it alone gets the gradient (torch's).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, index, n, fill):
        ctx.index, ctx.spatial = index, x.shape[x.ndim - n :]
        return kernels.gather(x, index, n, fill)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.apply(MaxPoolGrad, g, ctx.index, ctx.spatial), None, None, None


class MaxPoolGrad(Function):
    """The backward of :class:`MaxPool`, linear in g: a scatter-add to the argmax::

    dx[..., i] = sum of g[..., o] over the o with index[..., o] = i   (index -1: dropped)
    dg[..., o] = gg[..., index[..., o]]   (0 where index is -1: ``MaxPool`` with fill 0)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, g, index, spatial):
        ctx.index, ctx.n = index, len(spatial)
        return kernels.scatter_add(g, index, tuple(spatial))

    @staticmethod
    def backward(ctx, gg):
        return ctx.xp.apply(MaxPool, gg, ctx.index, ctx.n, 0.0), None, None


class AvgPool(Function):
    """Average over each window (over the last ``windows.ndim`` dims of x)::

    y[..., o] = sum of x[..., i] over the i in window o / divisor[o]
    dx[..., i] = sum over the windows o holding i of g[..., o] / divisor[o]  (``AvgPoolGrad``)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, windows, divisor):
        ctx.windows, ctx.divisor = windows, divisor
        ctx.spatial = x.shape[x.ndim - windows.ndim :]
        return kernels.avg_pool(x, windows, divisor)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        return xp.apply(AvgPoolGrad, g, ctx.windows, ctx.divisor, ctx.spatial), None, None


class AvgPoolGrad(Function):
    """The backward of :class:`AvgPool`, linear in g::

    dx[..., i] = sum over the windows o holding i of g[..., o] / divisor[o]
    dg[..., o] = sum of gg[..., i] over window o / divisor[o]    (``AvgPool`` itself)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, g, windows, divisor, spatial):
        ctx.windows, ctx.divisor = windows, divisor
        return kernels.avg_pool_backward(g, windows, divisor, tuple(spatial))

    @staticmethod
    def backward(ctx, gg):
        return ctx.xp.apply(AvgPool, gg, ctx.windows, ctx.divisor), None, None, None


# -- windows ------------------------------------------------------------------------------------


def _frozen(*arrays):
    """The arrays made read-only: built once per set of arguments and shared by every call."""
    for a in arrays:
        a.setflags(write=False)


@lru_cache(maxsize=256)
def max_windows(spatial, outs, kernel, stride, padding, dilation) -> Windows:
    """Window o along a dim: taps ``o s - p + t d`` (t < k) inside ``[0, size)``.

    ``start`` is the first tap at or past 0 (torch's: in a window wholly in the padding,
    possible with dilation, it lies past the end and the window is empty)."""
    starts, stops = [], []
    for size, out, k, s, p, d in zip(spatial, outs, kernel, stride, padding, dilation):
        raw = np.arange(out, dtype=np.int64) * s - p
        stops.append(np.minimum(raw + (k - 1) * d + 1, size))
        starts.append(np.where(raw < 0, raw - d * (raw // d), raw))  # + d ceil(-raw / d)
    _frozen(*starts, *stops)
    return Windows(tuple(starts), tuple(stops), tuple(int(d) for d in dilation))


@lru_cache(maxsize=256)
def avg_windows(spatial, outs, kernel, stride, padding, count_include_pad, divisor_override):
    """(windows, divisor) of average pooling: window o covers ``[o s - p, o s - p + k)`` cut
    to the padded input, then clipped to the input; its divisor is ``divisor_override``,
    else the product of the lengths (padded ones with ``count_include_pad``)."""
    starts, stops, counts = [], [], []
    for size, out, k, s, p in zip(spatial, outs, kernel, stride, padding):
        raw = np.arange(out, dtype=np.int64) * s - p
        end = np.minimum(raw + k, size + p)
        start, stop = np.maximum(raw, 0), np.minimum(end, size)
        starts.append(start)
        stops.append(stop)
        counts.append(end - raw if count_include_pad else np.maximum(stop - start, 0))
    _frozen(*starts, *stops)
    windows = Windows(tuple(starts), tuple(stops), (1,) * len(starts))
    if divisor_override is not None:
        divisor = np.full(windows.out_shape, float(divisor_override))
    else:
        divisor = _outer(counts)
    _frozen(divisor)
    return windows, divisor


@lru_cache(maxsize=256)
def adaptive_windows(spatial, outs) -> tuple[Windows, np.ndarray]:
    """(windows, divisor) of adaptive pooling: window o of a dim of size n pooled to m
    covers ``[floor(o n / m), ceil((o + 1) n / m))``; the divisor is its size."""
    starts, stops = [], []
    for size, out in zip(spatial, outs):
        o = np.arange(out, dtype=np.int64)
        starts.append((o * size) // out)
        stops.append(-((-(o + 1) * size) // out))
    lengths = [b - a for a, b in zip(starts, stops)]
    divisor = _outer(lengths)
    _frozen(*starts, *stops, divisor)
    return Windows(tuple(starts), tuple(stops), (1,) * len(starts)), divisor


def _outer(lengths) -> np.ndarray:
    """float64 product of per-dim lengths over the output grid (0 -> 1: an empty window
    sums to 0, and 0 / 1 is torch's 0)."""
    out = np.ones(tuple(len(n) for n in lengths))
    for dim, n in enumerate(lengths):
        shape = [1] * len(lengths)
        shape[dim] = -1
        out = out * n.reshape(shape)
    return np.where(out == 0, 1.0, out)
