"""Shape ops built from the views and joins: broadcasting helpers, ravel,
tile, atleast_Nd, the h/v/d stacks and splits, tensor_split, flipud/fliplr, rot90, the
sliding-window view ``unfold``, and take / take_along_dim.

All but ``unfold`` compose differentiable ops (expand, reshape, narrow, cat, flip,
transpose, gather), so their gradients come from those ops.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...core.function import Function
from ...core.size import Size
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc, normalize_dim, shape_args
from ..index.indexing import gather, getitem
from .rearrange import cat, flip, repeat
from .views import (
    _as_view,
    _multi_view,
    expand,
    moveaxis,
    narrow,
    reshape,
    split,
    swapdims,
    transpose,
)

__all__ = [
    "moveaxis",
    "swapdims",
    "broadcast_to",
    "broadcast_shapes",
    "broadcast_tensors",
    "ravel",
    "tile",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "hstack",
    "vstack",
    "row_stack",
    "dstack",
    "column_stack",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "split_with_sizes",
    "flipud",
    "fliplr",
    "rot90",
    "unfold",
    "take",
    "take_along_dim",
]


def _check_tensor(x, op: str, name: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type_name(x)}")
    return x


def broadcast_to(input: Tensor, *sizes, size=None) -> Tensor:
    """``input`` broadcast to ``size`` (a view; -1 keeps a dim). Same as :func:`expand`.

    The size as a tuple, as separate ints (``x.broadcast_to(2, 3)``) or ``size=``, as torch.

    Composes: tinyattn.Tensor.expand
    """
    shape = _one_of(sizes, size, "sizes", "size", "broadcast_to")
    return expand(_check_tensor(input, "broadcast_to"), shape_args(shape, "broadcast_to"))


def _one_of(positional: tuple, keyword, pos_name: str, kw_name: str, op: str):
    """The argument given either positionally or by keyword (exactly one of them)."""
    if (len(positional) > 0) == (keyword is not None):
        raise TypeError(
            f"{op}(): expected the {kw_name} either positionally or as {kw_name}=, "
            f"got {pos_name}={positional!r} and {kw_name}={keyword!r}"
        )
    return positional if keyword is None else (keyword,)


def broadcast_shapes(*shapes) -> Size:
    """The shape the given shapes broadcast to (ints count as 1-D shapes), as a ``Size``."""
    as_tuples = [(int(s),) if isinstance(s, numbers.Integral) else tuple(s) for s in shapes]
    result: list[int] = []
    for i, shape in enumerate(as_tuples):
        for back in range(1, len(shape) + 1):
            n = shape[-back]
            if n < 0:
                raise RuntimeError(
                    f"broadcast_shapes(): shapes cannot contain negative sizes, got {shape}"
                )
            if back > len(result):
                result.insert(0, n)
            elif result[-back] == 1:
                result[-back] = n
            elif n != 1 and n != result[-back]:
                raise RuntimeError(
                    f"broadcast_shapes(): shape {shape} (argument {i}) does not broadcast with "
                    f"{tuple(result)}: size {n} vs {result[-back]} at dimension {-back}"
                )
    return Size(result)


def broadcast_tensors(*tensors) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (views).

    Composes: tinyattn.Tensor.expand
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, x in enumerate(tensors):
        _check_tensor(x, "broadcast_tensors", f"tensors[{i}]")
    shape = broadcast_shapes(*(x.shape for x in tensors))
    return tuple(x if x.shape == shape else expand(x, shape) for x in tensors)


def ravel(input: Tensor) -> Tensor:
    """``input`` flattened to 1-D (a view when ``input`` is contiguous, else a copy).

    Unlike ``reshape(-1)``, a non-contiguous input is always copied (torch's ravel is
    ``contiguous().view(-1)``), even when its strides would allow a 1-D view.

    Composes: tinyattn.reshape, tinyattn.Tensor.contiguous
    """
    return reshape(input if input.is_contiguous() else input.contiguous(), -1)


def tile(input: Tensor, *reps, dims=None) -> Tensor:
    """``input`` repeated ``dims[d]`` times along each dim; a short ``dims`` is padded with
    leading 1s (torch's rule, unlike :meth:`Tensor.repeat`). Always a contiguous copy.
    ``dims`` as a tuple, separate ints or ``dims=``, as torch.

    Composes: tinyattn.Tensor.repeat, tinyattn.Tensor.contiguous
    """
    reps = shape_args(_one_of(reps, dims, "reps", "dims", "tile"), "tile")
    reps = (1,) * (input.ndim - len(reps)) + reps
    out = repeat(input, reps)
    # torch's result is always a fresh contiguous tensor (repeat by ones keeps the layout)
    return out if out.is_contiguous() else out.contiguous()


def _atleast(tensors, ndim: int, op: str):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for i, x in enumerate(tensors):
        _check_tensor(x, op, f"tensors[{i}]")
        if x.ndim >= ndim:
            out.append(x)
        elif ndim == 3 and x.ndim == 2:
            out.append(reshape(x, (*x.shape, 1)))
        elif ndim == 3 and x.ndim == 1:
            out.append(reshape(x, (1, x.shape[0], 1)))
        else:
            out.append(reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape)))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-D becomes shape (1,)); one tensor in, one out.

    Composes: tinyattn.reshape
    """
    return _atleast(tensors, 1, "atleast_1d")


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims: 0-D -> (1, 1), (n,) -> (1, n).

    Composes: tinyattn.reshape
    """
    return _atleast(tensors, 2, "atleast_2d")


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: 0-D -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1).

    Composes: tinyattn.reshape
    """
    return _atleast(tensors, 3, "atleast_3d")


def _tensors(tensors, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): expected a sequence of tensors, got a single Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}(): expects a non-empty TensorList")
    return tensors


