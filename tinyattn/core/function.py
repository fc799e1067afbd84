"""Ops as ``Function`` classes and the graph ``Node`` each application records.

Every differentiable op in tinyattn is a subclass of :class:`Function` with two
static methods side by side, as in ``torch.autograd.Function``::

    class Exp(Function):
        '''y = exp(x).   dx = dy * y'''

        @staticmethod
        def forward(ctx, x):
            y = np.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            (y,) = ctx.saved_tensors
            return dy * y

``forward`` receives NumPy arrays (Tensors are unwrapped; Python scalars and
options pass through) and returns one array. ``backward`` receives the gradient
of that output and returns one gradient per positional input (``None`` where
there is none), *shaped like the broadcast result*: the engine undoes
broadcasting and casts to each input's dtype, so no op repeats that logic.

Higher-order gradients: ``backward`` is written once against ``xp = ctx.xp``, a
NumPy-like namespace. In a first-order backward it is NumPy (``numpy_xp``) and
arrays flow, at no extra cost; under ``create_graph=True`` it is ``tensor_xp``
(``autograd/xp.py``: the same functions as differentiable tinyattn ops),
``ctx.saved_tensors`` gives Tensors (a saved input: that input in the graph; the
saved output: a Tensor whose ``grad_fn`` is this node; anything else: a constant)
and the backward is recorded, so it can be differentiated again. An op declares
this with ``supports_create_graph = True``; see ``docs/higher-order.md``::

        @staticmethod
        def backward(ctx, g):
            xp = ctx.xp
            (x,) = ctx.saved_tensors
            return g * xp.cos(x)          # sin's backward, on arrays or on Tensors

``ctx`` is the :class:`Node` itself (torch's ``grad_fn``): it links to the nodes
of the inputs (``next_nodes``), holds what forward saved, and checks that
nothing saved was modified in place before backward reads it.

Layering: this module never imports the tensor class. It recognises tensors as
instances of :class:`~tinyattn.core.tensor_base.TensorBase` (the autograd
fields of a tensor, which ``tinyattn.Tensor`` subclasses) and makes op outputs
with ``TensorBase._make``, which builds the class that declared itself with
``class Tensor(..., TensorBase, op_outputs=True)``. Imports point one way:
``tinyattn.tensor_api`` and ``tinyattn.ops`` import the core, not back.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from . import _dtype
from .extensions import extensions as _ext
from .grad_mode import _state as _grad_mode
from .quiet import IGNORE_ALL as _FP_IGNORE_ALL
from .quiet import enter as _fp_enter
from .quiet import leave as _fp_leave
from .tensor_base import TensorBase, VersionCounter
from .xp import numpy_xp

__all__ = ["AccumulateGrad", "Function", "Node", "NoGradContext", "OpaqueGrad", "VersionCounter"]


class OpaqueGrad:
    """Base of gradients that are not arrays and reach their node as they are: the engine
    adds them (``+``) but neither unbroadcasts nor casts them (e.g. the gradients of a
    custom ``autograd.Function``'s several outputs on their way to its one node)."""

    __slots__ = ()


class Node:
    """One recorded op application: the backward graph is made of these.

    Attributes
    ----------
    name : str
        torch-style name, e.g. ``"MulBackward0"``.
    next_nodes : tuple of (Node or None)
        The node producing each positional input (None: constant / no grad); the
        engine walks these. ``next_functions`` shows them as torch does.
    needs_input_grad : tuple of bool
        Which inputs want a gradient; ``backward`` may skip the others.
    input_meta : tuple of ((shape, dtype) or None)
        Per input, aligned with ``next_nodes`` (same length): the shape and dtype its
        gradient is summed and cast to (None where ``next_nodes`` has None).

    The engine's fields are slots (one node is made per recorded op, so they
    are kept cheap); whatever an op stores on ``ctx`` (``ctx.dim = ...``) goes
    to the instance ``__dict__``, which is what ``release`` scans for arrays.
    """

    __slots__ = (
        "fn",
        "next_nodes",
        "_constant_inputs",
        "needs_input_grad",
        "input_meta",
        "_saved",
        "_saved_versions",
        "_hooks",
        "_retained",
        "_graph",
        "__dict__",
        "__weakref__",
    )

    _constant_inputs: int  # bit i: input i is a float tensor that wants no gradient (apply)

    # A name given to the node itself (``Node(fn, name)``); None: derived from ``fn`` when
    # asked. A class default, not a slot: most nodes are never named, and never write it.
    _name: str | None = None

    # Whether ``release`` freed saved data: a class default too (read only when a backward
    # finds nothing saved). A released ``Node`` becomes a ``_ReleasedNode``, whose class
    # says True; a node of another class is given its own True.
    _released: bool = False

    # The namespace backward formulas compute with (``xp = ctx.xp``): NumPy-like on arrays;
    # the engine sets ``tensor_xp`` on the instance while it runs a node under create_graph
    # (``xp.exp``, ``xp.where``, ``xp.sum(x, axis=, keepdims=)`` ... mean the same on both).
    xp = numpy_xp

    # Nodes this one calls inside its backward and keeps on ctx (``CopySlices`` keeps the
    # in-place op's node), noted by the engine when this node runs under create_graph:
    # from then on the kept node may be reached on its own too, and the engine runs it
    # after this one. Not a slot: set on those few nodes only (``release`` drops it).
    _held: tuple = ()

    def __init__(self, fn: type[Function] | None = None, name: str | None = None) -> None:
        self.fn = fn
        if name is not None:
            self._name = name
        self.next_nodes: tuple = ()
        self.needs_input_grad: tuple = ()
        self.input_meta: tuple = ()  # (shape, np dtype) per input, for unbroadcast and casting
        self._saved: tuple | None = None
        self._saved_versions: tuple = ()
        self._hooks: list | None = None  # tensor hooks on this node's output
        self._retained = None  # weakref to a tensor whose .grad this node fills (retain_grad)
        self._graph = False  # True while the engine runs backward with create_graph=True

    @property
    def next_functions(self) -> tuple:
        """torch's view of the inputs: ``(node, 0)`` per floating-point tensor input (node
        None when it needs no gradient), e.g. ``((<AccumulateGrad>, 0), (None, 0))`` for
        ``x * c`` with a constant tensor ``c``.

        ``loss.grad_fn.next_functions[0][0]`` walks the graph as in torch's tutorials.
        Other arguments (dims, masks, indices) are not listed, nor, unlike torch, a Python
        number (torch lists ``(None, 0)`` for the 2.0 of ``x * 2.0``).
        """
        constants = getattr(self, "_constant_inputs", 0)
        return tuple(
            (node, 0)
            for i, node in enumerate(self.next_nodes)
            if node is not None or constants >> i & 1
        )

    def name(self) -> str:
        """torch's name of the node, e.g. ``"MulBackward0"`` (a method, as in torch)."""
        if self._name is not None:
            return self._name
        if self.fn is None:
            return "Node"
        return getattr(self.fn, "node_name", None) or self.fn.__name__ + "Backward0"

    # -- what forward keeps for backward -----------------------------------------------
    def save_for_backward(self, *arrays) -> None:
        """Keep arrays (or None) for backward. Inputs and the output are version-checked."""
        self._saved = arrays

    @property
    def saved_tensors(self) -> tuple:
        """What forward saved: arrays, or (under ``create_graph=True``) Tensors.

        Under ``create_graph`` a saved input unpacks to that input as a Tensor in
        the graph (its own node), the saved output to a Tensor whose ``grad_fn`` is
        this node, anything else to a constant Tensor; numbers and None pass as they are.
        """
        saved = self._saved
        if saved is None:  # (nothing saved, or ``release`` freed it)
            if self._released:
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access "
                    f"saved tensors after they have already been freed): {self.name()} released "
                    "its saved arrays after the first backward. Specify retain_graph=True on the "
                    "first backward() call if you need to backward twice."
                )
            return ()
        if self._graph:
            return self._unpack_saved()
        return saved

    def _unpack_saved(self) -> tuple:
        saved = self._saved or ()
        owners: list = [None] * len(saved)  # per saved array: (input index or -1, version)
        for counter, _, _, pos, index, _ in self._saved_versions:
            if pos < len(saved) and index is not None:
                owners[pos] = (index, counter)
        return tuple(self._unpack_one(a, o) for a, o in zip(saved, owners))

    def _unpack_one(self, array, owner):
        if not isinstance(array, np.ndarray):
            return array  # None, numbers, options
        if owner is None:  # made by forward, not an input or the output: a constant
            return TensorBase._make(array)
        index, version = owner
        if index == -1:  # the output: its node is this one (as torch's saved outputs)
            tensor = TensorBase._make(array, self)
        else:
            node = self.next_nodes[index]
            if node.__class__ is AccumulateGrad:  # a leaf: the tensor itself
                return node.variable
            tensor = TensorBase._make(array, node)  # node None: does not require grad
        tensor._version = version  # in-place writes to the original are seen (as torch)
        return tensor

    # torch's names for what a node saved, e.g. ``(a * b).grad_fn._saved_other``: the
    # saved input at that position, or the saved output. Which arrays an op saves is its
    # own (tinyattn's exp saves its result, as torch's); others raise AttributeError.
    @property
    def _saved_self(self):
        return self._saved_by_index(0, "_saved_self")

    @property
    def _saved_other(self):
        return self._saved_by_index(1, "_saved_other")

    @property
    def _saved_result(self):
        return self._saved_by_index(-1, "_saved_result")

    def _saved_by_index(self, index: int, attribute: str):
        if self._released:
            self.saved_tensors  # noqa: B018  (raises: freed by the first backward)
        for counter, _, array, _, where, _ in self._saved_versions:
            if where == index:
                return self._unpack_one(array, (index, counter))
        raise AttributeError(f"'{self.name()}' object has no attribute '{attribute}'")

    def check_versions(self) -> None:
        """Raise if a tensor whose memory forward kept was modified in place since.

        The engine calls this before ``backward``; it covers what was saved with
        ``save_for_backward`` and arrays stored on ``ctx`` (``ctx.mask = mask``).
        """
        for counter, expected, array, _, _, which in self._saved_versions:
            if counter.value != expected:
                shape, dtype = array.shape, array.dtype
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: {self.name()} saved its {which}, a "
                    f"{_dtype.from_numpy_dtype(dtype)} tensor of shape {list(shape)}, at "
                    f"version {expected}; it is now at version {counter.value}. Use an "
                    "out-of-place op (e.g. x = x * 2 instead of x *= 2) or .clone() the tensor "
                    "before modifying it."
                )

    def release(self) -> None:
        """Free saved arrays (after a backward without retain_graph).

        As in torch, only what holds tensor data is freed: saved arrays and array
        attributes. Small attributes (axes, shapes, flags) stay, so nodes that saved
        no data (add, sum, ...) can be backpropagated through again. A node kept on
        ``ctx`` (``CopySlices`` keeps the in-place op's node) is let go, not released
        (torch's ``CopySlices`` drops its ``fn``): its arrays go with it when nothing
        else holds it, and if a recorded graph still reaches it, it frees them when
        it runs there itself.
        """
        self._saved_versions = ()  # nothing left to check: a second backward says "freed"
        if self._saved is not None:
            self._saved = None
            if self.__class__ is Node:  # (``_mark_released``, written out: once per node)
                self.__class__ = _ReleasedNode
            else:
                self._released = True
        attrs = self.__dict__  # what the op stored on ctx (numbers and flags, mostly)
        if attrs:
            drop = []
            for key, value in attrs.items():
                if type(value) in _CONTAINERS:
                    if _holds_data(value):
                        drop.append(key)
                elif isinstance(value, Node):
                    drop.append(key)
            if drop:
                self._mark_released()
                for key in drop:
                    del attrs[key]

    def _mark_released(self) -> None:
        if self.__class__ is Node:  # (a freed attribute now explains itself when read)
            self.__class__ = _ReleasedNode  # (whose ``_released`` is True)
        else:
            self._released = True

    def _register_tensor_hook(self, fn) -> None:
        """A hook of the tensor this node produced: ``fn(grad) -> new grad or None``."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)

    def register_prehook(self, fn) -> Any:
        """torch's node pre-hook: ``fn(grad_outputs) -> new grad_outputs or None``, called
        with the node's incoming gradient (a 1-tuple) before its backward runs."""
        return _node_hooks().register_prehook(self, fn)

    def register_hook(self, fn) -> Any:
        """torch's node hook: ``fn(grad_inputs, grad_outputs) -> new grad_inputs or None``,
        called after the backward ran; ``grad_inputs`` has one entry per
        ``next_functions`` entry, ``grad_outputs`` is the incoming gradient (a 1-tuple)."""
        if self.__class__ is AccumulateGrad or self.fn is None:
            raise RuntimeError(
                f"register_hook: {self.name()} runs no backward formula; register a pre-hook "
                "(register_prehook) or a hook on its tensor instead"
            )
        return _node_hooks().register_hook(self, fn)

    def __repr__(self) -> str:
        return f"<{self.name()}>"


