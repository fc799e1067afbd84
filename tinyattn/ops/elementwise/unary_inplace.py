"""The in-place variants of the ops in ``unary.py`` (``sin_``, ``floor_`` ...), and the
one-input ops torch pairs with them: log10, exp2, trunc/frac, sgn/signbit, logit,
nan_to_num, positive, clamp_min/clamp_max.
"""

from __future__ import annotations

import math

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc, to_float
from .._util import sgn as _sign_nan_zero
from .arithmetic import _tensor
from .unary import (
    Cos,
    Erf,
    Expm1,
    Log1p,
    Log2,
    Reciprocal,
    Rsqrt,
    Sin,
    Square,
    _make_unary,
    _unary,
    _ZeroGrad,
    absolute,
    clamp,
    clamp_,
    neg_,
    negative,
)

Log10 = _unary(
    "Log10",
    np.log10,
    lambda xp, g, x, y: g / (x * math.log(10.0)),
    "out = log10(x).   dx = g / (x ln 10)",
)
Exp2 = _unary(
    "Exp2",
    np.exp2,
    lambda xp, g, x, y: g * y * math.log(2.0),
    "out = 2**x.   dx = g * out * ln 2",
    "output",
)
Frac = _unary(
    "Frac", lambda x: x - np.trunc(x), lambda xp, g, x, y: g, "out = x - trunc(x).   dx = g", ""
)
log10 = _make_unary(Log10, "log10")
exp2 = _make_unary(Exp2, "exp2")


# Piecewise-constant ops by name (``x.floor_()`` on a leaf names ``floor_`` in its error).
Trunc = type("Trunc", (_ZeroGrad,), {"__doc__": "out = trunc(x) (round toward 0).   dx = 0"})
Floor = type("Floor", (_ZeroGrad,), {"__doc__": "out = floor(x).   dx = 0"})
Ceil = type("Ceil", (_ZeroGrad,), {"__doc__": "out = ceil(x).   dx = 0"})
Round = type("Round", (_ZeroGrad,), {"__doc__": "out = round(x) (half to even).   dx = 0"})
Sign = type("Sign", (_ZeroGrad,), {"__doc__": "out = sign(x) (0 at NaN).   dx = 0"})


@gradient_doc(Trunc)
def trunc(input: Tensor) -> Tensor:
    """Round toward zero (integers: a copy; bool: TypeError, as torch)."""
    x = _tensor(input, "trunc")
    kind = x._data.dtype.kind
    if kind == "b":
        raise TypeError("trunc(): not implemented for bool tensors (as in torch)")
    if kind != "f":
        return Tensor._make(x._data.copy())
    return Trunc.apply(x, np.trunc)


fix = trunc


@gradient_doc(Frac)
def frac(input: Tensor) -> Tensor:
    """The fractional part ``x - trunc(x)`` (sign of ``x``); floating tensors only."""
    x = _tensor(input, "frac")
    if x._data.dtype.kind != "f":
        raise TypeError(f"frac(): expected a floating point tensor, got {x.dtype}")
    return Frac.apply(x)


@gradient_doc(_ZeroGrad)
def sgn(input: Tensor) -> Tensor:
    """``sign(x)`` for real tensors (dx = 0); ``z / |z|`` (0 at 0) for complex ones, as torch."""
    x = _tensor(input, "sgn")
    if x._data.dtype.kind == "c":
        from ..complex import sgn_complex

        return sgn_complex(x)
    if x._data.dtype == np.bool_:
        return Tensor._make(x._data.copy())
    return _ZeroGrad.apply(x, _sign_nan_zero)


def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (``-0.0`` included). Bool result, not differentiable."""
    data = _tensor(input, "signbit")._data
    bits = np.signbit(data) if data.dtype.kind == "f" else np.asarray(data < 0)
    return Tensor._make(np.asarray(bits))


def positive(input: Tensor) -> Tensor:
    """``input`` itself (``+x``); bool tensors raise, as in torch."""
    x = _tensor(input, "positive")
    if x._data.dtype == np.bool_:
        raise TypeError("positive(): the `+` operator on a bool tensor is not supported")
    return x


class Logit(Function):
    """out = log(z / (1 - z)), z = x clamped to [eps, 1 - eps] (z = x when eps is None).

    dx = g / (x (1 - x)) for lo <= x <= hi, else 0 with eps given, NaN without
    ([lo, hi] = [eps, 1 - eps], or [0, 1]), as torch.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, eps=None):
        x = to_float(x)
        # torch's clamp order: below eps -> eps, else above 1 - eps -> 1 - eps. np.clip
        # differs when eps > 0.5 (it returns 1 - eps everywhere).
        z = x if eps is None else np.where(x < eps, eps, np.where(x > 1 - eps, 1 - eps, x))
        ctx.eps = eps
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
        return np.log(z / (1 - z))

    @staticmethod
    def backward(ctx, g):
        xp, eps = ctx.xp, ctx.eps
        (x,) = ctx.saved_tensors
        lo, hi, outside = (0, 1, math.nan) if eps is None else (eps, 1 - eps, 0)
        return xp.where(xp.logical_or(x < lo, x > hi), outside, g / (x * (1 - x))), None


