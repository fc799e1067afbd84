"""One-input elementwise ops: unary math (exp, log, tanh, sigmoid, relu ...), the
piecewise-constant ones (sign, floor, ceil, round), clamp, and dtype casts / copies.
"""

from __future__ import annotations

import math

import numpy as np

from ...core import _dtype as dt
from ...core import primitives
from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import broadcast_error, gradient_doc, refuse_complex_order, sgn, to_float
from .arithmetic import _tensor

# -- unary math ----------------------------------------------------------------------------

# The dtypes a unary op computes in as they are: no complex check, no cast, no widening.
_AS_THEY_ARE = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _unary(
    name: str,
    forward,
    backward,
    doc: str,
    saves: str = "input",
    keep_int=False,
    holomorphic=False,
    complex_as_written=False,
    base: type = Function,
):
    """Build a one-input ``Function`` from its forward and backward formulas.

    ``base``: a core primitive (``core.primitives.Exp``) whose backward is kept
    (``backward`` None); the forward here adds torch's dtype rules to it.

    ``backward(xp, g, x, out)`` gets the namespace to compute with (``ctx.xp``: NumPy,
    or Tensors under ``create_graph``) and the saved input and/or output (None if unsaved).
    ``keep_int``: integer inputs keep their dtype (neg, abs, square); otherwise
    they are computed in the default float dtype, as torch does for exp, log ...
    ``holomorphic``: the formula ``g * f'(x)`` also holds for complex ``x``; torch's
    convention then wants ``g * conj(f'(x))``, computed as ``conj(backward(conj(g)))``.
    ``complex_as_written``: the formula already follows that convention (abs).
    """
    if holomorphic and backward is not None:
        doc += "\n    (complex x: dx = g * conj(f'(x)), torch's convention, docs/complex.md)"

    save_input, save_output = "input" in saves, "output" in saves

    def computed(x):
        """``(x, forward(x))`` for the other dtypes: x cast to a float unless ``keep_int``."""
        if x.dtype.kind == "c" and not (holomorphic or complex_as_written):
            raise NotImplementedError(
                f"{name.lower()}(): not implemented for complex tensors in tinyattn (its "
                "formula is for real numbers); see docs/complex.md for the ops that are"
            )
        if not keep_int:
            x = to_float(x)
        work = dt.accumulation_dtype(x.dtype)
        if work != x.dtype:  # float16: computed in float32 and rounded once, as torch
            return x, np.asarray(forward(x.astype(work))).astype(x.dtype)
        return x, forward(x)

    def fwd(ctx, x):
        if x.dtype in _AS_THEY_ARE:  # (float32, float64: the common case)
            out = forward(x)
        else:
            x, out = computed(x)
        if type(out) is not np.ndarray:  # a NumPy scalar from a 0-d input
            out = np.asarray(out)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x if save_input else None, out if save_output else None)
        return out

    def bwd(ctx, g):
        x, out = ctx.saved_tensors
        xp = ctx.xp
        if holomorphic:
            v = x if x is not None else out
            if v.dtype.kind == "c" if type(v) is np.ndarray else xp.iscomplexobj(v):
                return xp.conj(backward(xp, xp.conj(g), x, out))
        return backward(xp, g, x, out)

    methods = {"forward": staticmethod(fwd), "__doc__": doc}
    if backward is not None:
        methods["backward"] = staticmethod(bwd)
    methods["supports_create_graph"] = True
    methods["supports_complex"] = holomorphic or complex_as_written
    return type(name, (base,), methods)


