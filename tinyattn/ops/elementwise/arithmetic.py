"""Binary elementwise ops: arithmetic (add, sub, mul, div, pow), maximum/minimum, where.

Operands broadcast and are promoted to torch's result dtype; each ``backward``
returns gradients of the broadcast shape and the engine sums them back to each
operand's shape.
"""

from __future__ import annotations

import numpy as np

from ...core import _dtype as dt
from ...core import primitives
from ...core.function import Function
from ...core.primitives import is_number, power
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import broadcast_error, gradient_doc, refuse_complex_order

# -- operand handling ------------------------------------------------------------------


# By exact type: bool (an int subclass) takes the full rules. The forwards of add, sub and
# mul test ``type(b) in _PY_NUMBERS and type(a) is _ndarray and a.dtype.kind == "f"`` (a
# float array with a Python int or float, the common case) before calling ``_promote``:
# no cast, torch keeps the array's dtype, as NumPy does.
_PY_NUMBERS = (int, float)
_ndarray = np.ndarray


def _promote(a, b, op: str, floating: bool = False):
    """Cast array operands to torch's result dtype (Python scalars stay scalars)."""
    # Fast paths, no cast needed: two arrays of one dtype, or a float array with a
    # Python int/float (torch keeps the tensor's float dtype). Else the full rules.
    if type(a) is _ndarray:
        if type(b) is _ndarray:
            if a.dtype == b.dtype and (not floating or a.dtype.kind == "f"):
                return a, b, a.dtype
        elif type(b) in _PY_NUMBERS and a.dtype.kind == "f":
            return a, b, a.dtype
    elif type(b) is _ndarray and type(a) in _PY_NUMBERS and b.dtype.kind == "f":
        return a, b, b.dtype
    rt = dt.float_result_type(a, b) if floating else dt.result_type(a, b)
    # NumPy scalars are "strong" under NEP 50 (float32 array / np.float64 -> float64);
    # torch treats them like Python numbers, so hand NumPy plain Python scalars.
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(b, np.generic):
        b = b.item()
    if rt.kind in "iu":
        a, b = _wrapped_int(a, rt), _wrapped_int(b, rt)
    if isinstance(a, np.ndarray) and a.dtype != rt:
        a = a.astype(rt)
    if isinstance(b, np.ndarray) and b.dtype != rt:
        b = b.astype(rt)
    return a, b, rt


def _wrapped_int(x, rt: np.dtype):
    """A Python int outside integer dtype ``rt`` cast to it with wrap-around, as torch casts
    the scalar (``uint8 + -2`` adds 254 mod 256: ``[1, 2] -> [255, 0]``); NumPy would raise
    OverflowError. Other operands are returned as they are."""
    if type(x) is int:
        info = np.iinfo(rt)
        if not info.min <= x <= info.max and -(2**63) <= x < 2**64:
            return np.array(x, dtype=np.uint64 if x >= 2**63 else np.int64).astype(rt)[()]
    return x


# Operand types taken as they are, by exact type (the common case: one set lookup, which
# add, sub and mul make themselves before calling ``_operand``); the tensor classes join on
# first sight (tinyattn.Tensor, Parameter ...: subclasses of Tensor).
_PASS_THROUGH = {int, float, bool}


def _operand(x, op: str):
    if type(x) in _PASS_THROUGH:
        return x
    if isinstance(x, Tensor):
        _PASS_THROUGH.add(type(x))
        return x
    if isinstance(x, (int, float, bool, complex, np.number, np.bool_)):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._make(x)
    raise TypeError(f"{op}(): unsupported operand type {type_name(x)}")


def _is_bool(x) -> bool:
    kind = type(x)
    if kind is float or kind is int:
        return False
    if isinstance(x, np.ndarray):
        return x.dtype.kind == "b"
    return isinstance(x, (bool, np.bool_))


def _checked(op: str, a, b, fn):
    try:
        return fn(a, b)
    except ValueError:
        raise broadcast_error(op, a, b) from None


def _tensor(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(x)}")
    return x


# -- arithmetic --------------------------------------------------------------------------


class Add(primitives.Add):
    __doc__ = primitives.Add.__doc__  # the backward is the core's; forward adds torch's dtypes

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if type(b) in _PY_NUMBERS and type(a) is _ndarray and a.dtype.kind == "f":
            rt = a.dtype  # (as they are: see _PY_NUMBERS)
        else:
            a, b, rt = _promote(a, b, "add")
        if alpha != 1:  # (stored only then: the backward's default is 1)
            ctx.alpha = alpha
            b = np.logical_and(b, bool(alpha)) if rt.kind == "b" else b * alpha  # bool stays bool
        try:
            return np.add(a, b)
        except ValueError:
            raise broadcast_error("add", a, b) from None


