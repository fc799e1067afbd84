"""Reductions: sum, mean, var/std, max/min (with indices), amax/amin, logsumexp, norm ...

Backward of a reduction spreads the gradient back over the reduced dims:
``_expand(g)`` re-inserts them (size 1) and broadcasting does the rest.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from ...core import _dtype as dt
from ...core import primitives
from ...core.function import Function
from ...core.primitives import Sum
from ...core.primitives import expand_reduced as _expand
from ...core.tensor import Tensor
from .._accumulation import accumulates_in_float32
from .._util import gradient_doc, normalize_dim, normalize_dims, refuse_complex_order
from .cumulative import cumsum

__all__ = [
    "sum",
    "mean",
    "var",
    "std",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "logsumexp",
    "norm",
    "prod",
    "any",
    "all",
    "cumsum",
    "count_nonzero",
    "var_mean",
    "std_mean",
]

values_indices = namedtuple("values_indices", ["values", "indices"])
max_return = min_return = values_indices


def _sum_dtype(x: np.ndarray, dtype) -> np.dtype:
    if dtype is not None:
        return dt.to_dtype(dtype).np_dtype
    return np.dtype(np.int64) if x.dtype.kind in "biu" else x.dtype


@accumulates_in_float32("input")
@gradient_doc(Sum)
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum over ``dim`` (int, tuple, or None for all); ints and bools sum as int64."""
    axes = normalize_dims(dim, input.ndim, "sum")
    return Sum.apply(input, axes, keepdim, _sum_dtype(input._data, dtype))


class Mean(Function):
    """out = mean of x over ``dim``.   dx = g / n broadcast over the reduced dims"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        ctx.axes, ctx.keepdim, ctx.shape = axes, keepdim, x.shape
        n = ctx.n = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
        if x.size == 0:  # nan, as in torch (np.mean would also warn)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.sum(x, axis=axes, keepdims=keepdim) / x.dtype.type(n)
        return np.mean(x, axis=axes, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        return _expand(ctx.xp, g / ctx.n, ctx.axes, ctx.keepdim, ctx.shape), None, None


@accumulates_in_float32("input")
@gradient_doc(Mean)
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over ``dim``; the input must be floating (as in torch)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {input.dtype}"
        )
    axes = normalize_dims(dim, input.ndim, "mean")
    return Mean.apply(input, axes, keepdim)


class Var(Function):
    """out = sum((x - mean)^2) / (n - correction).   dx = 2 g (x - mean) / (n - correction)

    When n <= correction the forward divides by 0 (inf or nan, as torch); the gradient over
    given dims keeps the signed n - correction, as torch's does (finite when n < correction).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, axes, keepdim, correction):
        n = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
        denominator = builtins.max(n - correction, 0)  # the module's max is the tensor op
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.sum(x, axis=axes, keepdims=True) / n
            centred = x - mean
            out = np.sum(centred * centred, axis=axes, keepdims=keepdim) / denominator
        ctx.axes, ctx.keepdim, ctx.shape = axes, keepdim, x.shape
        # torch's gradient over given dims keeps the signed n - correction (finite when
        # n < correction); over all dims it uses the clamped one, as the forward does
        ctx.n, ctx.dof = n, (n - correction) if axes is not None else denominator
        ctx.save_for_backward(x)  # x - mean is recomputed: it is differentiable (create_graph)
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x = ctx.saved_tensors[0]
        with np.errstate(invalid="ignore", divide="ignore"):  # n <= correction: nan, as torch
            scale = 2.0 / ctx.dof if ctx.dof else math.inf
            grad = _expand(xp, g, ctx.axes, ctx.keepdim, ctx.shape) * _centred(xp, x, ctx) * scale
        return grad, None, None, None


def _centred(xp, x, ctx):
    """``x - mean(x)`` over the reduced axes, as forward computed it."""
    return x - xp.sum(x, axis=ctx.axes, keepdims=True) / ctx.n


def _correction(unbiased, correction) -> int:
    if correction is not None:
        return int(correction)
    return 1 if unbiased in (None, True) else 0