def _node_hooks() -> Any:
    """The node hooks plugged into the seam (``autograd/graph.py``)."""
    if _ext.node_hooks is None:
        raise RuntimeError("node hooks are provided by tinyattn.autograd.graph: import it first")
    return _ext.node_hooks


class _ReleasedNode(Node):
    """A node whose saved data ``release()`` freed: reading a freed ctx attribute raises
    torch's "backward through the graph a second time" error instead of AttributeError.

    A class of its own, switched to on release: a ``__getattr__`` on ``Node`` itself would
    make every attribute read of every node go through the slower lookup path (measured
    24 against 6 ns a read), and the engine reads several per node.
    """

    __slots__ = ()
    _released = True

    def __getattr__(self, name):  # only reached for missing attributes
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(
            f"Trying to backward through the graph a second time: {self.name()} freed its "
            f"saved data ({name!r}) after the first backward. Specify retain_graph=True on the "
            "first backward() call if you need to backward twice."
        )


class AccumulateGrad(Node):
    """The node of a leaf tensor that requires grad: adds incoming gradients to ``.grad``."""

    def __init__(self, variable) -> None:
        super().__init__(None, "AccumulateGrad")
        self.variable = variable


_leaf_lock = threading.Lock()


def leaf_node(tensor: TensorBase) -> AccumulateGrad:
    """The leaf's ``AccumulateGrad`` node, made on first use.

    Made once even when threads race to build graphs from the same leaf: a hook
    registered on the leaf lives on this node, so every graph must share it.
    """
    node = tensor._accumulator
    if node is None:
        with _leaf_lock:
            node = tensor._accumulator
            if node is None:
                node = tensor._accumulator = AccumulateGrad(tensor)
    return node