class Sub(Function):
    """out = a - alpha * b.   da = g,  db = -alpha * g"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if not (type(b) in _PY_NUMBERS and type(a) is _ndarray and a.dtype.kind == "f"):
            if _is_bool(a) or _is_bool(b):  # (not in the case above: no bool there)
                raise TypeError(
                    "sub: subtraction with a bool operand is not supported (as in torch); to "
                    "invert a mask use ~ or logical_not(), or convert with .int() / .float() first"
                )
            a, b, _ = _promote(a, b, "sub")
        if alpha != 1:  # (stored only then: the backward's default is 1)
            ctx.alpha = alpha
            b = b * alpha
        try:
            return np.subtract(a, b)
        except ValueError:
            raise broadcast_error("sub", a, b) from None

    @staticmethod
    def backward(ctx, g):
        if not ctx.needs_input_grad[1]:  # (x - 0.5: no gradient to compute for the number)
            return g, None
        alpha = ctx.__dict__.get("alpha", 1)
        return g, -g if alpha == 1 else g * -alpha


class Mul(primitives.Mul):
    __doc__ = primitives.Mul.__doc__  # the backward is the core's; forward adds torch's dtypes

    @staticmethod
    def forward(ctx, a, b):
        need = ctx.needs_input_grad
        if need:  # the operands as they came (a cast copy would cut them from the graph)
            ctx.save_for_backward(b if need[0] else None, a if need[1] else None)
        if not (type(b) in _PY_NUMBERS and type(a) is _ndarray and a.dtype.kind == "f"):
            a, b, _ = _promote(a, b, "mul")
        try:
            return np.multiply(a, b)
        except ValueError:
            raise broadcast_error("mul", a, b) from None


class Div(primitives.Div):
    __doc__ = (primitives.Div.__doc__ or "") + (
        "\n    With ``rounding_mode`` ('trunc', 'floor') the result is piecewise constant: "
        "da = db = 0.\n\n    (``number / tensor`` is ``reciprocal(b) * number``, as in "
        "torch: see :func:`div`.)\n"
    )

    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        if rounding_mode not in (None, "trunc", "floor"):
            raise ValueError(
                f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
            )
        ctx.rounding = rounding_mode is not None
        if ctx.needs_input_grad and not ctx.rounding:  # as they came: a cast copy is cut off
            ctx.save_for_backward(b, a if ctx.needs_input_grad[1] else None)
        a, b, rt = _promote(a, b, "div", floating=rounding_mode is None)
        if rt.kind in "iub" and rounding_mode is not None:
            return _integer_division(a, b, rt, rounding_mode)
        out = _checked("div", a, b, np.true_divide)
        if rounding_mode == "floor":  # Python's floor division: 1.0 // 0.1 == 9.0
            out = _checked("div", a, b, np.floor_divide)
        elif rounding_mode == "trunc":
            out = np.trunc(out)
        return out

    @staticmethod
    def backward(ctx, g):
        if ctx.rounding:  # piecewise constant
            return ctx.xp.zeros_like(g), ctx.xp.zeros_like(g)
        return primitives.Div.backward(ctx, g)


def _integer_division(a, b, rt, rounding_mode: str) -> np.ndarray:
    if np.any(np.asarray(b) == 0) and np.size(a):  # (an empty result divides nothing)
        raise ZeroDivisionError(f"div(rounding_mode={rounding_mode!r}): integer division by zero")
    q = _checked("div", a, b, np.floor_divide)
    if rounding_mode == "floor":
        return q
    return np.where((q < 0) & (q * b != a), q + 1, q).astype(rt)  # C-style: toward zero


def _integer_power(a, b, rt: np.dtype):
    """``a ** b`` for integer and bool operands, as torch computes it.

    A negative exponent tensor gives the integer part of ``1 / a ** |b|``: 1 for a == 1,
    +-1 for a == -1, else 0 (NumPy refuses these); a negative Python number is refused,
    as in torch. A bool tensor to a bool (Python)
    exponent stays bool; a bool tensor exponent is refused, as in torch.
    """
    if is_number(b) and b < 0:
        raise RuntimeError("pow: integers to negative integer powers are not allowed")
    if rt.kind == "b":
        if isinstance(b, np.ndarray):
            raise TypeError("pow(): a bool tensor exponent is not supported (as in torch)")
        return np.asarray(a) if b else np.ones_like(a)
    negative = np.asarray(b) < 0
    if not negative.any():
        return _checked("pow", a, b, np.power)
    out = _checked("pow", a, np.where(negative, 0, b).astype(rt), np.power)
    odd = np.asarray(b) % 2 == 1
    inverse = np.where(
        np.asarray(a) == 1, 1, np.where(np.asarray(a) == -1, np.where(odd, -1, 1), 0)
    )
    return np.where(negative, inverse, out).astype(rt)


class Pow(primitives.Pow):
    __doc__ = primitives.Pow.__doc__  # the backward is the core's; forward adds integer powers

    @staticmethod
    def forward(ctx, a, b):
        operands = a, b  # saved as they came: a cast copy would be cut from the graph
        negative_number = (
            is_number(b) and type(b) is not complex and b < 0
        )  # before _promote wraps it (uint8: -2 -> 254)
        a, b, rt = _promote(a, b, "pow")
        if rt.kind in "iub":
            if negative_number:
                raise RuntimeError("pow: integers to negative integer powers are not allowed")
            out = _integer_power(a, b, rt)
        else:
            out = _checked("pow", a, b, power)
        need = ctx.needs_input_grad
        if need:  # out only for db, as torch (x ** 2 then writing into it is fine)
            ctx.save_for_backward(*operands, out if need[1] else None)
            ctx.complex = rt.kind == "c"
        return out


def _check_alpha(a, b, alpha, op: str) -> None:
    """torch refuses a float ``alpha`` when both operands are integral (it would truncate)."""
    if isinstance(alpha, float) and not any(
        isinstance(x, float) or (isinstance(x, Tensor) and x._data.dtype.kind == "f")
        for x in (a, b)
    ):
        raise RuntimeError(
            f"{op}(): for integral input tensors, argument alpha must not be a floating point "
            f"number (got alpha={alpha})"
        )


@gradient_doc(Add)
def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    if type(input) not in _PASS_THROUGH or type(other) not in _PASS_THROUGH:
        input, other = _operand(input, "add"), _operand(other, "add")
    if alpha != 1:
        _check_alpha(input, other, alpha, "add")
        return Add.apply(input, other, alpha=alpha)
    return Add.apply(input, other)  # (no keyword: the common call stays cheap)


@gradient_doc(Sub)
def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    if type(input) not in _PASS_THROUGH or type(other) not in _PASS_THROUGH:
        input, other = _operand(input, "sub"), _operand(other, "sub")
    if alpha != 1:
        _check_alpha(input, other, alpha, "sub")
        return Sub.apply(input, other, alpha=alpha)
    return Sub.apply(input, other)  # (no keyword: the common call stays cheap)


@gradient_doc(Sub)
def subtract(input, other, alpha=1) -> Tensor:
    """:func:`sub` under NumPy's name; torch takes ``alpha`` by position here too."""
    return sub(input, other, alpha=alpha)


