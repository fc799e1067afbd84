"""autograd.grad's less common options (is_grads_batched, only_inputs, materialize_grads)
and autograd.functional's forward-mode strategy, against torch where installed."""

import warnings

import numpy as np
import pytest
from harness import torch

import tinyattn as T

F = T.autograd.functional


def _x(lib, values=(1.0, 2.0, 3.0)):
    return lib.tensor(list(values), dtype=lib.float64, requires_grad=True)


def test_is_grads_batched_gives_one_vjp_per_row():
    x = _x(T)
    w = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    (gx,) = T.autograd.grad(x * w, x, T.eye(3, dtype=T.float64), is_grads_batched=True)
    np.testing.assert_array_equal(gx.numpy(), np.diag([0.5, -1.0, 2.0]))
    y = (x**2).sum()  # a scalar output: each row of grad_outputs is a 0-d vector
    (gs,) = T.autograd.grad(y, x, T.tensor([1.0, 3.0], dtype=T.float64), is_grads_batched=True)
    np.testing.assert_array_equal(gs.numpy(), [[2.0, 4.0, 6.0], [6.0, 12.0, 18.0]])


def test_is_grads_batched_keeps_the_graph_until_the_last_row_and_records_it():
    x = _x(T)
    (g,) = T.autograd.grad(x**3, x, T.eye(3, dtype=T.float64), is_grads_batched=True,
                           create_graph=True)  # fmt: skip
    assert g.requires_grad  # d/dx of the Jacobian's trace: 6x
    (h,) = T.autograd.grad(g.diagonal().sum(), x)
    np.testing.assert_allclose(h.numpy(), [6.0, 12.0, 18.0])


def test_is_grads_batched_bad_shapes_raise():
    x = _x(T)
    with pytest.raises(RuntimeError, match="grad_output\\[0\\] has a shape of \\[2, 4\\]"):
        T.autograd.grad(x * 2, x, T.ones(2, 4, dtype=T.float64), is_grads_batched=True)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        T.autograd.grad([x * 2, x * 3], x, [T.ones(2, 3), T.ones(4, 3)], is_grads_batched=True)
    with pytest.raises(ValueError, match="needs grad_outputs"):
        T.autograd.grad((x * 2).sum(), x, is_grads_batched=True)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_is_grads_batched_matches_torch():
    rng = np.random.default_rng(0)
    a, v = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    results = []
    for lib in (T, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tanh(x).sum(1) * 2
        (g,) = lib.autograd.grad(y, x, lib.tensor(v), is_grads_batched=True)
        results.append(g.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_only_inputs_is_deprecated_and_ignored():
    x = _x(T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (g,) = T.autograd.grad((x * 2).sum(), x, only_inputs=False)
    assert [w.category for w in caught] == [FutureWarning]
    assert "only_inputs argument is deprecated" in str(caught[0].message)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0, 2.0])


def test_materialize_grads_needs_allow_unused():
    x, w = _x(T), _x(T)
    with pytest.raises(ValueError, match="allow_unused to be True or not passed"):
        T.autograd.grad((x * 2).sum(), [x, w], allow_unused=False, materialize_grads=True)
    gx, gw = T.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    np.testing.assert_array_equal(gw.numpy(), [0.0, 0.0, 0.0])


def test_forward_mode_strategy_gives_the_reverse_jacobian_under_torchs_conditions():
    x = _x(T)
    f = lambda a: T.stack([a[0] * a[1], a[2].sin(), a.sum()])  # noqa: E731
    fwd = F.jacobian(f, x, strategy="forward-mode", vectorize=True)
    np.testing.assert_array_equal(fwd.numpy(), F.jacobian(f, x).numpy())
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(f, x, strategy="forward-mode")
    with pytest.raises(RuntimeError, match='`strict=True` and `strategy="forward-mode"`'):
        F.jacobian(f, x, strategy="forward-mode", vectorize=True, strict=True)
    with pytest.raises(NotImplementedError, match="`create_graph=True` and"):
        F.jacobian(f, x, strategy="forward-mode", vectorize=True, create_graph=True)
    h = F.hessian(lambda a: (a**3).sum(), x, outer_jacobian_strategy="forward-mode", vectorize=True)
    np.testing.assert_array_equal(h.numpy(), np.diag([6.0, 12.0, 18.0]))
    with pytest.raises(AssertionError, match="Expected strategy"):
        F.hessian(lambda a: (a**3).sum(), x, outer_jacobian_strategy="sideways")


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_forward_mode_errors_are_torchs():
    cases = [
        dict(strategy="forward-mode"),
        dict(strategy="forward-mode", vectorize=True, strict=True),
        dict(strategy="forward-mode", vectorize=True, create_graph=True),
    ]
    for kwargs in cases:
        messages = []
        for lib in (T, torch):
            with pytest.raises((RuntimeError, NotImplementedError)) as info:
                lib.autograd.functional.jacobian(lambda a: a * 2, _x(lib), **kwargs)
            messages.append((type(info.value), str(info.value).replace("isonly", "is only")))
        assert messages[0] == messages[1]


def test_gradcheck_refuses_outputs_that_are_not_tensors():
    # A function returning a number or None once left nothing to compare, and "passed".
    x = _x(T)
    for f in (lambda a: 3.0, lambda a: None, lambda a: (a * 2, 3)):
        with pytest.raises(TypeError, match="not a Tensor"):
            T.autograd.gradcheck(f, (x,))
    assert T.autograd.gradcheck(
        lambda a: T.tensor([1, 2]), (x,)
    )  # integer output: nothing to check