def hstack(tensors) -> Tensor:
    """Join along dim 1 (dim 0 when all are 1-D), after :func:`atleast_1d`.

    Composes: tinyattn.cat, tinyattn.reshape
    """
    tensors = list(atleast_1d(_tensors(tensors, "hstack")))
    return cat(tensors, 0 if all(x.ndim == 1 for x in tensors) else 1)


def vstack(tensors) -> Tensor:
    """Join along dim 0, after :func:`atleast_2d` (1-D tensors become rows).

    Composes: tinyattn.cat, tinyattn.reshape
    """
    return cat(list(atleast_2d(_tensors(tensors, "vstack"))), 0)


row_stack = vstack


def dstack(tensors) -> Tensor:
    """Join along dim 2, after :func:`atleast_3d`.

    Composes: tinyattn.cat, tinyattn.reshape
    """
    return cat(list(atleast_3d(_tensors(tensors, "dstack"))), 2)


def column_stack(tensors) -> Tensor:
    """Join along dim 1, 0-D and 1-D tensors made columns ``(n, 1)`` first.

    Composes: tinyattn.cat, tinyattn.reshape
    """
    tensors = _tensors(tensors, "column_stack")
    cols = [reshape(x, (x.numel(), 1)) if x.ndim <= 1 else x for x in tensors]
    return cat(cols, 1)


def _split_points(indices_or_sections, size: int, op: str) -> list[int] | int:
    """An int (number of sections) or a list of split points, from any of torch's spellings."""
    arg = indices_or_sections
    if isinstance(arg, Tensor):
        if arg.dtype.is_floating_point or arg.dtype.name == "bool" or arg.ndim > 1:
            raise RuntimeError(
                f"{op}(): tensor indices_or_sections must be a 0-D or 1-D integer tensor, "
                f"got {arg.ndim}-D {arg.dtype.name}"
            )
        arg = int(arg.item()) if arg.ndim == 0 else [int(i) for i in arg.tolist()]
    if isinstance(arg, numbers.Integral):
        if arg <= 0:
            raise RuntimeError(f"{op}(): number of sections must be larger than 0, got {arg}")
        return int(arg)
    try:
        return [int(i) for i in arg]
    except (TypeError, ValueError):
        raise TypeError(
            f"{op}(): indices_or_sections must be an int or a sequence of ints, got {arg!r}"
        ) from None


def tensor_split(
    input: Tensor, indices_or_sections=None, dim: int = 0, *, sections=None, indices=None
) -> tuple[Tensor, ...]:
    """Views of ``input`` split along ``dim``: into ``n`` near-equal sections (the first
    ``size % n`` one longer), or at the given indices (clamped to the size, as slices are).
    torch's keyword spellings ``sections=n`` and ``indices=[...]`` work too.

    Composes: tinyattn.narrow
    """
    indices_or_sections = _split_spec(indices_or_sections, sections, indices, "tensor_split")
    d = normalize_dim(dim, input.ndim, "tensor_split")
    if input.ndim == 0:
        raise RuntimeError("tensor_split(): expected at least a 1-dimensional tensor")
    size = input.shape[d]
    points = _split_points(indices_or_sections, size, "tensor_split")
    if isinstance(points, int):
        base, extra = divmod(size, points)
        lengths = [base + 1] * extra + [base] * (points - extra)
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    else:
        bounds = [0, *points, size]
    pieces = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a, b = (min(max(int(v) if v >= 0 else int(v) + size, 0), size) for v in (a, b))
        pieces.append(narrow(input, d, a, max(b - a, 0)))
    return _multi_view(tuple(pieces), "Split")


