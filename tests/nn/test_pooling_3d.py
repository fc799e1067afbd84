"""3-D pools (max, avg, adaptive), their modules, and the pooling backward Functions
(``MaxPoolGrad``, ``AvgPoolGrad``) as ops of their own: gradchecks, torch parity (first
and second order), indices, NaN and ties, bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, run_parity, torch

import tinyattn
from tests.nn._module_parity import module_parity

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0):
    # distinct values (a permutation, spread out): no ties that finite differences would cross
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) / n * 2 - 1 + rng.uniform(0, 0.2 / n, n)).reshape(shape)


def F(lib):
    return lib.nn.functional


MAX3D = [
    ((1, 2, 3, 4, 4), dict(kernel_size=2)),
    ((2, 1, 4, 5, 3), dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0))),
    ((1, 1, 5, 4, 5), dict(kernel_size=2, stride=2, padding=1, dilation=(2, 1, 2))),
    ((1, 1, 5, 5, 4), dict(kernel_size=2, stride=2, ceil_mode=True)),
    ((2, 3, 4, 3), dict(kernel_size=(3, 2, 2), stride=1, padding=(1, 0, 1))),  # unbatched
]


@pytest.mark.parametrize("shape,kw", MAX3D)
def test_max_pool3d(shape, kw):
    check_op(lambda T, x: F(T).max_pool3d(x, **kw), _arr(shape, 1))
    check_op(lambda T, x: F(T).max_pool3d(x, **kw, return_indices=True), _arr(shape, 2))
    check_op(lambda T, x: F(T).max_pool3d_with_indices(x, **kw), _arr(shape, 3))


AVG3D = [
    ((1, 2, 3, 4, 4), dict(kernel_size=2)),
    ((1, 1, 4, 5, 3), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 1, 4, 5, 3), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((1, 1, 5, 4, 6), dict(kernel_size=(2, 3, 2), stride=2, padding=1, ceil_mode=True)),
    (
        (1, 1, 5, 4, 6),
        dict(kernel_size=(2, 3, 2), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    ((1, 1, 3, 4, 5), dict(kernel_size=2, stride=1, divisor_override=3)),
    ((2, 3, 4, 3), dict(kernel_size=2, stride=1, padding=1)),  # unbatched
]


@pytest.mark.parametrize("shape,kw", AVG3D)
def test_avg_pool3d(shape, kw):
    check_op(lambda T, x: F(T).avg_pool3d(x, **kw), _arr(shape, 4))


@pytest.mark.parametrize(
    "shape,size",
    [((1, 2, 5, 7, 4), 3), ((1, 1, 4, 5, 3), (None, 3, 2)), ((2, 4, 3, 5), (5, 2, 1))],
)
def test_adaptive_pool3d(shape, size):
    check_op(lambda T, x: F(T).adaptive_avg_pool3d(x, size), _arr(shape, 5))
    check_op(lambda T, x: F(T).adaptive_max_pool3d(x, size), _arr(shape, 6))
    check_op(lambda T, x: F(T).adaptive_max_pool3d(x, size, return_indices=True), _arr(shape, 7))
    check_op(lambda T, x: F(T).adaptive_max_pool3d_with_indices(x, size), _arr(shape, 8))


@needs_torch
def test_max_pool3d_ties_nan_and_inf_as_torch():
    x = np.ones((1, 1, 3, 3, 4))
    x[0, 0, 1, 1, 1] = np.nan
    x[0, 0, 2, 0, 3] = np.nan
    x[0, 0, 0, 2, 2] = 2.0
    x[0, 0, 0, 0, 0] = -np.inf
    # (finite differences cannot cross the ties: parity of values, indices and gradients only)
    for kw in (dict(kernel_size=2, stride=1), dict(kernel_size=3, stride=1, padding=1)):
        run_parity(lambda T, x, kw=kw: F(T).max_pool3d(x, **kw, return_indices=True), x)
    run_parity(lambda T, x: F(T).adaptive_max_pool3d(x, 2, return_indices=True), x)
    y = np.full((1, 1, 1, 2, 3), -np.inf)
    run_parity(lambda T, x: F(T).max_pool3d(x, 2, padding=1, return_indices=True), y)


@needs_torch
def test_max_pool3d_window_wholly_in_padding():
    """dilation 2, padding 1 on a depth of 1: some windows hold only padding (torch: -inf
    and the first tap's index, past the end); they get no gradient."""
    x = _arr((1, 2, 1, 3, 4), 9)
    kw = dict(kernel_size=2, stride=1, padding=1, dilation=2, return_indices=True)
    y, i = F(tinyattn).max_pool3d(tinyattn.tensor(x), **kw)
    yt, it = torch.nn.functional.max_pool3d(torch.tensor(x), **kw)
    np.testing.assert_array_equal(y.numpy(), yt.numpy())
    np.testing.assert_array_equal(i.numpy(), it.numpy())
    assert np.isneginf(y.numpy()).all()  # depth 1 with dilation 2: every window is padding
    xs = tinyattn.tensor(x, requires_grad=True)
    F(tinyattn).max_pool3d(xs, **{**kw, "return_indices": False}).sum().backward()
    assert (xs.grad.numpy() == 0).all()


# -- the backward Functions, as ops of their own (dx as a function of g) ---------------------


def _vjp(pool):
    """``f(lib, g, x) = d(sum(pool(x) * g))/dx``: linear in g, recorded with create_graph
    (its graph holds MaxPoolGrad / AvgPoolGrad)."""

    def f(lib, g, x):
        with lib.enable_grad():
            x = x.detach().requires_grad_(True)
            (dx,) = lib.autograd.grad(pool(lib, x), x, g, create_graph=True)
        return dx

    return f


GRAD_CASES = [
    (lambda T, x: F(T).max_pool1d(x, 3, 2, 1), (2, 2, 7), (2, 2, 4)),
    (lambda T, x: F(T).max_pool2d(x, 3, 2, 1, ceil_mode=True), (1, 2, 5, 6), (1, 2, 3, 4)),
    (lambda T, x: F(T).max_pool3d(x, 2, 1), (1, 1, 3, 3, 4), (1, 1, 2, 2, 3)),
    (lambda T, x: F(T).adaptive_max_pool2d(x, (2, 3)), (2, 5, 4), (2, 2, 3)),
    (lambda T, x: F(T).avg_pool1d(x, 3, 2, 1, count_include_pad=False), (2, 2, 7), (2, 2, 4)),
    (lambda T, x: F(T).avg_pool2d(x, 3, 2, 1, divisor_override=2), (1, 2, 5, 6), (1, 2, 3, 3)),
    (lambda T, x: F(T).avg_pool3d(x, 2, 1, ceil_mode=True), (1, 1, 3, 3, 4), (1, 1, 2, 2, 3)),
    (lambda T, x: F(T).adaptive_avg_pool3d(x, (2, 1, 3)), (1, 1, 3, 3, 4), (1, 1, 2, 1, 3)),
]


@pytest.mark.parametrize("pool,x_shape,g_shape", GRAD_CASES)
def test_pool_backward_functions(pool, x_shape, g_shape):
    check_op(_vjp(pool), _arr(g_shape, 10), _arr(x_shape, 11), grad=[True, False])


def test_backward_functions_in_graph():
    """Under create_graph the backward of each pool is its adjoint Function, recorded."""
    x = tinyattn.tensor(_arr((1, 1, 4, 4)), requires_grad=True)
    g = tinyattn.tensor(_arr((1, 1, 2, 2)), requires_grad=True)
    pools = ((F(tinyattn).max_pool2d, "MaxPoolGrad"), (F(tinyattn).avg_pool2d, "AvgPoolGrad"))
    for pool, name in pools:
        (dx,) = tinyattn.autograd.grad(pool(x, 2), x, g, create_graph=True)
        assert dx.grad_fn.fn.__name__ == name
        (dg,) = tinyattn.autograd.grad(dx, g, tinyattn.ones_like(x), create_graph=True)
        assert dg.grad_fn is None  # (ones: a constant) and dg = pool's adjoint of ones
        expected = 1.0 if name == "MaxPoolGrad" else 1.0  # each 2x2 window: one max, mean 1
        np.testing.assert_allclose(dg.numpy(), np.full((1, 1, 2, 2), expected))


# -- modules ---------------------------------------------------------------------------------

MODULES = [
    ("MaxPool3d", (2,), {}, (2, 2, 4, 5, 4)),
    ("MaxPool3d", (3, 2, 1), dict(dilation=(1, 2, 1), ceil_mode=True, return_indices=True), (2, 5, 6, 5)),
    ("AvgPool3d", (2,), {}, (2, 2, 4, 5, 4)),
    ("AvgPool3d", ((2, 2, 3), 2, 1, True, False, 2), {}, (1, 2, 4, 5, 6)),
    ("AdaptiveAvgPool3d", ((None, 3, 2),), {}, (2, 2, 3, 5, 4)),
    ("AdaptiveMaxPool3d", (2, True), {}, (2, 3, 5, 4)),
]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("name,args,kw,shape", MODULES)
def test_pooling3d_modules_parity_and_repr(name, args, kw, shape):
    ours, theirs = getattr(tinyattn.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    x = _arr(shape, 12)
    for dtype in (np.float64, np.float32):
        module_parity(theirs, ours, x, dtype=dtype)


def test_pool3d_names_exported():
    names = ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d"]
    names += ["adaptive_max_pool3d", "adaptive_max_pool3d_with_indices"]
    for name in names:
        assert name in tinyattn.nn.functional.__all__
        assert callable(getattr(tinyattn.nn.functional, name))
    for name in ("MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d"):
        assert isinstance(getattr(tinyattn.nn, name), type)


# -- bad input -------------------------------------------------------------------------------


def _t(L, *shape):
    return L.ones(*shape)


BAD = [
    ("max3d-rank", lambda L: F(L).max_pool3d(_t(L, 4, 4, 4), 2), r"4D.*5D.*\[4, 4, 4\]"),
    ("max3d-kernel-len", lambda L: F(L).max_pool3d(_t(L, 1, 1, 4, 4, 4), (2, 2)), r"kernel_size.*3 ints.*\(2, 2\)"),
    ("max3d-pad-too-big", lambda L: F(L).max_pool3d(_t(L, 1, 1, 5, 5, 5), 2, padding=2), r"padding.*half.*kernel_size"),
    ("max3d-kernel-too-big", lambda L: F(L).max_pool3d(_t(L, 1, 1, 2, 4, 4), 3), r"kernel_size.*\(3, 3, 3\).*too small"),
    ("avg3d-rank", lambda L: F(L).avg_pool3d(_t(L, 1, 1, 1, 4, 4, 4), 2), r"4D.*5D.*\[1, 1, 1, 4, 4, 4\]"),
    ("avg3d-stride-zero", lambda L: F(L).avg_pool3d(_t(L, 1, 1, 4, 4, 4), 2, 0), r"stride.*>= 1"),
    ("avg3d-divisor-zero", lambda L: F(L).avg_pool3d(_t(L, 1, 1, 4, 4, 4), 2, divisor_override=0), r"divisor_override"),
    ("adaptive3d-size-len", lambda L: F(L).adaptive_avg_pool3d(_t(L, 1, 4, 4, 4), (1, 2)), r"output_size.*3 ints"),
    ("adaptive3d-rank", lambda L: F(L).adaptive_max_pool3d(_t(L, 4, 4, 4), 2), r"4D.*5D.*\[4, 4, 4\]"),
]  # fmt: skip


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
