"""Double backward through an in-place op on a view: ``y = x * 1; y[0].exp_()``.

The write makes ``y``'s node a ``CopySlices`` that keeps the in-place op's node and
calls its backward. Under ``create_graph`` the op's saved output unpacks to a tensor
whose node is that op's node, so the second backward may reach the op's node twice:
through ``CopySlices`` and on its own. It used to fail ("released its saved arrays")
whichever of the two ran first; the engine now runs a held node after its holder, as
torch does. Only ops that save their output are affected (exp, sigmoid, tanh, pow with
a tensor exponent); mul_/div_/pow_(scalar) save their inputs and already worked.

The finite-difference checks always run; the torch comparisons skip without torch.
"""

import weakref

import numpy as np
import pytest

import tinyattn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no reference")

X = np.array([[0.3, 0.5, 0.7, 0.9], [0.2, 0.4, 0.6, 0.8], [0.35, 0.55, 0.25, 0.45]])
C = np.array([[1.0, -2.0, 0.5, 1.5], [0.7, 1.1, -0.3, 2.0], [-1.2, 0.4, 0.9, -0.6]])
W = np.array([[0.4, -1.1, 0.8, 0.3], [1.3, 0.2, -0.7, 0.5], [-0.9, 0.6, 1.2, -0.4]])
E = np.array([1.3, 0.7, 2.1, 1.6])  # pow_'s tensor exponent (positive bases: X > 0)

VIEWS = {
    "index": lambda y: y[0],
    "narrow": lambda y: y.narrow(0, 0, 2),
    "select": lambda y: y.select(1, 1),
    "transpose": lambda y: y.t(),
    "slice": lambda y: y[1:, 1:3],
}


def _exponent(e, view):
    return e[: view.shape[-1]] if view.dim() else e[0]


OPS = {
    "exp_": lambda v, e: v.exp_(),
    "sigmoid_": lambda v, e: v.sigmoid_(),
    "tanh_": lambda v, e: v.tanh_(),
    "pow_tensor": lambda v, e: v.pow_(_exponent(e, v)),
}


def _loss(lib, x, e, view, op):
    """sum(c * y * y) with ``op`` applied in place to ``view`` of ``y = x * 1``: the
    gradient reads ``y`` (so ``CopySlices``) and the op's saved output."""
    y = x * 1
    OPS[op](VIEWS[view](y), e)
    c = lib.tensor(C)
    return (c * y * y).sum()


V = np.array([0.9, -0.4, 1.1, 0.6])  # weights of the exponent's gradient


def _grads(lib, x, e, view, op, create_graph=False):
    """The loss's gradients for x and the exponent (zeros: the op has no exponent)."""
    gx, ge = lib.autograd.grad(
        _loss(lib, x, e, view, op), (x, e), create_graph=create_graph, allow_unused=True
    )
    return gx, (lib.zeros(4, dtype=lib.float64) if ge is None else ge)


def _second(lib, view, op):
    """The gradients, and d/dx and d/de of sum(w * dL/dx) + sum(v * dL/de) by double backward."""
    x = lib.tensor(X.copy(), requires_grad=True)
    e = lib.tensor(E.copy(), requires_grad=True)
    gx, ge = _grads(lib, x, e, view, op, create_graph=True)
    if not ge.requires_grad:
        ge = ge.detach()
    ((gx * lib.tensor(W)).sum() + (ge * lib.tensor(V)).sum()).backward()
    e_grad = np.zeros_like(E) if e.grad is None else e.grad.detach().numpy()
    return gx.detach().numpy(), ge.detach().numpy(), x.grad.detach().numpy(), e_grad


def _first(view, op, x_array):
    """sum(w * dL/dx) + sum(v * dL/de) at ``x_array``, by first-order gradients only."""
    x = tinyattn.tensor(x_array, requires_grad=True)
    e = tinyattn.tensor(E.copy(), requires_grad=True)
    gx, ge = _grads(tinyattn, x, e, view, op)
    return (W * gx.numpy()).sum() + (V * ge.numpy()).sum()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", VIEWS)
