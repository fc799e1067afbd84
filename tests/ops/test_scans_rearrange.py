"""Scans, degenerate-point gradients of var/std/norm, rearranging,
linalg and elementwise additions. Gradchecks and torch parity via the harness; bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, run_parity, torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


@st.composite
def shape_dim(draw, min_side=0, max_dims=3):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=min_side, max_side=4))
    return shape, draw(st.integers(-len(shape), len(shape) - 1))


# -- scans ------------------------------------------------------------------------------------


@given(shape_dim())
def test_cumprod_cumsum(sd):
    shape, dim = sd
    x = _arr(shape, seed=1)
    check_op(lambda T, x: T.cumprod(x, dim), x)
    check_op(lambda T, x: T.cumsum(x, dim=dim), x)


@pytest.mark.parametrize(
    "row",
    [
        [2.0, 0.0, 3.0, 0.5],  # one zero
        [0.0, 2.0, 3.0, 4.0],  # zero first
        [2.0, 3.0, 0.5, 0.0],  # zero last
        [1.5, 0.0, 2.0, 0.0, 3.0],  # two zeros: the second gets no gradient
        [0.0, 0.0, 0.0],
    ],
)
def test_cumprod_gradient_at_zeros(row):
    """torch's cumprod backward is exact at zeros (no 0/0): the product is a polynomial,
    so the finite differences are exact there too."""
    x = np.array(row)
    check_op(lambda T, x: T.cumprod(x, 0), x)
    check_op(lambda T, x: T.cumprod(x.reshape(1, -1).expand(2, -1) * 1, 1), x)


def test_cumprod_dtypes():
    ints = tinyattn.tensor([1, 2, 3], dtype=tinyattn.int32)
    assert tinyattn.cumprod(ints, 0).dtype == tinyattn.int64
    assert tinyattn.cumprod(ints, 0, dtype=tinyattn.float64).dtype == tinyattn.float64
    np.testing.assert_array_equal(tinyattn.cumprod(ints, 0).numpy(), [1, 2, 6])


@given(shape_dim())
def test_cummax_cummin(sd):
    shape, dim = sd
    x = np.random.default_rng(2).permutation(int(np.prod(shape))).reshape(shape) * 0.1
    check_op(lambda T, x: T.cummax(x, dim), x)
    check_op(lambda T, x: T.cummin(x, dim), x)


@needs_torch
def test_cummax_ties_and_nan_indices_match_torch():
    nan = float("nan")
    a = np.array([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0], [nan, 1.0, nan, 2.0, 0.0, 0.0]])
    for name in ("cummax", "cummin"):
        ours = getattr(tinyattn, name)(tinyattn.tensor(a), 1)
        theirs = getattr(torch, name)(torch.tensor(a), 1)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    ties = np.array([1.0, 3.0, 3.0, 2.0, 3.0])  # the gradient follows the (repeated) indices
    run_parity(lambda T, x: T.cummax(x, 0), ties)


# -- degenerate points: var / std / norm at zero spread -------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: T.std(x),
        lambda T, x: T.std(x, 1),
        lambda T, x: T.std(x, 0, correction=0, keepdim=True),
        lambda T, x: T.var(x, 1),
        lambda T, x: T.std_mean(x, 1),
        lambda T, x: T.var_mean(x, 0),
        lambda T, x: T.norm(x),
        lambda T, x: T.norm(x, 1, dim=1),
        lambda T, x: T.norm(x, 3, dim=1),
        lambda T, x: T.norm(x, 0.5, dim=1),
        lambda T, x: T.norm(x, float("inf"), dim=1),
        lambda T, x: T.norm(x, float("-inf"), dim=1),
    ],
)
def test_zero_spread_gradients_match_torch(fn):
    """All-equal rows (std 0) and all-zero rows (norm 0): torch's gradient is 0, not NaN."""
    const = np.array([[0.5, 0.5, 0.5], [0.0, 0.0, 0.0]])
    run_parity(fn, const)
    ours = tinyattn.tensor(const, requires_grad=True)
    out = fn(tinyattn, ours)
    sum(o.sum() for o in (out if isinstance(out, tuple) else (out,))).backward()
    assert np.isfinite(ours.grad.numpy()).all()


@pytest.mark.parametrize("p", [0.5, 1, 2, 3, -1, float("inf"), float("-inf")])
def test_norm_with_some_zero_elements(p):
    x = np.array([[0.0, 1.0, -2.0], [0.3, -0.7, 0.2]])
    run_parity(lambda T, x: T.norm(x, p, dim=1), x)
    check_op(lambda T, x: T.norm(x, p, dim=1), x[1:])  # gradcheck away from the kink


def test_std_gradcheck_nonconstant():
    check_op(lambda T, x: T.std(x, 1) + T.std(x), _arr((3, 4), seed=3))


