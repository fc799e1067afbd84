"""Writing into a copy: select/slice/diagonal_scatter, index_copy, index_put, masked_scatter,
and scatter_reduce (sum, prod, mean, amax, amin, with or without the input's own values).

The plain writes are :class:`~tinyattn.ops.index.indexing.IndexPut` with an index built here
(``out = x; out[index] = src``), so their gradients are its own: ``dx = g`` zeroed where
written, ``dsrc = g[index]``.
"""

from __future__ import annotations

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc, normalize_dim
from ..shape.views import movedim, reshape
from .indexing import (
    IndexPut,
    Scatter,
    _check_gather_shapes,
    _grid,
    _index_tensor,
    _mask,
    _put_index,
    _put_value,
    _scatter_args,
    _select_index,
    setitem,
)

__all__ = [
    "select_scatter",
    "slice_scatter",
    "diagonal_scatter",
    "index_copy",
    "index_copy_",
    "index_put",
    "masked_scatter",
    "scatter_reduce",
    "scatter_reduce_",
]


def _src(src, op: str) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type_name(src)}")
    return src


def _check_slot(src: Tensor, slot_shape, op: str) -> None:
    if tuple(src.shape) != tuple(slot_shape):
        raise RuntimeError(
            f"{op}(): expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(slot_shape)}"
        )


@gradient_doc(IndexPut)
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``input.select(dim, index)``'s place."""
    src = _src(src, "select_scatter")
    d = normalize_dim(dim, input.ndim, "select_scatter")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(
            f"select_scatter(): index {index} out of range for tensor of size "
            f"{list(input.shape)} at dimension {d}"
        )
    _check_slot(src, input.shape[:d] + input.shape[d + 1 :], "select_scatter")
    return IndexPut.apply(input, src, (slice(None),) * d + (int(index) % size,))


@gradient_doc(IndexPut)
def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1
) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``input[..., start:end:step, ...]`` (on ``dim``)."""
    src = _src(src, "slice_scatter")
    d = normalize_dim(dim, input.ndim, "slice_scatter")
    if int(step) <= 0:
        raise RuntimeError(f"slice_scatter(): slice step must be positive, got {step}")
    index = (slice(None),) * d + (slice(start, end, int(step)),)
    _check_slot(src, np.empty(input.shape, np.bool_)[index].shape, "slice_scatter")
    return IndexPut.apply(input, src, index)


@gradient_doc(IndexPut)
def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """A copy of ``input`` with ``src`` written on ``input.diagonal(offset, dim1, dim2)``."""
    src = _src(src, "diagonal_scatter")
    d1 = normalize_dim(dim1, input.ndim, "diagonal_scatter")
    d2 = normalize_dim(dim2, input.ndim, "diagonal_scatter")
    if d1 == d2:
        raise RuntimeError(f"diagonal_scatter(): dim1 and dim2 cannot be identical, got {d1}")
    rows = np.arange(input.shape[d1])
    cols = rows + offset
    keep = (cols >= 0) & (cols < input.shape[d2])
    rows, cols = rows[keep], cols[keep]
    slot = np.diagonal(np.empty(input.shape, np.bool_), offset, d1, d2).shape
    _check_slot(src, slot, "diagonal_scatter")
    # the two dims last: the advanced index then lays the diagonal out last, as diagonal() does
    moved = movedim(input, (d1, d2), (-2, -1))
    out = IndexPut.apply(moved, src, (Ellipsis, rows, cols))
    return movedim(out, (-2, -1), (d1, d2))


def _index_copy_args(input: Tensor, dim, index, source, op: str):
    d, idx = _select_index(input, dim, index, op)
    source = _src(source, op) if not isinstance(source, Tensor) else source
    expected = input.shape[:d] + (idx.size,) + input.shape[d + 1 :] if input.ndim else ()
    if tuple(source.shape) != expected:
        raise RuntimeError(
            f"{op}(): source of shape {list(source.shape)} does not match: expected "
            f"{list(expected)} (input shape {list(input.shape)} with dim {d} of size {idx.size})"
        )
    return source, (slice(None),) * d + (idx,)


@gradient_doc(IndexPut)
def index_copy(input: Tensor, dim: int, index, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source``'s slices written at positions ``index`` along
    ``dim`` (``out.index_select(dim, index) == source`` when ``index`` has no repeats)."""
    source, sel = _index_copy_args(input, dim, index, source, "index_copy")
    return IndexPut.apply(input, source, sel)


def index_copy_(input: Tensor, dim: int, index, source: Tensor) -> Tensor:
    source, sel = _index_copy_args(input, dim, index, source, "index_copy_")
    return input._apply_inplace(IndexPut, source, sel)


