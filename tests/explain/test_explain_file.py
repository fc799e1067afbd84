"""The file itself: self-contained, deterministic, bounded; the Python entry points."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from explain_helpers import explain_script, page_data

import tinyattn


def test_no_external_url_and_a_csp_that_forbids_loads(steps_script, tmp_path):
    html = explain_script(steps_script, tmp_path / "p.html")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", html, re.I)
    assert not re.search(r"https?://", html)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src &#x27;none&#x27;" in csp and "connect-src &#x27;none&#x27;" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp


def test_same_script_same_bytes_and_within_size(steps_script, tmp_path):
    start = time.perf_counter()
    first = explain_script(steps_script, tmp_path / "a.html")
    seconds = time.perf_counter() - start
    second = explain_script(steps_script, tmp_path / "b.html")
    assert first == second
    assert len(first.encode()) <= 100 * 1024
    assert seconds < 60  # (generous: the machine is shared; the measured time is in the report)


def test_works_with_javascript_off(steps_script, tmp_path):
    html = explain_script(steps_script, tmp_path / "p.html")
    without_scripts = re.sub(r"<script\b.*?</script>", "", html, flags=re.S)
    assert '<svg class="graph" id="graph-full"' in without_scripts
    assert '<table id="step-table">' in without_scripts
    assert "y = exp(x - max) / sum(exp(x - max))" in without_scripts  # formulas in the table


def test_explain_function_and_with_form(tmp_path):
    q = tinyattn.randn(3, 4, requires_grad=True)
    w = tinyattn.randn(4, 4, requires_grad=True)
    loss = tinyattn.softmax(q @ w, dim=-1).pow(2).sum()
    path = tinyattn.explain(loss, tmp_path / "after.html")
    data = page_data(path.read_text())
    assert {n["label"] for n in data["nodes"] if n["kind"] == "leaf"} == {"q", "w"}
    np.testing.assert_allclose(
        next(n for n in data["nodes"] if n["label"] == "w")["grad"]["data"],
        w.grad.numpy(),
        atol=1e-6,
    )
    q.grad = None
    with tinyattn.explain(tmp_path / "with.html"):
        scores = q @ w
        weights = tinyattn.softmax(scores, dim=-1)
        weights.pow(2).sum().backward()
    data = page_data((tmp_path / "with.html").read_text())
    labels = {n["label"] for n in data["nodes"]}
    assert {"scores", "weights", "q", "w"} <= labels
    assert next(n for n in data["nodes"] if n["label"] == "weights")["line"] > 0


def test_bad_arguments_say_what_was_expected(tmp_path):
    with pytest.raises(TypeError, match="loss must be a Tensor"):
        tinyattn.explain(3.0, tmp_path / "x.html")
    with pytest.raises(TypeError, match="path must be a str"):
        tinyattn.explain(tinyattn.ones(2, requires_grad=True).sum(), 5)
    with pytest.raises(ValueError, match="no grad_fn"):
        tinyattn.explain(tinyattn.ones(2, requires_grad=True), tmp_path / "x.html")
    from tinyattn.__main__ import main

    with pytest.raises(SystemExit, match="no such script"):
        main(["explain", str(tmp_path / "missing.py")])


def test_the_wrappers_are_removed_after_the_page(steps_script, tmp_path):
    from tinyattn import autograd
    from tinyattn.core.tensor_base import TensorBase
    from tinyattn.nn.modules.module import Module

    before = (TensorBase.__dict__["_make"], autograd.run_backward, Module.__call__)
    explain_script(steps_script, tmp_path / "p.html")
    assert (TensorBase.__dict__["_make"], autograd.run_backward, Module.__call__) == before


def test_flow_view_has_one_bar_per_traced_node_and_the_trace(steps_script, tmp_path):
    import runpy

    html = explain_script(steps_script, tmp_path / "p.html")
    data = page_data(html)
    bars = html.split('id="flow-bars"', 1)[1].split("</svg>", 1)[0]
    assert bars.count('class="bar"') == len(data["trace"]) == 5
    ns = runpy.run_path(str(steps_script), run_name="again")
    S = ns["Q"] @ ns["K"].T * ns["scale"]
    with tinyattn.autograd.trace() as t:
        (tinyattn.softmax(S, dim=-1) @ ns["V"]).backward(ns["dO"])
    for mine, theirs in zip(data["trace"], t.records, strict=True):
        assert mine["op"] == theirs["op"] and mine["step"] == theirs["step"]
        assert mine["input_shapes"] == [
            None if s is None else list(s) for s in theirs["input_shapes"]
        ]
        assert mine["grad_output_norm"] == pytest.approx(theirs["grad_output_norm"], rel=1e-6)


def test_second_order_shows_both_graphs_with_the_readme_edge_counts(hessian_script, tmp_path):
    html = explain_script(hessian_script, tmp_path / "h.html")
    data = page_data(html)
    assert data["create_graph"] is True
    assert len(data["edges"]) == 23 and len(data["second"]["edges"]) == 85
    assert (
        '<b data-count="first-edges">23</b>' in html
        and '<b data-count="second-edges">85</b>' in html
    )
    second = html.split('id="graph-second"', 1)[1].split("</svg>", 1)[0]
    assert second.count('class="edge"') == 85


def test_demo_model_starts_collapsed_by_module_and_fits_in_a_megabyte(tmp_path):
    html = explain_script("demo", tmp_path / "demo.html")
    data = page_data(html)
    assert len(html.encode()) <= 1024 * 1024
    modules = html.split('id="graph-modules"', 1)[1].split("</svg>", 1)[0]
    groups = re.findall(r'data-group="([^"]+)"', modules)
    assert sorted(groups) == sorted(
        {"model.attention", "model.embed", "model.norm", "model.out", "model.position"}
    )
    opened = html.split('data-open="model.attention"', 1)[1].split("</svg>", 1)[0]
    attention_nodes = [n["id"] for n in data["nodes"] if n["module"].startswith("model.attention")]
    assert attention_nodes and all(f'data-node="{i}"' in opened for i in attention_nodes)
    assert 'data-group="model.attention"' not in opened


def test_a_script_without_backward_explains_its_biggest_output(tmp_path):
    from explain_helpers import ROOT

    html = explain_script(ROOT / "examples" / "self_attention_tutorial.py", tmp_path / "t.html")
    data = page_data(html)
    assert (
        data["note"].startswith("the script ran no backward") and 'id="what-is-explained"' in html
    )
    assert data["nodes"][0]["module"] == "block.norm2"  # (the TransformerBlock's output)
    (attn,) = data["attention"]
    assert attn["layer"] == "block.self_attn.attention" and len(attn["heads"]) == 8
    for head in attn["heads"]:  # the causal mask: 15 blocked cells of 6 x 6, each with dS = 0
        assert head["checks"]["masked"]["cells"] == 15 and all(
            c["pass"] for c in head["checks"].values()
        )
    assert {n["check"]["status"] for n in data["nodes"] if "check" in n} == {"PASS"}