def test_norm_p0_counts_nonzeros_with_zero_gradient():
    """torch leaves .grad None for p=0 (its backward returns no gradient); ours is 0."""
    x = np.array([[0.0, 1.0, -2.0], [0.3, 0.0, 0.0]])
    run_parity(lambda T, x: T.norm(x, 0, dim=1), x, grad=[False])
    t = tinyattn.tensor(x, requires_grad=True)
    tinyattn.norm(t, 0, dim=1).sum().backward()
    np.testing.assert_array_equal(tinyattn.norm(t, 0, dim=1).detach().numpy(), [2.0, 1.0])
    np.testing.assert_array_equal(t.grad.numpy(), np.zeros_like(x))


# -- rearranging: flip, roll, diff, diag, diag_embed, tri indices -----------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: T.flip(x, (0, 2)),
        lambda T, x: T.flip(x, [-1]),
        lambda T, x: x.flip(1, 0),
        lambda T, x: T.roll(x, 2),  # flattened
        lambda T, x: T.roll(x, -1, 1),
        lambda T, x: T.roll(x, (1, -2), (0, 2)),
        lambda T, x: T.roll(x, [5], [-1]),
        lambda T, x: T.roll(x, (1, 1), (1, 1)),  # the same dim twice: shifts add
    ],
)
def test_flip_roll(fn):
    check_op(fn, _arr((2, 3, 4), seed=5))


@given(shape_dim(), st.integers(0, 3))
def test_diff(sd, n):
    shape, dim = sd
    check_op(lambda T, x: T.diff(x, n, dim), _arr(shape, seed=6))


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x, p, a: T.diff(x, 1, 1, prepend=p, append=a),
        lambda T, x, p, a: T.diff(x, 2, 1, prepend=p),
        lambda T, x, p, a: T.diff(x, 3, -1, append=a),
    ],
)
def test_diff_prepend_append(fn):
    check_op(fn, _arr((2, 3), seed=7), _arr((2, 1), seed=8), _arr((2, 2), seed=9))


@needs_torch
def test_diff_int_and_bool_match_torch():
    for values in ([1, 5, 2, 2], [True, False, False, True]):
        ours = tinyattn.diff(tinyattn.tensor(values))
        theirs = torch.diff(torch.tensor(values))
        assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 3])
def test_diag(offset):
    check_op(lambda T, x: T.diag(x, offset), _arr((4,), seed=10))
    check_op(lambda T, x: T.diag(x, offset), _arr((3, 4), seed=11))


@pytest.mark.parametrize(
    "args", [(0, -2, -1), (1, 0, 2), (-1, 2, 0), (2, 1, 3), (0, -1, -3), (-2, 0, 1)]
)
def test_diag_embed(args):
    check_op(lambda T, x: T.diag_embed(x, *args), _arr((2, 3, 3), seed=12))


@needs_torch
@pytest.mark.parametrize("rc", [(3, 3), (3, 5), (5, 2), (0, 3), (1, 1)])
@pytest.mark.parametrize("offset", [-6, -1, 0, 2])
def test_tri_indices_match_torch(rc, offset):
    for name in ("tril_indices", "triu_indices"):
        ours = getattr(tinyattn, name)(*rc, offset)
        theirs = getattr(torch, name)(*rc, offset)
        assert ours.dtype == tinyattn.int64 and tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# -- linalg: addmm family, outer, cross ------------------------------------------------------


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1.5), (2, 0)])
def test_addmm_family(beta, alpha):
    kw = {"beta": beta, "alpha": alpha}
    check_op(lambda T, i, a, b: T.addmm(i, a, b, **kw), _arr((2, 3)), _arr((2, 4)), _arr((4, 3)))
    check_op(lambda T, i, a, b: T.addmm(i, a, b, **kw), _arr((3,)), _arr((2, 4)), _arr((4, 3)))
    check_op(
        lambda T, i, a, b: T.baddbmm(i, a, b, **kw),
        _arr((1, 2, 3)),
        _arr((5, 2, 4)),
        _arr((5, 4, 3)),
    )
    check_op(
        lambda T, i, a, b: T.addbmm(i, a, b, **kw),
        _arr((2, 1)),
        _arr((5, 2, 4)),
        _arr((5, 4, 3)),
    )


def test_addmm_beta_zero_ignores_nan_in_input():
    out = tinyattn.addmm(
        tinyattn.full((2, 2), float("nan")), tinyattn.eye(2), tinyattn.eye(2), beta=0
    )
    np.testing.assert_array_equal(out.numpy(), np.eye(2))