class NoGradContext:
    """The ``ctx`` of a forward that records no graph: saving is a no-op.

    A fresh one per call, so a forward may store attributes on ``ctx`` and read
    them back, exactly as when a graph is recorded.
    """

    needs_input_grad = ()

    def save_for_backward(self, *arrays) -> None:
        pass


class Function:
    """Base class of differentiable ops; subclass and call ``MyOp.apply(*inputs)``.

    ``supports_create_graph``: True once ``backward`` is written with ``ctx.xp`` (see
    the module docstring), so that it also runs on Tensors and can be differentiated.
    """

    supports_create_graph: bool = False
    # True once ``backward`` follows torch's convention for complex tensors (the gradient
    # of a real loss L w.r.t. z = a + ib is dL/da + i dL/db: a holomorphic f' enters
    # conjugated, ``g * conj(f'(z))``). An op without it refuses to record a graph through
    # complex tensors, rather than return a silently wrong gradient (see docs/complex.md).
    supports_complex: bool = False

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on the inputs' arrays and, if any input requires grad, record a node."""
        # One pass over the inputs: unwrap tensors (other arguments pass through) and,
        # for each tensor that wants a gradient, note its node and (shape, dtype).
        arrays = list(args)
        wants = 0  # bit i set: input i wants a gradient
        constants = 0  # bit i set: input i is a float tensor that wants no gradient
        record = _grad_mode.enabled  # (is_grad_enabled(), without the call)
        for i, a in enumerate(args):
            if isinstance(a, TensorBase):
                data = arrays[i] = a._data
                if a._op_guard:  # (a tensor whose layout admits only some ops: sparse)
                    a._check_op(cls, args)
                if record and a._requires_grad:
                    if not wants:
                        next_nodes = [None] * len(args)
                        input_meta = next_nodes.copy()
                    wants |= 1 << i
                    node = a._grad_fn  # (views and leaves take the method)
                    next_nodes[i] = node if node is not None and a._base is None else a._grad_node()
                    input_meta[i] = (data.shape, data.dtype)
                elif data.dtype.kind in "fc":
                    constants |= 1 << i
        token = _fp_enter(_FP_IGNORE_ALL)  # NumPy's FP warnings off (core/quiet.py)
        try:
            if not wants:  # nothing to differentiate (or grad mode off): no graph
                out = cls.forward(NoGradContext(), *arrays, **kwargs)
                return TensorBase._make(_as_array(out))
            # The node (``Node(cls)`` with its input fields): each slot written once, here,
            # as ``Node.__init__`` then the fields would write several twice.
            ctx = _new_node(Node)
            ctx.fn = cls
            ctx.next_nodes = tuple(next_nodes)
            try:  # (one flat table for up to four inputs: no per-call tuple)
                ctx.needs_input_grad = _NEEDS[wants | 1 << len(args)]
            except IndexError:
                ctx.needs_input_grad = _needs_input_grad(wants, len(args))
            ctx.input_meta = tuple(input_meta)
            ctx._constant_inputs = constants
            ctx._saved = ctx._hooks = ctx._retained = None
            ctx._saved_versions = ()
            ctx._graph = False
            out = cls.forward(ctx, *arrays, **kwargs) if kwargs else cls.forward(ctx, *arrays)
        finally:
            _fp_leave(token)
        if type(out) is not _ndarray:  # a NumPy scalar (0-d result) or an array-like
            out = _as_output_array(ctx, out)
        if not cls.supports_complex:  # (a fact of the class: no dtype read for the others)
            _refuse_complex(cls, out, input_meta)
        result = TensorBase._make(out, ctx)
        if _ext.anomaly is not None:  # (autograd.detect_anomaly: keep where this op was called)
            _ext.anomaly.record_forward_stack(ctx)
        if ctx._saved is not None or ctx.__dict__:  # (add, sum ...: nothing kept to check)
            _record_versions(ctx, args, result)
        return result


