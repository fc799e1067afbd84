"""The engine's handling of slice gradients (``PaddedGrad``): the pieces of a split add up
to the right gradient in every order and mix, and an array that a backward returned is
never written in place (only sums the engine made itself are)."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn.autograd.xp import numpy_xp
from tinyattn.core.padded import PaddedGrad


def _leaf(*shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape)
    return tinyattn.tensor(data, requires_grad=True)


def _weights(*shape, seed=1):
    return tinyattn.tensor(np.random.default_rng(seed).standard_normal(shape))


def test_slice_backward_returns_a_padded_grad_that_materializes_to_zero_pad():
    g = np.arange(6.0).reshape(2, 3)
    padded = numpy_xp.slice_grad(g, [(1, 2), (0, 1)])
    assert isinstance(padded, PaddedGrad) and padded.shape == (5, 4)
    np.testing.assert_array_equal(np.asarray(padded), numpy_xp.zero_pad(g, [(1, 2), (0, 1)]))


@pytest.mark.parametrize("used", [(0, 1, 2), (2, 0), (1,), (0, 0, 2)])
@pytest.mark.parametrize("also_whole", [False, True])
def test_split_pieces_sum_to_the_expected_gradient(used, also_whole):
    """loss = sum_i sum(piece_i * w_i) (+ sum(x * w_x)): dx is w_i on piece i's block."""
    x = _leaf(4, 6)
    pieces = x.split([1, 2, 3], dim=1)
    ws = [_weights(4, p.shape[1], seed=10 + i) for i, p in enumerate(pieces)]
    loss = sum((pieces[i] * ws[i]).sum() for i in used)
    expected = np.zeros((4, 6))
    bounds = [(0, 1), (1, 3), (3, 6)]
    for i in used:
        a, b = bounds[i]
        expected[:, a:b] += ws[i].numpy()
    if also_whole:
        wx = _weights(4, 6, seed=3)
        loss = loss + (x * wx).sum()
        expected += wx.numpy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=0, atol=1e-15)


def test_hooks_and_retain_grad_see_the_full_gradient():
    x = _leaf(3, 4)
    t = x * 2.0
    t.retain_grad()
    seen = []
    t.register_hook(lambda g: seen.append(g.numpy().copy()))
    a, b = t.chunk(2, dim=0)
    (a.sum() + 3 * b.sum()).backward()
    expected = np.array([[1.0] * 4, [1.0] * 4, [3.0] * 4])
    np.testing.assert_array_equal(seen[0], expected)
    np.testing.assert_array_equal(t.grad.numpy(), expected)
    np.testing.assert_array_equal(x.grad.numpy(), 2 * expected)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_an_array_a_backward_returned_is_not_written_in_place(order):
    """Add's backward returns one array for both its inputs t and u. Each of t and u also
    gets a slice gradient: summing it must not write into that shared array, or t's
    block would reach u's gradient and u's block t's."""
    x, w = _leaf(3, 4), _leaf(3, 4, seed=5)
    t, u = x * 1.0, w * 1.0
    c = _weights(3, 4, seed=6)
    terms = [
        lambda: ((t + u) * c).sum(),
        lambda: (t.narrow(0, 1, 1) * 7.0).sum(),
        lambda: (u.narrow(0, 0, 1) * 5.0).sum(),
    ]
    terms = terms[order:] + terms[:order]
    (terms[0]() + terms[1]() + terms[2]()).backward()
    dx, dw = c.numpy().copy(), c.numpy().copy()
    dx[1] += 7.0
    dw[0] += 5.0
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=0, atol=1e-15)
    np.testing.assert_allclose(w.grad.numpy(), dw, rtol=0, atol=1e-15)


def test_unbind_pieces_and_double_backward_through_split():
    """select (unbind) uses the same path; under create_graph the slice gradient is a
    recorded zero-pad, so a second derivative flows through it."""
    x = _leaf(3, 2)
    rows = x.unbind(0)
    loss = sum((r**3).sum() * (i + 1) for i, r in enumerate(rows))
    (g,) = tinyattn.autograd.grad(loss, x, create_graph=True)
    scale = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2 * scale)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy() * scale, rtol=1e-14)
