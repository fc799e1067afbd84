"""gradcheck: passes correct backwards, reports the worst mismatch of a wrong one."""

import numpy as np
import pytest

import tinyattn as T
from tinyattn.autograd import gradcheck
from tinyattn.autograd.function import Function  # the array-level op base
from tinyattn.autograd.gradcheck import GradcheckError


class _WrongSquare(Function):
    """out = x**2 with a deliberately wrong backward (3x instead of 2x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x


def test_gradcheck_passes_correct_ops():
    x = T.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=T.float64, requires_grad=True)
    y = T.tensor([0.5, 1.5, 2.0], dtype=T.float64, requires_grad=True)
    assert gradcheck(lambda x, y: (x * y).exp().sum(1) / y.sum(), (x, y))
    assert gradcheck(lambda x: x.softmax(-1), (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_gradcheck_reports_the_worst_mismatch():
    x = T.tensor([1.0, -2.0, 3.0], dtype=T.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda x: _WrongSquare.apply(x), (x,))
    msg = str(info.value)
    # worst error is at the element with the largest |x|: analytic 9, numeric 6
    assert "input[0][(2,)]" in msg and "analytic 9" in msg and "numeric 6" in msg
    assert "error 3" in msg
    assert gradcheck(lambda x: _WrongSquare.apply(x), (x,), raise_exception=False) is False


def test_gradcheck_needs_an_input_requiring_grad():
    with pytest.raises(ValueError, match="no input requires grad"):
        gradcheck(lambda x: x * 2, (T.ones(2, dtype=T.float64),))


def test_gradcheck_warns_for_float32():
    x = T.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="not float64"):
        gradcheck(lambda x: x * 2, (x,), eps=1e-2, atol=1e-3)