Neg = _unary("Neg", np.negative, lambda xp, g, x, y: -g, "out = -x.   dx = -g", "", True, True)
Abs = _unary(  # sgn(NaN) = 0, as torch: a NaN element gets gradient 0
    "Abs",
    np.abs,
    lambda xp, g, x, y: g * xp.sgn(x),
    "out = |x|.   dx = g * sgn(x)  (sgn(z) = z / |z| for complex z)",
    keep_int=True,
    complex_as_written=True,
)
Exp = _unary(
    "Exp",
    np.exp,
    None,
    primitives.Exp.__doc__ or "",
    "output",
    holomorphic=True,
    base=primitives.Exp,
)
Expm1 = _unary(
    "Expm1",
    np.expm1,
    lambda xp, g, x, y: g * (y + 1),
    "out = exp(x) - 1.   dx = g * (out + 1)",
    "output",
    holomorphic=True,
)
Log = _unary(
    "Log", np.log, None, primitives.Log.__doc__ or "", holomorphic=True, base=primitives.Log
)
Log2 = _unary(
    "Log2",
    np.log2,
    lambda xp, g, x, y: g / (x * math.log(2.0)),
    "out = log2(x).   dx = g / (x ln 2)",
)
Log1p = _unary(
    "Log1p",
    np.log1p,
    lambda xp, g, x, y: g / (1 + x),
    "out = log(1 + x).   dx = g / (1 + x)",
    holomorphic=True,
)
Sqrt = _unary(
    "Sqrt",
    np.sqrt,
    lambda xp, g, x, y: g / (2 * y),
    "out = sqrt(x).   dx = g / (2 out)",
    "output",
    holomorphic=True,
)
Rsqrt = _unary(
    "Rsqrt",
    lambda x: 1 / np.sqrt(x),
    lambda xp, g, x, y: -0.5 * g * y * y * y,
    "out = 1/sqrt(x).   dx = -g * out**3 / 2",
    "output",
    holomorphic=True,
)
Sin = _unary(
    "Sin",
    np.sin,
    lambda xp, g, x, y: g * xp.cos(x),
    "out = sin(x).   dx = g * cos(x)",
    holomorphic=True,
)
Cos = _unary(
    "Cos",
    np.cos,
    lambda xp, g, x, y: -g * xp.sin(x),
    "out = cos(x).   dx = -g * sin(x)",
    holomorphic=True,
)
Tanh = _unary(
    "Tanh",
    np.tanh,
    lambda xp, g, x, y: g * (1 - y * y),
    "out = tanh(x).   dx = g * (1 - out**2)",
    "output",
    holomorphic=True,
)
Reciprocal = _unary(
    "Reciprocal",
    lambda x: 1 / x,
    lambda xp, g, x, y: -g * y * y,
    "out = 1/x.   dx = -g * out**2",
    "output",
    holomorphic=True,
)
Square = _unary(  # bool squares to int64, as torch
    "Square",
    lambda x: np.square(x.astype(np.int64) if x.dtype == np.bool_ else x),
    lambda xp, g, x, y: 2 * g * x,
    "out = x**2.   dx = 2 g x",
    keep_int=True,
    holomorphic=True,
)


def _sigmoid(x):
    # exp of a non-positive number only: no overflow for large |x|
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


Sigmoid = _unary(
    "Sigmoid",
    _sigmoid,
    lambda xp, g, x, y: g * y * (1 - y),
    "out = 1 / (1 + exp(-x)).   dx = g * out * (1 - out)",
    "output",
)


