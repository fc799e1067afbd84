"""The special functions in float64 (no scipy): erfc, erfcx, erfinv, lgamma, digamma, the
Hurwitz zeta, polygamma, ndtri, log_ndtr and the modified Bessel functions.

erfinv, ndtri, lgamma and digamma run a numba kernel (``kernels/_numba_special.py``: the
same formulas one element at a time, only the branch the element needs) unless
``TINYATTN_KERNELS=numpy``; then, and as the reference the kernel is tested against, their
NumPy twins below run (``TWINS``). The NumPy functions are vectorised: branches are
``np.where`` over whole arrays (each branch evaluated on clipped inputs so it cannot warn),
series are loops with a fixed number of terms. All take and return float64 arrays; the Functions in ``special.py`` cast to the
input dtype.

Methods (standard numerical analysis, written for this module):

- ``erfc``: ``1 - erf(x)`` for ``|x| < 2`` (relative error < 3e-14 there, erf from libm);
  for ``x >= 2`` ``exp(-x^2) * erfcx(x)`` with ``erfcx`` from the continued fraction
  ``1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))))``, and ``exp(-x^2)``
  from ``x = h + d`` (``h`` a multiple of 1/64, so ``h^2`` is exact); ``2 - erfc(-x)`` below -2.
- ``erfinv``: a starting value (``sqrt(pi)/2 (x + pi x^3 / 12)`` for ``|x| <= 1/2``, else
  Winitzki's closed form), then three Halley steps on ``erf(y) = x`` (``erfc(y) = 1 - |x|``
  in the tails, with ``1 - |x|`` exact there), each tripling the correct digits.
- ``lgamma``: Taylor series of ``lgamma(1 + z)`` and ``lgamma(2 + z)`` (coefficients from
  zeta(k)) on [0.5, 2.5); the downward recurrence ``Gamma(x) = (x-1) ... (x-m) Gamma(x-m)``
  into [1.5, 2.5) below 10; Stirling's series from 10; reflection below 0.5.
- ``digamma``: the recurrence up to x >= 10, then the asymptotic series; reflection below 0.
- ``zeta(s, q)`` (Hurwitz): direct terms until ``q + N >= 9 + s``, then Euler-Maclaurin
  with 12 Bernoulli terms; ``polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)``.
- Bessel ``I0, I1``: the power series below 30, the asymptotic expansion of
  ``I_nu(x) e^-x`` from 30 on.
"""

from __future__ import annotations

import math

import numpy as np

SQRT_PI = math.sqrt(math.pi)
LOG_2PI_HALF = 0.5 * math.log(2 * math.pi)
EULER_GAMMA = 0.57721566490153286061
# Bernoulli numbers B_2, B_4, ..., B_26 (exact rationals as floats)
BERNOULLI = np.array(
    [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
     -174611 / 330, 854513 / 138, -236364091 / 2730, 8553103 / 6]
)  # fmt: skip


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def sinpi(x: np.ndarray) -> np.ndarray:
    """``sin(pi x)`` with the argument reduced exactly (0 at every integer)."""
    n = np.round(x)
    r = x - n  # exact
    sign = np.where(np.remainder(n, 2) == 0, 1.0, -1.0)
    return sign * np.sin(np.pi * r)


def tanpi(x: np.ndarray) -> np.ndarray:
    """``tan(pi x)`` with the argument reduced exactly (period 1)."""
    return np.tan(np.pi * (x - np.round(x)))


# -- erfc, erfcx, erfinv ------------------------------------------------------------------
def _erf(x: np.ndarray) -> np.ndarray:
    from ..elementwise.unary import _erf as erf_libm

    return erf_libm(x)


def _exp_neg_square(x: np.ndarray) -> np.ndarray:
    """``exp(-x^2)`` without the rounding of ``x^2`` (``x = h + d``, ``h^2`` exact)."""
    x = np.minimum(x, 40.0)  # exp(-1600) is 0 already
    h = np.round(x * 64.0) / 64.0
    d = x - h
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(-h * h) * np.exp(-d * (x + h))


