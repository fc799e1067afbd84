"""The primitive ops: the 14 that the attention example needs, each a ``Function`` with its
forward and backward side by side and the formula in its docstring.

    add, mul, div, pow          elementwise arithmetic (operands broadcast)
    exp, log                    elementwise functions
    sum, max                    reductions over some axes (or all)
    reshape, permute, expand    shape views
    getitem                     indexing (``x[index]``)
    matmul                      the matrix product
    softmax                     a normalised exponential along one axis

Conventions every backward follows (``function.py`` explains them):

- ``forward`` receives NumPy arrays (and options) and returns one array;
- ``backward`` returns one gradient per positional input (None for an option), shaped
  like the broadcast result: the engine sums it back to each input's shape;
- the formulas compute with ``xp = ctx.xp``: NumPy here, the same functions as
  differentiable tensor ops under ``create_graph=True`` (a gradient of a gradient);
- complex inputs follow torch's convention: a holomorphic ``f'`` enters conjugated,
  ``g * conj(f'(x))`` (``conj`` is the identity on real numbers).

The forwards here are plain NumPy. ``tinyattn.ops`` subclasses several of these classes to
add what torch does around the formula (dtype promotion, ``alpha=``, error messages, the
BLAS and numba kernels) and keeps the backward written here.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype
from .function import Function
from .tensor_base import TensorBase
from .xp import numpy_xp

__all__ = [
    "Add",
    "Div",
    "Exp",
    "Expand",
    "Index",
    "Log",
    "Matmul",
    "Max",
    "Mul",
    "Permute",
    "Pow",
    "Reshape",
    "Softmax",
    "Sum",
]


def as_float(x):
    """Integer and bool arrays as the default float dtype (exp, log, softmax of an int)."""
    if isinstance(x, np.ndarray) and x.dtype.kind not in "fc":
        return x.astype(_dtype.get_default_dtype().np_dtype)
    return x


def expand_reduced(xp, g, axes, keepdim: bool, shape):
    """``g`` with the reduced ``axes`` put back and broadcast to ``shape`` (a reduction's
    backward); ``axes`` None: ``g`` is 0-d (or all ones with keepdim) and broadcasts as it is."""
    return xp.expand(g, None if axes is None or keepdim else axes, shape)


# -- elementwise arithmetic -----------------------------------------------------------------


class Add(Function):
    """out = a + alpha * b.   da = g,  db = alpha * g"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if alpha == 1:  # (nothing stored on ctx: the node has nothing to scan or free)
            return a + b
        ctx.alpha = alpha
        return a + b * alpha

    @staticmethod
    def backward(ctx, g):
        alpha = ctx.__dict__.get("alpha", 1)
        if alpha == 1:
            return g, g
        return g, (g * alpha if ctx.needs_input_grad[1] else None)


class Mul(Function):
    """out = a * b.   da = g * conj(b),  db = g * conj(a)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, a, b):
        need = ctx.needs_input_grad
        if need:  # each operand only for the other's gradient
            ctx.save_for_backward(b if need[0] else None, a if need[1] else None)
        return a * b

    @staticmethod
    def backward(ctx, g):
        b, a = ctx.saved_tensors
        if a is None and type(b) is float:  # x * 0.5: a real number is its own conjugate
            return g * b, None
        conj = ctx.xp.conj
        return (g * conj(b) if b is not None else None), (g * conj(a) if a is not None else None)


class Div(Function):
    """out = a / b.   da = g / conj(b),  db = -g * conj(a / b) / conj(b)

    (db divides twice rather than by b**2: in float16, b**2 overflows from b = 256.)
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, a, b):
        if ctx.needs_input_grad:
            ctx.save_for_backward(b, a if ctx.needs_input_grad[1] else None)
        return np.true_divide(a, b)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        b, a = ctx.saved_tensors  # b = 0 gives inf/nan, as torch
        b = xp.conj(b)
        da = g / b if ctx.needs_input_grad[0] else None
        db = -g * ((xp.conj(a) / b) / b) if ctx.needs_input_grad[1] else None
        return da, db


def is_number(x) -> bool:
    """A Python or NumPy scalar (not an array, not a tensor)."""
    return not isinstance(x, (np.ndarray, TensorBase)) and np.ndim(x) == 0


def power(a, b, xp=np):
    """``a ** b``; ``x ** -0.5`` is NaN (not 0) at -inf, as torch's rsqrt."""
    out = xp.power(a, b)
    if is_number(b) and b == -0.5:
        out = xp.where(a == -math.inf, math.nan, out)
    return out


