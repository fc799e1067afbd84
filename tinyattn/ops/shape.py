"""Shape ops: views (view, transpose, permute, expand ...), copies (repeat, cat, stack ...).

A *view* shares memory with its input, as in torch: writing into one changes
the other. Views record their base tensor and share its version counter, so
in-place writes through them are tracked (see ``ops/inplace.py``).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import normalize_dim, normalize_dims, shape_args

__all__ = [
    "view",
    "reshape",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "transpose",
    "swapaxes",
    "permute",
    "movedim",
    "expand",
    "expand_as",
    "repeat",
    "repeat_interleave",
    "cat",
    "concat",
    "concatenate",
    "stack",
    "split",
    "chunk",
    "unbind",
    "narrow",
    "select",
    "t",
    "flip",
    "roll",
    "triu",
    "tril",
    "view_as",
    "reshape_as",
    "diagonal",
]


def _as_view(out: Tensor, input: Tensor, shares: bool = False) -> Tensor:
    """Mark ``out`` as a view of ``input``'s base when their memory overlaps.

    The view shares the base's version counter and remembers its value: when an
    in-place op changes the base later, the view's ``grad_fn`` is re-derived
    from the base's new one (see ``inplace.refresh_view``), as in torch.
    """
    if out._data.size and (shares or np.may_share_memory(out._data, input._data)):
        out._base = input._base if input._base is not None else input
        out._version = input._version
        out._view_version = input._version.value
    return out


def _infer_shape(shape: tuple[int, ...], numel: int, op: str) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred, got shape {list(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"{op}: invalid shape dimension {s} in {list(shape)}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class Reshape(Function):
    """out = x with a new shape (same elements, row-major order).   dx = g.reshape(x.shape)"""

    @staticmethod
    def forward(ctx, x, shape, must_view):
        ctx.in_shape = x.shape
        if x.flags.c_contiguous:  # always a view; ndarray.reshape is the fast call
            return x.reshape(shape)
        if must_view:
            try:
                return np.reshape(x, shape, copy=False)
            except ValueError:
                raise RuntimeError(
                    f"view size is not compatible with input tensor's size and stride: cannot "
                    f"view a tensor of shape {list(x.shape)} with strides "
                    f"{[s // x.itemsize for s in x.strides]} as {list(shape)} (it is not "
                    "contiguous, e.g. after transpose). Use .reshape(...) or "
                    ".contiguous().view(...) instead."
                ) from None
        return np.reshape(x, shape)

    @staticmethod
    def backward(ctx, g):
        return np.reshape(g, ctx.in_shape), None, None


def view(input: Tensor, *shape) -> Tensor:
    """A view with a new shape (one size may be -1). Fails when the memory layout forbids it."""
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
    shape = _infer_shape(shape_args(shape, "view"), input._data.size, "view")
    return _as_view(Reshape.apply(input, shape, True), input, shares=True)


def reshape(input: Tensor, *shape) -> Tensor:
    """A tensor with a new shape: a view when possible, else a copy."""
    shape = _infer_shape(shape_args(shape, "reshape"), input._data.size, "reshape")
    return _as_view(Reshape.apply(input, shape, False), input)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other.shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one."""
    if input.ndim == 0:
        return reshape(input, 1)
    s = normalize_dim(start_dim, input.ndim, "flatten")
    e = normalize_dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape
    return reshape(
        input,
        shape[:s] + (-1 if input.numel() else int(np.prod(shape[s : e + 1])),) + shape[e + 1 :],
    )


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    d = normalize_dim(dim, input.ndim, "unflatten")
    shape = input.shape
    return view(input, shape[:d] + tuple(sizes) + shape[d + 1 :])


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Drop size-1 dims (all of them, or the given ones when they have size 1)."""
    shape = input.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = normalize_dims(dim, input.ndim, "squeeze") or ()
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    return view(input, new)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (negative counts from the end of the result)."""
    d = normalize_dim(dim, input.ndim + 1, "unsqueeze")
    shape = input.shape
    return view(input, shape[:d] + (1,) + shape[d:])


class Permute(Function):
    """out = x with its axes reordered.   dx = g with the inverse order"""

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return np.transpose(x, dims)

    @staticmethod
    def backward(ctx, g):
        return np.transpose(g, np.argsort(ctx.dims)), None