def _erfcx_cf(x: np.ndarray, terms: int = 60) -> np.ndarray:
    """``erfcx(x) = exp(x^2) erfc(x)`` for ``x >= 2`` by the continued fraction (bottom up)."""
    x = np.maximum(x, 2.0)
    tail = x.copy()
    for k in range(terms, 0, -1):
        tail = x + (k / 2.0) / tail
    return np.where(np.isinf(x), 0.0, 1.0 / (SQRT_PI * tail))


def erfcx(x) -> np.ndarray:
    """``exp(x^2) erfc(x)`` (scaled complementary error function)."""
    x = _f64(x)
    small = np.clip(x, -2.0, 2.0)
    out = np.array(np.exp(small * small) * (1.0 - _erf(small)))  # |x| < 2
    tails = ~(np.abs(x) < 2.0)  # (the continued fraction only where it is used; NaN too)
    xt = x[tails]
    far = _erfcx_cf(np.abs(xt))
    with np.errstate(over="ignore", divide="ignore"):
        # x < -2: exp(x^2) (2 - erfc(|x|)) = 2 exp(x^2) - erfcx(|x|)
        negative = 2.0 / _exp_neg_square(np.maximum(-xt, 2.0)) - far
    out[tails] = np.where(xt > 0, far, negative)
    return out


def erfc(x) -> np.ndarray:
    """``1 - erf(x)``, accurate to a few ulps also where it is tiny (x up to 27)."""
    x = _f64(x)
    out = np.array(1.0 - _erf(np.clip(x, -2.0, 2.0)))  # |x| < 2
    tails = ~(np.abs(x) < 2.0)  # (the continued fraction only where it is used; NaN too)
    xt = x[tails]
    a = np.abs(xt)
    tail = _exp_neg_square(np.maximum(a, 2.0)) * _erfcx_cf(a)
    out[tails] = np.where(xt > 0, tail, 2.0 - tail)
    return out


