"""Pooling on NumPy arrays: the checks before the numba kernels, and their NumPy twins.

``tinyattn.nn.functional.pool_windows`` (``MaxPool``, ``MaxPoolGrad``, ``AvgPool``, ``AvgPoolGrad``)
calls these. Arrays are ``(..., *spatial)`` with ``n = windows.ndim`` spatial dims
(1, 2 or 3); the leading dims are the planes (N * C) the kernels run in parallel over.
A :class:`Windows` says which input positions each output position pools along each
spatial dim (see ``_numba_pool`` for the formulas). float32 and float64 arrays go to
the kernels unless ``TINYATTN_KERNELS=numpy``; other dtypes, and that switch, run the
twins, which read like the formulas and are what ``tests/kernels/test_pool_kernels.py``
holds the kernels to. Shapes, dtypes, window bounds and indices are all checked here:
the kernels check nothing.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product
from typing import NamedTuple

import numpy as np

from ..foundations.type_names import type_name
from . import backend
from ._threads import launch_sized

__all__ = ["Windows", "max_pool_argmax", "gather", "scatter_add", "avg_pool", "avg_pool_backward"]

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Windows(NamedTuple):
    """Per spatial dim: window o covers ``range(start[o], stop[o], step)`` (clipped to the
    input: empty when ``start[o] >= stop[o]``)."""

    start: tuple  # of int64 arrays, one per spatial dim
    stop: tuple
    step: tuple  # of ints

    # hashed and compared by identity (arrays have no value hash): the window builders
    # cache their Windows, and what the boundary derives from one is cached per object
    __hash__ = object.__hash__
    __eq__ = object.__eq__

    @property
    def ndim(self) -> int:
        return len(self.start)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(len(s) for s in self.start)

    def empty(self) -> np.ndarray:
        """bool of the output's spatial shape: windows with no input position."""
        return _empty(self)

    def lifted(self) -> tuple:
        """(start, stop, step) per dim of the kernels' (D, H, W), missing dims of size 1."""
        return _lifted(self)


@lru_cache(maxsize=256)
def _empty(windows: Windows) -> np.ndarray:
    out = np.zeros(windows.out_shape, dtype=bool)
    for dim, (a, b) in enumerate(zip(windows.start, windows.stop)):
        shape = [1] * windows.ndim
        shape[dim] = -1
        out = out | (a >= b).reshape(shape)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def _lifted(windows: Windows) -> tuple:
    one = (np.zeros(1, np.int64), np.ones(1, np.int64), 1)
    dims = [one] * (3 - windows.ndim)
    dims += [
        (np.ascontiguousarray(a, np.int64), np.ascontiguousarray(b, np.int64), int(s))
        for a, b, s in zip(windows.start, windows.stop, windows.step)
    ]
    return tuple(dims)


@lru_cache(maxsize=256)
def _reads_per_plane(windows: Windows) -> int:
    """Input elements the windows of one plane span (with repeats): the work of a launch."""
    total = 1
    for a, b in zip(windows.start, windows.stop):
        total *= int(np.maximum(np.asarray(b) - np.asarray(a), 0).sum())
    return total


# Below this much work (about one element read per unit) a pool kernel runs on the calling
# thread only. Adaptive pooling (8, 16, 32, 32) -> 7 is about 0.2 M units: its kernels
# took 0.16-0.18 ms on one thread and 0.44-0.53 ms on two (best of 50, the 2-core machine
# loaded by other work), where the wake-up of the second thread costs more than it saves.
POOL_PARALLEL_MIN = 1 << 20


def _run(kernel, work: int, *args) -> None:
    """``kernel(*args)``, on numba's threads when ``work`` is worth it, else on this one."""
    launch_sized(kernel, work, POOL_PARALLEL_MIN, *args)


def _reads(planes: int, windows: Windows) -> int:
    """Input elements the windows read over all planes (with repeats)."""
    return planes * _reads_per_plane(windows)


def _use_kernel(*arrays: np.ndarray) -> bool:
    return (
        arrays[0].dtype in _DTYPES
        and all(a.dtype == arrays[0].dtype for a in arrays)
        and backend() != "numpy"
    )