def permute(input: Tensor, *dims) -> Tensor:
    dims = shape_args(dims, "permute")
    if len(dims) != input.ndim:
        raise RuntimeError(
            f"permute(): number of dims don't match: the tensor has {input.ndim} dims "
            f"(shape {list(input.shape)}) but {len(dims)} dims were given: {list(dims)}"
        )
    dims = tuple(normalize_dim(d, input.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {dims}")
    return _as_view(Permute.apply(input, dims), input, shares=True)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims (a view)."""
    n = input.ndim
    a, b = normalize_dim(dim0, n, "transpose"), normalize_dim(dim1, n, "transpose")
    if n == 0 or a == b:
        return input if n == 0 else _as_view(Permute.apply(input, tuple(range(n))), input, True)
    dims = list(range(n))
    dims[a], dims[b] = dims[b], dims[a]
    return _as_view(Permute.apply(input, tuple(dims)), input, shares=True)


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def movedim(input: Tensor, source, destination) -> Tensor:
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    perm = list(range(input.ndim))
    src = [normalize_dim(s, input.ndim, "movedim") for s in src]
    dst = [normalize_dim(d, input.ndim, "movedim") for d in dst]
    rest = [d for d in perm if d not in src]
    result = [None] * input.ndim
    for s, d in zip(src, dst):
        result[d] = s
    it = iter(rest)
    result = [r if r is not None else next(it) for r in result]
    return permute(input, *result)


moveaxis = movedim


class Expand(Function):
    """out = x broadcast to a larger shape (a read-only view).   dx = g summed over the copies"""

    @staticmethod
    def forward(ctx, x, shape):
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, g):
        return g, None  # the engine sums g back to x's shape


def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast to ``sizes`` (-1 keeps a dim) without copying."""
    sizes = shape_args(sizes, "expand")
    if len(sizes) < input.ndim:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({input.ndim})"
        )
    lead = len(sizes) - input.ndim
    shape = []
    for i, s in enumerate(sizes):
        cur = input.shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            s = cur
        elif cur is not None and cur != 1 and cur != s:
            raise RuntimeError(
                f"expand: the expanded size of the tensor ({s}) must match the existing size "
                f"({cur}) at non-singleton dimension {i}. Target sizes: {list(sizes)}. Tensor "
                f"sizes: {list(input.shape)}"
            )
        shape.append(s)
    return _as_view(Expand.apply(input, tuple(shape)), input, shares=True)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other.shape)


class Repeat(Function):
    """out = x tiled ``reps`` times per dim.   dx = sum of g over the tiles"""

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
        g = g.reshape(split).sum(axis=tuple(range(0, len(split), 2)))
        return g, None


def repeat(input: Tensor, *sizes) -> Tensor:
    reps = shape_args(sizes, "repeat")
    if len(reps) < input.ndim:
        raise RuntimeError(
            "repeat: number of repeat dims can not be smaller than number of dimensions of tensor"
        )
    return Repeat.apply(input, reps)


class RepeatInterleave(Function):
    """out = each element along ``dim`` repeated ``repeats`` times.   dx = g summed per group"""

    @staticmethod
    def forward(ctx, x, repeats, dim):
        ctx.dim, ctx.repeats, ctx.n_in = dim, repeats, x.shape[dim]
        return np.repeat(x, repeats, axis=dim)

    @staticmethod
    def backward(ctx, g):
        repeats = np.asarray(ctx.repeats).reshape(-1)
        if repeats.size == 1 and ctx.n_in != 1:
            repeats = np.full(ctx.n_in, int(repeats[0]))
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

    @staticmethod
    def forward(ctx, *xs, dim):
        rt = dt.result_type(*xs)
        ctx.dim = dim
        ctx.sizes = [x.shape[dim] for x in xs]
        return np.concatenate([x.astype(rt, copy=False) for x in xs], axis=dim)

    @staticmethod
    def backward(ctx, g):
        bounds = np.cumsum(ctx.sizes)[:-1]
        return tuple(np.split(g, bounds, axis=ctx.dim))


def _tensor_list(tensors, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): expected a sequence of tensors, got a single Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i}, but got {type(x).__name__}")
    return tensors


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

    @staticmethod
    def forward(ctx, *xs, dim):
        rt = dt.result_type(*xs)
        ctx.dim = dim
        return np.stack([x.astype(rt, copy=False) for x in xs], axis=dim)

    @staticmethod
    def backward(ctx, g):
        return tuple(np.moveaxis(g, ctx.dim, 0))


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


class Narrow(Function):
    """out = x[..., start:start+length, ...] along ``dim`` (a view).   dx = g placed there, 0 elsewhere"""

    @staticmethod
    def forward(ctx, x, dim, start, length):
        index = (slice(None),) * dim + (slice(start, start + length),)
        ctx.in_shape, ctx.index = x.shape, index
        return x[index]

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(ctx.in_shape, dtype=g.dtype)
        out[ctx.index] = g
        return out, None, None, None


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    d = normalize_dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    start = int(start)
    if start < 0:
        start += size
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise IndexError(
            f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}) of dim {d}"
        )
    return _as_view(Narrow.apply(input, d, start, int(length)), input, shares=True)