@accumulates_in_float32("input")
@gradient_doc(Var)
def var(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None
) -> Tensor:
    """Variance over ``dim`` (Bessel-corrected by default, as in torch)."""
    return _var(input, dim, unbiased, keepdim, correction, "var")


def _var(input, dim, unbiased, keepdim, correction, op: str) -> Tensor:
    if isinstance(unbiased, bool) is False and unbiased is not None and dim is None:
        dim, unbiased = unbiased, None
    if input._data.dtype.kind == "c":  # torch: mean |z - mean|^2, = var(Re z) + var(Im z)
        parts = [
            _var(p, dim, unbiased, keepdim, correction, "var") for p in (input.real, input.imag)
        ]
        return (parts[0] + parts[1]).sqrt() if op.startswith("std") else parts[0] + parts[1]
    axes = normalize_dims(dim, input.ndim, op)
    fn = Std if op.startswith("std") else Var
    return fn.apply(to_float_tensor(input), axes, keepdim, _correction(unbiased, correction))


class Std(Function):
    """out = sqrt(var(x)).

    dx = g * (x - mean) / ((n - correction) * out), and 0 where out = 0 (all elements
    equal: torch's choice at the kink, where the plain chain rule gives 0 / 0)
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, axes, keepdim, correction):
        out = np.asarray(np.sqrt(Var.forward(ctx, x, axes, keepdim, correction)))
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, out = ctx.saved_tensors
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = 1.0 / ctx.dof if ctx.dof else math.inf
            spread = xp.where(out == 0, 0, g * scale / out)
        grad = _expand(xp, spread, ctx.axes, ctx.keepdim, ctx.shape) * _centred(xp, x, ctx)
        return grad, None, None, None


@accumulates_in_float32("input")
@gradient_doc(Std)
def std(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None
) -> Tensor:
    """Standard deviation over ``dim`` (Bessel-corrected by default, as in torch)."""
    return _var(input, dim, unbiased, keepdim, correction, "std")


@accumulates_in_float32("input")
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var(input, ...), mean(input, ...))``. d input = d_var + d_mean: the sum of
    :func:`var`'s and :func:`mean`'s."""
    return _var(input, dim, unbiased, keepdim, correction, "var_mean"), mean(input, dim, keepdim)


@accumulates_in_float32("input")
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std(input, ...), mean(input, ...))``. d input = d_std + d_mean: the sum of
    :func:`std`'s and :func:`mean`'s."""
    return _var(input, dim, unbiased, keepdim, correction, "std_mean"), mean(input, dim, keepdim)


def to_float_tensor(x: Tensor) -> Tensor:
    return x if x._data.dtype.kind == "f" else x.to(dt.get_default_dtype())


class Amax(primitives.Max):
    __doc__ = primitives.Max.__doc__  # the core's max, under torch's name for its node


def _check_nonempty(input, axes, op):
    """A max/min over zero elements has no value: torch raises, naming the empty dim."""
    if input.numel() != 0:
        return
    if axes is None:
        raise IndexError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0 "
            f"(input shape {list(input.shape)})"
        )
    for a in axes:
        if input.shape[a] == 0:
            raise IndexError(
                f"{op}(): Expected reduction dim {a} to have non-zero size (input shape "
                f"{list(input.shape)})"
            )


@gradient_doc(Amax)
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The max over ``dim`` (all dims when empty), values only."""
    refuse_complex_order("amax", input)
    axes = normalize_dims(dim if dim != () else None, input.ndim, "amax")
    _check_nonempty(input, axes, "amax")
    return Amax.apply(input, axes, keepdim, True, False)


@gradient_doc(Amax)
def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The min over ``dim`` (all dims when empty), values only."""
    refuse_complex_order("amin", input)
    axes = normalize_dims(dim if dim != () else None, input.ndim, "amin")
    _check_nonempty(input, axes, "amin")
    return Amax.apply(input, axes, keepdim, False, False)


class MaxDim(Function):
    """values = max along ``dim``.   dx = g placed at the returned index (zeros elsewhere)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim, keepdim, indices):
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        idx = np.expand_dims(indices, dim)
        ctx.idx = idx
        out = np.take_along_axis(x, idx, axis=dim)
        return out if keepdim else np.squeeze(out, dim)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        n = ctx.shape[ctx.dim]
        positions = np.arange(n).reshape((n,) + (1,) * (len(ctx.shape) - ctx.dim - 1))
        hit = positions == ctx.idx  # a constant mask: True at the returned index
        g = _expand(xp, g, (ctx.dim,), ctx.keepdim, ctx.shape)
        return xp.where(hit, g, 0), None, None, None


