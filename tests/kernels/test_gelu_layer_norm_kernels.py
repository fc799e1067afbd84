"""The numba GELU and LayerNorm kernels against their NumPy twins (the formulas of
``nn.functional.Gelu`` / ``LayerNormFunction`` under ``TINYATTN_KERNELS=numpy``)."""

import math

import numpy as np
import pytest

pytest.importorskip("numba")

from harness import check_op, torch
from numba import njit

import tinyattn
import tinyattn.nn.functional as F
from tinyattn.kernels import _numba_gelu, _numba_layer_norm
from tinyattn.kernels import gelu_layer_norm as kernels

TOL = {np.float32: 2e-6, np.float64: 1e-13}


def _run(monkeypatch, backend, f, arrays, g):
    """f(*tensors) forward and backward(g) under ``backend``: (y, grads)."""
    monkeypatch.setenv("TINYATTN_KERNELS", backend)
    ts = [None if a is None else tinyattn.tensor(a, requires_grad=True) for a in arrays]
    y = f(*ts)
    y.backward(tinyattn.tensor(g))
    return y.detach().numpy(), [None if t is None else t.grad.numpy() for t in ts]


def _agree(ours, twin, dtype, scale=1.0):
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(ours, twin, rtol=tol, atol=tol, equal_nan=True)
    assert ours.dtype == twin.dtype == dtype and ours.shape == twin.shape


# -- GELU -------------------------------------------------------------------------------------

GELU_SHAPES = [(), (1,), (1, 1), (3, 7), (2, 5, 9), (3 * _numba_gelu.CHUNK + 5,)]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the twin on inf * 0
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", GELU_SHAPES)
def test_gelu_kernel_matches_twin(monkeypatch, dtype, approximate, shape):
    rng = np.random.default_rng(len(shape) + sum(shape))
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    flat = x.reshape(-1)
    specials = [0.0, -0.0, 4 * math.sqrt(2), -4 * math.sqrt(2), 30.0, -30.0, 1e-30, -1e-30]
    specials += [np.inf, -np.inf, np.nan, 1e30, -1e30]
    flat[: len(specials)] = specials[: flat.size]
    g = rng.standard_normal(shape).astype(dtype)

    def f(t):
        return F.gelu(t, approximate=approximate)

    y, (dx,) = _run(monkeypatch, "numba", f, [x], g)
    y_twin, (dx_twin,) = _run(monkeypatch, "numpy", f, [x], g)
    _agree(y, y_twin, dtype)
    _agree(dx, dx_twin, dtype)
    assert np.array_equal(np.isnan(y), np.isnan(y_twin))  # NaN exactly where the twin has it
    assert np.array_equal(np.isnan(dx), np.isnan(dx_twin))


def test_gelu_kernel_takes_strided_input():
    x = np.random.default_rng(0).standard_normal((40, 30)).astype(np.float32)
    strided = x.T[::2]
    np.testing.assert_array_equal(kernels.gelu(strided), kernels.gelu(x.T.copy()[::2]))
    g = np.ones_like(strided)
    np.testing.assert_array_equal(
        kernels.gelu_backward(g, strided, "tanh"), kernels.gelu_backward(g, strided.copy(), "tanh")
    )


@njit
def _erf_on(z):
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = _numba_gelu._erf_approx(z[i])
    return out


@njit
def _exp_neg_on(z):
    out = np.empty_like(z)
    for i in range(z.shape[0]):
        out[i] = _numba_gelu._exp_neg_approx(z[i])
    return out


def test_float32_approximations_are_far_below_float32_rounding():
    z = np.linspace(-6.0, 6.0, 200_001)
    exact = np.array([math.erf(v) for v in z])
    error = np.abs(_erf_on(z) - exact)
    assert np.max(error[np.abs(z) <= 4]) < 2e-9
    assert np.max(error) < 2e-8  # +-1 beyond 4: 1 - erf(4) = 1.5e-8, half a float32 ulp at 1
    w = np.linspace(0.0, 104.0, 200_001)
    assert np.max(np.abs(_exp_neg_on(w) / np.exp(-w) - 1.0)) < 4e-10
    assert _exp_neg_on(np.array([104.5, np.inf]))[0] == 0.0
    assert np.isnan(_exp_neg_on(np.array([np.nan]))[0])


