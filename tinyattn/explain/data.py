"""The page's data: every node with its labels, formula, values, gradients and check,
the engine's order, the accumulations, attention, the gradient flow and the trace.

Everything here is plain JSON (lists, dicts, numbers with 8 significant digits) and
depends only on what was recorded, never on time or memory addresses, so the same
run gives the same bytes.
"""

from __future__ import annotations

import os

import numpy as np

from . import attention
from .capture import Capture
from .checks import check_step, gradcheck_step
from .graph import Graph, collect, is_leaf, op_name, output_meta
from .pack import number, pack


def _norm(a) -> float | None:
    a = np.asarray(a)
    return number(np.sqrt(abs(np.vdot(a.ravel(), a.ravel())))) if a.size else 0.0


def trace_records(capture: Capture) -> list[dict]:
    """The backward as ``autograd.trace()`` records it (without the times)."""
    out = []
    for i, s in enumerate(capture.steps):
        out.append(
            {
                "step": i,
                "op": s.node.name(),
                "input_shapes": [None if m is None else list(m[0]) for m in s.node.input_meta],
                "output_shape": list(np.shape(s.grad_output)),
                "grad_output_norm": _norm(s.grad_output),
                "grad_input_norms": [None if g is None else _norm(g) for g in s.input_grads],
            }
        )
    return out


def _formula(capture: Capture, node) -> str:
    rec = capture.forward.get(node)
    fn = rec.fn if rec is not None and rec.fn is not None else node.fn
    doc = (getattr(fn, "__doc__", None) or "").strip() if fn is not None else ""
    if is_leaf(node):
        return "leaf: .grad += the sum of the gradients that reach it"
    return (
        "\n".join(line.rstrip() for line in doc.splitlines()[:14]) or "(this op has no docstring)"
    )


def _label(capture: Capture, node) -> tuple[str, str]:
    """(label, variable name) of a node, from the learner's code where known."""
    if is_leaf(node):
        var = node.variable
        name = capture.param_names.get(id(var)) or capture.leaf_names.get(id(var), "")
        return (name or "leaf"), name
    rec = capture.forward.get(node)
    name = capture.node_names.get(node) or (rec.name if rec is not None else "")
    return (name or op_name(node)), name


def _module_of(capture: Capture, node) -> str:
    if is_leaf(node):
        name = capture.param_names.get(id(node.variable), "")
        return name.rsplit(".", 1)[0] if "." in name else ""
    rec = capture.forward.get(node)
    return rec.module if rec is not None else ""


def _contributions(capture: Capture, graph: Graph) -> dict:
    contrib: dict = {}
    for s in capture.steps:
        for child, g in zip(s.node.next_nodes, s.input_grads):
            if child is not None and g is not None and child in graph.ids:
                contrib.setdefault(child, []).append((s.node, g))
    return contrib


def _node_entry(capture, graph, node, meta, step_index, contrib, do_check, by_node) -> dict:
    label, name = _label(capture, node)
    rec = capture.forward.get(node)
    shape, dtype = meta.get(node, (None, None))
    entry: dict = {
        "id": graph.ids[node],
        "op": node.name(),
        "kind": "leaf" if is_leaf(node) else "op",
        "label": label,
        "name": name,
        "module": _module_of(capture, node),
        "shape": None if shape is None else list(shape),
        "dtype": None if dtype is None else np.dtype(dtype).name,
        "input_shapes": [None if m is None else list(m[0]) for m in node.input_meta],
        "inputs": [graph.ids.get(n) if n is not None else None for n in node.next_nodes],
        "formula": _formula(capture, node),
        "step": step_index.get(node),
    }
    if rec is not None and rec.file:
        entry.update(file=os.path.basename(rec.file), line=rec.line, code=rec.code)
    if is_leaf(node):
        entry["value"] = pack(node.variable._data)
        parts = contrib.get(node, [])
        if parts:
            total = sum(np.asarray(g, np.float64) for _, g in parts)
            entry["grad"] = pack(np.asarray(total).astype(parts[0][1].dtype))
        if node.variable._grad is not None:
            entry["grad_attr"] = pack(node.variable._grad._data)
    else:
        if rec is not None:
            entry["value"] = pack(rec.value)
        s = by_node.get(node)
        if s is not None:
            entry["grad"] = pack(s.grad_output)
            entry["check"] = (
                check_step(rec, s) if do_check else {"status": "SKIP", "reason": "checks off"}
            )
            if do_check == "gradcheck":
                entry["gradcheck"] = gradcheck_step(rec, s)
    parts = contrib.get(node, [])
    if len(parts) >= 2:
        entry["contributions"] = [{"from": graph.ids[src], "grad": pack(g)} for src, g in parts]
        total = sum(np.asarray(g, np.float64) for _, g in parts)
        entry["contribution_sum"] = pack(np.asarray(total).astype(parts[0][1].dtype))
    return entry


def build(capture: Capture, *, title: str, check: bool | str = True) -> dict:
    """All the data of one page (``check``: True, False or "gradcheck", see ``explain``)."""
    capture.assign_names()
    roots = [n for n, _ in capture.roots]
    graph = collect(roots)
    meta = output_meta(graph, roots, [(g.shape, g.dtype) for _, g in capture.roots])
    steps = [s for s in capture.steps if s.node in graph.ids]
    step_index = {s.node: i for i, s in enumerate(steps)}
    contrib = _contributions(capture, graph)
    by_node = {s.node: s for s in steps}
    nodes = [
        _node_entry(capture, graph, n, meta, step_index, contrib, check, by_node)
        for n in graph.nodes
    ]
    attn = attention.find(capture, graph, by_node)
    for a in attn:
        for st in a["steps"]:
            entry = nodes[int(st["node"][1:])]
            entry.setdefault("attention_steps", []).append(st["name"])
    data = {
        "title": title,
        "script": capture.script,
        "create_graph": capture.create_graph,
        "root": [graph.ids[n] for n in roots],
        "root_grad": [pack(g) for _, g in capture.roots],
        "nodes": nodes,
        "edges": graph.edges,
        "steps": [graph.ids[s.node] for s in steps],
        "attention": attn,
        "trace": trace_records(capture),
        "params": _param_flow(capture, graph, contrib),
    }
    if capture.second_roots:
        second = collect(capture.second_roots, prefix="m")
        data["second"] = _second_graph(capture, second)
    return data


def _param_flow(capture: Capture, graph: Graph, contrib: dict) -> list[dict]:
    """Per leaf: the norm of the gradient this backward gave it, in the order it completed."""
    order = []
    last_step = {}
    for i, s in enumerate(capture.steps):
        for child in s.node.next_nodes:
            if child is not None and is_leaf(child):
                last_step[child] = i
    for node in sorted(last_step, key=lambda n: (last_step[n], graph.ids[n])):
        total = sum(np.asarray(g, np.float64) for _, g in contrib.get(node, []))
        order.append(
            {
                "node": graph.ids[node],
                "label": _label(capture, node)[0],
                "after_step": last_step[node],
                "norm": _norm(total),
            }
        )
    return order


def _second_graph(capture: Capture, second: Graph) -> dict:
    nodes = []
    for node in second.nodes:
        label, _ = _label(capture, node)
        nodes.append(
            {
                "id": second.ids[node],
                "op": node.name(),
                "kind": "leaf" if is_leaf(node) else "op",
                "label": label,
            }
        )
    return {"nodes": nodes, "edges": second.edges}
