"""Attention on the page: P, dP and dS per layer and head, with their checks, the five
steps of the attention backward, and where dQ, dK and dV go (down to the weights).

Three kinds of node hold attention weights ``P``:

* ``ScaledDotProductAttention`` (one fused node): its five steps are expanded with the
  NumPy reference (``tinyattn.kernels.reference``) from the recorded q, k, v and dO;
* ``AttentionWeights`` (``nn.MultiheadAttention`` returning its weights): P is its
  output, dP its incoming gradient, dS = P * (dP - rowsum(dP * P)) (``kernels/softmax_math.py``);
* ``Softmax`` over the last axis of a matrix (attention written out by hand): P its
  output, dP its incoming gradient, dS the gradient it sends back.

The five steps: ``dV = P^T dO``, ``dP = dO V^T``, ``dS = P * (dP - rowsum(dP * P))``,
``dQ = dS K * scale``, ``dK = dS^T Q * scale``.
"""

from __future__ import annotations

import numpy as np

from ..kernels import reference
from ..kernels import softmax_math as _softmax_math
from .capture import Capture
from .graph import Graph, is_leaf, op_name
from .pack import number, pack

FORMULAS = {
    "dV": "dV = P^T dO",
    "dP": "dP = dO V^T",
    "dS": "dS = P * (dP - rowsum(dP * P))",
    "dQ": "dQ = dS K * scale",
    "dK": "dK = dS^T Q * scale",
}
_SCORE_PLUMBING = {"Mul", "Div", "MaskedFill", "Add", "Sub", "Where", "MaskedFillScalar"}


def _fn_name(capture: Capture, node) -> str:
    rec = capture.forward.get(node)
    fn = rec.fn if rec is not None and rec.fn is not None else getattr(node, "fn", None)
    return getattr(fn, "__name__", "") if fn is not None else ""


def head_checks(P: np.ndarray, dP: np.ndarray, dS: np.ndarray) -> dict:
    """The three checks of one head's maps, computed in float64 on the whole maps."""
    P, dP, dS = (np.asarray(a, dtype=np.float64) for a in (P, dP, dS))
    rows = P.sum(-1)
    live = rows > 0.5  # (a row whose keys are all blocked has weights 0)
    tol_p = 1e-6
    tol_s = 1e-6 * max(1.0, float(np.abs(dP).max(initial=0.0)))
    masked = P == 0
    out = {
        "p_rows": {"max_error": number(np.abs(rows[live] - 1).max(initial=0.0)), "tol": tol_p},
        "ds_rows": {"max_error": number(np.abs(dS.sum(-1)).max(initial=0.0)), "tol": tol_s},
        "masked": {
            "cells": int(masked.sum()),
            "max_error": number(np.abs(dS[masked]).max(initial=0.0)),
            "tol": 0.0,
        },
    }
    for c in out.values():
        c["pass"] = c["max_error"] is not None and c["max_error"] <= c["tol"]
    return out


def _heads(P, dP, dS) -> list[dict]:
    """One entry per head of batch item 0 (a 2-D map is one head)."""
    P, dP, dS = (np.asarray(a) for a in (P, dP, dS))
    while P.ndim > 3:
        P, dP, dS = P[0], dP[0], dS[0]
    if P.ndim == 2:
        P, dP, dS = P[None], dP[None], dS[None]
    return [
        {
            "P": pack(P[h]),
            "dP": pack(dP[h]),
            "dS": pack(dS[h]),
            "checks": head_checks(P[h], dP[h], dS[h]),
        }
        for h in range(P.shape[0])
    ]


def expand_fused(rec, step) -> dict:
    """The five steps of a fused attention node, from the reference formulas."""
    from ..nn.functional.attention import _flatten_batch

    q, k, v, mask = rec.args[:4]
    opts = rec.kwargs
    qf, kf, vf, mf, batch = _flatten_batch(q, k, v, mask, opts.get("groups", 1))
    scale, p, seed = opts.get("scale"), opts.get("dropout_p", 0.0), opts.get("seed", 0)
    scores = reference.attention_scores(
        qf, kf, scale=scale, causal=opts.get("causal", False), mask=mf
    )
    P = reference.softmax_rows(scores)
    dO = np.asarray(step.grad_output, dtype=qf.dtype).reshape(
        qf.shape[:2] + step.grad_output.shape[-2:]
    )
    dropped = reference.attention_dropout(P, dropout_p=p, seed=seed)
    dPd, dV = reference.weighted_sum_backward(dO, dropped, vf)
    dP = reference.attention_dropout_backward(dPd, dropout_p=p, seed=seed)
    dS = _softmax_math.softmax_backward(dP, P)
    dQ, dK = reference.attention_scores_backward(dS, qf, kf, scale=scale)
    arrays = {"P": P, "dV": dV, "dP": dP, "dS": dS, "dQ": dQ, "dK": dK}
    return {key: a.reshape(batch + a.shape[-2:]) for key, a in arrays.items()}


def _consumer(graph: Graph, node, op: str):
    for c in graph.consumers.get(node, []):
        if op_name(c) == op:
            return c
        if op_name(c) in ("Dropout", "DropoutFunction", "Mul"):
            inner = _consumer(graph, c, op)
            if inner is not None:
                return inner
    return None


def _score_matmul(node):
    cur = node.next_nodes[0] if node.next_nodes else None
    for _ in range(6):
        if cur is None or is_leaf(cur):
            return None
        if op_name(cur) == "Matmul":
            return cur
        if op_name(cur) not in _SCORE_PLUMBING:
            return None
        cur = next((n for n in cur.next_nodes if n is not None), None)
    return None


