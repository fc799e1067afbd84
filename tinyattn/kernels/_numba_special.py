"""erfinv, ndtri, lgamma and digamma one element at a time: a numba kernel parallel over
a flat array.

Each function here is the scalar form of its NumPy twin in ``tinyattn.ops._special_math``
(the methods, constants and series are described there): the same operations in the
same order, but only the branch an element needs is evaluated (the twins evaluate every
branch on the whole array and select with ``np.where``). Results agree with the twins to
a few ulps (libm's ``exp``/``log`` against NumPy's vectorised ones), which
``tests/ops/special/test_special_kernels.py`` checks. The other special functions stay NumPy:
their series (erfcx's continued fraction, the Bessel and zeta series) are long chains of
dependent divisions per element, which NumPy's vectorised loops run faster across elements
(2026-11-23, 100,000 elements: erfcx's 60-term fraction 11.7 ms as a numba loop, not
vectorised by LLVM, against 4.1 ms in NumPy; i0 66 ms against 31 ms).

The kernels check nothing: ``_special_math`` passes C-contiguous float64 arrays of equal
size and the coefficient tables. Each ``prange`` iteration writes ``out[i]`` only;
nothing is allocated inside the loops.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._jit import njit

SQRT_PI = math.sqrt(math.pi)
LOG_2PI_HALF = 0.5 * math.log(2 * math.pi)
SQRT2 = math.sqrt(2.0)
# which function ``unary`` computes
ERFINV, NDTRI, LGAMMA, DIGAMMA = range(4)
NAMES = ("erfinv", "ndtri", "lgamma", "digamma")


@njit(cache=True)
def _horner(coeffs, z):
    out = 0.0
    for i in range(coeffs.size - 1, -1, -1):
        out = out * z + coeffs[i]
    return out


@njit(cache=True)
def _exp_neg_square(x):
    x = min(x, 40.0)
    h = np.rint(x * 64.0) / 64.0
    d = x - h
    return math.exp(-h * h) * math.exp(-d * (x + h))


@njit(cache=True)
def _erfcx_cf(x):
    x = max(x, 2.0)
    tail = x
    for k in range(60, 0, -1):
        tail = x + (k / 2.0) / tail
    return 0.0 if math.isinf(x) else 1.0 / (SQRT_PI * tail)


@njit(cache=True)
def _erfcx(x):
    if abs(x) < 2.0:
        return math.exp(x * x) * (1.0 - math.erf(x))
    far = _erfcx_cf(abs(x))
    if x > 0:
        return far
    return 2.0 / _exp_neg_square(max(-x, 2.0)) - far


@njit(cache=True)
def _erfinv_parts(a, c):
    """y >= 0 with erf(y) = a, c = 1 - a (exact in the tails)."""
    if a > 1 or a != a:
        return math.nan
    if c == 0:
        return math.inf
    small = a <= 0.5
    log_c = math.log(c)
    if small:
        y = 0.5 * SQRT_PI * a * (1.0 + np.pi / 12.0 * a * a)
    else:
        ln = log_c + math.log(2.0 - c)
        b = 2.0 / (np.pi * 0.147) + 0.5 * ln
        y = math.sqrt(math.sqrt(b * b - ln / 0.147) - b)
    for _ in range(3):
        ys = y if math.isfinite(y) else 0.0
        if small:
            u = 0.5 * SQRT_PI * math.exp(ys * ys) * (math.erf(ys) - a)
        else:
            u = 0.5 * SQRT_PI * (math.exp(ys * ys + log_c) - _erfcx(ys))
        y = y - u / (1.0 + y * u)
    return y


@njit(cache=True)
def _ndtri(p):
    low = p < 0.5
    a = 1.0 - 2.0 * p if low else 2.0 * p - 1.0
    c = 2.0 * p if low else 2.0 * (1.0 - p)
    y = _erfinv_parts(a, c)
    out = SQRT2 * (-y if low else y)
    return math.nan if p < 0 or p > 1 else out


@njit(cache=True)
def _lgamma_positive(x, at1, at2, stirling):
    if x >= 10.0:
        if math.isinf(x):
            return math.inf
        inv, inv2 = 1.0 / x, 1.0 / (x * x)
        corr = _horner(stirling, inv2) * inv
        return (x - 0.5) * math.log(x) - x + LOG_2PI_HALF + corr
    prod, z = 1.0, x
    for _ in range(9):
        if z >= 2.5:
            z = z - 1.0
            prod = prod * z
    low = _horner(at1, z - 1.0) if z < 1.5 else _horner(at2, z - 2.0)
    return low + math.log(prod)


@njit(cache=True)
def _sinpi(x):
    n = np.rint(x)
    sign = 1.0 if n % 2.0 == 0 else -1.0
    return sign * math.sin(np.pi * (x - n))


@njit(cache=True)
def _lgamma(x, at1, at2, stirling):
    if math.isinf(x):
        return math.inf
    if x >= 0.5:
        return _lgamma_positive(x, at1, at2, stirling)
    if x == np.rint(x):
        return math.inf
    pos = _lgamma_positive(1.0 - x, at1, at2, stirling)
    return math.log(np.pi / abs(_sinpi(x))) - pos


@njit(cache=True)
def _digamma_positive(x, psi):
    if x == math.inf:
        return math.inf
    acc, z = 0.0, x
    for _ in range(10):
        if z < 10.0:
            acc = acc + 1.0 / z
            z = z + 1.0
    inv2 = 1.0 / (z * z)
    series = _horner(psi, inv2) * inv2
    return math.log(z) - 0.5 / z - series - acc


@njit(cache=True)
def _digamma(x, psi):
    if x > 0:
        return _digamma_positive(x, psi)
    if x == 0:
        return math.inf if math.copysign(1.0, x) < 0 else -math.inf
    if math.isinf(x) or x == np.rint(x):
        return math.nan
    return _digamma_positive(1.0 - x, psi) - np.pi / math.tan(np.pi * (x - np.rint(x)))


@njit(cache=True)
def _unary(which, x, at1, at2, stirling, psi):
    if x != x:
        return x
    if which == ERFINV:
        a = abs(x)
        return math.copysign(_erfinv_parts(a, 1.0 - a), x)
    if which == NDTRI:
        return _ndtri(x)
    if which == LGAMMA:
        return _lgamma(x, at1, at2, stirling)
    return _digamma(x, psi)


@njit(parallel=True, cache=True, error_model="numpy")
def unary(which, x, out, at1, at2, stirling, psi):
    """out[i] = f(x[i]) for the function numbered ``which`` (see ``NAMES``)."""
    for i in prange(x.size):
        out[i] = _unary(which, x[i], at1, at2, stirling, psi)
