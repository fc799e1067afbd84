"""Shape ops that copy: join (cat, stack), tile (repeat, repeat_interleave), reorder
(flip, roll), pick out (triu, tril, diagonal, diag) or lay out (diag_embed), and diff.
"""

from __future__ import annotations

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...core.tensor import Tensor
from ...core.xp import numpy_xp
from ...foundations.type_names import type_name
from .._util import gradient_doc, int_list, normalize_dim, normalize_dims, shape_args
from .views import reshape

__all__ = [
    "repeat",
    "repeat_interleave",
    "cat",
    "concat",
    "concatenate",
    "stack",
    "flip",
    "roll",
    "triu",
    "tril",
    "diagonal",
    "diag",
    "diag_embed",
    "diff",
    "tril_indices",
    "triu_indices",
]
__all__ += ["meshgrid"]


class Repeat(Function):
    """out = x tiled ``reps`` times per dim.   dx = sum of g over the tiles"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, reps):
        in_shape = (1,) * (len(reps) - x.ndim) + x.shape
        ctx.in_shape, ctx.reps = in_shape, reps
        return np.tile(x.reshape(in_shape), reps)

    @staticmethod
    def backward(ctx, g):
        split = []
        for r, s in zip(ctx.reps, ctx.in_shape):
            split += [r, s]
        xp = ctx.xp
        return xp.sum(xp.reshape(g, split), axis=tuple(range(0, len(split), 2))), None


@gradient_doc(Repeat)
def repeat(input: Tensor, *sizes, repeats=None) -> Tensor:
    """Tile ``input`` ``sizes[d]`` times along each dim ``d`` (new leading dims as needed);
    the counts may come as torch's keyword ``repeats=``."""
    reps = shape_args(int_list(sizes, repeats, "repeat", "repeats"), "repeat")
    if len(reps) < input.ndim:
        raise RuntimeError(
            "repeat: number of repeat dims can not be smaller than number of dimensions of "
            f"tensor: repeats {list(reps)}, tensor shape {list(input.shape)}"
        )
    return Repeat.apply(input, reps)


class RepeatInterleave(Function):
    """out = each element along ``dim`` repeated ``repeats`` times.   dx = g summed per group"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, repeats, dim):
        ctx.dim, ctx.repeats, ctx.n_in = dim, repeats, x.shape[dim]
        return np.repeat(x, repeats, axis=dim)

    @staticmethod
    def backward(ctx, g):
        repeats = np.asarray(ctx.repeats).reshape(-1)
        if repeats.size == 1 and ctx.n_in != 1:
            repeats = np.full(ctx.n_in, int(repeats[0]))
        if ctx.xp is not numpy_xp:  # create_graph: each element's copies added back (index_put)
            shape = list(g.shape)
            shape[ctx.dim] = len(repeats)
            group = np.repeat(np.arange(len(repeats)), repeats)
            return ctx.xp.add_at(tuple(shape), (slice(None),) * ctx.dim + (group,), g), None, None
        starts = np.concatenate(([0], np.cumsum(repeats)[:-1])).astype(np.intp)
        shape = list(g.shape)
        shape[ctx.dim] = len(repeats)
        out = np.zeros(shape, dtype=g.dtype)
        nonempty = repeats > 0
        if g.shape[ctx.dim]:
            sums = np.add.reduceat(g, starts[nonempty], axis=ctx.dim)
            idx = [slice(None)] * g.ndim
            idx[ctx.dim] = np.nonzero(nonempty)[0]
            out[tuple(idx)] = sums
        return out, None, None


@gradient_doc(RepeatInterleave)
def repeat_interleave(input, repeats=None, dim: int | None = None, *, output_size=None) -> Tensor:
    """Repeat elements (not the whole tensor): [1, 2] with repeats 2 -> [1, 1, 2, 2]."""
    if repeats is None:  # torch.repeat_interleave(repeats_tensor): [2, 1] -> [0, 0, 1]
        counts = input._data.astype(np.int64).reshape(-1)
        if np.any(counts < 0):
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        return Tensor._make(np.repeat(np.arange(len(counts), dtype=np.int64), counts))
    if dim is None:
        input = reshape(input, -1)
        dim = 0
    dim = normalize_dim(dim, input.ndim, "repeat_interleave")
    if isinstance(repeats, Tensor):
        if repeats._data.dtype.kind not in "iu" or repeats.ndim > 1:
            raise RuntimeError(
                f"repeat_interleave: repeats must be an int or a 0-d/1-d integer tensor, got "
                f"{repeats.dtype} of shape {list(repeats.shape)}"
            )
        repeats = repeats._data.astype(np.int64)
        if repeats.size == 1:  # torch broadcasts a one-element repeats tensor
            repeats = int(repeats.reshape(()))
        elif repeats.shape[0] != input.shape[dim]:
            raise RuntimeError(
                f"repeat_interleave: repeats must have the same size as input along dim {dim}: "
                f"got {repeats.shape[0]} repeats for size {input.shape[dim]}"
            )
    if np.any(np.asarray(repeats) < 0):
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    return RepeatInterleave.apply(input, repeats, dim)


class Cat(Function):
    """out = inputs joined along ``dim``.   d input_i = the matching slice of g"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, *xs, dim):
        rt = dt.result_type(*xs)
        ctx.dim = dim
        ctx.sizes = [x.shape[dim] for x in xs]
        return np.concatenate([x.astype(rt, copy=False) for x in xs], axis=dim)

    @staticmethod
    def backward(ctx, g):
        bounds = np.cumsum(ctx.sizes)[:-1]
        return tuple(ctx.xp.split(g, bounds, axis=ctx.dim))


