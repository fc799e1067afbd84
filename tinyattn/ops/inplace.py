"""In-place ops under autograd: version bumps, rebinding ``grad_fn``, writes through views.

An in-place op ``x.op_(y)`` is recorded as the out-of-place op ``x' = op(x, y)``
whose result is written back into ``x``'s memory; ``x`` then *is* ``x'`` for
autograd (its ``grad_fn`` becomes the new node). Arrays the node saved that
alias ``x``'s memory are copied first, so the write cannot corrupt them.

If ``x`` is a view of a base tensor ``b`` (a slice, a transpose, a reshape ...),
the write also changes ``b``. ``b`` is rebound to the node of a ``CopySlices``
op (``b_new = b_old`` with the region replaced by ``op(x, ...)``, recorded like
any other op), and ``x`` becomes an ``AsStrided`` view of the new ``b``. This is
torch's ``CopySlices``. Other views of ``b`` notice the write through the
version counter they share with ``b``: the next time autograd asks for their
node, ``refresh_view`` re-derives it as ``AsStrided`` of ``b``'s new node
(torch regenerates view grad_fns the same way).
Views are described by their memory geometry (offset and strides within the
base), so any chain of basic-indexing / transpose / reshape views works.
"""

from __future__ import annotations

import re
from typing import TypeVar

import numpy as np

from ..core.engine import _fit_tensor, unbroadcast
from ..core.function import Function, Node, NoGradContext, _as_array
from ..core.grad_mode import enable_grad, is_grad_enabled
from ..core.tensor import Tensor
from ..core.tensor_base import VersionCounter
from ..core.xp import numpy_xp

_T = TypeVar("_T", bound=Tensor)  # the tensor written in place is the one returned


def check_inplace_allowed(t: Tensor, op: str) -> None:
    """torch's rule: no in-place change of a leaf that requires grad (or a view of one)."""
    if not is_grad_enabled():
        return
    if t._grad_fn is None and t._requires_grad:
        raise RuntimeError(
            f"{op}: a leaf Variable that requires grad is being used in an in-place operation. "
            "Wrap the update in `with tinyattn.no_grad():` or use an out-of-place op."
        )
    multi = t.__dict__.get("_multi_view")
    if multi is not None and t._requires_grad:
        raise RuntimeError(
            f"{op}: Output of {multi} is a view and is being modified inplace. This view is "
            "the output of a function that returns multiple views (unbind, split, chunk, "
            "iteration). Such functions do not allow the output views to be modified inplace. "
            "You should replace the inplace operation by an out-of-place one (or index the "
            "base tensor, e.g. y[i].mul_(2))."
        )
    custom = t.__dict__.get("_custom_view")
    if custom is not None:
        raise RuntimeError(
            f"{op}: {custom} is a view and is being modified inplace. This view was "
            "created inside a custom Function (or because an input was returned as-is) and the "
            "autograd logic to handle view+inplace would override the custom backward associated "
            "with the custom Function, leading to incorrect gradients. This behavior is "
            "forbidden. You can fix this by cloning the output of the custom Function."
        )
    base = t._base
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError(
            f"{op}: a view of a leaf Variable that requires grad is being used in an in-place "
            "operation."
        )


def _can_cast(src: np.dtype, dst: np.dtype) -> bool:
    """torch's rule for writing a result into a tensor: never float into an integer or bool,
    never a number into bool; integers of any sign and width convert (uint8 += int64 wraps)."""
    if src.kind == "c":  # (torch: a complex result into a real tensor is refused)
        return dst.kind == "c"
    if src.kind == "f":
        return dst.kind in "fc"
    return dst.kind != "b" or src.kind == "b"


def _write(t: Tensor, values: np.ndarray, op: str) -> None:
    target = t._data
    if values.dtype != target.dtype and not _can_cast(values.dtype, target.dtype):
        raise RuntimeError(
            f"{op}: result type {values.dtype} can't be cast to the desired output type "
            f"{target.dtype}"
        )
    if values.shape != target.shape:
        raise RuntimeError(
            f"{op}: output with shape {list(target.shape)} doesn't match the broadcast shape "
            f"{list(values.shape)}"
        )
    if not target.size:  # nothing to write (an empty expanded tensor is fine, as in torch)
        t._version.value += 1
        return
    if not target.flags.writeable:
        raise RuntimeError(
            f"{op}: this tensor's memory is read-only (it is an expanded/broadcast view, where "
            "several elements share one memory location); call .clone() first"
        )
    np.copyto(target, values, casting="unsafe")
    t._version.value += 1


