"""Indexing: ``x[idx]``, ``x[idx] = v``, gather/scatter, masked_fill, index_select, nonzero.

Reading ``x[idx]`` is differentiable; its backward is a scatter-add of the
gradient into zeros (``np.add.at``), so an index that repeats receives the sum
of the gradients of all its copies.
"""

from __future__ import annotations

import numpy as np

from ...core import primitives
from ...core.function import Function
from ...core.grad_mode import is_grad_enabled
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc, normalize_dim
from ..inplace import check_inplace_allowed
from ..shape.views import _as_view

__all__ = [
    "gather",
    "scatter",
    "scatter_add",
    "index_select",
    "index_fill",
    "index_add",
    "masked_fill",
    "masked_select",
    "nonzero",
    "argwhere",
]


def _convert_index(index, shape, op: str = "index"):
    """A Python/torch index as a NumPy index: tensors become arrays, bounds are checked."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        kind = type(item)
        if kind is int or item is None or item is Ellipsis:  # the common cases first
            out.append(item)
        elif kind is slice and item.step is None and not isinstance(item.start, Tensor):
            out.append(
                item if not isinstance(item.stop, Tensor) else slice(item.start, int(item.stop))
            )
        elif isinstance(item, Tensor):
            arr = item._data
            if arr.dtype.kind == "f":
                raise IndexError(
                    f"{op}: tensors used as indices must be long, int, byte or bool tensors, "
                    f"got {item.dtype}"
                )
            if arr.dtype == np.uint8:
                arr = arr.astype(bool)
            out.append(arr)
        elif isinstance(item, (list,)) and item and any(isinstance(v, Tensor) for v in item):
            out.append(np.asarray([v._data if isinstance(v, Tensor) else v for v in item]))
        elif isinstance(item, slice):
            if item.step is not None and int(item.step) <= 0:
                raise ValueError(
                    f"{op}: step must be greater than zero, got slice step {item.step}"
                )
            out.append(
                slice(
                    *(
                        int(v) if isinstance(v, Tensor) else v
                        for v in (item.start, item.stop, item.step)
                    )
                )
            )
        elif isinstance(item, bool):
            out.append(item)
        elif isinstance(item, (int, np.integer)) or item is None or item is Ellipsis:
            out.append(item)
        elif isinstance(item, (list, np.ndarray)):
            arr = np.asarray(item)
            out.append(arr.astype(np.int64) if arr.size == 0 else arr)  # [] selects nothing
        else:
            raise IndexError(f"{op}: unsupported index of type {type_name(item)}")
    return tuple(out)


def _index_error(err: IndexError, shape, index: tuple, op: str) -> IndexError:
    """NumPy's indexing error in torch's words (dimension, tensors, mask shape) plus the shape."""
    msg = str(err)
    if "boolean index did not match" in msg:
        masks = [list(i.shape) for i in index if isinstance(i, np.ndarray) and i.dtype == np.bool_]
        msg = (
            f"the shape of the mask {', '.join(map(str, masks))} does not match the indexed tensor"
        )
    msg = msg.replace("for axis", "for dimension").replace("indexing arrays", "indexing tensors")
    return IndexError(f"{op}: {msg} (tensor shape {list(shape)})")


def _is_basic(index: tuple) -> bool:
    return all(
        isinstance(i, (int, np.integer, slice))
        and not isinstance(i, bool)
        or i is None
        or i is Ellipsis
        for i in index
    )


class Index(primitives.Index):
    __doc__ = primitives.Index.__doc__  # the core's backward; forward names a bad index

    @staticmethod
    def forward(ctx, x, index):
        try:
            return primitives.Index.forward(ctx, x, index)
        except IndexError as e:
            raise _index_error(e, x.shape, index, "index") from None


def _split_ints(idx: tuple):
    """An advanced index with ints, as (basic index, advanced index) applied one after the other.

    torch applies ints as ``select`` before the tensor indices; NumPy counts an int as an
    advanced index, which moves the result dims when it is apart from the arrays:
    ``x[0, :, t]`` of x (3, 4, 5) is (4, 2) in torch, (2, 4) in NumPy. None for no ints.
    """
    if not any(type(i) is int or isinstance(i, np.integer) for i in idx):
        return None
    first, second = [], []
    for item in idx:
        if isinstance(item, np.ndarray):
            first.extend([slice(None)] * (item.ndim if item.dtype == np.bool_ else 1))
            second.append(item)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            first.append(item)  # the dim is gone after the first step
        else:  # slice, None, Ellipsis, bool
            first.append(item)
            second.append(Ellipsis if item is Ellipsis else slice(None))
    return tuple(first), tuple(second)


@gradient_doc(Index)
def getitem(input: Tensor, index) -> Tensor:
    """``input[index]``: ints, slices (positive steps), None, Ellipsis, int/bool tensors or lists."""
    idx = _convert_index(index, input.shape)
    if _is_basic(idx):
        if Ellipsis not in idx:  # NumPy returns a scalar copy for x[i, j]; x[i, j, ...] is a view
            idx = idx + (Ellipsis,)
        return _as_view(Index.apply(input, idx), input, shares=True)
    split = _split_ints(idx)
    if split is not None:
        return Index.apply(getitem(input, split[0]), split[1])
    return Index.apply(input, idx)


def _drop_leading_ones(value):
    """``value`` without leading size-1 dims: torch lets ``x[mask] = v`` take v of shape
    (1, n) for an indexed region of shape (n,), NumPy only does so for basic indices."""
    if isinstance(value, np.ndarray) and value.ndim and value.shape[0] == 1:
        k = 0
        while k < value.ndim and value.shape[k] == 1:
            k += 1
        return value.reshape(value.shape[k:])
    return value


class IndexPut(Function):
    """out = x with x[index] = value (accumulate: out[index] += value, repeats add up).

    dx = g with 0 at index (accumulate: g),  dvalue = g[index]
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, value, index, accumulate=False):
        out = x.copy() if ctx is not None else x  # ctx None: setitem's no-grad fast path
        value_shape = np.shape(value)
        value = _drop_leading_ones(value)
        try:
            if accumulate:
                np.add.at(out, index, value)
            else:
                out[index] = value
        except IndexError as e:
            raise _index_error(e, x.shape, index, "index_put") from None
        except ValueError:
            target = np.empty(x.shape, dtype=np.bool_)[index].shape
            raise ValueError(
                f"setitem: value of shape {list(np.shape(value))} cannot be broadcast to the "
                f"indexed region of shape {list(target)} (tensor shape {list(x.shape)})"
            ) from None
        if ctx is not None:
            ctx.index, ctx.value_shapes = index, (value_shape, np.shape(value))
            ctx.accumulate = accumulate
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        gx = g if ctx.accumulate else xp.zero_at(g, ctx.index)
        gv = None
        if ctx.needs_input_grad[1]:
            gv = xp.getitem(g, ctx.index)
            shape, dropped = ctx.value_shapes
            if shape != dropped:  # sum over the broadcast, then put the leading 1s back
                gv = xp.reshape(_sum_to(xp, gv, dropped), shape)
        return (gx, gv, None, None)[: len(ctx.needs_input_grad)]  # accumulate: optional


