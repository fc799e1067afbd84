"""``tinyattn.autograd.Function``: torch's custom functions, written with Tensor ops.

Each custom function is defined once per library (``_fns(lib)``) from the same
source, so the torch parity tests compare the same user code run on both; the
gradchecks (finite differences, every element) run without torch.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from harness import check_op, rand, torch

import tinyattn
from tinyattn.autograd import gradcheck, gradgradcheck

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity: torch is not installed")
LIBS = [tinyattn] + ([torch] if torch is not None else [])


@functools.cache
def _fns(lib):
    """The same custom functions, subclassing ``lib.autograd.Function``."""
    F = lib.autograd.Function
    once_differentiable = lib.autograd.function.once_differentiable

    class Legendre3(F):
        """P3(x) = (5 x^3 - 3 x) / 2; dP3/dx = (15 x^2 - 3) / 2."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x**3 - 3 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 1.5 * (5 * x**2 - 1)

    class ScaledExp(F):
        """y = k exp(x), saving its output; k is a Python number (its gradient: None)."""

        @staticmethod
        def forward(ctx, x, k=2.0):
            y = k * x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y, None

    class MulAdd(F):
        """(a * b, a + b): two outputs, two inputs."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            return g_prod * b + g_sum, g_prod * a + g_sum

    class SortValues(F):
        """(sorted values, indices): the indices are non-differentiable."""

        @staticmethod
        def forward(ctx, x):
            values, indices = x.sort()
            ctx.mark_non_differentiable(indices)
            ctx.save_for_backward(indices)
            return values, indices

        @staticmethod
        def backward(ctx, g, g_indices):
            (indices,) = ctx.saved_tensors
            return lib.zeros_like(g).scatter(-1, indices, g)

    class DoubleInPlace(F):
        """x *= 2 in place (``mark_dirty``)."""

        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    class Scale(F):
        """The ``setup_context`` style: forward without ctx."""

        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class SquareOnce(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    class BroadcastGrad(F):
        """Returns a gradient with a leading broadcast dim: summed to the input's shape."""

        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return (3 * g).unsqueeze(0).expand(2, *g.shape) / 2

    return {c.__name__: c for c in locals().values() if isinstance(c, type)}


# -- finite differences (no torch needed) ------------------------------------------------


@pytest.mark.parametrize("name", ["Legendre3", "ScaledExp", "BroadcastGrad"])
def test_gradcheck_single_output(name):
    fn = _fns(tinyattn)[name]
    x = tinyattn.tensor(rand(2, 3, seed=1), requires_grad=True)
    assert gradcheck(fn.apply, [x])


def test_gradcheck_two_outputs_and_second_order():
    fns = _fns(tinyattn)
    a = tinyattn.tensor(rand(3, seed=2), requires_grad=True)
    b = tinyattn.tensor(rand(3, seed=3), requires_grad=True)
    assert gradcheck(
        lambda a, b: fns["MulAdd"].apply(a, b)[0] * 2 + fns["MulAdd"].apply(a, b)[1], [a, b]
    )
    x = tinyattn.tensor(rand(4, seed=4), requires_grad=True)
    assert gradgradcheck(fns["Legendre3"].apply, [x])  # the backward is itself recorded
    assert gradgradcheck(fns["ScaledExp"].apply, [x])  # a saved output has this node as grad_fn


# -- torch parity -------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("name", ["Legendre3", "ScaledExp", "BroadcastGrad"])
def test_parity_and_second_order(name):
    check_op(lambda lib, x: _fns(lib)[name].apply(x), rand(2, 3, seed=5))


@needs_torch
def test_parity_several_outputs_and_unused_output():
    def f(lib, a, b):
        prod, total = _fns(lib)["MulAdd"].apply(a, b)
        return prod * total

    check_op(f, rand(3, seed=6), rand(3, seed=7))
    check_op(lambda lib, a, b: _fns(lib)["MulAdd"].apply(a, b)[1], rand(3, seed=8), rand(3, seed=9))


@needs_torch
def test_parity_non_differentiable_output_setup_context_and_in_place():
    check_op(lambda lib, x: _fns(lib)["SortValues"].apply(x)[0] * lib.arange(4.0), rand(4, seed=10))
    check_op(lambda lib, x: _fns(lib)["Scale"].apply(x, 3.0), rand(4, seed=11))
    check_op(lambda lib, x: _fns(lib)["DoubleInPlace"].apply(x.clone()) ** 2, rand(4, seed=12))


