"""The two namespaces a backward formula computes with: ``numpy_xp`` and ``tensor_xp``.

A backward formula is written once, against ``xp = ctx.xp``::

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (x,) = ctx.saved_tensors
        return g * xp.cos(x)

For a first-order backward, ``ctx.xp`` is ``numpy_xp`` (NumPy itself, plus the few
helpers below) and ``g``/``x`` are arrays: no graph, no overhead. Under
``create_graph=True`` it is ``tensor_xp`` (this module) and ``g``/``x`` are Tensors:
every call is a differentiable tinyattn op, so the backward is itself recorded and
can be differentiated again. The API is NumPy's (``axis=``, ``keepdims=``), as in the
array API standard; operators (``+ - * / ** @``, comparisons) work on both already.

Rules for formulas: call ``xp.f(x)`` (never array methods such as ``x.sum()`` or
``x.astype``, whose signatures differ between arrays and Tensors), and write
constants as Python numbers (``xp.where(m, g, 0)``), which keep the operand's dtype
on both sides.
"""

from __future__ import annotations

import types

import numpy as np

from .padded import PaddedGrad

__all__ = ["numpy_xp", "tensor_xp"]


def _np_sgn(x):
    """``sign(x)`` with ``sgn(NaN) = 0``: torch's sign, the derivative of ``|x|`` it uses.
    A bool array is its own sign (torch: ``sign(True) = True``); a complex ``z`` gives
    ``z / |z|`` (0 at 0), computed as torch computes it, so an infinite ``z`` gives NaN."""
    if x.dtype == np.bool_:
        return x.copy()
    if x.dtype.kind == "c":  # complex division: (inf + 0j) / (inf + 0j) is NaN, as in torch
        magnitude = np.abs(x).astype(x.dtype)
        at_zero = magnitude == 0
        return np.where(at_zero, np.zeros((), x.dtype), x / np.where(at_zero, 1, magnitude))
    s = np.sign(x)
    if s.dtype.kind != "f":
        return s
    return np.where(np.isnan(s), np.zeros((), s.dtype), s)


def _np_expand(g, axes, shape):
    """``g`` with ``axes`` re-inserted (size 1) and broadcast to ``shape`` (reductions' backward)."""
    if axes is not None:
        g = np.expand_dims(g, axes)
    return np.broadcast_to(g, shape)


def _np_conj(x):
    """The complex conjugate; a real array, a real number or None as it is (no copy)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return np.conj(x) if x.dtype.kind == "c" else x
    return x.conjugate() if type(x) is complex else x


def _np_view_as_real(z):
    """``z``'s real and imaginary parts as a last dim of 2 (a view: the adjoint of
    ``view_as_complex``)."""
    from ..ops.complex import real_pairs

    return real_pairs(z)


def _np_view_as_complex(x):
    """The complex numbers ``x[..., 0] + i x[..., 1]`` (the adjoint of ``view_as_real``)."""
    return x[..., 0] + 1j * x[..., 1]


# NumPy, plus the helpers formulas share (same names in both namespaces).
numpy_xp = types.ModuleType("tinyattn.autograd.xp.numpy_xp")
numpy_xp.__dict__.update({k: v for k, v in vars(np).items() if not k.startswith("__")})
numpy_xp.__dict__.update(sgn=_np_sgn, expand=_np_expand, conj=_np_conj)
numpy_xp.__dict__.update(view_as_real=_np_view_as_real, view_as_complex=_np_view_as_complex)

# -- added for the nn ops (losses, norms, embedding, pads, attention) ---------------------


def _np_erf(x):
    """Elementwise erf (NumPy has none: the numba ufunc of ``nn.functional``)."""
    from ..ops.elementwise.unary import _erf

    return _erf(x).astype(np.result_type(x, np.float32), copy=False)


def _np_add_at_axis(shape, axis, index, values):
    """Zeros of ``shape`` with ``values`` added at positions ``index`` along ``axis``
    (repeats add up): the adjoint of ``take(x, index, axis)``."""
    out = np.zeros(shape, dtype=values.dtype)
    target, rows = np.moveaxis(out, axis, 0), np.moveaxis(values, axis, 0)
    index = np.asarray(index)
    if index.ndim == 1 and index.size > 1 and index.dtype.kind in "iu":
        wrapped = np.where(index < 0, index + shape[axis], index)
        if wrapped.min() >= 0:  # (else np.add.at raises the IndexError)
            # Sort the rows by destination, then one sum per run of equal destinations:
            # 3-5x faster than np.add.at's per-row loop on (1024, 256) embedding gradients.
            order = np.argsort(wrapped, kind="stable")
            dest = wrapped[order]
            starts = np.flatnonzero(np.concatenate(([True], dest[1:] != dest[:-1])))
            target[dest[starts]] = np.add.reduceat(rows[order], starts, axis=0)
            return out
    np.add.at(target, index, rows)
    return out


def _np_put_along_axis(shape, index, values, axis):
    """Zeros of ``shape`` with ``values`` at ``index`` along ``axis``: the adjoint of
    ``take_along_axis`` (``index`` names distinct positions in each line)."""
    out = np.zeros(shape, dtype=values.dtype)
    np.put_along_axis(out, index, values, axis=axis)
    return out


def _np_apply(function, *args):
    """``function``'s forward on arrays (a linear op whose adjoint is another op)."""
    from .function import NoGradContext

    return function.forward(NoGradContext(), *args)