def _refuse_complex(cls: type, out: np.ndarray, input_meta: list) -> None:
    """Raise if the output or an input that wants a gradient is complex (``cls`` does not
    differentiate complex tensors)."""
    if out.dtype.kind != "c" and not any(m and m[1].kind == "c" for m in input_meta):
        return
    name = getattr(cls, "node_name", None) or cls.__name__
    raise NotImplementedError(
        f"{name}: the derivative of this op for complex tensors is not implemented in "
        "tinyattn (it would not follow torch's conjugate-Wirtinger convention); compute it "
        "without gradients (torch.no_grad()) or on real tensors (view_as_real / .real, .imag); "
        "docs/complex.md lists the ops that differentiate complex tensors"
    )


def _needs_input_grad(wants: int, n_inputs: int) -> tuple[bool, ...]:
    """``needs_input_grad`` from its bit mask (bit i: input i wants a gradient)."""
    return tuple(bool(wants >> i & 1) for i in range(n_inputs))


# The tuple for each pattern of ops with up to four inputs (nearly all), made once and
# shared: ``_NEEDS[wants | 1 << n]`` for ``n`` inputs (the top bit says how many).
_NEEDS = [_needs_input_grad(i ^ 1 << i.bit_length() - 1, i.bit_length() - 1) for i in range(1, 32)]
_NEEDS.insert(0, ())


