"""A layered layout of the backward graph, computed in Python (no layout library).

1. Layers: the root is layer 0; every other node sits one layer below its lowest
   consumer (the longest path from the root), so gradients flow downward.
2. Order within a layer: start from the walk order, then a few sweeps of the
   barycenter heuristic (a node moves to the mean position of its neighbours in
   the layers already placed, positions counted from each layer's centre, as the
   layers are drawn centred), ties kept by the previous order: deterministic.
3. Coordinates: each layer is centred; a node's width follows its label.
"""

from __future__ import annotations

from dataclasses import dataclass

LAYER_GAP = 78
NODE_HEIGHT = 38
H_GAP = 16
MARGIN = 20


@dataclass
class Box:
    """A laid-out node: centre ``(x, y)``, size ``(w, h)``, layer."""

    x: float
    y: float
    w: float
    h: float
    layer: int


def node_width(label: str, sub: str = "") -> float:
    """The width a node needs for its two lines of text (monospace, 7 px a character)."""
    return max(64.0, 7.0 * max(len(label), len(sub)) + 18.0)


def _layers(ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest distance from a root (a node no edge leaves), over child <- consumer edges."""
    consumers: dict[str, list[str]] = {i: [] for i in ids}
    pending = {i: 0 for i in ids}
    for child, consumer in edges:
        consumers[child].append(consumer)
        pending[child] += 1
    children: dict[str, list[str]] = {i: [] for i in ids}
    for child, consumer in edges:
        children[consumer].append(child)
    layer = {i: 0 for i in ids}
    ready = [i for i in ids if pending[i] == 0]
    while ready:
        node = ready.pop(0)
        for child in children[node]:
            layer[child] = max(layer[child], layer[node] + 1)
            pending[child] -= 1
            if pending[child] == 0:
                ready.append(child)
    return layer


def _order(ids: list[str], edges: list[tuple[str, str]], layer: dict[str, int]) -> list[list[str]]:
    depth = max(layer.values(), default=0) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    for i in ids:
        rows[layer[i]].append(i)
    neighbours: dict[str, list[str]] = {i: [] for i in ids}
    for child, consumer in edges:
        neighbours[child].append(consumer)
        neighbours[consumer].append(child)
    for sweep in range(6):
        pos = {n: k - (len(row) - 1) / 2 for row in rows for k, n in enumerate(row)}
        span = range(1, depth) if sweep % 2 == 0 else range(depth - 2, -1, -1)
        for r in span:
            fixed = {
                n for k, row in enumerate(rows) if (k < r if sweep % 2 == 0 else k > r) for n in row
            }

            def key(n: str, pos=pos, fixed=fixed) -> tuple[float, float]:
                near = [pos[m] for m in neighbours[n] if m in fixed]
                return (sum(near) / len(near) if near else float(pos[n]), pos[n])

            rows[r] = sorted(rows[r], key=key)
            pos.update({n: k - (len(rows[r]) - 1) / 2 for k, n in enumerate(rows[r])})
    return rows


def layout(
    ids: list[str], edges: list[tuple[str, str]], widths: dict[str, float]
) -> tuple[dict[str, Box], float, float]:
    """Boxes for ``ids`` (edges are ``(child, consumer)``); returns boxes, width, height."""
    layer = _layers(ids, edges)
    rows = _order(ids, edges, layer)
    row_widths = [sum(widths[n] for n in row) + H_GAP * max(len(row) - 1, 0) for row in rows]
    total = max(row_widths, default=0.0) + 2 * MARGIN
    boxes: dict[str, Box] = {}
    for r, row in enumerate(rows):
        x = (total - row_widths[r]) / 2
        for n in row:
            boxes[n] = Box(
                x + widths[n] / 2,
                MARGIN + NODE_HEIGHT / 2 + r * LAYER_GAP,
                widths[n],
                NODE_HEIGHT,
                r,
            )
            x += widths[n] + H_GAP
    height = 2 * MARGIN + NODE_HEIGHT + (len(rows) - 1) * LAYER_GAP
    return boxes, total, height