def _split_along(input: Tensor, sections, dim: int, op: str, min_ndim: int):
    if input.ndim < min_ndim:
        raise RuntimeError(
            f"torch.{op} requires a tensor with at least {min_ndim} dimension, but got a tensor "
            f"with {input.ndim} dimensions (shape {list(input.shape)})"
        )
    if isinstance(sections, numbers.Integral) and (
        sections == 0 or input.shape[dim] % sections != 0
    ):
        raise RuntimeError(
            f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
            f"{input.shape[dim]} is not divisible by the split_size {sections}!"
        )
    return tensor_split(input, sections, dim)


def _split_spec(indices_or_sections, sections, indices, op: str):
    """The one split specification given: positional, ``sections=`` or ``indices=``."""
    given = [v for v in (indices_or_sections, sections, indices) if v is not None]
    if len(given) != 1:
        raise TypeError(
            f"{op}(): expected exactly one of indices_or_sections, sections= or indices=, "
            f"got {len(given)}"
        )
    return given[0]


def hsplit(input: Tensor, sections=None, *, indices=None) -> tuple[Tensor, ...]:
    """:func:`tensor_split` along dim 1 (dim 0 for 1-D); an int must divide the size.

    Composes: tinyattn.narrow
    """
    sections = _split_spec(sections, None, indices, "hsplit")
    return _split_along(input, sections, 1 if input.ndim > 1 else 0, "hsplit", 1)


def vsplit(input: Tensor, sections=None, *, indices=None) -> tuple[Tensor, ...]:
    """:func:`tensor_split` along dim 0 of a tensor with >= 2 dims; an int must divide the size.

    Composes: tinyattn.narrow
    """
    return _split_along(input, _split_spec(sections, None, indices, "vsplit"), 0, "vsplit", 2)


