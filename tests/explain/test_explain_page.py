"""The page's content, checked in Python against the engine, the trace and ``.grad``."""

from __future__ import annotations

import re
import runpy

import numpy as np
import pytest
from explain_helpers import explain_script, page_data

import tinyattn
from tinyattn.kernels import reference


def _reachable(root) -> int:
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(node.next_nodes)
    return len(seen)


@pytest.fixture
def steps_page(steps_script, tmp_path):
    html = explain_script(steps_script, tmp_path / "steps.html")
    return html, page_data(html), runpy.run_path(str(steps_script))


def test_graph_is_the_reachable_graph_with_every_edge_viz_draws(steps_page):
    html, data, ns = steps_page
    full = html.split('id="graph-full"', 1)[1].split("</svg>", 1)[0]
    assert full.count('<g class="node ') == _reachable(ns["O"].grad_fn) == len(data["nodes"])
    dot = tinyattn.viz.graph(ns["O"])
    edges = re.findall(r'data-from="(n\d+)" data-to="(n\d+)"', full)
    assert edges == re.findall(r"(n\d+) -> (n\d+);", dot)
    assert 'class="legend"' in html


def test_softmax_node_is_named_P_with_its_line(steps_page, steps_script):
    _, data, _ = steps_page
    lines = steps_script.read_text().splitlines()
    p_line = next(i + 1 for i, line in enumerate(lines) if line.startswith("P = torch.softmax"))
    (softmax,) = [n for n in data["nodes"] if n["op"] == "SoftmaxBackward0"]
    assert softmax["label"] == "P" and softmax["line"] == p_line and softmax["file"] == "steps.py"
    labels = {n["label"] for n in data["nodes"]}
    assert {"O", "P", "S", "Q", "K", "V"} <= labels


def test_formulas_and_shapes_are_the_ops_and_the_traces(steps_page):
    html, data, _ = steps_page
    for node in data["nodes"]:
        if node["kind"] == "op":
            first = node["formula"].splitlines()[0]
            assert first and first in html
    (softmax,) = [n for n in data["nodes"] if n["op"] == "SoftmaxBackward0"]
    assert softmax["formula"].startswith(
        "y = exp(x - max) / sum(exp(x - max)).   dx = y * (g - sum(g * y, dim))"
    )
    traced = {t["op"]: t for t in data["trace"]}
    assert softmax["input_shapes"] == traced["SoftmaxBackward0"]["input_shapes"] == [[3, 2], None]


def test_numbers_equal_grad_and_the_traced_arrays(steps_page):
    _, data, ns = steps_page
    by_label = {n["label"]: n for n in data["nodes"]}
    for leaf in ("Q", "K", "V"):
        np.testing.assert_allclose(by_label[leaf]["grad"]["data"], ns[leaf].grad.numpy(), atol=1e-6)
        np.testing.assert_allclose(
            by_label[leaf]["value"]["data"], ns[leaf].detach().numpy(), atol=1e-6
        )
    # a node's incoming gradient is its output's gradient (the script retains S's and P's)
    np.testing.assert_allclose(by_label["P"]["grad"]["data"], ns["P"].grad.numpy(), atol=1e-6)
    np.testing.assert_allclose(by_label["S"]["grad"]["data"], ns["S"].grad.numpy(), atol=1e-6)
    np.testing.assert_allclose(by_label["P"]["value"]["data"], ns["P"].detach().numpy(), atol=1e-6)


def test_steps_follow_the_engine_and_all_five_checks_pass(steps_page, steps_script):
    html, data, _ = steps_page
    ns = runpy.run_path(str(steps_script), run_name="not_main")
    graph_ops = [next(n["op"] for n in data["nodes"] if n["id"] == s) for s in data["steps"]]
    # the script's graph was freed by its backward: build it again and trace a fresh backward
    with tinyattn.autograd.trace() as t:
        S = ns["Q"] @ ns["K"].T * ns["scale"]
        (tinyattn.softmax(S, dim=-1) @ ns["V"]).backward(ns["dO"])
    assert graph_ops == [r["op"] for r in t.records]
    checks = [n["check"]["status"] for n in data["nodes"] if "check" in n]
    assert checks == ["PASS"] * 5
    assert "5 PASS, 0 FAIL" in html
    answer = html.split('id="answer"', 1)[1].split("</section>", 1)[0]
    assert "<b>dQ</b> &mdash; step 4 of the attention backward" in answer
    assert "into <b>Q</b>: the gradient of W_q" in answer
    assert html.count('<tr data-node="') == len(data["steps"]) == 5


