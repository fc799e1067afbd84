"""The page: one HTML file holding its SVG, CSS, JavaScript and data, nothing else.

The Content-Security-Policy allows only the page's own inline script and style (by
their SHA-256) and ``data:``/``blob:`` images: no request can leave the file. The
graph, formulas, step table, attention maps and bars are drawn in Python (``svg.py``),
so the page reads and prints with JavaScript off; the script adds selection,
stepping, node heatmaps, expanding modules, theme switching and the JSON download.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from pathlib import Path

from . import svg
from .graph_views import graph_views

_HERE = Path(__file__).resolve().parent


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _csp(script: str, style: str) -> str:
    return (
        "default-src 'none'; "
        f"script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
        "img-src data: blob:; connect-src 'none'; font-src 'none'; object-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def _check_cell(node: dict) -> str:
    c = node.get("check")
    if not c:
        return ""
    status = c["status"]
    if status != "SKIP":
        detail = f"max diff {c['max_diff']:.2g} over {c['checked']} probes"
    else:
        detail = c.get("reason", "")
    out = f'<span class="status {status.lower()}">{status}</span> <span class="detail">{escape(detail)}</span>'
    g = node.get("gradcheck")
    if g:
        out += (
            f'<br><span class="detail">float64 gradcheck:</span> <span class="status '
            f'{g["status"].lower()}" data-gradcheck="{g["status"]}">{g["status"]}</span>'
        )
    return out


def step_table(data: dict) -> str:
    """The engine's order as a table (rendered here: it shows with JavaScript off)."""
    by_id = {n["id"]: n for n in data["nodes"]}
    rows = []
    for i, nid in enumerate(data["steps"]):
        n = by_id[nid]
        where = f"{n.get('file', '')}:{n['line']}" if n.get("line") else ""
        shapes = ", ".join("-" if s is None else str(s) for s in n["input_shapes"])
        formula = n["formula"].splitlines()[0] if n["formula"] else ""
        norm = data["trace"][i]["grad_output_norm"]
        steps = " ".join(n.get("attention_steps", []))
        rows.append(
            f'<tr data-node="{nid}" data-step="{i + 1}"><td>{i + 1}</td><td>{escape(n["label"])}</td>'
            f"<td><code>{escape(n['op'])}</code>{' <span class=attn>' + escape(steps) + '</span>' if steps else ''}</td>"
            f"<td>{escape(where)}</td><td>{escape(n['module'])}</td>"
            f"<td>{escape(shapes)} &rarr; {escape(str(n['shape']))}</td><td>{norm:.4g}</td>"
            f"<td><code>{escape(formula)}</code></td><td>{_check_cell(n)}</td></tr>"
        )
    head = "<tr><th>#</th><th>node</th><th>op</th><th>line</th><th>module</th><th>inputs &rarr; output</th><th>|grad in|</th><th>formula</th><th>check</th></tr>"
    return f'<table id="step-table"><caption>The backward pass in the engine\'s order</caption><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _answer(data: dict) -> str:
    """Where the gradients of the projection weights come from (the first attention layer)."""
    if not data["attention"]:
        return ""
    a = data["attention"][0]
    by_id = {n["id"]: n for n in data["nodes"]}
    step_no = {nid: i + 1 for i, nid in enumerate(data["steps"])}
    items = []
    weight_of = {
        "dQ": "W_q (the query weights)",
        "dK": "W_k (the key weights)",
        "dV": "W_v (the value weights)",
    }
    for st in a["steps"]:
        flow = a["flows"].get(st["name"])
        if flow is None:
            continue
        made = by_id[st["node"]]
        path = (
            " &rarr; ".join(f"<code>{escape(by_id[p]['op'])}</code>" for p in flow["path"])
            or "(directly)"
        )
        params = (
            ", ".join(
                f"<b>{escape(by_id[p]['label'])}</b>" + (f" ({escape(t)})" if t else "")
                for p, t in zip(flow["params"], flow["taken"])
            )
            or "no parameter"
        )
        items.append(
            f'<li data-grad="{st["name"]}"><b>{st["name"]}</b> &mdash; step {"VPSQK".index(st["name"][1]) + 1} of the '
            f"attention backward, <code>{escape(st['formula'])}</code>, computed by node "
            f"<b>{escape(made['label'])}</b> (<code>{escape(made['op'])}</code>, engine step {step_no.get(st['node'], '?')}) "
            f"&mdash; flows through {path} into {params}: the gradient of {weight_of[st['name']]}.</li>"
        )
    return (
        f'<section id="answer" aria-labelledby="answer-h"><h2 id="answer-h">Which gradient flows into W_q, W_k, W_v?</h2>'
        f"<p>In <b>{escape(a['layer'])}</b> (first attention layer of this graph):</p><ul>{''.join(items)}</ul></section>"
    )


