"""Elementwise ops: float64 gradchecks over every element and torch parity (tests/harness.py).

Shapes come from Hypothesis: broadcastable pairs with size-1 and zero-size dims;
non-contiguous operands are made inside the op under test (transposes, strided slices).
"""

import numpy as np
import pytest
from harness import check_op, rand, run_parity, torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn

pair_shapes = hnp.mutually_broadcastable_shapes(
    num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3
)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)


def _arr(shape, low=-1.0, high=1.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape)


# -- binary arithmetic with broadcasting --------------------------------------------------

BINARY = {
    "add": (lambda T, a, b: a + b, (-1, 1)),
    "add_alpha": (lambda T, a, b: T.add(a, b, alpha=-2.5), (-1, 1)),
    "sub": (lambda T, a, b: a - b, (-1, 1)),
    "sub_alpha": (lambda T, a, b: T.sub(a, b, alpha=3), (-1, 1)),
    "mul": (lambda T, a, b: a * b, (-1, 1)),
    "div": (lambda T, a, b: a / b, (0.5, 2)),
    "pow": (lambda T, a, b: a**b, (0.5, 2)),
    "maximum": (lambda T, a, b: T.maximum(a, b), (-1, 1)),
    "minimum": (lambda T, a, b: T.minimum(a, b), (-1, 1)),
    "max_binary": (lambda T, a, b: T.max(a, b), (-1, 1)),
    "where": (lambda T, a, b: T.where(a > 0, a, b), (-1, 1)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@given(shapes=pair_shapes)
def test_binary_broadcasting(name, shapes):
    f, (low, high) = BINARY[name]
    (sa, sb), _ = shapes
    check_op(f, _arr(sa, low, high, 1), _arr(sb, low, high, 2))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_non_contiguous(name):
    f, (low, high) = BINARY[name]
    a, b = _arr((4, 6), low, high, 3), _arr((6, 4), low, high, 4)
    # a transposed operand against a strided slice (neither is C-contiguous)
    check_op(lambda T, a, b: f(T, a.t(), b), a, b)
    check_op(lambda T, a, b: f(T, a[::2, 1::2], b.t()[1::2, ::2]), a, b)


def test_maximum_ties_split_gradient_like_torch():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 5.0, 3.0])
    run_parity(lambda T, a, b: T.maximum(a, b), a, b)
    run_parity(lambda T, a, b: T.minimum(a, b), a, b)
    x = tinyattn.tensor(a, requires_grad=True)
    tinyattn.maximum(x, tinyattn.tensor(b)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.0, 0.5])


@given(shapes=pair_shapes)
def test_scalar_operands_and_reflected_operators(shapes):
    (sa, _), _ = shapes
    x = _arr(sa, 0.5, 2.0, 5)
    check_op(lambda T, x: 2 - x, x)
    check_op(lambda T, x: 2 / x, x)
    check_op(lambda T, x: 2**x, x)
    check_op(lambda T, x: x**2 + x**0.5 - x**-1.5, x)
    check_op(lambda T, x: 3 * x + 1.5 - x / 4, x)
    check_op(lambda T, x: -x, x)


def test_pow_tensor_exponent_with_zero_base():
    # d/db a**b = a**b log a: torch defines it as 0 where a == 0 (and b >= 0)
    a = np.array([0.0, 0.5, 2.0])
    b = np.array([2.0, 3.0, 0.5])
    run_parity(lambda T, a, b: a**b, a, b)


# -- unary math --------------------------------------------------------------------------