def _holds_data(value) -> bool:
    """An array or a node, or a tuple/list holding one (at any depth): data to free."""
    if isinstance(value, (np.ndarray, Node)):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_data(v) for v in value)
    return False


def _as_output_array(ctx: Node, out) -> np.ndarray:
    """``out`` as an array; if forward saved ``out`` itself, the saved one becomes that array
    (so that it is recognised as the output under ``create_graph``)."""
    array = np.asarray(out)
    if ctx._saved and any(s is out for s in ctx._saved):
        ctx._saved = tuple(array if s is out else s for s in ctx._saved)
    return array


_new_node = object.__new__
_ndarray = np.ndarray


def _as_array(x) -> np.ndarray:
    return x if type(x) is np.ndarray else np.asarray(x)


def _record_versions(ctx: Node, args, result) -> None:
    """Remember the version of every input/output whose memory forward kept.

    A kept array (saved, or stored on ``ctx``: ``ctx.mask = mask``) is checked when it
    is an input's or the output's array, or a view of one (a reshape, transpose or
    slice: the same memory, which an in-place op on that tensor would change). Anything
    else forward kept (a cast copy, a product) is fresh memory the user cannot modify.
    What ``saved_tensors_hooks`` packed is theirs: not checked.

    Each record is ``(version counter, its value now, the kept array, its position
    in kept, index, "input" or "output")`` with index the input's position, -1 for
    the output's own array, None for a view of either; ``saved_tensors`` under
    ``create_graph`` connects saved arrays to the graph by it.
    """
    kept = ctx._saved or ()
    attrs = ctx.__dict__
    if attrs:
        for value in attrs.values():  # (numbers and flags, mostly)
            if type(value) in _CONTAINERS:
                kept = _with_arrays_on_ctx(kept, attrs)
                break
    if _ext.saved_hooks_active and ctx._saved and _ext.saved_hooks.hooks:
        pack = _ext.pack_saved  # (only with saved_tensors_hooks open)
        assert pack is not None  # (set by autograd.graph, which opens them)
        pack(ctx, args, result)
        kept = _with_arrays_on_ctx((), attrs) if attrs else ()
    records = []
    out_data = result._data
    for pos, array in enumerate(kept):
        if type(array) is not _ndarray:  # None, a number: nothing to check or connect
            continue
        if array is out_data:  # the common cases first: the output's or an input's own array
            owner, index = result, -1
        else:
            for i, arg in enumerate(args):
                if isinstance(arg, TensorBase) and arg._data is array:
                    owner, index = arg, i
                    break
            else:
                owner, index = _view_owner(array, args, result), None
                if owner is None:  # memory made by forward
                    continue
        version = owner._version
        which = "output" if owner is result else "input"
        records.append((version, version.value, array, pos, index, which))
    if records:  # (else it stays the () every node starts with)
        ctx._saved_versions = tuple(records)


_CONTAINERS = frozenset((np.ndarray, tuple, list))


def _with_arrays_on_ctx(saved: tuple, attrs: dict) -> tuple:
    """``saved`` plus the arrays in ``ctx`` attributes (at any depth in tuples and lists)."""
    stack = [v for v in attrs.values() if type(v) in _CONTAINERS]
    found = []
    while stack:
        value = stack.pop()
        if isinstance(value, np.ndarray):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            stack.extend(value)
    return (*saved, *found)


def _view_owner(saved: np.ndarray, args, result) -> TensorBase | None:
    """The output or input whose memory ``saved`` is a view of (None: memory made by forward)."""
    if saved.base is None:  # owns its memory
        return None
    for owner in (result, *args):
        if isinstance(owner, TensorBase) and np.may_share_memory(saved, owner._data):
            return owner
    return None