def _max_min(input, dim, keepdim, other, pick_max: bool):
    name = "max" if pick_max else "min"
    refuse_complex_order(name, input)
    if isinstance(dim, Tensor):  # torch.max(a, b): elementwise
        other, dim = dim, None
    if other is not None:
        from ..elementwise.arithmetic import maximum, minimum

        return (maximum if pick_max else minimum)(input, other)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        return Amax.apply(input, None, False, pick_max, True)
    d = normalize_dim(dim, input.ndim, name)
    if input.ndim == 0:
        return values_indices(input.clone(), Tensor._make(np.asarray(0, dtype=np.int64)))
    _check_nonempty(input, (d,), name)
    if input.numel() == 0:  # another dim is empty: an empty result
        indices = np.zeros(input.shape[:d] + input.shape[d + 1 :], dtype=np.int64)
    else:
        indices = (np.argmax if pick_max else np.argmin)(input._data, axis=d)
    values = MaxDim.apply(input, d, keepdim, indices)
    ind = np.expand_dims(indices, d) if keepdim else indices
    return values_indices(values, Tensor._make(ind.astype(np.int64)))


def max(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """Max of all elements; with ``dim``, a ``(values, indices)`` named tuple; with a tensor, elementwise.

    Gradient: of all elements, ``dx = g`` split evenly among the elements equal to the max
    (``Amax``); with ``dim``, ``dx = g`` at the returned index, 0 elsewhere (``MaxDim``);
    with a tensor, see :func:`maximum`.
    """
    return _max_min(input, dim, keepdim, other, True)


def min(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """Min of all elements; with ``dim``, a ``(values, indices)`` named tuple; with a tensor, elementwise.

    d input = g at the min's position (split evenly among ties without ``dim``), 0
    elsewhere: as :func:`max`, with the min in place of the max.
    """
    return _max_min(input, dim, keepdim, other, False)


def _arg_reduction_dim(input: Tensor, dim, op: str) -> int | None:
    """``dim`` normalised (None: flattened); an empty reduction has no argmax/argmin."""
    refuse_complex_order(op, input)
    if dim is None:
        if input.numel() == 0:
            raise IndexError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0 "
                f"(input shape {list(input.shape)})"
            )
        return None
    d = normalize_dim(dim, input.ndim, op)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(
            f"{op}(): Expected reduction dim {d} to have non-zero size "
            f"(input shape {list(input.shape)})"
        )
    return d


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the max (of the flattened tensor when ``dim`` is None)."""
    d = _arg_reduction_dim(input, dim, "argmax")
    if d is None:  # keepdim keeps every dim, at size 1 (as torch)
        out = np.asarray(np.argmax(input._data), dtype=np.int64)
        return Tensor._make(out.reshape((1,) * input.ndim) if keepdim else out)
    out = np.argmax(input._data, axis=d, keepdims=keepdim)
    return Tensor._make(np.asarray(out, dtype=np.int64))


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    d = _arg_reduction_dim(input, dim, "argmin")
    if d is None:  # keepdim keeps every dim, at size 1 (as torch)
        out = np.asarray(np.argmin(input._data), dtype=np.int64)
        return Tensor._make(out.reshape((1,) * input.ndim) if keepdim else out)
    out = np.argmin(input._data, axis=d, keepdims=keepdim)
    return Tensor._make(np.asarray(out, dtype=np.int64))


class LogSumExp(Function):
    """out = m + log(sum(exp(x - m))), m = max.   dx = g * exp(x - out) (= softmax(x))"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        m = np.max(x, axis=axes, keepdims=True, initial=-np.inf)  # empty: -inf, as torch
        m = np.where(np.isfinite(m), m, 0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
        ctx.axes, ctx.keepdim, ctx.shape = axes, keepdim, x.shape
        result = out if keepdim else np.squeeze(out, axes)
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, out = ctx.saved_tensors
        g = _expand(xp, g, ctx.axes, ctx.keepdim, ctx.shape)
        return g * xp.exp(x - _expand(xp, out, ctx.axes, ctx.keepdim, ctx.shape)), None, None


@accumulates_in_float32("input")
@gradient_doc(LogSumExp)
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))`` computed stably."""
    if input._data.dtype.kind == "c":
        raise NotImplementedError("logsumexp(): not implemented for complex tensors in tinyattn")
    axes = normalize_dims(dim, input.ndim, "logsumexp")
    if axes is None:
        axes = tuple(range(input.ndim))
    return LogSumExp.apply(to_float_tensor(input), axes, keepdim)


class Norm(Function):
    """out = (sum |x|^p)^(1/p) (p = inf: max |x|; -inf: min |x|; 0: count of x != 0).

    dx = g * x |x|^(p-2) / out^(p-1)   (p=2: g x / out; p=+-inf: g sign(x) split among the
    extremes; p=0: 0); 0 at x = 0 and wherever out = 0, as in torch
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, p, axes, keepdim):
        if p == np.inf:
            out = np.max(np.abs(x), axis=axes, keepdims=True)
        elif p == -np.inf:
            out = np.min(np.abs(x), axis=axes, keepdims=True)
        elif p == 0:  # the count of non-zero elements
            out = np.sum(x != 0, axis=axes, keepdims=True)
        else:
            with np.errstate(divide="ignore"):  # p < 0 with a zero element: norm 0
                out = np.sum(np.abs(x) ** p, axis=axes, keepdims=True) ** (1.0 / p)
        out = out.astype(x.dtype, copy=False)
        ctx.p, ctx.axes, ctx.keepdim, ctx.shape = p, axes, keepdim, x.shape
        result = out if keepdim else (out.reshape(()) if axes is None else np.squeeze(out, axes))
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, out = ctx.saved_tensors
        g = _expand(xp, g, ctx.axes, ctx.keepdim, ctx.shape)
        out = _expand(xp, out, ctx.axes, ctx.keepdim, ctx.shape)
        p = ctx.p
        with np.errstate(invalid="ignore", divide="ignore"):
            if p in (np.inf, -np.inf):
                hit = xp.abs(x) == out  # none when out is NaN: gradient 0 then, as torch
                grad = xp.where(hit, xp.sgn(x) / xp.sum(hit, axis=ctx.axes, keepdims=True), 0)
            elif p == 0:
                grad = xp.zeros_like(x)
            elif p == 2:
                grad = x / out
            elif p == 1:
                grad = xp.sgn(x)  # 0 at a NaN element, as torch
            elif p < 1:  # |x|^(p-1) is infinite at x = 0: taken as 0 there (torch)
                grad = xp.where(x == 0, 0, xp.sgn(x) * xp.abs(x) ** (p - 1)) * out ** (1 - p)
            elif p < 2:  # sgn(x) |x|^(p-1): 0 at x = 0 (x |x|^(p-2) would be 0 * inf)
                grad = xp.sgn(x) * xp.abs(x) ** (p - 1) / out ** (p - 1)
            else:  # 0 at x = 0, NaN there too when out is NaN (as torch)
                grad = x * xp.abs(x) ** (p - 2) / out ** (p - 1)
            grad = xp.where(out == 0, 0, grad)
        return xp.astype(g * grad, g.dtype), None, None, None