class Relu(Function):
    """out = max(x, 0).   dx = g * (x > 0)   (g passes at NaN, as torch: only out <= 0 blocks)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x):
        refuse_complex_order("relu", x)
        out = np.maximum(x, 0)
        if ctx.needs_input_grad:
            ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return ctx.xp.where(out <= 0, 0, g)  # not g * mask: nan * 0 = nan


class _ZeroGrad(Function):
    """Piecewise-constant functions (sign, floor, ceil, round): the gradient is 0."""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, fn):
        return fn(x)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.zeros_like(g), None


class Clamp(Function):
    """out = min(max(x, lo), hi); ``lo``/``hi`` are numbers, arrays (broadcast) or None.

    dx   = g where lo <= x <= hi, else 0
    dlo  = g where x < lo (and lo < hi: when lo > hi the result is hi)
    dhi  = g where x > hi, or where hi < lo
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, lo, hi):
        refuse_complex_order("clamp", x, lo, hi)
        out = x
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
        xp = ctx.xp
        x, lo, hi = ctx.saved_tensors
        if lo is None:
            keep = x <= hi
        else:
            keep = x >= lo if hi is None else xp.logical_and(x >= lo, x <= hi)
        dx = xp.where(keep, g, 0)
        need = ctx.needs_input_grad
        dlo = dhi = None
        if len(need) > 1 and need[1]:
            below = x < lo
            dlo = xp.where(xp.logical_and(below, lo < hi) if hi is not None else below, g, 0)
        if len(need) > 2 and need[2]:
            above = x > hi
            dhi = xp.where(xp.logical_or(above, hi < lo) if lo is not None else above, g, 0)
        return dx, dlo, dhi


class Lerp(Function):
    """out = start + weight * (end - start)   (all three broadcast).

    dstart = g * (1 - weight),  dend = g * weight,  dweight = g * (end - start)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, start, end, weight):
        ctx.save_for_backward(start, end, weight)
        diff = end - start
        # torch's two forms: from whichever end is nearer (the same value, less rounding;
        # with an infinite end the two forms give torch's inf/NaN pattern).
        out = np.where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))
        return np.asarray(out, dtype=start.dtype)

    @staticmethod
    def backward(ctx, g):
        start, end, weight = ctx.saved_tensors
        return g * (1 - weight), g * weight, g * (end - start)


@gradient_doc(Lerp)
def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)``; ``weight`` is a number or a
    tensor, and all shapes broadcast. ``input`` and ``end`` must share a floating dtype.
    """
    input, end = _tensor(input, "lerp"), _tensor(end, "lerp")
    if input._data.dtype != end._data.dtype or input._data.dtype.kind != "f":
        raise RuntimeError(
            f"lerp(): expected input and end to have the same floating dtype, got "
            f"{input.dtype} and {end.dtype}"
        )
    if isinstance(weight, Tensor):
        w = weight
        shapes = (input.shape, end.shape, weight.shape)
    else:
        w = np.asarray(_bound(weight, "lerp", "weight"), dtype=input._data.dtype)
        shapes = (input.shape, end.shape)
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise broadcast_error("lerp", *(np.empty(s) for s in shapes)) from None
    return Lerp.apply(input, end, w)


class Cast(Function):
    """out = x converted to another dtype.   dx = g (cast back to x's dtype by the engine)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, np_dtype, copy=False):
        if x.dtype.kind == "c" and np_dtype.kind != "c":  # the real part (torch warns, once)
            return x.real.astype(np_dtype)
        return x.astype(np_dtype, copy=copy)

    @staticmethod
    def backward(ctx, g):
        return g, None


class Clone(Function):
    """out = a copy of x.   dx = g"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, order="K"):
        # "K" keeps a transposed layout (torch's clone preserves strides); "C": contiguous()
        return np.array(x, copy=True, order=order)

    @staticmethod
    def backward(ctx, g):
        return g


def _make_unary(cls, name):
    def fn(input: Tensor) -> Tensor:
        if isinstance(input, Tensor):
            return cls.apply(input)
        return cls.apply(_tensor(input, name))  # (raises)

    fn.__name__ = name
    fn.__doc__ = cls.__doc__
    return fn


neg = negative = _make_unary(Neg, "neg")
abs = absolute = _make_unary(Abs, "abs")
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


