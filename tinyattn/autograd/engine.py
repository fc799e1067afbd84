"""The backward pass: an iterative topological traversal over a gradient dict.

1. Walk the graph from the roots (a stack, no recursion) and count, for every
   node, how many of its consumers are in the graph.
2. Start from the roots; a node runs once all its consumers have sent their
   gradients (Kahn's algorithm). Gradients arriving at the same node from
   several consumers are summed in the dict before it runs.
3. A node's ``backward`` returns one gradient per input shaped like the
   broadcast output; the engine sums it down to the input's shape
   (``unbroadcast``) and casts it to the input's dtype. This is the one place
   where broadcasting is undone.

The order is deterministic: it depends only on the order of each node's inputs.
"""

from __future__ import annotations

import time

import numpy as np

from . import function
from .function import AccumulateGrad, Node

# Active ``autograd.trace()`` recorders; each gets one record per node run.
_tracers: list = []


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
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape) if extra else grad


def _collect(roots: list[Node]) -> dict[Node, int]:
    """For every node reachable from the roots, the number of its consumers in the graph."""
    dependencies: dict[Node, int] = {}
    seen = set(roots)
    stack = list(roots)
    while stack:
        node = stack.pop()
        for child in node.next_functions:
            if child is None:
                continue
            dependencies[child] = dependencies.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return dependencies


def run_backward(
    roots: list[Node],
    root_grads: list[np.ndarray],
    retain_graph: bool = False,
    capture: dict[Node, None] | None = None,
    accumulate: bool = True,
) -> dict[Node, np.ndarray]:
    """Propagate ``root_grads`` from ``roots`` through the graph.

    ``capture``: nodes whose incoming gradient is returned (``autograd.grad``).
    ``accumulate``: whether leaves' ``.grad`` are updated.
    """
    dependencies = _collect(roots)
    grads: dict[Node, np.ndarray] = {}
    for node, g in zip(roots, root_grads):
        grads[node] = grads[node] + g if node in grads else g
    ready = [node for node in dict.fromkeys(roots) if dependencies.get(node, 0) == 0]
    captured: dict[Node, np.ndarray] = {}

    while ready:
        node = ready.pop()
        grad = grads.pop(node, None)
        if grad is not None:
            if node._hooks:
                grad = _run_hooks(node, grad)
            if node._retained is not None:
                tensor = node._retained()
                if tensor is not None and tensor._grad_fn is node:
                    _accumulate_into(tensor, grad)
            if capture is not None and node in capture:
                captured[node] = grad
        if isinstance(node, AccumulateGrad):
            if grad is not None and accumulate:
                _accumulate_into(node.variable, grad)
            continue

        children = node.next_functions
        input_grads = None
        if grad is not None and children.count(None) != len(children):  # some input wants one
            t0 = time.perf_counter() if _tracers else 0.0
            input_grads = node.fn.backward(node, grad)
            if not isinstance(input_grads, tuple):
                input_grads = (input_grads,)
            if len(input_grads) != len(children):
                raise RuntimeError(
                    f"{node.name}: backward returned {len(input_grads)} gradients for "
                    f"{len(children)} inputs"
                )
            if _tracers:
                for tracer in _tracers:
                    tracer._record(node, grad, input_grads, time.perf_counter() - t0)
        if not retain_graph:
            node.release()

        for i, child in enumerate(children):
            if child is None:
                continue
            g = input_grads[i] if input_grads is not None else None
            if g is not None:
                shape, dtype = node.input_meta[i]
                if type(g) is not np.ndarray:
                    g = np.asarray(g)
                if g.shape != shape:
                    g = unbroadcast(g, shape)
                if g.dtype != dtype:
                    g = g.astype(dtype)
                grads[child] = grads[child] + g if child in grads else g
            remaining = dependencies[child] - 1
            dependencies[child] = remaining
            if remaining == 0:
                ready.append(child)
    return captured


def _run_hooks(node: Node, grad: np.ndarray) -> np.ndarray:
    if not node._hooks:
        return grad
    from .._tensor import Tensor

    for hook in node._hooks:
        result = hook(Tensor._make(grad))
        if result is not None:
            grad = result._data if isinstance(result, Tensor) else np.asarray(result)
    return grad


def _accumulate_into(tensor, grad: np.ndarray) -> None:
    """``tensor.grad += grad`` (a fresh array the first time: never alias graph arrays)."""
    if tensor.grad is None:
        g = np.array(grad, dtype=tensor._data.dtype, copy=True)
        if g.shape != tensor._data.shape:
            g = np.ascontiguousarray(np.broadcast_to(g, tensor._data.shape))
        tensor.grad = function.Tensor._make(g)  # (the Tensor class, set once _tensor.py loads)
    else:
        tensor.grad._data += grad
