"""Pytrees: nested tuples, lists and dicts whose leaves are (usually) tensors.

The transforms of ``tinyattn.func`` take and return pytrees, as torch's do: a
function may receive a dict of parameters and return a tuple. ``tree_flatten``
turns a pytree into its leaves (in a fixed order) plus a ``TreeSpec`` that
``tree_unflatten`` uses to put leaves back into the same structure. Tuples
(named tuples too), lists and dicts are containers; everything else, ``None``
included, is a leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["TreeSpec", "tree_flatten", "tree_map", "tree_unflatten", "broadcast_prefix"]


class TreeSpec:
    """The structure of a pytree: its container type, keys (dicts) and children's specs."""

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind: type | None, context: Any, children: list[TreeSpec]) -> None:
        self.kind = kind  # None: a leaf
        self.context = context  # dict keys, or the named-tuple class
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def is_leaf(self) -> bool:
        return self.kind is None

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TreeSpec)
            and self.kind is other.kind
            and self.context == other.context
            and self.children == other.children
        )

    def __hash__(self) -> int:
        return hash((self.kind, len(self.children)))

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        context = list(self.context) if self.kind is dict else None
        children = ", ".join(repr(c) for c in self.children)
        return f"TreeSpec({self.kind.__name__}, {context}, [{children}])"

    def __str__(self) -> str:
        """The pytree drawn with ``*`` for each leaf: ``(*, [*, *], {'w': *})``."""
        if self.kind is None:
            return "*"
        parts = [str(c) for c in self.children]
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self.context, parts)) + "}"
        if self.kind is list:
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


_LEAF = TreeSpec(None, None, [])


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """(leaves in depth-first order, the spec to rebuild ``tree`` from them)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree: Any, leaves: list) -> TreeSpec:
    if isinstance(tree, dict):
        keys = list(tree)
        return TreeSpec(dict, keys, [_flatten(tree[k], leaves) for k in keys])
    if _is_namedtuple(tree):
        return TreeSpec(tuple, type(tree), [_flatten(v, leaves) for v in tree])
    if isinstance(tree, (tuple, list)):
        return TreeSpec(type(tree), None, [_flatten(v, leaves) for v in tree])
    leaves.append(tree)
    return _LEAF


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """Rebuild the pytree of ``spec`` from its leaves (the inverse of ``tree_flatten``)."""
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: expected {spec.num_leaves} leaves, got {len(leaves)}")
    return _unflatten(iter(leaves), spec)


def _unflatten(leaves, spec: TreeSpec) -> Any:
    if spec.kind is None:
        return next(leaves)
    children = [_unflatten(leaves, c) for c in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.context, children))
    if spec.kind is tuple and spec.context is not None:
        return spec.context(*children)
    return spec.kind(children)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_prefix(prefix: Any, tree: Any) -> list | None:
    """One entry of ``prefix`` per leaf of ``tree``: a leaf of ``prefix`` covers the whole
    subtree it sits on (``in_dims=0`` means 0 for every tensor). None when ``prefix`` is not
    a prefix of ``tree``'s structure."""
    out: list = []
    return out if _broadcast(prefix, tree, out) else None


def _broadcast(prefix: Any, tree: Any, out: list) -> bool:
    if not isinstance(prefix, (tuple, list, dict)):
        out.extend([prefix] * tree_flatten(tree)[1].num_leaves)
        return True
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            return False
        return all(_broadcast(prefix[k], tree[k], out) for k in tree)
    if not isinstance(tree, (tuple, list)) or isinstance(tree, dict):
        return False
    if type(prefix) is not type(tree) and not (
        isinstance(prefix, tuple) and isinstance(tree, tuple)
    ):
        return False
    if len(prefix) != len(tree):
        return False
    return all(_broadcast(p, t, out) for p, t in zip(prefix, tree))
