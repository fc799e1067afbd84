"""More reductions and statistics: nansum, nanmean, aminmax, quantile / nanquantile,
histc, logcumsumexp, trapezoid / cumulative_trapezoid, isin, unravel_index.

quantile is a sort, a gather of the two neighbouring order statistics and a linear
interpolation (torch's method, so the gradient goes to the same elements as torch's);
logcumsumexp is its own Function, for a forward and backward that cannot overflow.
"""

from __future__ import annotations

import builtins
import numbers
from collections import namedtuple

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._accumulation import accumulates_in_float32
from .._util import gradient_doc, normalize_dim
from ..elementwise.arithmetic import where
from ..elementwise.compare import isnan
from ..index.indexing import gather
from ..shape.views import movedim, narrow, reshape, unsqueeze
from ..sorting import sort
from .cumulative import cumsum
from .reduction import amax, amin, sum

__all__ = [
    "nansum",
    "nanmean",
    "aminmax",
    "quantile",
    "nanquantile",
    "histc",
    "logcumsumexp",
    "trapezoid",
    "cumulative_trapezoid",
    "isin",
    "unravel_index",
]

aminmax_return = namedtuple("aminmax", ["min", "max"])
aminmax_return.__module__ = "tinyattn.return_types"


def _zero_nans(input: Tensor) -> Tensor:
    if not input.dtype.is_floating_point:
        return input
    return where(isnan(input), Tensor._make(np.zeros((), input._data.dtype)), input)


