"""Views: ops whose result shares memory with the input (view, reshape, permute, transpose,
expand, squeeze, unsqueeze, narrow, select, split, chunk, unbind ...).

As in torch, writing into a view changes its base and vice versa. Views record
their base tensor and share its version counter, so in-place writes through
them are tracked (see ``ops/inplace.py``).
"""

from __future__ import annotations

import functools

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...core.grad_mode import _state as _grad_mode
from ...core.primitives import Expand, Permute, Reshape
from ...core.tensor import Tensor
from .._util import gradient_doc, int_list, normalize_dim, normalize_dims, shape_args

__all__ = [
    "view",
    "reshape",
    "view_as",
    "reshape_as",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "swapaxes",
    "t",
    "movedim",
    "expand",
    "expand_as",
    "narrow",
    "select",
    "unbind",
    "split",
    "chunk",
]


def _as_view(out: Tensor, input: Tensor, shares: bool = False) -> Tensor:
    """Mark ``out`` as a view of ``input``'s base when their memory overlaps.

    The view shares the base's version counter and remembers its value: when an
    in-place op changes the base later, the view's ``grad_fn`` is re-derived
    from the base's new one (see ``inplace.refresh_view``), as in torch.
    """
    # an empty view shares no memory, yet it is still a view (in-place rules apply to it)
    if shares or (out._data.size and np.may_share_memory(out._data, input._data)):
        out._base = input._base if input._base is not None else input
        out._version = input._version
        out._view_version = input._version.value
    return out


def _records(input: Tensor) -> bool:
    """Whether a view of ``input`` goes through ``Function.apply``: to record a graph node
    (grad mode on and ``input`` requires grad), or for a layout that admits only some
    ops (sparse). Otherwise ``view``, ``transpose`` and ``narrow`` wrap the NumPy view
    directly: the same tensor, without apply's per-call Python (a GPT-2 decode step
    takes nine such views a layer; q/k/v split + 3 view/transpose went from 3,839 to
    1,857 bytecodes, see docs/performance.md).
    """
    return (input._requires_grad and _grad_mode.enabled) or input._op_guard


def _dim(dim, ndim: int, op: str) -> int:
    """``normalize_dim`` with the common case (a plain int in range) first."""
    if type(dim) is int and -ndim <= dim < ndim:
        return dim % ndim
    return normalize_dim(dim, ndim, op)


@functools.lru_cache(maxsize=512)  # (per shape: a model asks for the same few each step)
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


@gradient_doc(Reshape)
def view(input: Tensor, *shape, size=None, dtype=None) -> Tensor:
    """A view with a new shape (one size may be -1). Fails when the memory layout forbids it.

    The shape comes as ``view(2, 3)``, ``view((2, 3))`` or ``view(size=(2, 3))``."""
    if dtype is not None or (len(shape) == 1 and isinstance(shape[0], dt.dtype)):
        raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
    if size is not None:
        shape = int_list(shape, size, "view", "size")
    shape = _infer_shape(shape_args(shape, "view"), input._data.size, "view")
    if not _records(input) and input._data.flags.c_contiguous:
        return _as_view(Tensor._make(input._data.reshape(shape)), input, shares=True)
    return _as_view(Reshape.apply(input, shape, True), input, shares=True)


@gradient_doc(Reshape)
def reshape(input: Tensor, *sizes, shape=None) -> Tensor:
    """A tensor with a new shape: a view when possible, else a copy.

    The shape comes as ``reshape(2, 3)``, ``reshape((2, 3))`` or ``reshape(shape=(2, 3))``."""
    sizes = int_list(sizes, shape, "reshape", "shape")
    shape = _infer_shape(shape_args(sizes, "reshape"), input._data.size, "reshape")
    # a contiguous input always gives a view (also when empty, where memory can't tell)
    contiguous = input._data.flags.c_contiguous
    if contiguous and not _records(input):
        return _as_view(Tensor._make(input._data.reshape(shape)), input, shares=True)
    return _as_view(Reshape.apply(input, shape, False), input, contiguous)


@gradient_doc(Reshape)
def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``view(input, other.shape)``."""
    return view(input, other.shape)


@gradient_doc(Reshape)
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``reshape(input, other.shape)``."""
    return reshape(input, other.shape)