@gradient_doc(IndexPut)
def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written (or, with ``accumulate``, added) at
    ``input[indices]`` (a tuple of index tensors)."""
    idx, accumulate = _put_index(input, indices, accumulate)
    return IndexPut.apply(input, _put_value(values), idx, accumulate)


def masked_scatter(input: Tensor, mask, source: Tensor) -> Tensor:
    """A copy of ``input`` (broadcast with ``mask``) with the first elements of ``source``,
    in row-major order, written where ``mask`` is True.

    Composes: tinyattn.clone, Tensor.__setitem__, tinyattn.reshape
    """
    m = _mask(mask, input, "masked_scatter")
    shape = np.broadcast_shapes(m.shape, input.shape)
    out = input.expand(shape).clone() if input.shape != shape else input.clone()
    m = np.broadcast_to(m, shape)
    n = int(m.sum())
    if source.numel() < n:
        raise RuntimeError(
            f"masked_scatter(): Number of elements of source < number of ones in mask: source "
            f"of shape {list(source.shape)} has {source.numel()} elements, the mask has {n} ones"
        )
    setitem(out, Tensor._make(m), reshape(source, -1)[:n])
    return out


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduce(Function):
    """out = x with src reduced into it at index along dim (sum, mean, amax or amin),
    counting x's own value unless ``include_self=False``.  For dim 0:
    ``out[index[i][j]][j] = reduce(x[index[i][j]][j], src[i][j], ...)``.

    sum:  dx = g (0 where written without self),  dsrc = g[index]
    mean: dx = g / count,  dsrc = (g / count)[index]   (count: values reduced into each slot)
    amax, amin: dx = g * (x == out) / n,  dsrc = g[index] * (src == out[index]) / n[index]
          (n: how many of the reduced values equal the result: ties share g; torch also
          counts an excluded self (include_self=False) equal to the result, which gives
          the src values less than the true gradient; we count only reduced values)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce, include_self):
        grid = _grid(index, dim)
        vals = src[tuple(slice(0, n) for n in index.shape)]
        out = x.copy()
        if not include_self:
            out[grid] = _identity(reduce, x.dtype)
        ufunc = {"amax": np.maximum, "amin": np.minimum}.get(reduce, np.add)
        ufunc.at(out, grid, vals)
        self_in = np.ones(x.shape, dtype=np.bool_)
        if not include_self:
            self_in[grid] = False
        # the weights g is multiplied by: constants of the forward, as amax's own backward
        w_self, w_src = self_in.astype(x.dtype), None
        if reduce == "mean":
            count = self_in.astype(x.dtype)
            np.add.at(count, grid, 1)
            count = np.maximum(count, 1)
            out = out // count if x.dtype.kind in "iu" else out / count
            w_self, w_src = w_self / count, (1 / count)[grid]
        elif reduce in ("amax", "amin"):
            self_hit = self_in & (x == out)
            src_hit = vals == out[grid]
            n = self_hit.astype(x.dtype)
            np.add.at(n, grid, src_hit)
            # a NaN result equals none of its values (n = 0): torch's g * hit / n is then
            # 0 * inf = NaN for every value reduced into that slot; we give the same
            nan_slot = n == 0
            n = np.where(nan_slot, 1, n)
            w_self = np.where(nan_slot & self_in, np.nan, self_hit / n)
            w_src = np.where(nan_slot[grid], np.nan, src_hit / n[grid])
        ctx.grid, ctx.src_shape, ctx.index_shape = grid, src.shape, index.shape
        ctx.w_self, ctx.w_src = w_self, w_src
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        gx = g * ctx.w_self
        gsrc = xp.getitem(g, ctx.grid)
        if ctx.w_src is not None:
            gsrc = gsrc * ctx.w_src
        pad = [(0, s - n) for s, n in zip(ctx.src_shape, ctx.index_shape)]
        if any(p for _, p in pad):
            gsrc = xp.zero_pad(gsrc, pad)
        return gx, None, None, gsrc, None, None


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    return -big if reduce == "amax" else big