class Pow(Function):
    """out = a ** b.   da = g * b * a**(b-1),  db = g * out * log(a)  (0 where a == 0)

    ``a ** 0`` is constant: da = 0 there, even where ``a**-1`` is inf or NaN. Complex
    operands: both factors enter conjugated, ``g * conj(b * a**(b-1))`` and
    ``g * conj(out * log(a))`` (torch's convention, docs/complex.md).
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, a, b):
        out = power(a, b)
        need = ctx.needs_input_grad
        if need:  # out only for db, as torch (x ** 2 then writing into it is fine)
            ctx.save_for_backward(a, b, out if need[1] else None)
            ctx.complex = np.asarray(out).dtype.kind == "c"
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, b, out = ctx.saved_tensors
        if ctx.complex:  # conj(f') = f' of the conjugates (a ** b is holomorphic in each)
            a, b = xp.conj(a), (b.conjugate() if is_number(b) else xp.conj(b))
            out = xp.conj(out) if out is not None else None
        da = db = None
        if ctx.needs_input_grad[0]:
            if is_number(b):
                da = g * 2 * a if b == 2 else (g * b * power(a, b - 1, xp) if b else 0 * g)
            else:
                da = xp.where(b == 0, 0, g * b * power(a, b - 1, xp))
        if len(ctx.needs_input_grad) > 1 and ctx.needs_input_grad[1]:
            b_real = xp.real(b) if ctx.complex else b
            db = xp.where((a == 0) & (b_real >= 0), 0, g * out * xp.log(a))
        return da, db


# -- elementwise functions ------------------------------------------------------------------


class Exp(Function):
    """out = exp(x).   dx = g * conj(out)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x):
        out = np.asarray(np.exp(as_float(x)))
        ctx.save_for_backward(None, out)  # (input, output): the same layout as ops' unary
        return out

    @staticmethod
    def backward(ctx, g):
        _, out = ctx.saved_tensors
        return g * ctx.xp.conj(out)


class Log(Function):
    """out = log(x).   dx = g / conj(x)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x):
        x = as_float(x)
        ctx.save_for_backward(x, None)
        return np.asarray(np.log(x))

    @staticmethod
    def backward(ctx, g):
        x, _ = ctx.saved_tensors
        return g / ctx.xp.conj(x)


# -- reductions -----------------------------------------------------------------------------


class Sum(Function):
    """out = sum of x over ``axes`` (None: all).   dx = g broadcast over the summed axes"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, axes=None, keepdim=False, np_dtype=None):
        ctx.axes, ctx.keepdim, ctx.shape = axes, keepdim, x.shape
        return x.sum(axis=axes, keepdims=keepdim, dtype=np_dtype)

    @staticmethod
    def backward(ctx, g):
        return expand_reduced(ctx.xp, g, ctx.axes, ctx.keepdim, ctx.shape), None, None, None


class Max(Function):
    """out = max (or min) over ``axes``.   dx = g split evenly among the elements equal to it

    A NaN result equals no element, so the gradient is NaN; with ``nan_is_hit`` g is split
    among the NaN elements instead (torch's ``max()`` of all elements does that).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, axes=None, keepdim=False, pick_max=True, nan_is_hit=False):
        out = (np.max if pick_max else np.min)(x, axis=axes, keepdims=True)
        ctx.nan_is_hit = nan_is_hit
        ctx.axes, ctx.keepdim, ctx.shape = axes, keepdim, x.shape
        ctx.save_for_backward(x, out)  # out (keepdims) is only compared with: a constant
        return out if keepdim else (out.reshape(()) if axes is None else np.squeeze(out, axes))

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, out = ctx.saved_tensors
        hit = x == out
        if ctx.nan_is_hit:
            hit = xp.logical_or(hit, xp.logical_and(xp.isnan(x), xp.isnan(out)))
        count = xp.sum(hit, axis=ctx.axes, keepdims=True)
        g = expand_reduced(xp, g, ctx.axes, ctx.keepdim, ctx.shape)
        return xp.astype(g * hit / count, g.dtype), None, None, None, None


# -- shape views ----------------------------------------------------------------------------


class Reshape(Function):
    """out = x with a new shape (same elements, row-major order).   dx = g.reshape(x.shape)

    ``must_view``: refuse (RuntimeError) when the result cannot share x's memory.
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, shape, must_view=False):
        ctx.in_shape = x.shape
        if x.flags.c_contiguous:  # always a view; ndarray.reshape is the fast call
            return x.reshape(shape)
        if must_view:
            try:
                return np.reshape(x, shape, copy=False)
            except ValueError:
                raise RuntimeError(
                    f"view size is not compatible with input tensor's size and stride: cannot "
                    f"view a tensor of shape {list(x.shape)} with strides "
                    f"{[s // x.itemsize for s in x.strides]} as {list(shape)} (it is not "
                    "contiguous, e.g. after transpose). Use .reshape(...) or "
                    ".contiguous().view(...) instead."
                ) from None
        return np.reshape(x, shape)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.reshape(g, ctx.in_shape), None, None