@accumulates_in_float32("input")
@gradient_doc(Norm)
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements when None); 'fro' is the 2-norm."""
    if p == "fro" and dim is not None and not isinstance(dim, int) and len(dim) > 2:
        raise RuntimeError(
            f"norm(p='fro'): dim must be an int or a tuple of at most 2 dims (the Frobenius "
            f"norm of a matrix), got dim={tuple(dim)}"
        )
    if p in ("fro", None):
        p = 2
    if p == "nuc":
        raise NotImplementedError("norm(p='nuc') is not supported")
    if isinstance(p, (str, bool)) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise ValueError(f"norm(): p must be a number, 'fro' or None, got {p!r}")
    axes = normalize_dims(dim, input.ndim, "norm")
    x = input.abs() if input._data.dtype.kind == "c" else to_float_tensor(input)  # |z|: real
    if dtype is not None:
        x = x.to(dtype)
    return Norm.apply(x, float(p), axes, keepdim)


class Prod(Function):
    """out = product over ``dim``.   dx = g * out / x (computed without dividing by zeros)

    dx is the product of the other elements. As in torch, which divides out / x when x
    holds no zero at all, a NaN or infinite element then gets a NaN gradient; with zeros,
    over all elements, two zeros or more give 0 everywhere (NaN and inf included).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, axis, keepdim):
        out = np.prod(x, axis=axis, keepdims=True, dtype=x.dtype)  # (NumPy widens int32)
        ctx.axis, ctx.keepdim, ctx.shape = axis, keepdim, x.shape
        ctx.save_for_backward(x)
        return out if keepdim else (out.reshape(()) if axis is None else np.squeeze(out, axis))

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (x,) = ctx.saved_tensors
        axes = None if ctx.axis is None else (ctx.axis,)
        g = _expand(xp, g, axes, ctx.keepdim, ctx.shape)
        return g * _product_of_others(xp, x, ctx.axis), None, None


