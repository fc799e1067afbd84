"""Integer and floating-point bit-level elementwise ops: gcd, lcm, ldexp, frexp, nextafter,
isposinf/isneginf/isreal, angle, the conjugate/negative-bit no-ops, rsub, heaviside_.

Operands broadcast and promote as in ``arithmetic.py``. gcd, lcm, frexp and nextafter are
piecewise constant or bit manipulations: their results are outside the graph (torch has
no derivative for them either). ``angle`` of a real tensor is 0 or pi, with gradient 0.
``conj`` of a real tensor is the tensor itself; of a complex one, a new tensor
(``ops/complex.py``); there is no lazy conjugate or negative bit, so ``resolve_conj``/
``resolve_neg`` return their input and ``is_conj``/``is_neg`` are False.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc
from .arithmetic import _checked, _promote, _tensor, mul, pow, sub
from .binary import heaviside

__all__ = [
    "gcd",
    "gcd_",
    "lcm",
    "lcm_",
    "ldexp",
    "ldexp_",
    "frexp",
    "nextafter",
    "nextafter_",
    "isposinf",
    "isneginf",
    "isreal",
    "angle",
    "conj",
    "conj_physical",
    "resolve_conj",
    "resolve_neg",
    "is_conj",
    "is_neg",
    "rsub",
    "heaviside_",
]

frexp_return = namedtuple("frexp", ["mantissa", "exponent"])
frexp_return.__module__ = "tinyattn.return_types"


def _other_tensor(other, op: str) -> Tensor:
    if not isinstance(other, Tensor):
        raise TypeError(
            f"{op}(): argument 'other' (position 2) must be Tensor, not {type_name(other)}"
        )
    return other


def _integer_pair(input, other, op: str):
    """Both operands as arrays of the promoted integer dtype (bool and floats refused)."""
    a, b = _tensor(input, op), _other_tensor(other, op)
    x, y, rt = _promote(a._data, b._data, op)
    if rt.kind not in "iu":
        raise TypeError(f"{op}(): expected integer tensors (as torch), got {a.dtype} and {b.dtype}")
    return x, y


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Greatest common divisor of integer tensors, elementwise (broadcast); ``gcd(0, 0) = 0``.

    Parameters
    ----------
    input, other : Tensor
        Integer tensors of broadcastable shapes.

    Returns
    -------
    Tensor
        The broadcast shape, the promoted integer dtype; never negative (except for the
        most negative integer, which wraps as in torch).
    """
    x, y = _integer_pair(input, other, "gcd")
    return Tensor._make(np.asarray(_checked("gcd", x, y, np.gcd)))


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple of integer tensors, elementwise (broadcast); 0 if either is 0.

    Shapes and dtypes as :func:`gcd`; the result is non-negative.
    """
    x, y = _integer_pair(input, other, "lcm")
    return Tensor._make(np.asarray(_checked("lcm", x, y, np.lcm)))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` towards ``other`` (broadcast).

    Floating tensors only (torch has no integer version). Outside the graph.
    """
    a, b = _tensor(input, "nextafter"), _other_tensor(other, "nextafter")
    x, y, rt = _promote(a._data, b._data, "nextafter")
    if rt.kind != "f":
        raise TypeError(
            f"nextafter(): expected floating-point tensors (as torch), got {a.dtype} and {b.dtype}"
        )
    return Tensor._make(np.asarray(_checked("nextafter", x, y, np.nextafter)))


def _inplace(fn, name: str):
    def method(input: Tensor, other: Tensor) -> Tensor:
        from ..inplace import _write, check_inplace_allowed

        check_inplace_allowed(input, name)
        _write(input, fn(input, other)._data, name)
        return input

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place :func:`{name[:-1]}` (``self`` keeps its shape and dtype)."
    return method


gcd_ = _inplace(gcd, "gcd_")
lcm_ = _inplace(lcm, "lcm_")
nextafter_ = _inplace(nextafter, "nextafter_")


def heaviside_(self: Tensor, values: Tensor) -> Tensor:
    """In-place :func:`tinyattn.heaviside` (``self`` keeps its shape and dtype)."""
    return _inplace(heaviside, "heaviside_")(self, values)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2**other`` (broadcast), in the floating result dtype of the two (integer
    inputs give the default float dtype; a bool ``other`` with a floating ``input`` is
    refused, as torch).

    Composes: pow, mul (so ``d/dinput = g * 2**other``, ``d/dother = g * out * log(2)``).
    """
    from .unary import cast

    a, b = _tensor(input, "ldexp"), _other_tensor(other, "ldexp")
    if b._data.dtype == np.bool_ and a._data.dtype.kind == "f":
        raise TypeError(
            f"ldexp(): a bool 'other' with a floating input ({a.dtype}) is not implemented "
            "(as torch)"
        )
    target = dt.from_numpy_dtype(dt.float_result_type(a._data, b._data))
    return mul(cast(a, target), pow(2.0, cast(b, target)))


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`ldexp`.   Composes: pow, Tensor.mul_"""
    return input.mul_(pow(2.0, _other_tensor(other, "ldexp_")))


