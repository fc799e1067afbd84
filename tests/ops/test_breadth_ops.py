"""Breadth ops (issue 8): scans, degenerate-point gradients of var/std/norm, rearranging,
linalg and elementwise additions. Gradchecks and torch parity via the harness; bad input."""

import numpy as np
import pytest
from harness import check_op, run_parity, torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


@st.composite
def shape_dim(draw, min_side=0, max_dims=3):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=min_side, max_side=4))
    return shape, draw(st.integers(-len(shape), len(shape) - 1))


# -- scans ------------------------------------------------------------------------------------


@given(shape_dim())
def test_cumprod_cumsum(sd):
    shape, dim = sd
    x = _arr(shape, seed=1)
    check_op(lambda T, x: T.cumprod(x, dim), x)
    check_op(lambda T, x: T.cumsum(x, dim=dim), x)


@pytest.mark.parametrize(
    "row",
    [
        [2.0, 0.0, 3.0, 0.5],  # one zero
        [0.0, 2.0, 3.0, 4.0],  # zero first
        [2.0, 3.0, 0.5, 0.0],  # zero last
        [1.5, 0.0, 2.0, 0.0, 3.0],  # two zeros: the second gets no gradient
        [0.0, 0.0, 0.0],
    ],
)
def test_cumprod_gradient_at_zeros(row):
    """torch's cumprod backward is exact at zeros (no 0/0): the product is a polynomial,
    so the finite differences are exact there too."""
    x = np.array(row)
    check_op(lambda T, x: T.cumprod(x, 0), x)
    check_op(lambda T, x: T.cumprod(x.reshape(1, -1).expand(2, -1) * 1, 1), x)


def test_cumprod_dtypes():
    ints = tinyattn.tensor([1, 2, 3], dtype=tinyattn.int32)
    assert tinyattn.cumprod(ints, 0).dtype == tinyattn.int64
    assert tinyattn.cumprod(ints, 0, dtype=tinyattn.float64).dtype == tinyattn.float64
    np.testing.assert_array_equal(tinyattn.cumprod(ints, 0).numpy(), [1, 2, 6])


@given(shape_dim())
def test_cummax_cummin(sd):
    shape, dim = sd
    x = np.random.default_rng(2).permutation(int(np.prod(shape))).reshape(shape) * 0.1
    check_op(lambda T, x: T.cummax(x, dim), x)
    check_op(lambda T, x: T.cummin(x, dim), x)


@needs_torch
def test_cummax_ties_and_nan_indices_match_torch():
    nan = float("nan")
    a = np.array([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0], [nan, 1.0, nan, 2.0, 0.0, 0.0]])
    for name in ("cummax", "cummin"):
        ours = getattr(tinyattn, name)(tinyattn.tensor(a), 1)
        theirs = getattr(torch, name)(torch.tensor(a), 1)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    ties = np.array([1.0, 3.0, 3.0, 2.0, 3.0])  # the gradient follows the (repeated) indices
    run_parity(lambda T, x: T.cummax(x, 0), ties)


# -- degenerate points: var / std / norm at zero spread (issue 11) ----------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: T.std(x),
        lambda T, x: T.std(x, 1),
        lambda T, x: T.std(x, 0, correction=0, keepdim=True),
        lambda T, x: T.var(x, 1),
        lambda T, x: T.std_mean(x, 1),
        lambda T, x: T.var_mean(x, 0),
        lambda T, x: T.norm(x),
        lambda T, x: T.norm(x, 1, dim=1),
        lambda T, x: T.norm(x, 3, dim=1),
        lambda T, x: T.norm(x, 0.5, dim=1),
        lambda T, x: T.norm(x, float("inf"), dim=1),
        lambda T, x: T.norm(x, float("-inf"), dim=1),
    ],
)
def test_zero_spread_gradients_match_torch(fn):
    """All-equal rows (std 0) and all-zero rows (norm 0): torch's gradient is 0, not NaN."""
    const = np.array([[0.5, 0.5, 0.5], [0.0, 0.0, 0.0]])
    run_parity(fn, const)
    ours = tinyattn.tensor(const, requires_grad=True)
    out = fn(tinyattn, ours)
    sum(o.sum() for o in (out if isinstance(out, tuple) else (out,))).backward()
    assert np.isfinite(ours.grad.numpy()).all()


@pytest.mark.parametrize("p", [0.5, 1, 2, 3, -1, float("inf"), float("-inf")])
def test_norm_with_some_zero_elements(p):
    x = np.array([[0.0, 1.0, -2.0], [0.3, -0.7, 0.2]])
    run_parity(lambda T, x: T.norm(x, p, dim=1), x)
    check_op(lambda T, x: T.norm(x, p, dim=1), x[1:])  # gradcheck away from the kink


def test_std_gradcheck_nonconstant():
    check_op(lambda T, x: T.std(x, 1) + T.std(x), _arr((3, 4), seed=3))


def test_norm_p0_counts_nonzeros_with_zero_gradient():
    """torch leaves .grad None for p=0 (its backward returns no gradient); ours is 0."""
    x = np.array([[0.0, 1.0, -2.0], [0.3, 0.0, 0.0]])
    run_parity(lambda T, x: T.norm(x, 0, dim=1), x, grad=[False])
    t = tinyattn.tensor(x, requires_grad=True)
    tinyattn.norm(t, 0, dim=1).sum().backward()
    np.testing.assert_array_equal(tinyattn.norm(t, 0, dim=1).detach().numpy(), [2.0, 1.0])
    np.testing.assert_array_equal(t.grad.numpy(), np.zeros_like(x))