def test_outer_and_cross():
    check_op(lambda T, a, b: T.outer(a, b), _arr((3,), seed=1), _arr((4,), seed=2))
    check_op(lambda T, a, b: T.cross(a, b, dim=0), _arr((3, 2), seed=3), _arr((3, 2), seed=4))
    check_op(lambda T, a, b: T.cross(a, b), _arr((2, 3), seed=3), _arr((2, 3), seed=4))
    check_op(lambda T, a, b: T.linalg.cross(a, b), _arr((4, 3), seed=5), _arr((1, 3), seed=6))
    check_op(
        lambda T, a, b: T.linalg.cross(a, b, dim=1),
        _arr((2, 3, 2), seed=7),
        _arr((2, 3, 1), seed=8),
    )


# -- elementwise: clamp with tensor bounds, lerp ----------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x, lo, hi: T.clamp(x, lo, hi),
        lambda T, x, lo, hi: T.clamp(x, min=lo),
        lambda T, x, lo, hi: T.clamp(x, max=hi),
        lambda T, x, lo, hi: T.clamp(x, hi, lo),  # min > max where they cross: max wins
        lambda T, x, lo, hi: T.clamp(x, lo[0], hi[:, :1]),  # broadcast bounds
    ],
)
def test_clamp_tensor_bounds(fn):
    x = _arr((3, 4), seed=13)
    lo, hi = _arr((3, 4), seed=14) - 0.3, _arr((3, 4), seed=15) + 0.3
    check_op(fn, x, lo, hi)


@needs_torch
def test_clamp_gradient_at_ties_matches_torch():
    """x equal to a bound: the gradient goes to x (torch's rule), not to the bound."""
    x = np.array([0.0, 0.5, 1.0, 2.0])
    lo = np.array([0.0, 0.2, 1.5, 2.0])
    hi = np.array([0.0, 0.5, 1.0, 2.5])
    run_parity(lambda T, x, lo, hi: T.clamp(x, lo, hi), x, lo, hi)


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, a, b, w: T.lerp(a, b, 0.3),
        lambda T, a, b, w: T.lerp(a, b, w),
        lambda T, a, b, w: T.lerp(a[0], b, w[:, :1]),  # all three broadcast
    ],
)
def test_lerp(fn):
    check_op(fn, _arr((3, 4), seed=16), _arr((3, 4), seed=17), _arr((3, 4), seed=18))


BAD = [
    ("diag-3d", lambda L: L.diag(L.zeros(2, 2, 2)), r"1-D or 2-D.*3-D"),
    ("diag-embed-same-dims", lambda L: L.diag_embed(L.zeros(2, 3), 0, 0, 0), r"dim1 and dim2"),
    ("diff-negative-n", lambda L: L.diff(L.zeros(3), n=-1), r"non-negative.*-1"),
    ("diff-0d", lambda L: L.diff(L.tensor(1.0)), r"at least one-dimensional"),
    (
        "diff-prepend-ndim",
        lambda L: L.diff(L.zeros(2, 3), prepend=L.zeros(3)),
        r"prepend.*same number of dimensions.*\[3\].*\[2, 3\]",
    ),
    ("diff-dim", lambda L: L.diff(L.zeros(2, 3), dim=2), r"dimension out of range"),
    ("tril-indices-negative", lambda L: L.tril_indices(-1, 3), r"non-negative.*row=-1"),
    ("roll-misaligned", lambda L: L.roll(L.zeros(2, 3), (1, 2), 0), r"shifts and dim"),
    ("flip-repeated-dim", lambda L: L.flip(L.zeros(2, 3), (0, 0)), r"multiple times"),
    (
        "addmm-shapes",
        lambda L: L.addmm(L.zeros(3), L.zeros(2, 4), L.zeros(5, 3)),
        r"\[2, 4\].*\[5, 3\]",
    ),
    (
        "addmm-input-too-big",
        lambda L: L.addmm(L.zeros(4, 3), L.zeros(2, 4), L.zeros(4, 3)),
        r"input of shape \[4, 3\].*\[2, 3\]",
    ),
    ("bmm-in-baddbmm", lambda L: L.baddbmm(L.zeros(1), L.zeros(2, 4), L.zeros(2, 4)), r"3D"),
    (
        "cross-length",
        lambda L: L.linalg.cross(L.zeros(3, 2), L.zeros(3, 2)),
        r"dimension -1 must have length 3.*2 and 2",
    ),
    (
        "cross-broadcast",
        lambda L: L.linalg.cross(L.zeros(2, 3), L.zeros(4, 3)),
        r"\[2, 3\].*\[4, 3\].*broadcast",
    ),
    ("lerp-dtypes", lambda L: L.lerp(L.zeros(3), L.ones(3, dtype=L.float64), 0.5), r"same.*dtype"),
    (
        "lerp-shapes",
        lambda L: L.lerp(L.zeros(3), L.ones(3), L.ones(2)),
        r"\(3,\).*\(2,\).*broadcastable",
    ),
    ("clamp-shapes", lambda L: L.clamp(L.zeros(3), L.zeros(2)), r"\(3,\).*\(2,\)"),
]


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