def _tensor_list(tensors, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): expected a sequence of tensors, got a single Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i}, but got {type_name(x)}")
    return tensors


@gradient_doc(Cat)
def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dim; other dims must match."""
    tensors = _tensor_list(tensors, "cat")
    if len(tensors) > 1:  # torch's legacy rule: 1-D empty tensors are skipped
        kept = [x for x in tensors if x.shape != (0,)]
        tensors = kept or tensors[:1]
    ref = tensors[0]
    nd = ref.ndim
    for i, x in enumerate(tensors):
        if x.ndim == 0:
            raise RuntimeError(
                f"cat(): zero-dimensional tensor (at position {i}) cannot be concatenated"
            )
    d = normalize_dim(dim, nd, "cat")
    for i, x in enumerate(tensors):
        if x.ndim != nd or any(
            a != b for j, (a, b) in enumerate(zip(x.shape, ref.shape)) if j != d
        ):
            raise RuntimeError(
                f"cat(): sizes of tensors must match except in dimension {d}: tensor 0 has shape "
                f"{list(ref.shape)}, tensor {i} has shape {list(x.shape)}"
            )
    return Cat.apply(*tensors, dim=d)


concat = concatenate = cat


class Stack(Function):
    """out = inputs stacked along a new ``dim``.   d input_i = g selected at i along dim"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, *xs, dim):
        rt = dt.result_type(*xs)
        ctx.dim = dim
        return np.stack([x.astype(rt, copy=False) for x in xs], axis=dim)

    @staticmethod
    def backward(ctx, g):
        head = (slice(None),) * ctx.dim
        return tuple(g[head + (i,)] for i in range(g.shape[ctx.dim]))


@gradient_doc(Stack)
def stack(tensors, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    tensors = _tensor_list(tensors, "stack")
    for i, x in enumerate(tensors):
        if x.shape != tensors[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} "
                f"at entry 0 and {list(x.shape)} at entry {i}"
            )
    d = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    return Stack.apply(*tensors, dim=d)


class Flip(Function):
    """out = x reversed along ``dims``.   dx = g reversed along ``dims``"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return np.flip(x, dims).copy()

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.flip(g, ctx.dims), None


@gradient_doc(Flip)
def flip(input: Tensor, *order, dims=None) -> Tensor:
    """Reverse the order of elements along ``dims`` (``flip(0, 1)``, ``flip((0, 1))`` or
    ``flip(dims=(0, 1))``)."""
    dims = int_list(order, dims, "flip", "dims")
    if len(dims) == 1 and not isinstance(dims[0], (int, np.integer)):
        dims = tuple(dims[0])
    dims = normalize_dims(dims, input.ndim, "flip") or ()
    return Flip.apply(input, dims)


class Roll(Function):
    """out = x shifted cyclically.   dx = g shifted back"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return np.roll(x, shifts, dims)

    @staticmethod
    def backward(ctx, g):
        back = tuple(-s for s in ctx.shifts) if isinstance(ctx.shifts, tuple) else -ctx.shifts
        return ctx.xp.roll(g, back, ctx.dims), None, None