_VIEWS = {
    "Narrow",
    "Slice",
    "Split",
    "Chunk",
    "Select",
    "T",
    "Transpose",
    "Permute",
    "View",
    "Reshape",
    "Unsqueeze",
    "Squeeze",
    "Expand",
    "Unbind",
    "AsStrided",
    "Clone",
}


def _param_behind(capture: Capture, node, depth: int = 4):
    """The named parameter a weight input comes from, through views (``in_proj_weight``
    through the ``Narrow`` that takes W_q's rows), and what the views took."""
    taken = []
    for _ in range(depth):
        if node is None:
            return None, ""
        if is_leaf(node):
            return (
                (node, ", ".join(taken)) if id(node.variable) in capture.param_names else (None, "")
            )
        if op_name(node) not in _VIEWS:
            return None, ""
        rec = capture.forward.get(node)
        if op_name(node) == "Narrow" and rec is not None and rec.args is not None:
            dim, start, length = rec.args[1:4]
            taken.append(
                f"{'rows' if dim == 0 else f'dim {dim} indices'} {start}-{start + length - 1}"
            )
        node = next((n for n in node.next_nodes if n is not None), None)
    return None, ""


def flow_to_weights(capture: Capture, graph: Graph, start) -> dict:
    """From an input of attention down to the first op that takes parameters (its weight
    inputs, possibly through views): the nodes on the way and those parameters."""
    path, cur, params, taken = [], start, [], []
    for _ in range(16):
        if cur is None:
            break
        if is_leaf(cur):  # (the input itself is a leaf: its .grad is the answer)
            params, taken = [cur], [""]
            break
        path.append(graph.ids[cur])
        first = next((i for i, n in enumerate(cur.next_nodes) if n is not None), None)
        for i, n in enumerate(cur.next_nodes):
            found, what = _param_behind(capture, n) if i != first else (None, "")
            if n is not None and is_leaf(n) and id(n.variable) in capture.param_names:
                found, what = n, ""
            if found is not None:
                params.append(found)
                taken.append(what)
        if params:
            break
        cur = cur.next_nodes[first] if first is not None else None
    return {"path": path, "params": [graph.ids[p] for p in params], "taken": taken}


def find(capture: Capture, graph: Graph, step_of: dict) -> list[dict]:
    """Every attention node of the graph, with its heads, steps and flows."""
    out = []
    for node in graph.nodes:
        kind = _fn_name(capture, node)
        rec = capture.forward.get(node)
        step = step_of.get(node)
        if (
            step is None
            or rec is None
            or kind not in ("ScaledDotProductAttention", "AttentionWeights", "Softmax")
        ):
            continue
        if kind == "Softmax" and rec.value.ndim < 2:
            continue
        entry = _entry(capture, graph, node, kind, rec, step, step_of)
        if entry is not None:
            out.append(entry)
    return out


def _entry(capture, graph, node, kind, rec, step, step_of) -> dict | None:
    nid = graph.ids[node]
    steps = {}
    expanded = None
    pv = qk = None
    if kind == "ScaledDotProductAttention":
        if rec.args is None:
            return None
        arrays = expand_fused(rec, step)
        P, dP, dS = arrays["P"], arrays["dP"], arrays["dS"]
        steps = {k: nid for k in FORMULAS}
        expanded = {k: pack(arrays[k]) for k in ("dV", "dP", "dS", "dQ", "dK")}
        for i, key in enumerate(("dQ", "dK", "dV")):
            got = step.input_grads[i]
            if got is not None:
                diff = np.abs(np.asarray(got, np.float64) - arrays[key].reshape(got.shape)).max(
                    initial=0.0
                )
                expanded[key]["max_diff_vs_node"] = number(diff)
        q_in, k_in, v_in = node.next_nodes[:3]
    else:
        P, dP = rec.value, step.grad_output
        if kind == "Softmax":
            dS = step.input_grads[0]
            qk = _score_matmul(node)
        else:
            dS = _softmax_math.softmax_backward(
                np.asarray(dP, np.float64), np.asarray(P, np.float64)
            )
        if dS is None:
            return None
        pv = _consumer(graph, node, "Matmul")
        steps["dS"] = nid
        if pv is not None:
            steps["dV"] = steps["dP"] = graph.ids[pv]
        if kind == "AttentionWeights":
            steps["dQ"] = steps["dK"] = nid
            q_in, k_in = node.next_nodes[0], node.next_nodes[1]
        else:
            if qk is not None:
                steps["dQ"] = steps["dK"] = graph.ids[qk]
            q_in = qk.next_nodes[0] if qk is not None else None
            k_in = qk.next_nodes[1] if qk is not None else None
        v_in = pv.next_nodes[1] if pv is not None else None
    flows = {
        name: flow_to_weights(capture, graph, start)
        for name, start in (("dQ", q_in), ("dK", k_in), ("dV", v_in))
        if start is not None
    }
    return {
        "node": nid,
        "kind": kind,
        "layer": rec.module or (f"the attention at line {rec.line}" if rec.line else op_name(node)),
        "heads": _heads(P, dP, dS),
        "steps": [
            {"name": k, "formula": FORMULAS[k], "node": steps[k]} for k in FORMULAS if k in steps
        ],
        "expanded": expanded,
        "flows": flows,
    }
