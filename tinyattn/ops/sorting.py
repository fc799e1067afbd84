"""Ordering ops: sort, argsort, topk, kthvalue, median, mode, unique, searchsorted, bincount.

Every op that returns values picked from the input (sort, topk, kthvalue, median
with ``dim``, mode) computes the *indices* first, without gradient, and then picks
the values with :func:`gather`, so the gradient is gather's::

    values = gather(x, dim, indices)        dx = g scattered (added) back at indices

Ties follow torch 2.13 (CPU) where torch fixes them, and a stable sort elsewhere:

- ``sort`` / ``argsort`` are stable (equal values keep their input order, also
  descending); NaN counts as the largest value, as in torch.
- ``median`` with ``dim`` returns the lower middle of the stable order, or the
  first NaN of a slice holding one (torch's choice, checked on random ties).
- ``mode`` returns the smallest of the most frequent values and the index of its
  last occurrence (torch does so for slices of up to 16 elements; beyond that its
  index is implementation-defined).
- ``topk`` / ``kthvalue``: torch uses a selection algorithm whose index among equal
  values is unspecified; tinyattn takes the first in stable order.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core.function import Function
from ..core.tensor import Tensor
from ..foundations.type_names import type_name
from ._util import gradient_doc, normalize_dim, refuse_complex_order
from .index.indexing import Gather

__all__ = [
    "sort",
    "argsort",
    "msort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
    "unique",
    "unique_consecutive",
    "bincount",
    "searchsorted",
    "bucketize",
]


def _values_indices(name: str):
    cls = namedtuple(name, ["values", "indices"])
    cls.__module__ = "tinyattn.return_types"
    return cls


sort_return = _values_indices("sort")
topk_return = _values_indices("topk")
kthvalue_return = _values_indices("kthvalue")
median_return = _values_indices("median")
nanmedian_return = _values_indices("nanmedian")
mode_return = _values_indices("mode")


def _check_input(input, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(input)}")
    refuse_complex_order(op, input)
    return input


def _stable_order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort along ``axis``; NaN is the largest value (last, or first descending)."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    # ascending on the reversed array, reversed back: equal values keep their input order
    n = a.shape[axis]
    rev = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return n - 1 - np.flip(rev, axis)


def _pick(input: Tensor, dim: int, indices: np.ndarray, keepdim: bool = True) -> Tensor:
    """``gather(input, dim, indices)``, then ``dim`` squeezed unless ``keepdim``."""
    values = Gather.apply(input, dim, indices.astype(np.intp, copy=False))
    if not keepdim:
        values = values.squeeze(dim)
    return values


def _as_long(indices: np.ndarray) -> Tensor:
    return Tensor._make(np.asarray(indices, dtype=np.int64))


def _sorted_along(input: Tensor, dim, descending: bool, op: str):
    """(input seen as at least 1-D, dim, stable order along dim)."""
    d = normalize_dim(dim, input.ndim, op)
    x = input if input.ndim else input.reshape(1)
    return x, d, _stable_order(x._data, d, descending)


def sort(
    input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False
) -> tuple[Tensor, Tensor]:
    """Sorted values along ``dim`` and their input indices: a ``(values, indices)`` named tuple.

    Always stable (``stable=False`` allows any order of ties; this is one of them).

    Gradient: ``dx = g`` scattered back to ``indices`` (gather's backward).
    """
    _check_input(input, "sort")
    x, d, order = _sorted_along(input, dim, descending, "sort")
    values, indices = _pick(x, d, order), order
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return sort_return(values, _as_long(indices))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The int64 indices that sort ``input`` along ``dim`` (stable)."""
    _check_input(input, "argsort")
    _, _, order = _sorted_along(input, dim, descending, "argsort")
    return _as_long(order.reshape(input.shape))


def msort(input: Tensor) -> Tensor:
    """``sort(input, dim=0).values``. d input = g put back where each value came
    from, as :func:`sort`."""
    return sort(input, 0).values


def topk(
    input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices.

    Returned in sorted order (also with ``sorted=False``, whose order torch leaves open).

    Gradient: ``dx = g`` at the ``k`` returned indices, 0 elsewhere.
    """
    _check_input(input, "topk")
    if input.dtype.name == "bool":
        raise RuntimeError("topk(): does not support bool dtypes (as torch on CPU)")
    x, d, order = _sorted_along(input, dim, largest, "topk")
    k = int(k)
    if not 0 <= k <= x.shape[d]:
        raise RuntimeError(
            f"topk(): selected index k out of range: k={k} for dimension {d} of size "
            f"{x.shape[d]} (input shape {list(input.shape)})"
        )
    indices = np.take(order, np.arange(k), axis=d)
    values = _pick(x, d, indices)
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return topk_return(values, _as_long(indices))


def _one_per_slice(input: Tensor, d: int, position: np.ndarray, keepdim: bool, ret, op):
    """values/indices of the element at ``position`` (one per slice) of ``input`` along ``d``."""
    x = input if input.ndim else input.reshape(1)
    idx = np.expand_dims(position, d)
    values = _pick(x, d, idx, keepdim or input.ndim == 0)
    if input.ndim == 0:
        values, idx = values.reshape(()), idx.reshape(())
    elif not keepdim:
        idx = position
    return ret(values, _as_long(idx))


def _check_reduction_dim(input: Tensor, d: int, op: str) -> None:
    if input.ndim and input.shape[d] == 0:
        raise IndexError(
            f"{op}(): Expected reduction dim {d} to have non-zero size (input shape "
            f"{list(input.shape)})"
        )


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest value along ``dim`` (``k`` counts from 1) and its index.

    Gradient: ``dx = g`` at the returned index, 0 elsewhere.
    """
    _check_input(input, "kthvalue")
    x, d, order = _sorted_along(input, dim, False, "kthvalue")
    k = int(k)
    if not 1 <= k <= x.shape[d]:
        raise RuntimeError(
            f"kthvalue(): selected number k={k} out of range for dimension {d} of size "
            f"{x.shape[d]} (k counts from 1; input shape {list(input.shape)})"
        )
    position = np.take(order, k - 1, axis=d)
    return _one_per_slice(input, d, position, keepdim, kthvalue_return, "kthvalue")


def _median_position(a: np.ndarray, d: int, ignore_nan: bool) -> np.ndarray:
    """Index of the lower middle of each slice along ``d`` (NaN rules as torch)."""
    order = _stable_order(a, d, False)
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    n_nan = nan.sum(axis=d, keepdims=True)
    if ignore_nan:  # middle of the non-NaN values (NaN sort last); all NaN: index 0
        count = a.shape[d] - n_nan
        middle = np.maximum((count - 1) // 2, 0)
        position = np.take_along_axis(order, middle, axis=d)
        return np.where(count > 0, position, 0).squeeze(d)
    middle = np.full(n_nan.shape, (a.shape[d] - 1) // 2)
    position = np.take_along_axis(order, middle, axis=d).squeeze(d)
    first_nan = np.argmax(nan, axis=d)  # a slice holding a NaN: its median is that NaN
    return np.where(n_nan.squeeze(d) > 0, first_nan, position)


class Median(Function):
    """out = the lower middle of all elements (NaN if any, for ``median``).

    dx = g / count on each of the ``count`` elements equal to out (NaN: on the NaNs), 0
    elsewhere: the gradient is split evenly among ties, as in torch.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, ignore_nan):
        flat = x.reshape(-1)
        out = flat[int(_median_position(flat, 0, ignore_nan))].copy()
        ctx.save_for_backward(x, out)
        return np.asarray(out)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, out = ctx.saved_tensors
        hit = xp.logical_or(x == out, xp.logical_and(xp.isnan(x), xp.isnan(out)))
        return xp.astype(g * hit / xp.sum(hit), g.dtype), None


def _empty_median(dtype: np.dtype):
    """torch's median of no elements: NaN in ``dtype``. A float keeps it; for integers it is
    what the CPU's NaN-to-int conversion gives (the lowest int64/int32, 0 for narrower
    integers, True for bool), as torch 2.13 on x86 prints."""
    if dtype.kind == "f":
        return np.array(np.nan, dtype=dtype)
    if dtype.kind == "b":
        return np.array(True)
    if dtype.itemsize >= 4 and dtype.kind == "i":
        return np.array(np.iinfo(dtype).min, dtype=dtype)
    return np.array(0, dtype=dtype)


def _median(input: Tensor, dim, keepdim: bool, ignore_nan: bool, ret, op: str):
    _check_input(input, op)
    if dim is None:  # of all elements: the value only
        if input.numel() == 0:
            return Tensor._make(np.asarray(_empty_median(input._data.dtype)))
        return Median.apply(input, ignore_nan)
    d = normalize_dim(dim, input.ndim, op)
    _check_reduction_dim(input, d, op)
    x = input._data if input.ndim else input._data.reshape(1)
    if x.size == 0:
        position = np.zeros(x.shape[:d] + x.shape[d + 1 :], dtype=np.int64)
    else:
        position = _median_position(x, d, ignore_nan)
    return _one_per_slice(input, d, position, keepdim, ret, op)


@gradient_doc(Median)
def median(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """The median: the LOWER of the two middles for an even count (torch's rule).

    Without ``dim``: a 0-d tensor (NaN if any element is NaN). With ``dim``: a
    ``(values, indices)`` named tuple; the gradient then goes to the returned index.
    """
    return _median(input, dim, keepdim, False, median_return, "median")


@gradient_doc(Median)
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """:func:`median` ignoring NaN (NaN only where a slice is all NaN: index 0 there, where
    torch's index depends on the slice length)."""
    return _median(input, dim, keepdim, True, nanmedian_return, "nanmedian")


def _runs(sorted_rows: np.ndarray):
    """Per position of sorted rows (m, n): is it a run's last element, and the run's length."""
    m, n = sorted_rows.shape
    change = sorted_rows[:, 1:] != sorted_rows[:, :-1]  # NaN != NaN: every NaN is its own run
    new_run = np.concatenate([np.ones((m, 1), bool), change], axis=1)
    ends = np.concatenate([change, np.ones((m, 1), bool)], axis=1)
    j = np.broadcast_to(np.arange(n), (m, n))
    start = np.maximum.accumulate(np.where(new_run, j, 0), axis=1)
    return ends, j - start + 1


def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the
    index of its last occurrence, as a ``(values, indices)`` named tuple.

    Gradient: ``dx = g`` at the returned index, 0 elsewhere.
    """
    _check_input(input, "mode")
    d = normalize_dim(dim, input.ndim, "mode")
    _check_reduction_dim(input, d, "mode")
    x = input._data if input.ndim else input._data.reshape(1)
    rows = np.moveaxis(x, d, -1).reshape(-1, x.shape[d])
    if rows.size == 0:
        position = np.zeros(rows.shape[0], dtype=np.int64)
    else:
        order = np.argsort(rows, axis=1, kind="stable")
        ends, lengths = _runs(np.take_along_axis(rows, order, axis=1))
        best_end = np.argmax(np.where(ends, lengths, 0), axis=1)  # first: the smallest value
        position = order[np.arange(len(order)), best_end]  # a run's end: the last occurrence
    batch = np.moveaxis(x, d, -1).shape[:-1]
    return _one_per_slice(input, d, position.reshape(batch), keepdim, mode_return, "mode")


# -- not differentiable: indices and counts ---------------------------------------------------


def _unique_flags(values, inverse, counts, return_inverse, return_counts):
    out = [values]
    if return_inverse:
        out.append(_as_long(inverse))
    if return_counts:
        out.append(_as_long(counts))
    return out[0] if len(out) == 1 else tuple(out)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
):
    """The distinct elements (or slices along ``dim``), sorted.

    ``return_inverse``: for each input element (slice), the index of its value in the
    output; ``return_counts``: how often each value occurs. NaNs are all distinct, as in
    torch. The output is sorted also with ``sorted=False`` (as torch on CPU).
    """
    _check_input(input, "unique")
    a = input._data
    if dim is None:
        values, inverse, counts = np.unique(
            a.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False
        )
        inverse = inverse.reshape(a.shape)
    else:
        d = normalize_dim(dim, input.ndim, "unique")
        values, inverse, counts = np.unique(
            a, return_inverse=True, return_counts=True, axis=d, equal_nan=False
        )
        inverse = inverse.reshape(-1)
    return _unique_flags(
        Tensor._make(values.astype(a.dtype)), inverse, counts, return_inverse, return_counts
    )


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim=None
):
    """Collapse runs of equal consecutive elements (or slices along ``dim``) to one."""
    _check_input(input, "unique_consecutive")
    a = input._data
    d = 0 if dim is None else normalize_dim(dim, input.ndim, "unique_consecutive")
    seq = a.reshape(-1) if dim is None else np.moveaxis(a, d, 0)
    n = seq.shape[0]
    if n == 0:
        keep = np.zeros(0, bool)
    else:
        per_slice = int(np.prod(seq.shape[1:], dtype=np.int64))  # (-1 fails on size 0)
        differs = (seq[1:] != seq[:-1]).reshape(n - 1, per_slice).any(axis=1)
        keep = np.concatenate([[True], differs])
    values = seq[keep]
    if dim is not None:
        values = np.moveaxis(values, 0, d)
    inverse = np.cumsum(keep) - 1
    counts = np.diff(np.append(np.flatnonzero(keep), n))
    if dim is None:
        inverse = inverse.reshape(a.shape)
    return _unique_flags(
        Tensor._make(np.ascontiguousarray(values)), inverse, counts, return_inverse, return_counts
    )


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count of each value 0..max of a 1-D non-negative integer tensor (int64), or the sum
    of ``weights`` per value (float32 for float32 weights, else float64, as torch).
    """
    _check_input(input, "bincount")
    a = input._data
    if a.dtype.kind not in "iu" or a.ndim != 1 or (a.size and a.min() < 0):
        raise RuntimeError(
            "bincount(): input must be a 1-d tensor of non-negative integers, got "
            f"{input.dtype} of shape {list(input.shape)}"
            + (f" with minimum {a.min()}" if a.dtype.kind in "iu" and a.size else "")
        )
    if int(minlength) < 0:
        raise RuntimeError(f"bincount(): minlength should be >= 0, got {minlength}")
    if weights is None or a.size == 0:  # torch: an empty input counts in int64, weights or not
        return _as_long(np.bincount(a, minlength=int(minlength)))
    w = weights._data if isinstance(weights, Tensor) else np.asarray(weights)
    if w.ndim != 1 or w.shape[0] != a.shape[0]:
        raise RuntimeError(
            "bincount(): weights should be 1-d and have the same length as input: weights "
            f"of shape {list(w.shape)}, input of shape {list(a.shape)}"
        )
    out_dtype = np.float32 if w.dtype == np.float32 else np.float64
    out = np.bincount(a, weights=w.astype(np.float64), minlength=int(minlength))
    return Tensor._make(out.astype(out_dtype))


def _index_dtype(out_int32: bool):
    return np.int32 if out_int32 else np.int64


def searchsorted(
    sorted_sequence: Tensor,
    input,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """For each value of ``input``, the index where it would be inserted in the last dim of
    ``sorted_sequence`` to keep it sorted.

    ``side='left'`` (``right=False``): the first such index (``seq[i-1] < v <= seq[i]``);
    ``side='right'``: the last (``seq[i-1] <= v < seq[i]``). ``sorter`` holds the indices
    that sort an unsorted ``sorted_sequence``. ``sorted_sequence`` is 1-D, or its
    leading dims match ``input``'s.
    """
    _check_input(sorted_sequence, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"searchsorted(): side can only be 'left' or 'right' but got {side!r}"
            )
        if right and side == "left":
            raise RuntimeError(
                "searchsorted(): side and right can't be set to opposites, got side of left "
                "while right was True"
            )
        right = side == "right"
    seq = sorted_sequence._data
    scalar = not isinstance(input, Tensor)
    values = np.asarray(input) if scalar else input._data
    if sorter is not None:
        s = sorter._data if isinstance(sorter, Tensor) else np.asarray(sorter)
        if s.shape != seq.shape or s.dtype.kind not in "iu":
            raise RuntimeError(
                "searchsorted(): sorter must be an integer tensor of the same shape as "
                f"sorted_sequence: got sorter {s.dtype} of shape {list(s.shape)}, "
                f"sorted_sequence of shape {list(seq.shape)}"
            )
        if s.size and (s.min() < 0 or s.max() >= seq.shape[-1]):
            raise RuntimeError(
                f"searchsorted(): sorter index out of range for a last dim of size {seq.shape[-1]}"
            )
        seq = np.take_along_axis(seq, s.astype(np.intp), axis=-1)
    if seq.ndim == 0:
        raise RuntimeError("searchsorted(): sorted_sequence must have at least 1 dimension")
    if seq.ndim > 1 and (scalar or seq.shape[:-1] != values.shape[:-1] or values.ndim != seq.ndim):
        raise RuntimeError(
            "searchsorted(): sorted_sequence should be 1-D or its first N-1 dimensions must "
            f"match those of input: got sorted_sequence {list(seq.shape)} and input "
            f"{list(values.shape)}"
        )
    side_np = "right" if right else "left"
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=side_np)
    else:
        rows_seq = seq.reshape(-1, seq.shape[-1])
        rows_val = values.reshape(-1, values.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=side_np) for s, v in zip(rows_seq, rows_val)])
        out = out.reshape(values.shape)
    return Tensor._make(np.asarray(out, dtype=_index_dtype(out_int32)))


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False):
    """The bucket of each value given 1-D sorted ``boundaries``: ``i`` such that
    ``boundaries[i-1] < v <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= v <
    boundaries[i]``). Same as ``searchsorted(boundaries, input, right=right)``.
    """
    _check_input(boundaries, "bucketize")
    if boundaries.ndim != 1:
        raise RuntimeError(
            f"bucketize(): boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
