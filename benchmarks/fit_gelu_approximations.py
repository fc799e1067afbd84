"""Re-derive the coefficients of the float32 GELU kernel's erf and exp approximations.

``tinyattn.kernels._numba_gelu`` evaluates, in float64 arithmetic for float32 data:

* ``erf(z) ~ z P(z^2) / Q(z^2)`` on ``|z| <= 4`` (``+-1`` beyond): a rational fit by
  linearised least squares (``z P - erf(z) Q = 0``, ``Q(0) = 1``) on Chebyshev nodes,
  reweighted by ``1 / Q`` a few times (Sanathanan-Koerner);
* ``exp(-w)`` on ``0 <= w <= 1.625``: Chebyshev interpolation of degree 10, turned into
  powers of ``w``; the kernel gets ``exp(-z) = exp(-z / 64) ** 64`` by six squarings.

Run ``python -m benchmarks.fit_gelu_approximations`` to print the coefficients and the
largest errors found on a dense grid (the kernel's own tests check the same bounds).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import Chebyshev, Polynomial

ERF_LIMIT = 4.0
EXP_RANGE = 104.0 / 64.0  # exp(-104) is below float32's smallest subnormal


def fit_erf(n_p: int = 7, n_q: int = 6, nodes: int = 4000, rounds: int = 20):
    """Coefficients (p, q) of ``erf(z) ~ z P(z^2) / Q(z^2)``, lowest power first."""
    k = np.arange(nodes)
    z = np.append(ERF_LIMIT * (1 - np.cos(np.pi * (k + 0.5) / nodes)) / 2, ERF_LIMIT)
    f = np.array([math.erf(v) for v in z])
    s = z * z
    weight = np.ones_like(z)
    for _ in range(rounds):
        a = np.concatenate(
            [
                z[:, None] * s[:, None] ** np.arange(n_p),
                -f[:, None] * s[:, None] ** np.arange(1, n_q),
            ],
            axis=1,
        )
        sol = np.linalg.lstsq(a * weight[:, None], f * weight, rcond=None)[0]
        p, q = sol[:n_p], np.concatenate([[1.0], sol[n_p:]])
        weight = 1.0 / np.abs(Polynomial(q)(s))
    return p, q


def fit_exp(degree: int = 10):
    """Coefficients of ``exp(-w)`` on ``[0, EXP_RANGE]``, lowest power first."""
    cheb = Chebyshev.interpolate(lambda w: np.exp(-w), degree, domain=[0.0, EXP_RANGE])
    return cheb.convert(kind=Polynomial).coef


def main() -> None:
    p, q = fit_erf()
    e = fit_exp()
    z = np.linspace(0.0, ERF_LIMIT, 400001)
    erf_err = np.max(
        np.abs(z * Polynomial(p)(z * z) / Polynomial(q)(z * z) - [math.erf(v) for v in z])
    )
    w = np.linspace(0.0, 104.0, 1000001)
    approx = Polynomial(e)(w / 64.0) ** 64
    exp_err = np.max(np.abs(approx / np.exp(-w) - 1.0))
    print("_ERF_P =", tuple(float(c) for c in p))
    print("_ERF_Q =", tuple(float(c) for c in q))
    print("_EXP_P =", tuple(float(c) for c in e))
    print(
        f"max |erf error| on [0, 4]: {erf_err:.2e};  max relative exp(-z) error on [0, 104]: {exp_err:.2e}"
    )


if __name__ == "__main__":
    main()
