"""Special functions as ops: erfc, erfcx, erfinv, lgamma, digamma, polygamma, mvlgamma, xlog1py,
ndtr, ndtri, log_ndtr, entr, the modified Bessel functions i0, i0e, i1, i1e, and zeta.

The math is in ``_special_math.py`` (float64 NumPy kernels, no scipy); each op here is a
``Function`` that computes in float64 and returns the input's floating dtype (integer and
bool inputs become the default float dtype, as in torch). Gradients are written with
``ctx.xp``; where a derivative is another special function it is that Function applied
again (``xp.apply(Digamma, x)``), so every order of derivative is available.

Accuracy against torch 2.13 (float64, measured by ``tests/ops/special/test_special.py``): see each
op's docstring. In float32 the float64 result is rounded once.
"""

from __future__ import annotations

import math

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc, to_float
from ..elementwise.arithmetic import _checked, _operand, _promote, _tensor
from . import _math as sm

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_EPS = float(np.finfo(np.float64).eps)


def _kernel(fn, x: np.ndarray, *args) -> np.ndarray:
    x64 = x.astype(np.float64, copy=False)
    return np.asarray(fn(*args, x64) if args else fn(x64)).astype(x.dtype, copy=False)


def _special(name: str, kernel, backward, doc: str):
    """A one-input Function: ``kernel`` on float64, ``backward(xp, g, x, out)``."""

    def forward(ctx, x):
        x = to_float(x)
        out = _kernel(kernel, x)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, out)
        return out

    def bwd(ctx, g):
        x, out = ctx.saved_tensors
        return backward(ctx.xp, g, x, out)

    attrs = {"forward": staticmethod(forward), "backward": staticmethod(bwd), "__doc__": doc}
    return type(name, (Function,), {**attrs, "supports_create_graph": True})


