"""The backward engine: order, accumulation, freed graphs, grad modes, hooks, in-place checks."""

import threading

import numpy as np
import pytest
from harness import torch

import tinyattn as T
from tinyattn.autograd import grad as autograd_grad
from tinyattn.core import engine


def test_long_chain_backpropagates_without_recursion_error():
    x = T.tensor(1.0, dtype=T.float64, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0001
    y.backward()
    assert x.grad.item() == pytest.approx(1.0001**20_000)


def test_backward_is_deterministic_and_sums_over_consumers():
    def run():
        x = T.tensor([0.3, -0.7], dtype=T.float64, requires_grad=True)
        a = x.exp()
        out = (a * x + a.sin() + a * a).sum()  # a feeds three consumers
        out.backward()
        return x.grad.numpy().copy()

    first = run()
    assert all(np.array_equal(first, run()) for _ in range(3))
    x = np.array([0.3, -0.7])
    expected = np.exp(x) * x + np.exp(x) + np.cos(np.exp(x)) * np.exp(x) + 2 * np.exp(2 * x)
    np.testing.assert_allclose(first, expected)


def test_grad_accumulates_across_backward_calls():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]


def test_non_scalar_backward_needs_gradient():
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for scalar outputs.*shape \\[3\\]"):
        (x * 2).backward()
    (x * 2).backward(T.tensor([1.0, 0.0, 2.0]))
    assert x.grad.tolist() == [2.0, 0.0, 4.0]
    with pytest.raises(RuntimeError, match="mismatch in shape"):
        (x * 2).backward(T.ones(2))


