"""Elementwise ops (trig.py, unary_inplace.py, binary.py, logic.py): gradchecks
and torch parity at random points, torch parity at special values (0, +-1, +-inf, NaN) with
NumPy warnings turned into errors, dtype rules, in-place forms and bad input."""

import itertools
import warnings

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, torch

import tinyattn

# name -> (low, high) of a domain where the op is smooth
UNARY = {
    "tan": (-1.2, 1.2),
    "asin": (-0.9, 0.9),
    "acos": (-0.9, 0.9),
    "atan": (-3, 3),
    "sinh": (-3, 3),
    "cosh": (-3, 3),
    "asinh": (-3, 3),
    "acosh": (1.2, 4),
    "atanh": (-0.9, 0.9),
    "deg2rad": (-3, 3),
    "rad2deg": (-3, 3),
    "sinc": (-2.5, 2.5),
    "log10": (0.2, 4),
    "exp2": (-3, 3),
    "frac": (0.1, 0.9),
    "logit": (0.1, 0.9),
    "nan_to_num": (-3, 3),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradcheck_and_parity(name):
    low, high = UNARY[name]
    check_op(lambda T, x: getattr(T, name)(x), rand(3, 4, low=low, high=high))
    if name not in (
        "acosh",
        "asinh",
        "atanh",
    ):  # torch: "the derivative for 'inplace version of acosh' is not implemented"
        check_op(lambda T, x: getattr(x * 1, name + "_")(), rand(2, 3, low=low, high=high))


def test_logit_eps_and_nan_to_num_options():
    x = np.array([0.02, 0.3, 0.5, 0.97])
    check_op(lambda T, x: T.logit(x, eps=0.05), x)
    check_op(lambda T, x: T.nan_to_num(x * 2, nan=1.0, posinf=3.0), x)


def test_logit_eps_above_half_clamps_in_torch_order():
    # torch: z = eps where x < eps, else 1 - eps where x > 1 - eps (np.clip gave 1 - eps
    # everywhere, so logit(x, 0.6) was -0.405 for every x)
    x = tinyattn.tensor([0.0, 0.5, 0.59, 0.6, 0.9, float("nan")])
    out = tinyattn.logit(x, eps=0.6).numpy()
    up, down = np.log(0.6 / 0.4), np.log(0.4 / 0.6)
    np.testing.assert_allclose(out, [up, up, up, down, down, np.nan], rtol=1e-6)


def test_xlogy_with_a_python_number_keeps_the_tensor_float_dtype():
    # np.log(2) is a float64 NumPy scalar; multiplying widened float32 to float64
    for other in (2, 2.5):
        assert tinyattn.xlogy(tinyattn.tensor([0.0, 1.5]), other).dtype == tinyattn.float32
        assert tinyattn.xlogy(tinyattn.tensor([0, 3]), other).dtype == tinyattn.float32
    assert tinyattn.xlogy(2, tinyattn.tensor([1.0, 3.0])).dtype == tinyattn.float32


BINARY = {
    "atan2": (-2, 2, -2, 2),
    "hypot": (-2, 2, -2, 2),
    "logaddexp": (-3, 3, -3, 3),
    "logaddexp2": (-3, 3, -3, 3),
    "xlogy": (-2, 2, 0.2, 3),
    "fmod": (-5, 5, 0.7, 1.9),
    "remainder": (-5, 5, 0.7, 1.9),
    "copysign": (-2, 2, -2, 2),
    "fmax": (-2, 2, -2, 2),
    "fmin": (-2, 2, -2, 2),
    "float_power": (0.3, 2, -2, 2),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradcheck_and_parity(name):
    la, ha, lb, hb = BINARY[name]
    a, b = rand(3, 4, low=la, high=ha, seed=1), rand(4, low=lb, high=hb, seed=2)
    check_op(lambda T, x, y: getattr(T, name)(x, y), a, b)
    check_op(lambda T, x, y: getattr(x, name)(y), a, rand(3, 4, low=lb, high=hb, seed=3))
    if name not in ("fmax", "fmin", "logaddexp", "logaddexp2", "float_power"):  # no x.op_()
        check_op(lambda T, x, y: getattr(x * 1, name + "_")(y), a, b)


def test_addcmul_addcdiv():
    a, b, c = rand(2, 3, seed=4), rand(3, seed=5), rand(2, 3, low=0.5, high=2, seed=6)
    check_op(lambda T, x, y, z: T.addcmul(x, y, z, value=0.5), a, b, c)
    check_op(lambda T, x, y, z: T.addcdiv(x, y, z, value=-2), a, b, c)
    check_op(lambda T, x, y, z: (x * 1).addcmul_(y, z, value=3), a, b, c)
    check_op(lambda T, x, y, z: (x * 1).addcdiv_(y, z), a, b, c)


@pytest.mark.parametrize("name", ["trunc_", "floor_", "ceil_", "round_", "sign_"])
def test_piecewise_constant_in_place(name):
    check_op(lambda T, x: getattr(x * 1, name)() + x, rand(3, 4, low=-3, high=3))


@pytest.mark.parametrize(
    "name",
    ["eq_", "ne_", "lt_", "le_", "gt_", "ge_"],
)
def test_comparisons_in_place(name):
    a, b = rand(3, 4, seed=7), rand(4, seed=8)
    check_op(lambda T, x, y: getattr(x * 1, name)(y) + x, a, b)


def test_logical_not_in_place_and_aliases():
    # (values only: torch passes the gradient through logical_*_, ours is 0 as for eq_)
    x = tinyattn.tensor([0.0, 1.5, 2.0])
    assert x.clone().logical_and_(tinyattn.tensor([1.0, 0.0, 3.0])).tolist() == [0.0, 0.0, 1.0]
    assert x.clone().logical_or_(tinyattn.tensor([1.0, 0.0, 0.0])).tolist() == [1.0, 1.0, 1.0]
    assert x.clone().logical_xor_(tinyattn.tensor([1.0, 0.0, 3.0])).tolist() == [1.0, 1.0, 0.0]
    assert tinyattn.tensor([0.0, 1.5, np.nan]).logical_not_().tolist() == [1.0, 0.0, 0.0]
    x = tinyattn.tensor([1.0, 2.0, 3.0])
    assert x.not_equal(2.0).tolist() == [True, False, True]
    assert x.greater_equal(2.0).tolist() == [False, True, True]
    assert x.clone().less_equal_(2.0).tolist() == [1.0, 1.0, 0.0]


# -- special values: torch parity, no NumPy warnings ------------------------------------------
SPECIAL = np.array([0.0, -1.0, 1.0, np.inf, -np.inf, np.nan, 0.5, 2.0])
ALL_UNARY = [
    *UNARY,
    *(
        "neg abs exp expm1 log log2 log1p sqrt rsqrt sin cos tanh sigmoid relu reciprocal square "
        "erf trunc sign sgn floor ceil round arcsin arccos arctan arcsinh arccosh arctanh "
        "positive negative absolute"
    ).split(),
]
ALL_BINARY = [*BINARY, "add", "sub", "mul", "div", "pow", "maximum", "minimum", "arctan2"]


def _compare(ours, theirs, what):
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=what)


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("name", ALL_UNARY)
def test_unary_special_values_match_torch_without_warnings(name):
    outs = []
    for lib in (tinyattn, torch):
        x = lib.tensor(SPECIAL.copy(), dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = getattr(lib, name)(x)
            if y.requires_grad:
                y.backward(lib.ones_like(y))
        grad = None
        if x.grad is not None:  # torch's may be a ZeroTensor
            grad = x.grad.numpy(force=True) if lib is torch else x.grad.numpy()
        outs.append((y.detach().numpy(), grad))
    _compare(outs[0][0], outs[1][0], f"{name} forward")
    if outs[1][1] is not None:
        _compare(outs[0][1], outs[1][1], f"{name} gradient")


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("name", ALL_BINARY)
def test_binary_special_values_match_torch_without_warnings(name):
    pairs = np.array(list(itertools.product(SPECIAL[:6], SPECIAL[:6]))).T
    outs = []
    for lib in (tinyattn, torch):
        a, b = (lib.tensor(p.copy(), dtype=lib.float64, requires_grad=True) for p in pairs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = getattr(lib, name)(a, b)
            y.backward(lib.ones_like(y))
        outs.append([y.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
    for o, t, what in zip(outs[0], outs[1], ("forward", "d input", "d other")):
        _compare(o, t, f"{name} {what}")


# -- dtypes and non-differentiable ops ------------------------------------------------------
@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize(
    "name",
    "tan asinh log10 exp2 deg2rad rad2deg logit sinc trunc sgn signbit nan_to_num".split(),
)
def test_integer_inputs_follow_torch_dtypes(name):
    data = np.array([1, 2, -3])
    ours, theirs = (
        getattr(tinyattn, name)(tinyattn.tensor(data)),
        getattr(torch, name)(torch.tensor(data)),
    )
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, equal_nan=True)


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_integer_binary_dtypes_and_bitwise_ops_match_torch():
    i, j = np.array([5, -5, 7, 1]), np.array([3, 3, -2, 70])
    cases = [
        ("atan2", i, j),
        ("xlogy", i, j),
        ("fmod", i, j[:3].tolist() + [4]),
        ("remainder", i, np.array([3, 3, -2, 4])),
        ("copysign", i, j),
        ("fmax", i, j),
        ("float_power", i, np.array([1, 2, 0, 3])),
        ("heaviside", i - 5, j),
        ("bitwise_left_shift", i, j),
        ("bitwise_right_shift", i, j),
        ("bitwise_left_shift", i, -j),
        ("bitwise_right_shift", i, np.array([1, 64, 63, -1])),
        ("bitwise_or", i, j),
        ("bitwise_xor", i, j),
    ]
    for name, a, b in cases:
        ours = getattr(tinyattn, name)(
            tinyattn.tensor(np.asarray(a)), tinyattn.tensor(np.asarray(b))
        )
        theirs = getattr(torch, name)(torch.tensor(np.asarray(a)), torch.tensor(np.asarray(b)))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, err_msg=name)
    x = tinyattn.tensor([5, 6])
    x <<= 2
    x |= 1
    x ^= 3
    assert x.tolist() == [(((5 << 2) | 1) ^ 3), (((6 << 2) | 1) ^ 3)]
    assert (x >> 1).tolist() == [v >> 1 for v in x.tolist()]
    assert (1 << tinyattn.tensor([2, 3])).tolist() == [4, 8]
    assert (7 % tinyattn.tensor([4, -4])).tolist() == [3, -1]
    assert (~tinyattn.tensor([5])).tolist() == [-6]


def test_shift_by_a_python_int_keeps_the_tensor_dtype():
    # torch: a Python number is weak, int8 << 3 is int8 (ours widened to int64);
    # an unsigned value shifted right past its width is 0 (ours gave its top bit)
    for name in ("int8", "uint8", "int32"):
        x = tinyattn.tensor([1, 5, 100]).to(getattr(tinyattn, name))
        for out in (x << 3, x >> 1, x << 70, x >> 70, x.bitwise_left_shift(2), 2 << x):
            assert out.dtype == x.dtype, (name, out.dtype)
    assert (tinyattn.tensor([1, 5, 100], dtype=tinyattn.int8) << 3).tolist() == [8, 40, 32]
    u = tinyattn.tensor([253, 128, 7], dtype=tinyattn.uint8)
    assert (u >> 70).tolist() == [0, 0, 0] and (u >> -1).tolist() == [0, 0, 0]
    assert (tinyattn.tensor([-3, 5], dtype=tinyattn.int8) >> 9).tolist() == [-1, 0]


def test_positive_returns_input_and_heaviside_is_constant():
    x = tinyattn.tensor([1.0, -2.0], requires_grad=True)
    assert tinyattn.positive(x) is x
    h = tinyattn.heaviside(tinyattn.tensor([-1.0, 0.0, 2.0, np.nan]), tinyattn.tensor([0.5]))
    assert h.tolist()[:3] == [0.0, 0.5, 1.0] and h.tolist()[3] == 0.0
    assert not h.requires_grad


BAD = [
    ("shift_float", lambda T: T.bitwise_left_shift(T.tensor([1.0]), T.tensor([1])), "integer"),
    ("or_float", lambda T: T.bitwise_or(T.tensor([1.0]), T.tensor([1])), "bool and integer"),
    ("not_float", lambda T: T.bitwise_not(T.tensor([1.0])), "bool and integer"),
    ("shift_bool", lambda T: T.tensor([True]) << T.tensor([True]), "integer"),
    ("frac_int", lambda T: T.frac(T.tensor([1, 2])), "floating point"),
    ("trunc_bool", lambda T: T.trunc(T.tensor([True])), "bool"),
    ("hypot_int", lambda T: T.hypot(T.tensor([1]), T.tensor([2])), "int64 and .*int64"),
    ("atan2_number", lambda T: T.atan2(T.tensor([1.0]), 2.0), "'other' must be a Tensor"),
    ("atan2_shapes", lambda T: T.atan2(T.ones(2, 3), T.ones(4)), r"\(2, 3\) and \(4,\)"),
    ("fmod_shapes", lambda T: T.fmod(T.ones(2), T.ones(3)), r"\(2,\) and \(3,\)"),
    ("fmod_int_zero", lambda T: T.fmod(T.tensor([5]), T.tensor([0])), "ZeroDivisionError"),
    ("remainder_int_zero", lambda T: T.remainder(T.tensor([5]), 0), "ZeroDivisionError"),
    ("heaviside_dtypes", lambda T: T.heaviside(T.tensor([1]), T.tensor([1.0])), "same dtype"),
    ("positive_bool", lambda T: T.positive(T.tensor([True])), "bool"),
    ("addcdiv_int", lambda T: T.addcdiv(T.tensor([1]), T.tensor([1]), T.tensor([2])), "integer"),
    ("sin_inplace_int", lambda T: T.tensor([1, 2]).sin_(), "can't be cast"),
    ("sub_inplace_leaf", lambda T: T.ones(2, requires_grad=True).subtract_(1.0), "leaf"),
]


@pytest.mark.parametrize("call,expected", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