class Polygamma(Function):
    """out = psi^(n)(x), the n-th derivative of digamma (n = 0: digamma).

    dx = g * psi^(n+1)(x)

    float64 vs torch: n = 0 (digamma) within 2e-12 relative away from its roots; n = 1
    within 5e-10 (torch's trigamma is that far from the exact value; ours is within 1e-15);
    n >= 2 within 1e-13 on [-10.5, 50] off the poles.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, n=0):
        x = to_float(x)
        ctx.n = n
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
        return _kernel(sm.polygamma, x, n)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.xp.apply(Polygamma, x, ctx.n + 1), None


Erfc = _special(
    "Erfc",
    sm.erfc,
    lambda xp, g, x, y: -_TWO_OVER_SQRT_PI * g * xp.exp(-x * x),
    """out = erfc(x) = 1 - erf(x).   dx = -g * 2 / sqrt(pi) * exp(-x^2)

    Relative error vs torch < 2e-14 on [-6, 27] (where erfc underflows).""",
)
Erfcx = _special(
    "Erfcx",
    sm.erfcx,
    lambda xp, g, x, y: g * (2 * x * y - _TWO_OVER_SQRT_PI),
    """out = erfcx(x) = exp(x^2) erfc(x).   dx = g * (2 x out - 2 / sqrt(pi))

    Relative error vs torch < 1e-13 on [-26, 1e5].""",
)
Erfinv = _special(
    "Erfinv",
    sm.erfinv,
    lambda xp, g, x, y: 0.5 * math.sqrt(math.pi) * g * xp.exp(y * y),
    """out = erfinv(x) (erf(out) = x; ±inf at ±1, NaN outside [-1, 1]).

    dx = g * sqrt(pi) / 2 * exp(out^2)

    Relative error vs torch < 1e-14 on [-1, 1], tails 1 - 1e-16 included.""",
)
Lgamma = _special(
    "Lgamma",
    sm.lgamma,
    lambda xp, g, x, y: g * xp.apply(Polygamma, x, 0),
    """out = log|Gamma(x)| (+inf at 0, the negative integers and ±inf).   dx = g * digamma(x)

    Relative error vs torch < 1e-12 on [-10.5, 50] off the poles; near the roots of
    lgamma below 0 the error is absolute (< 1e-15).""",
)
Ndtr = _special(
    "Ndtr",
    lambda x: 0.5 * sm.erfc(-x * (1.0 / math.sqrt(2.0))),
    lambda xp, g, x, y: g * xp.exp(-0.5 * x * x) / _SQRT_2PI,
    "out = Phi(x) = erfc(-x / sqrt 2) / 2.   dx = g * exp(-x^2 / 2) / sqrt(2 pi)",
)
Ndtri = _special(
    "Ndtri",
    sm.ndtri,
    lambda xp, g, x, y: g * _SQRT_2PI * xp.exp(0.5 * y * y),
    """out = Phi^-1(x) (±inf at 1 and 0, NaN outside [0, 1]).

    dx = g * sqrt(2 pi) * exp(out^2 / 2)

    Relative error vs torch < 1e-14 on [0, 1] and p down to 1e-320.""",
)
LogNdtr = _special(
    "LogNdtr",
    sm.log_ndtr,
    lambda xp, g, x, y: g * xp.exp(-(y + 0.5 * x * x)) / _SQRT_2PI,
    """out = log(Phi(x)), stable for very negative x (log(erfcx(t) / 2) - t^2, t = -x / sqrt 2).

    dx = g * exp(-(out + x^2 / 2)) / sqrt(2 pi)   (torch's formula, from the output)

    Relative error vs torch < 1e-12 on [-1e4, 40].""",
)


def _entr_kernel(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -x * np.log(x)
    return np.where(x == 0, 0.0, np.where(x < 0, -np.inf, out))


Entr = _special(
    "Entr",
    _entr_kernel,
    lambda xp, g, x, y: -g * (xp.log(x) + 1),
    "out = -x log x (0 at 0, -inf below 0).   dx = -g * (log x + 1)",
)
I0 = _special(
    "I0",
    sm.i0,
    lambda xp, g, x, y: g * xp.apply(I1, x),
    "out = I0(x) (modified Bessel, first kind, order 0).   dx = g * I1(x)",
)
I0e = _special(
    "I0e",
    sm.i0e,
    lambda xp, g, x, y: g * (xp.apply(I1e, x) - xp.sgn(x) * y),
    "out = exp(-|x|) I0(x).   dx = g * (i1e(x) - sign(x) * out)",
)


def _i1_grad(xp, g, x, y, scaled: bool):
    # torch's rule: the limit 1/2 wherever |x| <= eps (NaN included), the formula elsewhere
    not_tiny = xp.abs(x) > _EPS
    safe = xp.where(not_tiny, x, 1)
    lower = xp.apply(I0e if scaled else I0, safe)
    slope = lower - y * (xp.sgn(safe) + 1 / safe) if scaled else lower - y / safe
    return g * xp.where(not_tiny, slope, 0.5)


I1 = _special(
    "I1",
    sm.i1,
    lambda xp, g, x, y: _i1_grad(xp, g, x, y, False),
    "out = I1(x) (order 1, odd).   dx = g * (I0(x) - out / x)   (g / 2 where |x| <= eps or NaN)",
)
I1e = _special(
    "I1e",
    sm.i1e,
    lambda xp, g, x, y: _i1_grad(xp, g, x, y, True),
    """out = exp(-|x|) I1(x).   dx = g * (i0e(x) - out * (sign(x) + 1 / x))   (g / 2 at 0)

    Bessel functions: relative error vs torch < 5e-15 on [-800, 800].""",
)


class Xlog1py(Function):
    """out = x * log1p(y), 0 where x = 0 (unless y is NaN).

    dx = g * log1p(y) (0 where x = 0 and y is not NaN),  dy = g * x / (1 + y)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, y):
        if isinstance(
            y, (bool, np.bool_)
        ):  # np.log1p(True) is a float16: log1p(1) would lose 10 bits
            y = float(y)
        ctx.save_for_backward(x, y)
        x, y, rt = _promote(x, y, "xlog1py", floating=True)
        out = _checked("xlog1py", x, y, lambda u, v: u * np.log1p(v))
        return np.where((x == 0) & ~np.isnan(y), 0, out).astype(rt, copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        dx = None
        if need[0]:
            zero = xp.logical_and(x == 0, y == y)  # (y == y: not NaN)
            dx = xp.where(zero, 0, g * xp.log1p(y))
        dy = g * x / (1 + y) if len(need) > 1 and need[1] else None
        return dx, dy


# -- public ops ----------------------------------------------------------------------------


def _apply(cls, input, name: str) -> Tensor:
    return cls.apply(_tensor(input, name))


@gradient_doc(Erfc)
def erfc(input: Tensor) -> Tensor:
    """The complementary error function ``1 - erf(x)``, accurate where it is tiny."""
    return _apply(Erfc, input, "erfc")


@gradient_doc(Erfcx)
def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function ``exp(x^2) erfc(x)`` (no underflow)."""
    return _apply(Erfcx, input, "erfcx")


@gradient_doc(Erfinv)
def erfinv(input: Tensor) -> Tensor:
    """The inverse error function on [-1, 1]."""
    return _apply(Erfinv, input, "erfinv")


@gradient_doc(Lgamma)
def lgamma(input: Tensor) -> Tensor:
    """``log|Gamma(x)|`` elementwise."""
    return _apply(Lgamma, input, "lgamma")


@gradient_doc(Polygamma)
def digamma(input: Tensor) -> Tensor:
    """``psi(x) = d/dx log Gamma(x)``: -inf at +0, +inf at -0, NaN at negative integers."""
    return Polygamma.apply(_tensor(input, "digamma"), 0)


def _order(n, op: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type_name(n)}")
    if n < 0:
        raise RuntimeError(f"{op}(): argument 'n' must be non-negative, got {n}")
    return int(n)


@gradient_doc(Polygamma)
def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma (``n >= 0``), elementwise."""
    return Polygamma.apply(_tensor(input, "polygamma"), _order(n, "polygamma"))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma ``sum_{i<p} lgamma(x - i/2) + p (p-1)/4 log(pi)``.

    Every element must exceed ``(p - 1) / 2`` (RuntimeError otherwise, as torch).
    Gradient: ``dx = g * sum_{i<p} digamma(x - i/2)`` (through ``Lgamma``).
    """
    x = _tensor(input, "mvlgamma")
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type_name(p)}")
    if p < 1:
        raise RuntimeError(f"mvlgamma(): argument 'p' must be at least 1, got {p}")
    if not x.is_floating_point():
        x = x.to(dt.get_default_dtype())
    if bool((x._data <= (p - 1) / 2).any()):  # (NaN passes, as in torch)
        raise RuntimeError("mvlgamma(): All elements must be greater than (p-1)/2")
    offsets = Tensor._make(np.arange(p, dtype=x._data.dtype) / 2)
    terms = Lgamma.apply(x.unsqueeze(-1) - offsets)
    return terms.sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


@gradient_doc(Xlog1py)
def xlog1py(input, other) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlog1py(): expected at least one Tensor argument, got two numbers")
    return Xlog1py.apply(_operand(input, "xlog1py"), _operand(other, "xlog1py"))


@gradient_doc(Ndtr)
def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF ``Phi(x)``."""
    return _apply(Ndtr, input, "ndtr")


@gradient_doc(Ndtri)
def ndtri(input: Tensor) -> Tensor:
    """The inverse of the standard normal CDF."""
    return _apply(Ndtri, input, "ndtri")


@gradient_doc(LogNdtr)
def log_ndtr(input: Tensor) -> Tensor:
    """``log(Phi(x))``, finite for very negative x."""
    return _apply(LogNdtr, input, "log_ndtr")


@gradient_doc(Entr)
def entr(input: Tensor) -> Tensor:
    """The elementwise entropy ``-x log x``."""
    return _apply(Entr, input, "entr")


@gradient_doc(I0)
def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, order 0."""
    return _apply(I0, input, "i0")


@gradient_doc(I0e)
def i0e(input: Tensor) -> Tensor:
    """``exp(-|x|) I0(x)``, which does not overflow."""
    return _apply(I0e, input, "i0e")


@gradient_doc(I1)
def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, order 1."""
    return _apply(I1, input, "i1")


@gradient_doc(I1e)
def i1e(input: Tensor) -> Tensor:
    """``exp(-|x|) I1(x)``, which does not overflow."""
    return _apply(I1e, input, "i1e")


def zeta(input, other) -> Tensor:
    """The Hurwitz zeta function ``sum_k (k + other)^-input`` (not differentiable).

    torch records a node whose backward raises "the derivative for 'zeta' is not
    implemented"; here the result does not require grad (backward raises too).
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("zeta(): expected at least one Tensor argument, got two numbers")
    s, q = (t._data if isinstance(t, Tensor) else t for t in (input, other))
    s, q, rt = _promote(s, q, "zeta", floating=True)
    out = _checked("zeta", s, q, lambda a, b: sm.zeta(a, b))
    # torch (Cephes) answers inf at s = 1 (any q) and at every integer q <= 0 unless s < 1
    s, q = np.asarray(s), np.asarray(q)
    with np.errstate(invalid="ignore"):
        pole = (s == 1) | ((q <= 0) & (np.floor(q) == q) & ~(s < 1))
    out = np.where(pole, np.inf, out)
    return Tensor._make(np.asarray(out).astype(rt, copy=False))


# -- in-place forms (Tensor methods) --------------------------------------------------------


def erfc_(self: Tensor) -> Tensor:
    return self._apply_inplace(Erfc)


def erfinv_(self: Tensor) -> Tensor:
    return self._apply_inplace(Erfinv)


def lgamma_(self: Tensor) -> Tensor:
    return self._apply_inplace(Lgamma)


def digamma_(self: Tensor) -> Tensor:
    return self._apply_inplace(Polygamma, 0)


def polygamma_(self: Tensor, n: int) -> Tensor:
    return self._apply_inplace(Polygamma, _order(n, "polygamma_"))


def mvlgamma_(self: Tensor, p: int) -> Tensor:
    return self.copy_(mvlgamma(self, p))


def i0_(self: Tensor) -> Tensor:
    return self._apply_inplace(I0)