def _op_name(fn: type[Function]) -> str:
    """``IndexPut`` -> ``index_put_`` (the name users wrote)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", fn.__name__).lower() + "_"


def _dense(a: np.ndarray) -> bool:
    """Elements fill one gap-free memory block (any dim order): torch's non-overlapping-and-dense."""
    dims = sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for stride, n in dims:
        if stride != expected:
            return False
        expected *= n
    return True


def check_no_partial_overlap(t: Tensor, args, op: str) -> None:
    """torch refuses an operand that partly overlaps the written tensor (``y.add_(y.mT)``).

    Like torch, only when both are dense (otherwise torch calls it too hard to tell and
    goes ahead); the very same memory layout (``y.add_(y)``) is fine.
    """
    target = t._data
    for a in args:
        if not isinstance(a, Tensor) or not a._data.size or not target.size:
            continue
        other = a._data
        same = (
            other.__array_interface__["data"][0] == target.__array_interface__["data"][0]
            and other.strides == target.strides
            and other.shape == target.shape
        )
        if not same and _dense(other) and _dense(target) and np.shares_memory(other, target):
            raise RuntimeError(
                f"{op}: unsupported operation: some elements of the input tensor and the "
                "written-to tensor refer to a single memory location. Please clone() the "
                "tensor before performing the operation."
            )


def apply_inplace(t: _T, fn: type[Function], *args, **kwargs) -> _T:
    op = _op_name(fn)
    check_inplace_allowed(t, op)
    if op != "index_put_":  # setitem writes only the indexed region, not all of t
        check_no_partial_overlap(t, args, op)
    record = is_grad_enabled() and (
        t._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)
    )
    if not record:
        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
        _write(t, _as_array(fn.forward(NoGradContext(), t._data, *arrays, **kwargs)), op)
        return t

    if t._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"{op}: cannot write a result that requires grad into a {t.dtype} tensor"
        )
    if t._base is not None and t._base._data.dtype != t._data.dtype:
        raise NotImplementedError(
            f"{op}: an in-place write that requires grad through a view of another dtype "
            f"(.real, .imag, view_as_real, view_as_complex: a {t.dtype} view of a "
            f"{t._base.dtype} tensor) is not supported by tinyattn's autograd; write into "
            "the base tensor, or use out-of-place ops (e.g. torch.complex(re, im))"
        )
    result = fn.apply(t, *args, **kwargs)
    node = result._grad_fn
    # An operand sharing t's storage (``y.mul_(y)``, ``y[0].mul_(y[1])``) that the node saved
    # is at an old version after the write: backward must fail the version check, as in
    # torch. Otherwise the only saved array aliasing t is t's own pre-write value (torch
    # keeps a copy of it where the formula needs it), so it is copied.
    other_aliases = any(isinstance(a, Tensor) and a._version is t._version for a in args)
    if node._saved and not other_aliases:  # keep the pre-write values saved from t's memory
        node._saved = tuple(
            a.copy() if isinstance(a, np.ndarray) and np.shares_memory(a, t._data) else a
            for a in node._saved
        )
        # the copies are not t's memory: nothing to check (the records still say which
        # input they were, for create_graph), so they get fresh counters
        node._saved_versions = tuple(
            (VersionCounter(), 0, *r[2:]) if r[0] is t._version else r for r in node._saved_versions
        )
    base = t._base
    if base is not None:  # before the write: CopySlices's inputs are the op's, pre-write
        base_new = _copy_slices(t, base, node, args)
    _write(t, result._data, op)
    if base is None:
        t._grad_fn = node
        t._requires_grad = True
        return t
    base._grad_fn = base_new._grad_fn
    base._requires_grad = True
    t._grad_fn = _as_strided_node(t, base)
    t._requires_grad = True
    t._view_version = t._version.value
    return t


