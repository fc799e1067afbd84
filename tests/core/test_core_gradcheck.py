"""The core tensor's methods through the shared harness: float64 gradcheck, gradgradcheck
and torch parity of the primitive ops as ``tinyattn.core.tensor.Tensor`` calls them (the
full ``tinyattn.Tensor`` redefines these methods, so only these tests reach, e.g., the
core's ``Max`` directly)."""

from __future__ import annotations

from harness import check_op, rand

import tinyattn
from tinyattn.core.tensor import Tensor as CoreTensor


def _core(T) -> bool:
    return T is tinyattn


def test_core_max_of_all_elements():
    check_op(lambda T, a: CoreTensor.max(a) if _core(T) else a.max(), rand(3, 4))


def test_core_max_over_a_dim():
    check_op(lambda T, a: CoreTensor.max(a, 1) if _core(T) else a.amax(1), rand(3, 4))
    check_op(
        lambda T, a: CoreTensor.max(a, -1, keepdim=True) if _core(T) else a.amax(-1, True),
        rand(2, 3),
    )


def test_core_attention():
    def attention(T, q, k, v):
        if _core(T):  # the core's methods only
            s = CoreTensor.__mul__(CoreTensor.__matmul__(q, CoreTensor.transpose(k, 0, 1)), 0.5)
            return CoreTensor.__matmul__(CoreTensor.softmax(s, -1), v)
        return (q @ k.transpose(0, 1) * 0.5).softmax(-1) @ v

    check_op(attention, rand(3, 2), rand(4, 2), rand(4, 2))


def test_core_arithmetic_and_shapes():
    def f(T, a, b):
        if _core(T):
            c = CoreTensor
            y = c.__sub__(c.__truediv__(c.exp(a), b), c.__pow__(c.log(b), 2))
            return c.sum(c.permute(c.reshape(y, 3, 2), 1, 0), 0)
        return ((a.exp() / b) - b.log() ** 2).reshape(3, 2).permute(1, 0).sum(0)

    check_op(f, rand(2, 3), rand(2, 3, low=0.5, high=2.0))