UNARY = {
    "neg": (lambda T, x: T.neg(x), (-2, 2)),
    "abs": (lambda T, x: x.abs(), (-2, 2)),
    "exp": (lambda T, x: x.exp(), (-2, 2)),
    "log": (lambda T, x: x.log(), (0.2, 3)),
    "log2": (lambda T, x: T.log2(x), (0.2, 3)),
    "log1p": (lambda T, x: T.log1p(x), (-0.5, 2)),
    "expm1": (lambda T, x: T.expm1(x), (-2, 2)),
    "sqrt": (lambda T, x: x.sqrt(), (0.2, 3)),
    "rsqrt": (lambda T, x: x.rsqrt(), (0.2, 3)),
    "sin": (lambda T, x: x.sin(), (-3, 3)),
    "cos": (lambda T, x: x.cos(), (-3, 3)),
    "erf": (lambda T, x: T.erf(x), (-3, 3)),
    "erf_method": (lambda T, x: x.erf(), (-3, 3)),
    "tanh": (lambda T, x: x.tanh(), (-3, 3)),
    "sigmoid": (lambda T, x: x.sigmoid(), (-4, 4)),
    "relu": (lambda T, x: x.relu(), (-2, 2)),
    "reciprocal": (lambda T, x: x.reciprocal(), (0.5, 2)),
    "square": (lambda T, x: x.square(), (-2, 2)),
    "clamp": (lambda T, x: x.clamp(-0.5, 0.7), (-2, 2)),
    "clamp_min": (lambda T, x: T.clamp(x, min=0.1), (-2, 2)),
    "clamp_max": (lambda T, x: T.clip(x, max=-0.2), (-2, 2)),
    "sign_floor_ceil_round": (
        lambda T, x: x.sign() + x.floor() + T.ceil(x) + T.round(x) + x,
        (-2, 2),
    ),
    "clone": (lambda T, x: x.clone() * 2, (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(shape=shapes)
def test_unary(name, shape):
    f, (low, high) = UNARY[name]
    check_op(f, _arr(shape, low, high, 6))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_non_contiguous(name):
    f, (low, high) = UNARY[name]
    x = _arr((4, 6), low, high, 7)
    check_op(lambda T, x: f(T, x.t()), x)
    check_op(lambda T, x: f(T, x[1::2, ::3]), x)


def test_clamp_with_tensor_bounds():
    x = np.array([1.0, 2.0, 3.0, 4.0, -1.0])
    lo = np.array([2.0, 0.0, 0.0, 5.0, -3.0])
    hi = np.array([2.5, 1.0, 5.0, 4.5, -2.0])  # last two: lo > hi (result is hi)
    check_op(lambda T, x, lo, hi: T.clamp(x, lo, hi), x, lo, hi)
    check_op(lambda T, x, lo: T.clamp(x, min=lo), x, lo)
    check_op(lambda T, x, hi: x.clamp(max=hi), x, hi)


def test_where_with_scalar_and_broadcast_condition():
    x, y = rand(3, 4, seed=8), rand(4, seed=9)
    check_op(lambda T, x, y: T.where(y > 0, x, 0.5), x, y)
    check_op(lambda T, x, y: T.where(x > 0, 1.0, y), x, y)


def test_cast_and_clone_gradients():
    x = rand(3, 2, seed=10)
    # float64 -> float32 -> float64: float32 rounding needs a large eps (the map is linear)
    check_op(
        lambda T, x: x.float().double() * 3 if x.dtype == T.float64 else x.double().float() * 3,
        x,
        gradcheck_kw={"eps": 1e-2, "atol": 1e-4},
    )
    check_op(
        lambda T, x: x.to(T.float32) if x.dtype == T.float64 else x.to(T.float64),
        x,
        gradcheck_kw={"eps": 1e-2, "atol": 1e-4},
    )
    x_t = tinyattn.tensor([1.5, 2.5], requires_grad=True)
    assert x_t.long().requires_grad is False  # integer results leave the graph, as in torch
    assert x_t.float() is x_t  # no-op conversions return the tensor itself


# -- in-place variants ---------------------------------------------------------------------

INPLACE = {
    "add_": lambda T, x, y: (x * 1).add_(y, alpha=2),
    "sub_": lambda T, x, y: (x * 1).sub_(y),
    "mul_": lambda T, x, y: (x * 1).mul_(y),
    "div_": lambda T, x, y: (x * 1).div_(y.abs() + 1),
    "pow_": lambda T, x, y: (x.abs() + 0.5).pow_(y),
    "clamp_": lambda T, x, y: (x * y).clamp_(-0.3, 0.4),
    "iadd": lambda T, x, y: _iop(x, y, "+"),
    "isub": lambda T, x, y: _iop(x, y, "-"),
    "imul": lambda T, x, y: _iop(x, y, "*"),
    "idiv": lambda T, x, y: _iop(x, y.abs() + 1, "/"),
}


def _iop(x, y, op):
    z = x * 1
    if op == "+":
        z += y
    elif op == "-":
        z -= y
    elif op == "*":
        z *= y
    else:
        z /= y
    return z * x


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_ops_backpropagate_like_torch(name):
    x, y = rand(3, 4, seed=11), rand(4, seed=12)
    check_op(INPLACE[name], x, y)


def test_fill_zero_copy_inplace():
    x, v, src = rand(2, 3, seed=13), np.array(0.7), rand(3, seed=14)
    check_op(lambda T, x, v: (x * 2).fill_(v) * x, x, v)
    check_op(lambda T, x: (x * 2).fill_(1.5) * x, x)
    check_op(lambda T, x: (x * 2).zero_() + x, x)
    check_op(lambda T, x, s: (x * 2).copy_(s) * x, x, src)


def test_inplace_on_leaf_requiring_grad_raises_outside_no_grad():
    x = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    for op in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.fill_(1)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            op()
    with tinyattn.no_grad():
        x.add_(1)
        x.clamp_(max=2.5)
    np.testing.assert_allclose(x.detach().numpy(), [2.0, 2.5])
    assert x.is_leaf and x.requires_grad


def test_inplace_on_plain_tensor_keeps_dtype_and_rejects_float_into_int():
    x = tinyattn.tensor([1, 2])
    x += 3
    assert x.dtype == tinyattn.int64 and x.tolist() == [4, 5]
    with pytest.raises(RuntimeError, match="can't be cast"):
        x += 1.5
    y = tinyattn.tensor([1.0, 2.0])
    y *= 2
    assert y.tolist() == [2.0, 4.0] and y.dtype == tinyattn.float32


# -- dtypes of results ---------------------------------------------------------------------


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize(
    "expr",
    [
        "T.tensor([-1, 2]).abs()",
        "T.tensor([-1, 2]).neg()",
        "T.tensor([-1, 2]).square()",
        "T.tensor([-1, 2]).relu()",
        "T.tensor([-1, 2]).sign()",
        "T.tensor([-1, 2]).floor()",
        "T.tensor([1, 2]).exp()",
        "T.tensor([1, 2]).sqrt()",
        "T.tensor([1, 2]).reciprocal()",
        "T.tensor([1, 2]).sigmoid()",
        "T.tensor([7, -7]) // 2",
        "T.tensor([7, -7]) // T.tensor([-2, 2])",
        "T.div(T.tensor([7, -7]), 2, rounding_mode='trunc')",
        "T.div(T.tensor([7., -7.]), 2, rounding_mode='floor')",
        "T.tensor([1.0]) // 0.1",
        "T.tensor([-7, 7]) % 3",
        "T.tensor([1, 2]).clamp(min=1.5)",
        "T.tensor([1, 2]).clamp(max=1)",
        "T.where(T.tensor([True, False]), T.tensor([1, 2]), 0.5)",
        "T.maximum(T.tensor([1, 2]), T.tensor([1.5, 0.0]))",
        "2 ** T.tensor([1, 2])",
        "T.tensor([1, 2]) ** 2",
        "T.tensor([2, 4]) ** 0.5",
        "T.tensor([1., 2.]).add(T.tensor([1., 2.]), alpha=2)",
    ],
)
def test_values_and_dtypes_match_torch(expr):
    ours = eval(expr, {"T": tinyattn})
    theirs = eval(expr, {"T": torch})
    assert str(theirs.dtype) == "torch." + ours.dtype.name
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


# -- bad input ----------------------------------------------------------------------------


def test_broadcast_mismatch_names_op_and_both_shapes():
    a, b = tinyattn.zeros(2, 3), tinyattn.zeros(4)
    for op, fn in [("add", tinyattn.add), ("mul", tinyattn.mul), ("maximum", tinyattn.maximum)]:
        with pytest.raises(ValueError, match=rf"{op}.*\(2, 3\).*\(4,\)"):
            fn(a, b)
    with pytest.raises(ValueError, match=r"where"):
        tinyattn.where(tinyattn.zeros(2, 3) > 0, a, b)


def test_errors_are_clear():
    with pytest.raises(RuntimeError, match="integers to negative integer powers"):
        tinyattn.tensor([1, 2]) ** -1
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        tinyattn.tensor([1, 2]).add(tinyattn.tensor([1, 2]), alpha=2.5)
    with pytest.raises(TypeError, match="bool"):
        tinyattn.tensor([True]) - tinyattn.tensor([1])
    with pytest.raises(ValueError, match="at least one of 'min' or 'max'"):
        tinyattn.zeros(2).clamp()
    with pytest.raises(TypeError, match="argument 'min'"):
        tinyattn.zeros(2).clamp(min="a")
    with pytest.raises(TypeError, match="exp.*Tensor"):
        tinyattn.exp([1.0])
    with pytest.raises(TypeError, match="unsupported operand"):
        tinyattn.add(tinyattn.zeros(2), "x")
    with pytest.raises(ValueError, match="rounding_mode"):
        tinyattn.div(tinyattn.zeros(2), 1, rounding_mode="up")
    with pytest.raises(ZeroDivisionError):
        tinyattn.tensor([1, 2]) // 0


@given(st.floats(-1e3, 1e3), st.sampled_from(["float32", "float64"]))
def test_python_scalar_keeps_tensor_dtype(value, name):
    x = tinyattn.ones(2, dtype=getattr(tinyattn, name))
    for y in (x + value, value - x, x * value, x / (abs(value) + 1), x**2.0):
        assert y.dtype.name == name


# -- found by tests/core/test_differential.py ----------------------------------------------


@pytest.mark.parametrize("op", ["relu", "maximum", "minimum"])
def test_a_nan_gradient_does_not_leak_to_the_unselected_side(op):
    """torch uses where, not g * mask: var() of one element has a nan gradient, and the
    relu'd-away / losing input still gets exactly 0 (tinyattn gave nan * 0 = nan)."""
    grads = {}
    for lib in (tinyattn,) if torch is None else (tinyattn, torch):
        x = lib.tensor([-1.3], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([0.4], dtype=lib.float64, requires_grad=True)
        y = {"relu": x.relu(), "maximum": lib.maximum(w, x), "minimum": lib.minimum(w, -x)}[op]
        y.var().backward()
        grads[lib.__name__] = x.grad.numpy()
    assert grads["tinyattn"][0] == 0.0
    if torch is not None:
        np.testing.assert_array_equal(grads["tinyattn"], grads["torch"])


def test_pow_by_a_number_does_not_save_its_output():
    """x ** 2 then writing into the result is fine in torch (PowBackward0 saves only x)."""

    def f(T, x):
        y = x**2
        y[0].mul_(2.0)
        return y

    check_op(f, rand(2, 2, seed=8))


@pytest.mark.skipif(torch is None, reason="torch not installed (parity test)")
@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32"])
def test_square_dtype_as_torch(dtype):
    values = [True, False] if dtype == "bool" else [2, -3]
    ours = tinyattn.square(tinyattn.tensor(values, dtype=getattr(tinyattn, dtype)))
    want = torch.square(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert str(ours.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), want.numpy())


def test_sign_of_bool_is_the_bool_as_torch():
    x = tinyattn.tensor([True, False])
    for out in (tinyattn.sign(x), x.sign(), x.clone().sign_()):
        assert out.dtype == tinyattn.bool and out.tolist() == [True, False]
