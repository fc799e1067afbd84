"""Comparisons, logical and bitwise ops, and float checks (isnan ...): not differentiable.

Their results are bool (or integer) tensors outside the autograd graph, as in torch.
"""

from __future__ import annotations

import numpy as np

from ...core.tensor import Tensor
from .._util import broadcast_error, refuse_complex_order
from .arithmetic import _checked, _promote

_ORDERED = frozenset(("lt", "le", "gt", "ge"))


def _compare(np_fn, name):
    def fn(input, other) -> Tensor:
        a = input._data if isinstance(input, Tensor) else input
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(b, (list, tuple)):
            b = np.asarray(b)
        if name in _ORDERED:
            refuse_complex_order(name, a, b)
        a, b, _ = _promote(a, b, name)
        return Tensor._make(np.asarray(_checked(name, a, b, np_fn)))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` as a bool tensor (not differentiable)."
    return fn


eq = equal_elementwise = _compare(np.equal, "eq")
ne = not_equal = _compare(np.not_equal, "ne")
lt = less = _compare(np.less, "lt")
le = less_equal = _compare(np.less_equal, "le")
gt = greater = _compare(np.greater, "gt")
ge = greater_equal = _compare(np.greater_equal, "ge")
logical_and = _compare(np.logical_and, "logical_and")
logical_or = _compare(np.logical_or, "logical_or")
logical_xor = _compare(np.logical_xor, "logical_xor")


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements."""
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))


def _bitwise(np_fn, name):
    def fn(input, other) -> Tensor:
        a = input._data if isinstance(input, Tensor) else input
        b = other._data if isinstance(other, Tensor) else other
        a, b, rt = _promote(a, b, name)
        if rt.kind == "f":
            raise TypeError(f"{name}: only bool and integer tensors are supported, got {rt}")
        return Tensor._make(np.asarray(_checked(name, a, b, np_fn)))

    fn.__name__ = name
    return fn


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def _shift(left: bool):
    """``a << s`` / ``a >> s`` as torch: a shift outside [0, bits) gives 0 (left) or the
    sign (right; 0 for unsigned), where NumPy's result is undefined."""

    def fn(a, s):
        # a Python-number operand is weak (takes the tensor's dtype, as torch); np.asarray
        # alone would make it int64 and widen an int8/int32/uint8 result to int64
        rt = a.dtype if isinstance(a, np.ndarray) else np.asarray(s).dtype
        if isinstance(s, np.ndarray):
            rt = np.result_type(a, s)
        bits = np.dtype(rt).itemsize * 8
        a = np.asarray(a).astype(rt, copy=False)
        s = np.asarray(s)
        out_of_range = (s < 0) | (s >= bits)
        safe = np.where(out_of_range, 0, s).astype(rt)
        if left:
            return np.where(out_of_range, np.zeros((), rt), np.left_shift(a, safe))
        # past the width: the sign of a signed value (0 or -1), 0 for an unsigned one
        fill = np.right_shift(a, rt.type(bits - 1)) if rt.kind == "i" else np.zeros((), rt)
        return np.where(out_of_range, fill, np.right_shift(a, safe))

    return fn


def _integer_bitwise(np_fn, name):
    inner = _bitwise(np_fn, name)

    def fn(input, other) -> Tensor:
        for x in (input, other):
            if isinstance(x, bool) or (isinstance(x, Tensor) and x._data.dtype == np.bool_):
                raise TypeError(f"{name}: only integer tensors are supported, got bool")
        return inner(input, other)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of integer tensors (not differentiable)."
    return fn


bitwise_left_shift = _integer_bitwise(_shift(left=True), "bitwise_left_shift")
bitwise_right_shift = _integer_bitwise(_shift(left=False), "bitwise_right_shift")


def logical_not(input: Tensor) -> Tensor:
    return Tensor._make(np.logical_not(input._data))


def logical_not_or_invert(input: Tensor) -> Tensor:
    """``~x``: logical not on bool tensors, bitwise not on integers."""
    if input._data.dtype.kind == "f":
        raise TypeError(
            f"~ (bitwise_not) is only supported for bool and integer tensors, got {input.dtype}"
        )
    return Tensor._make(np.invert(input._data))


bitwise_not = logical_not_or_invert


def isnan(input: Tensor) -> Tensor:
    return Tensor._make(np.isnan(input._data))


def isinf(input: Tensor) -> Tensor:
    return Tensor._make(np.isinf(input._data))


def isfinite(input: Tensor) -> Tensor:
    return Tensor._make(np.isfinite(input._data))


def _check_broadcast(op: str, a, b) -> None:
    try:
        np.broadcast_shapes(np.shape(a), np.shape(b))
    except ValueError:
        raise broadcast_error(op, a, b) from None


def allclose(input: Tensor, other, rtol: float = 1e-5, atol: float = 1e-8, equal_nan=False) -> bool:
    b = other._data if isinstance(other, Tensor) else other
    _check_broadcast("allclose", input._data, b)
    return bool(np.allclose(input._data, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(
    input: Tensor, other, rtol: float = 1e-5, atol: float = 1e-8, equal_nan=False
) -> Tensor:
    b = other._data if isinstance(other, Tensor) else other
    _check_broadcast("isclose", input._data, b)
    return Tensor._make(np.isclose(input._data, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
