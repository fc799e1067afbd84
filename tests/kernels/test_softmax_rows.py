"""The numba row softmax (materialised path) against its NumPy twin."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyattn import kernels
from tinyattn.kernels import reference

shapes = st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 9), st.integers(1, 70))


@given(shape=shapes, dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 99))
def test_softmax_rows_and_backward_match_the_twin(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal(shape) * 4).astype(dtype)
    blocked = rng.random(shape) < 0.3
    scores[blocked] = -np.inf  # some rows end up fully blocked
    weights = kernels.softmax_rows(scores)
    expected = reference.softmax_rows(scores)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(weights, expected, atol=tol, rtol=tol)
    assert weights.dtype == dtype and np.all(np.isfinite(weights))
    full = np.all(blocked, axis=-1)
    assert np.all(weights[full] == 0)
    dweights = rng.standard_normal(shape).astype(dtype)
    np.testing.assert_allclose(
        kernels.softmax_rows_backward(dweights, weights),
        reference.softmax_rows_backward(dweights, expected),
        atol=10 * tol,
        rtol=10 * tol,
    )


def test_softmax_rows_is_deterministic_and_accepts_strided_input():
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((2, 3, 40, 33)).astype(np.float32)
    strided = scores.swapaxes(-1, -2)  # made contiguous at the boundary
    a, b = kernels.softmax_rows(strided), kernels.softmax_rows(strided)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, reference.softmax_rows(strided), atol=1e-6)


def test_softmax_rows_rejects_bad_input():
    with pytest.raises(ValueError, match="scores"):
        kernels.softmax_rows(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="dweights"):
        kernels.softmax_rows_backward(np.zeros((1, 1, 2, 3)), np.zeros((1, 1, 2, 4)))
