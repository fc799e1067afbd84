"""GELU forward and backward, elementwise, parallel over blocks of the flattened array.

The NumPy twin is the formula of ``tinyattn.nn.functional.Gelu`` (its first-order
path with ``TINYATTN_KERNELS=numpy``, and the create_graph path);
``tests/kernels/test_gelu_layer_norm_kernels.py`` holds the kernels to it::

    'none'   y = x Phi(x),            dx = g (Phi(x) + x phi(x))
    'tanh'   t = tanh(sqrt(2/pi) (x + 0.044715 x^3)),   y = x (1 + t) / 2,
             dx = g ((1 + t) / 2 + x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2) / 2)

with ``Phi(x) = (1 + erf(x / sqrt 2)) / 2`` and ``phi(x) = exp(-x^2 / 2) / sqrt(2 pi)``.
Every element is computed in float64 and rounded once to the array's dtype, as the twin
does. float64 data uses libm's ``erf``, ``exp`` and ``tanh``. For float32 data those
calls would dominate (libm's erf: 8 ms per million numbers, tanh 17 ms; they do not
vectorise), so the float32 kernels use approximations that do, with absolute errors far
below float32's resolution (``benchmarks/fit_gelu_approximations.py`` re-derives them)::

    erf(z) ~ z P(z^2) / Q(z^2) for |z| <= 4, +-1 beyond       (error < 2e-9)
    exp(-z) = p(z / 64) ** 64 for 0 <= z <= 104, 0 beyond     (relative error < 4e-10)
    tanh(u) = sign(u) (1 - e) / (1 + e),  e = exp(-2 |u|)

Relative error is another matter in the far left tail, where GELU itself is tiny: erf is
-1 beyond |z| = 4, so x < -5.66 gives -0.0 for about -4e-8 (absolute error < 2.4e-7
everywhere; torch's float32 GELU is no closer there).

NaN stays NaN and the infinities give what the twin gives (e.g. ``gelu(-inf) = -inf * 0
= NaN``, as torch). Arrays are 1-D C-contiguous of one dtype, prepared and checked by
``tinyattn.kernels.gelu_layer_norm``; each ``prange`` iteration writes only its own
block of ``out`` (views, no allocation).
"""

from __future__ import annotations

import math

from numba import prange

from ._jit import njit
from ._numba_tiles import _prefer_wide_vectors

CHUNK = 16384  # elements per prange block

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715