class Select(Function):
    """out = x[..., index, ...] along ``dim``, dropping that dim (a view).   dx = g placed at index"""

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.in_shape, ctx.dim, ctx.index = x.shape, dim, index
        return x[(slice(None),) * dim + (index, Ellipsis)]  # '...' keeps a 0-d result a view

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(ctx.in_shape, dtype=g.dtype)
        out[(slice(None),) * ctx.dim + (ctx.index,)] = g
        return out, None, None


def select(input: Tensor, dim: int, index: int) -> Tensor:
    d = normalize_dim(dim, input.ndim, "select")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {d}"
        )
    return _as_view(Select.apply(input, d, int(index) % size), input, shares=True)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim`` as a tuple of views."""
    d = normalize_dim(dim, input.ndim, "unbind")
    return _multi_view(tuple(select(input, d, i) for i in range(input.shape[d])), "Unbind")


def _multi_view(views: tuple, name: str) -> tuple:
    """Mark views that one call returned together: torch forbids writing them in place
    under autograd (the write could not be recorded per output)."""
    for v in views:
        if v._requires_grad:
            v._multi_view = name
    return views


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    d = normalize_dim(dim, tensor.ndim, "split")
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and size:
            raise RuntimeError(f"split(): split_size must be positive, got {step}")
        sizes = [min(step, size - s) for s in range(0, size, step)] if size else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
    out, start = [], 0
    for s in sizes:
        out.append(narrow(tensor, d, start, s))
        start += s
    return _multi_view(tuple(out), "Split")


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunks`` pieces of size ceil(n / chunks) along ``dim`` (fewer if n is small)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, input.ndim, "chunk")
    size = input.shape[d]
    if size == 0:  # torch: ``chunks`` empty pieces
        return _multi_view(tuple(narrow(input, d, 0, 0) for _ in range(chunks)), "Split")
    return split(input, -(-size // chunks), d)


class Flip(Function):
    """out = x reversed along ``dims``.   dx = g reversed along ``dims``"""

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return np.flip(x, dims).copy()

    @staticmethod
    def backward(ctx, g):
        return np.flip(g, ctx.dims), None


def flip(input: Tensor, *dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (``flip(0, 1)`` or ``flip((0, 1))``)."""
    if len(dims) == 1 and not isinstance(dims[0], (int, np.integer)):
        dims = tuple(dims[0])
    dims = normalize_dims(dims, input.ndim, "flip") or ()
    return Flip.apply(input, dims)


class Roll(Function):
    """out = x shifted cyclically.   dx = g shifted back"""

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return np.roll(x, shifts, dims)

    @staticmethod
    def backward(ctx, g):
        back = tuple(-s for s in ctx.shifts) if isinstance(ctx.shifts, tuple) else -ctx.shifts
        return np.roll(g, back, ctx.dims), None, None


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

    @staticmethod
    def forward(ctx, x, upper, diagonal):
        ctx.upper, ctx.diagonal = upper, diagonal
        return (np.triu if upper else np.tril)(x, diagonal)

    @staticmethod
    def backward(ctx, g):
        return (np.triu if ctx.upper else np.tril)(g, ctx.diagonal), None, None


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Keep the upper triangle (``j - i >= diagonal``) of the last two dims; zero the rest."""
    if input.ndim < 2:
        raise RuntimeError(
            f"triu: input tensor must have at least 2 dimensions, got shape {list(input.shape)}"
        )
    return Triangle.apply(input, True, int(diagonal))


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Keep the lower triangle (``j - i <= diagonal``) of the last two dims; zero the rest."""
    if input.ndim < 2:
        raise RuntimeError(
            f"tril: input tensor must have at least 2 dimensions, got shape {list(input.shape)}"
        )
    return Triangle.apply(input, False, int(diagonal))


def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    return input._apply_inplace(Triangle, True, int(diagonal))


def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    return input._apply_inplace(Triangle, False, int(diagonal))


class Diagonal(Function):
    """out = the diagonal of dims (dim1, dim2) as the last dim.   dx = g on that diagonal"""

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.in_shape, ctx.args = x.shape, (offset, dim1, dim2)
        return np.diagonal(x, offset, dim1, dim2).copy()

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(ctx.in_shape, dtype=g.dtype)
        view = np.diagonal(out, *ctx.args)
        view.setflags(write=True)
        view[...] = g
        return out, None, None, None


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    d1 = normalize_dim(dim1, input.ndim, "diagonal")
    d2 = normalize_dim(dim2, input.ndim, "diagonal")
    return Diagonal.apply(input, int(offset), d1, d2)


def squeeze_(input: Tensor, dim=None) -> Tensor:
    input._data = squeeze(input.detach(), dim)._data
    return input


def unsqueeze_(input: Tensor, dim: int) -> Tensor:
    input._data = unsqueeze(input.detach(), dim)._data
    return input
