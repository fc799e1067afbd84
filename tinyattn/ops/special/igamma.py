"""The regularized incomplete gamma functions ``igamma`` (P) and ``igammac`` (Q = 1 - P):

    P(a, x) = (1 / Gamma(a)) int_0^x t^(a-1) e^(-t) dt

computed in float64 NumPy: the power series of P for x < a + 1, else a continued fraction
for Q (modified Lentz), each taken to machine precision. Special values as torch's: NaN for
a < 0 or x < 0 (and for a = x = 0), P(0, x > 0) = 1, P(a, 0) = 0, P(inf, finite x) = 0,
P(finite a, inf) = 1. As in torch, only ``other`` (x) has a gradient.
"""

from __future__ import annotations

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from ...core.xp import numpy_xp
from ...foundations.type_names import type_name
from .._util import gradient_doc
from ._math import lgamma as _lgamma

__all__ = ["igamma", "igammac", "igamma_", "igammac_"]

_EPS = np.finfo(np.float64).eps
_TINY = 1e-300
_MAX_TERMS = 20000


def _log_prefactor(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log(x^a e^-x / Gamma(a))."""
    return a * np.log(x) - x - _lgamma(a)


def _series_p(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))  (x < a + 1)."""
    term = np.ones_like(a) / a
    total = term.copy()
    active = np.ones(a.shape, bool)
    denom = a.copy()
    for _ in range(_MAX_TERMS):
        denom = denom + 1
        term = np.where(active, term * x / denom, 0.0)
        total = total + term
        active &= np.abs(term) > np.abs(total) * _EPS
        if not active.any():
            break
    return np.exp(_log_prefactor(a, x)) * total


def _fraction_q(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))
    by the modified Lentz algorithm (x >= a + 1)."""
    b = x + 1 - a
    c = np.full_like(a, 1 / _TINY)
    d = 1 / b
    h = d.copy()
    active = np.ones(a.shape, bool)
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        delta = np.where(active, d * c, 1.0)
        h = h * delta
        active &= np.abs(delta - 1) > _EPS
        if not active.any():
            break
    return np.exp(_log_prefactor(a, x)) * h


def regularized_gamma(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """P(a, x) (``upper=False``) or Q(a, x), float64, with torch's special values."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    regular = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    with np.errstate(all="ignore"):
        use_series = regular & (x < a + 1)
        use_fraction = regular & ~use_series
        if use_series.any():
            p = _series_p(a[use_series], x[use_series])
            out[use_series] = 1 - p if upper else p
        if use_fraction.any():
            q = _fraction_q(a[use_fraction], x[use_fraction])
            out[use_fraction] = q if upper else 1 - q
    lower_one = ((a == 0) & (x > 0)) | (np.isfinite(a) & (a >= 0) & (x == np.inf))
    lower_zero = ((x == 0) & (a > 0)) | ((a == np.inf) & np.isfinite(x) & (x >= 0))
    out[lower_one] = 0.0 if upper else 1.0
    out[lower_zero] = 1.0 if upper else 0.0
    return out


class Igamma(Function):
    """y = P(a, x) (``upper``: Q(a, x) = 1 - P), shapes broadcast.
    dx = +- g x^(a-1) e^-x / Gamma(a)  (minus for Q); a has no gradient (torch raises)."""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, x, upper=False):
        ctx.save_for_backward(x)
        ctx.upper = upper
        ctx.a = a
        with np.errstate(all="ignore"):
            ctx.log_norm = -_lgamma(a)  # -log Gamma(a): a constant (a has no gradient)
        return regularized_gamma(a, x, upper).astype(np.result_type(a, x))

    @staticmethod
    def backward(ctx, g):
        if ctx.needs_input_grad[0]:
            name = "igammac" if ctx.upper else "igamma"
            raise RuntimeError(f"the derivative for '{name}: input' is not implemented.")
        xp = ctx.xp
        (x,) = ctx.saved_tensors
        a, log_norm = ctx.a, ctx.log_norm.astype(ctx.a.dtype)
        if xp is not numpy_xp:
            a, log_norm = Tensor._make(a), Tensor._make(log_norm)
        with np.errstate(all="ignore"):
            density = xp.exp((a - 1) * xp.log(x) - x + log_norm)
        return None, -g * density if ctx.upper else g * density, None


def _operands(input, other, op: str):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type_name(input)}")
    if not isinstance(other, Tensor):
        other = Tensor._make(np.asarray(other, dtype=input._data.dtype))
    for t in (input, other):
        if t._data.dtype.kind != "f":
            name = {"int64": "Long", "int32": "Int", "bool": "Bool"}.get(t.dtype.name, t.dtype.name)
            raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{name}'")
    try:
        np.broadcast_shapes(input.shape, other.shape)
    except ValueError:
        raise RuntimeError(
            f"{op}: the shapes of input {list(input.shape)} and other {list(other.shape)} "
            "are not broadcastable"
        ) from None
    if input._data.dtype != other._data.dtype:
        wide = np.result_type(input._data.dtype, other._data.dtype)
        input, other = (t if t._data.dtype == wide else t.double() for t in (input, other))
    return input, other


@gradient_doc(Igamma)
def igamma(input: Tensor, other) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other), elementwise."""
    return Igamma.apply(*_operands(input, other, "igamma"), False)


@gradient_doc(Igamma)
def igammac(input: Tensor, other) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P."""
    return Igamma.apply(*_operands(input, other, "igammac"), True)


def igamma_(self: Tensor, other) -> Tensor:
    """In-place :func:`igamma` (``self`` holds a)."""
    return self.copy_(igamma(self, other))


def igammac_(self: Tensor, other) -> Tensor:
    """In-place :func:`igammac` (``self`` holds a)."""
    return self.copy_(igammac(self, other))