@gradient_doc(Mul)
def mul(input, other) -> Tensor:
    """Elementwise product with broadcasting."""
    if type(input) not in _PASS_THROUGH or type(other) not in _PASS_THROUGH:
        input, other = _operand(input, "mul"), _operand(other, "mul")
    return Mul.apply(input, other)


multiply = mul


@gradient_doc(Div)
def div(input, other, *, rounding_mode=None) -> Tensor:
    """True division (ints give the default float dtype); ``rounding_mode`` 'trunc'/'floor'."""
    a, b = _operand(input, "div"), _operand(other, "div")
    if (
        rounding_mode is None
        and not isinstance(a, Tensor)
        and isinstance(b, Tensor)
        and b._data.dtype.kind == "f"
    ):  # number / tensor: reciprocal(b) * number, as torch (which saves 1/b, not b)
        from .unary import reciprocal

        return Mul.apply(reciprocal(b), a)
    return Div.apply(a, b, rounding_mode=rounding_mode)


true_divide = divide = div


def floor_divide(input, other) -> Tensor:
    """``floor(input / other)``, as Python's ``//``. d input = d other = 0 (piecewise
    constant), as in torch."""
    return div(input, other, rounding_mode="floor")


def remainder(input, other) -> Tensor:
    """Python-style modulo ``input - floor(input / other) * other`` (the sign of ``other``).

    d input = g,  d other = -g * floor(input / other)   (``binary.Remainder``)
    """
    from .binary import Remainder

    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("remainder(): expected at least one Tensor argument, got two numbers")
    return Remainder.apply(_operand(input, "remainder"), _operand(other, "remainder"), floor=True)


