"""Hooks, retain_graph and version checks under double backward, as in torch."""

import numpy as np
import pytest

import tinyattn

torch = pytest.importorskip("torch")

X = np.array([0.3, -0.5, 1.2, 0.7])
LIBS = (tinyattn, torch)


def _leaf(lib):
    return lib.tensor(X.copy(), requires_grad=True)


def test_hook_on_intermediate_changes_the_second_derivative_like_torch():
    results = []
    for lib in LIBS:
        x, calls = _leaf(lib), []
        a = x * x

        def hook(g, calls=calls):
            calls.append(g.requires_grad)
            return g * 3

        a.register_hook(hook)
        y = (lib.exp(a) * x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        results.append((g.detach().numpy(), h.numpy(), calls))
    (go, ho, co), (gt, ht, ct) = results
    np.testing.assert_allclose(go, gt, rtol=1e-12)
    np.testing.assert_allclose(ho, ht, rtol=1e-12)
    assert co == ct  # called in both passes, with a graph-carrying grad in the first


def test_leaf_hook_and_grad_accumulation_under_create_graph():
    for lib in LIBS:
        x, seen = _leaf(lib), []
        x.register_hook(lambda g, seen=seen: seen.append(g.requires_grad))
        (lib.sin(x) * x).sum().backward(create_graph=True)
        assert seen == [True] and x.grad.requires_grad
    xo, xt = _leaf(tinyattn), _leaf(torch)
    for lib, x in ((tinyattn, xo), (torch, xt)):
        (lib.sin(x) * x).sum().backward(create_graph=True)
        first = x.grad
        (lib.sin(x) * x).sum().backward(create_graph=True)  # out of place: a new tensor
        assert x.grad is not first
    np.testing.assert_allclose(xo.grad.detach().numpy(), xt.grad.detach().numpy(), rtol=1e-12)


def test_create_graph_retains_the_graph_by_default():
    for lib in LIBS:
        x = _leaf(lib)
        y = (lib.exp(x) * x).sum()
        lib.autograd.grad(y, x, create_graph=True)
        (again,) = lib.autograd.grad(y, x)  # the graph was retained
        assert again.shape == (4,)


def _freed_exp(lib, x):
    (g,) = lib.autograd.grad(lib.exp(x).sum(), x, create_graph=True, retain_graph=False)
    return g  # g = exp(x) through ExpBackward's freed saved output


def _freed_mul_of_leaves(lib, x):
    (g,) = lib.autograd.grad((x * x).sum(), x, create_graph=True, retain_graph=False)
    return g  # g = 2x from the leaf itself: MulBackward0 is not in g's graph


def _write_input_between(lib, x):
    a = x * 1.0
    (g,) = lib.autograd.grad((a * a).sum(), x, create_graph=True)
    a.mul_(2.0)
    return g


def _write_output_between(lib, x):
    e = lib.exp(x * 1.0)
    (g,) = lib.autograd.grad(e.sum(), x, create_graph=True)
    e.add_(1.0)
    return g


def _write_sigmoid_output_between(lib, x):
    s = lib.sigmoid(x * 1.0)
    (g,) = lib.autograd.grad((s * x).sum(), x, create_graph=True)
    s.mul_(0.5)
    return g


SCENARIOS = [
    _freed_exp,
    _freed_mul_of_leaves,
    _write_input_between,
    _write_output_between,
    _write_sigmoid_output_between,
]


def _outcome(lib, scenario):
    x = _leaf(lib)
    g = scenario(lib, x)
    try:
        (h,) = lib.autograd.grad(g.sum(), x)
    except RuntimeError as e:
        for key in ("backward through the graph a second time", "modified by an inplace"):
            if key in str(e):
                return ("raises", key)
        raise
    return ("ok", h.detach().numpy().round(10).tolist())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_freed_buffers_and_in_place_writes_between_backwards_as_torch(scenario):
    """Backward of a backward: fails when torch fails (same message), else the same values."""
    assert _outcome(tinyattn, scenario) == _outcome(torch, scenario)


def test_the_raising_scenarios_do_raise():
    assert _outcome(tinyattn, _freed_exp)[0] == "raises"
    assert _outcome(tinyattn, _write_output_between)[0] == "raises"