# -- behaviour, the same in both libraries -------------------------------------------------


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_ctx_fields_grad_mode_and_names(lib):
    seen = {}

    class Probe(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            seen["needs"] = ctx.needs_input_grad
            seen["forward_grad_mode"] = lib.is_grad_enabled()
            return x * k

        @staticmethod
        def backward(ctx, g):
            seen["backward_grad_mode"] = lib.is_grad_enabled()
            return g * 2, None

    x = lib.ones(2, requires_grad=True)
    y = Probe.apply(x, 2.0)
    assert y.grad_fn.name() == "ProbeBackward" and repr(y.grad_fn).startswith("<")
    assert [(type(n).__name__, i) for n, i in y.grad_fn.next_functions] == [("AccumulateGrad", 0)]
    y.sum().backward()
    assert seen == {"needs": (True, False), "forward_grad_mode": False, "backward_grad_mode": False}
    assert x.grad.tolist() == [2.0, 2.0]
    with lib.no_grad():
        assert not Probe.apply(x, 2.0).requires_grad
    assert seen["needs"] == (True, False)  # (as torch: requires_grad, whatever the grad mode)
    assert not Probe.apply(lib.ones(2), 2.0).requires_grad


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_materialized_and_unmaterialized_gradients(lib):
    got = []

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, materialize):
            ctx.set_materialize_grads(materialize)
            return a * 1, a * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got.append(None if g2 is None else g2.tolist())
            return g1, None

    a = lib.ones(2, requires_grad=True)
    Two.apply(a, True)[0].sum().backward()
    Two.apply(a, False)[0].sum().backward()
    assert got == [[0.0, 0.0], None]
    _, indices = _fns(lib)["SortValues"].apply(lib.tensor([3.0, 1.0], requires_grad=True))
    assert not indices.requires_grad and indices.tolist() == [1, 0]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_returned_input_and_dirty_input(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    a = lib.ones(2, requires_grad=True)
    r = Identity.apply(a)
    assert r is not a and r.grad_fn is not None and r.grad_fn.name() == "IdentityBackward"
    c = a.clone()
    d = _fns(lib)["DoubleInPlace"].apply(c)
    assert d is c and c.grad_fn.name() == "DoubleInPlaceBackward"
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used"):
        _fns(lib)["DoubleInPlace"].apply(a)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_errors_as_torch(lib):
    class TooMany(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    class WrongShape(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g[:1]

    a = lib.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 1, got 2\)"):
        TooMany.apply(a).sum().backward()
    with pytest.raises(RuntimeError, match=r"invalid gradient at index 0 - got \[1, 3\] but"):
        WrongShape.apply(a).sum().backward()
    z = a.clone()
    out = _fns(lib)["Legendre3"].apply(z)
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    out = _fns(lib)["Legendre3"].apply(a)
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.grad_fn.saved_tensors  # noqa: B018


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_once_differentiable(lib):
    square = _fns(lib)["SquareOnce"]
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    square.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    v = lib.ones(2, dtype=lib.float64, requires_grad=True)
    (g,) = lib.autograd.grad(square.apply(x), x, v, create_graph=True)
    assert g.tolist() == [2.0, 4.0] and g.requires_grad
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked"):
        g.sum().backward()
    (g,) = lib.autograd.grad(square.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad  # no incoming gradient required grad: nothing to guard


def test_next_functions_as_torch():
    x = tinyattn.ones(2, requires_grad=True)
    c = tinyattn.ones(2)
    pairs = [(n if n is None else n.name(), i) for n, i in (c * x).grad_fn.next_functions]
    assert pairs == [(None, 0), ("AccumulateGrad", 0)]
    loss = ((x * c).exp() * 2.0).sum()
    chain = []
    node = loss.grad_fn
    while node is not None and node.next_functions:
        chain.append(node.name())
        node = node.next_functions[0][0]
    assert chain == ["SumBackward0", "MulBackward0", "ExpBackward0", "MulBackward0"]
    assert node.name() == "AccumulateGrad" and node.variable is x


def test_legacy_constructor_and_missing_forward_raise():
    class NoForward(tinyattn.autograd.Function):
        pass

    with pytest.raises(NotImplementedError, match="implement the forward"):
        NoForward.apply(tinyattn.ones(1, requires_grad=True))
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        NoForward()


def test_array_level_ops_still_subclass_the_op_base():
    from tinyattn.autograd.function import Function as Op

    assert not issubclass(tinyattn.autograd.Function, Op)
    assert tinyattn.autograd.function.FunctionCtx is tinyattn.autograd.FunctionCtx
    y = _fns(tinyattn)["Legendre3"].apply(tinyattn.ones(1, requires_grad=True))
    assert isinstance(y.grad_fn, tinyattn.autograd.FunctionCtx)
    np.testing.assert_allclose(y.detach().numpy(), [1.0])
