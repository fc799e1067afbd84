"""Special functions (ops/special/functions.py, tinyattn.special): float64 gradchecks over every
element, second order, and torch parity of values and gradients via ``check_op`` (the
parity part skips without torch; the gradchecks always run). The sweeps against torch
are in test_special.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_op, rand

import tinyattn

R = np.random.default_rng(7)


def _u(low, high, n=6):
    return R.uniform(low, high, (2, n // 2))


UNARY = [
    ("erfc", lambda L, x: L.erfc(x), _u(-2.5, 3.0)),
    ("erfinv", lambda L, x: L.erfinv(x), _u(-0.95, 0.95)),
    ("erfcx", lambda L, x: L.special.erfcx(x), np.array([[-3.0, -0.5, 0.4], [1.9, 2.1, 30.0]])),
    ("lgamma", lambda L, x: L.lgamma(x), np.array([[0.3, 1.7, 7.5], [-2.5, -0.4, 12.0]])),
    ("digamma", lambda L, x: L.digamma(x), np.array([[0.3, 1.7, 7.5], [-2.5, -0.4, 12.0]])),
    ("polygamma1", lambda L, x: L.polygamma(1, x), np.array([[0.3, 1.7, 7.5], [-2.5, 4.0, 12.0]])),
    ("polygamma3", lambda L, x: L.polygamma(3, x), np.array([[0.3, 1.7, 7.5], [2.5, 4.0, 12.0]])),
    ("mvlgamma", lambda L, x: L.mvlgamma(x, 3), _u(1.2, 6.0)),
    ("ndtr", lambda L, x: L.special.ndtr(x), _u(-3.0, 3.0)),
    ("ndtri", lambda L, x: L.special.ndtri(x), _u(0.05, 0.95)),
    (
        "log_ndtr",
        lambda L, x: L.special.log_ndtr(x),
        np.array([[-30.0, -3.0, -0.5], [0.2, 2.0, 6.0]]),
    ),
    ("entr", lambda L, x: L.special.entr(x), _u(0.1, 3.0)),
    ("i0", lambda L, x: L.special.i0(x), np.array([[-40.0, -2.0, -0.3], [0.5, 3.0, 35.0]])),
    ("i0e", lambda L, x: L.special.i0e(x), np.array([[-40.0, -2.0, -0.3], [0.5, 3.0, 35.0]])),
    ("i1", lambda L, x: L.special.i1(x), np.array([[-40.0, -2.0, -0.3], [0.5, 3.0, 35.0]])),
    ("i1e", lambda L, x: L.special.i1e(x), np.array([[-40.0, -2.0, -0.3], [0.5, 3.0, 35.0]])),
]


# torch's trigamma is within 5e-10 of the exact value (ours within 1e-15): the parity of
# trigamma values, and of digamma's and lgamma's derivatives through it, is held to 1e-8.
LOOSE = {"polygamma1", "digamma", "lgamma"}


@pytest.mark.parametrize("name,f,x", UNARY, ids=[u[0] for u in UNARY])
def test_gradcheck_and_parity(name, f, x):
    check_op(f, x, parity_kw={"rtol": 1e-8} if name in LOOSE else None)


def test_xlog1py_gradcheck_and_parity():
    check_op(lambda L, x, y: L.special.xlog1py(x, y), rand(2, 3), rand(2, 3, low=-0.5, high=2.0))
    check_op(lambda L, x, y: L.special.xlog1py(x, y), rand(2, 3), rand(3, low=0.0, high=1.0))


def test_i1_gradient_at_zero_is_one_half():
    for name in ("i1", "i1e"):
        x = tinyattn.tensor([0.0, 0.0], dtype=tinyattn.float64, requires_grad=True)
        getattr(tinyattn.special, name)(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.5])