class Permute(Function):
    """out = x with its axes reordered by ``dims``.   dx = g with the inverse order"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return np.transpose(x, dims)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.transpose(g, tuple(np.argsort(ctx.dims).tolist())), None


class Expand(Function):
    """out = x broadcast to a larger shape (a read-only view).   dx = g summed over the copies"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, shape):
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, g):
        return g, None  # the engine sums g back to x's shape


# -- indexing -------------------------------------------------------------------------------


class Index(Function):
    """out = x[index].   dx = zeros like x with g added at index (repeats accumulate)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, index):
        ctx.in_shape, ctx.index = x.shape, index
        return x[index]

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.add_at(ctx.in_shape, ctx.index, g), None


# -- the matrix product ---------------------------------------------------------------------


class Matmul(Function):
    """C = A @ B.   dA = dC @ B^H,  dB = A^H @ dC  (1-D operands are treated as row/column
    vectors; ^H is the conjugate transpose, the transpose for real operands)

    ``product`` computes the arrays' product (a subclass may use another kernel);
    ``product_summed_over_batch(a, g)``, when set, gives ``sum over batch of a^T @ g`` in one
    call for a 2-D ``B`` (the engine would sum the batch of products otherwise).
    """

    supports_create_graph = True
    supports_complex = True
    product = staticmethod(np.matmul)
    product_summed_over_batch = None

    @staticmethod
    def forward(ctx, a, b):
        need = ctx.needs_input_grad
        if need:  # each operand only for the other's gradient
            ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, b = ctx.saved_tensors  # an unsaved operand wants a gradient: its shape is in meta
        a, b = xp.conj(a), xp.conj(b)  # (the identity on real operands and on None)
        a_ndim = a.ndim if a is not None else len(ctx.input_meta[0][0])
        b_ndim = b.ndim if b is not None else len(ctx.input_meta[1][0])
        need_a, need_b = ctx.needs_input_grad
        graph = xp is not numpy_xp  # create_graph: the products are recorded (on tensors)
        mm = xp.matmul if graph else ctx.fn.product
        if a_ndim == 1 and b_ndim == 1:  # dot product
            return (g * b if need_a else None), (g * a if need_b else None)
        g2 = g
        if a_ndim == 1:
            g2 = g2[..., None, :]
        if b_ndim == 1:
            g2 = g2[..., None]
        da = db = None
        if need_a:
            b2 = b[:, None] if b_ndim == 1 else b
            da = mm(g2, xp.swapaxes(b2, -1, -2))
            if a_ndim == 1:
                da = da[..., 0, :]
        if need_b:
            a2 = a[None, :] if a_ndim == 1 else a
            summed = ctx.fn.product_summed_over_batch
            if summed is not None and b_ndim <= 2 and a2.ndim > 2 and not graph:
                db = summed(a2, g2)  # leading dims summed in one product
            else:  # (the engine sums broadcast batch dims)
                db = mm(xp.swapaxes(a2, -1, -2), g2)
            if b_ndim == 1:
                db = db[..., 0]
        return da, db


# -- softmax --------------------------------------------------------------------------------


class Softmax(Function):
    """y = exp(x - max) / sum(exp(x - max)).   dx = y * (g - sum(g * y, dim))

    Along ``dim``: the Jacobian ``diag(y) - y y^T`` applied to g; a row all ``-inf`` gives
    NaN, as torch.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim):
        x = as_float(x)
        e = np.exp(x - x.max(axis=dim, keepdims=True, initial=-np.inf))
        e /= e.sum(axis=dim, keepdims=True)
        ctx.dim = dim
        ctx.save_for_backward(e)
        return e

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - ctx.xp.sum(g * y, axis=ctx.dim, keepdims=True)), None
