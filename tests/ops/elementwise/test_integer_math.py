"""ops/elementwise/integer_math.py and ops/linalg/helpers.py: gcd, lcm, ldexp, frexp, nextafter,
isposinf/isneginf/isreal, angle, the conj/neg no-ops, rsub, heaviside_; addmv, addr, renorm.

Values against torch where installed, plain assertions that run without it, gradchecks
and torch parity of gradients for the differentiable ones, bad input."""

import math

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def _same(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# -- integer ops ----------------------------------------------------------------------------
def test_gcd_lcm_values_without_torch():
    a, b = tinyattn.tensor([12, -18, 0, 7]), tinyattn.tensor([8, 12, 0, -21])
    assert tinyattn.gcd(a, b).tolist() == [4, 6, 0, 7]
    assert tinyattn.lcm(a, b).tolist() == [24, 36, 0, 21]
    assert a.gcd(tinyattn.tensor(6)).tolist() == [6, 6, 6, 1]  # broadcast
    x = tinyattn.tensor([4, 6])
    assert x.lcm_(tinyattn.tensor([6, 4])) is x and x.tolist() == [12, 12]


@needs_torch
@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm_match_torch(name):
    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, (4, 5))
    b = rng.integers(-50, 50, (5,)).astype(np.int32)
    ours = getattr(tinyattn, name)(tinyattn.tensor(a), tinyattn.tensor(b))
    _same(ours, getattr(torch, name)(torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda L: L.gcd(L.tensor([1.0]), L.tensor([2.0])), r"gcd.*integer.*float"),
        (lambda L: L.lcm(L.tensor([True]), L.tensor([True])), r"lcm.*integer.*bool"),
        (lambda L: L.gcd(L.tensor([4]), 2), r"gcd.*'other'.*Tensor.*int"),
        (lambda L: L.gcd(L.tensor([4, 2]), L.tensor([1, 2, 3])), r"gcd"),
        (lambda L: L.nextafter(L.tensor([1]), L.tensor([2])), r"nextafter.*floating.*int64"),
        (lambda L: L.frexp(L.tensor([8])), r"frexp.*floating.*int64"),
        (lambda L: L.ldexp(L.tensor([1.0]), 2), r"ldexp.*'other'.*Tensor.*int"),
    ],
)
def test_integer_math_bad_input(call, expected):
    check_bad_call(call, expected)


def test_inplace_keeps_self_shape():
    with pytest.raises(RuntimeError, match=r"gcd_.*shape \[2\]"):
        tinyattn.tensor([4, 6]).gcd_(tinyattn.tensor([[1, 2], [3, 4]]))


# -- float bit ops --------------------------------------------------------------------------
SPECIAL = [8.0, 0.0, -0.0, -3.5, 1e-310, float("inf"), -float("inf"), float("nan"), 0.75]


def test_frexp_values_without_torch():
    res = tinyattn.frexp(tinyattn.tensor(SPECIAL, dtype=tinyattn.float64))
    m, e = res
    assert res.mantissa is m and res.exponent is e and type(res).__name__ == "frexp"
    assert e.dtype == tinyattn.int32 and m.dtype == tinyattn.float64
    assert m[0].item() == 0.5 and e[0].item() == 4
    assert m[3].item() == -0.875 and e[3].item() == 2
    finite = np.isfinite(np.array(SPECIAL))
    np.testing.assert_array_equal(np.ldexp(m.numpy(), e.numpy())[finite], np.array(SPECIAL)[finite])


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_bit_ops_match_torch(dtype):
    vals = np.array(SPECIAL, dtype=dtype)
    ours, theirs = tinyattn.tensor(vals), torch.tensor(vals)
    for a, b in zip(tinyattn.frexp(ours), torch.frexp(theirs)):
        _same(a, b)
    other = np.array([9.0, -1.0, 1.0, -4.0, 0.0, 0.0, 1.0, 2.0, float("nan")], dtype=dtype)
    _same(
        tinyattn.nextafter(ours, tinyattn.tensor(other)),
        torch.nextafter(theirs, torch.tensor(other)),
    )
    for name in ("isposinf", "isneginf", "isreal", "angle"):
        _same(getattr(tinyattn, name)(ours), getattr(torch, name)(theirs))
    exps = np.array([2, -3, 0, 1, 5, 0, 1, 2, -1], dtype=np.int64)
    _same(tinyattn.ldexp(ours, tinyattn.tensor(exps)), torch.ldexp(theirs, torch.tensor(exps)))


