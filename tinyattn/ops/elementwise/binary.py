"""Two-input elementwise math beyond arithmetic.py: atan2, hypot, logaddexp(2), xlogy, fmod, copysign,
fmax/fmin, heaviside, float_power, addcmul/addcdiv, and their in-place variants.

Operands broadcast and are promoted as in ``arithmetic.py``; each ``backward`` returns
gradients of the broadcast shape (the engine sums them back). Inputs are saved as they
came (a cast copy would be cut from the graph under ``create_graph``). The gradients at
special points (0, inf, NaN) follow torch's formulas, e.g. ``atan2(0, 0)`` has gradient 0.
"""

from __future__ import annotations

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc
from .arithmetic import (  # (divide_ ... true_divide_: re-exported for the Tensor methods)
    _checked,
    _operand,
    _promote,
    _tensor,
    add,
    div,
    divide_,
    floor_divide_,
    mul,
    multiply_,
    pow,
    remainder_,
    subtract_,
    true_divide_,
)
from .unary import cast


def _float_pair(a, b, op: str):
    """Both operands in the floating result dtype (ints and bools become the default float)."""
    a, b, _ = _promote(a, b, op, floating=True)
    return a, b


def _needs(ctx, i: int) -> bool:
    need = ctx.needs_input_grad
    return len(need) > i and need[i]


__all__ = ["divide_", "floor_divide_", "multiply_", "remainder_", "subtract_", "true_divide_"]


class Atan2(Function):
    """out = atan2(a, b) (the angle of the point (b, a)).

    da = g * b / (a**2 + b**2),  db = -g * a / (a**2 + b**2)   (both 0 where a = b = 0)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _checked("atan2", *_float_pair(a, b, "atan2"), np.arctan2)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, b = ctx.saved_tensors
        denom = a * a + b * b
        recip = xp.where(denom == 0, 0, 1 / denom)
        return g * b * recip, g * -a * recip


class Hypot(Function):
    """out = sqrt(a**2 + b**2).   da = g * a / out,  db = g * b / out"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b):
        out = _checked("hypot", *_float_pair(a, b, "hypot"), np.hypot)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        return g * a / out, g * b / out


