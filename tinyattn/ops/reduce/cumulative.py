"""Scans along one dim: cumsum, cumprod, cummax, cummin.

``cummax`` / ``cummin`` pick input elements, so their values are
``gather(x, dim, indices)`` and the gradient is gather's (added at repeated indices).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...core.tensor import Tensor
from ...core.xp import numpy_xp
from .._accumulation import accumulates_in_float32
from .._util import gradient_doc, normalize_dim
from ..index.indexing import Gather

__all__ = ["cumsum", "cumprod", "cummax", "cummin"]

cummax_return = namedtuple("cummax", ["values", "indices"])
cummin_return = namedtuple("cummin", ["values", "indices"])
cummax_return.__module__ = cummin_return.__module__ = "tinyattn.return_types"


def _scan_dtype(x: np.ndarray, dtype) -> np.dtype:
    """torch's rule for cumsum/cumprod: ints and bools accumulate as int64."""
    if dtype is not None:
        return dt.to_dtype(dtype).np_dtype
    return np.dtype(np.int64) if x.dtype.kind in "biu" else x.dtype


def _as_scan_dtype(input: Tensor, dtype, op: str = "cumsum") -> Tensor:
    """``input`` in the dtype its scan accumulates in (NumPy would widen int32 to int64)."""
    target = _scan_dtype(input._data, dtype)
    if target == np.bool_:  # torch has no bool scan kernel
        raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")
    return input if input._data.dtype == target else input.to(dt.from_numpy_dtype(target))


class Cumsum(Function):
    """out[i] = sum_{k<=i} x[k] along ``dim``.   dx = reverse cumsum of g"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return np.cumsum(x, axis=dim, dtype=x.dtype).reshape(x.shape)  # 0-d stays 0-d

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        if g.ndim == 0:
            return g, None
        return xp.flip(xp.cumsum(xp.flip(g, ctx.dim), ctx.dim), ctx.dim), None


@accumulates_in_float32("input")
@gradient_doc(Cumsum)
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative sum along ``dim`` (ints and bools as int64, as in torch; else ``dtype``)."""
    return Cumsum.apply(_as_scan_dtype(input, dtype), normalize_dim(dim, input.ndim, "cumsum"))


def _reverse_cumsum(a: np.ndarray) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(a, -1), -1), -1)


