"""The graph's views: every node, or (for big graphs) one box per module, with each
module expandable into its nodes. Each view is laid out in Python and drawn as its
own SVG; the script only shows one at a time (JavaScript off: the first one)."""

from __future__ import annotations

from html import escape

from . import svg

COLLAPSE_ABOVE = 40  # nodes: bigger graphs start collapsed by module


def _sub(n: dict) -> str:
    shape = "" if n["shape"] is None else "x".join(str(s) for s in n["shape"]) or "scalar"
    op = n["op"] if n["kind"] == "op" else "leaf"
    return f"{op} {shape}".strip()


def _aria(n: dict, step_no: dict) -> str:
    where = f", line {n['line']}" if n.get("line") else ""
    step = f", backward step {step_no[n['id']]}" if n["id"] in step_no else ""
    return f"{n['label']}: {n['op']}{where}{step}"


def node_items(data: dict) -> list[dict]:
    """The full graph's nodes as ``svg.graph_svg`` draws them."""
    step_no = {nid: i + 1 for i, nid in enumerate(data["steps"])}
    roots = set(data["root"])
    items = []
    for n in data["nodes"]:
        cls = [n["kind"]]
        if n["id"] in roots:
            cls.append("root")
        if n.get("attention_steps"):
            cls.append("attn")
        status = n.get("check", {}).get("status")
        if status == "FAIL":
            cls.append("fail")
        attrs = {"data-module": group_of(n["module"])} if group_of(n["module"]) else {}
        items.append(
            {
                "id": n["id"],
                "label": n["label"],
                "sub": _sub(n),
                "cls": " ".join(cls),
                "aria": _aria(n, step_no),
                "attrs": attrs,
            }
        )
    return items


def group_of(module: str) -> str:
    """The group a node collapses into: the root module's direct child (``model.attention``)."""
    parts = module.split(".") if module else []
    return ".".join(parts[:2]) if len(parts) >= 2 else ""


def _collapsed(data: dict, items: list[dict], expanded: str) -> tuple[list[dict], list]:
    """Nodes and edges with every group but ``expanded`` drawn as one box."""
    rep: dict[str, str] = {}
    boxes: dict[str, dict] = {}
    for n in data["nodes"]:
        g = group_of(n["module"])
        if not g or g == expanded:
            rep[n["id"]] = n["id"]
            continue
        gid = "g:" + g
        rep[n["id"]] = gid
        box = boxes.setdefault(
            gid, {"id": gid, "label": g.split(".")[-1], "count": 0, "cls": "group", "members": []}
        )
        box["count"] += 1
        box["members"].append(n["id"])
    out, placed = [], set()
    for item in items:
        r = rep[item["id"]]
        if r in placed:
            continue
        placed.add(r)
        if r in boxes:
            b = boxes[r]
            aria = f"module {r[2:]}: {b['count']} nodes, press to expand"
            out.append(
                {
                    "id": r,
                    "label": b["label"],
                    "sub": f"module, {b['count']} nodes",
                    "cls": "group",
                    "aria": aria,
                    "attrs": {"data-group": r[2:], "data-members": " ".join(b["members"])},
                }
            )
        else:
            out.append(item)
    edges, seen = [], set()
    for child, consumer in data["edges"]:
        e = (rep[child], rep[consumer])
        if e[0] != e[1] and e not in seen:
            seen.add(e)
            edges.append(e)
    return out, edges


def _view(svg_text: str, name: str, hidden: bool) -> str:
    """One view in its box (``hidden`` works on HTML elements, not on SVG ones)."""
    attr = "data-open" if name not in ("full", "modules") else "data-view"
    return (
        f'<div class="view" {attr}="{escape(name)}"{" hidden" if hidden else ""}>{svg_text}</div>'
    )


def graph_views(data: dict, collapse: bool) -> tuple[str, str]:
    """(the SVG views, their buttons)."""
    items = node_items(data)
    groups = sorted({group_of(n["module"]) for n in data["nodes"]} - {""})
    full = svg.graph_svg(items, data["edges"], "graph-full", "backward graph, every node")
    if not (collapse and len(items) > COLLAPSE_ABOVE and len(groups) >= 2):
        return _view(full, "full", False), ""
    nodes, edges = _collapsed(data, items, "")
    modules = svg.graph_svg(nodes, edges, "graph-modules", "backward graph, one box per module")
    views = [_view(modules, "modules", False)]
    for i, g in enumerate(groups):
        nodes, edges = _collapsed(data, items, g)
        title = f"backward graph, module {g} expanded"
        views.append(_view(svg.graph_svg(nodes, edges, f"graph-open-{i}", title), g, True))
    views.append(_view(full, "full", True))
    buttons = (
        '<button type="button" id="show-modules" aria-label="collapse the graph by module">one box per module</button> '
        '<button type="button" id="show-all" aria-label="show every node of the graph">every node</button>'
    )
    return "".join(views), buttons
