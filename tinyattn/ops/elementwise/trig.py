"""Trigonometric and hyperbolic functions, their inverses, angle units and ``sinc``.

One-input elementwise ops built by :func:`tinyattn.ops.elementwise.unary._unary`: integer and
bool inputs are computed in the default float dtype (as torch), inf/NaN come out
without NumPy warnings. A formula that needs another op of this module (``sinh``'s
derivative is ``cosh``) calls it through ``xp.apply``, so it is differentiable again.
"""

from __future__ import annotations

import math

import numpy as np

from ...core.tensor import Tensor
from .unary import _make_unary, _unary

Tan = _unary(
    "Tan",
    np.tan,
    lambda xp, g, x, y: g * (1 + y * y),
    "out = tan(x).   dx = g * (1 + out**2)",
    "output",
)
Asin = _unary(
    "Asin",
    np.arcsin,
    lambda xp, g, x, y: g / xp.sqrt(1 - x * x),
    "out = asin(x).   dx = g / sqrt(1 - x**2)",
)
Acos = _unary(
    "Acos",
    np.arccos,
    lambda xp, g, x, y: -g / xp.sqrt(1 - x * x),
    "out = acos(x).   dx = -g / sqrt(1 - x**2)",
)
Atan = _unary(
    "Atan", np.arctan, lambda xp, g, x, y: g / (1 + x * x), "out = atan(x).   dx = g / (1 + x**2)"
)
Sinh = _unary(
    "Sinh",
    np.sinh,
    lambda xp, g, x, y: g * xp.apply(Cosh, x),
    "out = sinh(x).   dx = g * cosh(x)",
)
Cosh = _unary(
    "Cosh",
    np.cosh,
    lambda xp, g, x, y: g * xp.apply(Sinh, x),
    "out = cosh(x).   dx = g * sinh(x)",
)
Asinh = _unary(
    "Asinh",
    np.arcsinh,
    lambda xp, g, x, y: g / xp.sqrt(x * x + 1),
    "out = asinh(x).   dx = g / sqrt(x**2 + 1)",
)
Acosh = _unary(
    "Acosh",
    np.arccosh,
    lambda xp, g, x, y: g / xp.sqrt(x * x - 1),
    "out = acosh(x).   dx = g / sqrt(x**2 - 1)",
)
Atanh = _unary(
    "Atanh",
    np.arctanh,
    lambda xp, g, x, y: g / (1 - x * x),
    "out = atanh(x).   dx = g / (1 - x**2)",
)
Deg2rad = _unary(
    "Deg2rad",
    lambda x: x * (math.pi / 180),
    lambda xp, g, x, y: g * (math.pi / 180),
    "out = x * pi / 180.   dx = g * pi / 180",
    "",
)
Rad2deg = _unary(
    "Rad2deg",
    lambda x: x * (180 / math.pi),
    lambda xp, g, x, y: g * (180 / math.pi),
    "out = x * 180 / pi.   dx = g * 180 / pi",
    "",
)


def _sinc(x: np.ndarray) -> np.ndarray:
    px = x * math.pi
    return np.where(x == 0, 1, np.sin(px) / px).astype(x.dtype, copy=False)


Sinc = _unary(
    "Sinc",
    _sinc,
    lambda xp, g, x, y: xp.where(x == 0, 0, g * (xp.cos(x * math.pi) - y) / x),
    "out = sin(pi x) / (pi x) (1 at x = 0).   dx = g * (cos(pi x) - out) / x  (0 at x = 0)",
    "input output",
)

tan = _make_unary(Tan, "tan")
asin = arcsin = _make_unary(Asin, "asin")
acos = arccos = _make_unary(Acos, "acos")
atan = arctan = _make_unary(Atan, "atan")
sinh = _make_unary(Sinh, "sinh")
cosh = _make_unary(Cosh, "cosh")
asinh = arcsinh = _make_unary(Asinh, "asinh")
acosh = arccosh = _make_unary(Acosh, "acosh")
atanh = arctanh = _make_unary(Atanh, "atanh")
deg2rad = _make_unary(Deg2rad, "deg2rad")
rad2deg = _make_unary(Rad2deg, "rad2deg")
sinc = _make_unary(Sinc, "sinc")


# -- in-place variants (torch has one for each) ------------------------------------------------
def tan_(self: Tensor) -> Tensor:
    return self._apply_inplace(Tan)


def asin_(self: Tensor) -> Tensor:
    return self._apply_inplace(Asin)


def acos_(self: Tensor) -> Tensor:
    return self._apply_inplace(Acos)


def atan_(self: Tensor) -> Tensor:
    return self._apply_inplace(Atan)


def sinh_(self: Tensor) -> Tensor:
    return self._apply_inplace(Sinh)


def cosh_(self: Tensor) -> Tensor:
    return self._apply_inplace(Cosh)


def asinh_(self: Tensor) -> Tensor:
    return self._apply_inplace(Asinh)


def acosh_(self: Tensor) -> Tensor:
    return self._apply_inplace(Acosh)


def atanh_(self: Tensor) -> Tensor:
    return self._apply_inplace(Atanh)


def deg2rad_(self: Tensor) -> Tensor:
    return self._apply_inplace(Deg2rad)


def rad2deg_(self: Tensor) -> Tensor:
    return self._apply_inplace(Rad2deg)


def sinc_(self: Tensor) -> Tensor:
    return self._apply_inplace(Sinc)


arcsin_, arccos_, arctan_ = asin_, acos_, atan_
arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_