numpy_xp.__dict__.update(
    erf=_np_erf, add_at_axis=_np_add_at_axis, put_along_axis=_np_put_along_axis, apply=_np_apply
)
# -- end of the nn block ------------------------------------------------------------------


# -- views, rearrange, indexing, linalg, scans ----------------------------------------------
def _np_zero_pad(x, pad_width):
    """``x`` padded with zeros: ``pad_width`` is one ``(before, after)`` per axis (as np.pad)."""
    out = np.zeros(tuple(n + a + b for n, (a, b) in zip(x.shape, pad_width)), dtype=x.dtype)
    out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, pad_width))] = x
    return out


def _np_getitem(x, index):
    """``x[index]`` with NumPy's indexing rules (an index a forward already converted)."""
    return x[index]


def _np_add_at(shape, index, values):
    """Zeros of ``shape`` with ``values`` added at ``index`` (repeats accumulate): the
    backward of ``x[index]``. A basic index (ints, slices) cannot repeat: plain assignment."""
    out = np.zeros(shape, dtype=values.dtype)
    if all(isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis for i in index):
        out[index] = values
    else:
        np.add.at(out, index, values)
    return out


def _np_zero_at(x, index):
    """``x`` with zeros at ``index`` (the backward of writing there)."""
    out = x.copy()
    out[index] = 0
    return out


numpy_xp.__dict__.update(
    zero_at=_np_zero_at, zero_pad=_np_zero_pad, getitem=_np_getitem, add_at=_np_add_at
)
numpy_xp.__dict__["slice_grad"] = PaddedGrad  # (zero_pad, built by the engine when needed)


def _t():
    """tinyattn, imported on first use (the ops import this layer, not the reverse)."""
    import tinyattn

    return tinyattn


# -- the same functions on Tensors (differentiable) ------------------------------------------


def _elementwise(name: str, op: str | None = None):
    """``tinyattn.<op>`` on Tensors; a plain number (an operand of ``2 ** x``) stays a number."""

    def fn(x):
        if isinstance(x, _t().Tensor):
            return getattr(_t(), op or name)(x)
        return getattr(numpy_xp, name)(x).item()

    fn.__name__ = name
    return fn


exp = _elementwise("exp")
log = _elementwise("log")
sqrt = _elementwise("sqrt")
sin = _elementwise("sin")
cos = _elementwise("cos")
tanh = _elementwise("tanh")
abs = _elementwise("abs")
sign = _elementwise("sign")
sgn = _elementwise("sgn")  # tinyattn.sgn is 0 at NaN, z / |z| for complex z
square = _elementwise("square")
isnan = _elementwise("isnan")
isfinite = _elementwise("isfinite")


def power(a, b):
    return _t().pow(a, b)


