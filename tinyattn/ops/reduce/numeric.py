"""Numerical differences, integrals and histograms: gradient, trapz, histogram, histogramdd.

``gradient`` composes differentiable slicing and arithmetic, so it is differentiable (a
fixed linear map of ``input``; the coordinates in ``spacing`` are constants). The
histograms count, so they are outside the graph, as torch's.
"""

from __future__ import annotations

import math
import numbers
from collections import namedtuple

import numpy as np

from ...core import _dtype as dt
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import normalize_dim
from ..elementwise.arithmetic import _tensor
from ..elementwise.unary import cast
from ..shape.rearrange import cat
from ..shape.views import narrow
from .stats import trapezoid

__all__ = ["gradient", "trapz", "histogram", "histogramdd"]

histogram_return = namedtuple("histogram", ["hist", "bin_edges"])
histogram_return.__module__ = "tinyattn.return_types"
histogramdd_return = namedtuple("histogramdd", ["hist", "bin_edges"])
histogramdd_return.__module__ = "tinyattn.return_types"


# -- gradient --------------------------------------------------------------------------------
def _gradient_dims(input: Tensor, spacing, dim, edge_order) -> tuple[list[int], list]:
    if edge_order not in (1, 2):
        raise RuntimeError(
            f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order!r}"
        )
    if dim is None:
        dims = list(range(input.ndim))
    elif isinstance(dim, numbers.Integral):
        dims = [normalize_dim(dim, input.ndim, "gradient")]
    else:
        dims = [normalize_dim(d, input.ndim, "gradient") for d in dim]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"gradient(): dim {list(dims)} appears more than once")
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        spacing = spacing.item()
    if isinstance(spacing, numbers.Number):
        spacing = [spacing] * len(dims)
    spacing = list(spacing)
    for h in spacing:
        if isinstance(h, Tensor) and h.ndim != 1:
            raise RuntimeError(
                "torch.gradient expected each element of spacing to have one dimension, but got "
                f"an element with {h.ndim} dimensions"
            )
    if len(spacing) != len(dims):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
            f"arguments to have the same length, but got a spacing argument of length "
            f"{len(spacing)} and a dim argument of length {len(dims)}."
        )
    for d, h in zip(dims, spacing):
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1, got "
                f"size {input.shape[d]} at dim {d} (shape {list(input.shape)}, edge_order "
                f"{edge_order})"
            )
        if isinstance(h, Tensor) and (h.ndim != 1 or h.shape[0] != input.shape[d]):
            raise RuntimeError(
                f"gradient(): the coordinates for dim {d} must be 1-D with {input.shape[d]} "
                f"values (input shape {list(input.shape)}), got shape {list(h.shape)}"
            )
    return dims, spacing


def _along(values: np.ndarray, d: int, ndim: int) -> Tensor:
    """Coefficients (k,) as a constant shaped to broadcast along dim ``d``."""
    shape = [1] * ndim
    shape[d] = values.shape[0]
    return Tensor._make(values.reshape(shape))


