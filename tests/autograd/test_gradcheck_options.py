"""gradcheck's torch options: check_forward_ad (through autograd.forward_ad), fast_mode,
check_undefined_grad, nondet_tol, check_grad_dtypes; the batched ones say they check nothing."""

import numpy as np
import pytest

import tinyattn as T
from tinyattn.autograd import gradcheck, gradgradcheck
from tinyattn.autograd.function import Function
from tinyattn.autograd.gradcheck import GradcheckError
from tinyattn.autograd.xp import numpy_xp

rng = np.random.default_rng(0)


def _rand(*shape, positive=False):
    a = rng.standard_normal(shape)
    return np.abs(a) + 0.5 if positive else a


def _attention(M, q, k, v):
    return M.nn.functional.scaled_dot_product_attention(q, k, v)


class _WrongSquare(Function):
    """out = x**2 with a wrong backward (3x instead of 2x), in both modes."""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x


class _WrongOnlyInGraphMode(Function):
    """out = x**2: right first-order backward, wrong one under create_graph (3x)."""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (2 if ctx.xp is numpy_xp else 3) * x


class _NotZeroForZero(Function):
    """out = 2 x with backward g * 2 + 1: right Jacobian, but not linear in g."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return g * 2 + 1


class _Noisy(Function):
    """out = x with a backward that adds a little noise each call (not reentrant)."""

    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, g):
        return g + rng.uniform(-1e-9, 1e-9, g.shape)


def _x64(*values):
    return T.tensor(list(values), dtype=T.float64, requires_grad=True)


def test_gradcheck_forward_ad_passes_correct_ops():
    x = T.tensor(_rand(2, 3), requires_grad=True)
    y = T.tensor(_rand(3, positive=True), requires_grad=True)
    f = lambda x, y: (x * y).exp().sum(1) / y.sum()  # noqa: E731
    assert gradcheck(f, (x, y), check_forward_ad=True)
    assert gradcheck(f, (x, y), check_forward_ad=True, check_backward_ad=False)
    assert gradcheck(f, (x, y), check_forward_ad=True, fast_mode=True)
    assert gradcheck(f, (x, y), check_grad_dtypes=True, nondet_tol=0.0)
    assert gradgradcheck(f, (x, y), check_fwd_over_rev=True)
    assert gradgradcheck(f, (x, y), gen_non_contig_grad_outputs=True)
    q, k, v = (T.tensor(_rand(1, 2, 3), requires_grad=True) for _ in range(3))
    assert gradcheck(lambda q, k, v: _attention(T, q, k, v), (q, k, v), check_forward_ad=True)


def test_gradcheck_forward_ad_finds_wrong_jvps():
    x = _x64(1.0, -2.0, 3.0)
    with pytest.raises(GradcheckError, match="forward AD 9, numeric 6"):
        gradcheck(_WrongSquare.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    # the first-order backward is right: only the forward-mode check sees the error
    assert gradcheck(_WrongOnlyInGraphMode.apply, (x,))
    with pytest.raises(GradcheckError, match="forward AD"):
        gradcheck(_WrongOnlyInGraphMode.apply, (x,), check_forward_ad=True)
    assert not gradcheck(
        _WrongSquare.apply, (x,), check_forward_ad=True, fast_mode=True, raise_exception=False
    )
    with pytest.raises(GradcheckError, match="fast mode"):
        gradcheck(_WrongSquare.apply, (x,), fast_mode=True)
    assert gradcheck(_WrongOnlyInGraphMode.apply, (x,), fast_mode=True)
    with pytest.raises(GradcheckError, match=r"fast mode.*forward AD"):
        gradcheck(_WrongOnlyInGraphMode.apply, (x,), fast_mode=True, check_forward_ad=True)


def test_gradcheck_undefined_grad_and_reentrancy():
    x = _x64(1.0, 2.0)
    with pytest.raises(GradcheckError, match="undefined or zero"):
        gradcheck(_NotZeroForZero.apply, (x,), check_undefined_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian|analytic"):
        gradcheck(_NotZeroForZero.apply, (x,), check_undefined_grad=False)
    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(_Noisy.apply, (x,))
    assert gradcheck(_Noisy.apply, (x,), nondet_tol=1e-6, check_undefined_grad=False)


def test_gradcheck_options_that_check_nothing_say_so():
    x = _x64(1.0, 2.0)
    with pytest.warns(UserWarning, match="check_batched_grad=True checks nothing"):
        assert gradcheck(lambda x: x * x, (x,), check_batched_grad=True)
    with pytest.warns(UserWarning, match="check_batched_forward_grad"):
        assert gradcheck(lambda x: x * x, (x,), check_batched_forward_grad=True)
    with pytest.raises(AssertionError, match="at least one of check_forward_ad"):
        gradcheck(lambda x: x * x, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="check_undefined_grad=True requires"):
        gradgradcheck(lambda x: x * x, (x,), check_rev_over_rev=False, check_fwd_over_rev=True)
    with pytest.raises(TypeError):
        gradcheck(lambda x: x * x, (x,), check_fwd_ad=True)  # a misspelt option is an error


def test_gradcheck_forward_ad_several_outputs_and_constants():
    x = T.tensor(_rand(4), requires_grad=True)
    c = T.tensor(_rand(4))  # a float input that wants no gradient stays a constant
    f = lambda x, c, k: (x.sin() * c, (x * k).cumsum(0), x.argmax())  # noqa: E731
    assert gradcheck(f, (x, c, 3.0), check_forward_ad=True)
    assert gradcheck(f, (x, c, 3.0), check_forward_ad=True, fast_mode=True)