_ERF_LIMIT = 4.0  # erf(4) = 1 - 1.5e-8: 1 in float32
_ERF_P = (
    1.1283791792404458,
    0.18471935036821693,
    0.05436677742129564,
    0.0038444026632115493,
    0.000384157436562942,
    4.818282602516029e-06,
    -1.3858476472010023e-08,
)
_ERF_Q = (
    1.0,
    0.497036789889254,
    0.11385928472594344,
    0.015468020687383796,
    0.0013125821288934776,
    6.437182802971952e-05,
)
_EXP_MAX = 104.0  # exp(-104) is below float32's smallest subnormal
_EXP_P = (
    0.999999999998799,
    -0.9999999998211494,
    0.4999999955853111,
    -0.16666662405276955,
    0.04166645505137042,
    -0.00833271779789205,
    0.001387766206565572,
    -0.00019708572271723532,
    2.3778231939703512e-05,
    -2.2504845402763573e-06,
    1.2397592120366182e-07,
)


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _horner(coefficients, s):
    """sum_i coefficients[i] s^i (lowest power first)."""
    acc = 0.0
    for i in range(len(coefficients) - 1, -1, -1):
        acc = acc * s + coefficients[i]
    return acc


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _erf_approx(z):
    s = z * z
    e = z * _horner(_ERF_P, s) / _horner(_ERF_Q, s)
    e = 1.0 if z >= _ERF_LIMIT else e
    return -1.0 if z <= -_ERF_LIMIT else e


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _exp_neg_approx(z):
    """exp(-z) for z >= 0 (NaN stays NaN)."""
    e = _horner(_EXP_P, z * (1.0 / 64.0))
    for _ in range(6):
        e = e * e
    return 0.0 if z > _EXP_MAX else e


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _tanh_approx(u):
    e = _exp_neg_approx(2.0 * abs(u))
    t = (1.0 - e) / (1.0 + e)
    return t if u >= 0.0 else -t


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _cdf(v, fast):
    """Phi(v) = (1 + erf(v / sqrt 2)) / 2, v float64."""
    return 0.5 * (1.0 + (_erf_approx(v * _SQRT1_2) if fast else math.erf(v * _SQRT1_2)))


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _pdf(v, fast):
    """phi(v) = exp(-v^2 / 2) / sqrt(2 pi), v float64."""
    return (_exp_neg_approx(0.5 * v * v) if fast else math.exp(-0.5 * v * v)) * _INV_SQRT_2PI


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _tanh_of(v, fast):
    """t(v) = tanh(sqrt(2/pi) (v + 0.044715 v^3))."""
    u = _SQRT_2_OVER_PI * (v + _GELU_C * v * v * v)
    return _tanh_approx(u) if fast else math.tanh(u)


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _forward_block(x, out, tanh, fast):
    _prefer_wide_vectors()
    if tanh:
        for i in range(x.shape[0]):
            v = float(x[i])
            out[i] = 0.5 * v * (1.0 + _tanh_of(v, fast))
    else:
        for i in range(x.shape[0]):
            v = float(x[i])
            out[i] = v * _cdf(v, fast)


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _backward_block(g, x, out, tanh, fast):
    _prefer_wide_vectors()
    # out[i] = dy/dx rounded to the dtype first, then times g in the dtype (as the twin)
    if tanh:
        for i in range(x.shape[0]):
            v = float(x[i])
            t = _tanh_of(v, fast)
            du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_C * v * v)
            out[i] = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du
            out[i] = g[i] * out[i]
    else:
        for i in range(x.shape[0]):
            v = float(x[i])
            out[i] = _cdf(v, fast) + v * _pdf(v, fast)
            out[i] = g[i] * out[i]


@njit(parallel=True, cache=True, error_model="numpy", fastmath={"contract"})
def gelu_forward(x, out, tanh, fast):
    """out = gelu(x); ``fast``: the float32 approximations instead of libm."""
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        lo, hi = c * CHUNK, min(c * CHUNK + CHUNK, n)
        if fast:  # a literal flag per call below: each loop is compiled for one case
            _forward_block(x[lo:hi], out[lo:hi], tanh, True)
        else:
            _forward_block(x[lo:hi], out[lo:hi], tanh, False)


@njit(parallel=True, cache=True, error_model="numpy", fastmath={"contract"})
def gelu_backward(g, x, out, tanh, fast):
    """out = g * dgelu/dx (x); ``fast`` as in ``gelu_forward``."""
    n = x.shape[0]
    for c in prange((n + CHUNK - 1) // CHUNK):
        lo, hi = c * CHUNK, min(c * CHUNK + CHUNK, n)
        if fast:
            _backward_block(g[lo:hi], x[lo:hi], out[lo:hi], tanh, True)
        else:
            _backward_block(g[lo:hi], x[lo:hi], out[lo:hi], tanh, False)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def gelu_forward_serial(x, out, tanh, fast):
    """``gelu_forward`` on the calling thread (a small array: no thread to wake)."""
    if fast:
        _forward_block(x, out, tanh, True)
    else:
        _forward_block(x, out, tanh, False)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def gelu_backward_serial(g, x, out, tanh, fast):
    """``gelu_backward`` on the calling thread."""
    if fast:
        _backward_block(g, x, out, tanh, True)
    else:
        _backward_block(g, x, out, tanh, False)