def _c_order(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _planes(x: np.ndarray, n: int, name: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """``x`` as (P, D, H, W) (C order) and its spatial shape."""
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.ndim < n:
        got = f"{x.dtype} {x.shape}" if isinstance(x, np.ndarray) else type_name(x)
        raise ValueError(f"{name}: expected a floating array with {n} spatial dims, got {got}")
    spatial = x.shape[x.ndim - n :]
    planes = int(np.prod(x.shape[: x.ndim - n]))
    return _c_order(x).reshape((planes,) + (1,) * (3 - n) + spatial), spatial


@lru_cache(maxsize=256)
def _check_windows(windows: Windows, spatial: tuple[int, ...]) -> None:
    """(Once per windows and input size: the windows are not changed after they are made.)"""
    for dim, (a, b, s, size) in enumerate(zip(*windows, spatial)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.ndim != 1 or a.size == 0 or int(s) < 1:
            raise ValueError(
                f"windows: dim {dim}: expected start and stop of one length, step >= 1"
            )
        if a.min() < 0 or b.max() > size:
            raise ValueError(f"windows: dim {dim}: a window reaches outside [0, {size})")


def _check_index(index: np.ndarray, shape: tuple) -> np.ndarray:
    """(Entries outside the plane are no error: gather reads ``fill`` there and scatter
    drops them, in the kernels as in the twins; a kernel never reads out of bounds.)"""
    if not isinstance(index, np.ndarray) or index.dtype != np.int64 or index.shape != shape:
        got = f"{index.dtype} {index.shape}" if isinstance(index, np.ndarray) else type(index)
        raise ValueError(f"index: expected an int64 array of shape {shape}, got {got}")
    return _c_order(index)


# -- max pooling --------------------------------------------------------------------------------


def max_pool_argmax(x: np.ndarray, windows: Windows) -> np.ndarray:
    """int64 ``(..., *windows.out_shape)``: each window's flat position (into the spatial
    dims) of its maximum: the first maximum in a tie, the last NaN if any; an empty window
    gives its first position (which may lie past the end, as torch's)."""
    n = windows.ndim
    planes, spatial = _planes(x, n, "x")
    _check_windows(windows, spatial)
    lead = x.shape[: x.ndim - n]
    index = np.empty((planes.shape[0],) + (1,) * (3 - n) + windows.out_shape, np.int64)
    (d0, d1, ds), (h0, h1, hs), (w0, w1, ws) = windows.lifted()
    if _use_kernel(planes):
        from ._numba_pool import max_pool_argmax as kernel

        width = planes.shape[-1]
        col_max = np.empty((len(planes), width), x.dtype)  # (scratch: a row per plane)
        col_at = np.empty((len(planes), width), np.int64)
        work = _reads(len(planes), windows)
        args = (d0, d1, ds, h0, h1, hs, w0, w1, ws, col_max, col_at, index)
        _run(kernel, work, planes, *args)
    else:
        _max_pool_argmax_twin(planes, (d0, d1, ds), (h0, h1, hs), (w0, w1, ws), index)
    return index.reshape(lead + windows.out_shape)


def _max_pool_argmax_twin(x, dims_d, dims_h, dims_w, index) -> None:
    """The kernel's rule one output position at a time, vectorised over the planes: the
    window's flat positions in scan order, then its first maximum, or its last NaN."""
    height, width = x.shape[2:]
    dims = (dims_d, dims_h, dims_w)
    for od, oh, ow in product(*(range(len(start)) for start, _, _ in dims)):
        d, h, w = (np.arange(a[o], b[o], step) for (a, b, step), o in zip(dims, (od, oh, ow)))
        flat = ((d[:, None, None] * height + h[None, :, None]) * width + w).reshape(-1)
        first = (dims_d[0][od] * height + dims_h[0][oh]) * width + dims_w[0][ow]
        if flat.size == 0:
            index[:, od, oh, ow] = first
            continue
        window = x.reshape(x.shape[0], int(np.prod(x.shape[1:])))[:, flat]
        nan = np.isnan(window)
        last_nan = flat.size - 1 - np.argmax(nan[:, ::-1], axis=1)
        pick = np.where(nan.any(axis=1), last_nan, np.argmax(window, axis=1))
        index[:, od, oh, ow] = flat[pick]


def gather(x: np.ndarray, index: np.ndarray, n: int, fill: float) -> np.ndarray:
    """``y[p, o] = x[p, index[p, o]]`` with x ``(..., *spatial)`` (``n`` spatial dims,
    flattened) and index ``(..., *out)`` (the same leading dims); ``fill`` where the
    index is outside ``[0, size)`` (-1 marks an empty window)."""
    planes, spatial = _planes(x, n, "x")
    lead = x.shape[: x.ndim - n]
    if (
        not isinstance(index, np.ndarray)
        or index.shape[: len(lead)] != lead
        or index.ndim != x.ndim
    ):
        got = index.shape if isinstance(index, np.ndarray) else type_name(index)
        raise ValueError(f"index: expected an array of shape {lead} + {n} output dims, got {got}")
    size = int(np.prod(spatial))
    flat_x = planes.reshape(planes.shape[0], size)
    outs = int(np.prod(index.shape[len(lead) :]))  # (not -1: there may be no planes)
    flat_i = _check_index(index, index.shape).reshape(flat_x.shape[0], outs)
    out = np.empty(flat_i.shape, x.dtype)
    if _use_kernel(flat_x):
        from ._numba_pool import gather as kernel

        _run(kernel, 8 * flat_i.size, flat_x, flat_i, float(fill), out)  # (reads at random)
    else:
        inside = (flat_i >= 0) & (flat_i < size)
        picked = np.take_along_axis(flat_x, np.where(inside, flat_i, 0), axis=1)
        out[...] = np.where(inside, picked, fill)
    return out.reshape(index.shape)


def scatter_add(g: np.ndarray, index: np.ndarray, spatial: tuple[int, ...]) -> np.ndarray:
    """The adjoint of :func:`gather`: zeros of ``(..., *spatial)`` with each ``g[p, o]``
    added at ``index[p, o]`` (outside ``[0, size)``: dropped); g and index of one shape ``(..., *out)``."""
    n = len(spatial)
    if not isinstance(g, np.ndarray) or g.dtype.kind != "f" or g.ndim < n:
        raise ValueError(f"g: expected a floating array with {n} spatial dims, got {g!r:.80}")
    size = int(np.prod(spatial))
    lead = g.shape[: g.ndim - n]
    planes = int(np.prod(lead))
    outs = int(np.prod(g.shape[len(lead) :]))  # (not -1: there may be no planes)
    flat_g = _c_order(g).reshape(planes, outs)
    flat_i = _check_index(index, g.shape).reshape(planes, outs)
    dx = np.empty((planes, size), g.dtype)
    if _use_kernel(flat_g):
        from ._numba_pool import scatter_add as kernel

        _run(kernel, dx.size + 8 * flat_i.size, flat_g, flat_i, dx)
    else:
        dx[...] = 0
        rows = np.broadcast_to(np.arange(planes)[:, None], flat_i.shape)
        keep = (flat_i >= 0) & (flat_i < size)
        np.add.at(dx, (rows[keep], flat_i[keep]), flat_g[keep])
    return dx.reshape(lead + tuple(spatial))


# -- average pooling ----------------------------------------------------------------------------


def _check_divisor(divisor: np.ndarray, windows: Windows) -> np.ndarray:
    if (
        not isinstance(divisor, np.ndarray)
        or divisor.dtype != np.float64
        or divisor.shape != windows.out_shape
    ):
        raise ValueError(f"divisor: expected a float64 array of shape {windows.out_shape}")
    return np.ascontiguousarray(divisor).reshape((1,) * (3 - windows.ndim) + windows.out_shape)


def avg_pool(x: np.ndarray, windows: Windows, divisor: np.ndarray) -> np.ndarray:
    """``y[..., o] = sum of x[...] over window o / divisor[o]`` (windows of step 1)."""
    n = windows.ndim
    planes, spatial = _planes(x, n, "x")
    _check_windows(windows, spatial)
    div = _check_divisor(divisor, windows)
    out = np.empty((planes.shape[0],) + div.shape, x.dtype)
    (d0, d1, _), (h0, h1, _), (w0, w1, _) = windows.lifted()
    if _use_kernel(planes):
        from ._numba_pool import avg_pool_forward as kernel

        cols = np.empty((len(planes), planes.shape[-1]))  # (scratch: an input row per plane)
        work = _reads(len(planes), windows)
        _run(kernel, work, planes, d0, d1, h0, h1, w0, w1, div, cols, out)
    else:
        for od, oh, ow in product(range(len(d0)), range(len(h0)), range(len(w0))):
            window = planes[:, d0[od] : d1[od], h0[oh] : h1[oh], w0[ow] : w1[ow]]
            total = window.reshape(len(planes), int(np.prod(window.shape[1:]))).sum(1, np.float64)
            out[:, od, oh, ow] = total / div[od, oh, ow]
    return out.reshape(x.shape[: x.ndim - n] + windows.out_shape)


def avg_pool_backward(
    g: np.ndarray, windows: Windows, divisor: np.ndarray, spatial: tuple[int, ...]
) -> np.ndarray:
    """The adjoint of :func:`avg_pool`: ``dx[..., i] = sum over the windows o holding i of
    g[..., o] / divisor[o]``, of shape ``(..., *spatial)``."""
    n = windows.ndim
    flat_g, out_spatial = _planes(g, n, "g")
    if out_spatial != windows.out_shape:
        raise ValueError(f"g: expected spatial dims {windows.out_shape}, got {g.shape}")
    _check_windows(windows, tuple(spatial))
    div = _check_divisor(divisor, windows)
    dx = np.empty((flat_g.shape[0],) + (1,) * (3 - n) + tuple(spatial), g.dtype)
    holding, slots, reach_d, reach_h = _spread_plan(windows, dx.shape[1:3])
    (d0, d1, _), (h0, h1, _), (w0, w1, _) = windows.lifted()
    if _use_kernel(flat_g):
        from ._numba_pool import avg_pool_backward as kernel

        planes, width = len(flat_g), dx.shape[-1]
        spread = np.empty((planes, reach_d * reach_h, width))  # (scratch, per plane)
        tags = np.empty((planes, reach_d, reach_h), np.int64)
        acc = np.empty((planes, width))
        work = _reads(planes, windows)
        _run(kernel, work, flat_g, w0, w1, *holding, *slots, div, spread, tags, acc, dx)
    else:
        dx64 = np.zeros(dx.shape)
        for od, oh, ow in product(range(len(d0)), range(len(h0)), range(len(w0))):
            share = flat_g[:, od, oh, ow].astype(np.float64) / div[od, oh, ow]
            dx64[:, d0[od] : d1[od], h0[oh] : h1[oh], w0[ow] : w1[ow]] += share[:, None, None, None]
        dx[...] = dx64
    return dx.reshape(g.shape[: g.ndim - n] + tuple(spatial))


@lru_cache(maxsize=256)
def _spread_plan(windows: Windows, depth_height: tuple[int, int]) -> tuple:
    """What the backward kernel reads along D and H: (first_d, end_d, first_h, end_h), the
    slots (od % R_d, oh % R_h) and R_d, R_h, the most windows holding one position."""
    (d0, d1, _), (h0, h1, _), _ = windows.lifted()
    first_d, end_d = _holding(d0, d1, depth_height[0])
    first_h, end_h = _holding(h0, h1, depth_height[1])
    reach_d = max(int((end_d - first_d).max()), 1)
    reach_h = max(int((end_h - first_h).max()), 1)
    slots = (np.arange(len(d0)) % reach_d, np.arange(len(h0)) % reach_h)
    return (first_d, end_d, first_h, end_h), slots, reach_d, reach_h


def _holding(start: np.ndarray, stop: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """[first, end]: input position i lies in the windows first[i] <= o < end[i] (starts and
    stops never decrease, so they are a range: those that stop after i and start by i)."""
    if (np.diff(start) < 0).any() or (np.diff(stop) < 0).any():
        raise ValueError("windows: expected starts and stops that never decrease")
    i = np.arange(size)
    first = np.searchsorted(stop, i, side="right")
    end = np.maximum(np.searchsorted(start, i, side="right"), first)
    return first.astype(np.int64), end.astype(np.int64)
