"""In-place writes of new values: fill_, zero_, copy_ and the random fills (uniform_ ...)."""

from __future__ import annotations

import numpy as np

from ...core.function import Function
from ...core.tensor_base import TensorBase


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


def fill_(self: TensorBase, value) -> TensorBase:
    """Fill with ``value`` (a number or a one-element tensor) in place."""
    if isinstance(value, TensorBase) and value.ndim != 0:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
        )
    return self._apply_inplace(Fill, value)


def zero_(self: TensorBase) -> TensorBase:
    return self._apply_inplace(Fill, 0)


def copy_(self: TensorBase, other, non_blocking: bool = False) -> TensorBase:
    """Copy ``other`` (broadcast to this shape, cast to this dtype) into this tensor
    (torch's keyword for the source is ``other``)."""
    if not isinstance(other, TensorBase):
        other = TensorBase._make(np.asarray(other))
    return self._apply_inplace(Copy, other)


# Random fills write data only (used under no_grad by nn.init).


def _random_fill(self: TensorBase, values: np.ndarray, op: str) -> TensorBase:
    from ..inplace import check_inplace_allowed

    check_inplace_allowed(self, op)
    self._data[...] = values
    self._bump_version()
    return self


def uniform_(self: TensorBase, a: float = 0.0, b: float = 1.0, *, generator=None) -> TensorBase:
    from ...random import _numpy_generator
    from ...random.fill import fill_uniform_
    from ..inplace import check_inplace_allowed

    check_inplace_allowed(self, "uniform_")
    fill_uniform_(self._data, a, b, _numpy_generator(generator))
    self._bump_version()
    return self


def normal_(self: TensorBase, mean: float = 0.0, std: float = 1.0, *, generator=None) -> TensorBase:
    from ...random import _numpy_generator
    from ...random.fill import fill_normal_
    from ..inplace import check_inplace_allowed

    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    check_inplace_allowed(self, "normal_")
    fill_normal_(self._data, mean, std, _numpy_generator(generator))
    self._bump_version()
    return self


def bernoulli_(self: TensorBase, p: float = 0.5, *, generator=None) -> TensorBase:
    from ...random import _numpy_generator

    rng = _numpy_generator(generator)
    return _random_fill(self, rng.random(self.shape) < p, "bernoulli_")


def exponential_(self: TensorBase, lambd: float = 1.0, *, generator=None) -> TensorBase:
    from ...random import _numpy_generator

    rng = _numpy_generator(generator)
    return _random_fill(self, rng.exponential(1.0 / lambd, self.shape), "exponential_")


def random_(
    self: TensorBase, low: int = 0, high: int | None = None, *, generator=None
) -> TensorBase:
    from ...random import _numpy_generator

    if high is None:
        low, high = 0, low if low else 2**24
    rng = _numpy_generator(generator)
    return _random_fill(self, rng.integers(low, high, self.shape), "random_")