def _sum_to(xp, g, shape):
    """``g`` summed over the dims broadcasting added or stretched to reach ``shape``."""
    extra = g.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and g.shape[i + extra] != 1
    )
    return xp.reshape(xp.sum(g, axis=axes, keepdims=True), shape) if axes else g


def setitem(input: Tensor, index, value) -> None:
    """``input[index] = value`` in place (value: a number or a broadcastable tensor)."""
    idx = _convert_index(index, input.shape, "setitem")
    split = None if _is_basic(idx) else _split_ints(idx)
    if split is not None:  # ints first, as torch (see _split_ints): write through that view
        setitem(getitem(input, split[0]), split[1], value)
        return
    if isinstance(value, (list, tuple)):
        value = Tensor._make(np.asarray(value, dtype=input._data.dtype))
    elif isinstance(value, np.ndarray):
        value = Tensor._make(value)
    if is_grad_enabled() and (
        input._requires_grad or (isinstance(value, Tensor) and value._requires_grad)
    ):
        input._apply_inplace(IndexPut, value, idx)
        return
    # Outside autograd, write straight into the memory (no copy of the whole tensor).
    check_inplace_allowed(input, "setitem")
    if not input._data.flags.writeable:
        raise RuntimeError(
            "setitem: this tensor's memory is read-only (it is an expanded/broadcast view, "
            "where several elements share one memory location); call .clone() first"
        )
    IndexPut.forward(None, input._data, value._data if isinstance(value, Tensor) else value, idx)
    input._version.value += 1