def test_second_derivative_matches_finite_differences(view, op):
    """The double backward's d/dx against central differences of the first-order gradients."""
    hvp = _second(tinyattn, view, op)[2]
    eps = 1e-6
    numeric = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (_first(view, op, up) - _first(view, op, down)) / (2 * eps)
    np.testing.assert_allclose(hvp, numeric, rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", VIEWS)
def test_double_backward_matches_torch(view, op):
    ours = _second(tinyattn, view, op)
    theirs = _second(torch, view, op)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


# -- retain_graph: which backward after which works, and which raises ----------------------


def _graph(lib, square: bool):
    """``y = x.clone(); y[0].exp_()``; the loss reads y again (square) or not (linear)."""
    x = lib.tensor(X[:2, :3].copy(), requires_grad=True)
    y = x.clone()
    y[0].exp_()
    c = lib.tensor(C[:2, :3])
    return x, ((y * y * c).sum() if square else (y * c).sum())


def _scenario(lib, square: bool, steps: tuple, retain_graph: bool = True) -> tuple:
    """``g = grad(loss, x, create_graph=True)``, then each step: "second" is
    ``g.sum().backward()``, "first" is ``loss.backward()``; what each step did."""
    x, out = _graph(lib, square)
    (g,) = lib.autograd.grad(out, x, create_graph=True, retain_graph=retain_graph)
    done = []
    for step in steps:
        try:
            (g.sum() if step == "second" else out).backward()
        except RuntimeError as error:
            assert "backward through the graph a second time" in str(error)
            done.append("raises")
        else:
            done.append("ok")
    return tuple(done)


SCENARIOS = {
    "second backward, twice": (("second", "second"), True),
    "second backward, then the first graph again": (("second", "first"), True),
    "grad without retain_graph, then second backward": (("second",), False),
    "first graph again, then second backward": (("first", "second"), True),
}


def _outcomes(lib) -> dict:
    return {
        (kind, name): _scenario(lib, kind == "square", steps, retain)
        for kind in ("square", "linear")
        for name, (steps, retain) in SCENARIOS.items()
    }


# What torch 2.13 does. The square loss's second backward runs CopySlices and the exp node
# both; the linear one reaches only the exp node (through its saved output), which
# CopySlices lets go when it is released instead of freeing it.
EXPECTED = {
    ("square", "second backward, twice"): ("ok", "raises"),
    ("square", "second backward, then the first graph again"): ("ok", "raises"),
    ("square", "grad without retain_graph, then second backward"): ("raises",),
    ("square", "first graph again, then second backward"): ("ok", "raises"),
    ("linear", "second backward, twice"): ("ok", "raises"),
    ("linear", "second backward, then the first graph again"): ("ok", "raises"),
    ("linear", "grad without retain_graph, then second backward"): ("ok",),
    ("linear", "first graph again, then second backward"): ("ok", "ok"),
}


def test_retain_graph_outcomes():
    assert _outcomes(tinyattn) == EXPECTED


@needs_torch
def test_retain_graph_outcomes_match_torch():
    assert _outcomes(tinyattn) == _outcomes(torch)


# -- memory: what the release of CopySlices frees -------------------------------------------


def _exp_through_view():
    x = tinyattn.tensor(X.copy(), requires_grad=True)
    y = x * 1
    y[0].exp_()
    op_node = y.grad_fn.op_node
    saved = [weakref.ref(a) for a in op_node._saved if isinstance(a, np.ndarray)]
    assert saved
    return x, y, saved


def test_first_order_backward_frees_the_op_nodes_arrays():
    """CopySlices lets go of the op's node instead of releasing it: its arrays still go.

    (A guard for that change: the old code released the op's node and kept it, so its
    arrays were freed too; only the last assertion fails there.)
    """
    x, y, saved = _exp_through_view()
    (y * y).sum().backward()
    assert [r() for r in saved] == [None] * len(saved)
    assert y.grad_fn.__dict__.get("op_node") is None


def test_second_backward_frees_the_op_nodes_arrays_while_the_gradient_lives():
    """The op's node, reached by the second backward through its saved output and through
    CopySlices, frees its arrays when it runs (after CopySlices), though ``g`` keeps it."""
    x, y, saved = _exp_through_view()
    (g,) = tinyattn.autograd.grad((y * y).sum(), x, create_graph=True)
    assert all(r() is not None for r in saved)  # retained: create_graph retains the graph
    g.sum().backward()
    assert [r() for r in saved] == [None] * len(saved)
    assert g.grad_fn is not None