@accumulates_in_float32("input")
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum over ``dim`` treating NaN as zero (a NaN element gets a 0 gradient).

    Composes: tinyattn.where, tinyattn.sum
    """
    return sum(_zero_nans(input), dim, keepdim, dtype=dtype)


@accumulates_in_float32("input")
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over ``dim`` of the non-NaN elements (NaN where there are none).

    Composes: tinyattn.where, tinyattn.sum, tinyattn.div
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"nanmean(): expected input to have floating point dtype but got {input.dtype.name}"
        )
    count = sum(Tensor._make(~np.isnan(input._data)), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """``(amin, amax)`` over ``dim`` (all elements when None) as a named tuple ``(min, max)``.

    Composes: tinyattn.amin, tinyattn.amax
    """
    if input.numel() == 0 and (
        dim is None or input.shape[normalize_dim(dim, input.ndim, "aminmax")] == 0
    ):
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            f"identity (input shape {list(input.shape)})"
        )
    if dim is None:
        lo, hi = amin(input), amax(input)
        if keepdim:
            lo, hi = (reshape(t, (1,) * input.ndim) for t in (lo, hi))
        return aminmax_return(lo, hi)
    return aminmax_return(amin(input, dim, keepdim), amax(input, dim, keepdim))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_array(q, dtype: np.dtype, op: str) -> np.ndarray:
    if isinstance(q, Tensor):
        if not q.dtype.is_floating_point or q.ndim > 1:
            raise RuntimeError(
                f"{op}() q must be a scalar or 1D float tensor, got {q.ndim}-D {q.dtype.name}"
            )
        q = q._data
    arr = np.asarray(q, dtype=dtype)
    if arr.ndim > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D, got shape {list(arr.shape)}")
    if arr.size and (np.isnan(arr).any() or arr.min() < 0 or arr.max() > 1):
        bad = arr[(arr < 0) | (arr > 1) | np.isnan(arr)][0]
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {bad}")
    return arr


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan: bool, op: str) -> Tensor:
    if not isinstance(input, Tensor) or input._data.dtype.kind != "f":
        raise RuntimeError(
            f"{op}() input tensor must be either float or double dtype, got "
            f"{getattr(getattr(input, 'dtype', None), 'name', type_name(input))}"
        )
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty, got shape {list(input.shape)}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
            f"but got {interpolation}"
        )
    dtype = input._data.dtype
    qs = _q_array(q, dtype, op)
    if dim is None:
        x, d = reshape(input, -1), 0
    else:
        d = normalize_dim(dim, input.ndim, op)
        x = input if input.ndim else reshape(input, 1)
    x = movedim(x, d, -1)  # (..., n): the reduced dim last
    n = x.shape[-1]
    values = sort(x, -1).values  # NaN sort last
    valid = (~np.isnan(x._data)).sum(-1, keepdims=True).astype(dtype)  # (..., 1)
    flat_q = qs.reshape(-1)
    if ignore_nan:  # rank among the valid values; none valid: the first (NaN) one, as torch
        ranks = np.where(valid > 0, flat_q * (valid - 1), 0)
    else:  # any NaN: the last element, which is NaN
        ranks = np.where(valid < n, n - 1, flat_q * np.asarray(n - 1, dtype))
    ranks = ranks.astype(dtype)  # (..., Q), in the input's dtype as torch
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as torch.round
    below = np.floor(ranks).astype(np.int64)
    out = gather(values, -1, below)
    if interpolation in ("linear", "midpoint"):
        above = np.minimum(np.ceil(ranks).astype(np.int64), n - 1)
        weight = (ranks - below if interpolation == "linear" else np.full_like(ranks, 0.5)).astype(
            dtype
        )
        # torch's lerp: from below when w < 0.5, from above otherwise (the two differ at
        # infinities, e.g. lerp(-inf, 1, 0.75) = 1 - (1 + inf) * 0.25 = -inf, not NaN)
        top = gather(values, -1, above)
        step = top - out
        from_below = out + step * Tensor._make(weight)
        from_above = top - step * Tensor._make(1 - weight)
        out = where(Tensor._make(weight < 0.5), from_below, from_above)
    # (..., Q) -> (Q, ...) with the reduced dim back (size 1) if keepdim
    if keepdim and input.ndim:  # a 0-D input has no dim to keep: the result stays 0-D
        out = unsqueeze(out, -2)
        out = movedim(out, -2, d) if dim is not None else reshape(out, (1,) * input.ndim + (-1,))
    out = movedim(out, -1, 0)
    return reshape(out, out.shape[1:]) if qs.ndim == 0 else out


def quantile(
    input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The ``q``-th quantiles (``q`` a number or a 1-D tensor in [0, 1]) over ``dim`` (all
    elements when None). Shape: ``(len(q),)`` prepended when ``q`` is 1-D. A slice with a
    NaN gives NaN. ``interpolation`` between the order statistics below and above rank
    ``q * (n - 1)``: linear, lower, higher, midpoint or nearest.

    Composes: tinyattn.sort, tinyattn.gather (the gradient goes to the one or two
    elements interpolated, weighted 1 - w and w)
    """
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(
    input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """:func:`quantile` ignoring NaNs (rank ``q * (valid - 1)``; NaN where none is valid).

    Composes: tinyattn.sort, tinyattn.gather
    """
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


def histc(input: Tensor, bins: int = 100, min=0, max=0) -> Tensor:
    """Counts in ``bins`` equal-width bins over [min, max] (the data's range when min == max;
    elements outside are ignored, max falls in the last bin), in ``input``'s dtype.
    Not differentiable (as torch's)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(
            f"histc(): only floating-point inputs are supported, got {input.dtype.name}"
        )
    if int(bins) <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, but got {bins}")
    lo, hi = float(min), float(max)
    data = input._data.reshape(-1)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"histc(): max must be larger than min, got min {min} and max {max}")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"histc(): range of [{lo}, {hi}] is not finite")
    counts, _ = np.histogram(data[(data >= lo) & (data <= hi)], bins=int(bins), range=(lo, hi))
    return Tensor._make(counts.astype(input._data.dtype))


class LogCumSumExp(Function):
    """out[i] = log(sum_{k<=i} exp(x[k])) along ``dim``.

    dx[k] = sum_{i>=k} g[i] * exp(x[k] - out[i]), evaluated stably as
    exp(x[k] + logcumsumexp_reversed(log|g| - out)) for the positive and negative parts of g
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        out = np.logaddexp.accumulate(x, axis=dim) if x.ndim else x.copy()
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, out = ctx.saved_tensors
        if getattr(g, "ndim", 0) == 0:
            return g, None
        d = ctx.dim

        def part(sign):  # sum_{i>=k} |g_i| exp(x_k - out_i) over the g_i of one sign
            keep = (g > 0) if sign > 0 else (g < 0)
            log_g = xp.where(keep, xp.log(xp.where(keep, sign * g, 1)) - out, -xp.inf)
            rev = xp.flip(xp.apply(LogCumSumExp, xp.flip(log_g, d), d), d)
            return xp.exp(rev + x)

        return part(1) - part(-1), None


@accumulates_in_float32("input")
@gradient_doc(LogCumSumExp)
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))`` without overflow or underflow."""
    d = normalize_dim(dim, input.ndim, "logcumsumexp")
    x = input if input.dtype.is_floating_point else input.to(dt.get_default_dtype())
    return LogCumSumExp.apply(x, d)


def _trapezoid_terms(y: Tensor, x, dx, dim: int, op: str):
    if not isinstance(y, Tensor):
        raise TypeError(f"{op}(): argument 'y' must be Tensor, not {type_name(y)}")
    d = normalize_dim(dim, y.ndim, op)
    if not y.dtype.is_floating_point:
        y = y.to(dt.get_default_dtype())
    n = y.shape[d]
    if n == 0:
        return None, d, y
    avg = (narrow(y, d, 1, n - 1) + narrow(y, d, 0, n - 1)) / 2
    if x is None:
        return avg * (1.0 if dx is None else dx), d, y
    if dx is not None:
        raise RuntimeError(f"{op}(): pass x or dx, not both")
    if not isinstance(x, Tensor):
        x = Tensor._make(np.asarray(x, dtype=y._data.dtype))
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(
                f"{op}(): There must be one `x` value for each sample point: x has "
                f"{x.shape[0]} values, y has {n} along dim {d} (shape {list(y.shape)})"
            )
        spacing = x[1:] - x[:-1]
        shape = [1] * y.ndim
        shape[d] = n - 1
        return avg * reshape(spacing, shape), d, y
    xd = normalize_dim(dim, x.ndim, op)
    spacing = narrow(x, xd, 1, x.shape[xd] - 1) - narrow(x, xd, 0, x.shape[xd] - 1)
    return avg * spacing, d, y


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """Trapezoid-rule integral of ``y`` along ``dim``: spacing ``dx`` (default 1) or sample
    points ``x`` (1-D along ``dim``, or broadcasting with ``y``).

    Composes: tinyattn.narrow, tinyattn.mul, tinyattn.sum
    """
    terms, d, y = _trapezoid_terms(y, x, dx, dim, "trapezoid")
    if terms is None:
        return sum(y, d)
    return sum(terms, d)


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """Running :func:`trapezoid` integral along ``dim`` (one value fewer than ``y``).

    Composes: tinyattn.narrow, tinyattn.mul, tinyattn.cumsum
    """
    terms, d, y = _trapezoid_terms(y, x, dx, dim, "cumulative_trapezoid")
    if terms is None:
        return y
    return cumsum(terms, d)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Bool tensor of ``elements``' shape: whether each is in ``test_elements`` (either may
    be a number). Not differentiable."""
    a = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    for name, v in (("elements", elements), ("test_elements", test_elements)):
        if not isinstance(v, (Tensor, numbers.Number)):
            raise TypeError(
                f"isin(): argument '{name}' must be Tensor or Number, got {type_name(v)}"
            )
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    return Tensor._make(np.isin(a, b, assume_unique=assume_unique, invert=invert))


def unravel_index(indices, shape) -> tuple[Tensor, ...]:
    """Flat indices into ``shape`` as a tuple of coordinate tensors (int64, ``indices``'
    shape), as torch: each coordinate taken modulo its dim's size."""
    arr = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"unravel_index(): expected 'indices' to be integer dtype, but got {arr.dtype}"
        )
    dims = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(s) for s in shape)
    if builtins.any(s < 0 for s in dims):
        raise RuntimeError(f"unravel_index(): 'shape' cannot have negative values, but got {dims}")
    if builtins.any(s == 0 for s in dims) and arr.size:
        raise RuntimeError(f"unravel_index(): cannot index into a shape with a zero dim {dims}")
    flat = arr.astype(np.int64)
    coords = []
    for size in reversed(dims):
        coords.append(np.mod(flat, size))
        flat = np.floor_divide(flat, size)
    return tuple(Tensor._make(c) for c in reversed(coords))
