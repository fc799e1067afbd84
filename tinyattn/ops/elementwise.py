"""Elementwise ops: arithmetic, unary math, activations, comparisons, casts.

Binary ops broadcast their operands; each ``backward`` returns gradients of the
broadcast shape and the engine sums them back to each operand's shape.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import broadcast_error, to_float

# -- operand handling ------------------------------------------------------------------


_PY_NUMBERS = (int, float)  # by exact type: bool (an int subclass) takes the full rules


def _promote(a, b, op: str, floating: bool = False):
    """Cast array operands to torch's result dtype (Python scalars stay scalars)."""
    # Fast paths, no cast needed: two arrays of one dtype, or a float array with a
    # Python int/float (torch keeps the tensor's float dtype). Else the full rules.
    if type(a) is np.ndarray:
        if type(b) is np.ndarray:
            if a.dtype == b.dtype and (not floating or a.dtype.kind == "f"):
                return a, b, a.dtype
        elif type(b) in _PY_NUMBERS and a.dtype.kind == "f":
            return a, b, a.dtype
    elif type(b) is np.ndarray and type(a) in _PY_NUMBERS and b.dtype.kind == "f":
        return a, b, b.dtype
    rt = dt.float_result_type(a, b) if floating else dt.result_type(a, b)
    # NumPy scalars are "strong" under NEP 50 (float32 array / np.float64 -> float64);
    # torch treats them like Python numbers, so hand NumPy plain Python scalars.
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(b, np.generic):
        b = b.item()
    if isinstance(a, np.ndarray) and a.dtype != rt:
        a = a.astype(rt)
    if isinstance(b, np.ndarray) and b.dtype != rt:
        b = b.astype(rt)
    return a, b, rt


def _operand(x, op: str):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (int, float, bool, np.number, np.bool_)):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._make(x)
    raise TypeError(f"{op}(): unsupported operand type {type(x).__name__}")


def _is_bool(x) -> bool:
    return isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype == np.bool_)


def _checked(op: str, a, b, fn):
    try:
        return fn(a, b)
    except ValueError:
        raise broadcast_error(op, a, b) from None


# -- arithmetic --------------------------------------------------------------------------


class Add(Function):
    """out = a + alpha * b.   da = g,  db = alpha * g"""

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        a, b, _ = _promote(a, b, "add")
        ctx.alpha = alpha
        if alpha != 1:
            b = b * alpha
        return _checked("add", a, b, np.add)

    @staticmethod
    def backward(ctx, g):
        return g, (g if ctx.alpha == 1 else g * ctx.alpha)


class Sub(Function):
    """out = a - alpha * b.   da = g,  db = -alpha * g"""

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if _is_bool(a) or _is_bool(b):
            raise TypeError(
                "sub: subtraction with a bool operand is not supported (as in torch); to invert "
                "a mask use ~ or logical_not(), or convert with .int() / .float() first"
            )
        a, b, _ = _promote(a, b, "sub")
        ctx.alpha = alpha
        if alpha != 1:
            b = b * alpha
        return _checked("sub", a, b, np.subtract)

    @staticmethod
    def backward(ctx, g):
        return g, -g if ctx.alpha == 1 else g * -ctx.alpha


class Mul(Function):
    """out = a * b.   da = g * b,  db = g * a"""

    @staticmethod
    def forward(ctx, a, b):
        a, b, _ = _promote(a, b, "mul")
        need = ctx.needs_input_grad
        if need:
            ctx.save_for_backward(b if need[0] else None, a if need[1] else None)
        return _checked("mul", a, b, np.multiply)

    @staticmethod
    def backward(ctx, g):
        b, a = ctx.saved_tensors
        return (g * b if b is not None else None), (g * a if a is not None else None)