def _diff_one_dim(f: Tensor, d: int, h, edge_order: int) -> Tensor:
    """The derivative of ``f`` along ``d``: central differences inside, one-sided at the ends."""
    n, nd = f.shape[d], f.ndim
    if isinstance(h, Tensor) and h._data.dtype.kind == "f":  # float64 coordinates widen f
        wide = np.promote_types(f._data.dtype, h._data.dtype)
        f = cast(f, dt.from_numpy_dtype(wide))

    def part(start: int, length: int) -> Tensor:
        return narrow(f, d, start, length)

    np_dtype = f._data.dtype
    if isinstance(h, Tensor):  # sample coordinates: the non-uniform formulas
        x = h._data.astype(np.float64)
        dx = np.diff(x)
        h1, h2 = dx[:-1], dx[1:]
        a = -h2 / (h1 * (h1 + h2))
        b = (h2 - h1) / (h1 * h2)
        c = h1 / (h2 * (h1 + h2))

        def coef(v):
            return _along(np.asarray(v, dtype=np_dtype), d, nd)

        inner = coef(a) * part(0, n - 2) + coef(b) * part(1, n - 2) + coef(c) * part(2, n - 2)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / float(dx[0])
            last = (part(n - 1, 1) - part(n - 2, 1)) / float(dx[-1])
        else:
            d1, d2 = dx[0], dx[1]
            first = (
                part(0, 1) * float(-(2 * d1 + d2) / (d1 * (d1 + d2)))
                + part(1, 1) * float((d1 + d2) / (d1 * d2))
                + part(2, 1) * float(-d1 / (d2 * (d1 + d2)))
            )
            d1, d2 = dx[-2], dx[-1]
            last = (
                part(n - 3, 1) * float(d2 / (d1 * (d1 + d2)))
                + part(n - 2, 1) * float(-(d2 + d1) / (d1 * d2))
                + part(n - 1, 1) * float((2 * d2 + d1) / (d2 * (d1 + d2)))
            )
    else:
        step = float(h.item() if isinstance(h, Tensor) else h)
        inner = (part(2, n - 2) - part(0, n - 2)) / (2 * step)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / step
            last = (part(n - 1, 1) - part(n - 2, 1)) / step
        else:
            first = (part(0, 1) * -3 + part(1, 1) * 4 - part(2, 1)) / (2 * step)
            last = (part(n - 1, 1) * 3 - part(n - 2, 1) * 4 + part(n - 3, 1)) / (2 * step)
    return cat([first, inner, last], d) if n > 2 else cat([first, last], d)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """Estimate the derivative of ``input`` along each of ``dim`` (all dims by default).

    Second-order central differences inside, ``(f[i+1] - f[i-1]) / 2h`` for a uniform
    step, and first- or second-order one-sided differences at both ends (``edge_order``).

    Parameters
    ----------
    input : Tensor
        Any shape; every differentiated dim needs at least ``edge_order + 1`` values.
        Integer inputs give the default float dtype.
    spacing : number, sequence of numbers, or sequence of 1-D Tensors
        A step per dim (one number: the same for all), or the sample coordinates along
        each dim (non-uniform formulas then, as NumPy's and torch's).
    dim : int or sequence of int, optional
    edge_order : int
        1 or 2.

    Returns
    -------
    tuple of Tensor
        One per dim, each ``input``'s shape.

    Gradient: each output is linear in ``input`` with constant coefficients, so the
    gradient applies the transposed stencil.   Composes: narrow, mul, div, cat
    """
    x = _tensor(input, "gradient")
    dims, spacing = _gradient_dims(x, spacing, dim, edge_order)
    if x._data.dtype.kind != "f":
        x = cast(x, dt.get_default_dtype())
    return tuple(_diff_one_dim(x, d, h, edge_order) for d, h in zip(dims, spacing))


def trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """torch's older name of :func:`tinyattn.trapezoid` (``x`` or ``dx``, not both)."""
    if x is not None and dx is not None:
        raise TypeError("trapz(): takes either sample points 'x' or a spacing 'dx', not both")
    return trapezoid(y, x, dx=dx, dim=dim)


# -- histograms ------------------------------------------------------------------------------
def _fma64(a: float, b: float, c: float) -> float:
    """``a * b + c`` with one rounding (``math.fma`` from Python 3.13; exact fractions before)."""
    fma = getattr(math, "fma", None)
    if fma is not None:
        return fma(a, b, c)
    from fractions import Fraction  # (imported on first use: it costs ~3 ms)

    return float(Fraction(a) * Fraction(b) + Fraction(c))


