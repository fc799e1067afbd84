"""torch's ``*_copy`` functions (``view_copy``, ``permute_copy`` ... the view ops whose
outputs are fresh tensors instead of views), ``as_strided_scatter``, ``empty_permuted``
and ``nonzero_static``: compositions of existing ops, no new ``Function``.

Each ``*_copy`` is the view op followed by a contiguous ``clone``, so its gradient is the view's:
``d input`` = the upstream gradient put back where the view took its elements.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from ..core import _dtype
from ..core.device import check_device
from ..foundations.type_names import type_name
from .out import with_out

if TYPE_CHECKING:
    from ..core.tensor import Tensor

__all__ = [
    "view_copy", "permute_copy", "expand_copy", "t_copy", "transpose_copy", "unsqueeze_copy",
    "squeeze_copy", "select_copy", "slice_copy", "diagonal_copy", "detach_copy", "alias_copy",
    "split_copy", "split_with_sizes_copy", "unbind_copy", "unfold_copy", "as_strided_copy",
    "as_strided_scatter", "empty_permuted", "nonzero_static", "slice_inverse",
]  # fmt: skip


def _ops():
    from .. import ops

    return ops


def _check(input, op: str) -> None:
    from ..core.tensor import Tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(input)}")


def _fresh(t: Tensor) -> Tensor:
    """A C-contiguous copy (torch's ``*_copy`` results are contiguous). Gradient: ``g``."""
    return _ops().elementwise.unary.Clone.apply(t, order="C")


def view_copy(input: Tensor, size=None, *, dtype=None) -> Tensor:
    """``input.view(size).clone()``. Composes: view, clone. (``dtype``: torch's
    reinterpreting overload, not supported, as :func:`view`.)"""
    if dtype is not None or size is None:
        return _fresh(input.view(size=size, dtype=dtype))
    _check(input, "view_copy")
    return _fresh(input.view(size))


def permute_copy(input: Tensor, dims) -> Tensor:
    """``input.permute(dims).clone()`` (contiguous). Composes: permute, clone."""
    _check(input, "permute_copy")
    return _fresh(input.permute(*dims))


def expand_copy(input: Tensor, size, *, implicit: bool = False) -> Tensor:
    """``input.expand(size).clone()`` (every element materialised). Composes: expand, clone."""
    _check(input, "expand_copy")
    return _fresh(input.expand(*size))


def t_copy(input: Tensor) -> Tensor:
    """``input.t().clone()``. Composes: t, clone."""
    _check(input, "t_copy")
    return _fresh(input.t())


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``input.transpose(dim0, dim1).clone()``. Composes: transpose, clone."""
    _check(input, "transpose_copy")
    return _fresh(input.transpose(dim0, dim1))


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """``input.unsqueeze(dim).clone()``. Composes: unsqueeze, clone."""
    _check(input, "unsqueeze_copy")
    return _fresh(input.unsqueeze(dim))


def squeeze_copy(input: Tensor, dim=None) -> Tensor:
    """``input.squeeze(dim).clone()`` (``dim`` an int, a tuple of ints or None: every
    size-1 dim). Composes: squeeze, clone."""
    _check(input, "squeeze_copy")
    if dim is None:
        return _fresh(input.squeeze())
    return _fresh(input.squeeze(tuple(dim) if isinstance(dim, list) else dim))


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """``input.select(dim, index).clone()``. Composes: select, clone."""
    _check(input, "select_copy")
    return _fresh(input.select(dim, index))


def slice_copy(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``input[..., start:end:step, ...]`` along ``dim``, copied. Composes: getitem, clone."""
    _check(input, "slice_copy")
    if input.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if not isinstance(step, numbers.Integral) or step <= 0:
        raise RuntimeError(f"slice step must be positive, got {step}")
    d = _ops()._util.normalize_dims(dim, input.ndim, "slice_copy")[0]
    index = (slice(None),) * d + (slice(start, end, step),)
    return _fresh(input[index])


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input.diagonal(offset, dim1, dim2).clone()``. Composes: diagonal, clone."""
    _check(input, "diagonal_copy")
    return _fresh(input.diagonal(offset, dim1, dim2))


def detach_copy(input: Tensor) -> Tensor:
    """``input.detach().clone()``: a copy outside the graph. (torch 2.13's result says it
    requires grad, and its backward raises 'derivative for aten::detach_copy is not
    implemented'; here it simply does not require grad.)"""
    _check(input, "detach_copy")
    return _fresh(input.detach())


def alias_copy(input: Tensor) -> Tensor:
    """``input.clone()`` (torch's ``alias`` is a view of the whole tensor). Composes: clone."""
    _check(input, "alias_copy")
    return _fresh(input)


def split_copy(input: Tensor, split_size, dim: int = 0) -> tuple:
    """``input.split(split_size, dim)`` with each piece copied. Composes: split, clone."""
    _check(input, "split_copy")
    return tuple(_fresh(piece) for piece in input.split(split_size, dim))


def split_with_sizes_copy(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes(input, split_sizes, dim)``, each piece copied.
    Composes: split_with_sizes, clone."""
    _check(input, "split_with_sizes_copy")
    pieces = _ops().shape.composites.split_with_sizes(input, split_sizes, dim)
    return tuple(_fresh(piece) for piece in pieces)


def unbind_copy(input: Tensor, dim: int = 0) -> tuple:
    """``input.unbind(dim)``, each slice copied. Composes: unbind, clone."""
    _check(input, "unbind_copy")
    return tuple(_fresh(piece) for piece in input.unbind(dim))


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``input.unfold(dimension, size, step).clone()``. Composes: unfold, clone."""
    _check(input, "unfold_copy")
    return _fresh(input.unfold(dimension, size, step))


def as_strided_copy(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """``as_strided(input, size, stride, storage_offset).clone()``.
    Composes: as_strided, clone."""
    _check(input, "as_strided_copy")
    return _fresh(_ops().shape.strided.as_strided(input, size, stride, storage_offset))


def as_strided_scatter(
    input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None
) -> Tensor:
    """A copy of ``input`` (read as its contiguous storage) with ``src`` written into the
    ``as_strided(size, stride, storage_offset)`` view of it.

    Gradient: ``d src = g`` read through the view; ``d input = g`` with the written
    elements zeroed. (torch 2.13's ``d input`` is wrong here: it fails torch's own
    gradcheck; tinyattn's passes.) Composes: clone, as_strided, copy_.
    """
    _check(input, "as_strided_scatter")
    _check(src, "as_strided_scatter")
    out = _fresh(input)
    view = _ops().shape.strided.as_strided(out, size, stride, storage_offset)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(view.shape)}"
        )
    view.copy_(src)
    return out


def empty_permuted(
    size, physical_layout, *, dtype=None, layout=None, device=None,
    requires_grad: bool = False, pin_memory: bool = False,
) -> Tensor:  # fmt: skip
    """An uninitialised tensor of shape ``size`` whose memory is laid out in the dim order
    ``physical_layout`` (outermost first): ``empty([size[p] for p in physical_layout])``
    permuted back to ``size``. ``empty_permuted(s, range(len(s)))`` is ``empty(s)``."""
    check_device(device)
    size, order = tuple(int(n) for n in size), tuple(int(p) for p in physical_layout)
    if len(size) != len(order):
        raise RuntimeError(
            "Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
        )
    if sorted(order) != list(range(len(order))):
        raise RuntimeError(
            f"Duplicate dim not allowed (physical_layout {list(order)} must be a permutation "
            f"of 0..{len(order) - 1})"
        )
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    physical = np.empty(tuple(size[p] for p in order), dtype=d.np_dtype)
    out = _ops().creation.factories.from_numpy(physical.transpose(np.argsort(order)))
    return out.requires_grad_(True) if requires_grad else out


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` cut or padded to exactly ``size`` rows: (size, input.ndim) int64,
    the rows past the nonzero count filled with ``fill_value``. Not differentiable."""
    _check(input, "nonzero_static")
    if not isinstance(size, numbers.Integral) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = np.argwhere(input._data)[: int(size)]
    out = np.full((int(size), input.ndim), int(fill_value), dtype=np.int64)
    out[: found.shape[0]] = found
    return _ops().creation.factories.from_numpy(out)


def slice_inverse(
    input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1
) -> Tensor:
    """The inverse of ``slice_copy``'s view: ``input`` being ``src[..., start:end:step, ...]``
    along ``dim`` (a view into src's storage), the tensor of ``src``'s shape and strides
    over that storage: a view of ``input``'s storage starting ``start * src.stride(dim)``
    elements before it.

    Gradient, as torch's (the op read as ``slice_scatter(src, input, ...)``):
    ``d input = g[..., start:end:step, ...]``, ``d src = g`` with that slice zeroed. When
    ``input`` or ``src`` requires grad the result is that composition, so it does not share
    memory (torch's does). Composes: as_strided, slice_scatter.
    """
    _check(input, "slice_inverse")
    _check(src, "slice_inverse")
    d = _ops()._util.normalize_dims(dim, src.ndim, "slice_inverse")[0]
    if input.requires_grad or src.requires_grad:
        return _ops().index.scatter.slice_scatter(src, input, d, start, end, step)
    first = slice(start, end, step).indices(src.shape[d])[0]
    offset = input.storage_offset() - first * src.stride(d)
    if offset < 0:
        raise RuntimeError(
            f"slice_inverse: input starts {input.storage_offset()} elements into its storage, "
            f"before the {first} * {src.stride(d)} elements the slice would skip"
        )
    return _ops().shape.strided.as_strided(input, tuple(src.shape), src.stride(), offset)


nonzero_static = with_out(nonzero_static, "nonzero_static")  # torch takes out= here too
