"""How tensors that only forward-mode AD tracks look from outside: torch's flags.

``forward_ad`` computes tangents from the reverse-mode graph, so ``make_dual(x, t)``
of an ``x`` that does not require grad hangs from a private leaf of its own, and what
is computed from it is recorded like any op. In torch such tensors are not in the
reverse graph at all: ``requires_grad`` is False, ``grad_fn`` None, ``is_leaf`` True.

A tensor is *forward-only* when its graph reaches no leaf that requires grad other
than those private leaves. Once ``forward_ad`` made a private leaf, the tensor class's
``requires_grad`` / ``grad_fn`` / ``is_leaf`` / ``requires_grad_`` answer for
forward-only tensors as torch's do (the engine and the ops read the fields
``_requires_grad`` / ``_grad_fn``, so tangents are still computed). Whether a node
reaches a real leaf is found by one walk of its graph and remembered per node.
"""

from __future__ import annotations

import weakref

from .function import AccumulateGrad, Node
from .tensor_base import TensorBase

__all__ = ["install", "is_forward_only", "mark_private"]

# the private leaves of forward_ad, by id (a tensor's == is elementwise: no WeakSet)
_private: dict[int, weakref.ref] = {}
_reaches_real: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # node -> bool
_installed = False


def mark_private(leaf: TensorBase) -> None:
    """Note ``leaf`` as a private leaf (its gradients are nobody's)."""
    key = id(leaf)
    _private[key] = weakref.ref(leaf, lambda _, key=key: _private.pop(key, None))


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
    node = tensor._grad_fn
    return node is not None and not _node_reaches_real(node)


def install() -> None:
    """Give the tensor class torch's view of forward-only tensors (once; kept, since such
    tensors outlive the dual level)."""
    global _installed
    if _installed:
        return
    _installed = True
    cls = TensorBase._output_class
    requires_grad, grad_fn, is_leaf = cls.requires_grad, cls.grad_fn, cls.is_leaf
    requires_grad_ = cls.requires_grad_

    def get_requires_grad(self) -> bool:
        return self._requires_grad and (self._grad_fn is None or not is_forward_only(self))

    def get_grad_fn(self):
        node = grad_fn.fget(self)
        return None if node is not None and not _node_reaches_real(node) else node

    def get_is_leaf(self) -> bool:
        return self._grad_fn is None or is_forward_only(self)

    def set_requires_grad_(self, requires_grad: bool = True):
        if self._grad_fn is not None and is_forward_only(self):
            if requires_grad:  # torch: a leaf requiring grad now, keeping its tangent
                from .forward_ad import _make_leaf

                _make_leaf(self)
            return self
        return requires_grad_(self, requires_grad)

    set_requires_grad_.__doc__ = requires_grad_.__doc__
    cls.requires_grad = property(get_requires_grad, requires_grad.fset, doc=requires_grad.__doc__)
    cls.grad_fn = property(get_grad_fn, doc=grad_fn.__doc__)
    cls.is_leaf = property(get_is_leaf, doc=is_leaf.__doc__)
    cls.requires_grad_ = set_requires_grad_