@gradient_doc(Roll)
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements cyclically along ``dims`` (the flattened tensor when dims is None)."""
    if isinstance(shifts, (list, tuple)):
        shifts = tuple(int(s) for s in shifts)
    if isinstance(dims, (list, tuple)):
        dims = tuple(normalize_dim(d, input.ndim, "roll") for d in dims)
    elif dims is not None:
        dims = normalize_dim(dims, input.ndim, "roll")
    n_shifts = len(shifts) if isinstance(shifts, tuple) else 1
    n_dims = len(dims) if isinstance(dims, tuple) else (0 if dims is None else 1)
    if n_shifts != n_dims and not (dims is None and n_shifts == 1):
        raise RuntimeError(
            f"roll(): shifts and dimensions must align: got {n_shifts} shift(s) {shifts} and "
            f"{n_dims} dim(s) {dims}"
        )
    if isinstance(shifts, tuple) and dims is None:
        shifts = shifts[0]
    return Roll.apply(input, shifts, dims)


class Triangle(Function):
    """out = triu/tril of the last two dims.   dx = triu/tril of g (same diagonal)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, upper, diagonal):
        ctx.upper, ctx.diagonal = upper, diagonal
        return (np.triu if upper else np.tril)(x, diagonal)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        return (xp.triu if ctx.upper else xp.tril)(g, ctx.diagonal), None, None


def _triangle(input: Tensor, diagonal: int, upper: bool) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(
            f"{'triu' if upper else 'tril'}: input tensor must have at least 2 dimensions, "
            f"got shape {list(input.shape)}"
        )
    return Triangle.apply(input, upper, int(diagonal))


@gradient_doc(Triangle)
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Keep the upper triangle (``j - i >= diagonal``) of the last two dims; zero the rest."""
    return _triangle(input, diagonal, upper=True)


@gradient_doc(Triangle)
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Keep the lower triangle (``j - i <= diagonal``) of the last two dims; zero the rest."""
    return _triangle(input, diagonal, upper=False)


def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    return input._apply_inplace(Triangle, True, int(diagonal))


def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    return input._apply_inplace(Triangle, False, int(diagonal))


class Diagonal(Function):
    """out = the diagonal of dims (dim1, dim2) as the last dim.   dx = g on that diagonal"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.in_shape, ctx.args = x.shape, (offset, dim1, dim2)
        return np.diagonal(x, offset, dim1, dim2).copy()

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        if xp is not numpy_xp:  # create_graph: g added at the diagonal's flat positions
            size = int(np.prod(ctx.in_shape))
            where = np.diagonal(np.arange(size).reshape(ctx.in_shape), *ctx.args).reshape(-1)
            out = xp.add_at((size,), (where,), xp.reshape(g, (-1,)))
            return xp.reshape(out, ctx.in_shape), None, None, None
        out = np.zeros(ctx.in_shape, dtype=g.dtype)
        view = np.diagonal(out, *ctx.args)
        view.setflags(write=True)
        view[...] = g
        return out, None, None, None


@gradient_doc(Diagonal)
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims ``(dim1, dim2)`` (shifted by ``offset``) as a new last dim."""
    d1 = normalize_dim(dim1, input.ndim, "diagonal")
    d2 = normalize_dim(dim2, input.ndim, "diagonal")
    return Diagonal.apply(input, int(offset), d1, d2)


