"""softmax and log_softmax along a dim, numerically stable.

softmax:      y = exp(x - max) / sum(exp(x - max))
              dx = y * (g - sum(g * y))                  (the Jacobian diag(y) - y y^T applied to g)
log_softmax:  y = x - max - log(sum(exp(x - max)))
              dx = g - exp(y) * sum(g)

A row that is all ``-inf`` gives NaN, exactly as in torch: this is a plain
tensor op. (The attention APIs treat fully-masked rows specially instead.)
The softmax math itself lives in ``tinyattn.kernels.softmax_math``, shared with attention.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...core import _dtype as dt
from ...core import primitives
from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from ...kernels import softmax_math
from .._util import normalize_dim, to_float

__all__ = ["softmax", "log_softmax"]


class Softmax(primitives.Softmax):
    __doc__ = primitives.Softmax.__doc__  # the core's backward; the forward in the kernel's math

    @staticmethod
    def forward(ctx, x, dim):
        x = to_float(x)
        work = dt.accumulation_dtype(x.dtype)  # float16: in float32, rounded once (torch)
        e = softmax_math.softmax(x.astype(work, copy=False), axis=dim).astype(x.dtype, copy=False)
        ctx.dim = dim
        ctx.save_for_backward(e)
        return e


class LogSoftmax(Function):
    """y = x - logsumexp(x).   dx = g - exp(y) * sum(g, dim)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, dim):
        x = to_float(x)
        dtype, x = x.dtype, x.astype(dt.accumulation_dtype(x.dtype), copy=False)  # (float16)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            shifted = x - x.max(axis=dim, keepdims=True, initial=-np.inf)
            y = shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
        y = y.astype(dtype, copy=False)
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        xp = ctx.xp
        return g - xp.exp(y) * xp.sum(g, axis=ctx.dim, keepdims=True), None


def _implicit_dim(ndim: int, op: str, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {op} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel + 1,  # one more frame than torch's: _prepare
    )
    return 0 if ndim in (0, 1, 3) else 1


def _prepare(input: Tensor, dim, dtype, op: str, stacklevel: int):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(input)}")
    if dtype is not None:
        input = input.to(dt.to_dtype(dtype))
    if input._data.dtype.kind == "c":  # (torch has no complex softmax on the CPU either)
        raise NotImplementedError(f"{op}(): does not support complex input (got {input.dtype})")
    if dim is None:
        dim = _implicit_dim(input.ndim, op, stacklevel)
    return input, normalize_dim(dim, input.ndim, op) if input.ndim else None


def softmax(input: Tensor, dim: int | None = None, dtype=None, *, _stacklevel=3) -> Tensor:
    """Normalise ``exp(input)`` to sum to 1 along ``dim``.

    Gradient: ``dx = y * (dy - sum(dy * y, dim))``.
    """
    input, d = _prepare(input, dim, dtype, "softmax", _stacklevel)
    return Softmax.apply(input, d)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None, *, _stacklevel=3) -> Tensor:
    """``input - logsumexp(input, dim)``, computed stably.

    Gradient: ``dx = dy - softmax(x) * sum(dy, dim)``.
    """
    input, d = _prepare(input, dim, dtype, "log_softmax", _stacklevel)
    return LogSoftmax.apply(input, d)