def index_put_(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    if accumulate:
        input._apply_inplace(IndexPut, _put_value(values), *_put_index(input, indices, accumulate))
        return input
    setitem(input, tuple(indices), values)
    return input


def _put_value(values):
    return Tensor._make(np.asarray(values)) if not isinstance(values, Tensor) else values


def _put_index(input: Tensor, indices, accumulate: bool):
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): indices must be a tuple of tensors, got {type(indices)}")
    idx = _convert_index(tuple(indices), input.shape, "index_put")
    if any(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in idx):
        raise TypeError("index_put(): indices must be tensors, not ints")
    return idx, bool(accumulate)


class MaskedFill(Function):
    """out = value where mask else x (x and mask broadcast together, as in torch).
    dx = g where ~mask (summed over broadcast dims),  dvalue = sum(g[mask])"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, mask, value):
        # masked_fill_ rejects a mask wider than x when it writes the result back
        out = np.where(mask, np.asarray(value, dtype=x.dtype), x)
        ctx.save_for_backward(mask)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (mask,) = ctx.saved_tensors
        return xp.where(mask, 0, g), None, xp.sum(xp.where(mask, g, 0))


def _mask(mask, x: Tensor, op: str) -> np.ndarray:
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(
            f"{op} only supports boolean masks, but got mask with dtype {m.dtype} "
            "(compare first, e.g. mask == 0)"
        )
    try:
        np.broadcast_shapes(m.shape, x.shape)
    except ValueError:
        raise RuntimeError(
            f"{op}: the mask of shape {list(m.shape)} is not broadcastable to the input of shape "
            f"{list(x.shape)}"
        ) from None
    return m


def _fill_value(value, op: str):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)"
            )
        return value if value._requires_grad else value.item()
    return value


@gradient_doc(MaskedFill)
def masked_fill(input: Tensor, mask, value) -> Tensor:
    """``value`` where ``mask`` (bool, broadcastable to input) is True, else ``input``."""
    m = _mask(mask, input, "masked_fill")
    return MaskedFill.apply(input, m, _fill_value(value, "masked_fill"))


def masked_fill_(input: Tensor, mask, value) -> Tensor:
    m = _mask(mask, input, "masked_fill_")
    return input._apply_inplace(MaskedFill, m, _fill_value(value, "masked_fill_"))


@gradient_doc(Index)
def masked_select(input: Tensor, mask) -> Tensor:
    """The elements of ``input`` where ``mask`` (broadcast) is True, as a 1-D tensor."""
    m = _mask(mask, input, "masked_select")
    shape = np.broadcast_shapes(m.shape, input.shape)
    from ..shape.views import expand

    x = expand(input, shape) if input.shape != shape else input
    return getitem(x, Tensor._make(np.broadcast_to(m, shape)))


def _index_tensor(index, op: str, name: str = "index") -> np.ndarray:
    arr = index._data if isinstance(index, Tensor) else np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for {name}, got {arr.dtype}")
    return arr.astype(np.intp, copy=False)


def _grid(index: np.ndarray, dim: int) -> tuple:
    """Open-mesh indices selecting ``index`` along ``dim`` and every position elsewhere."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


def _check_gather_shapes(x_shape, index: np.ndarray, dim: int, op: str) -> None:
    if index.ndim != len(x_shape):
        raise RuntimeError(
            f"{op}(): Index tensor must have the same number of dimensions as input tensor: "
            f"input {list(x_shape)}, index {list(index.shape)}"
        )
    for d, (i, s) in enumerate(zip(index.shape, x_shape)):
        if d != dim and i > s:
            raise RuntimeError(
                f"{op}(): Size does not match at dimension {d}: expected index {list(index.shape)} "
                f"to be no larger than self {list(x_shape)} apart from dimension {dim}"
            )
    if index.size and (index.min() < 0 or index.max() >= x_shape[dim]):
        bad = index.max() if index.max() >= x_shape[dim] else index.min()
        raise IndexError(
            f"{op}(): index {bad} is out of bounds for dimension {dim} with size {x_shape[dim]}"
        )


