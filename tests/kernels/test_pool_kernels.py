"""The pooling kernels (``tinyattn.kernels._numba_pool``) against their NumPy twins
(``tinyattn.kernels.pool`` with ``TINYATTN_KERNELS=numpy``), the twins against finite
differences, and the checks at the boundary."""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_op

import tinyattn
from tinyattn.kernels import pool
from tinyattn.nn.functional.pool_windows import adaptive_windows, avg_windows, max_windows

# (spatial, outs, kernel, stride, padding, dilation): 1-D, 2-D and 3-D, with padding,
# dilation, ceil_mode overhang, and windows wholly in the padding (the last 2-D case)
MAX_CASES = [
    ((7,), (4,), (3,), (2,), (1,), (1,)),
    ((5, 6), (3, 3), (3, 2), (2, 2), (1, 1), (1, 2)),
    ((6, 5), (3, 3), (3, 3), (2, 2), (1, 1), (1, 1)),
    ((3, 4, 5), (2, 3, 2), (2, 2, 3), (2, 1, 2), (1, 0, 1), (1, 2, 1)),
    ((1, 5), (2, 5), (2, 2), (1, 1), (1, 1), (2, 2)),
]


def _windows(case, kind):
    spatial, outs, kernel, stride, padding, dilation = case
    if kind == "max":
        return max_windows(spatial, outs, kernel, stride, padding, dilation), None
    if kind == "adaptive":
        return adaptive_windows(spatial, tuple(max(1, o - 1) for o in outs))
    return avg_windows(spatial, outs, kernel, stride, padding, kind == "avg-pad", None)


def _data(shape, dtype, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=shape).astype(dtype)  # small integers: many ties
    if specials:
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, size=max(1, flat.size // 6), replace=False)
        flat[picks[0::3]] = np.nan
        flat[picks[1::3]] = -np.inf
        flat[picks[2::3]] = np.inf
    return x


def _both(monkeypatch, fn, *args):
    """``fn(*args)`` through the kernel, then through the twin."""
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    kernel = fn(*args)
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    twin = fn(*args)
    return kernel, twin


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["max", "adaptive"])
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_argmax_kernel_matches_twin(monkeypatch, case, kind, dtype):
    windows, _ = _windows(case, kind)
    for seed in range(3):
        x = _data((2, 3, *case[0]), dtype, seed)
        kernel, twin = _both(monkeypatch, pool.max_pool_argmax, x, windows)
        assert kernel.shape == (2, 3, *windows.out_shape) and kernel.dtype == np.int64
        np.testing.assert_array_equal(kernel, twin)


