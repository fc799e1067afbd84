"""The backward pass: an iterative topological traversal over a gradient dict.

1. Walk the graph from the roots (a stack, no recursion) and count, for every
   node, how many of its consumers are in the graph.
2. Start from the roots; a node runs once all its consumers have sent their
   gradients (Kahn's algorithm). Gradients arriving at the same node from
   several consumers are summed in the dict before it runs. A node whose
   backward calls another node's (``Node._held``) counts as one more consumer
   of it, so that the held node runs, and frees its arrays, after it.
3. A node's ``backward`` returns one gradient per input shaped like the
   broadcast output; the engine sums it down to the input's shape
   (``unbroadcast``) and casts it to the input's dtype. This is the one place
   where broadcasting is undone.

Before a node runs, its total incoming gradient meets the tensor hooks, the
``retain_grad`` of its tensor and ``autograd.grad``'s capture; after it ran,
its saved arrays are released (unless ``retain_graph``).

The order is deterministic: it depends only on the order of each node's inputs.
Each operation on one gradient (sum into the dict, unbroadcast, cast, accumulate
into ``.grad``) is a small helper below, so that making gradients Tensors
(higher-order gradients) changes those helpers, not the traversal.

``create_graph=True``: gradients are Tensors and every node's backward runs with
grad mode on and ``ctx.xp`` the Tensor namespace (``_call_backward_graph``), so
the backward pass is itself recorded; unbroadcast and cast use tensor ops,
``.grad`` is accumulated out of place, hooks see the graph-carrying tensor.
Without it the path is the array one, unchanged.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

import numpy as np

from . import _dtype
from .extensions import extensions as _ext
from .function import AccumulateGrad, Node, OpaqueGrad
from .grad_mode import enable_grad
from .padded import PaddedGrad
from .quiet import quiet
from .tensor_base import TensorBase

# The active tracers (``autograd.trace()``, the profiler, ``explain``): the seam's list
# itself, so that the loop reads it as a global of this module. Each tracer gets one
# ``_record(node, grad_output, input_grads, seconds)`` call per node run.
_tracers: list = _ext.tracers
add_tracer = _ext.add_tracer
remove_tracer = _ext.remove_tracer


def run_backward(
    roots: list[Node],
    root_grads: list[np.ndarray],
    retain_graph: bool = False,
    capture: dict[Node, None] | None = None,
    accumulate: bool = True,
    create_graph: bool = False,
) -> dict[Node, Any]:
    """Propagate ``root_grads`` from ``roots`` through the graph (steps 1-3 above).

    ``capture``: nodes whose incoming gradient is returned (``autograd.grad``).
    ``accumulate``: whether leaves' ``.grad`` are updated.
    ``create_graph``: gradients are Tensors and the backward pass is recorded
    (``root_grads`` must then be Tensors).
    """
    with quiet():  # NumPy's FP warnings off, as in every forward (core/quiet.py)
        if create_graph:
            with enable_grad():
                captured = _traverse(
                    roots, root_grads, retain_graph, capture, accumulate, _call_backward_graph
                )
        else:
            call_backward = _observed(None)  # (tracers, anomaly: once per pass)
            captured = _traverse(
                roots, root_grads, retain_graph, capture, accumulate, call_backward
            )
    if _callbacks.queued:
        _run_callbacks()
    return captured


class _Callbacks(threading.local):
    def __init__(self) -> None:
        self.queued: list = []


_callbacks = _Callbacks()


def queue_callback(callback) -> None:
    """Run ``callback()`` once the backward pass running now is done (torch's
    ``Variable._execution_engine.queue_callback``; ``register_multi_grad_hook`` uses it)."""
    _callbacks.queued.append(callback)


def _run_callbacks() -> None:
    queued, _callbacks.queued = _callbacks.queued, []
    for callback in queued:
        callback()


def _traverse(roots, root_grads, retain_graph, capture, accumulate, call_backward) -> dict:
    """Kahn's algorithm over the graph; ``call_backward`` runs one node (None: the plain
    ``_call_backward``, written out in the loop).

    ``ready`` holds ``(node, its total gradient)``. Sending each input its gradient is
    written out in the loop rather than called: it runs once per node. A node's last
    consumer (nearly always its only one) puts it on ``ready`` with its gradient at
    once; gradients from several consumers are summed in ``grads`` first (``_gather``).
    """
    pending, grads, ready, needed, call_backward = _plan(
        roots, root_grads, capture, accumulate, call_backward
    )
    captured: dict[Node, np.ndarray] = {}
    owned: set[Node] = set()  # nodes whose summed gradient is an array this loop made
    while ready:
        node, grad = ready.pop()
        if grad is not None and (node._hooks or node._retained is not None or capture):
            grad = _on_arrival(node, grad, capture, captured)
        if node.__class__ is AccumulateGrad:
            if grad is not None and accumulate:
                _accumulate_into(node.variable, grad)
                if "post_accumulate_grad_hooks" in node.__dict__:  # (set by the tensor method)
                    _run_post_accumulate_hooks(node)
            continue
        if needed is not None and node not in needed:
            continue  # (its inputs are not needed either: they lead to no input asked for)
        if call_backward is not None:
            input_grads = call_backward(node, grad)
        elif grad is None or not any(node.next_nodes):  # (nodes are true: "not all None")
            input_grads = None
        else:  # (``_call_backward``, written out: one call less per node)
            if node._saved_versions:
                node.check_versions()
            input_grads = node.fn.backward(node, grad)
            if type(input_grads) is not tuple:
                input_grads = (input_grads,)
        if not retain_graph:
            node.release()
        if input_grads is None:  # (no gradient came: the inputs are only counted down)
            input_grads = (None,) * len(node.next_nodes)
        try:  # each input's gradient, fitted to it, handed to it
            for child, g, meta in zip(node.next_nodes, input_grads, node.input_meta, strict=True):
                if child is None:
                    continue
                if g is not None and (type(g) is not _ndarray or (g.shape, g.dtype) != meta):
                    g = _fit_to_input(g, meta)  # (most gradients already fit)
                    if type(g) is PaddedGrad:  # (summed block by block, if more come)
                        _gather(child, g, grads, pending, ready, owned)
                        continue
                if pending[child] == 1 and child not in grads:  # its last consumer, alone
                    ready.append((child, g))
                else:
                    _gather(child, g, grads, pending, ready, owned)
        except ValueError:
            _check_count(node, input_grads)
            raise
    return captured


_ndarray = np.ndarray


def _gather(child: Node, grad, grads: dict, pending: dict, ready: list, owned: set) -> None:
    """One consumer's gradient for ``child``, summed into ``grads``; once all its consumers
    sent theirs, ``child`` is ready with their sum."""
    if grad is not None:
        grads[child] = _add_grads(child, grads[child], grad, owned) if child in grads else grad
    remaining = pending[child] - 1
    pending[child] = remaining
    if remaining == 0:
        ready.append((child, _arrived(grads, child)))


def _arrived(grads: dict, node: Node):
    """The total gradient ``grads`` holds for ``node`` (None if none came), taken out."""
    grad = grads.pop(node, None)
    return grad.materialize() if type(grad) is PaddedGrad else grad


def _plan(roots, root_grads, capture, accumulate, call_backward) -> tuple:
    """What ``_traverse`` starts from: consumer counts, root gradients, the ready roots (with
    their gradients), the nodes ``autograd.grad`` needs (None: all) and the ``call_backward``
    to use."""
    pending = _count_consumers(roots)
    grads: dict[Node, np.ndarray] = {}
    for node, grad in zip(roots, root_grads):
        _sum_into(grads, node, grad)
    ready = [(node, _arrived(grads, node)) for node in dict.fromkeys(roots) if not pending[node]]
    needed = None
    run = call_backward
    if _holders:  # (empty unless an in-place write through a view ran under create_graph)
        run = _held_after_holders(roots, pending, grads, ready, call_backward or _call_backward)
        run = None if run is _call_backward else run
    if run is call_backward and capture and not accumulate:
        # autograd.grad: run only what leads to its inputs (unless a holder of this graph
        # must run its held node: then everything runs, in the holders' order)
        needed = _leading_to(dict.fromkeys([*roots, *pending]), capture)
    return pending, grads, ready, needed, run


def _check_count(node: Node, input_grads) -> None:
    """Raise if a backward returned a gradient count other than its node's input count
    (found by the strict ``zip`` that sends them: no length check per node)."""
    inputs = node.next_nodes
    if len(input_grads) != len(inputs):
        raise RuntimeError(
            f"{node.name()}: backward returned {len(input_grads)} gradients for {len(inputs)} inputs"
        )


def _leading_to(nodes, targets) -> set[Node]:
    """Of ``nodes`` (every node of the graph, as ``_count_consumers`` found them), the ones
    with a path of one edge or more to a node in ``targets``: the ones ``autograd.grad``
    runs. As in torch, the rest never run (nor are released): not the inputs' own nodes
    unless they lead to another input, not what lies below them."""
    consumers_of: dict[Node, list[Node]] = {}
    for node in nodes:
        for child in node.next_nodes:
            if child is not None:
                consumers_of.setdefault(child, []).append(node)
    leading: set[Node] = set()
    stack = [t for t in targets if t in consumers_of]
    while stack:
        for consumer in consumers_of[stack.pop()]:
            if consumer not in leading:
                leading.add(consumer)
                if consumer in consumers_of:
                    stack.append(consumer)
    return leading


def _count_consumers(roots: list[Node]) -> dict[Node, int]:
    """For every node reachable from the roots, the number of its consumers in the graph
    (the roots are keys from the start, with 0 unless another node consumes them)."""
    consumers = dict.fromkeys(roots, 0)  # (a node is walked when it becomes a key)
    stack = list(consumers)
    while stack:
        for child in stack.pop().next_nodes:
            if child is None:
                continue
            if child in consumers:
                consumers[child] += 1
            else:
                consumers[child] = 1
                stack.append(child)
    return consumers


# The nodes that hold another node (``Node._held``), weakly: the engine adds a node when it
# ran it under create_graph. Kept here rather than looked up on every node of every graph,
# so that a backward pays nothing per node for them (an attribute read per node would).
_holders: weakref.WeakSet[Node] = weakref.WeakSet()
_holders_lock = threading.Lock()


def _held_after_holders(roots: list, pending: dict, grads: dict, ready: list, call_backward):
    """Run every held node that is also reachable on its own after the node holding it.

    A holder calls its held node's backward inside its own (``CopySlices`` calls the
    in-place op's node). Once the holder ran under ``create_graph``, the held node's
    saved output is a tensor of the recorded graph, so a later backward may reach the
    held node on its own as well. Counted as one more consumer of it, the holder runs
    first (as in torch, where the holder's higher sequence number puts it first): the
    held node then still has its saved arrays when the holder calls it, and frees them
    when it runs itself. ``call_backward`` is returned wrapped to send that count.
    """
    with _holders_lock:
        holders = list(_holders)
    held_by: dict[Node, list] = {}
    for holder in holders:
        if holder not in pending and holder not in roots:  # not in this graph
            continue
        for held in holder._held:
            if pending.get(held):  # (else reached only through its holder: nothing to order)
                pending[held] += 1
                held_by.setdefault(holder, []).append(held)
    if not held_by:
        return call_backward

    def call_holder_first(node: Node, grad):
        input_grads = call_backward(node, grad)
        for held in held_by.get(node, ()):
            pending[held] -= 1
            if pending[held] == 0:
                ready.append((held, _arrived(grads, held)))
        return input_grads

    return call_holder_first


def _on_arrival(node: Node, grad: np.ndarray, capture, captured: dict) -> np.ndarray:
    """A node's total gradient, before its backward: hooks, ``retain_grad``, capture."""
    if node._hooks:
        grad = _run_hooks(node, grad)
    if node._retained is not None:
        tensor = node._retained()
        if tensor is not None and tensor._grad_fn is node:
            _accumulate_retained(tensor, grad)
    if capture is not None and node in capture:
        captured[node] = grad
    return grad


def _call_backward(node: Node, grad: np.ndarray | None) -> tuple | None:
    """The node's gradient for each input (None: no gradient came, or no input wants one).
    (``_traverse`` runs this inline when it is given None for it.)"""
    if grad is None or not any(node.next_nodes):  # (nodes are true: any() asks "not all None")
        return None
    if node._saved_versions:
        node.check_versions()
    input_grads = node.fn.backward(node, grad)  # type: ignore[union-attr]
    return input_grads if type(input_grads) is tuple else (input_grads,)


def _call_backward_observed(node: Node, grad: np.ndarray | None) -> tuple | None:
    """``_call_backward`` while a tracer or anomaly mode is on: anomaly mode runs the node,
    the tracers are told. Chosen once per backward pass (``_observed``), so that the plain
    one reads neither (10 of its 40 bytecodes a node)."""
    if grad is None or not any(node.next_nodes):
        return None
    if node._saved_versions:
        node.check_versions()
    start = time.perf_counter()
    if _ext.anomaly is not None:  # autograd.detect_anomaly runs the node (and checks it)
        input_grads = _ext.anomaly.call_backward(node, grad)
    else:
        input_grads = node.fn.backward(node, grad)  # type: ignore[union-attr]
    if type(input_grads) is not tuple:
        input_grads = (input_grads,)
    for tracer in _tracers:
        tracer._record(node, grad, input_grads, time.perf_counter() - start)
    return input_grads


def _observed(call_backward):
    """``_call_backward_observed`` if a tracer or anomaly mode is on now, else ``call_backward``
    (None: ``_call_backward``, inline)."""
    return _call_backward_observed if _tracers or _ext.anomaly is not None else call_backward


def _call_backward_graph(node: Node, grad) -> tuple | None:
    """``_call_backward`` with Tensors: the formula runs on ``ctx.xp = tensor_xp``, recorded."""
    fn = node.fn
    if fn is None or not getattr(fn, "supports_create_graph", False):
        raise RuntimeError(
            f"{node.name()} does not support create_graph=True yet (its backward runs on NumPy "
            "arrays only); higher-order gradients cannot flow through this op"
        )
    if _ext.tensor_xp is None:
        raise RuntimeError("create_graph=True needs the tensor namespace of tinyattn.autograd.xp")
    node._graph = True
    attrs = node.__dict__
    attrs["xp"] = _ext.tensor_xp  # shadows the class's numpy_xp while the node runs
    try:
        input_grads = _call_backward_observed(node, grad)  # (a superset of _call_backward)
    finally:
        node._graph = False
        del attrs["xp"]
    held = tuple(v for v in attrs.values() if isinstance(v, Node))
    if held:  # a node it called may now be reached on its own: see _held_after_holders
        node._held = held
        with _holders_lock:
            _holders.add(node)
    if input_grads is None:
        return None
    return tuple(
        g
        if g is None or isinstance(g, TensorBase) or isinstance(g, OpaqueGrad)
        else TensorBase._make(np.asarray(g))
        for g in input_grads
    )


# -- what happens to one gradient ----------------------------------------------------------
def _sum_into(grads: dict, node: Node, grad: np.ndarray) -> None:
    """The gradients given for one root add up (``_gather`` sums those of inner nodes)."""
    grads[node] = grads[node] + grad if node in grads else grad


def _add_grads(node: Node, total, grad, owned: set):
    """``total + grad``: the gradients of a node with several consumers add up.

    The first sum is a new array, which the engine owns (no backward returned it, no
    one else holds it), so every later gradient is added into it in place. A
    ``PaddedGrad`` (the gradient of one slice) adds only its block: the pieces of a
    ``split`` become one array, not one zero-padded array per piece plus their sums.
    Gradients that are Tensors (``create_graph``) are added by a recorded op.
    """
    if node in owned:
        if type(grad) is PaddedGrad:
            grad.add_into(total)
        else:
            total += grad
        return total
    if type(total) is PaddedGrad:
        total = total.materialize()
    elif type(grad) is PaddedGrad:
        total = np.array(total, copy=True)  # (total may be a backward's own array)
    else:
        total = total + grad
        if type(total) is np.ndarray:
            owned.add(node)
        return total
    owned.add(node)
    return _add_grads(node, total, grad, owned)


def _fit_to_input(grad, meta: tuple) -> Any:
    """A backward's gradient, summed over broadcast axes and cast to the input's dtype."""
    shape, dtype = meta
    if isinstance(grad, OpaqueGrad):  # e.g. a custom Function's outputs' gradients
        return grad
    if type(grad) is PaddedGrad:
        if grad.shape == shape and grad.dtype == dtype:
            return grad  # (a slice's gradient always has its input's shape and dtype)
        grad = grad.materialize()
    if type(grad) is not np.ndarray:
        if isinstance(grad, TensorBase):
            return _fit_tensor(grad, shape, dtype)
        grad = np.asarray(grad)
    if grad.shape != shape:
        grad = unbroadcast(grad, shape)
    if grad.dtype != dtype:
        if grad.dtype.kind == "c" and dtype.kind != "c":
            grad = grad.real  # a real input's gradient is dL/dx: the real part (torch)
        grad = grad.astype(dtype)
    return grad


def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` over the axes that broadcasting added or stretched to reach ``shape``.

    The gradient of ``y = broadcast_to(x, grad.shape)`` is this sum: every copy of
    an element of ``x`` passes its gradient back to that element.
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0:  # a scalar gradient for a larger input cannot happen: ops return full shapes
        return np.broadcast_to(grad, shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1
    )
    if axes:  # float16 sums in float32, rounded once (as torch)
        acc = _dtype.accumulation_dtype(grad.dtype)
        grad = grad.sum(axis=axes, keepdims=True, dtype=acc).astype(grad.dtype, copy=False)
    return grad.reshape(shape) if extra else grad


def _fit_tensor(grad, shape: tuple, dtype) -> TensorBase:
    """``_fit_to_input`` with tensor ops (``create_graph``): the sum and cast are recorded."""
    if tuple(grad.shape) != shape:
        extra = grad.ndim - len(shape)
        if extra < 0:
            grad = grad.reshape((1,) * -extra + tuple(grad.shape)).expand(*shape)
        else:
            axes = tuple(range(extra)) + tuple(
                i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1
            )
            if axes:
                grad = grad.sum(dim=axes, keepdim=True)
            if extra:
                grad = grad.reshape(shape)
    if grad._data.dtype != dtype:
        if grad._data.dtype.kind == "c" and dtype.kind != "c":
            grad = grad.real  # a real input's gradient is dL/dx: the real part (torch)
        grad = grad.to(_dtype.from_numpy_dtype(dtype))
    return grad


# One lock for every ``.grad``: accumulation is a read-modify-write, and threads may run
# backward into the same leaf at once (torch adds their gradients exactly).
_grad_lock = threading.Lock()


def _accumulate_into(tensor: TensorBase, grad: np.ndarray) -> None:
    """``tensor.grad += grad``, atomically; the first gradient is copied (never a graph array).

    A Tensor ``grad`` (``create_graph``) is accumulated out of place, keeping its graph
    (``grad = grad + new``, as torch); so is an array into a ``.grad`` that has a graph.
    """
    with _grad_lock:
        _accumulate_into_unlocked(tensor, grad)


def _accumulate_into_unlocked(tensor: TensorBase, grad) -> None:
    """``_accumulate_into`` without the lock (the caller holds it)."""
    if isinstance(grad, TensorBase):
        tensor._grad = grad if tensor._grad is None else tensor._grad + grad
    elif tensor._grad is None:
        g = np.array(grad, dtype=tensor._data.dtype, copy=True)
        if g.shape != tensor._data.shape:
            g = np.ascontiguousarray(np.broadcast_to(g, tensor._data.shape))
        tensor._grad = TensorBase._make(g)
    elif tensor._grad._requires_grad:
        tensor._grad = TensorBase._make(tensor._grad._data + grad)
    else:
        tensor._grad._data += grad


def _run_post_accumulate_hooks(node: AccumulateGrad) -> None:
    """``register_post_accumulate_grad_hook``: ``hook(tensor)`` once ``.grad`` is updated."""
    for hook in list(node.__dict__["post_accumulate_grad_hooks"]):
        hook(node.variable)


def _accumulate_retained(tensor: TensorBase, grad) -> None:
    """``retain_grad``: a non-leaf's ``.grad`` is a new tensor each backward (as torch's
    ``grad = grad + new``), so a ``.grad`` the user kept from an earlier backward keeps
    its values; a leaf's ``.grad`` is updated in place (``_accumulate_into``)."""
    with _grad_lock:
        if tensor._grad is None or isinstance(grad, TensorBase):
            _accumulate_into_unlocked(tensor, grad)
        else:
            tensor._grad = TensorBase._make(tensor._grad._data + grad)


def _run_hooks(node: Node, grad: np.ndarray) -> np.ndarray:
    """Call the tensor hooks in order; each may return a new gradient (same shape and dtype)."""
    for hook in node._hooks or ():
        if isinstance(grad, TensorBase):  # create_graph: the hook sees the graph's tensor
            result = hook(grad)
            if result is not None:
                _checked_hook_result(hook, grad._data, result)
                grad = result
            continue
        result = hook(TensorBase._make(grad))
        if result is not None:
            grad = _checked_hook_result(hook, grad, result)
    return grad


def _checked_hook_result(hook, grad: np.ndarray, result) -> np.ndarray:
    """torch's rule: a hook may change the values of a gradient, not its type or size."""
    if not isinstance(result, TensorBase):
        raise TypeError(f"expected Tensor, but hook returned '{_ext.type_name(result)}'")
    new = result._data
    name = getattr(hook, "__name__", type(hook).__name__)
    if new.shape != grad.shape:
        raise RuntimeError(
            f"hook '{name}' has changed the size of value (was {list(grad.shape)} got "
            f"{list(new.shape)})"
        )
    if new.dtype != grad.dtype:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was "
            f"{_dtype.from_numpy_dtype(grad.dtype)} got {_dtype.from_numpy_dtype(new.dtype)})"
        )
    return new