def refresh_view(view: Tensor) -> None:
    """Re-derive a view's ``grad_fn`` from its base after the base was written in place.

    Called by ``Tensor._grad_node`` when the shared version counter moved since the
    view's node was made: the view is then ``as_strided(base)`` of the base's current
    value, so its gradient is scattered into the base's node.
    """
    base = view._base
    view._view_version = view._version.value
    if not base._requires_grad or not np.may_share_memory(view._data, base._data):
        return
    if base._data.dtype != view._data.dtype:
        raise NotImplementedError(
            f"the base of this {view.dtype} view (.real, .imag, view_as_real or "
            f"view_as_complex of a {base.dtype} tensor) was written in place after the view "
            "was made; tinyattn's autograd cannot re-derive such a view's gradient: take the "
            "view again after the write"
        )
    view._grad_fn = _as_strided_node(view, base)
    view._requires_grad = True


def _as_strided_node(view: Tensor, base: Tensor) -> Node:
    """The node of ``view`` as ``AsStrided`` of ``base`` (recorded whatever the grad mode:
    the view already exists, only its node is re-derived)."""
    with enable_grad():
        return AsStrided.apply(base, geometry=_ViewGeometry(view._data, base._data))._grad_fn


class _ViewGeometry:
    """Where a view sits inside its base's memory: element offset, shape and strides."""

    def __init__(self, view: np.ndarray, base: np.ndarray) -> None:
        itemsize = self.itemsize = base.itemsize
        offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        self.offset = offset // itemsize
        self.shape = view.shape
        self.strides = view.strides
        self.base_shape = base.shape
        self.base_strides = base.strides
        self.extent = (
            1 + sum((n - 1) * s for n, s in zip(base.shape, base.strides) if n > 0) // itemsize
        )
        if min(base.strides, default=0) < 0 or min(view.strides, default=0) < 0:
            raise RuntimeError(
                "in-place writes through views with negative strides are not supported"
            )

    def buffers(self, dtype) -> tuple[np.ndarray, np.ndarray]:
        """A zeroed buffer laid out like the base, and the view's region inside it."""
        flat = np.zeros(max(self.extent, 1), dtype=dtype)
        as_strided = np.lib.stride_tricks.as_strided
        scale = flat.itemsize / self.itemsize
        base = as_strided(flat, self.base_shape, tuple(int(s * scale) for s in self.base_strides))
        view = as_strided(
            flat[self.offset :], self.shape, tuple(int(s * scale) for s in self.strides)
        )
        return base, view

    def flat_index(self) -> np.ndarray:
        """For each view element, the row-major flat index of the base element it is."""
        memory = np.arange(max(self.extent, 1))  # memory slot -> itself, laid out as the base
        as_strided = np.lib.stride_tricks.as_strided
        scale = memory.itemsize // self.itemsize
        base_slots = as_strided(
            memory, self.base_shape, tuple(s * scale for s in self.base_strides)
        )
        view_slots = as_strided(
            memory[self.offset :], self.shape, tuple(s * scale for s in self.strides)
        )
        element = np.zeros(memory.shape, dtype=np.intp)  # memory slot -> base element
        element[base_slots.reshape(-1)] = np.arange(base_slots.size)
        return element[view_slots]

    def view_of(self, base: np.ndarray) -> np.ndarray:
        """The view's region of ``base`` (an array laid out as at construction)."""
        as_strided = np.lib.stride_tricks.as_strided
        flat = as_strided(base, (self.extent,), (self.itemsize,))  # base's memory, in order
        return as_strided(flat[self.offset :], self.shape, self.strides)