class Div(Function):
    """out = a / b (true division).   da = g / b,  db = -g * a / b**2 = -g * out / b"""

    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        if rounding_mode not in (None, "trunc", "floor"):
            raise ValueError(
                f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
            )
        a, b, rt = _promote(a, b, "div", floating=rounding_mode is None)
        if rt.kind in "iub" and rounding_mode is not None:
            if np.any(np.asarray(b) == 0):
                raise ZeroDivisionError(
                    f"div(rounding_mode={rounding_mode!r}): integer division by zero"
                )
            if rounding_mode == "floor":
                out = _checked("div", a, b, np.floor_divide)
            else:  # C-style: round the exact quotient toward zero
                q = _checked("div", a, b, np.floor_divide)
                out = np.where((q < 0) & (q * b != a), q + 1, q).astype(rt)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = _checked("div", a, b, np.true_divide)
                if rounding_mode == "floor":  # Python's floor division: 1.0 // 0.1 == 9.0
                    out = _checked("div", a, b, np.floor_divide)
                elif rounding_mode == "trunc":
                    out = np.trunc(out)
        ctx.rounding = rounding_mode is not None
        if ctx.needs_input_grad:
            ctx.save_for_backward(b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        b, out = ctx.saved_tensors
        if ctx.rounding:
            return np.zeros_like(g), np.zeros_like(g)
        da = g / b if ctx.needs_input_grad[0] else None
        db = -g * out / b if ctx.needs_input_grad[1] else None
        return da, db


class Pow(Function):
    """out = a ** b.   da = g * b * a**(b-1),  db = g * out * log(a)  (0 where a == 0)"""

    @staticmethod
    def forward(ctx, a, b):
        a, b, rt = _promote(a, b, "pow")
        if rt.kind in "iu" and np.any(np.asarray(b) < 0):
            raise RuntimeError("pow: integers to negative integer powers are not allowed")
        out = _checked("pow", a, b, np.power)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        da = db = None
        if ctx.needs_input_grad[0]:
            if np.isscalar(b) and b == 2:
                da = g * 2 * a
            else:
                da = g * b * np.power(a, b - 1)
        if len(ctx.needs_input_grad) > 1 and ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                db = g * out * np.log(a)
            db = np.where((a == 0) & (np.asarray(b) >= 0), 0, db)
        return da, db


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


def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` with broadcasting."""
    a, b = _operand(input, "add"), _operand(other, "add")
    if alpha != 1:
        _check_alpha(a, b, alpha, "add")
    return Add.apply(a, b, alpha=alpha)


def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    a, b = _operand(input, "sub"), _operand(other, "sub")
    if alpha != 1:
        _check_alpha(a, b, alpha, "sub")
    return Sub.apply(a, b, alpha=alpha)


subtract = sub


def mul(input, other) -> Tensor:
    """Elementwise product with broadcasting."""
    return Mul.apply(_operand(input, "mul"), _operand(other, "mul"))


multiply = mul


def div(input, other, *, rounding_mode=None) -> Tensor:
    """True division (ints give the default float dtype); ``rounding_mode`` 'trunc'/'floor'."""
    return Div.apply(_operand(input, "div"), _operand(other, "div"), rounding_mode=rounding_mode)


true_divide = divide = div


def floor_divide(input, other) -> Tensor:
    return div(input, other, rounding_mode="floor")


def remainder(input, other) -> Tensor:
    """Python-style modulo (sign of the divisor). Not differentiable."""
    a, b = _operand(input, "remainder"), _operand(other, "remainder")
    a = a._data if isinstance(a, Tensor) else a
    b = b._data if isinstance(b, Tensor) else b
    a, b, _ = _promote(a, b, "remainder")
    return Tensor._make(np.asarray(np.mod(a, b)))


def pow(input, exponent) -> Tensor:  # noqa: A001 - torch's name
    """``input ** exponent`` with broadcasting."""
    return Pow.apply(_operand(input, "pow"), _operand(exponent, "pow"))


# -- unary math ----------------------------------------------------------------------------


def _unary(name: str, forward, backward, doc: str, saves: str = "input", keep_int=False):
    """Build a one-input ``Function`` from its forward and backward formulas.

    ``backward(g, x, out)`` gets the saved input and/or output (None if unsaved).
    ``keep_int``: integer inputs keep their dtype (neg, abs, square); otherwise
    they are computed in the default float dtype, as torch does for exp, log ...
    """

    save_input, save_output = "input" in saves, "output" in saves

    def fwd(ctx, x):
        if not keep_int:
            x = to_float(x)
        out = forward(x)
        if type(out) is not np.ndarray:  # a NumPy scalar from a 0-d input
            out = np.asarray(out)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x if save_input else None, out if save_output else None)
        return out

    def bwd(ctx, g):
        x, out = ctx.saved_tensors
        return backward(g, x, out)

    cls = type(
        name,
        (Function,),
        {"forward": staticmethod(fwd), "backward": staticmethod(bwd), "__doc__": doc},
    )
    return cls


Neg = _unary("Neg", np.negative, lambda g, x, y: -g, "out = -x.   dx = -g", "", keep_int=True)
Abs = _unary(
    "Abs", np.abs, lambda g, x, y: g * np.sign(x), "out = |x|.   dx = g * sign(x)", keep_int=True
)
Exp = _unary("Exp", np.exp, lambda g, x, y: g * y, "out = exp(x).   dx = g * out", "output")
Expm1 = _unary(
    "Expm1",
    np.expm1,
    lambda g, x, y: g * (y + 1),
    "out = exp(x) - 1.   dx = g * (out + 1)",
    "output",
)
Log = _unary("Log", np.log, lambda g, x, y: g / x, "out = log(x).   dx = g / x")
Log2 = _unary(
    "Log2",
    np.log2,
    lambda g, x, y: g / (x * np.log(2.0)).astype(x.dtype),
    "out = log2(x).   dx = g / (x ln 2)",
)
Log1p = _unary(
    "Log1p", np.log1p, lambda g, x, y: g / (1 + x), "out = log(1 + x).   dx = g / (1 + x)"
)
Sqrt = _unary(
    "Sqrt", np.sqrt, lambda g, x, y: g / (2 * y), "out = sqrt(x).   dx = g / (2 out)", "output"
)
Rsqrt = _unary(
    "Rsqrt",
    lambda x: 1 / np.sqrt(x),
    lambda g, x, y: -0.5 * g * y * y * y,
    "out = 1/sqrt(x).   dx = -g * out**3 / 2",
    "output",
)
Sin = _unary("Sin", np.sin, lambda g, x, y: g * np.cos(x), "out = sin(x).   dx = g * cos(x)")
Cos = _unary("Cos", np.cos, lambda g, x, y: -g * np.sin(x), "out = cos(x).   dx = -g * sin(x)")
Tanh = _unary(
    "Tanh",
    np.tanh,
    lambda g, x, y: g * (1 - y * y),
    "out = tanh(x).   dx = g * (1 - out**2)",
    "output",
)
Reciprocal = _unary(
    "Reciprocal",
    lambda x: 1 / x,
    lambda g, x, y: -g * y * y,
    "out = 1/x.   dx = -g * out**2",
    "output",
)
Square = _unary(
    "Square", np.square, lambda g, x, y: 2 * g * x, "out = x**2.   dx = 2 g x", keep_int=True
)


def _sigmoid(x):
    # exp of a non-positive number only: no overflow for large |x|
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


Sigmoid = _unary(
    "Sigmoid",
    _sigmoid,
    lambda g, x, y: g * y * (1 - y),
    "out = 1 / (1 + exp(-x)).   dx = g * out * (1 - out)",
    "output",
)


class Relu(Function):
    """out = max(x, 0).   dx = g * (x > 0)"""

    @staticmethod
    def forward(ctx, x):
        out = np.maximum(x, 0)
        if ctx.needs_input_grad:
            ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out > 0)


class _ZeroGrad(Function):
    """Piecewise-constant functions (sign, floor, ceil, round): the gradient is 0."""

    @staticmethod
    def forward(ctx, x, fn):
        return fn(x)

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g), None


class Clamp(Function):
    """out = min(max(x, lo), hi); ``lo``/``hi`` are numbers, arrays (broadcast) or None.

    dx   = g where lo <= x <= hi, else 0
    dlo  = g where x < lo (and lo < hi: when lo > hi the result is hi)
    dhi  = g where x > hi, or where hi < lo
    """

    @staticmethod
    def forward(ctx, x, lo, hi):
        out = x
        with np.errstate(invalid="ignore"):
            try:
                if lo is not None:
                    out = np.maximum(out, lo)
                if hi is not None:
                    out = np.minimum(out, hi)
            except ValueError:
                bounds = [v for v in (lo, hi) if v is not None]
                raise broadcast_error("clamp", x, *bounds) from None
        out = np.asarray(out, dtype=dt.result_type(x, *(v for v in (lo, hi) if v is not None)))
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, lo, hi)
        return out

    @staticmethod
    def backward(ctx, g):
        x, lo, hi = ctx.saved_tensors
        zero = np.zeros((), dtype=g.dtype)
        keep = True
        if lo is not None:
            keep = keep & (x >= lo)
        if hi is not None:
            keep = keep & (x <= hi)
        dx = np.where(keep, g, zero)
        need = ctx.needs_input_grad
        dlo = dhi = None
        if len(need) > 1 and need[1]:
            below = x < lo
            dlo = np.where(below & (lo < hi) if hi is not None else below, g, zero)
        if len(need) > 2 and need[2]:
            above = x > hi
            dhi = np.where(above | (hi < lo) if lo is not None else above, g, zero)
        return dx, dlo, dhi


class Where(Function):
    """out = a where cond else b.   da = g * cond,  db = g * ~cond"""

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
        (cond,) = ctx.saved_tensors
        zero = np.zeros((), dtype=g.dtype)
        return None, np.where(cond, g, zero), np.where(cond, zero, g)


class Maximum(Function):
    """out = max(a, b).   Gradient to the larger operand; split in half on ties (as torch)."""

    @staticmethod
    def forward(ctx, a, b, pick_max=True):
        a, b, _ = _promote(a, b, "maximum" if pick_max else "minimum")
        fn = np.maximum if pick_max else np.minimum
        out = _checked("maximum" if pick_max else "minimum", a, b, fn)
        ctx.save_for_backward(a, b)
        ctx.pick_max = pick_max
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        first = (a > b) if ctx.pick_max else (a < b)
        tie = a == b
        wa = first + 0.5 * tie
        wb = (~first & ~tie) + 0.5 * tie
        return (g * wa).astype(g.dtype), (g * wb).astype(g.dtype)


class Cast(Function):
    """out = x converted to another dtype.   dx = g (cast back to x's dtype by the engine)"""

    @staticmethod
    def forward(ctx, x, np_dtype, copy=False):
        return x.astype(np_dtype, copy=copy)

    @staticmethod
    def backward(ctx, g):
        return g, None


class Clone(Function):
    """out = a copy of x.   dx = g"""

    @staticmethod
    def forward(ctx, x, order="K"):
        # "K" keeps a transposed layout (torch's clone preserves strides); "C": contiguous()
        return np.array(x, copy=True, order=order)

    @staticmethod
    def backward(ctx, g):
        return g


def _tensor(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    return x


def _make_unary(cls, name):
    def fn(input: Tensor) -> Tensor:
        return cls.apply(_tensor(input, name))

    fn.__name__ = name
    fn.__doc__ = cls.__doc__
    return fn


neg = negative = _make_unary(Neg, "neg")
abs = absolute = _make_unary(Abs, "abs")  # noqa: A001
exp = _make_unary(Exp, "exp")
expm1 = _make_unary(Expm1, "expm1")
log = _make_unary(Log, "log")
log2 = _make_unary(Log2, "log2")
log1p = _make_unary(Log1p, "log1p")
sqrt = _make_unary(Sqrt, "sqrt")
rsqrt = _make_unary(Rsqrt, "rsqrt")
sin = _make_unary(Sin, "sin")
cos = _make_unary(Cos, "cos")
tanh = _make_unary(Tanh, "tanh")
sigmoid = _make_unary(Sigmoid, "sigmoid")
relu = _make_unary(Relu, "relu")
reciprocal = _make_unary(Reciprocal, "reciprocal")
square = _make_unary(Square, "square")


def _rounding(input: Tensor, fn, op: str) -> Tensor:
    x = _tensor(input, op)
    if x._data.dtype.kind != "f":  # integers are already whole: a copy, as in torch
        return Tensor._make(x._data.copy())
    return _ZeroGrad.apply(x, fn)


def sign(input: Tensor) -> Tensor:
    return _ZeroGrad.apply(_tensor(input, "sign"), np.sign)


def floor(input: Tensor) -> Tensor:
    return _rounding(input, np.floor, "floor")


def ceil(input: Tensor) -> Tensor:
    return _rounding(input, np.ceil, "ceil")


def round(input: Tensor, decimals: int = 0) -> Tensor:  # noqa: A001
    return _rounding(input, lambda x: np.round(x, decimals), "round")


def _bound(v, op: str, name: str):
    if v is None or isinstance(v, Tensor):
        return v
    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
        return v
    raise TypeError(
        f"{op}(): argument '{name}' must be a number, a Tensor or None, not {type(v).__name__}"
    )


def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """Limit values to ``[min, max]``; either may be None, a number or a (broadcast) tensor."""
    if min is None and max is None:
        raise ValueError("clamp(): at least one of 'min' or 'max' must not be None")
    return Clamp.apply(
        _tensor(input, "clamp"), _bound(min, "clamp", "min"), _bound(max, "clamp", "max")
    )


clip = clamp


def where(condition, input=None, other=None) -> Tensor:
    """``input`` where ``condition`` is True, else ``other`` (broadcast). One argument: nonzero."""
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    return Where.apply(
        _operand(condition, "where"), _operand(input, "where"), _operand(other, "where")
    )


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return Maximum.apply(_tensor(input, "maximum"), _operand(other, "maximum"), pick_max=True)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return Maximum.apply(_tensor(input, "minimum"), _operand(other, "minimum"), pick_max=False)


def cast(input: Tensor, target: dt.dtype, copy: bool = False) -> Tensor:
    """``input`` converted to ``target``; the same tensor when nothing changes."""
    if input._data.dtype == target.np_dtype and not copy:
        return input
    if not target.is_floating_point:  # integer results are outside the graph, as in torch
        return Tensor._make(input._data.astype(target.np_dtype))
    return Cast.apply(input, target.np_dtype, copy=copy)


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory; gradients flow through unchanged."""
    return Clone.apply(_tensor(input, "clone"))


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """``input`` itself if C-contiguous, else a contiguous copy."""
    return input if input._data.flags.c_contiguous else Clone.apply(input, order="C")


# -- comparisons and logic (not differentiable) -----------------------------------------


def _compare(np_fn, name):
    def fn(input, other) -> Tensor:
        a = input._data if isinstance(input, Tensor) else input
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(b, (list, tuple)):
            b = np.asarray(b)
        a, b, _ = _promote(a, b, name)
        return Tensor._make(np.asarray(_checked(name, a, b, np_fn)))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` as a bool tensor (not differentiable)."
    return fn


eq = equal_elementwise = _compare(np.equal, "eq")
ne = not_equal = _compare(np.not_equal, "ne")
lt = less = _compare(np.less, "lt")
le = less_equal = _compare(np.less_equal, "le")
gt = greater = _compare(np.greater, "gt")
ge = greater_equal = _compare(np.greater_equal, "ge")
logical_and = _compare(np.logical_and, "logical_and")
logical_or = _compare(np.logical_or, "logical_or")
logical_xor = _compare(np.logical_xor, "logical_xor")


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements."""
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))


def _bitwise(np_fn, name):
    def fn(input, other) -> Tensor:
        a = input._data if isinstance(input, Tensor) else input
        b = other._data if isinstance(other, Tensor) else other
        a, b, rt = _promote(a, b, name)
        if rt.kind == "f":
            raise TypeError(f"{name}: only bool and integer tensors are supported, got {rt}")
        return Tensor._make(np.asarray(_checked(name, a, b, np_fn)))

    fn.__name__ = name
    return fn


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def logical_not(input: Tensor) -> Tensor:
    return Tensor._make(np.logical_not(input._data))


def logical_not_or_invert(input: Tensor) -> Tensor:
    """``~x``: logical not on bool tensors, bitwise not on integers."""
    if input._data.dtype.kind == "f":
        raise TypeError(
            f"~ (bitwise_not) is only supported for bool and integer tensors, got {input.dtype}"
        )
    return Tensor._make(np.invert(input._data))


bitwise_not = logical_not_or_invert


def isnan(input: Tensor) -> Tensor:
    return Tensor._make(np.isnan(input._data))


def isinf(input: Tensor) -> Tensor:
    return Tensor._make(np.isinf(input._data))


def isfinite(input: Tensor) -> Tensor:
    return Tensor._make(np.isfinite(input._data))


def allclose(input: Tensor, other, rtol: float = 1e-5, atol: float = 1e-8, equal_nan=False) -> bool:
    b = other._data if isinstance(other, Tensor) else other
    return bool(np.allclose(input._data, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(
    input: Tensor, other, rtol: float = 1e-5, atol: float = 1e-8, equal_nan=False
) -> Tensor:
    b = other._data if isinstance(other, Tensor) else other
    return Tensor._make(np.isclose(input._data, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


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


def clamp_(self: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise ValueError("clamp_(): at least one of 'min' or 'max' must not be None")
    return self._apply_inplace(Clamp, _bound(min, "clamp_", "min"), _bound(max, "clamp_", "max"))


clip_ = clamp_


def neg_(self: Tensor) -> Tensor:
    return self._apply_inplace(Neg)


def exp_(self: Tensor) -> Tensor:
    return self._apply_inplace(Exp)


def log_(self: Tensor) -> Tensor:
    return self._apply_inplace(Log)


def sqrt_(self: Tensor) -> Tensor:
    return self._apply_inplace(Sqrt)


def abs_(self: Tensor) -> Tensor:
    return self._apply_inplace(Abs)


def relu_(self: Tensor) -> Tensor:
    return self._apply_inplace(Relu)


def sigmoid_(self: Tensor) -> Tensor:
    return self._apply_inplace(Sigmoid)


def tanh_(self: Tensor) -> Tensor:
    return self._apply_inplace(Tanh)


class Fill(Function):
    """out = value everywhere (x's shape).   dx = 0,  dvalue = sum(g)"""

    @staticmethod
    def forward(ctx, x, value):
        return np.full(x.shape, value, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g), g.sum()


class Copy(Function):
    """out = src broadcast to x's shape and cast to x's dtype.   dx = 0,  dsrc = g"""

    @staticmethod
    def forward(ctx, x, src):
        try:
            out = np.broadcast_to(src, x.shape)
        except ValueError:
            raise ValueError(
                f"copy_: source of shape {tuple(np.shape(src))} cannot be broadcast to the "
                f"destination shape {tuple(x.shape)}"
            ) from None
        return out.astype(x.dtype, copy=True)

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g), g


def fill_(self: Tensor, value) -> Tensor:
    """Fill with ``value`` (a number or a one-element tensor) in place."""
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
        )
    return self._apply_inplace(Fill, value)