class ScatterProd(Function):
    """out = x with src multiplied into it at index along dim (x's value counted unless
    ``include_self=False``).

    d v = g[slot] * (product of the other values reduced into v's slot), for v = x or src
    (exact at zeros: one zero gets the product of the rest, the others 0; second derivatives
    are exact away from zeros)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, index, src, include_self):
        grid = _grid(index, dim)
        region = tuple(slice(0, n) for n in index.shape)
        self_in = np.ones(x.shape, dtype=np.bool_)
        if not include_self:
            self_in[grid] = False
        out = np.where(self_in, x, np.ones((), x.dtype))
        x_zero, src_zero = (out == 0), (src[region] == 0)
        np.multiply.at(out, grid, src[region])
        zeros = x_zero.astype(np.int64)  # how many zeros each slot holds
        np.add.at(zeros, grid, src_zero)
        ctx.save_for_backward(x, src)
        ctx.grid, ctx.dim, ctx.index, ctx.region = grid, dim, index, region
        ctx.self_in, ctx.zeros, ctx.x_zero, ctx.src_zero = self_in, zeros, x_zero, src_zero
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, src = ctx.saved_tensors
        grid, zeros = ctx.grid, ctx.zeros
        x_nz = xp.where(ctx.x_zero | ~ctx.self_in, 1, x)  # zeros (and excluded x) as 1
        s_nz = xp.where(ctx.src_zero, 1, xp.getitem(src, ctx.region))
        nonzero_prod = xp.apply(ScatterProd, x_nz, ctx.dim, ctx.index, s_nz, True)
        dtype = g.dtype if isinstance(g, np.ndarray) else g._data.dtype

        def others(prod, v_nz, is_zero, n):  # the product of the slot's other values
            one, none = (n == 1).astype(dtype), (n == 0).astype(dtype)
            return xp.where(is_zero, prod * one, prod * none / v_nz)

        # excluded x values get 0, also where the slot's product is NaN or inf (0 * NaN)
        gx = xp.where(ctx.self_in, g * others(nonzero_prod, x_nz, ctx.x_zero, zeros), 0)
        prod_at = xp.getitem(nonzero_prod, grid)
        gsrc = xp.getitem(g, grid) * others(prod_at, s_nz, ctx.src_zero, zeros[grid])
        pad = [(0, s - n.stop) for s, n in zip(src.shape, ctx.region)]
        if any(p for _, p in pad):
            gsrc = xp.zero_pad(gsrc, pad)
        return gx, None, None, gsrc, None


def _scatter_reduce_args(input, dim, index, src, reduce, op):
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # torch takes both spellings
    if reduce not in _REDUCES:
        raise RuntimeError(
            f"{op}(): reduce argument must be either sum, prod, mean, amax or amin, got {reduce!r}"
        )
    src = _src(src, op)
    d = normalize_dim(dim, input.ndim, op)
    idx = _index_tensor(index, op)
    _check_gather_shapes(input.shape, idx, d, op)
    if src.ndim != idx.ndim or any(i > s for i, s in zip(idx.shape, src.shape)):
        raise RuntimeError(
            f"{op}(): Expected index {list(idx.shape)} to be no larger than src "
            f"{list(src.shape)} in every dimension"
        )
    if src.dtype != input.dtype:
        raise RuntimeError(
            f"{op}(): Expected self.dtype to be equal to src.dtype: self is "
            f"{input.dtype.name}, src is {src.dtype.name}"
        )
    return d, idx, src, reduce


@gradient_doc(ScatterReduce)
def scatter_reduce(
    input: Tensor, dim: int, index, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """``input`` with ``src`` reduced in at ``index`` along ``dim``: ``reduce`` is "sum",
    "prod", "mean", "amax" or "amin" (prod's gradient: :class:`ScatterProd`'s)."""
    d, idx, src, reduce = _scatter_reduce_args(input, dim, index, src, reduce, "scatter_reduce")
    if reduce == "prod":
        return ScatterProd.apply(input, d, idx, src, bool(include_self))
    return ScatterReduce.apply(input, d, idx, src, reduce, bool(include_self))


def scatter_reduce_(
    input: Tensor, dim: int, index, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    d, idx, src, reduce = _scatter_reduce_args(input, dim, index, src, reduce, "scatter_reduce_")
    if reduce == "prod":
        return input._apply_inplace(ScatterProd, d, idx, src, bool(include_self))
    return input._apply_inplace(ScatterReduce, d, idx, src, reduce, bool(include_self))


def scatter_multiply(input: Tensor, d: int, idx, src, inplace: bool) -> Tensor:
    """``scatter(..., reduce="multiply")`` (called by :func:`indexing.scatter`): a product
    reduction including ``input``; a number ``src`` is first cast to ``input``'s dtype."""
    if not isinstance(src, Tensor):
        src = Tensor._make(np.full(np.shape(idx), src).astype(input._data.dtype))
    index = idx if isinstance(idx, Tensor) else Tensor._make(np.asarray(idx))
    return (scatter_reduce_ if inplace else scatter_reduce)(input, d, index, src, "prod")


def scatter_with_reduce(input, dim, index, src, value, reduce, inplace: bool, op: str) -> Tensor:
    """:func:`indexing.scatter` / ``scatter_``: a write, or with ``reduce`` an add or a product."""
    d, idx, src = _scatter_args(input, dim, index, src, value, op)
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(
            f"{op}(): reduce argument must be either add or multiply, got {reduce!r}"
        )
    if reduce == "multiply":  # a product reduction, as torch (it was silently a write)
        return scatter_multiply(input, d, idx, src, inplace)
    if inplace:
        return input._apply_inplace(Scatter, d, idx, src, reduce == "add")
    return Scatter.apply(input, d, idx, src, reduce == "add")