class CopySlices(Function):
    """``base_new = base_old`` with the view's region replaced by ``op(view, *others)``.

    Recorded when an in-place op writes through a view of ``base``; ``op_node``
    is that op's own node (kept on ctx, and released with this one)::

        d base_old = d base_new            outside the region
        d base_old[region] = d view        where (d view, d others) = op.backward(d base_new[region])
        d others = those of op.backward

    ``forward`` returns ``base``'s own array: the op's result is written into it
    just after this node is recorded. Under ``create_graph`` the same formula runs as
    recorded ops (the region read with ``getitem``, written with ``add_at``), and the
    op's own backward runs in graph mode.
    """

    supports_create_graph = True

    node_name = "CopySlices"  # torch's name for this node

    @staticmethod
    def forward(ctx, base, *others, op_node: Node, geometry: _ViewGeometry):
        ctx.op_node = op_node
        ctx.geometry = geometry
        return base

    @staticmethod
    def backward(ctx, g: np.ndarray):
        if ctx.xp is not numpy_xp:
            return _copy_slices_grad_graph(ctx, g)
        base_buf, view_buf = ctx.geometry.buffers(g.dtype)
        base_buf[...] = g
        op_node = ctx.op_node
        op_node.check_versions()
        op_grads = op_node.fn.backward(op_node, np.array(view_buf))
        if not isinstance(op_grads, tuple):
            op_grads = (op_grads,)
        g_view = op_grads[0]
        view_buf[...] = 0 if g_view is None else unbroadcast(np.asarray(g_view), view_buf.shape)
        return (np.array(base_buf),) + tuple(op_grads[1:])


def _copy_slices_grad_graph(ctx, g):
    """CopySlices's backward as recorded ops (create_graph); see the class docstring."""
    xp, geometry, op_node = ctx.xp, ctx.geometry, ctx.op_node
    if not getattr(op_node.fn, "supports_create_graph", False):
        raise RuntimeError(
            f"{op_node.name()} does not support create_graph=True yet (its backward runs on "
            "NumPy arrays only); higher-order gradients cannot flow through this op"
        )
    where = geometry.flat_index().reshape(-1)
    size = int(np.prod(geometry.base_shape))
    flat = xp.reshape(g, (-1,))
    op_node.check_versions()
    op_node._graph = True  # the op's backward runs in graph mode, as the engine runs a node
    op_node.__dict__["xp"] = xp
    try:
        g_region = xp.reshape(xp.getitem(flat, (where,)), geometry.shape)
        op_grads = op_node.fn.backward(op_node, g_region)
    finally:
        op_node._graph = False
        del op_node.__dict__["xp"]
    if not isinstance(op_grads, tuple):
        op_grads = (op_grads,)
    region = np.zeros(size, dtype=np.bool_)
    region[where] = True
    d_base = xp.where(region, 0, flat)  # outside the region: g passes straight through
    g_view = op_grads[0]
    if g_view is not None:
        if not isinstance(g_view, Tensor):
            g_view = Tensor._make(np.asarray(g_view))
        g_view = _fit_tensor(g_view, geometry.shape, g._data.dtype)
        d_base = d_base + xp.add_at((size,), (where,), xp.reshape(g_view, (-1,)))
    return (xp.reshape(d_base, geometry.base_shape),) + tuple(op_grads[1:])


class AsStrided(Function):
    """``view = as_strided(base)``: the view at ``geometry`` (offset, shape, strides) in base.

    How a view's node is re-derived after its base was written in place::

        d base = zeros, with d view scattered into the view's region
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, base, geometry: _ViewGeometry):
        ctx.geometry = geometry
        return geometry.view_of(base)

    @staticmethod
    def backward(ctx, g: np.ndarray):
        xp, geometry = ctx.xp, ctx.geometry
        if xp is not numpy_xp:  # create_graph: g added at the view's elements (recorded)
            size = int(np.prod(geometry.base_shape))
            where = geometry.flat_index().reshape(-1)
            flat = xp.add_at((size,), (where,), xp.reshape(g, (-1,)))
            return xp.reshape(flat, geometry.base_shape)
        base_buf, view_buf = geometry.buffers(g.dtype)
        view_buf[...] = g
        return np.array(base_buf)


def _copy_slices(view: Tensor, base: Tensor, op_node: Node, others) -> Tensor:
    """Record ``CopySlices`` for the write of ``op_node``'s result into ``view``."""
    if view._data.size and any(  # (NumPy may give an empty array 0 strides)
        s == 0 for s, n in zip(view._data.strides, view._data.shape) if n > 1
    ):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )
    geometry = _ViewGeometry(view._data, base._data)
    return CopySlices.apply(base, *others, op_node=op_node, geometry=geometry)