@gradient_doc(_ZeroGrad)
def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (0 for NaN, as torch). dx = 0."""
    if _tensor(input, "sign")._data.dtype.kind == "c":
        raise RuntimeError(
            "sign(): Unlike NumPy, torch.sign is not intended to support complex numbers. "
            "Please use torch.sgn instead."
        )
    return _ZeroGrad.apply(_tensor(input, "sign"), sgn)


@gradient_doc(_ZeroGrad)
def floor(input: Tensor) -> Tensor:
    """Round down to a whole number. dx = 0."""
    return _rounding(input, np.floor, "floor")


@gradient_doc(_ZeroGrad)
def ceil(input: Tensor) -> Tensor:
    """Round up to a whole number. dx = 0."""
    return _rounding(input, np.ceil, "ceil")


@gradient_doc(_ZeroGrad)
def round(input: Tensor, decimals: int = 0) -> Tensor:
    """Round half to even, to ``decimals`` decimal places. dx = 0."""
    return _rounding(input, lambda x: np.round(x, decimals), "round")


def _bound(v, op: str, name: str):
    if v is None or isinstance(v, Tensor):
        return v
    if isinstance(v, bool):  # torch takes True/False as the numbers 1/0
        return int(v)
    if isinstance(v, np.bool_):  # and a NumPy bool as a float (clamp(int_t, np.True_) is float)
        return float(v)
    if isinstance(v, (int, float, np.number)):
        return v
    raise TypeError(
        f"{op}(): argument '{name}' must be a number, a Tensor or None, not {type_name(v)}"
    )


@gradient_doc(Clamp)
def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]``; either may be None, a number or a (broadcast) tensor."""
    if min is None and max is None:
        raise ValueError("clamp(): at least one of 'min' or 'max' must not be None")
    return Clamp.apply(
        _tensor(input, "clamp"), _bound(min, "clamp", "min"), _bound(max, "clamp", "max")
    )


clip = clamp


@gradient_doc(Cast)
def cast(input: Tensor, target: dt.dtype, copy: bool = False) -> Tensor:
    """``input`` converted to ``target``; the same tensor when nothing changes."""
    if input._data.dtype == target.np_dtype and not copy:
        return input
    if input._data.dtype.kind == "c" and not target.is_complex:
        from ..complex import warn_discarding_imaginary

        warn_discarding_imaginary()
        if not target.is_floating_point:
            return Tensor._make(input._data.real.astype(target.np_dtype))
    if not (target.is_floating_point or target.is_complex):  # outside the graph, as in torch
        return Tensor._make(input._data.astype(target.np_dtype))
    return Cast.apply(input, target.np_dtype, copy=copy)


@gradient_doc(Clone)
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory; gradients flow through unchanged."""
    return Clone.apply(_tensor(input, "clone"))


@gradient_doc(Clone)
def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """``input`` itself if C-contiguous, else a contiguous copy."""
    return input if input._data.flags.c_contiguous else Clone.apply(input, order="C")


# -- in-place variants -----------------------------------------------------------------


def clamp_(self: Tensor, min=None, max=None) -> Tensor:
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


# -- erf: the error function (gelu's Phi) ------------------------------------------------------
_erf_ufunc = None


def _erf_scalar(v: float) -> float:
    return math.erf(v)


def _erf(x: np.ndarray) -> np.ndarray:
    """Elementwise erf in float64 (NumPy has none; numba compiles math.erf once, lazily)."""
    global _erf_ufunc
    if _erf_ufunc is None:
        from ...kernels._jit import vectorize

        _erf_ufunc = vectorize(["float64(float64)"], cache=True)(_erf_scalar)
    return _erf_ufunc(np.asarray(x, dtype=np.float64))


class Erf(Function):
    """out = erf(x).   dx = g * 2 / sqrt(pi) * exp(-x^2)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _erf(x).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (x,) = ctx.saved_tensors
        return g * (2.0 / math.sqrt(math.pi)) * xp.exp(-x * x)


@gradient_doc(Erf)
def erf(input: Tensor) -> Tensor:
    """The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise."""
    x = _tensor(input, "erf")
    if not x.is_floating_point():
        x = x.to(dt.get_default_dtype())
    return Erf.apply(x)