def _linspace(lo: float, hi: float, steps: int, np_dtype) -> np.ndarray:
    """torch's linspace in ``np_dtype``, to the last bit (histogram edges must match it):
    ``start + step * i`` for the first half and ``end - step * (steps - 1 - i)`` for the
    second (both ends exact), each a fused multiply-add (one rounding)."""
    lo_d, hi_d = np_dtype.type(lo), np_dtype.type(hi)
    if steps == 1:
        return np.array([lo_d], dtype=np_dtype)
    step = (hi_d - lo_d) / np_dtype.type(steps - 1)
    half = steps // 2
    if np_dtype.itemsize < 8:  # float32/16: the product and sum are exact in float64
        i = np.arange(steps, dtype=np.float64)
        s64 = np.float64(step)
        values = np.where(
            i < half, np.float64(lo_d) + s64 * i, np.float64(hi_d) - s64 * (steps - 1 - i)
        )
        return values.astype(np_dtype)
    s, lo_f, hi_f = float(step), float(lo_d), float(hi_d)
    values = [
        _fma64(s, float(i), lo_f) if i < half else _fma64(-s, float(steps - 1 - i), hi_f)
        for i in range(steps)
    ]
    return np.array(values, dtype=np_dtype)


def _bin_range(values: np.ndarray, given, k: int, op: str) -> tuple[float, float]:
    if given is not None:
        lo, hi = float(given[2 * k]), float(given[2 * k + 1])
    elif values.size == 0:
        lo, hi = 0.0, 1.0
    else:
        lo, hi = float(values.min()), float(values.max())
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"{op}: dimension {k}'s range [{lo}, {hi}] is not finite")
    if lo > hi:
        raise RuntimeError(
            f"{op}: min should not exceed max, but got min {lo} max {hi} for dimension {k}"
        )
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _edges(values: np.ndarray, bins, given, k: int, np_dtype, op: str) -> np.ndarray:
    if isinstance(bins, Tensor):
        edges = bins._data
        if edges.ndim != 1 or edges.size < 2 or edges.dtype != np_dtype:
            raise RuntimeError(
                f"{op}: bins for dimension {k} must be a 1-D tensor of at least 2 edges in the "
                f"input's dtype {dt.from_numpy_dtype(np_dtype)}, got shape {list(bins.shape)} "
                f"and {bins.dtype}"
            )
        if np.any(np.diff(edges) < 0):
            raise ValueError(f"{op}: bin edges for dimension {k} must increase monotonically")
        return edges
    if not isinstance(bins, numbers.Integral) or isinstance(bins, bool) or bins <= 0:
        raise RuntimeError(f"{op}: bins must be > 0, but got {bins} for dimension {k}")
    lo, hi = _bin_range(values, given, k, op)
    return _linspace(lo, hi, int(bins) + 1, np_dtype)


def _check_float_input(input, weight, op: str) -> tuple[np.ndarray, np.ndarray | None]:
    x = _tensor(input, op)
    if x._data.dtype.kind != "f":
        raise TypeError(f"{op}: expected a floating point input (as torch), got {x.dtype}")
    if weight is None:
        return x._data, None
    if not isinstance(weight, Tensor) or weight._data.dtype != x._data.dtype:
        raise RuntimeError(
            f"{op}: weight must be a tensor of the input's dtype {x.dtype}, got "
            f"{getattr(weight, 'dtype', type_name(weight))}"
        )
    return x._data, weight._data


def _counts(points: np.ndarray, edges: list[np.ndarray], weight, density: bool, np_dtype):
    """Weighted counts of ``points`` (N, D) in the grid of ``edges`` (last edge inclusive)."""
    nbins = [e.size - 1 for e in edges]
    inside = np.ones(points.shape[0], dtype=bool)
    flat = np.zeros(points.shape[0], dtype=np.int64)
    for k, e in enumerate(edges):
        col = points[:, k]
        pos = np.searchsorted(e, col, side="right") - 1
        pos = np.where(col == e[-1], nbins[k] - 1, pos)  # the last edge closes the last bin
        inside &= (col >= e[0]) & (col <= e[-1])
        flat = flat * nbins[k] + np.clip(pos, 0, nbins[k] - 1)
    w = np.ones(points.shape[0]) if weight is None else weight.astype(np.float64)
    hist = np.bincount(flat[inside], weights=w[inside], minlength=int(np.prod(nbins)))
    hist = hist.reshape(nbins)
    if density:
        total = hist.sum()
        widths = np.ones(nbins)
        for k, e in enumerate(edges):
            shape = [1] * len(nbins)
            shape[k] = nbins[k]
            widths = widths * np.diff(e.astype(np.float64)).reshape(shape)
        hist = hist / (total * widths)
    return hist.astype(np_dtype)