def dsplit(input: Tensor, sections=None, *, indices=None) -> tuple[Tensor, ...]:
    """:func:`tensor_split` along dim 2 of a tensor with >= 3 dims; an int must divide the size.

    Composes: tinyattn.narrow
    """
    return _split_along(input, _split_spec(sections, None, indices, "dsplit"), 2, "dsplit", 3)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of the given sizes along ``dim`` (they must sum to the dim's size).

    Composes: tinyattn.narrow
    """
    if isinstance(split_sizes, numbers.Integral):
        raise TypeError(
            f"split_with_sizes(): split_sizes must be a list of ints, got {split_sizes}"
        )
    return split(input, list(split_sizes), dim)


def flipud(input: Tensor) -> Tensor:
    """Reverse dim 0 (input must be >= 1-D).

    Composes: tinyattn.flip
    """
    if input.ndim < 1:
        raise RuntimeError(f"flipud(): Input must be >= 1-d, got shape {list(input.shape)}")
    return flip(input, 0)


def fliplr(input: Tensor) -> Tensor:
    """Reverse dim 1 (input must be >= 2-D).

    Composes: tinyattn.flip
    """
    if input.ndim < 2:
        raise RuntimeError(f"fliplr(): Input must be >= 2-d, got shape {list(input.shape)}")
    return flip(input, 1)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane ``dims``, from ``dims[0]`` towards ``dims[1]``.

    Composes: tinyattn.flip, tinyattn.transpose
    """
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(
            f"rot90(): expected total rotation dims == 2, but got dims = {len(dims)}"
        )
    if input.ndim < 2:
        raise RuntimeError(
            f"rot90(): expected total dims >= 2, but got total dims = {input.ndim} "
            f"(shape {list(input.shape)})"
        )
    d0, d1 = (normalize_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90(): expected rotation dims to be different, got dims = {dims}")
    k = int(k) % 4
    if k == 1:
        return transpose(flip(input, d1), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, d0), d0, d1)
    return input.clone()


class Unfold(Function):
    """out[..., i, ..., j] = x[..., i * step + j, ...]: windows of ``size`` along ``dim``,
    every ``step`` (a view; the window index replaces ``dim``, the offset is a new last dim).

    dx[..., i * step + j, ...] += g[..., i, ..., j]  (overlapping windows add up)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, size, step):
        count = (x.shape[dim] - size) // step + 1
        shape = x.shape[:dim] + (count,) + x.shape[dim + 1 :] + (size,)
        strides = x.strides[:dim] + (x.strides[dim] * step,) + x.strides[dim + 1 :]
        strides += (x.strides[dim],)
        out = np.lib.stride_tricks.as_strided(x, shape, strides, writeable=x.flags.writeable)
        if ctx is not None:
            grid = list(np.ix_(*(np.arange(n) for n in shape)))
            grid[dim] = grid[dim] * step + grid[-1]
            ctx.in_shape, ctx.grid = x.shape, tuple(grid[:-1])
        return out

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.add_at(ctx.in_shape, ctx.grid, g), None, None, None


@gradient_doc(Unfold)
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All windows of length ``size`` along ``dimension``, every ``step`` elements (a view).

    Shape: ``dimension`` becomes ``(n - size) // step + 1``, and a last dim of ``size`` is added.
    """
    d = normalize_dim(dimension, input.ndim, "unfold")
    n = input.shape[d] if input.ndim else 1
    if int(step) <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    if int(size) < 0 or int(size) > n:
        raise RuntimeError(
            f"unfold(): maximum size for tensor at dimension {d} is {n} but size is {size} "
            f"(tensor shape {list(input.shape)})"
        )
    if input.ndim == 0:
        return reshape(input, (1,))[: int(size)]
    return _as_view(Unfold.apply(input, d, int(size), int(step)), input, shares=True)


def _index_array(index, op: str, name: str = "index") -> np.ndarray:
    arr = index._data if isinstance(index, Tensor) else np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected a long tensor for {name}, but got {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def take(input: Tensor, index) -> Tensor:
    """``input.flatten()[index]``: elements at flat positions (negative count from the end);
    the result has ``index``'s shape.

    Composes: tinyattn.reshape, Tensor.__getitem__
    """
    idx = _index_array(index, "take")
    n = input.numel()
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = idx.max() if idx.max() >= n else idx.min()
        raise IndexError(
            f"take(): out of range: tried to access index {bad} on a tensor of {n} elements"
        )
    return getitem(reshape(input, -1), Tensor._make(np.where(idx < 0, idx + n, idx)))


def take_along_dim(input: Tensor, indices, dim: int | None = None) -> Tensor:
    """Values of ``input`` at ``indices`` along ``dim`` (as :func:`gather`, but ``input`` and
    ``indices`` broadcast over the other dims; ``dim=None`` takes from the flattened input).

    Composes: tinyattn.gather, tinyattn.Tensor.expand
    """
    idx = _index_array(indices, "take_along_dim", "indices")
    if dim is None:
        return take_along_dim(reshape(input, -1), idx.reshape(-1), 0)
    if idx.ndim != input.ndim:
        raise RuntimeError(
            f"take_along_dim(): input and indices should have the same number of dimensions, "
            f"but got {input.ndim} dimensions (shape {list(input.shape)}) and {idx.ndim} "
            f"dimensions (shape {list(idx.shape)})"
        )
    d = normalize_dim(dim, input.ndim, "take_along_dim")
    size = input.shape[d]
    if idx.size and (idx.max() >= size or idx.min() < -size):
        raise IndexError(
            f"take_along_dim(): index {idx.max() if idx.max() >= size else idx.min()} is out of "
            f"bounds for dimension {d} with size {size}"
        )
    idx = np.where(idx < 0, idx + size, idx)
    in_shape, idx_shape = list(input.shape), list(idx.shape)
    in_shape[d] = idx_shape[d] = 1
    try:
        common = list(np.broadcast_shapes(tuple(in_shape), tuple(idx_shape)))
    except ValueError:
        raise RuntimeError(
            f"take_along_dim(): input of shape {list(input.shape)} and indices of shape "
            f"{list(idx.shape)} do not broadcast apart from dim {d}"
        ) from None
    x_shape, i_shape = list(common), list(common)
    x_shape[d], i_shape[d] = size, idx.shape[d]
    x = input if tuple(x_shape) == input.shape else expand(input, x_shape)
    return gather(x, d, np.broadcast_to(idx, i_shape))