class DiagEmbed(Function):
    """out[..., i, i + offset] = x[..., i] on a new pair of dims (dim1, dim2), 0 elsewhere.

    dx = the same diagonal of g
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        m = x.shape[-1] + abs(offset)
        out = np.zeros(x.shape[:-1] + (m, m), dtype=x.dtype)
        view = np.diagonal(out, offset, -2, -1)
        view.setflags(write=True)
        view[...] = x
        ctx.args = (offset, dim1, dim2)
        return np.moveaxis(out, (-2, -1), (dim1, dim2))

    @staticmethod
    def backward(ctx, g):
        offset, dim1, dim2 = ctx.args
        xp = ctx.xp
        return xp.diagonal(xp.moveaxis(g, (dim1, dim2), (-2, -1)), offset, -2, -1), None, None, None


@gradient_doc(DiagEmbed)
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Put the last dim of ``input`` on the diagonal (shifted by ``offset``) of new square
    dims ``(dim1, dim2)`` of size ``n + |offset|``; the inverse of :func:`diagonal`.
    """
    d1 = normalize_dim(dim1, input.ndim + 1, "diag_embed")
    d2 = normalize_dim(dim2, input.ndim + 1, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed(): dim1 and dim2 cannot be identical, got {d1} and {d2}")
    x = input if input.ndim else input.reshape(1)
    return DiagEmbed.apply(x, int(offset), d1, d2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D ``input``: a square matrix with ``input`` on its ``diagonal``-th diagonal;
    2-D ``input``: its ``diagonal``-th diagonal as a 1-D tensor.

    1-D: d input[i] = g[i, i + diagonal] (:func:`diag_embed`'s); 2-D: d input = g placed on
    the diagonal, 0 elsewhere (:func:`diagonal`'s).
    """
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return globals()["diagonal"](input, diagonal)  # the parameter shadows the op
    raise RuntimeError(
        f"diag(): supports 1-D or 2-D tensors, got {input.ndim}-D of shape {list(input.shape)}"
    )


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """n-th forward difference along ``dim``: ``out[i] = x[i + 1] - x[i]``, applied ``n``
    times, after joining ``prepend`` and ``append`` to ``input`` along ``dim``. Bool
    tensors give ``x[i + 1] != x[i]``.

    Gradient: that of the slices and subtraction (``dx[i] = g[i - 1] - g[i]`` for n = 1).
    """
    from ..elementwise.arithmetic import sub
    from ..elementwise.compare import ne
    from .views import narrow

    if input.ndim == 0:
        raise RuntimeError("diff(): expects input to be at least one-dimensional")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"diff(): order n must be non-negative but got {n}")
    d = normalize_dim(dim, input.ndim, "diff")
    parts = []
    for name, extra in (("prepend", prepend), (None, input), ("append", append)):
        if extra is None:
            continue
        if not isinstance(extra, Tensor):
            extra = Tensor._make(np.asarray(extra, dtype=input._data.dtype))
        if name and extra.ndim != input.ndim:
            raise RuntimeError(
                f"diff(): {name} must have the same number of dimensions as input: got "
                f"{name} of shape {list(extra.shape)}, input of shape {list(input.shape)}"
            )
        parts.append(extra)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        x = ne(hi, lo) if x.dtype.name == "bool" else sub(hi, lo)
    return x


def _tri_indices(row: int, col: int, offset: int, upper: bool, dtype, op: str) -> Tensor:
    row, col, offset = int(row), int(col), int(offset)
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}(): row and col must be non-negative, got row={row}, col={col}")
    if upper:
        rows, cols = np.triu_indices(row, offset, col)
    else:
        rows, cols = np.tril_indices(row, offset, col)
    np_dtype = np.int64 if dtype is None else dt.to_dtype(dtype).np_dtype
    return Tensor._make(np.stack([rows, cols]).astype(np_dtype).reshape(2, -1))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """Coordinates ``(2, N)`` of the lower triangle (``j - i <= offset``) of a row x col
    matrix, row by row."""
    return _tri_indices(row, col, offset, False, dtype, "tril_indices")


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """Coordinates ``(2, N)`` of the upper triangle (``j - i >= offset``), row by row."""
    return _tri_indices(row, col, offset, True, dtype, "triu_indices")


def meshgrid(*tensors, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: ``out[i]`` holds ``tensors[i]`` along its own dim.

    ``meshgrid(a, b, ...)`` or ``meshgrid([a, b, ...])``; with ``n_k = tensors[k].numel()``
    every output has shape ``(n_0, n_1, ...)`` for ``indexing="ij"`` (the default, with
    torch's warning when it is not passed) and ``(n_1, n_0, n_2, ...)`` for ``"xy"``. Each
    output is a broadcast view (reshape + expand) of its input, so gradients flow back
    through those ops: ``d tensors[k] = sum of g_k over every dim but k's``.
    """
    import warnings

    from .views import expand

    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid(): expects a non-empty list of tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"meshgrid(): argument 'tensors' must be tensors, got {type_name(t)} at {i}"
            )
        if t.ndim > 1:
            raise RuntimeError(
                f"meshgrid(): expected 0D or 1D tensors, got tensor {i} of shape {list(t.shape)}"
            )
        if t.dtype != tensors[0].dtype:
            raise RuntimeError(
                f"meshgrid(): expects all tensors to have the same dtype, got "
                f"{tensors[0].dtype} at 0 and {t.dtype} at {i}"
            )
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the "
            "indexing argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): argument 'indexing' must be 'ij' or 'xy', got {indexing!r}")
    n = len(tensors)
    axis = list(range(n))  # the output dim each input runs along
    if indexing == "xy" and n >= 2:
        axis[0], axis[1] = 1, 0
    shape = [0] * n
    for t, a in zip(tensors, axis):
        shape[a] = t.numel()
    out = []
    for t, a in zip(tensors, axis):
        view_shape = [1] * n
        view_shape[a] = shape[a]
        out.append(expand(reshape(t, view_shape), shape))
    return tuple(out)