@gradient_doc(Pow)
def pow(input, exponent) -> Tensor:
    """``input ** exponent`` with broadcasting."""
    return Pow.apply(_operand(input, "pow"), _operand(exponent, "pow"))


# -- selection ---------------------------------------------------------------------------


class Where(Function):
    """out = a where cond else b.   da = g * cond,  db = g * ~cond"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, cond, a, b):
        if cond.dtype != np.bool_:
            cond = cond.astype(bool)
        a, b, _ = _promote(a, b, "where")
        try:
            out = np.where(cond, a, b)
        except ValueError:
            raise broadcast_error("where", cond, a, b) from None
        ctx.save_for_backward(cond)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (cond,) = ctx.saved_tensors
        return None, xp.where(cond, g, 0), xp.where(cond, 0, g)


class Maximum(Function):
    """out = max(a, b) (or min).   Gradient to the operand picked; split in half on ties (as torch)."""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b, pick_max=True):
        refuse_complex_order("maximum" if pick_max else "minimum", a, b)
        ctx.save_for_backward(a, b)  # as they came (a cast copy would be cut from the graph)
        a, b, _ = _promote(a, b, "maximum" if pick_max else "minimum")
        fn = np.maximum if pick_max else np.minimum
        out = _checked("maximum" if pick_max else "minimum", a, b, fn)
        ctx.pick_max = pick_max
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, b = ctx.saved_tensors
        # torch's formula, with where (not g * mask): a nan/inf g must not leak to the loser
        lose_a, lose_b = (a < b, a > b) if ctx.pick_max else (a > b, a < b)
        shared = xp.where(a == b, g / 2, g)
        return xp.where(lose_a, 0, shared), xp.where(lose_b, 0, shared)


@gradient_doc(Where)
def where(condition, input=None, other=None) -> Tensor:
    """``input`` where ``condition`` is True, else ``other`` (broadcast). One argument: nonzero."""
    if input is None and other is None:
        from ..index.indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if isinstance(condition, Tensor) and condition._data.dtype not in (np.bool_, np.uint8):
        raise TypeError(
            f"where(): expected condition to be a bool tensor, got dtype {condition.dtype}"
        )
    return Where.apply(
        _operand(condition, "where"), _operand(input, "where"), _operand(other, "where")
    )


@gradient_doc(Maximum)
def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise max of ``input`` and ``other`` (broadcast).

    d input = g where input > other, g / 2 where equal, else 0 (``d other`` the mirror).
    """
    return Maximum.apply(_tensor(input, "maximum"), _operand(other, "maximum"), pick_max=True)


@gradient_doc(Maximum)
def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise min of ``input`` and ``other`` (broadcast).

    d input = g where input < other, g / 2 where equal, else 0 (``d other`` the mirror).
    """
    return Maximum.apply(_tensor(input, "minimum"), _operand(other, "minimum"), pick_max=False)


# -- in-place variants -----------------------------------------------------------------


def add_(self: Tensor, other, *, alpha=1) -> Tensor:
    return self._apply_inplace(Add, _operand(other, "add_"), alpha=alpha)


def sub_(self: Tensor, other, *, alpha=1) -> Tensor:
    return self._apply_inplace(Sub, _operand(other, "sub_"), alpha=alpha)


def mul_(self: Tensor, other) -> Tensor:
    return self._apply_inplace(Mul, _operand(other, "mul_"))


def div_(self: Tensor, other, *, rounding_mode=None) -> Tensor:
    return self._apply_inplace(Div, _operand(other, "div_"), rounding_mode=rounding_mode)


def pow_(self: Tensor, exponent) -> Tensor:
    return self._apply_inplace(Pow, _operand(exponent, "pow_"))


def remainder_(self: Tensor, other) -> Tensor:
    from .binary import Remainder

    return self._apply_inplace(Remainder, _operand(other, "remainder_"), floor=True)


def floor_divide_(self: Tensor, other) -> Tensor:
    return self._apply_inplace(Div, _operand(other, "floor_divide_"), rounding_mode="floor")


true_divide_ = divide_ = div_
multiply_ = mul_


def subtract_(self: Tensor, other, alpha=1) -> Tensor:
    """In-place :func:`subtract` (torch takes ``alpha`` by position here)."""
    return sub_(self, other, alpha=alpha)