def where(cond, a, b):
    return _t().where(_as_tensor(cond), _as_operand(a), _as_operand(b))


def maximum(a, b):
    return _t().maximum(_as_tensor(a), _as_operand(b))


def minimum(a, b):
    return _t().minimum(_as_tensor(a), _as_operand(b))


def sum(x, axis=None, keepdims=False, dtype=None):
    if isinstance(axis, list):
        axis = tuple(axis)
    if axis is None:
        out = _t().sum(x)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return _t().sum(x, dim=axis, keepdim=keepdims)


def reshape(x, shape):
    return _t().reshape(x, tuple(shape))


def expand_dims(x, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shape = list(x.shape)
    for a in sorted(a % (len(shape) + len(axes)) for a in axes):
        shape.insert(a, 1)
    return x.reshape(tuple(shape))


def broadcast_to(x, shape):
    x = _as_tensor(x)
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    if x.ndim < len(shape):
        x = x.reshape((1,) * (len(shape) - x.ndim) + tuple(x.shape))
    return x.expand(*shape)


def expand(g, axes, shape):
    """``g`` with ``axes`` re-inserted (size 1) and broadcast to ``shape`` (reductions' backward)."""
    if axes is not None:
        g = expand_dims(g, axes)
    return broadcast_to(g, shape)


def zeros_like(x):
    return _t().zeros_like(x)


def ones_like(x):
    return _t().ones_like(x)


def matmul(a, b):
    return _t().matmul(a, b)


def swapaxes(x, a, b):
    return _t().transpose(x, a, b)


def moveaxis(x, source, destination):
    return _t().movedim(x, source, destination)


def einsum(equation, *operands):
    return _t().einsum(equation, *operands)


def cumprod(x, axis):
    return _t().cumprod(x, axis)


def flip(x, axis):
    return _t().flip(x, axis if isinstance(axis, (tuple, list)) else (axis,))


def concatenate(xs, axis=0):
    return _t().cat([_as_tensor(x) for x in xs], axis)


def logical_and(a, b):
    return _t().logical_and(_as_tensor(a), _as_operand(b))


def logical_or(a, b):
    return _t().logical_or(_as_tensor(a), _as_operand(b))


def any(x, axis=None, keepdims=False):
    if axis is None:
        return _t().any(x)
    return _t().any(x, dim=axis, keepdim=keepdims)


def astype(x, dtype, copy=False):
    """``x`` as ``dtype`` (a NumPy or tinyattn dtype; ``g.dtype`` in a formula)."""
    from .. import _dtype

    if not isinstance(dtype, _dtype.dtype):
        dtype = _dtype.from_numpy_dtype(np.dtype(dtype))
    return x if x.dtype == dtype else x.to(dtype)


errstate = np.errstate
inf = np.inf
nan = np.nan


# -- added for the nn ops (losses, norms, embedding, pads, attention) ---------------------


def mean(x, axis=None, keepdims=False):
    if isinstance(axis, list):
        axis = tuple(axis)
    if axis is None:
        out = _t().mean(x)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return _t().mean(x, dim=axis, keepdim=keepdims)


def log1p(x):
    return _t().log1p(x)


def erf(x):
    """erf as a differentiable op (``ops.elementwise.unary.Erf``)."""
    from ..ops.elementwise.unary import Erf

    return Erf.apply(x)


def add_at_axis(shape, axis, index, values):
    """Zeros of ``shape`` with ``values`` added at ``index`` along ``axis`` (``index_add``)."""
    zeros = _t().zeros(tuple(shape), dtype=values.dtype)
    return zeros.index_add(axis, _as_tensor(np.asarray(index)), values)


def put_along_axis(shape, index, values, axis):
    """Zeros of ``shape`` with ``values`` at ``index`` along ``axis`` (``scatter``)."""
    zeros = _t().zeros(tuple(shape), dtype=values.dtype)
    return zeros.scatter(axis, _as_tensor(np.asarray(index)), values)


def apply(function, *args):
    """``function.apply``: a linear op whose adjoint is another op, recorded in the graph."""
    return function.apply(*args)


# -- end of the nn block ------------------------------------------------------------------


def _as_tensor(x):
    if isinstance(x, _t().Tensor):
        return x
    return _t().Tensor._make(np.asarray(x))


def _as_operand(x):
    """Tensors and Python numbers pass; arrays become constant Tensors."""
    if isinstance(x, np.ndarray):
        return _t().Tensor._make(x)
    return x


# -- views, rearrange, indexing, linalg, scans ----------------------------------------------
def cumsum(x, axis):
    return _t().cumsum(x, axis)


def transpose(x, axes):
    return _t().permute(x, *axes)


def tril(x, k=0):
    return _t().tril(x, k)


def triu(x, k=0):
    return _t().triu(x, k)


def roll(x, shift, axis):
    return _t().roll(x, shift, axis)


def diagonal(x, offset=0, axis1=0, axis2=1):
    return _t().diagonal(x, offset, axis1, axis2)


def cross(a, b, axis=-1):
    return _t().cross(_as_tensor(a), _as_tensor(b), axis)


def split(x, indices, axis=0):
    """``np.split(x, indices, axis)`` at the given boundaries: views (narrow)."""
    bounds = [0, *(int(i) for i in indices), x.shape[axis]]
    return [_t().narrow(x, axis, a, b - a) for a, b in zip(bounds[:-1], bounds[1:])]


def zero_pad(x, pad_width):
    """``x`` padded with zeros (``(before, after)`` per axis): constant blocks concatenated."""
    dtype = x._data.dtype
    for axis, (before, after) in enumerate(pad_width):
        if before or after:
            shape = list(x.shape)
            parts = []
            for n in (before, after):
                shape[axis] = n
                parts.append(_t().Tensor._make(np.zeros(tuple(shape), dtype=dtype)))
            x = _t().cat([parts[0], x, parts[1]], axis)
    return x


def slice_grad(g, pad_width):
    """The gradient of a slice: ``g`` zero-padded (NumPy: a ``PaddedGrad`` the engine builds)."""
    return zero_pad(g, pad_width)


def zero_at(x, index):
    """``x`` with zeros at ``index``: a ``where`` with a constant mask."""
    written = np.zeros(tuple(x.shape), dtype=np.bool_)
    written[index] = True
    return where(written, 0, x)


def getitem(x, index):
    """``x[index]`` with NumPy's indexing rules (differentiable: backward is ``add_at``)."""
    from ..ops.index.indexing import Index

    return Index.apply(x, index if isinstance(index, tuple) else (index,))


def add_at(shape, index, values):
    """Zeros of ``shape`` with ``values`` added at ``index`` (differentiable: index_put with
    accumulate; its backward is ``getitem``)."""
    from ..ops.index.indexing import IndexPut

    zeros = _t().Tensor._make(np.zeros(shape, dtype=values._data.dtype))
    return IndexPut.apply(zeros, values, index if isinstance(index, tuple) else (index,), True)


def conj(x):
    """The complex conjugate (a real tensor, a real number or None as it is)."""
    if isinstance(x, _t().Tensor):
        return _t().conj(x) if x._data.dtype.kind == "c" else x
    return _np_conj(x)


def iscomplexobj(x) -> bool:
    """Whether ``x`` (a Tensor or a number) is complex."""
    return x._data.dtype.kind == "c" if isinstance(x, _t().Tensor) else np.iscomplexobj(x)


def real(x):
    return _t().real(x)


def imag(x):
    return _t().imag(x)


def view_as_real(z):
    return _t().view_as_real(z)


def view_as_complex(x):
    return _t().ops.complex.pairs_to_complex(x)


tensor_xp = types.ModuleType("tinyattn.autograd.xp.tensor_xp")
tensor_xp.__dict__.update(
    {k: v for k, v in list(globals().items()) if callable(v) and not k.startswith("_")}
)
tensor_xp.__dict__.update(inf=np.inf, nan=np.nan)
for _name in ("numpy_xp", "tensor_xp", "annotations", "types", "np", "PaddedGrad"):
    tensor_xp.__dict__.pop(_name, None)