def _attention_section(data: dict) -> str:
    if not data["attention"]:
        return ""
    parts = [
        '<section id="attention" aria-labelledby="attn-h"><h2 id="attn-h">Attention: P, dP and dS per layer and head</h2>'
        '<p class="legend">P (weights): dark purple 0 &rarr; yellow 1. dP, dS (gradients): '
        "blue negative, white 0, orange positive. Batch item 0; hover a cell for its number.</p>"
    ]
    for li, a in enumerate(data["attention"]):
        parts.append(
            f'<div class="layer" data-layer="{li}"><h3>{escape(a["layer"])} <small>({escape(a["kind"])}, node {a["node"]})</small></h3>'
        )
        for h, head in enumerate(a["heads"]):
            parts.append(f'<div class="head" data-head="{h}"><h4>head {h}</h4><div class="maps">')
            for key, signed in (("P", False), ("dP", True), ("dS", True)):
                parts.append(
                    f'<figure class="map" data-map="{key}"><figcaption>{key} {head[key]["shape"]}</figcaption>'
                )
                parts.append(svg.heatmap_svg(head[key], signed, f"{a['layer']} head {h}: {key}"))
                parts.append("</figure>")
            parts.append('</div><ul class="checks">')
            names = {
                "p_rows": "rows of P sum to 1",
                "ds_rows": "rows of dS sum to 0",
                "masked": "masked cells (P = 0) have dS = 0",
            }
            for key, text in names.items():
                c = head["checks"][key]
                extra = f" ({c['cells']} masked cells)" if key == "masked" else ""
                ok = "PASS" if c["pass"] else "FAIL"
                parts.append(
                    f'<li data-check="{key}" class="{ok.lower()}"><span class="status {ok.lower()}">{ok}</span> {text}{extra}: '
                    f"largest error {c['max_error']:.2g} (tolerance {c['tol']:.2g})</li>"
                )
            parts.append("</ul></div>")
        parts.append(_steps_list(a, data))
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)


def _steps_list(a: dict, data: dict) -> str:
    by_id = {n["id"]: n for n in data["nodes"]}
    items = "".join(
        f'<li><code>{escape(s["formula"])}</code> &mdash; node <a href="#panel" data-goto="{s["node"]}">'
        f"{escape(by_id[s['node']]['label'])}</a> (<code>{escape(by_id[s['node']]['op'])}</code>, "
        f"backward step {(by_id[s['node']]['step'] or 0) + 1})</li>"
        for s in a["steps"]
    )

    out = f'<h4>The five steps of the attention backward</h4><ol class="five">{items}</ol>'
    if a.get("expanded"):
        out += '<div class="expanded"><p>This is one fused node: its five steps, recomputed with the NumPy reference formulas (batch item 0, head 0):</p><div class="maps">'
        for key, packed in a["expanded"].items():
            diff = packed.get("max_diff_vs_node")
            cap = f"{key} {packed['shape']}" + (
                f" &mdash; vs the node: max diff {diff:.2g}" if diff is not None else ""
            )
            out += f'<figure class="map" data-expanded="{key}"><figcaption>{cap}</figcaption>{svg.heatmap_svg(packed, True, key)}</figure>'
        out += "</div></div>"
    return out