@gradient_doc(Reshape)
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one."""
    if input.ndim == 0:
        return reshape(input, 1)
    s = normalize_dim(start_dim, input.ndim, "flatten")
    e = normalize_dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise RuntimeError(
            "flatten() has invalid args: start_dim cannot come after end_dim, got "
            f"start_dim={start_dim}, end_dim={end_dim} for shape {list(input.shape)}"
        )
    shape = input.shape
    return reshape(
        input,
        shape[:s] + (-1 if input.numel() else int(np.prod(shape[s : e + 1])),) + shape[e + 1 :],
    )


@gradient_doc(Reshape)
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dim ``dim`` into the given ``sizes`` (a view)."""
    d = normalize_dim(dim, input.ndim, "unflatten")
    shape = input.shape
    sizes = shape_args((sizes,), "unflatten")
    known = int(np.prod([s for s in sizes if s != -1]))
    if -1 in sizes:  # one size inferred: the others must divide the dim
        fits = sizes.count(-1) == 1 and known > 0 and shape[d] % known == 0
    else:
        fits = known == shape[d]
    if not fits:
        raise RuntimeError(
            f"unflatten: provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({shape[d]}) in the input tensor of shape {list(shape)}"
        )
    return view(input, shape[:d] + sizes + shape[d + 1 :])


@gradient_doc(Reshape)
def squeeze(input: Tensor, dim=None) -> Tensor:
    """Drop size-1 dims (all of them, or the given ones when they have size 1)."""
    shape = input.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = normalize_dims(dim, input.ndim, "squeeze") or ()
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    return view(input, new)


@gradient_doc(Reshape)
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (negative counts from the end of the result)."""
    d = normalize_dim(dim, input.ndim + 1, "unsqueeze")
    shape = input.shape
    return view(input, shape[:d] + (1,) + shape[d:])


@gradient_doc(Permute)
def permute(input: Tensor, *order, dims=None) -> Tensor:
    """Reorder the dims (a view): ``out.shape[i] = input.shape[dims[i]]``.

    The order comes as ``permute(1, 0)``, ``permute((1, 0))`` or ``permute(dims=(1, 0))``."""
    dims = shape_args(int_list(order, dims, "permute", "dims"), "permute")
    if len(dims) != input.ndim:
        raise RuntimeError(
            f"permute(): number of dims don't match: the tensor has {input.ndim} dims "
            f"(shape {list(input.shape)}) but {len(dims)} dims were given: {list(dims)}"
        )
    dims = tuple(normalize_dim(d, input.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {dims}")
    return _as_view(Permute.apply(input, dims), input, shares=True)


@gradient_doc(Permute)
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims (a view)."""
    data = input._data
    n = data.ndim
    if type(dim0) is int and type(dim1) is int and -n <= dim0 < n and -n <= dim1 < n:
        a, b = dim0 % n, dim1 % n  # (the common case, without _dim's two calls)
    else:
        a, b = _dim(dim0, n, "transpose"), _dim(dim1, n, "transpose")
    if n == 0:
        return input
    if not _records(input):  # (NumPy's swapaxes: the same view as the permutation below)
        return _as_view(Tensor._make(data.swapaxes(a, b)), input, shares=True)
    dims = list(range(n))
    dims[a], dims[b] = dims[b], dims[a]
    return _as_view(Permute.apply(input, tuple(dims)), input, shares=True)


swapdims = transpose


@gradient_doc(Permute)
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """NumPy's name for :func:`transpose` (torch's keywords: ``axis0``, ``axis1``)."""
    return transpose(input, axis0, axis1)


