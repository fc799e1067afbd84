"""The two namespaces a backward formula computes with: ``numpy_xp`` and ``tensor_xp``.

``numpy_xp`` lives in the core (``core/xp.py``); this module adds the helpers that need
ops to it and builds ``tensor_xp``, which it plugs into the engine's seam.

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

from ..core.extensions import extensions
from ..core.xp import _np_conj, add_helpers, numpy_xp

__all__ = ["numpy_xp", "tensor_xp"]


# NumPy's namespace is the core's (``core/xp.py``); the helpers that need ops come here.
def _np_view_as_real(z):
    """``z``'s real and imaginary parts as a last dim of 2 (a view: the adjoint of
    ``view_as_complex``)."""
    from ..ops.complex import real_pairs

    return real_pairs(z)


def _np_erf(x):
    """Elementwise erf (NumPy has none: the numba ufunc of ``nn.functional``)."""
    from ..ops.elementwise.unary import _erf

    return _erf(x).astype(np.result_type(x, np.float32), copy=False)


add_helpers(erf=_np_erf, view_as_real=_np_view_as_real)


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
    from ..core import _dtype

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
for _name in ("numpy_xp", "tensor_xp", "annotations", "types", "np", "extensions", "add_helpers"):
    tensor_xp.__dict__.pop(_name, None)

extensions.set_tensor_namespace(tensor_xp)  # the engine's create_graph runs formulas on it
