"""Reductions: float64 gradchecks over every element and torch parity, dims drawn by Hypothesis."""

import numpy as np
import pytest
from harness import check_op, rand, run_parity, torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn


@st.composite
def shape_and_dims(draw, min_side=0, min_dims=1):
    """A shape (zero-size dims allowed) and a dim argument: None, an int, or a tuple."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=min_side, max_side=3))
    nd = len(shape)
    dim = draw(
        st.one_of(
            st.none(),
            st.integers(-nd, nd - 1),
            st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(tuple),
        )
    )
    return shape, dim, draw(st.booleans())


def _arr(shape, low=-1.0, high=1.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape)


@given(shape_and_dims())
def test_sum_mean(sd):
    shape, dim, keepdim = sd
    x = _arr(shape, seed=1)
    if dim is None:
        check_op(lambda T, x: x.sum() + T.sum(x * x), x)
    else:
        check_op(lambda T, x: x.sum(dim, keepdim=keepdim), x)
    if 0 not in shape:  # torch's mean of nothing is nan: checked in test_empty_reductions
        if dim is None:
            check_op(lambda T, x: x.mean(), x)
        else:
            check_op(lambda T, x: T.mean(x, dim, keepdim), x)


@given(shape_and_dims(min_side=3), st.sampled_from([0, 1, 2]))
def test_var_std(sd, correction):
    shape, dim, keepdim = sd
    x = _arr(shape, seed=2)
    if dim is None:
        check_op(lambda T, x: x.var(correction=correction), x)
        check_op(lambda T, x: x.std(), x)
    else:
        check_op(lambda T, x: x.var(dim, keepdim=keepdim, correction=correction), x)
        check_op(lambda T, x: T.std(x, dim, unbiased=False, keepdim=keepdim), x)


@given(shape_and_dims(min_side=1))
def test_amax_amin_and_full_max_min(sd):
    shape, dim, keepdim = sd
    x = _arr(shape, seed=3)
    if dim is None:
        check_op(lambda T, x: x.max() - T.min(x) + x.amax() * x.amin(), x)
    else:
        check_op(lambda T, x: x.amax(dim, keepdim) + T.amin(x, dim, keepdim), x)


def test_max_min_ties_distribute_like_torch():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    run_parity(lambda T, x: x.max(), x)
    run_parity(lambda T, x: x.amax(dim=1), x)
    run_parity(lambda T, x: x.amin(dim=(0, 1)), x)
    run_parity(lambda T, x: T.min(x), x)


@given(shape_and_dims(min_side=1), st.booleans())
def test_max_min_with_dim_named_tuple(sd, pick_max):
    shape, _, keepdim = sd
    x = _arr(shape, seed=4)
    for dim in range(-len(shape), len(shape)):

        def f(T, x, dim=dim):
            out = (T.max if pick_max else T.min)(x, dim, keepdim=keepdim)
            assert out.values is out[0] and out.indices is out[1]
            return out  # (values, indices): both compared with torch

        check_op(f, x)


def test_max_dim_returns_first_index_on_ties_and_nan_like_torch():
    x = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.nan]])
    values, indices = tinyattn.tensor(x).max(dim=1)
    assert indices.tolist() == [1, 0]
    assert values[0].item() == 3.0 and np.isnan(values[1].item())
    if torch is not None:
        tv, ti = torch.tensor(x).max(dim=1)
        assert ti.tolist() == indices.tolist()


@given(shape_and_dims(min_side=1))
def test_logsumexp(sd):
    shape, dim, keepdim = sd
    x = _arr(shape, -3, 3, seed=5)
    d = dim if dim is not None else tuple(range(len(shape)))
    check_op(lambda T, x: T.logsumexp(x, d, keepdim=keepdim), x)


def test_logsumexp_is_stable():
    x = np.array([[1e4, 0.0, -1e4], [-np.inf, -np.inf, 0.0]])
    run_parity(lambda T, x: x.logsumexp(dim=1), x)
    out = tinyattn.tensor([[-np.inf, -np.inf]]).logsumexp(dim=1)
    assert out.item() == -np.inf  # torch: -inf for a row of -inf


@given(shape_and_dims(min_side=1), st.sampled_from([1, 2, 3, "fro", float("inf")]))
def test_norm(sd, p):
    shape, dim, keepdim = sd
    x = _arr(shape, seed=6)
    if dim is None:
        check_op(lambda T, x: x.norm(p=p), x)
    elif p == "fro" and not isinstance(dim, int) and len(dim) > 2:
        with pytest.raises(RuntimeError, match="at most 2 dims"):  # torch raises too
            tinyattn.tensor(x).norm(p=p, dim=dim)
    else:
        check_op(lambda T, x: T.norm(x, p=p, dim=dim, keepdim=keepdim), x)


def test_norm_of_zero_vector_has_zero_gradient_like_torch():
    x = np.array([[0.0, 0.0], [3.0, 4.0]])
    run_parity(lambda T, x: x.norm(dim=1), x)


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3), st.data())
def test_prod_and_cumsum(shape, data):
    x = _arr(shape, 0.5, 1.5, seed=7)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    check_op(lambda T, x: x.prod(), x)
    check_op(lambda T, x: x.prod(dim, keepdim=keepdim), x)
    check_op(lambda T, x: T.cumsum(x, dim), x)


def test_prod_gradient_with_zeros_like_torch():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    check_op(lambda T, x: x.prod(dim=1), x)
    check_op(lambda T, x: x.prod(), x[0])


def test_reductions_of_non_contiguous_inputs():
    x = rand(4, 6, seed=8)
    for f in (
        lambda T, x: x.t().sum(0),
        lambda T, x: x[::2, 1::2].mean(1),
        lambda T, x: x.t().var(0),
        lambda T, x: x[:, ::2].amax(1),
        lambda T, x: x.t().max(1)[0],
        lambda T, x: x[1::2].logsumexp(0),
        lambda T, x: x.t().norm(dim=1),
        lambda T, x: x[::2].prod(1),
        lambda T, x: x.t().cumsum(1),
    ):
        check_op(f, x)


def test_empty_reductions_match_torch():
    e = tinyattn.empty(0, 3)
    assert e.sum().item() == 0 and e.prod().item() == 1
    assert np.isnan(e.mean().item())
    assert np.isnan(tinyattn.empty(0).var().item())
    assert e.amax(dim=1).shape == (0,)
    assert e.max(dim=1).values.shape == (0,) and e.max(dim=1).indices.dtype == tinyattn.int64
    with pytest.raises(IndexError, match="amax.*dim 0.*non-zero size"):
        e.amax(dim=0)
    with pytest.raises(IndexError, match=r"max.*\[0, 3\]"):
        e.max(dim=0)
    with pytest.raises(RuntimeError, match="max"):
        e.max()


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize(
    "expr",
    [
        "T.tensor([1, 2, 3]).sum()",
        "T.tensor([True, True]).sum()",
        "T.tensor([1, 2], dtype=T.int32).sum()",
        "T.tensor([1, 2], dtype=T.int32).cumsum(0)",
        "T.tensor([1, 2], dtype=T.int32).prod()",
        "T.tensor([1., 2.]).sum(dtype=T.float64)",
        "T.tensor([1., 2.]).mean(dtype=T.float64)",
        "T.tensor([1., 2., 3.]).var()",
        "T.tensor([1.]).var()",
        "T.tensor([1., 2., 3.]).std(unbiased=False)",
        "T.tensor([[1., 2.], [3., 4.]]).var(1, keepdim=True)",
        "T.tensor([[1., 2.], [3., 4.]]).norm(p=float('inf'))",
        "T.tensor([1, 2, 3]).argmax()",
        "T.tensor([[1, 5], [3, 4]]).argmin(dim=1, keepdim=True)",
        "T.tensor([[1., 2.], [3., 4.]]).logsumexp(dim=(0, 1))",
        "T.tensor([[1, 2], [3, 4]]).logsumexp(dim=1)",
        "T.tensor([[1, 0], [3, 4]]).count_nonzero(dim=1)",
        "T.tensor([[True, False]]).any(dim=1)",
        "T.tensor([[True, False]]).all()",
    ],
)
def test_values_and_dtypes_match_torch(expr):
    ours = eval(expr, {"T": tinyattn})
    theirs = eval(expr, {"T": torch})
    assert str(theirs.dtype) == "torch." + ours.dtype.name, (ours, theirs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_bad_dims_raise_clear_errors():
    x = tinyattn.zeros(2, 3)
    with pytest.raises(IndexError, match=r"sum\(\).*range of \[-2, 1\].*got 5"):
        x.sum(dim=5)
    with pytest.raises(IndexError, match="max"):
        x.max(dim=-3)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.sum(dim=(0, -2))
    with pytest.raises(RuntimeError, match="mean.*floating point.*int64"):
        tinyattn.tensor([1, 2]).mean()
    with pytest.raises(TypeError, match="dim must be an int"):
        x.cumsum(dim="a")


# -- found by tests/core/test_differential.py ----------------------------------------------


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "logsumexp", "norm", "var", "cumsum"])
def test_reductions_take_dim_0_of_a_0d_tensor(op):
    """torch accepts dim 0 / -1 of a 0-d tensor; tinyattn's NumPy axis 0 raised AxisError."""

    def f(T, x):
        if op == "cumsum":
            return x.cumsum(0)  # was shape (1,): must stay 0-d
        if op == "var":
            return x.var(dim=-1, correction=0)
        return getattr(x, op)(dim=0)

    check_op(f, np.array(0.7))


def test_logsumexp_of_an_empty_dim_is_minus_inf():
    out = tinyattn.zeros(2, 0).logsumexp(dim=1)  # was: ValueError from np.max
    assert out.shape == (2,) and np.all(np.isneginf(out.numpy()))
    x = tinyattn.zeros(3, 0, requires_grad=True)
    x.logsumexp(dim=1).sum().backward()
    assert x.grad.shape == (3, 0)


def test_prod_takes_dim_0_of_a_0d_tensor():
    check_op(lambda T, x: x.prod(dim=0, keepdim=True), np.array(0.7))