@needs_torch
def test_dtype_rules_match_torch():
    for a, b in [([1, 2], [2, 3]), ([True, False], [1, 2])]:
        _same(
            tinyattn.ldexp(tinyattn.tensor(a), tinyattn.tensor(b)),
            torch.ldexp(torch.tensor(a), torch.tensor(b)),
        )
    for vals in ([-1, 0, 3], [True, False]):
        _same(tinyattn.angle(tinyattn.tensor(vals)), torch.angle(torch.tensor(vals)))
        _same(tinyattn.isposinf(tinyattn.tensor(vals)), torch.isposinf(torch.tensor(vals)))
    a32 = np.array([1.0, 2.0], dtype=np.float32)
    _same(
        tinyattn.nextafter(tinyattn.tensor(a32), tinyattn.tensor([3.0], dtype=tinyattn.float64)),
        torch.nextafter(torch.tensor(a32), torch.tensor([3.0], dtype=torch.float64)),
    )


def test_predicates_and_no_ops_without_torch():
    x = tinyattn.tensor([1.0, float("inf"), -float("inf"), float("nan")], requires_grad=True)
    assert tinyattn.isposinf(x).tolist() == [False, True, False, False]
    assert tinyattn.isneginf(x).tolist() == [False, False, True, False]
    assert tinyattn.isreal(x).tolist() == [True] * 4
    for name in ("conj", "resolve_conj", "resolve_neg", "conj_physical"):
        assert getattr(tinyattn, name)(x) is x and getattr(x, name)() is x
    assert not tinyattn.is_conj(x) and not x.is_neg() and not x.is_conj()
    out = tinyattn.angle(tinyattn.tensor([-2.0, 0.0, -0.0, 3.0, float("nan")]))
    np.testing.assert_allclose(out.numpy(), [math.pi, 0, 0, 0, np.nan], rtol=1e-7)
    assert tinyattn.angle(tinyattn.tensor([-1, 1])).dtype == tinyattn.float32


def test_heaviside_inplace():
    x = tinyattn.tensor([-1.0, 0.0, 2.0])
    assert x.heaviside_(tinyattn.tensor([0.5])) is x
    assert x.tolist() == [0.0, 0.5, 1.0]


# -- differentiable: angle, ldexp, rsub ----------------------------------------------------
def test_angle_gradcheck_and_parity():
    check_op(lambda T, x: T.angle(x), rand(3, 4))


def test_ldexp_gradcheck_and_parity():
    # (non-negative integer exponents: torch's gradient computes 2**other in the integer
    # dtype, so a negative integer exponent gives it gradient 0; ours is 2**other = 0.5)
    exps = np.array([[2, 1, 0, 3]])
    check_op(lambda T, x, e: T.ldexp(x, e), rand(3, 4), exps)
    check_op(lambda T, x, e: T.ldexp(x, e), rand(3, 4), rand(4, low=-2, high=2))
    check_op(lambda T, x, e: (x * 1).ldexp_(e), rand(3, 4), exps)
    x = tinyattn.tensor([3.0], requires_grad=True)
    tinyattn.ldexp(x, tinyattn.tensor([-1])).sum().backward()
    assert x.grad.tolist() == [0.5]


def test_rsub_gradcheck_and_parity():
    check_op(lambda T, x, y: T.rsub(x, y, alpha=2), rand(3, 4), rand(4))
    check_op(lambda T, x: T.rsub(x, 1.5), rand(3))
    assert tinyattn.rsub(tinyattn.tensor([1, 2]), 5).tolist() == [4, 3]


# -- addmv, addr, renorm -------------------------------------------------------------------
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2.0), (0, 1.5)])
def test_addmv_addr_gradcheck_and_parity(beta, alpha):
    check_op(
        lambda T, x, m, v: T.addmv(x, m, v, beta=beta, alpha=alpha), rand(3), rand(3, 4), rand(4)
    )
    check_op(
        lambda T, x, m, v: T.addmv(x, m, v, beta=beta, alpha=alpha), rand(1), rand(3, 4), rand(4)
    )
    check_op(
        lambda T, x, a, b: T.addr(x, a, b, beta=beta, alpha=alpha), rand(3, 4), rand(3), rand(4)
    )
    check_op(lambda T, x, a, b: T.addr(x, a, b, beta=beta, alpha=alpha), rand(4), rand(3), rand(4))
    check_op(
        lambda T, x, m, v: (x * 1).addmv_(m, v, beta=beta, alpha=alpha),
        rand(3),
        rand(3, 4),
        rand(4),
    )
    check_op(
        lambda T, x, a, b: (x * 1).addr_(a, b, beta=beta, alpha=alpha), rand(3, 4), rand(3), rand(4)
    )