def _product_of_others(xp, x, axis):
    """For each element, the product of the other elements along ``axis`` (all when None):
    an exclusive cumprod from the left times one from the right (no division by zeros)."""
    flat = xp.reshape(x, (-1,)) if axis is None else xp.moveaxis(x, axis, -1)
    one = xp.ones_like(flat[..., :1])
    left = xp.cumprod(xp.concatenate([one, flat[..., :-1]], -1), -1)
    right = xp.flip(xp.cumprod(xp.flip(xp.concatenate([flat[..., 1:], one], -1), -1), -1), -1)
    others = left * right
    others = xp.reshape(others, x.shape) if axis is None else xp.moveaxis(others, -1, axis)
    # torch's choices, for NaN and inf to land where its do: without a zero anywhere in x
    # the gradient is out / x; over all elements, two zeros or more give 0 everywhere
    raw = x._data if isinstance(x, Tensor) else x
    zeros = int(np.count_nonzero(raw == 0))
    if axis is None and zeros > 1:
        return xp.zeros_like(x)
    if zeros == 0 and not np.isfinite(raw).all():
        others = (others * x) / x  # (others * x is the product of the slice, at every element)
    return others


@accumulates_in_float32("input")
@gradient_doc(Prod)
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The product over ``dim`` (all elements when None); ints and bools multiply as int64
    unless ``dtype`` is given, as in torch."""
    target = _sum_dtype(input._data, dtype)
    if input._data.dtype != target:
        input = input.to(dt.from_numpy_dtype(target))
    axis = None if dim is None else normalize_dim(dim, input.ndim, "prod")
    if input.ndim == 0:  # dim 0 / -1 of a 0-d tensor: the product of its one element
        axis = None
    return Prod.apply(input, axis, keepdim)


def _logical_reduce(reduce, input: Tensor, dim, keepdim: bool, op: str) -> Tensor:
    """any/all as torch: an empty dim list reduces nothing (the truth of each element), and a
    uint8 input gives uint8 (0/1) out; every other dtype gives bool."""
    x = input._data
    if dim is not None and not isinstance(dim, (int, np.integer)) and len(dim) == 0:
        normalize_dims(dim, input.ndim, op)
        out = x.astype(bool)
    else:
        out = reduce(x, axis=normalize_dims(dim, input.ndim, op), keepdims=keepdim)
    return Tensor._make(np.asarray(out, dtype=np.uint8 if x.dtype == np.uint8 else bool))


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether any element over ``dim`` (all dims when None) is non-zero."""
    return _logical_reduce(np.any, input, dim, keepdim, "any")


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether every element over ``dim`` (all dims when None) is non-zero."""
    return _logical_reduce(np.all, input, dim, keepdim, "all")


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    axes = normalize_dims(dim, input.ndim, "count_nonzero")
    return Tensor._make(np.asarray(np.count_nonzero(input._data, axis=axes), dtype=np.int64))