def test_max_pool_argmax_twin_is_torch_scan(monkeypatch):
    """The twin's rule (first maximum; the last NaN if any; an empty window keeps its first
    position) against a literal tap-by-tap scan in torch's order."""
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    x = _data((1, 1, 9), np.float64, 5)
    windows = max_windows((9,), (5,), (3,), (2,), (1,), (1,))
    got = pool.max_pool_argmax(x, windows)[0, 0]
    for o, (start, stop) in enumerate(zip(windows.start[0], windows.stop[0])):
        best, at = -np.inf, start
        for i in range(start, stop):
            v = x[0, 0, i]
            if v > best or np.isnan(v):
                best, at = v, i
        assert got[o] == at


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_gather_and_scatter_kernels_match_twins(monkeypatch, n, dtype):
    rng = np.random.default_rng(n)
    spatial, outs = (5, 4, 3)[:n], (3, 2, 2)[:n]
    x = rng.standard_normal((2, 3, *spatial)).astype(dtype)
    size = int(np.prod(spatial))
    index = rng.integers(-1, size, size=(2, 3, *outs))  # repeats and -1 (empty windows)
    index.reshape(-1)[0] = size + 4  # outside the plane: read as fill, dropped by scatter
    for fill in (-np.inf, 0.0):
        kernel, twin = _both(monkeypatch, pool.gather, x, index, n, fill)
        np.testing.assert_array_equal(kernel, twin)
        outside = (index < 0) | (index >= size)
        assert (kernel[outside] == fill).all()
    g = rng.standard_normal((2, 3, *outs)).astype(dtype)
    kernel, twin = _both(monkeypatch, pool.scatter_add, g, index, spatial)
    np.testing.assert_allclose(kernel, twin, rtol=1e-6 if dtype == np.float32 else 1e-14)
    inside = (index >= 0) & (index < size)
    np.testing.assert_allclose(kernel.sum(), g[inside].sum(dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["avg-pad", "avg-nopad", "adaptive"])
@pytest.mark.parametrize("case", MAX_CASES[:4])
def test_avg_pool_kernels_match_twins(monkeypatch, case, kind, dtype):
    dilation_free = (*case[:5], (1,) * len(case[0]))
    windows, divisor = _windows(dilation_free, kind)
    x = _data((2, 3, *case[0]), dtype, 1, specials=False)
    x = x + np.random.default_rng(2).uniform(0, 1, x.shape).astype(dtype)
    kernel, twin = _both(monkeypatch, pool.avg_pool, x, windows, divisor)
    np.testing.assert_allclose(kernel, twin, rtol=1e-6 if dtype == np.float32 else 1e-13)
    g = np.random.default_rng(3).standard_normal(kernel.shape).astype(dtype)
    kernel, twin = _both(monkeypatch, pool.avg_pool_backward, g, windows, divisor, case[0])
    np.testing.assert_allclose(kernel, twin, rtol=1e-6 if dtype == np.float32 else 1e-13)
    # the adjoint identity <avg_pool(x), g> = <x, avg_pool_backward(g)>
    y = pool.avg_pool(x.astype(np.float64), windows, divisor)
    dx = pool.avg_pool_backward(g.astype(np.float64), windows, divisor, case[0])
    np.testing.assert_allclose((y * g).sum(), (x * dx).sum(), rtol=1e-10)


def test_kernels_take_strided_input(monkeypatch):
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    x = np.random.default_rng(4).standard_normal((3, 2, 6, 8))
    strided = x.transpose(1, 0, 2, 3)  # not C-contiguous
    windows = max_windows((6, 8), (3, 4), (2, 2), (2, 2), (0, 0), (1, 1))
    got = pool.max_pool_argmax(strided, windows)
    np.testing.assert_array_equal(got, pool.max_pool_argmax(np.ascontiguousarray(strided), windows))


@pytest.mark.parametrize(
    "f,shape",
    [
        (lambda T, x: T.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True), (1, 2, 5, 6)),
        (
            lambda T, x: T.nn.functional.avg_pool3d(x, 2, 1, 1, count_include_pad=False),
            (1, 3, 4, 3),
        ),
        (lambda T, x: T.nn.functional.adaptive_max_pool1d(x, 3), (2, 7)),
    ],
)
def test_twin_path_gradchecks(monkeypatch, f, shape):
    """With ``TINYATTN_KERNELS=numpy`` the pools run the twins: checked against finite
    differences (and torch) too."""
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    x = np.random.default_rng(6).permutation(int(np.prod(shape))).reshape(shape) / 10.0
    check_op(f, x)


# -- the boundary ------------------------------------------------------------------------------