def _spy_on_kernels(monkeypatch, *names: str) -> list[str]:
    """Record the names of the kernel entry points called (and force the numba backend)."""
    calls: list[str] = []
    for name in names:
        real = getattr(kernels, name)
        monkeypatch.setattr(
            kernels, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a)
        )
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    return calls


def test_gelu_parity_with_torch_runs_the_kernel(monkeypatch):
    """The float32 torch parity of check_op goes through the kernels (no size threshold)."""
    calls = _spy_on_kernels(monkeypatch, "gelu", "gelu_backward")
    x = np.random.default_rng(3).uniform(-5, 5, (4, 33))
    check_op(lambda T, x: T.nn.functional.gelu(x, approximate="tanh"), x)
    check_op(lambda T, x: T.nn.functional.gelu(x), x)
    assert "gelu" in calls and "gelu_backward" in calls


# -- LayerNorm ----------------------------------------------------------------------------------

LN_CASES = [  # (shape, k)
    ((1, 1), 1),
    ((1, 5), 1),
    ((3, 7), 1),
    ((2, 3, 5), 2),
    ((5,), 1),
    ((2 * _numba_layer_norm.ROWS_PER_BLOCK + 3, 33), 1),  # several row blocks, one partial
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k", LN_CASES)
@pytest.mark.parametrize("affine", ["weight+bias", "weight", "none"])
@pytest.mark.parametrize("transposed", [False, True])
def test_layer_norm_kernel_matches_twin(monkeypatch, dtype, shape, k, affine, transposed):
    rng = np.random.default_rng(shape[0] * 7 + k)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    normalized = shape[len(shape) - k :]
    w = rng.standard_normal(normalized).astype(dtype) if affine != "none" else None
    b = rng.standard_normal(normalized).astype(dtype) if affine == "weight+bias" else None
    g = rng.standard_normal(shape).astype(dtype)
    if transposed and len(shape) >= 2:  # a strided view of x reaches the op
        x, g = np.ascontiguousarray(x.swapaxes(0, 1)), g

        def f(x, w, b):
            return F.layer_norm(x.transpose(0, 1), normalized, w, b)
    else:

        def f(x, w, b):
            return F.layer_norm(x, normalized, w, b)

    y, grads = _run(monkeypatch, "numba", f, [x, w, b], g)
    y_twin, grads_twin = _run(monkeypatch, "numpy", f, [x, w, b], g)
    _agree(y, y_twin, dtype, scale=5)
    for ours, twin in zip(grads, grads_twin):
        if twin is not None:  # dweight, dbias: sums over rows
            _agree(ours, twin, dtype, scale=10 * math.sqrt(shape[0]))


def test_layer_norm_kernel_propagates_nan_and_inf_like_twin(monkeypatch):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    x[1, 2], x[2, 0], x[3, 5] = np.nan, np.inf, -np.inf
    w, b = np.full(6, 0.5, np.float32), np.zeros(6, np.float32)
    g = np.ones_like(x)

    def f(x, w, b):
        return F.layer_norm(x, (6,), w, b)

    y, grads = _run(monkeypatch, "numba", f, [x, w, b], g)
    y_twin, grads_twin = _run(monkeypatch, "numpy", f, [x, w, b], g)
    assert np.all(np.isnan(y[1:])) and np.all(np.isfinite(y[0]))
    np.testing.assert_allclose(y, y_twin, rtol=1e-5, atol=1e-5, equal_nan=True)
    for ours, twin in zip(grads, grads_twin):
        np.testing.assert_allclose(ours, twin, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_parallel_launch_equals_serial_twin(monkeypatch):
    """Through the parallel kernels (PARALLEL_MIN = 0) or their serial twins on the calling
    thread, every result is the same, bit for bit: elements and rows are computed alike,
    dweight/dbias summed in fixed row blocks."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((600, 64)).astype(np.float32)  # GELU: 3 blocks of CHUNK elements
    g = rng.standard_normal((600, 64)).astype(np.float32)
    w = rng.standard_normal(64).astype(np.float32)
    assert x.size > 2 * _numba_gelu.CHUNK

    def everything():
        y, mean, rstd = kernels.layer_norm(x, w, None, 1, 1e-5)
        grads = kernels.layer_norm_backward(g, x, w, mean, rstd, 1)
        gelus = [kernels.gelu(x, a) for a in ("none", "tanh")]
        gelus += [kernels.gelu_backward(g, x, a) for a in ("none", "tanh")]
        return [y, mean, rstd, *grads, *gelus]

    monkeypatch.setattr(kernels, "PARALLEL_MIN", 1 << 60)
    one = everything()
    monkeypatch.setattr(kernels, "PARALLEL_MIN", 0)
    many = everything()
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def test_layer_norm_parity_with_torch_runs_the_kernel(monkeypatch):
    calls = _spy_on_kernels(monkeypatch, "layer_norm", "layer_norm_backward")
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((5, 3, 8)), rng.standard_normal(8), rng.standard_normal(8)
    check_op(lambda T, x, w, b: T.nn.functional.layer_norm(x, (8,), w, b), x, w, b)
    assert "layer_norm" in calls and "layer_norm_backward" in calls


# -- the boundary -------------------------------------------------------------------------------


def test_fits_only_float32_float64_of_one_dtype(monkeypatch):
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    x32, x64 = np.ones(3, np.float32), np.ones(3)
    assert kernels.fits(x32) and kernels.fits(x64, x64, None)
    assert not kernels.fits(x32, x64)
    assert not kernels.fits(np.ones(3, np.float16))
    assert not kernels.fits(np.ones(0, np.float32))
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    assert not kernels.fits(x32)


def test_bad_input_names_the_argument():
    x = np.ones((2, 4), np.float32)
    with pytest.raises(ValueError, match=r"x: expected a non-empty float32 or float64.*int64"):
        kernels.gelu(np.ones((2, 4), np.int64))
    with pytest.raises(ValueError, match=r"g: expected a float32 array of shape \(2, 4\)"):
        kernels.gelu_backward(np.ones((2, 3), np.float32), x)
    with pytest.raises(ValueError, match="approximate"):
        kernels.gelu(x, "fast")
    with pytest.raises(ValueError, match=r"weight: expected a float32 array of shape \(4,\)"):
        kernels.layer_norm(x, np.ones(3, np.float32), None, 1, 1e-5)
    with pytest.raises(ValueError, match=r"bias: expected a float32.*float64"):
        kernels.layer_norm(x, None, np.ones(4), 1, 1e-5)
    with pytest.raises(ValueError, match="k: expected 1 <= k <= x.ndim = 2"):
        kernels.layer_norm(x, None, None, 3, 1e-5)
    _, mean, rstd = kernels.layer_norm(x, None, None, 1, 1e-5)
    with pytest.raises(ValueError, match=r"rstd: expected a float32 array of shape \(2, 1\)"):
        kernels.layer_norm_backward(x, x, None, mean, rstd.reshape(2), 1)


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_large_float32_matches_torch():
    """The GPT benchmark's size: float32 kernels against torch at the harness's tolerance."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 64, 256)).astype(np.float32) * 3
    g = rng.standard_normal(x.shape).astype(np.float32)
    w, b = rng.standard_normal(256).astype(np.float32), rng.standard_normal(256).astype(np.float32)
    for approximate in ("none", "tanh"):
        xt = torch.tensor(x, requires_grad=True)
        torch.nn.functional.gelu(xt, approximate=approximate).backward(torch.tensor(g))
        np.testing.assert_allclose(
            kernels.gelu(x, approximate),
            torch.nn.functional.gelu(torch.tensor(x), approximate=approximate).numpy(),
            rtol=1e-5,
            atol=1e-5,
        )
        np.testing.assert_allclose(
            kernels.gelu_backward(g, x, approximate), xt.grad.numpy(), rtol=1e-5, atol=1e-5
        )
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    torch.nn.functional.layer_norm(xt, (256,), wt, bt).backward(torch.tensor(g))
    y, mean, rstd = kernels.layer_norm(x, w, b, 1, 1e-5)
    dx, dw, db = kernels.layer_norm_backward(g, x, w, mean, rstd, 1)
    y_t = torch.nn.functional.layer_norm(torch.tensor(x), (256,), torch.tensor(w), torch.tensor(b))
    np.testing.assert_allclose(y, y_t.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, wt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, bt.grad.numpy(), rtol=1e-4, atol=1e-4)