def _flow_section(data: dict) -> str:
    trace = data["trace"]
    norms = [t["grad_output_norm"] for t in trace]
    labels = [f"step {t['step'] + 1} {t['op']}" for t in trace]
    keys = [str(t["step"]) for t in trace]
    order = sorted(range(len(norms)), key=lambda i: (-(norms[i] or 0.0), i))
    rows = "".join(
        f"<tr><td>{escape(p['label'])}</td><td>{p['after_step'] + 1}</td><td>{p['norm']:.4g}</td></tr>"
        for p in data["params"]
    )
    return (
        '<section id="flow" aria-labelledby="flow-h"><h2 id="flow-h">Gradient flow</h2>'
        "<p>|gradient| arriving at each node, in backward order, then sorted.</p>"
        + svg.bars_svg(norms, labels, "flow-bars", "gradient norms in backward order", keys)
        + svg.bars_svg(
            [norms[i] for i in order],
            [labels[i] for i in order],
            "flow-sorted",
            "gradient norms, sorted",
            [keys[i] for i in order],
        )
        + '<p><button type="button" id="download-trace">Download the trace as JSON</button></p>'
        + f'<table id="param-table"><caption>Leaf gradients, in the order they were completed</caption><thead><tr><th>leaf</th><th>after step</th><th>|grad|</th></tr></thead><tbody>{rows}</tbody></table></section>'
    )


def _second_section(data: dict) -> str:
    sec = data.get("second")
    if not sec:
        return ""
    first_edges, second_edges = len(data["edges"]), len(sec["edges"])
    nodes = [
        {
            "id": n["id"],
            "label": n["label"],
            "sub": n["op"] if n["kind"] == "op" else "leaf",
            "cls": n["kind"],
        }
        for n in sec["nodes"]
    ]
    return (
        '<section id="second" aria-labelledby="second-h"><h2 id="second-h">Second order: the recorded backward</h2>'
        f"<p>With <code>create_graph=True</code> the backward pass was recorded as a graph of its own. "
        f'The graph of the loss has <b data-count="first-edges">{first_edges}</b> edges; the graph of the next '
        f'differentiated quantity, which holds the recorded backward, has <b data-count="second-edges">{second_edges}</b>.</p>'
        f'<div class="scroll">{svg.graph_svg(nodes, sec["edges"], "graph-second", "the recorded backward graph")}</div></section>'
    )


def _asset(name: str) -> str:
    return (_HERE / name).read_text()


def render(data: dict, collapse: bool) -> str:
    """The whole page as text."""
    script, style = _asset("page.js"), _asset("page.css")
    views, controls = graph_views(data, collapse)
    payload = json.dumps(data, separators=(",", ":"), sort_keys=True).replace("</", "<\\/")
    n_pass = sum(1 for n in data["nodes"] if n.get("check", {}).get("status") == "PASS")
    n_fail = sum(1 for n in data["nodes"] if n.get("check", {}).get("status") == "FAIL")
    summary = (
        f"{len(data['nodes'])} nodes, {len(data['edges'])} edges, {len(data['steps'])} backward steps; "
        f"check it yourself: {n_pass} PASS, {n_fail} FAIL"
    )
    body = _asset("page.html").format(
        csp=escape(_csp(script, style)),
        title=escape(data["title"]),
        summary=escape(summary),
        note=f'<p class="note" id="what-is-explained">{escape(data["note"])}</p>'
        if data.get("note")
        else "",
        answer=_answer(data),
        views=views,
        view_controls=controls,
        steps_max=len(data["steps"]),
        step_table=step_table(data),
        attention=_attention_section(data),
        flow=_flow_section(data),
        second=_second_section(data),
        data=payload,
        style=style,
        script=script,
    )
    return body
