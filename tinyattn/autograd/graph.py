"""``tinyattn.autograd.graph``: torch's tools on the recorded graph.

* :class:`saved_tensors_hooks` (and :class:`save_on_cpu`, :class:`disable_saved_tensors_hooks`):
  every tensor an op saves for backward inside the block goes through ``pack_hook``, and
  ``unpack_hook`` gives it back when backward reads it. The tool torch's tutorials use to
  show what autograd keeps in memory, and to offload or compress it.
* :func:`register_multi_grad_hook`: one hook on the gradients of several tensors.
* :func:`increment_version`, :func:`get_gradient_edge` and the :class:`Node` type.

Which arrays an op saves is its own choice (tinyattn's ``mul`` saves both operands,
``exp`` its output), as in torch; the counts of pack calls may differ from torch's where
the two libraries write an op's backward differently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from ..core import engine
from ..core.extensions import extensions
from ..core.function import Node
from ..core.grad_mode import no_grad
from ..core.tensor_base import TensorBase
from ..foundations.type_names import type_name

__all__ = [
    "Node",
    "GradientEdge",
    "get_gradient_edge",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "register_multi_grad_hook",
    "increment_version",
]


# -- what saved_tensors_hooks does to an op's node (called from Function.apply) ------------
class _PackedNode(Node):
    """A node whose saved arrays went through ``saved_tensors_hooks``: unpacked when read."""

    __slots__ = ()

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            return Node.saved_tensors.fget(self)  # type: ignore[attr-defined]  # (raises)
        unpack = self.__dict__["_unpack_hook"]
        out = []
        for was_packed, value in self._saved or ():
            if not was_packed:
                out.append(value)
                continue
            tensor = _unpacked(unpack, value)
            # Under create_graph the tensor itself: the original input or output when the
            # hooks return it (connected to the graph), else a constant, as in torch.
            out.append(tensor if self._graph else tensor._data)
        return tuple(out)

    def _saved_by_index(self, index: int, attribute: str):
        """``grad_fn._saved_self`` ...: the packed input (or output) unpacked, as torch."""
        if self._released:
            return Node.saved_tensors.fget(self)  # type: ignore[attr-defined]  # (raises)
        attrs = self.__dict__
        for (was_packed, value), owner in zip(self._saved or (), attrs["_packed_owners"]):
            if was_packed and owner == index:
                return _unpacked(attrs["_unpack_hook"], value)
        raise AttributeError(f"'{self.name()}' object has no attribute '{attribute}'")


def _pack_saved(ctx: Node, args, result) -> None:
    """Pass each saved array to the innermost pack hook, as a tensor (the input or output
    tensor itself when it is one's array, as torch); ``saved_tensors`` unpacks them.

    As in torch, what was packed is not version-checked (the hooks own its memory).
    """
    pack, unpack = extensions.saved_hooks.hooks[-1]
    out_data = result._data
    packed: list = []
    owners: list = []  # owners: the input index (-1 the output) each array is, or None
    for array in ctx._saved or ():
        if type(array) is not np.ndarray:
            packed.append((False, array))
            owners.append(None)
            continue
        tensor, owner = (result, -1) if array is out_data else (None, None)
        for i, arg in enumerate(args if tensor is None else ()):
            if isinstance(arg, TensorBase) and arg._data is array:
                tensor, owner = arg, i
                break
        if tensor is None:
            tensor = TensorBase._make(array)
        with no_grad():  # (as torch: what a pack hook computes is not recorded)
            packed.append((True, pack(tensor)))
        owners.append(owner)
    ctx._saved = tuple(packed)
    ctx.__dict__["_unpack_hook"] = unpack
    ctx.__dict__["_packed_owners"] = tuple(owners)
    if ctx.__class__ is Node:
        ctx.__class__ = _PackedNode


def _unpacked(unpack, packed):
    tensor = unpack(packed)
    if not isinstance(tensor, TensorBase):
        raise TypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
            f"type {type_name(tensor)}"
        )
    return tensor


class saved_tensors_hooks:
    """Pack every tensor saved for backward in the block; unpack it when backward reads it.

    ``pack_hook(tensor) -> anything`` is called when an op (or a custom
    ``autograd.Function``'s ``save_for_backward``) saves a tensor: the input or output
    tensor itself when that is what is saved. ``unpack_hook(packed) -> Tensor`` must
    return a tensor with the same values. Nested blocks: the innermost hooks apply. As
    in torch, packed tensors are not checked for in-place changes.

    Example::

        >>> import tinyattn as torch
        >>> shapes = []
        >>> def pack(t):
        ...     shapes.append(tuple(t.shape))
        ...     return t
        >>> x = torch.ones(3, requires_grad=True)
        >>> with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        ...     y = x.exp().sum()
        >>> shapes
        [(3,)]
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        extensions.push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *exc: object) -> None:
        extensions.pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """torch's hooks that move saved tensors to CPU memory: on tinyattn (CPU only) they
    keep the tensor as it is. ``pin_memory`` and ``device_type`` are accepted and unused."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda tensor: tensor, lambda tensor: tensor)


class disable_saved_tensors_hooks:
    """Inside the block, entering ``saved_tensors_hooks`` raises ``error_message``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        extensions.disable_saved_tensors_hooks(self.error_message)

    def __exit__(self, *exc: object) -> None:
        extensions.enable_saved_tensors_hooks()


class GradientEdge(NamedTuple):
    """An edge of the graph: the node and which of its outputs (always 0 here)."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor: TensorBase) -> GradientEdge:
    """The edge a tensor's gradient flows along: its ``grad_fn`` (or leaf accumulator)."""
    if not tensor._requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    return GradientEdge(tensor._grad_node(), 0)  # type: ignore[attr-defined]


def increment_version(tensor: TensorBase | Iterable[TensorBase]) -> None:
    """Count an in-place change made behind autograd's back (e.g. through ``.numpy()``)."""
    for t in (tensor,) if isinstance(tensor, TensorBase) else tensor:
        t._version.value += 1


class _MultiHookHandle:
    def __init__(self, handles: list) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(
    tensors: Iterable[TensorBase], fn: Callable, *, mode: str = "all"
) -> _MultiHookHandle:
    """Call ``fn`` once per backward with the gradients of several tensors.

    ``mode="all"``: ``fn(grads)`` with one entry per tensor (None for a tensor whose
    gradient this backward did not compute), once that backward is done (torch calls it
    as soon as the last of them is computed: the same gradients, possibly earlier).
    ``mode="any"``: ``fn(grad)`` with the first of their gradients computed.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    state: dict = {"grads": None}

    def record(i: int):
        def hook(grad):
            if mode == "any":
                if state["grads"] is None:
                    state["grads"] = True
                    engine.queue_callback(lambda: state.update(grads=None))
                    fn(grad)
                return None
            if state["grads"] is None:
                state["grads"] = [None] * len(tensors)
                engine.queue_callback(finish)
            state["grads"][i] = grad
            return None

        return hook

    def finish() -> None:
        grads, state["grads"] = state["grads"], None
        fn(tuple(grads))

    handles = [t.register_hook(record(i)) for i, t in enumerate(tensors)]  # type: ignore[attr-defined]
    return _MultiHookHandle(handles)


# -- Node.register_hook / register_prehook (plugged into the engine's seam below) ---------
class _NodeHookHandle:
    """What the node hook registrations return: ``remove()`` unregisters the hook."""

    def __init__(self, hooks: list, fn) -> None:
        self.hooks, self.fn = hooks, fn

    def remove(self) -> None:
        if self.fn in self.hooks:
            self.hooks.remove(self.fn)


class _WithPostHooks:
    """A node's ``fn`` once ``Node.register_hook`` was called: its backward, then the hooks."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.hooks: list = []
        self.supports_create_graph = getattr(fn, "supports_create_graph", False)

    def backward(self, node: Node, grad):
        input_grads = self.fn.backward(node, grad)
        if type(input_grads) is not tuple:
            input_grads = (input_grads,)
        listed = [i for i, _ in _listed_inputs(node)]
        for hook in list(self.hooks):
            as_tensor = tuple(_as_tensor(input_grads[i]) for i in listed)
            result = hook(as_tensor, (_as_tensor(grad),))
            if result is not None:
                if len(result) != len(listed):
                    raise RuntimeError(
                        f"hook returned {len(result)} gradients; {node.name()} has "
                        f"{len(listed)} inputs"
                    )
                new = list(input_grads)
                for i, g in zip(listed, result):
                    new[i] = g if g is None or node._graph else g._data
                input_grads = tuple(new)
        return input_grads


def _listed_inputs(node: Node) -> list:
    """(position, node) of the inputs ``next_functions`` lists, by positional index."""
    constants = getattr(node, "_constant_inputs", 0)
    return [(i, n) for i, n in enumerate(node.next_nodes) if n is not None or constants >> i & 1]


def _as_tensor(grad):
    if grad is None or isinstance(grad, TensorBase):
        return grad
    return TensorBase._make(np.asarray(grad))


class _NodeHooks:
    """``Node.register_prehook`` / ``register_hook``, as the engine's seam calls them."""

    @staticmethod
    def register_prehook(node: Node, fn) -> _NodeHookHandle:
        def as_tensor_hook(grad):
            result = fn((grad,))
            return None if result is None else result[0]

        node._register_tensor_hook(as_tensor_hook)
        return _NodeHookHandle(node._hooks or [], as_tensor_hook)

    @staticmethod
    def register_hook(node: Node, fn) -> _NodeHookHandle:
        wrapped: Any = node.fn
        if not isinstance(wrapped, _WithPostHooks):
            node._name = node.name()  # (the name comes from fn: keep it)
            wrapped = node.fn = _WithPostHooks(wrapped)  # type: ignore[assignment]
        wrapped.hooks.append(fn)
        return _NodeHookHandle(wrapped.hooks, fn)


extensions.set_saved_tensors_packer(_pack_saved)
extensions.set_node_hooks(_NodeHooks)