@gradient_doc(Logit)
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """The log-odds ``log(x / (1 - x))``; ``eps`` clamps ``x`` to ``[eps, 1 - eps]`` first."""
    if eps is not None and not isinstance(eps, (int, float)):
        raise TypeError(f"logit(): argument 'eps' must be a float or None, not {type_name(eps)}")
    return Logit.apply(_tensor(input, "logit"), eps)


class NanToNum(Function):
    """out = x with NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's extremes).

    dx = g where x is finite, else 0
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, nan=0.0, posinf=None, neginf=None):
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
        if x.dtype.kind != "f":
            return x.copy()
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (x,) = ctx.saved_tensors
        return xp.where(xp.isfinite(x), g, 0), None, None, None


def _number(v, op: str, name: str, optional: bool = True):
    if (v is None and optional) or (
        isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
    ):
        return v
    raise TypeError(f"{op}(): argument '{name}' must be a number, not {type_name(v)}")


@gradient_doc(NanToNum)
def nan_to_num(input: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """Replace NaN, +inf and -inf by finite numbers (integer tensors: an unchanged copy)."""
    args = (_number(v, "nan_to_num", n) for v, n in ((nan, "nan"), (posinf, "posinf")))
    nan, posinf = args
    neginf = _number(neginf, "nan_to_num", "neginf")
    return NanToNum.apply(_tensor(input, "nan_to_num"), nan, posinf, neginf)


@gradient_doc(NanToNum)
def nan_to_num_(self: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """In-place :func:`nan_to_num`."""
    return self._apply_inplace(NanToNum, nan, posinf, neginf)


def clamp_min(input: Tensor, min) -> Tensor:
    """``clamp(input, min=min)``. Composes: clamp"""
    return clamp(input, min=min)


def clamp_max(input: Tensor, max) -> Tensor:
    """``clamp(input, max=max)``. Composes: clamp"""
    return clamp(input, max=max)


def clamp_min_(self: Tensor, min) -> Tensor:
    return clamp_(self, min=min)


def clamp_max_(self: Tensor, max) -> Tensor:
    return clamp_(self, max=max)


# -- in-place variants ------------------------------------------------------------------------
def _zero_grad_(self: Tensor, cls, fn) -> Tensor:
    if self._data.dtype.kind != "f":  # integers are whole already: nothing changes (torch)
        return self
    return self._apply_inplace(cls, fn)


def trunc_(self: Tensor) -> Tensor:
    return _zero_grad_(self, Trunc, np.trunc)


fix_ = trunc_


def floor_(self: Tensor) -> Tensor:
    return _zero_grad_(self, Floor, np.floor)


def ceil_(self: Tensor) -> Tensor:
    return _zero_grad_(self, Ceil, np.ceil)


def round_(self: Tensor, decimals: int = 0) -> Tensor:
    return _zero_grad_(self, Round, lambda x: np.round(x, decimals))


def sign_(self: Tensor) -> Tensor:
    return self._apply_inplace(Sign, _sign_nan_zero)


sgn_ = sign_


def frac_(self: Tensor) -> Tensor:
    if self._data.dtype.kind != "f":
        raise TypeError(f"frac_(): expected a floating point tensor, got {self.dtype}")
    return self._apply_inplace(Frac)


def logit_(self: Tensor, eps: float | None = None) -> Tensor:
    return self._apply_inplace(Logit, eps)


def _inplace(cls, name: str):
    def method(self: Tensor) -> Tensor:
        return self._apply_inplace(cls)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: {cls.__doc__}"
    return method


sin_ = _inplace(Sin, "sin_")
cos_ = _inplace(Cos, "cos_")
log2_ = _inplace(Log2, "log2_")
log10_ = _inplace(Log10, "log10_")
log1p_ = _inplace(Log1p, "log1p_")
expm1_ = _inplace(Expm1, "expm1_")
exp2_ = _inplace(Exp2, "exp2_")
rsqrt_ = _inplace(Rsqrt, "rsqrt_")
reciprocal_ = _inplace(Reciprocal, "reciprocal_")
square_ = _inplace(Square, "square_")
erf_ = _inplace(Erf, "erf_")
negative_ = neg_
__all__ = ["absolute", "negative"]  # (re-exported for the Tensor methods)
