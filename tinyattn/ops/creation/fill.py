"""In-place writes of new values: fill_, zero_, copy_ (the random fills are in ``ops/random/``)."""

from __future__ import annotations

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor


class Fill(Function):
    """out = value everywhere (x's shape).   dx = 0,  dvalue = sum(g)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, value):
        return np.full(x.shape, value, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        return xp.zeros_like(g), xp.sum(g)


class Copy(Function):
    """out = src broadcast to x's shape and cast to x's dtype.   dx = 0,  dsrc = g"""

    supports_create_graph = True

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
        return ctx.xp.zeros_like(g), g


def fill_(self: Tensor, value) -> Tensor:
    """Fill with ``value`` (a number or a one-element tensor) in place."""
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
        )
    return self._apply_inplace(Fill, value)


def zero_(self: Tensor) -> Tensor:
    return self._apply_inplace(Fill, 0)


def copy_(self: Tensor, other, non_blocking: bool = False) -> Tensor:
    """Copy ``other`` (broadcast to this shape, cast to this dtype) into this tensor
    (torch's keyword for the source is ``other``)."""
    if not isinstance(other, Tensor):
        other = Tensor._make(np.asarray(other))
    return self._apply_inplace(Copy, other)