class Cumprod(Function):
    """out[i] = prod_{k<=i} x[k] along ``dim``.

    dx[k] = sum_{i>=k} g[i] * prod_{j<=i, j!=k} x[j]. Without zeros this is
    ``reverse_cumsum(g * out)[k] / x[k]``. With zeros (first one at z) it is computed
    without dividing by zero, as torch does:

    - k < z:  reverse_cumsum over i < z of g[i] out[i], divided by x[k] (non-zero);
    - k = z:  prod_{j<z} x[j] * sum_{i>=z} g[i] prod_{z<j<=i} x[j];
    - k > z:  0 (every product holds x[z] = 0).

    Under ``create_graph`` the formula must stay differentiable in every x[j], the zeros
    included (d dx[k] / d x[z] is not 0 for k < z): without zeros it is the division above,
    with zeros the definition itself, vectorised: ``prod_{j<=i, j!=k} x[j]`` is the
    cumprod of x with x[k] replaced by 1 (an n x n matrix per slice).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        out = np.cumprod(x, axis=dim, dtype=x.dtype).reshape(x.shape)  # 0-d stays 0-d
        ctx.save_for_backward(x, out)  # (the very array returned: the output, create_graph)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        if g.ndim == 0 or 0 in g.shape or g.shape[ctx.dim] == 1:  # (d out / d x = 1, NaN too)
            return g, None
        if ctx.xp is not numpy_xp:
            return _cumprod_grad_graph(ctx.xp, x, out, g, ctx.dim), None
        x, out, g = (np.moveaxis(a, ctx.dim, -1) for a in (x, out, g))
        j = np.arange(x.shape[-1])
        zero = x == 0
        zeros_so_far = np.cumsum(zero, axis=-1)
        before = zeros_so_far == 0  # strictly before the first zero
        first = zero & (zeros_so_far == 1)  # the first zero itself
        z = np.where(zero.any(-1, keepdims=True), np.argmax(zero, -1)[..., None], x.shape[-1])
        with np.errstate(invalid="ignore", divide="ignore"):
            dx = _reverse_cumsum(np.where(before, g * out, 0)) / np.where(before, x, 1)
        dx = np.where(before, dx, 0)
        prefix = np.prod(np.where(j < z, x, 1), axis=-1, keepdims=True)  # prod_{j<z} x[j]
        tail = np.cumprod(np.where(j <= z, 1, x), axis=-1)  # prod_{z<j<=i} x[j]
        # terms after the second zero are 0 and left out (as torch: a NaN there stays out)
        upto_second = (zeros_so_far >= 1) & (zeros_so_far - zero <= 1)
        at_zero = prefix * np.sum(np.where(upto_second, g * tail, 0), -1, keepdims=True)
        dx = np.where(first, at_zero, dx)
        return np.moveaxis(dx, -1, ctx.dim).astype(g.dtype, copy=False), None


def _cumprod_grad_graph(xp, x, out, g, dim):
    """Cumprod's gradient as recorded ops (create_graph), exact and differentiable at zeros."""
    if not xp.any(x == 0):  # reverse_cumsum(g * out) / x
        return xp.flip(xp.cumsum(xp.flip(g * out, dim), dim), dim) / x
    x, g = xp.moveaxis(x, dim, -1), xp.moveaxis(g, dim, -1)
    n = x.shape[-1]
    k, i = np.arange(n)[:, None], np.arange(n)[None, :]  # rows: the element k; columns: i
    rows = xp.broadcast_to(xp.expand_dims(x, -2), tuple(x.shape[:-1]) + (n, n))
    others = xp.cumprod(xp.where(k == i, 1, rows), -1)  # [k, i] = prod_{j<=i, j!=k} x[j]
    terms = xp.where(i >= k, xp.expand_dims(g, -2) * others, 0)
    return xp.moveaxis(xp.sum(terms, axis=-1), -1, dim)


@accumulates_in_float32("input")
@gradient_doc(Cumprod)
def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative product along ``dim`` (ints and bools as int64, as in torch)."""
    d = normalize_dim(dim, input.ndim, "cumprod")
    return Cumprod.apply(_as_scan_dtype(input, dtype, "cumprod"), d)


def _cum_extreme(input: Tensor, dim: int, pick_max: bool, ret, op: str):
    """values/indices of the running max (min); a tie or NaN moves the index forward."""
    d = normalize_dim(dim, input.ndim, op)
    a = input._data if input.ndim else input._data.reshape(1)
    if a.dtype.kind == "b":
        a = a.astype(np.uint8)
    running = (np.maximum if pick_max else np.minimum).accumulate(a, axis=d)
    hit = a == running
    if a.dtype.kind == "f":
        hit |= np.isnan(a)  # NaN propagates: the index follows the latest NaN, as torch
    shape = [1] * a.ndim
    shape[d] = a.shape[d]
    position = np.where(hit, np.arange(a.shape[d]).reshape(shape), 0)
    indices = np.maximum.accumulate(position, axis=d)
    x = input if input.ndim else input.reshape(1)
    values = Gather.apply(x, d, indices.astype(np.intp))
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return ret(values, Tensor._make(indices.astype(np.int64)))


def cummax(input: Tensor, dim: int):
    """Running max along ``dim`` and the index where it was reached (the latest on ties),
    as a ``(values, indices)`` named tuple.

    Gradient: ``dx = g`` added at the returned indices (gather's backward).
    """
    return _cum_extreme(input, dim, True, cummax_return, "cummax")


def cummin(input: Tensor, dim: int):
    """Running min along ``dim`` and its index (the latest on ties).

    d input[j] = sum of g[i] over the positions i whose running min came from j (as cummax).
    """
    return _cum_extreme(input, dim, False, cummin_return, "cummin")