def test_second_backward_through_freed_graph_raises_unless_retained():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    y.backward()
    with pytest.raises(
        RuntimeError, match="backward through the graph a second time.*ExpBackward0"
    ):
        y.backward()
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    x.grad = None
    s = (x + 1).sum()  # saved nothing: a second backward works, as in torch
    s.backward()
    s.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_grad_modes_context_decorator_and_thread_local():
    x = T.ones(2, requires_grad=True)
    with T.no_grad():
        assert not (x * 2).requires_grad
        with T.enable_grad():
            assert (x * 2).requires_grad
    with T.set_grad_enabled(False):
        assert not T.is_grad_enabled()
    assert T.is_grad_enabled()

    @T.no_grad()
    def f():
        return T.is_grad_enabled()

    @T.set_grad_enabled(False)
    def g():
        return T.is_grad_enabled()

    assert f() is False and g() is False and T.is_grad_enabled()
    seen = []
    with T.no_grad():
        t = threading.Thread(target=lambda: seen.append(T.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_autograd_grad_leaves_dot_grad_untouched():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor([3.0], requires_grad=True)
    out = (x * x).sum() * y
    gx, gy = autograd_grad(out.sum(), [x, y], retain_graph=True)
    assert gx.tolist() == [6.0, 12.0] and gy.tolist() == [5.0]
    assert x.grad is None and y.grad is None
    (gx2,) = autograd_grad(out, x, grad_outputs=T.tensor([2.0]))
    assert gx2.tolist() == [12.0, 24.0]
    z = T.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="not used"):
        autograd_grad((x * 2).sum(), [z])


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_hooks_and_retain_grad_match_torch():
    results = []
    for lib in (T, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 10)
        x.register_hook(lambda g: g + 1)
        (y * y).sum().backward()
        results.append((x.grad.tolist(), y.grad.tolist()))
    assert results[0] == results[1]
    x = T.tensor([1.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 100)
    h.remove()
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]


@pytest.mark.parametrize(
    "make, saver",
    [
        (lambda x: x.exp(), "ExpBackward0"),
        (lambda x: x.sigmoid(), "SigmoidBackward0"),
        (lambda x: x.tanh(), "TanhBackward0"),
    ],
)
def test_inplace_on_saved_output_raises_naming_the_op(make, saver):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = make(x)
    y.add_(1)
    with pytest.raises(RuntimeError, match=f"modified by an inplace operation.*{saver}"):
        y.sum().backward()
    if torch is not None:  # torch refuses the same graph
        xt = torch.tensor([1.0, 2.0], requires_grad=True)
        yt = getattr(xt, saver[:-9].lower())()
        yt.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            yt.sum().backward()


def test_inplace_on_saved_input_raises_and_unsaved_is_fine():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * y  # Mul saved y
    y.mul_(2)
    with pytest.raises(RuntimeError, match="MulBackward0"):
        z.sum().backward()
    a = x + 1
    b = a * 2  # Mul by a constant saved only the constant's side, not a
    a.add_(1)
    b.sum().backward()  # fine in torch too
    assert x.grad.tolist() == [2.0, 2.0]


def test_inplace_chain_gradients_match_torch():
    grads = []
    for lib in (T,) + ((torch,) if torch is not None else ()):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y += 1
        y *= x
        y -= 1
        y /= 2
        y.sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == [2.5, 4.5] and all(g == grads[0] for g in grads)


def test_requires_grad_flags():
    x = T.tensor([1.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="floating point"):
        T.tensor([1]).requires_grad_()
    with pytest.raises(RuntimeError, match="does not require grad"):
        T.ones(2).sum().backward()


def test_node_has_no_getattr_until_released():
    """A ``__getattr__`` on Node would slow every attribute read of every node (the engine
    reads several per node); only a released node gets one, to explain a freed attribute."""
    from tinyattn.autograd.function import Node

    assert "__getattr__" not in vars(Node)
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    mul = y.grad_fn.next_nodes[0]
    mul = mul[0] if isinstance(mul, tuple) else mul
    assert type(mul) is Node
    y.backward()
    assert type(mul) is not Node and isinstance(mul, Node)  # released: explains freed data
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_grad_of_a_non_leaf_is_a_new_tensor_each_backward():
    """torch: ``y.grad = y.grad + new`` for a retained non-leaf, so a ``.grad`` kept from
    the first backward keeps its values (was: updated in place to 2s)."""
    x = T.tensor(np.ones(3), requires_grad=True)
    y = x * 1
    y.retain_grad()
    z = y + 0
    z.sum().backward(retain_graph=True)
    first = y.grad
    z.sum().backward()
    np.testing.assert_array_equal(first.numpy(), np.ones(3))
    np.testing.assert_array_equal(y.grad.numpy(), 2 * np.ones(3))
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.ones(3))


def test_autograd_grad_runs_only_what_leads_to_its_inputs():
    """As torch: ``grad(out, [a])`` for a non-leaf ``a`` runs no node at or below ``a``, so
    it works after an earlier backward freed that part of the graph, and leaves it alone."""
    x = T.tensor(np.ones((2, 4)), requires_grad=True)
    w = T.tensor(np.arange(16.0).reshape(4, 4), requires_grad=True)
    y = x @ w
    a, b = y.split(2, dim=1)
    (a.sum() + b.sum()).backward()  # frees the matmul's saved arrays
    (ga,) = autograd_grad([(a * 3).sum()], [a])  # raised "released its saved arrays"
    np.testing.assert_array_equal(ga.numpy(), np.full((2, 2), 3.0))

    x2 = T.tensor(np.ones(3), requires_grad=True)
    a2 = x2 * 2  # a2's own node must not run (nor be released) in grad(..., [a2])
    (g,) = autograd_grad([(a2 * a2).sum()], [a2])
    np.testing.assert_array_equal(g.numpy(), np.full(3, 4.0))
    assert x2.grad is None
    (a2 * 5).sum().backward()  # a2's node kept its (nothing saved) state: still runs
    np.testing.assert_array_equal(x2.grad.numpy(), np.full(3, 10.0))


def test_autograd_grad_is_not_changed_by_a_holder_of_another_graph():
    # A node holding another (CopySlices, after a double backward through an in-place op
    # on a view) once made every later autograd.grad run its whole graph, until the garbage
    # collector took the holder: grad(out, [a]) then ran and freed nodes below ``a``.
    base = T.tensor(np.ones(3), requires_grad=True)
    y = base * 1
    y[0].exp_()
    y.sum().backward(create_graph=True)  # CopySlices ran under create_graph: a holder
    assert len(engine._holders) >= 1
    x = T.tensor(np.ones((2, 4)), requires_grad=True)
    w = T.tensor(np.arange(16.0).reshape(4, 4), requires_grad=True)
    a, b = (x @ w).split(2, dim=1)
    (a.sum() + b.sum()).backward()  # frees the matmul's saved arrays
    (ga,) = autograd_grad([(a * 3).sum()], [a])
    np.testing.assert_array_equal(ga.numpy(), np.full((2, 2), 3.0))
    del y  # (the holder lives as long as its graph)


def test_a_root_given_twice_sends_both_gradients():
    # The consumer count once walked a repeated root twice, so its inputs waited for a
    # second gradient that never came: x.grad stayed None (torch: 2 + 2 = 4 per element).
    x = T.ones(3, dtype=T.float64, requires_grad=True)
    y = (x * 2).sum()
    T.autograd.backward([y, y])
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])
    x2 = T.ones(3, dtype=T.float64, requires_grad=True)
    z = x2 * 3
    (gx,) = autograd_grad([z, z], [x2], [T.ones(3, dtype=T.float64), T.ones(3, dtype=T.float64)])
    np.testing.assert_array_equal(gx.numpy(), [6.0, 6.0, 6.0])
