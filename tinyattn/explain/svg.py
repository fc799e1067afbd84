"""The parts of the page drawn in Python, so that they show with JavaScript off and
print: the graph (full, or collapsed by module), the step table, the attention maps
and the gradient-flow bars. Colours come from colour-blind-safe palettes (a viridis
ramp for weights, a blue-orange diverging ramp for signed gradients)."""

from __future__ import annotations

import math
from html import escape

from .layout import NODE_HEIGHT, layout, node_width

# viridis, 7 stops (sequential, readable by the common colour-vision deficiencies)
SEQUENTIAL = ["#440154", "#443983", "#31688e", "#21918c", "#35b779", "#90d743", "#fde725"]
# blue - white - orange (PuOr-like), negative blue, positive orange
DIVERGING = ["#2166ac", "#67a9cf", "#d1e5f0", "#f7f7f7", "#fee0b6", "#f1a340", "#b35806"]


def _mix(stops: list[str], t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    f = t - i
    a, b = stops[i], stops[i + 1]
    rgb = [round(int(a[k : k + 2], 16) * (1 - f) + int(b[k : k + 2], 16) * f) for k in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def colour(v: float | None, lo: float, hi: float, signed: bool) -> str:
    """The cell colour of ``v``: diverging around 0 when ``signed``, else sequential."""
    if v is None:
        return "#888888"
    if signed:
        top = max(abs(lo), abs(hi), 1e-30)
        return _mix(DIVERGING, 0.5 + 0.5 * v / top)
    return _mix(SEQUENTIAL, (v - lo) / (hi - lo) if hi > lo else 0.5)


def _fmt(v) -> str:
    return "nan/inf" if v is None else f"{v:.6g}"


def graph_svg(nodes: list[dict], edges: list, svg_id: str, title: str) -> str:
    """One laid-out graph as SVG. ``nodes``: dicts with id, label, sub, cls (and aria)."""
    ids = [n["id"] for n in nodes]
    widths = {n["id"]: node_width(n["label"], n.get("sub", "")) for n in nodes}
    boxes, width, height = layout(ids, edges, widths)
    out = [
        f'<svg class="graph" id="{svg_id}" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="group" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        '<g class="edges" aria-hidden="true">',
    ]
    seen: dict = {}
    for child, consumer in edges:
        a, b = boxes[consumer], boxes[child]
        k = seen[(child, consumer)] = seen.get((child, consumer), -1) + 1
        bend = 18 * k
        y1, y2 = a.y + NODE_HEIGHT / 2, b.y - NODE_HEIGHT / 2 - 4
        mid = (y1 + y2) / 2
        out.append(
            f'<path class="edge" data-from="{child}" data-to="{consumer}" d="M{a.x + bend:.1f},{y1:.1f} '
            f'C{a.x + bend:.1f},{mid:.1f} {b.x + bend:.1f},{mid:.1f} {b.x:.1f},{y2:.1f}" marker-end="url(#arrowhead)"/>'
        )
    out.append('</g><g class="nodes">')
    for n in nodes:
        bx = boxes[n["id"]]
        x0, y0 = bx.x - bx.w / 2, bx.y - bx.h / 2
        attrs = " ".join(f'{k}="{escape(str(v))}"' for k, v in n.get("attrs", {}).items())
        out.append(
            f'<g class="node {n["cls"]}" data-node="{n["id"]}" {attrs} tabindex="0" role="button" '
            f'aria-label="{escape(n.get("aria", n["label"]))}">'
            f"<title>{escape(n.get('aria', n['label']))}</title>"
            f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{bx.w:.1f}" height="{bx.h:.1f}" rx="6"/>'
            f'<text x="{bx.x:.1f}" y="{bx.y - 3:.1f}" class="l1">{escape(n["label"])}</text>'
            f'<text x="{bx.x:.1f}" y="{bx.y + 12:.1f}" class="l2">{escape(n.get("sub", ""))}</text></g>'
        )
    out.append("</g></svg>")
    return "".join(out)


def heatmap_svg(packed: dict, signed: bool, label: str) -> str:
    """A heatmap of a packed table; every cell carries its exact number (``data-v``)."""
    rows = packed["data"]
    if not rows:
        return ""
    cell = max(12, min(28, 168 // max(len(rows), len(rows[0]))))
    flat = [v for r in rows for v in r if v is not None]
    lo, hi = (min(flat), max(flat)) if flat else (0.0, 1.0)
    if not signed:
        lo, hi = min(lo, 0.0), max(hi, 1.0)  # (weights: 0 to 1)
    h, w = len(rows), len(rows[0])
    out = [
        f'<svg class="heat" viewBox="0 0 {w * cell} {h * cell}" width="{w * cell}" height="{h * cell}" '
        f'role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
    ]
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            out.append(
                f'<rect x="{j * cell}" y="{i * cell}" width="{cell}" height="{cell}" fill="{colour(v, lo, hi, signed)}" '
                f'data-r="{i}" data-c="{j}" data-v="{"" if v is None else repr(v)}"><title>[{i}, {j}] {"nan/inf" if v is None else repr(v)}</title></rect>'
            )
    out.append("</svg>")
    return "".join(out)


def bars_svg(values: list, labels: list[str], svg_id: str, title: str, keys: list[str]) -> str:
    """Vertical bars on a log scale (gradient norms)."""
    w, height, bar = max(len(values), 1) * 12 + 40, 160, 10
    logs = [math.log10(v) if v else None for v in values]
    finite = [x for x in logs if x is not None] or [0.0]
    lo, hi = min(finite) - 0.5, max(finite) + 0.1
    out = [
        f'<svg class="bars" id="{svg_id}" viewBox="0 0 {w} {height}" width="{w}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f'<text x="2" y="10" class="axis">log10 |grad|: {hi:.1f}</text><text x="2" y="{height - 2}" class="axis">{lo:.1f}</text>'
    ]
    for i, (v, x) in enumerate(zip(values, logs)):
        frac = 0.0 if x is None else (x - lo) / (hi - lo)
        bh = max(1.0, frac * (height - 30))
        out.append(
            f'<rect class="bar" data-key="{escape(keys[i])}" data-v="{v}" x="{30 + i * 12}" y="{height - 15 - bh:.1f}" '
            f'width="{bar}" height="{bh:.1f}"><title>{escape(labels[i])}: {_fmt(v)}</title></rect>'
        )
    out.append("</svg>")
    return "".join(out)