def test_addmv_beta_zero_ignores_nan():
    x = tinyattn.tensor([float("nan"), 1.0])
    out = tinyattn.addmv(x, tinyattn.ones(2, 2), tinyattn.ones(2), beta=0)
    assert out.tolist() == [2.0, 2.0]
    out = tinyattn.addr(
        tinyattn.tensor([[1, 2], [3, 4]]),
        tinyattn.tensor([1, 2]),
        tinyattn.tensor([1, 1]),
        beta=2,
        alpha=3,
    )
    assert out.tolist() == [[5, 7], [12, 14]] and out.dtype == tinyattn.int64


@pytest.mark.parametrize("p", [1, 2, 1.5, float("inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_renorm_gradcheck_and_parity(p, dim):
    check_op(lambda T, x: T.renorm(x * 3, p, dim, 1.0), rand(3, 4, 2))
    check_op(lambda T, x: (x * 3).renorm_(p, dim, 0.5), rand(3, 4))


def test_renorm_values_without_torch():
    x = tinyattn.tensor([[3.0, 4.0], [0.3, 0.4]])
    out = tinyattn.renorm(x, 2, 0, 1.0).numpy()
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            lambda L: L.addmv(L.randn(3), L.randn(3, 4), L.randn(5)),
            r"mv.*size mismatch.*\[3, 4\].*\[5\]",
        ),
        (lambda L: L.addmv(L.randn(2), L.randn(3, 4), L.randn(4)), r"addmv.*\[2\].*\[3\]"),
        (lambda L: L.addr(L.randn(3, 4), L.randn(3), L.randn(4, 1)), r"addr.*vec2.*2-D"),
        (lambda L: L.renorm(L.randn(4), 2, 0, 1.0), r"renorm.*at least 2 dimensions, got 1"),
        (lambda L: L.renorm(L.randn(3, 4), 0, 0, 1.0), r"renorm.*non-positive-norm.*p=0"),
        (lambda L: L.renorm(L.randn(3, 4), 2, 0, -1.0), r"renorm.*maxnorm.*>= 0.*-1"),
        (lambda L: L.renorm(L.randn(3, 4), 2, 2, 1.0), r"renorm.*dim|[Dd]imension out of range"),
        (lambda L: L.renorm(L.tensor([[1, 2]]), 2, 0, 1.0), r"renorm.*floating.*int64"),
    ],
)
def test_linalg_helpers_bad_input(call, expected):
    check_bad_call(call, expected)


@needs_torch
def test_dtype_table_matches_torch():
    """Every pair of dtypes: the same result dtype and values as torch, or both refuse."""
    import itertools

    dtypes = ["float16", "float32", "float64", "int32", "int64", "uint8", "bool"]
    for a, b in itertools.product(dtypes, dtypes):
        va, vb = np.array([1, 2, 0]).astype(a), np.array([2, 1, 3]).astype(b)
        for name in ("ldexp", "gcd", "lcm", "nextafter"):
            try:
                theirs = getattr(torch, name)(torch.tensor(va), torch.tensor(vb))
            except (RuntimeError, TypeError, NotImplementedError):
                with pytest.raises((RuntimeError, TypeError)):
                    getattr(tinyattn, name)(tinyattn.tensor(va), tinyattn.tensor(vb))
                continue
            ours = getattr(tinyattn, name)(tinyattn.tensor(va), tinyattn.tensor(vb))
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (name, a, b)
            np.testing.assert_allclose(ours.numpy().astype(float), theirs.numpy().astype(float))
    for a in dtypes:
        va = np.array([1, 0, 2]).astype(a)
        for name in ("angle", "isposinf", "isneginf", "isreal"):
            _same(
                getattr(tinyattn, name)(tinyattn.tensor(va)), getattr(torch, name)(torch.tensor(va))
            )