class Gather(Function):
    """out[i][j] = x[index[i][j]][j] (for dim 0).   dx = scatter-add of g at index"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, index):
        grid = _grid(index, dim)
        ctx.in_shape, ctx.grid = x.shape, grid
        return x[grid]

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.add_at(ctx.in_shape, ctx.grid, g), None, None


@gradient_doc(Gather)
def gather(input: Tensor, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (likewise for other dims)."""
    d = normalize_dim(dim, input.ndim, "gather")
    idx = _index_tensor(index, "gather")
    _check_gather_shapes(input.shape, idx, d, "gather")
    return Gather.apply(input, d, idx)


class Scatter(Function):
    """out = x with out[index[i][j]][j] = src[i][j] (dim 0).   dx = g with those zeroed, dsrc = g[index]"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce_add=False):
        grid = _grid(index, dim)
        out = x.copy()
        vals = (
            src[tuple(slice(0, n) for n in index.shape)]
            if isinstance(src, np.ndarray) and src.ndim
            else src
        )
        if reduce_add:
            np.add.at(out, grid, vals)
        else:
            out[grid] = vals
        ctx.grid, ctx.reduce_add, ctx.index_shape = grid, reduce_add, index.shape
        ctx.src_shape = np.shape(src)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        gx = g if ctx.reduce_add else xp.zero_at(g, ctx.grid)
        gsrc = None
        if len(ctx.src_shape):  # g at index, zeros where src was not read
            pad = [(0, s - n) for s, n in zip(ctx.src_shape, ctx.index_shape)]
            gsrc = xp.zero_pad(xp.getitem(g, ctx.grid), pad)
        return gx, None, None, gsrc, None


def _scatter_args(input, dim, index, src, value, op):
    d = normalize_dim(dim, input.ndim, op)
    idx = _index_tensor(index, op)
    _check_gather_shapes(input.shape, idx, d, op)
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{op}(): expected a src tensor or a value")
    if isinstance(src, Tensor) and src.ndim and any(i > s for i, s in zip(idx.shape, src.shape)):
        raise RuntimeError(
            f"{op}(): Expected index {list(idx.shape)} to be smaller than src {list(src.shape)}"
        )
    return d, idx, src


@gradient_doc(Scatter)
def scatter(input: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    """A copy of ``input`` with ``src`` (or ``value``) written at ``index`` along ``dim``;
    ``reduce="add"`` / ``"multiply"`` add / multiply it in (a value cast to the dtype first)."""
    from .scatter import scatter_with_reduce

    return scatter_with_reduce(input, dim, index, src, value, reduce, False, "scatter")


def scatter_(input: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    from .scatter import scatter_with_reduce

    return scatter_with_reduce(input, dim, index, src, value, reduce, True, "scatter_")


@gradient_doc(Scatter)
def scatter_add(input: Tensor, dim: int, index, src) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeats add up)."""
    d, idx, src = _scatter_args(input, dim, index, src, None, "scatter_add")
    return Scatter.apply(input, d, idx, src, True)


def scatter_add_(input: Tensor, dim: int, index, src) -> Tensor:
    d, idx, src = _scatter_args(input, dim, index, src, None, "scatter_add_")
    return input._apply_inplace(Scatter, d, idx, src, True)


def _select_index(input, dim, index, op, allow_negative=False):
    """``index`` as a 1-D array along ``dim``; torch allows negative indices in index_fill only."""
    d = normalize_dim(dim, input.ndim, op)
    idx = _index_tensor(index, op)
    if idx.ndim > 1:
        raise IndexError(
            f"{op}(): index should be 0- or 1-dimensional, got shape {list(idx.shape)}"
        )
    idx = idx.reshape(-1)
    n = input.shape[d] if input.ndim else 1
    if idx.size and (idx.min() < (-n if allow_negative else 0) or idx.max() >= n):
        raise IndexError(
            f"{op}(): index out of range in self: indices {idx.tolist()} for size {n} at dim {d}"
        )
    return d, idx