def frexp(input: Tensor) -> tuple[Tensor, Tensor]:
    """Split floats into ``mantissa * 2**exponent`` with ``0.5 <= |mantissa| < 1``.

    Returns
    -------
    (mantissa, exponent) : namedtuple of Tensor
        ``mantissa`` has ``input``'s shape and dtype; ``exponent`` is int32. Zero gives
        (0, 0); inf and NaN give themselves and exponent 0. Outside the graph.
    """
    x = _tensor(input, "frexp")
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"frexp(): only supports floating-point dtypes, got {x.dtype}")
    mantissa, exponent = np.frexp(x._data)
    return frexp_return(Tensor._make(mantissa), Tensor._make(exponent.astype(np.int32)))


def isposinf(input: Tensor) -> Tensor:
    """True where ``input`` is +inf (bool, same shape)."""
    data = _tensor(input, "isposinf")._data
    return Tensor._make(np.isposinf(data) if data.dtype.kind == "f" else np.zeros(data.shape, bool))


def isneginf(input: Tensor) -> Tensor:
    """True where ``input`` is -inf (bool, same shape)."""
    data = _tensor(input, "isneginf")._data
    return Tensor._make(np.isneginf(data) if data.dtype.kind == "f" else np.zeros(data.shape, bool))


def isreal(input: Tensor) -> Tensor:
    """True where the imaginary part is 0 (everywhere for a real tensor; bool, same shape)."""
    data = _tensor(input, "isreal")._data
    if data.dtype.kind == "c":
        return Tensor._make(data.imag == 0)
    return Tensor._make(np.ones(data.shape, dtype=bool))


class Angle(Function):
    """out = angle(x): for real x, pi where x < 0, 0 where x >= 0, NaN at NaN; for complex
    z = a + ib, atan2(b, a).

    dx = 0 for real x (piecewise constant; torch's gradient for real inputs is 0 too);
    dz = g * i z / |z|**2 for complex z (0 at z = 0, as torch)
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x):
        if x.dtype.kind == "c":
            ctx.save_for_backward(x)
            return np.angle(x)
        out = np.where(x < 0, math.pi, 0.0).astype(x.dtype)
        return np.where(np.isnan(x), x, out)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        if not ctx.saved_tensors:
            return xp.zeros_like(g)
        (z,) = ctx.saved_tensors
        squared = xp.real(z * xp.conj(z))
        return xp.where(squared == 0, 0, g * 1j * z / xp.where(squared == 0, 1, squared))


@gradient_doc(Angle)
def angle(input: Tensor) -> Tensor:
    """The argument of each (real) element: ``pi`` if negative, else 0 (NaN stays NaN).

    Integer and bool tensors give the default float dtype; the shape is kept.
    """
    x = _tensor(input, "angle")
    if x._data.dtype.kind not in "fc":
        from .unary import cast

        x = cast(x, dt.get_default_dtype())
    return Angle.apply(x)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate ``a - ib``; a real tensor itself (as torch returns self).

    dz = conj(g)  (``ops.complex.Conj``)
    """
    x = _tensor(input, "conj")
    if x._data.dtype.kind == "c":
        from ..complex import conj_complex

        return conj_complex(x)
    return x


def conj_physical(input: Tensor) -> Tensor:
    """The materialised conjugate: ``conj`` (a new tensor for complex dtypes, ``input``
    itself for real ones, as torch)."""
    return conj(_tensor(input, "conj_physical"))


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself: a real tensor never has its conjugate bit set."""
    return _tensor(input, "resolve_conj")


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` itself: a real tensor never has its negative bit set."""
    return _tensor(input, "resolve_neg")


def is_conj(input: Tensor) -> bool:
    """False: the conjugate bit exists for complex tensors only."""
    _tensor(input, "is_conj")
    return False


def is_neg(input: Tensor) -> bool:
    """False: the negative bit exists for complex tensors only."""
    _tensor(input, "is_neg")
    return False


def rsub(input: Tensor, other, alpha=1) -> Tensor:
    """``other - alpha * input`` (broadcast; ``other`` may be a number).   Composes: sub"""
    return sub(other, _tensor(input, "rsub"), alpha=alpha)