def test_a_wrong_backward_fails_its_check(tmp_path):
    script = tmp_path / "wrong.py"
    script.write_text(
        "import tinyattn as torch\n"
        "class Cube(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n"
        "        return x ** 3\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        (x,) = ctx.saved_tensors\n"
        "        return g * 2 * x ** 2  # wrong: 3 x^2\n"
        "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
        "y = Cube.apply(x)\n"
        "(y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()\n"
    )
    data = page_data(explain_script(script, tmp_path / "wrong.html"))
    status = {n["op"]: n["check"]["status"] for n in data["nodes"] if "check" in n}
    assert status["CubeBackward"] == "FAIL"
    assert {k: v for k, v in status.items() if k != "CubeBackward"} == {
        "MulBackward0": "PASS",
        "SumBackward0": "PASS",
    }
    gradchecked = page_data(explain_script(script, tmp_path / "g.html", "--gradcheck"))
    assert {
        n["op"]: n["gradcheck"]["status"] for n in gradchecked["nodes"] if "gradcheck" in n
    } == {
        "CubeBackward": "FAIL",
        "MulBackward0": "PASS",
        "SumBackward0": "PASS",
    }
    (cube,) = [n for n in data["nodes"] if n["op"] == "CubeBackward"]
    assert (
        cube["label"] == "y"
        and "fail"
        in explain_script(script, tmp_path / "w2.html").split(f'data-node="{cube["id"]}"')[0][-40:]
    )


def test_accumulation_shows_three_contributions_summing_to_x_grad(self_attention_script, tmp_path):
    data = page_data(explain_script(self_attention_script, tmp_path / "sa.html"))
    ns = runpy.run_path(str(self_attention_script))
    (x,) = [n for n in data["nodes"] if n["label"] == "x"]
    assert len(x["contributions"]) == 3
    froms = {
        next(n["op"] for n in data["nodes"] if n["id"] == c["from"]) for c in x["contributions"]
    }
    assert froms == {"LinearBackward0"}
    total = sum(np.array(c["grad"]["data"]) for c in x["contributions"])
    x_grad = ns["x"].grad.numpy()[0]  # (batch item 0 is shown)
    np.testing.assert_allclose(total, x_grad, atol=1e-6)
    np.testing.assert_allclose(x["contribution_sum"]["data"], x_grad, atol=1e-6)
    assert x["contribution_sum"]["stats"]["numel"] == ns["x"].numel()


def test_attention_maps_per_head_with_passing_checks(self_attention_script, tmp_path):
    html = explain_script(self_attention_script, tmp_path / "sa.html")
    data = page_data(html)
    (attn,) = data["attention"]
    assert attn["kind"] == "Softmax" and attn["layer"] == "attn" and len(attn["heads"]) == 2
    for head in attn["heads"]:
        P, dS = np.array(head["P"]["data"]), np.array(head["dS"]["data"])
        np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-6)
        np.testing.assert_allclose(dS.sum(-1), 0.0, atol=1e-6)
        assert head["checks"]["masked"]["cells"] == 6 and np.all(dS[P == 0] == 0)
        assert all(c["pass"] for c in head["checks"].values())
    assert html.count('data-map="P"') == 2 and html.count('class="pass"') >= 6
    assert [s["name"] for s in attn["steps"]] == ["dV", "dP", "dS", "dQ", "dK"]
    flow = attn["flows"]["dQ"]
    by_id = {n["id"]: n for n in data["nodes"]}
    assert [by_id[p]["label"] for p in flow["params"]] == ["attn.w_q.weight", "attn.w_q.bias"]
    assert (
        "W_q (the query weights)" in html
        and "attn.w_q.weight" in html.split('id="answer"')[1][:4000]
    )


FUSED = """
import tinyattn as torch
torch.manual_seed(0)
mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
x = torch.randn(2, 5, 8, requires_grad=True)
out, _ = mha(x, x, x, need_weights=False)
loss = (out ** 2).sum()
loss.backward()
"""


def test_fused_attention_expands_into_the_reference_five_steps(tmp_path):
    script = tmp_path / "fused.py"
    script.write_text(FUSED)
    with tinyattn.explain(tmp_path / "fused.html") as session:
        runpy.run_path(str(script))
    data = page_data((tmp_path / "fused.html").read_text())
    (attn,) = data["attention"]
    assert attn["kind"] == "ScaledDotProductAttention" and attn["layer"] == "mha"
    (step,) = [
        s for s in session.capture.steps if s.node.name() == "ScaledDotProductAttentionBackward0"
    ]
    rec = session.capture.forward[step.node]
    q, k, v = rec.args[:3]
    scale = rec.kwargs["scale"]
    _, weights = reference.attention_forward(q, k, v, scale=scale)
    dq, dk, dv, ds = reference.attention_backward(step.grad_output, q, k, v, weights, scale=scale)
    dp = step.grad_output @ v.swapaxes(-1, -2)
    expanded = attn["expanded"]
    for key, want in (("dQ", dq), ("dK", dk), ("dV", dv), ("dS", ds), ("dP", dp)):
        assert expanded[key]["lead"] == [0, 0]
        np.testing.assert_allclose(expanded[key]["data"], want[0, 0], atol=1e-6)
    for key in ("dQ", "dK", "dV"):
        assert expanded[key]["max_diff_vs_node"] < 1e-6
    by_id = {n["id"]: n for n in data["nodes"]}
    assert by_id[attn["node"]]["attention_steps"] == ["dV", "dP", "dS", "dQ", "dK"]
    assert len(attn["heads"]) == 2
    flow = attn["flows"]["dQ"]
    assert [by_id[p]["label"] for p in flow["params"]] == ["mha.in_proj_weight", "mha.in_proj_bias"]
