"""Writes at flat or per-dim indices: put / put_ and index_reduce / index_reduce_.

Both compose differentiable ops: ``put`` is an ``index_put`` into the flattened input,
``index_reduce`` a ``scatter_reduce`` whose index repeats ``index`` along every other dim.
Their gradients are those ops' (given in the docstrings).
"""

from __future__ import annotations

import numpy as np

from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import normalize_dim
from ..elementwise.arithmetic import _tensor
from ..inplace import check_inplace_allowed
from ..shape.views import reshape
from .scatter import index_put, scatter_reduce

__all__ = ["put", "put_", "index_reduce", "index_reduce_"]

_INDEX_REDUCES = ("prod", "mean", "amax", "amin")


def _put_args(input, index, source, op: str) -> np.ndarray:
    """The flat index (negatives wrapped), after torch's checks on every argument."""
    x = _tensor(input, op)
    for name, t in (("index", index), ("source", source)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type_name(t)}")
    if index._data.dtype != np.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {index.dtype}")
    if source._data.dtype != x._data.dtype:
        raise RuntimeError(
            f"{op}(): self and source expected to have the same dtype, but got self.dtype = "
            f"{x.dtype} and source.dtype = {source.dtype}"
        )
    if source.numel() != index.numel():
        raise IndexError(
            f"{op}(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    flat = index._data.reshape(-1)
    n = x.numel()
    bad = (flat < -n) | (flat >= n)
    if bad.any():
        raise IndexError(
            f"{op}(): index {int(flat[bad][0])} is out of range for a tensor of {n} elements "
            f"(shape {list(x.shape)})"
        )
    return np.where(flat < 0, flat + n, flat)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source`` written (or, with ``accumulate``, added) at the
    flat (row-major) positions ``index``, as if ``input`` were 1-D.

    Parameters
    ----------
    input : Tensor
        Any shape (n elements).
    index : Tensor
        int64, any shape, values in [-n, n) (negatives count from the end).
    source : Tensor
        ``input``'s dtype, as many elements as ``index``.
    accumulate : bool
        Add instead of write (repeated indices then add up; without it, which write wins
        at a repeated index is unspecified, as in torch).

    Returns
    -------
    Tensor
        ``input``'s shape and dtype.

    Gradient: ``d input = g`` with the written positions zeroed (``g`` itself when
    accumulating); ``d source = g.flatten()[index]``.   Composes: reshape, index_put
    """
    flat_index = _put_args(input, index, source, "put")
    flat = reshape(input, (-1,))
    out = index_put(flat, (Tensor._make(flat_index),), reshape(source, (-1,)), accumulate)
    return reshape(out, tuple(input.shape))


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place :func:`put` (returns ``input``).   Composes: put, Tensor.copy_"""
    _put_args(input, index, source, "put_")
    check_inplace_allowed(input, "put_")
    return input.copy_(put(input, index, source, accumulate))


def _index_reduce_args(input, dim, index, source, reduce, op: str) -> tuple[int, Tensor]:
    """The normalised dim and the scatter index (``index`` repeated to ``source``'s shape)."""
    x = _tensor(input, op)
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(
            f"{op}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce!r}."
        )
    for name, t in (("index", index), ("source", source)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type_name(t)}")
    d = normalize_dim(dim, max(x.ndim, 1), op)
    if index._data.dtype not in (np.int64, np.int32) or index.ndim > 1:
        raise RuntimeError(
            f"{op}(): index must be a 1-D int64 or int32 tensor, got {index.dtype} of shape "
            f"{list(index.shape)}"
        )
    if source._data.dtype != x._data.dtype:
        raise RuntimeError(
            f"{op}(): self ({x.dtype}) and source ({source.dtype}) must have the same scalar type"
        )
    src_shape = tuple(source.shape) or (1,)
    self_shape = tuple(x.shape) or (1,)
    idx = index._data.reshape(-1)
    if len(src_shape) != len(self_shape) or idx.size != src_shape[d]:
        raise RuntimeError(
            f"{op}(): Number of indices ({idx.size}) should be equal to source.size(dim) "
            f"(source of shape {list(source.shape)}, dim {d}), and source must have as many "
            f"dims as self (shape {list(x.shape)})"
        )
    others = [i for i in range(len(self_shape)) if i != d]
    if any(src_shape[i] != self_shape[i] for i in others):
        raise RuntimeError(
            f"{op}(): source of shape {list(source.shape)} must match self of shape "
            f"{list(x.shape)} in every dim but dim {d}"
        )
    bad = (idx < 0) | (idx >= self_shape[d])
    if bad.any():
        raise IndexError(
            f"{op}(): index {int(idx[bad][0])} is out of range for dim {d} of size "
            f"{self_shape[d]} (indices must be in [0, {self_shape[d]}))"
        )
    view = [1] * len(src_shape)
    view[d] = idx.size
    grid = np.broadcast_to(idx.astype(np.int64).reshape(view), src_shape)
    return d, Tensor._make(np.ascontiguousarray(grid))


def index_reduce(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """``input`` with slice ``i`` of ``source`` along ``dim`` reduced into slice ``index[i]``.

    Parameters
    ----------
    input : Tensor
        (..., n, ...), ``n`` at ``dim``.
    dim : int
    index : Tensor
        (k,) integers in [0, n).
    source : Tensor
        ``input``'s shape with ``k`` at ``dim``; ``input``'s dtype.
    reduce : str
        "prod", "mean", "amax" or "amin".
    include_self : bool
        Whether ``input``'s own values take part in the reduction of the slices written to
        (the slices not indexed keep ``input``'s values either way).

    Returns
    -------
    Tensor
        ``input``'s shape and dtype ("mean" of integers is a floor division, as torch's).

    Gradient: as :func:`tinyattn.scatter_reduce` with the index repeated along every other
    dim (prod: the product of the other values of the slot; mean: ``g / count``; amax/amin:
    ``g`` shared evenly among the values equal to the result).   Composes: scatter_reduce
    """
    d, grid = _index_reduce_args(input, dim, index, source, reduce, "index_reduce")
    if input.ndim == 0:
        out = scatter_reduce(
            reshape(input, (1,)), 0, grid, reshape(source, (1,)), reduce, include_self=include_self
        )
        return reshape(out, ())
    return scatter_reduce(input, d, grid, source, reduce, include_self=include_self)


def index_reduce_(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self=True
) -> Tensor:
    """In-place :func:`index_reduce` (returns ``input``).   Composes: scatter_reduce_"""
    d, grid = _index_reduce_args(input, dim, index, source, reduce, "index_reduce_")
    check_inplace_allowed(input, "index_reduce_")
    if input.ndim == 0:
        return input.copy_(index_reduce(input, 0, index, source, reduce, include_self=include_self))
    return input.scatter_reduce_(d, grid, source, reduce, include_self=include_self)
