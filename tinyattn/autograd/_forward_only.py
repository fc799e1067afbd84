"""How tensors that only forward-mode AD tracks look from outside: torch's flags.

``forward_ad`` computes tangents from the reverse-mode graph, so ``make_dual(x, t)``
of an ``x`` that does not require grad hangs from a private leaf of its own, and what
is computed from it is recorded like any op. In torch such tensors are not in the
reverse graph at all: ``requires_grad`` is False, ``grad_fn`` None, ``is_leaf`` True.

A tensor is *forward-only* when its graph reaches no leaf that requires grad other
than those private leaves. ``Tensor``'s ``requires_grad`` / ``grad_fn`` / ``is_leaf``
(and ``requires_grad_``, ``numpy``, ``retain_grad``, ``register_hook``, ``repr``) ask
``Tensor._is_forward_only`` and answer for such tensors as torch's do, and
``autograd.backward``/``grad`` refuse them; the engine and the ops read the fields
``_requires_grad`` / ``_grad_fn``, so tangents are still computed. Whether a node
reaches a real leaf is found by one walk of its graph and remembered per node; while
no private leaf is alive the answer is "no" at once.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..core.function import AccumulateGrad, Node
from ..core.tensor_base import TensorBase

__all__ = ["is_forward_only", "make_leaf", "mark_private"]

# the private leaves of forward_ad, by id (a tensor's == is elementwise: no WeakSet)
_private: dict[int, weakref.ref] = {}
_reaches_real: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # node -> bool


def mark_private(leaf: TensorBase) -> None:
    """Note ``leaf`` as a private leaf (its gradients are nobody's)."""
    key = id(leaf)

    def forget(_ref: weakref.ref) -> None:
        _private.pop(key, None)

    _private[key] = weakref.ref(leaf, forget)


def _is_private(leaf: TensorBase) -> bool:
    ref = _private.get(id(leaf))
    return ref is not None and ref() is leaf


def _node_reaches_real(node: Node) -> bool:
    """Whether the graph below ``node`` (itself included) has a leaf requiring grad that
    is not private. A walk that finds none shows every node it saw has none either."""
    known = _reaches_real.get(node)
    if known is not None:
        return known
    seen = {node}
    stack = [node]
    while stack:
        current = stack.pop()
        known = _reaches_real.get(current)
        if known is False:
            continue
        if known or (current.__class__ is AccumulateGrad and not _is_private(current.variable)):
            _reaches_real[node] = True
            return True
        for child in current.next_nodes:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    for current in seen:
        _reaches_real[current] = False
    return False


def is_forward_only(tensor: TensorBase) -> bool:
    """``tensor`` is recorded only for forward-mode AD (torch: not in the reverse graph)."""
    node = tensor._grad_fn  # (no private leaf alive: none is forward-only, at no cost)
    return node is not None and bool(_private) and not _node_reaches_real(node)


def make_leaf(tensor) -> None:
    """``requires_grad_()`` on a forward-only tensor: as in torch, it becomes a leaf that
    requires grad and keeps its tangent (a dual of the level in its own right)."""
    from . import forward_ad as fw  # (it imports this module)

    state = fw._levels.get(fw._current_level)
    tangent = fw.unpack_dual(tensor).tangent if state is not None else None
    tensor._grad_fn, tensor._requires_grad, tensor._base = None, True, None
    if tangent is not None:
        dual = fw._Dual(tensor, tangent, tensor, private=False)
        state.duals[dual.node] = dual  # type: ignore[union-attr]


# -- whether a tangent requires grad -------------------------------------------------------
#
# torch computes a tangent with forward formulas on the primals, recorded when one of them
# requires grad, and an input without a tangent counts as zeros: ``(w_dual * x)`` has the
# tangent ``t_w * x + 0 * w``, which reads ``w``, so it requires grad (``grad_fn`` set, and
# backpropagating it gives ``w`` a zero gradient), though it does not depend on ``w``. Ours is
# the exact derivative, so it does not. ``link_reads`` gives such a tangent torch's flags by
# those zero terms: the tensors that require grad read by an op between the duals and ``y``
# whose formula reads primals (any op but the linear ones below) get a zero gradient from it.

# ops whose forward formula is the op applied to the tangents (reads no primal)
_LINEAR = frozenset(
    "Add Sub Neg Sum Mean Reshape View Expand Permute Index Select Narrow Clone Cat Stack "
    "Flip Roll Cumsum Cast Diagonal Triangle Repeat ConstantPad AsStrided Gather MaskedFill "
    "Where".split()
)


class _ZeroGrads:
    """The node of the zero terms: each read tensor gets a zero gradient."""

    supports_create_graph = True

    @staticmethod
    def backward(node: Node, grad) -> tuple:
        make = TensorBase._make if isinstance(grad, TensorBase) else (lambda a: a)
        return tuple(make(np.zeros(shape, dtype)) for shape, dtype in node.input_meta)


def link_reads(tangent: TensorBase, root: Node, duals, stops) -> TensorBase:
    """``tangent``, or (if it requires no grad and an op between ``duals`` (nodes) and
    ``root`` reads a tensor that requires grad) the same values from a node sending
    zeros to those tensors, as torch's. ``stops``: nodes the tangent does not pass."""
    parents: dict[Node, list[Node]] = {}
    seen, stack = {root}, [root]
    while stack:  # the nodes below root that tangents pass through, and their consumers
        node = stack.pop()
        if node in stops:
            continue
        for child in node.next_nodes:
            if child is not None:
                parents.setdefault(child, []).append(node)
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    leading, stack = set(), [d for d in duals if d in parents]
    while stack:  # the ones on a path from root to a dual
        for parent in parents.get(stack.pop(), ()):
            if parent not in leading:
                leading.add(parent)
                stack.append(parent)
    reads: dict[Node, tuple] = {}
    for node in leading:
        if node.name().removesuffix("Backward0") in _LINEAR:
            continue
        for child, meta in zip(node.next_nodes, node.input_meta):
            if child is not None and meta is not None and _node_reaches_real(child):
                reads.setdefault(child, meta)
    if not reads:
        return tangent
    link = Node(_ZeroGrads, "AddBackward0")  # type: ignore[arg-type]
    link.next_nodes = tuple(reads)
    link.input_meta = tuple(reads.values())
    return TensorBase._make(tangent._data, link)