class LogAddExp(Function):
    """out = log(exp(a) + exp(b)) (or log2(2**a + 2**b) with ``base2``).

    da = g / (1 + exp(b - a)),  db = g / (1 + exp(a - b))   (base 2: 2**(b - a), 2**(a - b))
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b, base2=False):
        ctx.save_for_backward(a, b)
        ctx.base2 = base2
        fn = np.logaddexp2 if base2 else np.logaddexp
        return _checked("logaddexp", *_float_pair(a, b, "logaddexp"), fn)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, b = ctx.saved_tensors
        exp = (lambda v: xp.power(2.0, v)) if ctx.base2 else xp.exp
        return g / (1 + exp(b - a)), g / (1 + exp(a - b))


class Xlogy(Function):
    """out = x * log(y), 0 where x = 0 (unless y is NaN).

    dx = g * log(y) (0 where x = 0 and y <= 0),  dy = g * x / y
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        x, y, rt = _promote(x, y, "xlogy", floating=True)
        # np.log of a Python number is a float64 NumPy scalar, which would widen a float32
        # tensor (NEP 50): the result keeps the promoted dtype, as torch's.
        out = _checked("xlogy", x, y, lambda u, v: u * np.log(v))
        return np.where((x == 0) & ~np.isnan(y), 0, out).astype(rt, copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, y = ctx.saved_tensors
        dx = xp.where(xp.logical_and(x == 0, y <= 0), 0, g * xp.log(y)) if _needs(ctx, 0) else None
        return dx, (g * x / y if _needs(ctx, 1) else None)


class Fmod(Function):
    """out = a - trunc(a / b) * b (sign of a; C's fmod), or with ``floor`` the remainder
    a - floor(a / b) * b (sign of b; Python's %).

    da = g,  db = -g * trunc(a / b)   (floor: -g * floor(a / b))
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b, floor=False):
        op = "remainder" if floor else "fmod"
        a, b, rt = _promote(a, b, op)
        if rt.kind == "b":
            raise TypeError(f"{op}(): not implemented for bool tensors (as in torch)")
        if rt.kind in "iu" and np.any(np.asarray(b) == 0) and np.size(a) and np.size(b):
            raise RuntimeError(f"{op}(): ZeroDivisionError (integer division by zero)")
        out = _checked(op, a, b, np.mod if floor else np.fmod)
        if _needs(ctx, 1):  # the quotient, a constant of the gradient (piecewise constant)
            ctx.save_for_backward(np.floor_divide(a, b) if floor else np.trunc(a / b))
        return out

    @staticmethod
    def backward(ctx, g):
        (q,) = ctx.saved_tensors if _needs(ctx, 1) else (None,)
        return g, (-g * q if q is not None else None)


# torch's name for the floor form (its node shows as RemainderBackward0)
Remainder = type("Remainder", (Fmod,), {"__doc__": Fmod.__doc__})


class Copysign(Function):
    """out = |a| with the sign of b.   da = g * out / a (0 where a = 0),  db = 0"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b):
        out = _checked("copysign", *_float_pair(a, b, "copysign"), np.copysign)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, out = ctx.saved_tensors
        return g * xp.where(a == 0, 0, out / a), xp.zeros_like(g)


class Fmax(Function):
    """out = fmax(a, b) (or fmin): the larger (smaller) one; a NaN loses to a number.

    da = g where a >= b (fmin: a <= b) or b is NaN, else 0;  db = g elsewhere (ties go to a)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b, pick_max=True):
        ctx.save_for_backward(a, b)
        ctx.pick_max = pick_max
        op = "fmax" if pick_max else "fmin"
        a, b, _ = _promote(a, b, op)
        return _checked(op, a, b, np.fmax if pick_max else np.fmin)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, b = ctx.saved_tensors
        keep_a = xp.logical_or(a >= b if ctx.pick_max else a <= b, xp.isnan(b))
        return xp.where(keep_a, g, 0), xp.where(keep_a, 0, g)


def _pair(input, other, op: str, tensor_other: bool = False):
    """The two operands; torch takes only a Tensor ``other`` for some ops."""
    a = _tensor(input, op)
    if tensor_other and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): argument 'other' must be a Tensor, not {type_name(other)}")
    return a, _operand(other, op)


def _floating_only(a, b, op: str) -> None:
    kinds = {x._data.dtype.kind if isinstance(x, Tensor) else "f" for x in (a, b)}
    if "f" not in kinds:
        raise TypeError(
            f"{op}(): not implemented for integer or bool tensors (as in torch), got "
            f"{a.dtype} and {b.dtype}"
        )


@gradient_doc(Atan2)
def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point ``(other, input)`` in ``(-pi, pi]`` (elementwise, broadcast)."""
    return Atan2.apply(*_pair(input, other, "atan2", tensor_other=True))


arctan2 = atan2


@gradient_doc(Hypot)
def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow (broadcast); floating tensors."""
    a, b = _pair(input, other, "hypot", tensor_other=True)
    _floating_only(a, b, "hypot")
    return Hypot.apply(a, b)


@gradient_doc(LogAddExp)
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow (broadcast); floating tensors."""
    a, b = _pair(input, other, "logaddexp", tensor_other=True)
    _floating_only(a, b, "logaddexp")
    return LogAddExp.apply(a, b)


@gradient_doc(LogAddExp)
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow (broadcast); floating tensors."""
    a, b = _pair(input, other, "logaddexp2", tensor_other=True)
    _floating_only(a, b, "logaddexp2")
    return LogAddExp.apply(a, b, base2=True)


@gradient_doc(Xlogy)
def xlogy(input, other) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlogy(): expected at least one Tensor argument, got two numbers")
    return Xlogy.apply(_operand(input, "xlogy"), _operand(other, "xlogy"))


@gradient_doc(Fmod)
def fmod(input: Tensor, other) -> Tensor:
    """C-style remainder ``input - trunc(input / other) * other`` (the sign of ``input``)."""
    return Fmod.apply(*_pair(input, other, "fmod"))


@gradient_doc(Copysign)
def copysign(input: Tensor, other) -> Tensor:
    """``|input|`` with the sign of ``other`` (``-0.0`` counts as negative)."""
    return Copysign.apply(*_pair(input, other, "copysign"))


@gradient_doc(Fmax)
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum where a NaN loses to a number (NaN only if both are)."""
    return Fmax.apply(*_pair(input, other, "fmax", tensor_other=True), pick_max=True)


@gradient_doc(Fmax)
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum where a NaN loses to a number (NaN only if both are)."""
    return Fmax.apply(*_pair(input, other, "fmin", tensor_other=True), pick_max=False)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where ``input < 0`` (and at NaN), ``values`` where ``input == 0``, 1 where ``input > 0``.

    Not differentiable: the result is outside the graph (torch records it and raises in
    backward). ``input`` and ``values`` must have the same dtype, as in torch.
    """
    x = _tensor(input, "heaviside")
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' must be a Tensor, not {type(values)}")
    if x._data.dtype != values._data.dtype:
        raise RuntimeError(
            f"heaviside(): input and values must have the same dtype, got {x.dtype} and "
            f"{values.dtype}"
        )
    data = x._data
    out = _checked("heaviside", data, values._data, lambda u, v: np.where(u == 0, v, u > 0))
    return Tensor._make(np.asarray(out, dtype=data.dtype))


def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` computed in float64 (the result is float64, as torch).

    Composes: pow, Tensor.to
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected at least one Tensor argument, got two numbers")

    def as_double(x, name: str):
        if isinstance(x, Tensor):
            return cast(x, dt.float64)
        if isinstance(x, (int, float, np.number, np.bool_)):  # True/False as 1.0/0.0, as torch
            return float(x)
        raise TypeError(
            f"float_power(): argument '{name}' must be a Tensor or a number, not {type_name(x)}"
        )

    return pow(as_double(input, "input"), as_double(exponent, "exponent"))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcast); for an integer result a float
    ``value`` is truncated toward zero first (0.5 acts as 0, 2.7 as 2), as torch.

    Composes: mul, add
    """
    product = mul(tensor1, tensor2)
    input = _tensor(input, "addcmul")
    return add(input, product, alpha=_addcmul_value(input, product, value))


def _addcmul_value(input: Tensor, product: Tensor, value):
    """``value`` truncated toward zero when input and product are integers (as torch)."""
    integral = input.dtype.np_dtype.kind in "iu" and product.dtype.np_dtype.kind in "iub"
    if integral and isinstance(value, (float, np.floating)):
        return int(value)
    return value


def _check_addcdiv(tensor1, tensor2) -> None:
    if all(isinstance(t, Tensor) and t._data.dtype.kind in "iub" for t in (tensor1, tensor2)):
        raise RuntimeError(
            "addcdiv(): integer division with addcdiv is not supported (as in torch); use "
            "input + value * tensor1 / tensor2 or convert tensor1 to a float dtype"
        )


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast; not for two integer tensors).

    Composes: div, add
    """
    _check_addcdiv(tensor1, tensor2)
    return add(_tensor(input, "addcdiv"), div(tensor1, tensor2), alpha=value)


# -- in-place variants ------------------------------------------------------------------------
def atan2_(self: Tensor, other: Tensor) -> Tensor:
    return self._apply_inplace(Atan2, _pair(self, other, "atan2_", tensor_other=True)[1])


arctan2_ = atan2_


def hypot_(self: Tensor, other: Tensor) -> Tensor:
    return self._apply_inplace(Hypot, _pair(self, other, "hypot_", tensor_other=True)[1])


def xlogy_(self: Tensor, other) -> Tensor:
    return self._apply_inplace(Xlogy, _operand(other, "xlogy_"))


def fmod_(self: Tensor, other) -> Tensor:
    return self._apply_inplace(Fmod, _operand(other, "fmod_"))


def copysign_(self: Tensor, other) -> Tensor:
    return self._apply_inplace(Copysign, _operand(other, "copysign_"))


def float_power_(self: Tensor, exponent) -> Tensor:
    if self._data.dtype != np.float64:
        raise RuntimeError(f"float_power_(): the base must be float64, got {self.dtype}")
    exponent = cast(exponent, dt.float64) if isinstance(exponent, Tensor) else exponent
    return self.pow_(exponent)


def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place :func:`addcmul`. Composes: mul, Tensor.add_"""
    product = mul(tensor1, tensor2)
    return self.add_(product, alpha=_addcmul_value(self, product, value))


def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place :func:`addcdiv`. Composes: div, Tensor.add_"""
    _check_addcdiv(tensor1, tensor2)
    return self.add_(div(tensor1, tensor2), alpha=value)