def histogram(input: Tensor, bins=100, *, range=None, weight=None, density: bool = False):
    """Counts of ``input``'s values in ``bins`` equal bins over ``range`` (default: the
    data's min and max), or in the bins between the edges of a 1-D tensor ``bins``.

    Parameters
    ----------
    input : Tensor
        Floating, any shape (flattened).
    bins : int or Tensor
        The number of bins, or the (B + 1,) increasing edges.
    range : (float, float), optional
    weight : Tensor, optional
        ``input``'s shape and dtype: each value counts its weight.
    density : bool
        Normalise to a probability density (the integral over the bins is 1).

    Returns
    -------
    (hist, bin_edges) : namedtuple of Tensor
        (B,) and (B + 1,), ``input``'s dtype. Each bin is ``[edge_i, edge_i+1)``, the last
        also holding its right edge; values outside the edges are not counted.
    """
    data, w = _check_float_input(input, weight, "torch.histogram")
    if w is not None and w.shape != data.shape:
        raise RuntimeError(
            f"torch.histogram: weight of shape {list(w.shape)} must have the input's shape "
            f"{list(data.shape)}"
        )
    if range is not None and len(range) != 2:
        raise RuntimeError(f"torch.histogram: range must be (min, max), got {range!r}")
    points = data.reshape(-1, 1)
    edges = _edges(points[:, 0], bins, range, 0, data.dtype, "torch.histogram")
    hist = _counts(points, [edges], None if w is None else w.reshape(-1), density, data.dtype)
    return histogram_return(Tensor._make(hist), Tensor._make(np.array(edges, copy=True)))


def histogramdd(input: Tensor, bins, range=None, weight=None, density: bool = False):
    """A D-dimensional histogram of the points ``input`` (..., D).

    Parameters
    ----------
    input : Tensor
        Floating, (..., D): each row a point.
    bins : int, sequence of int, or sequence of Tensor
        Bins per dim (one int: the same for all), or each dim's increasing edges.
    range : sequence of float, optional
        ``[min_0, max_0, min_1, max_1, ...]`` (default: the data's bounds per dim).
    weight : Tensor, optional
        (...,): each point counts its weight.
    density : bool

    Returns
    -------
    (hist, bin_edges) : namedtuple
        ``hist`` (B_0, ..., B_{D-1}) and a tuple of D edge tensors, ``input``'s dtype.
    """
    data, w = _check_float_input(input, weight, "torch.histogramdd")
    if data.ndim < 2:
        raise RuntimeError(
            f"torch.histogramdd: input tensor should have at least 2 dimensions (..., D), got "
            f"shape {list(data.shape)}"
        )
    ndims = data.shape[-1]
    points = data.reshape(-1, ndims)
    if isinstance(bins, (numbers.Integral, Tensor)) and not isinstance(bins, bool):
        bins = [bins] * ndims if not isinstance(bins, Tensor) else [bins]
    bins = list(bins)
    if len(bins) != ndims:
        raise RuntimeError(
            f"torch.histogramdd: expected {ndims} sequences of bin edges or bin counts for the "
            f"{ndims} dimensions of the points, got {len(bins)}"
        )
    if range is not None and len(range) != 2 * ndims:
        raise RuntimeError(
            f"torch.histogramdd: range must have {2 * ndims} values (min, max per dimension), "
            f"got {len(range)}"
        )
    if w is not None and w.shape != data.shape[:-1]:
        raise RuntimeError(
            f"torch.histogramdd: weight of shape {list(w.shape)} must have shape "
            f"{list(data.shape[:-1])} (one weight per point)"
        )
    edges = [
        _edges(points[:, k], b, range, k, data.dtype, "torch.histogramdd")
        for k, b in enumerate(bins)
    ]
    hist = _counts(points, edges, None if w is None else w.reshape(-1), density, data.dtype)
    out_edges = tuple(Tensor._make(np.array(e, copy=True)) for e in edges)
    return histogramdd_return(Tensor._make(hist), out_edges)