def zero_(self: Tensor) -> Tensor:
    return self._apply_inplace(Fill, 0)


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor."""
    if not isinstance(src, Tensor):
        src = Tensor._make(np.asarray(src))
    return self._apply_inplace(Copy, src)


# Random fills write data only (used under no_grad by nn.init).


def _random_fill(self: Tensor, values: np.ndarray, op: str) -> Tensor:
    from .inplace import check_inplace_allowed

    check_inplace_allowed(self, op)
    self._data[...] = values
    self._bump_version()
    return self


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    from ..random import _numpy_generator

    rng = _numpy_generator(generator)
    return _random_fill(self, rng.uniform(a, b, self.shape), "uniform_")


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    from ..random import _numpy_generator

    rng = _numpy_generator(generator)
    return _random_fill(self, rng.normal(mean, std, self.shape), "normal_")


def bernoulli_(self: Tensor, p: float = 0.5, *, generator=None) -> Tensor:
    from ..random import _numpy_generator

    rng = _numpy_generator(generator)
    return _random_fill(self, rng.random(self.shape) < p, "bernoulli_")


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    from ..random import _numpy_generator

    rng = _numpy_generator(generator)
    return _random_fill(self, rng.exponential(1.0 / lambd, self.shape), "exponential_")


def random_(self: Tensor, low: int = 0, high: int | None = None, *, generator=None) -> Tensor:
    from ..random import _numpy_generator

    if high is None:
        low, high = 0, low if low else 2**24
    rng = _numpy_generator(generator)
    return _random_fill(self, rng.integers(low, high, self.shape), "random_")
