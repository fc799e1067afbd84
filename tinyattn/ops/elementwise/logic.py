"""In-place comparisons, logical and bitwise ops (``x.eq_(y)``, ``x.bitwise_or_(y)`` ...).

A comparison written in place stores 1/0 in the tensor's own dtype, as torch; on a float
tensor in a graph it records a node whose gradient is 0 (the result is piecewise
constant). Bitwise ops take integer and bool tensors only, so they never record.
The out-of-place ops live in ``compare.py`` (re-exported here for the Tensor methods).
"""

from __future__ import annotations

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from .arithmetic import _checked, _promote
from .compare import (
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    greater_equal,
    less_equal,
    not_equal,
)

__all__ = [
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "greater_equal",
    "less_equal",
    "not_equal",
]

# -- in-place comparisons, logical and bitwise ops ------------------------------------------


class CompareInPlace(Function):
    """out = (x <op> other) written as 0/1 in x's dtype.   dx = 0, dother = 0 (piecewise constant)

    One node class for every in-place comparison and logical op (``spec`` names the op).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, other, spec):
        name, compute = spec
        a, b, _ = _promote(x, other, name)
        return np.asarray(_checked(name, a, b, compute)).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.zeros_like(g), ctx.xp.zeros_like(g), None  # other: 0 as torch


def _compare_inplace(np_fn, name: str):
    spec = (name, np_fn)

    def method(self: Tensor, other) -> Tensor:
        if isinstance(other, (list, tuple)):
            other = Tensor._make(np.asarray(other))
        return self._apply_inplace(CompareInPlace, other, spec)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: 1 (True) where it holds, else 0, in self's dtype."
    return method


eq_ = _compare_inplace(np.equal, "eq_")
ne_ = _compare_inplace(np.not_equal, "ne_")
lt_ = _compare_inplace(np.less, "lt_")
le_ = _compare_inplace(np.less_equal, "le_")
gt_ = _compare_inplace(np.greater, "gt_")
ge_ = _compare_inplace(np.greater_equal, "ge_")
logical_and_ = _compare_inplace(np.logical_and, "logical_and_")
logical_or_ = _compare_inplace(np.logical_or, "logical_or_")
logical_xor_ = _compare_inplace(np.logical_xor, "logical_xor_")
not_equal_, greater_equal_, less_equal_, greater_, less_ = ne_, ge_, le_, gt_, lt_


def logical_not_(self: Tensor) -> Tensor:
    """In-place ``logical_not``: 1 (True) where self is 0, else 0, in self's dtype (= ``eq_(0)``)."""
    return eq_(self, 0)


def _bitwise_inplace(fn, name: str):
    def method(self: Tensor, other=None) -> Tensor:
        from ..inplace import _write, check_inplace_allowed

        check_inplace_allowed(self, name)
        out = fn(self) if other is None else fn(self, other)
        _write(self, out._data, name)
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name[:-1]}`` (integer and bool tensors)."
    return method


bitwise_and_ = _bitwise_inplace(bitwise_and, "bitwise_and_")
bitwise_or_ = _bitwise_inplace(bitwise_or, "bitwise_or_")
bitwise_xor_ = _bitwise_inplace(bitwise_xor, "bitwise_xor_")
bitwise_left_shift_ = _bitwise_inplace(bitwise_left_shift, "bitwise_left_shift_")
bitwise_right_shift_ = _bitwise_inplace(bitwise_right_shift, "bitwise_right_shift_")


def bitwise_not_(self: Tensor) -> Tensor:
    """In-place ``bitwise_not`` (integer and bool tensors)."""
    return _bitwise_inplace(bitwise_not, "bitwise_not_")(self)