def test_boundary_rejects_bad_arrays():
    windows = max_windows((4, 4), (2, 2), (2, 2), (2, 2), (0, 0), (1, 1))
    x = np.zeros((1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"x: expected a floating array with 2 spatial dims"):
        pool.max_pool_argmax(np.zeros((1, 1, 4, 4), np.int64), windows)
    with pytest.raises(ValueError, match=r"windows: dim 1: a window reaches outside \[0, 3\)"):
        pool.max_pool_argmax(np.zeros((1, 1, 4, 3)), windows)
    with pytest.raises(ValueError, match=r"index: expected an int64 array of shape"):
        pool.gather(x, np.zeros((1, 1, 2, 2), np.int32), 2, 0.0)
    with pytest.raises(ValueError, match=r"index: expected an array of shape"):
        pool.gather(x, np.zeros((2, 1, 2, 2), np.int64), 2, 0.0)
    with pytest.raises(ValueError, match=r"index: expected an int64 array of shape \(1, 1, 2, 2\)"):
        pool.scatter_add(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2), np.int64), (4, 4))
    avg, divisor = avg_windows((4, 4), (2, 2), (2, 2), (2, 2), (0, 0), True, None)
    with pytest.raises(ValueError, match=r"divisor: expected a float64 array of shape \(2, 2\)"):
        pool.avg_pool(x, avg, divisor[:1])
    with pytest.raises(ValueError, match=r"g: expected spatial dims \(2, 2\)"):
        pool.avg_pool_backward(np.zeros((1, 1, 3, 2)), avg, divisor, (4, 4))


def test_float16_runs_the_twin():
    x = tinyattn.tensor(np.arange(16, dtype=np.float16).reshape(1, 1, 4, 4), requires_grad=True)
    y = tinyattn.nn.functional.max_pool2d(x, 2)
    assert y.dtype == tinyattn.float16
    np.testing.assert_array_equal(y.detach().numpy(), [[[[5, 7], [13, 15]]]])
    y.sum().backward()
    assert x.grad.numpy().sum() == 4


# windows held several deep along D and H (the backward's spread rows in every slot),
# adaptive runs of rows held by the same windows (copied rows), and one case large enough
# (over POOL_PARALLEL_MIN reads) to run on numba's threads
SPREAD_CASES = [
    ("avg-pad", ((5, 6, 7), (5, 6, 7), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)), 2),
    ("avg-nopad", ((6, 9), (3, 5), (4, 3), (1, 2), (1, 1), (1, 1)), 3),
    ("adaptive", ((5, 9, 7), (3, 4, 3), None, None, None, None), 2),
    ("adaptive", ((13, 11), (3, 4), None, None, None, None), 3),
    ("avg-pad", ((40, 40), (40, 40), (3, 3), (1, 1), (1, 1), (1, 1)), 96),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind,case,planes", SPREAD_CASES)
def test_avg_pool_kernels_match_twins_deep_windows(monkeypatch, kind, case, planes, dtype):
    spatial, outs = case[:2]
    if kind == "adaptive":
        windows, divisor = adaptive_windows(spatial, outs)
    else:
        windows, divisor = avg_windows(spatial, outs, *case[2:5], kind == "avg-pad", None)
    x = _data((planes, *spatial), dtype, 4, specials=False)
    kernel, twin = _both(monkeypatch, pool.avg_pool, x, windows, divisor)
    np.testing.assert_allclose(kernel, twin, rtol=1e-6 if dtype == np.float32 else 1e-13)
    g = np.random.default_rng(5).standard_normal(kernel.shape).astype(dtype)
    kernel, twin = _both(monkeypatch, pool.avg_pool_backward, g, windows, divisor, spatial)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel, twin, **tol)
    if kind == "adaptive":  # each input in some window: the shares sum to the g total
        np.testing.assert_allclose(kernel.sum(), g.sum(dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("planes", [3, 2400])  # one thread; numba's threads
def test_max_pool_argmax_kernel_matches_twin_wide_windows(monkeypatch, planes, dtype):
    """Columns first: a column's maximum, first position and last NaN over 4 rows, then
    the span of 5 (dilated) columns: ties, NaN and -inf as the twin (torch's scan)."""
    windows = max_windows((12, 14), (9, 6), (4, 3), (1, 2), (1, 1), (1, 2))
    x = _data((planes, 12, 14), dtype, 6)
    kernel, twin = _both(monkeypatch, pool.max_pool_argmax, x, windows)
    np.testing.assert_array_equal(kernel, twin)