def _erfinv_parts(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``y >= 0`` with ``erf(y) = a``, ``0 <= a <= 1`` and ``c = 1 - a`` (exact where a > 1/2)."""
    a, c = np.broadcast_arrays(a, c)
    y = np.empty(a.shape)
    small = a <= 0.5  # (each branch runs on its own elements only)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # starting values: the Taylor series at 0, Winitzki's formula in the tails;
        # then Halley: y -= u / (1 + y u), u = F / F'
        a_small = a[small]
        y_small = 0.5 * SQRT_PI * a_small * (1.0 + np.pi / 12.0 * a_small * a_small)
        for _ in range(3):
            ys = np.where(np.isfinite(y_small), y_small, 0.0)
            u = 0.5 * SQRT_PI * np.exp(ys * ys) * (_erf(ys) - a_small)
            y_small = y_small - u / (1.0 + y_small * u)
        y[small] = y_small
        tail = ~small
        log_c = np.log(c[tail])
        ln = log_c + np.log(2.0 - c[tail])  # log(1 - a^2)
        b = 2.0 / (np.pi * 0.147) + 0.5 * ln
        y_tail = np.sqrt(np.sqrt(b * b - ln / 0.147) - b)
        for _ in range(3):
            ys = np.where(np.isfinite(y_tail), y_tail, 0.0)
            u = 0.5 * SQRT_PI * (np.exp(ys * ys + log_c) - erfcx(ys))
            y_tail = y_tail - u / (1.0 + y_tail * u)
        y[tail] = y_tail
    y = np.where(c == 0, np.inf, y)
    return np.where((a > 1) | np.isnan(a), np.nan, y)


def erfinv(x) -> np.ndarray:
    """The inverse of erf on [-1, 1] (±inf at ±1, NaN outside)."""
    x = _f64(x)
    a = np.abs(x)
    return np.copysign(_erfinv_parts(a, 1.0 - a), x)


def ndtri(p) -> np.ndarray:
    """The inverse of the standard normal CDF: ``sqrt(2) erfinv(2p - 1)`` (tails via erfc)."""
    p = _f64(p)
    low = p < 0.5
    a = np.where(low, 1.0 - 2.0 * p, 2.0 * p - 1.0)  # exact for p in [1/4, 1]
    c = np.where(low, 2.0 * p, 2.0 * (1.0 - p))
    y = _erfinv_parts(a, c)
    out = math.sqrt(2.0) * np.where(low, -y, y)
    return np.where((p < 0) | (p > 1), np.nan, out)


def log_ndtr(x) -> np.ndarray:
    """``log(Phi(x))``: ``log1p(-Phi(-x))`` for x > 0, ``log(erfcx(t) / 2) - t^2`` below."""
    x = _f64(x)
    t = -x * (1.0 / math.sqrt(2.0))
    out = np.empty(x.shape)
    pos = x > 0  # (each branch runs on its own elements only)
    out[pos] = np.log1p(-0.5 * erfc(-t[pos]))
    neg, xn = ~pos, x[~pos]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        below = np.log(0.5 * erfcx(np.maximum(t[neg], 0.0))) - 0.5 * xn * xn
    out[neg] = np.where(np.isneginf(xn), -np.inf, below)
    return out


# -- gamma family -------------------------------------------------------------------------
_SERIES: dict[str, np.ndarray] = {}


def _lgamma_series() -> tuple[np.ndarray, np.ndarray]:
    """Taylor coefficients (constant term first) of lgamma(1 + z) and lgamma(2 + z)."""
    if not _SERIES:
        k = np.arange(2, 60, dtype=np.float64)
        zeta_minus_1 = zeta(k, np.full_like(k, 2.0))  # zeta(k) - 1, without the cancellation
        sign = (-1.0) ** k
        _SERIES["at1"] = np.concatenate([[0.0, -EULER_GAMMA], sign * (zeta_minus_1 + 1.0) / k])
        _SERIES["at2"] = np.concatenate([[0.0, 1.0 - EULER_GAMMA], sign * zeta_minus_1 / k])
    return _SERIES["at1"], _SERIES["at2"]


def _horner(coeffs: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``sum_k coeffs[k] z^k`` (constant term first)."""
    out = np.zeros_like(z)
    for c in coeffs[::-1]:
        out = out * z + c
    return out


def _lgamma_positive(x: np.ndarray) -> np.ndarray:
    """log Gamma(x) for x >= 0.5 (inf stays inf)."""
    at1, at2 = _lgamma_series()
    xs = np.minimum(x, 10.0)
    # downward recurrence into [1.5, 2.5): Gamma(x) = prod(x - 1 ... x - m) Gamma(x - m)
    prod, z = np.ones_like(xs), xs.copy()
    for _ in range(9):
        step = z >= 2.5
        z = np.where(step, z - 1.0, z)
        prod = np.where(step, prod * z, prod)
    low = np.where(z < 1.5, _horner(at1, z - 1.0), _horner(at2, z - 2.0))
    mid = low + np.log(prod)
    xb = np.maximum(x, 10.0)
    inv, inv2 = 1.0 / xb, 1.0 / (xb * xb)
    k = np.arange(1, 9)
    corr = _horner(BERNOULLI[:8] / (2 * k * (2 * k - 1)), inv2) * inv
    with np.errstate(over="ignore", invalid="ignore"):
        big = (xb - 0.5) * np.log(xb) - xb + LOG_2PI_HALF + corr
    return np.where(x < 10.0, mid, np.where(np.isinf(x), np.inf, big))


def lgamma(x) -> np.ndarray:
    """``log|Gamma(x)|``: +inf at 0, the negative integers and ±inf, as torch."""
    x = _f64(x)
    refl = x < 0.5
    pos = _lgamma_positive(np.where(refl, 1.0 - np.where(np.isfinite(x), x, 0.0), x))
    with np.errstate(divide="ignore"):
        reflected = np.log(np.pi / np.abs(sinpi(np.where(np.isfinite(x), x, 0.5)))) - pos
    pole = (x == np.round(x)) & refl | np.isinf(x)
    out = np.where(refl, reflected, pos)
    return np.where(pole, np.inf, out)


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    """psi(x) for x > 0: recurrence to x >= 10, then the asymptotic series."""
    acc, z = np.zeros_like(x), x.copy()
    for _ in range(10):
        step = z < 10.0
        acc = np.where(step, acc + 1.0 / np.where(step, z, 1.0), acc)
        z = np.where(step, z + 1.0, z)
    inv2 = 1.0 / (z * z)
    k = np.arange(1, 9)
    series = _horner(BERNOULLI[:8] / (2 * k), inv2) * inv2
    out = np.log(z) - 0.5 / z - series - acc
    return np.where(np.isposinf(x), np.inf, out)


def digamma(x) -> np.ndarray:
    """``psi(x) = Gamma'(x) / Gamma(x)``: -inf at +0, +inf at -0, NaN at negative integers."""
    x = _f64(x)
    neg = x < 0
    xf = np.where(np.isfinite(x), x, 1.0)
    with np.errstate(divide="ignore"):
        reflected = _digamma_positive(np.where(neg, 1.0 - xf, 1.0)) - np.pi / tanpi(xf)
    out = np.where(neg, reflected, _digamma_positive(np.where(x > 0, x, 1.0)))
    out = np.where(x > 0, np.where(np.isposinf(x), np.inf, out), out)
    out = np.where(x == 0, np.where(np.signbit(x), np.inf, -np.inf), out)
    return np.where(neg & ((x == np.round(x)) | np.isinf(x)) | np.isnan(x), np.nan, out)


def zeta(s, q) -> np.ndarray:
    """The Hurwitz zeta function ``sum_k (k + q)^-s`` (s > 1; torch's NaN/inf conventions)."""
    s, q = np.broadcast_arrays(_f64(s), _f64(q))
    shape, s, q = s.shape, s.ravel(), q.ravel()
    bad_q = (q <= 0) & (q == np.floor(q))  # a pole term (q + k = 0): inf
    no_real = (q < 0) & (s != np.floor(s))  # (q + k)^-s not real: NaN
    ok = ~(bad_q | no_real | np.isnan(s) | np.isnan(q) | (s < 1))
    s1, q1 = np.where(ok, s, 2.0), np.where(ok & np.isfinite(q), q, 1.0)
    target = 9.0 + np.minimum(s1, 200.0)  # Euler-Maclaurin is accurate from here on
    n = np.ceil(np.maximum(target - q1, 0.0)).astype(np.int64)
    direct = np.zeros_like(q1)
    active = np.flatnonzero(n > 0)
    k = 0
    while active.size:
        with np.errstate(divide="ignore", over="ignore"):
            direct[active] += np.power(q1[active] + k, -s1[active])
        k += 1
        active = active[n[active] > k]
    a = q1 + n
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        tail = a ** (1.0 - s1) / (s1 - 1.0) + 0.5 * a ** (-s1)
        term = s1 * a ** (-s1 - 1.0)  # s (s+1) ... (s + 2j - 2) a^(-s-2j+1) / (2j)!
        fact = 2.0
        for j in range(1, 14):
            tail = tail + BERNOULLI[j - 1] / fact * term
            term = term * (s1 + 2 * j - 1) * (s1 + 2 * j) / (a * a)
            fact *= (2 * j + 1) * (2 * j + 2)
    out = np.where(s1 == 1.0, np.inf, direct + tail)
    out = np.where(np.isposinf(q), np.nan, out)  # (torch's zeta(s, +inf) is NaN)
    out = np.where(bad_q & ~np.isnan(s), np.inf, out)
    out = np.where(no_real | np.isnan(s) | np.isnan(q) | (s < 1), np.nan, out)
    return out.reshape(shape)


def polygamma(n: int, x) -> np.ndarray:
    """``psi^(n)(x)``, the n-th derivative of digamma (n >= 0)."""
    x = _f64(x)
    if n == 0:
        return digamma(x)
    out = (-1.0) ** (n + 1) * math.factorial(n) * zeta(float(n + 1), x)
    if n == 1:  # reflection below 1/2 (as torch's trigamma): psi1(1-x) + psi1(x) = pi^2/sin^2
        out = np.array(out)  # (written in place below; 0-d stays an array)
        low = x < 0.5  # (only there: zeta at 1 - x needs many direct terms for large x)
        xf = np.where(np.isfinite(x[low]), x[low], 0.5)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            reflected = (np.pi / np.sin(np.pi * xf)) ** 2 - zeta(2.0, 1.0 - xf)
        out[low] = np.where(np.isneginf(x[low]), np.nan, reflected)
        out = np.where(np.isposinf(x), 0.0, out)
    return out


# -- modified Bessel functions I0, I1 -----------------------------------------------------
def _bessel_ie(nu: int, x: np.ndarray) -> np.ndarray:
    """``I_nu(x) exp(-x)`` for x >= 0 (nu = 0 or 1)."""
    small = np.minimum(x, 30.0)
    quarter = small * small / 4.0
    term = np.ones_like(small) if nu == 0 else small / 2.0
    total = term.copy()
    for k in range(1, 70):
        term = term * quarter / (k * (k + nu))
        total = total + term
    series = total * np.exp(-small)
    big = np.maximum(x, 30.0)
    mu = 4.0 * nu * nu
    term, total = np.ones_like(big), np.ones_like(big)
    for k in range(1, 26):
        term = term * ((2 * k - 1) ** 2 - mu) / (8.0 * k * big)
        total = total + term
    asym = total / math.sqrt(2.0 * np.pi) / np.sqrt(big)
    return np.where(x < 30.0, series, np.where(np.isinf(x), 0.0, asym))


def i0e(x) -> np.ndarray:
    """``exp(-|x|) I0(x)``."""
    return _bessel_ie(0, np.abs(_f64(x)))


def i1e(x) -> np.ndarray:
    """``exp(-|x|) I1(x)`` (odd)."""
    x = _f64(x)
    return np.copysign(_bessel_ie(1, np.abs(x)), x)


def i0(x) -> np.ndarray:
    """The modified Bessel function of the first kind, order 0."""
    a = np.abs(_f64(x))
    with np.errstate(over="ignore", invalid="ignore"):
        out = _bessel_ie(0, a) * np.exp(np.minimum(a, 800.0))
    return np.where(np.isinf(a), np.nan, out)  # (torch's i0(±inf) is NaN)


def i1(x) -> np.ndarray:
    """The modified Bessel function of the first kind, order 1 (odd)."""
    x = _f64(x)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _bessel_ie(1, a) * np.exp(np.minimum(a, 800.0))
    return np.copysign(np.where(np.isinf(a), np.nan, out), x)  # (NaN at ±inf, as torch)


# -- erfinv, ndtri, lgamma, digamma: the numba kernel, or the twins above -------------------
TWINS = {f.__name__: f for f in (erfinv, ndtri, lgamma, digamma)}
# the numbering of ``kernels._numba_special.unary`` (its NAMES; numba is not imported here)
KERNEL_NAMES = ("erfinv", "ndtri", "lgamma", "digamma")


def _use_kernels() -> bool:
    from ...kernels import backend

    return backend() != "numpy"


def _tables() -> tuple[np.ndarray, ...]:
    """The coefficient arrays of the twins: lgamma's Taylor series at 1 and 2, its Stirling
    correction, digamma's asymptotic series."""
    at1, at2 = _lgamma_series()
    k = np.arange(1, 9)
    return at1, at2, BERNOULLI[:8] / (2 * k * (2 * k - 1)), BERNOULLI[:8] / (2 * k)


def _elementwise(name: str):
    twin, which = TWINS[name], KERNEL_NAMES.index(name)

    def run(x) -> np.ndarray:
        if not _use_kernels():
            return twin(x)
        from ...kernels._numba_special import unary
        from ...kernels._threads import launch_sized
        from ...kernels.gelu_layer_norm import PARALLEL_MIN

        x = _f64(x)
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty(flat.size)
        launch_sized(unary, flat.size, PARALLEL_MIN, which, flat, out, *_tables())
        return out.reshape(x.shape)

    run.__name__, run.__doc__ = name, twin.__doc__
    return run


erfinv, ndtri, lgamma, digamma = (_elementwise(n) for n in KERNEL_NAMES)
