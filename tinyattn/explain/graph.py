"""The backward graph as the page draws it: the nodes reachable from the roots and the
edges, walked exactly as ``tinyattn.viz.graph`` walks them (same order, same edges,
a duplicate edge for an input used twice by one op)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.function import AccumulateGrad, Node


@dataclass
class Graph:
    """Nodes in walk order (``ids[node]`` = ``"n0"``...) and ``(child, consumer)`` edges."""

    nodes: list[Node] = field(default_factory=list)
    ids: dict[Node, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    consumers: dict[Node, list[Node]] = field(default_factory=dict)


def collect(roots: list[Node], prefix: str = "n") -> Graph:
    """Walk the graph below ``roots`` depth first (a stack), as ``viz.graph`` does."""
    g = Graph()
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if node in g.ids:
            continue
        g.ids[node] = f"{prefix}{len(g.ids)}"
        g.nodes.append(node)
        stack.extend(n for n in node.next_nodes if n is not None)
    for node in g.nodes:
        for child in node.next_nodes:
            if child is not None:
                g.edges.append((g.ids[child], g.ids[node]))
                g.consumers.setdefault(child, []).append(node)
    return g


def is_leaf(node: Node) -> bool:
    """An ``AccumulateGrad`` node: a leaf tensor whose ``.grad`` the backward fills."""
    return isinstance(node, AccumulateGrad)


def op_name(node: Node) -> str:
    """``SoftmaxBackward0`` -> ``Softmax`` (the forward op's name)."""
    name = node.name()
    for suffix in ("Backward0", "Backward1", "Backward"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def output_meta(g: Graph, roots: list[Node], root_meta: list) -> dict[Node, tuple]:
    """A node's output (shape, dtype): its consumers' ``input_meta`` (as ``viz.graph``)."""
    meta: dict[Node, tuple] = dict(zip(roots, root_meta))
    for node in g.nodes:
        for child, m in zip(node.next_nodes, node.input_meta):
            if child is not None and m is not None:
                meta.setdefault(child, m)
    return meta
