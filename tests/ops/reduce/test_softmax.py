"""softmax / log_softmax: gradients, torch parity, numerical stability, -inf rows, implicit dim."""

import warnings

import numpy as np
import pytest
from harness import check_op, run_parity, torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), st.data())
def test_softmax_and_log_softmax(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(1).uniform(-3, 3, shape)
    check_op(lambda T, x: T.softmax(x, dim=dim), x)
    check_op(lambda T, x: x.log_softmax(dim), x)


def test_non_contiguous_inputs():
    x = np.random.default_rng(2).uniform(-3, 3, (4, 6))
    check_op(lambda T, x: x.t().softmax(-1), x)
    check_op(lambda T, x: T.log_softmax(x[::2, 1::2], dim=0), x)


@pytest.mark.parametrize("scale", [1e4, 1e6, 1e30])
def test_large_logits_are_stable(scale):
    x = np.array([[1.0, 0.0, -1.0], [2.0, 2.0, -3.0]]) * scale
    for fn in ("softmax", "log_softmax"):
        out = getattr(tinyattn, fn)(tinyattn.tensor(x), dim=1)
        finite = np.isfinite(out.numpy()) | (out.numpy() == -np.inf)
        assert finite.all(), out
    run_parity(lambda T, x: T.softmax(x, dim=1), x, dtypes=(np.float64,))
    run_parity(lambda T, x: T.log_softmax(x, dim=1), x, dtypes=(np.float64,))


def test_row_of_minus_inf_is_nan_like_torch():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]])
    sm = tinyattn.softmax(tinyattn.tensor(x), dim=1).numpy()
    lsm = tinyattn.log_softmax(tinyattn.tensor(x), dim=1).numpy()
    assert np.isnan(sm[0]).all() and np.isnan(lsm[0]).all()
    assert sm[1, 1] == 0 and lsm[1, 1] == -np.inf
    if torch is not None:
        np.testing.assert_allclose(sm, torch.softmax(torch.tensor(x), 1).numpy())
        np.testing.assert_allclose(lsm, torch.log_softmax(torch.tensor(x), 1).numpy())


@pytest.mark.parametrize("shape, expected_dim", [((3,), 0), ((2, 3), 1), ((2, 3, 4), 0)])
def test_implicit_dim_warns_and_picks_torch_dim(shape, expected_dim):
    x = tinyattn.tensor(np.random.default_rng(3).standard_normal(shape))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = tinyattn.softmax(x)
    np.testing.assert_allclose(out.numpy(), tinyattn.softmax(x, dim=expected_dim).numpy())
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = torch.nn.functional.softmax(torch.tensor(x.numpy()))
        np.testing.assert_allclose(out.numpy(), ref.numpy())


def test_dtype_argument_and_integer_input():
    x = tinyattn.tensor([[1.0, 2.0]])
    assert x.softmax(1, dtype=tinyattn.float64).dtype == tinyattn.float64
    assert tinyattn.tensor([1, 2]).softmax(0).dtype == tinyattn.float32


def test_bad_arguments():
    with pytest.raises(IndexError, match="softmax.*range"):
        tinyattn.zeros(2, 3).softmax(2)
    with pytest.raises(TypeError, match="softmax.*Tensor"):
        tinyattn.softmax([1.0, 2.0], dim=0)


def test_implicit_dim_warning_points_at_the_caller():
    """``_stacklevel`` is honoured: the deprecation warning names the user's line, as torch's."""
    x = tinyattn.randn(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tinyattn.softmax(x)
        tinyattn.nn.functional.log_softmax(x)
        tinyattn.nn.Softmax()(x)
    assert len(caught) == 3
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]