@gradient_doc(Index)
def index_select(input: Tensor, dim: int, index) -> Tensor:
    """The entries at positions ``index`` (1-D) along ``dim``."""
    d, idx = _select_index(input, dim, index, "index_select")
    return getitem(input, (slice(None),) * d + (Tensor._make(idx),))


class IndexFill(Function):
    """out = x with positions ``index`` along ``dim`` set to value.   dx = g zeroed there"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, index, value):
        out = x.copy()
        sel = (slice(None),) * dim + (index,)
        out[sel] = value
        ctx.sel = sel
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        dim, index = len(ctx.sel) - 1, ctx.sel[-1]
        unique = np.unique(index % g.shape[dim]) if g.ndim else index[:1]  # each filled slot once
        gvalue = xp.sum(xp.getitem(g, ctx.sel[:-1] + (unique,)))
        return xp.zero_at(g, ctx.sel), None, None, gvalue


@gradient_doc(IndexFill)
def index_fill(input: Tensor, dim: int, index, value) -> Tensor:
    """A copy of ``input`` with positions ``index`` along ``dim`` set to ``value``."""
    d, idx = _select_index(input, dim, index, "index_fill", allow_negative=True)
    return IndexFill.apply(input, d, idx, _fill_value(value, "index_fill"))


def index_fill_(input: Tensor, dim: int, index, value) -> Tensor:
    d, idx = _select_index(input, dim, index, "index_fill_", allow_negative=True)
    return input._apply_inplace(IndexFill, d, idx, _fill_value(value, "index_fill_"))


class IndexAdd(Function):
    """out = x with source added at ``index`` along ``dim``.   dx = g,  dsource = g[index]"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, index, source, alpha=1):
        out = x.copy()
        sel = (slice(None),) * dim + (index,)
        if out.dtype.kind in "iu":  # torch truncates alpha for integer tensors (1.5 -> 1)
            alpha = int(alpha)
        np.add.at(out, sel, source * alpha)
        ctx.sel, ctx.alpha = sel, alpha
        return out

    @staticmethod
    def backward(ctx, g):
        return g, None, None, ctx.xp.getitem(g, ctx.sel) * ctx.alpha, None


def _check_index_add_source(input: Tensor, d: int, idx: np.ndarray, source, op: str) -> None:
    """source must be input's shape with dim ``d`` replaced by the number of indices."""
    expected = input.shape[:d] + (idx.size,) + input.shape[d + 1 :] if input.ndim else ()
    got = tuple(np.shape(source._data if isinstance(source, Tensor) else source))
    if got != expected:
        raise RuntimeError(
            f"{op}(): source of shape {list(got)} does not match: expected "
            f"{list(expected)} (input shape {list(input.shape)} with dim {d} of size "
            f"{idx.size}, the number of indices)"
        )


@gradient_doc(IndexAdd)
def index_add(input: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    """``input`` with ``alpha * source`` added at positions ``index`` along ``dim`` (repeats add up)."""
    d, idx = _select_index(input, dim, index, "index_add")
    _check_index_add_source(input, d, idx, source, "index_add")
    return IndexAdd.apply(input, d, idx, source, alpha)


def index_add_(input: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    d, idx = _select_index(input, dim, index, "index_add_")
    _check_index_add_source(input, d, idx, source, "index_add_")
    return input._apply_inplace(IndexAdd, d, idx, source, alpha)


def masked_scatter_(input: Tensor, mask, source) -> Tensor:
    m = np.broadcast_to(_mask(mask, input, "masked_scatter_"), input.shape)
    n = int(m.sum())
    flat = source.reshape(-1)[:n]
    setitem(input, Tensor._make(m), flat)
    return input


def nonzero(input: Tensor, *, as_tuple: bool = False):
    """Indices of non-zero elements: (n, ndim) int64 (0-d input: (1, 0) or (0, 0)), or a tuple."""
    idx = np.nonzero(input._data if input.ndim else input._data.reshape(1))
    if input.ndim == 0 and not as_tuple:
        return Tensor._make(np.zeros((idx[0].size, 0), dtype=np.int64))
    if as_tuple:
        return tuple(Tensor._make(i.astype(np.int64)) for i in idx)
    return Tensor._make(np.stack(idx, axis=-1).astype(np.int64).reshape(-1, input.ndim))


def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)
