"""``as_strided``: a view with any sizes and strides into a tensor's memory.

As torch's, ``storage_offset`` and ``stride`` count elements of the *storage*: the memory
of the tensor the input is a view of (its ``_base``), or of the input itself. What is
refused, with a clear error, rather than risked: negative strides or offsets, a view
reaching outside the storage, a storage that is not one C-contiguous block, and (when
the input is itself a view and needs a gradient) storage elements outside the input.
A view in which several indices share one element is read-only (torch refuses in-place
writes into it too); its gradient adds up over the indices that share an element.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc
from ..elementwise.arithmetic import _tensor
from .views import _as_view

__all__ = ["as_strided"]


class StridedView(Function):
    """out = the elements of ``x`` at ``where`` (one input element index per output element),
    laid out as the requested view of the storage.

    dx = zeros with ``g`` scatter-added at ``where`` (an element seen by several output
    indices gets the sum of their gradients)
    """

    supports_create_graph = True
    node_name = "AsStridedBackward0"  # torch's name for this node

    @staticmethod
    def forward(ctx, x, view_of, where):
        ctx.where, ctx.in_shape = where, x.shape
        return view_of(x)

    @staticmethod
    def backward(ctx, g):
        xp, where, shape = ctx.xp, ctx.where, ctx.in_shape
        size = int(np.prod(shape))
        flat = xp.add_at((size,), (where.reshape(-1),), xp.reshape(g, (-1,)))
        return xp.reshape(flat, shape), None, None


def _int_tuple(values, name: str) -> tuple[int, ...]:
    if isinstance(values, numbers.Integral):
        values = (values,)
    try:
        out = tuple(int(v) for v in values)
    except TypeError:
        raise TypeError(
            f"as_strided(): argument '{name}' must be a sequence of ints, not {type_name(values)}"
        ) from None
    return out


def _storage_slots(shape, strides, offset: int) -> np.ndarray:
    """The storage element index of every element of the view (shape ``shape``)."""
    slots = np.full(shape, offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(shape, strides)):
        step = [1] * len(shape)
        step[axis] = n
        slots = slots + (np.arange(n, dtype=np.int64) * s).reshape(step)
    return slots


@gradient_doc(StridedView)
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage with shape ``size`` and element strides ``stride``,
    starting ``storage_offset`` elements in (default: where ``input`` starts).

    Parameters
    ----------
    input : Tensor
    size : sequence of int
        The view's shape.
    stride : sequence of int
        Elements to step per index of each dim (>= 0; 0 repeats an element).
    storage_offset : int, optional

    Returns
    -------
    Tensor
        Shape ``size``, ``input``'s dtype, sharing memory with it (read-only when indices
        overlap).
    """
    x = _tensor(input, "as_strided")
    shape, strides = _int_tuple(size, "size"), _int_tuple(stride, "stride")
    if len(shape) != len(strides):
        raise RuntimeError(
            f"as_strided(): mismatch in length of strides and shape: size {list(shape)}, "
            f"stride {list(strides)}"
        )
    if any(n < 0 for n in shape):
        raise RuntimeError(f"as_strided(): sizes must be non-negative, got {list(shape)}")
    if any(s < 0 for s in strides):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(strides)}"
        )
    root = x._base if x._base is not None else x
    storage = root._data
    if not storage.flags.c_contiguous:
        raise RuntimeError(
            "as_strided(): the storage of this tensor is not one contiguous block of memory "
            "here (it wraps a strided NumPy array); call .contiguous() first"
        )
    offset = x.storage_offset() if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"as_strided(): storage_offset must be >= 0, got {offset}")
    empty = 0 in shape
    needed = 0 if empty else offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    if needed > storage.size:
        raise RuntimeError(
            f"as_strided(): sizes {list(shape)}, strides {list(strides)} and storage offset "
            f"{offset} need a storage of {needed} elements, but the storage of this tensor "
            f"has {storage.size}"
        )
    slots = _storage_slots(shape, strides, offset)
    if root is x:
        where = slots
    else:  # storage element -> index among the input's elements
        own = _storage_slots(
            x.shape, tuple(s // x.itemsize for s in x._data.strides), x.storage_offset()
        )
        lookup = np.full(storage.size, -1, dtype=np.int64)
        lookup[own.reshape(-1)] = np.arange(own.size)
        where = lookup[slots]
        if x.requires_grad and np.any(where < 0):
            raise RuntimeError(
                "as_strided(): the view reaches storage elements outside this input (a view of "
                "a larger tensor) and the input requires grad; tinyattn cannot route that "
                "gradient: call as_strided on the base tensor instead"
            )
        where = np.where(where < 0, 0, where)
    overlaps = not empty and np.unique(slots).size < slots.size
    item = storage.itemsize

    def view_of(_: np.ndarray) -> np.ndarray:
        flat = storage.reshape(-1)[offset:] if not empty else storage.reshape(-1)
        return np.lib.stride_tricks.as_strided(
            flat, shape, tuple(s * item for s in strides), writeable=not overlaps
        )

    out = StridedView.apply(x, view_of, where)
    return _as_view(out, x, shares=not empty)