@gradient_doc(Permute)
def t(input: Tensor) -> Tensor:
    """Transpose a 2-D tensor (0-D and 1-D come back as they are)."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


@gradient_doc(Permute)
def movedim(input: Tensor, source, destination) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (a view); the rest keep their order."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    perm = list(range(input.ndim))
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: source {src} and destination {dst} must have the same number of dims"
        )
    src = [normalize_dim(s, input.ndim, "movedim") for s in src]
    dst = [normalize_dim(d, input.ndim, "movedim") for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in {name} {dims}")
    if input.ndim == 0:  # dims 0 / -1 of a 0-d tensor: nothing moves
        return permute(input)
    rest = [d for d in perm if d not in src]
    result = [None] * input.ndim
    for s, d in zip(src, dst):
        result[d] = s
    it = iter(rest)
    result = [r if r is not None else next(it) for r in result]
    return permute(input, *result)


moveaxis = movedim


@gradient_doc(Expand)
def expand(input: Tensor, *sizes, size=None, implicit: bool = False) -> Tensor:
    """Broadcast to ``sizes`` (-1 keeps a dim) without copying (``size=`` as in torch;
    ``implicit`` is torch's internal flag and changes nothing)."""
    sizes = shape_args(int_list(sizes, size, "expand", "size"), "expand")
    if len(sizes) < input.ndim:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({input.ndim}): sizes {list(sizes)}, "
            f"tensor shape {list(input.shape)}"
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


@gradient_doc(Expand)
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``expand(input, other.shape)``."""
    return expand(input, other.shape)


class Narrow(Function):
    """out = x[..., start:start+length, ...] along ``dim`` (a view).   dx = g placed there, 0 elsewhere"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, dim, start, length):
        index = (slice(None),) * dim + (slice(start, start + length),)
        pad = [(0, 0)] * x.ndim
        pad[dim] = (start, x.shape[dim] - start - length)
        ctx.pad = pad
        return x[index]

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.slice_grad(g, ctx.pad), None, None, None


@gradient_doc(Narrow)
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``length`` entries from ``start`` along ``dim`` (a view)."""
    d = _dim(dim, input._data.ndim, "narrow")
    size = input._data.shape[d]
    start = int(start)
    if start < 0:
        start += size
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise IndexError(
            f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}) of dim {d}"
        )
    return _narrow(input, d, start, int(length))


def _narrow(input: Tensor, d: int, start: int, length: int) -> Tensor:
    """``narrow`` on arguments already checked (``d`` in range, the piece inside)."""
    if _records(input):
        return _as_view(Narrow.apply(input, d, start, length), input, shares=True)
    index = (slice(None),) * d + (slice(start, start + length),)
    return _as_view(Tensor._make(input._data[index]), input, shares=True)


class Select(Function):
    """out = x[..., index, ...] along ``dim``, dropping that dim (a view).   dx = g placed at index"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, dim, index):
        pad = [(0, 0)] * x.ndim
        pad[dim] = (index, x.shape[dim] - index - 1)
        ctx.dim, ctx.pad = dim, pad
        return x[(slice(None),) * dim + (index, Ellipsis)]  # '...' keeps a 0-d result a view

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        return xp.slice_grad(xp.expand_dims(g, ctx.dim), ctx.pad), None, None


@gradient_doc(Select)
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, dropping that dim (a view)."""
    d = normalize_dim(dim, input.ndim, "select")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {d}"
        )
    return _as_view(Select.apply(input, d, int(index) % size), input, shares=True)


@gradient_doc(Select)
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


@gradient_doc(Narrow)
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    d = _dim(dim, tensor._data.ndim, "split")
    size = tensor._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and size:
            raise RuntimeError(f"split(): split_size must be positive, got {step}")
        # (whole pieces, then the rest: the list without a comprehension's frame)
        sizes = [step] * (size // step) + ([size % step] if size % step else []) if size else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
    # pieces of a positive split_size lie inside: narrow's checks would only repeat these
    piece = _narrow if isinstance(split_size_or_sections, int) else narrow
    out, start = [], 0
    for s in sizes:
        out.append(piece(tensor, d, start, s))
        start += s
    return _multi_view(tuple(out), "Split") if tensor._requires_grad else tuple(out)


@gradient_doc(Narrow)
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunks`` pieces of size ceil(n / chunks) along ``dim`` (fewer if n is small)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, input.ndim, "chunk")
    size = input.shape[d]
    if size == 0:  # torch: ``chunks`` empty pieces
        return _multi_view(tuple(narrow(input, d, 0, 0) for _ in range(chunks)), "Split")
    return split(input, -(-size // chunks), d)


def squeeze_(input: Tensor, dim=None) -> Tensor:
    input._data = squeeze(input.detach(), dim)._data
    return input


def unsqueeze_(input: Tensor, dim: int) -> Tensor:
    input._data = unsqueeze(input.detach(), dim)._data
    return input
