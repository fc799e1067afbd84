"""The numba stacked product (``kernels/_numba_bmm.py``) against its twin, ``np.matmul``.

``tinyattn._matmul.matmul`` sends stacks of products of at least 32**3 multiply-adds
each, 2**21 in all, to the kernel; here the second bound is lowered so that small
shapes (fast gradchecks) run in the kernel too, and a spy checks that it ran.
"""

import numpy as np
import pytest
from harness import rand, run_gradcheck, run_parity

from tinyattn import _matmul
from tinyattn.kernels import _numba_bmm

SHAPES = [  # (a, b): plain stacks, broadcast batch dims, a 2-D b is folded (no kernel)
    ((3, 40, 50), (3, 50, 60)),
    ((2, 3, 40, 50), (2, 3, 50, 60)),
    ((2, 1, 40, 50), (3, 50, 60)),
    ((1, 40, 50), (4, 50, 60)),
    ((4, 64, 64), (64, 64)),
]


def _layouts(x: np.ndarray):
    """x as C-contiguous, as the transpose of a contiguous stack, and as a strided view."""
    yield x
    yield np.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype)
    wide[..., ::2] = x
    yield wide[..., ::2]


@pytest.fixture(autouse=True)
def small_stacks_in_the_kernel(monkeypatch):
    monkeypatch.setattr(_matmul, "_STACK_KERNEL_MIN_WORK", 0)


@pytest.fixture
def spy(monkeypatch):
    """Count kernel launches, to be sure the kernel is the code under test."""
    calls = []
    kernel = _numba_bmm.bmm_kernel

    def counted(*args):
        calls.append(args[0].shape)
        return kernel(*args)

    monkeypatch.setattr(_numba_bmm, "bmm_kernel", counted)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_kernel_matches_numpy(a_shape, b_shape, dtype, spy):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    expected = np.matmul(a, b)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for a_view in _layouts(a):
        for b_view in _layouts(b):
            got = _matmul.matmul(a_view, b_view)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    assert bool(spy) == (len(b_shape) > 2)  # a 2-D b is one folded GEMM, not the kernel


def test_kernel_propagates_nan_and_inf(spy):
    a = np.ones((2, 40, 40), np.float32)
    b = np.ones((2, 40, 40), np.float32)
    a[0, 3, 5], a[1, 7, 0], b[1, 2, 9] = np.nan, np.inf, -np.inf
    got, expected = _matmul.matmul(a, b), np.matmul(a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[np.isfinite(expected)], expected[np.isfinite(expected)])
    assert spy


def test_numpy_backend_skips_the_kernel(monkeypatch, spy):
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    a, b = rand(2, 40, 40, seed=1), rand(2, 40, 40, seed=2)
    np.testing.assert_allclose(_matmul.matmul(a, b), np.matmul(a, b), rtol=1e-12)
    assert not spy


def test_other_dtypes_skip_the_kernel(spy):
    a = np.arange(2 * 40 * 40).reshape(2, 40, 40) % 7
    np.testing.assert_array_equal(_matmul.matmul(a, a), np.matmul(a, a))
    a16 = a.astype(np.float16)
    np.testing.assert_array_equal(_matmul.matmul(a16, a16), np.matmul(a16, a16))
    assert not spy


def test_matmul_op_through_the_kernel(spy):
    """Gradcheck and torch parity of ``a @ b`` at shapes where forward and backward
    products all run in the kernel (32**3 multiply-adds per product). (First order:
    the second order of matmul is checked in tests/ops/test_linalg.py.)"""
    f, a, b = (lambda T, a, b: a @ b), rand(2, 32, 32, seed=3), rand(2, 32, 32, seed=4)
    run_gradcheck(f, a, b)
    run_parity(f, a, b)
    assert spy


def test_attention_by_hand_through_the_kernel(spy):
    """The tutorials' attention, ``softmax(q k^T / sqrt(d)) v``, with k transposed as a view."""
    q, k, v = (rand(1, 2, 32, 32, seed=s) for s in (5, 6, 7))

    def attention(T, q, k, v):
        scores = q @ k.transpose(-2, -1) / 32**0.5
        return T.softmax(scores, dim=-1) @ v

    run_gradcheck(attention, q, k, v)
    run_parity(attention, q, k, v)
    assert spy


def test_small_stacks_stay_with_numpy(monkeypatch, spy):
    monkeypatch.setattr(_matmul, "_STACK_KERNEL_MIN_WORK", 2**21)
    a, b = rand(2, 40, 40, seed=8), rand(2, 40, 40, seed=9)  # 2 * 64000 multiply-adds
    np.testing.assert_allclose(_matmul.matmul(a, b), np.matmul(a, b), rtol=1e-12)
    assert not spy
