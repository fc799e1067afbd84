"""autograd.trace, viz.graph and viz.attention_map."""

import numpy as np
import pytest

import tinyattn


def _attention():
    q = tinyattn.tensor(np.arange(12.0).reshape(3, 4) / 10, requires_grad=True)
    k = tinyattn.tensor(np.arange(20.0).reshape(5, 4) / 10, requires_grad=True)
    w = tinyattn.softmax(q @ k.T / 2, dim=-1)
    return q, k, w


def test_trace_records_every_backward_node_in_order():
    q, k, w = _attention()
    loss = (w * tinyattn.arange(5.0)).sum()
    with tinyattn.autograd.trace() as t:
        loss.backward()
    ops = [r["op"] for r in t.records]
    assert ops == [
        "SumBackward0",
        "MulBackward0",
        "SoftmaxBackward0",
        "DivBackward0",
        "MatmulBackward0",
        "PermuteBackward0",
    ]
    matmul = t.records[4]
    assert matmul["input_shapes"] == [(3, 4), (4, 5)]
    assert matmul["output_shape"] == (3, 5)
    expected = np.linalg.norm(q.grad.numpy())
    # the matmul's first input gradient is q's gradient
    assert matmul["grad_input_norms"][0] == pytest.approx(expected, rel=1e-6)
    assert "SoftmaxBackward0" in str(t)
    assert all(r["seconds"] >= 0 for r in t.records)


def test_trace_is_inactive_outside_the_block():
    q, k, w = _attention()
    with tinyattn.autograd.trace() as t:
        pass
    w.sum().backward()
    assert len(t) == 0


def test_graph_dot_names_ops_shapes_and_parameters():
    q, k, w = _attention()
    dot = tinyattn.viz.graph(w.sum(), params={"query": q, "key": k})
    assert dot.startswith("digraph backward {") and dot.rstrip().endswith("}")
    assert "SoftmaxBackward0\\n[3, 5] float64" in dot
    assert "query\\n[3, 4] float64" in dot and "key\\n[5, 4] float64" in dot
    n_edges = dot.count("->")
    assert n_edges == 6  # sum<-softmax<-div<-matmul<-{q, permute<-k}


def test_graph_rejects_leaves_and_explains_missing_dot(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="no grad_fn"):
        tinyattn.viz.graph(tinyattn.ones(2, requires_grad=True))
    q, k, w = _attention()
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(RuntimeError, match="Graphviz"):
        tinyattn.viz.graph(w.sum(), path=str(tmp_path / "g.svg"))
    tinyattn.viz.graph(w.sum(), path=str(tmp_path / "g.dot"))
    assert (tmp_path / "g.dot").read_text().startswith("digraph")


def test_attention_map_shades_by_weight(capsys):
    w = np.array([[1.0, 0.0], [0.25, 0.75]])
    text = tinyattn.viz.attention_map(w, ["k0", "k1"], ["q0", "q1"])
    lines = text.splitlines()
    assert lines[1] == "q0 ██  "
    assert lines[2].startswith("q1 ░░")
    assert capsys.readouterr().out.strip() == text.strip()
    with pytest.raises(ValueError, match="2-D"):
        tinyattn.viz.attention_map(np.ones(3))
    with pytest.raises(ValueError, match="labels"):
        tinyattn.viz.attention_map(w, ["a"], ["b", "c"], show=False)


def test_attention_map_writes_a_figure_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib", reason="the figure needs the viz extra (matplotlib)")
    path = tmp_path / "map.png"
    tinyattn.viz.attention_map(np.eye(3), show=False, path=str(path), title="eye")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
