"""Sorting family: gradchecks and torch parity (values, indices, ties, dtypes), bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, run_parity, torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _distinct(shape, seed=0):
    """Values without ties (so every gradient is defined and indices are unique)."""
    n = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(n).reshape(shape) / max(n, 1) - 0.5


def _ties(shape, seed=0, levels=4):
    return np.random.default_rng(seed).integers(0, levels, shape).astype(np.float64)


@st.composite
def shape_dim(draw, min_side=0):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=4))
    return shape, draw(st.integers(-len(shape), len(shape) - 1))


# -- differentiable: gradients flow to the selected indices ---------------------------------


@given(shape_dim(), st.booleans())
def test_sort_gradcheck_and_parity(sd, descending):
    shape, dim = sd
    x = _distinct(shape, seed=1)
    check_op(lambda T, x: T.sort(x, dim, descending=descending), x)
    check_op(lambda T, x: T.msort(x), x)


@given(shape_dim(min_side=1), st.data())
def test_topk_and_kthvalue(sd, data):
    shape, dim = sd
    n = shape[dim]
    k = data.draw(st.integers(0, n))
    x = _distinct(shape, seed=2)
    check_op(lambda T, x: T.topk(x, k, dim), x)
    check_op(lambda T, x: T.topk(x, k, dim, largest=False), x)
    if k:
        keep = data.draw(st.booleans())
        check_op(lambda T, x: T.kthvalue(x, k, dim, keepdim=keep), x)


@given(shape_dim(min_side=1), st.booleans())
def test_median_mode_with_dim(sd, keepdim):
    shape, dim = sd
    x = _distinct(shape, seed=3)
    check_op(lambda T, x: T.median(x, dim, keepdim=keepdim), x)
    check_op(lambda T, x: T.nanmedian(x, dim, keepdim=keepdim), x)
    check_op(lambda T, x: T.mode(x, dim, keepdim=keepdim), x)


@pytest.mark.parametrize("n", [1, 4, 7])
def test_global_median_splits_gradient_among_ties(n):
    check_op(lambda T, x: T.median(x) * 3, _distinct((n,), seed=4))
    check_op(lambda T, x: T.nanmedian(x.reshape(1, -1)), _distinct((n,), seed=5))
    ties = np.array([1.0, 2.0, 2.0, 3.0, 2.0])
    run_parity(lambda T, x: T.median(x), ties)  # torch splits g evenly: 1/3 to each 2


def test_zero_dim_inputs():
    x = np.array(0.7)
    check_op(lambda T, x: T.sort(x), x)
    check_op(lambda T, x: T.topk(x, 1), x)
    check_op(lambda T, x: T.kthvalue(x, 1, 0), x)
    check_op(lambda T, x: T.median(x, 0), x)
    check_op(lambda T, x: T.mode(x), x)


# -- ties, NaN and indices against torch -----------------------------------------------------


def _both(fn, a):
    return fn(tinyattn, tinyattn.tensor(a)), fn(torch, torch.tensor(a))


@needs_torch
@pytest.mark.parametrize("seed", range(6))
def test_tie_indices_match_torch(seed):
    """sort (stable or not), argsort and median follow torch's index exactly; mode too for
    slices of up to 16 elements (torch's index is implementation-defined beyond)."""
    a = _ties((3, 5 + 2 * seed), seed=seed)
    for dim in (0, 1, -1):
        for fn in [
            lambda L, x, d=dim: L.sort(x, d),
            lambda L, x, d=dim: L.sort(x, d, descending=True),
            lambda L, x, d=dim: L.sort(x, dim=d, stable=True, descending=True),
            lambda L, x, d=dim: L.median(x, d),
            lambda L, x, d=dim: L.nanmedian(x, d),
            lambda L, x, d=dim: L.mode(x, d),
        ]:
            ours, theirs = _both(fn, a)
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
            np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        ours, theirs = _both(lambda L, x, d=dim: L.argsort(x, d, descending=True), a)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype == tinyattn.int64


@needs_torch
@pytest.mark.parametrize("seed", range(4))
def test_topk_kthvalue_ties_values_match_and_indices_are_valid(seed):
    """torch's index among equal values is unspecified here: values match, and our indices
    point at those values (distinct, and the first ones in stable order)."""
    a = _ties((4, 9), seed=seed)
    for k in (1, 4, 9):
        for largest in (True, False):
            ours, theirs = _both(lambda L, x, k=k, big=largest: L.topk(x, k, largest=big), a)
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
            idx = ours.indices.numpy()
            np.testing.assert_array_equal(np.take_along_axis(a, idx, 1), ours.values.numpy())
            order = np.argsort(-a if largest else a, axis=1, kind="stable")[:, :k]
            np.testing.assert_array_equal(idx, order)
        ours, theirs = _both(lambda L, x, k=k: L.kthvalue(x, k), a)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(
            np.take_along_axis(a, ours.indices.numpy()[:, None], 1)[:, 0], ours.values.numpy()
        )


@needs_torch
def test_nan_ordering_matches_torch():
    a = np.array([[1.0, np.nan, 0.0, np.nan, 2.0], [np.nan] * 5, [3.0, 1.0, 1.0, 2.0, 0.0]])
    for fn in [
        lambda L, x: L.sort(x),
        lambda L, x: L.sort(x, descending=True),
        lambda L, x: L.median(x, 1),
        lambda L, x: L.nanmedian(x[[0, 2]], 1),  # all-NaN row: torch's index varies with n
    ]:
        ours, theirs = _both(fn, a)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    ours, theirs = _both(lambda L, x: L.topk(x, 2), a)  # NaN is the largest; ties unspecified
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    for fn in [lambda L, x: L.median(x), lambda L, x: L.nanmedian(x[2])]:
        ours, theirs = _both(fn, a)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_return_types_are_named():
    x = tinyattn.tensor([3.0, 1.0, 2.0])
    for out, name in [
        (tinyattn.sort(x), "sort"),
        (tinyattn.topk(x, 2), "topk"),
        (tinyattn.kthvalue(x, 2), "kthvalue"),
        (tinyattn.median(x, 0), "median"),
        (tinyattn.mode(x), "mode"),
    ]:
        assert type(out).__name__ == name
        values, indices = out
        assert out.values is values and out.indices is indices
        assert indices.dtype == tinyattn.int64


def test_empty_dims():
    x = tinyattn.zeros(2, 0)
    v, i = tinyattn.sort(x, 1)
    assert v.shape == (2, 0) and i.shape == (2, 0)
    assert tinyattn.topk(x, 0).values.shape == (2, 0)
    assert tinyattn.median(x, 0).values.shape == (0,)
    assert np.isnan(tinyattn.median(tinyattn.zeros(0)).item())


# -- not differentiable: values and dtypes ----------------------------------------------------


def _same(ours, theirs):
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.dtype.name == str(t.dtype).replace("torch.", ""), (o.dtype, t.dtype)
        np.testing.assert_array_equal(o.numpy(), t.numpy())


@needs_torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda L: L.unique(L.tensor([3, 1, 2, 3, 1])),
        lambda L: L.unique(L.tensor([[3, 1], [2, 3]]), return_inverse=True, return_counts=True),
        lambda L: L.unique(L.tensor([2.0, float("nan"), 1.0, float("nan")]), return_counts=True),
        lambda L: L.unique(L.tensor([[1, 2], [1, 2], [0, 5]]), dim=0, return_inverse=True),
        lambda L: L.unique(L.tensor([[1, 2, 1], [3, 4, 3]]), dim=1, return_counts=True),
        lambda L: L.unique(L.tensor([True, False, True]), sorted=False),
        lambda L: L.unique(L.zeros(0)),
        lambda L: L.unique_consecutive(
            L.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True, return_counts=True
        ),
        lambda L: L.unique_consecutive(L.tensor([[1, 1, 2], [1, 1, 3]]), dim=1),
        lambda L: L.bincount(L.tensor([1, 1, 3])),
        lambda L: L.bincount(L.tensor([1, 1, 3]), minlength=7),
        lambda L: L.bincount(L.tensor([], dtype=L.int64)),
        lambda L: L.bincount(L.tensor([0, 2]), weights=L.tensor([0.5, 2.0])),
        lambda L: L.bincount(L.tensor([0, 2]), weights=L.tensor([0.5, 2.0], dtype=L.float64)),
        lambda L: L.bincount(L.tensor([0, 2]), weights=L.tensor([1, 2])),
        lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3, 6, 9, 0])),
        lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3, 6, 9]), right=True),
        lambda L: L.searchsorted(L.tensor([1.0, 3.0, 3.0]), L.tensor([3.0]), side="right"),
        lambda L: L.searchsorted(L.tensor([1, 3, 5]), 3),
        lambda L: L.searchsorted(L.tensor([1, 3, 5]), L.tensor([[2, 6]]), out_int32=True),
        lambda L: L.searchsorted(L.tensor([[1, 3], [2, 4]]), L.tensor([[2, 3, 5], [2, 3, 5]])),
        lambda L: L.searchsorted(
            L.tensor([5.0, 1.0, 3.0]), L.tensor([2.0, 4.0]), sorter=L.tensor([1, 2, 0])
        ),
        lambda L: L.bucketize(L.tensor([3, 6, 9]), L.tensor([1, 3, 5, 7])),
        lambda L: L.bucketize(L.tensor([[3.0, 6.0]]), L.tensor([1.0, 3.0]), right=True),
        lambda L: L.bucketize(1.5, L.tensor([1.0, 2.0])),
        lambda L: L.argsort(L.tensor([[3, 1, 2], [0, 0, 1]]), dim=0),
    ],
)
def test_index_and_count_ops_match_torch(fn):
    _same(fn(tinyattn), fn(torch))


@given(hnp.arrays(np.int64, st.integers(0, 12), elements=st.integers(0, 6)), st.integers(0, 9))
def test_bincount_counts(values, minlength):
    out = tinyattn.bincount(tinyattn.tensor(values), minlength=minlength).numpy()
    assert len(out) == max(minlength, values.max(initial=-1) + 1)
    for v in range(len(out)):
        assert out[v] == (values == v).sum()


# -- bad input: a clear error, and torch rejects the same call --------------------------------

BAD = [
    ("topk-k-too-large", lambda L: L.topk(L.zeros(3), 4), r"k out of range.*k=4.*size 3"),
    ("topk-k-negative", lambda L: L.topk(L.zeros(3), -1), r"k out of range"),
    ("topk-dim", lambda L: L.topk(L.zeros(3), 2, dim=1), r"dimension out of range"),
    ("topk-bool", lambda L: L.topk(L.tensor([True, False]), 1), r"bool"),
    ("sort-dim", lambda L: L.sort(L.zeros(3), dim=2), r"dimension out of range.*got 2"),
    ("argsort-dim", lambda L: L.argsort(L.zeros(2, 3), dim=-3), r"dimension out of range"),
    ("kthvalue-k-zero", lambda L: L.kthvalue(L.zeros(3), 0), r"k=0 out of range.*size 3"),
    ("kthvalue-k-large", lambda L: L.kthvalue(L.zeros(3), 4), r"k=4 out of range"),
    ("median-empty-dim", lambda L: L.median(L.zeros(0), 0), r"reduction dim 0.*non-zero"),
    ("mode-empty", lambda L: L.mode(L.zeros(0)), r"reduction dim 0.*non-zero"),
    ("unique-dim", lambda L: L.unique(L.zeros(2, 3), dim=3), r"dimension out of range"),
    ("bincount-float", lambda L: L.bincount(L.zeros(3)), r"bincount.*integers.*float32"),
    ("bincount-negative", lambda L: L.bincount(L.tensor([-1, 2])), r"non-negative.*minimum -1"),
    ("bincount-2d", lambda L: L.bincount(L.zeros(2, 2, dtype=L.int64)), r"1-d.*\[2, 2\]"),
    (
        "bincount-weights-len",
        lambda L: L.bincount(L.tensor([1, 2]), weights=L.tensor([1.0])),
        r"weights.*same length.*\[1\].*\[2\]",
    ),
    ("bincount-minlength", lambda L: L.bincount(L.tensor([1]), minlength=-1), r"minlength"),
    (
        "searchsorted-shapes",
        lambda L: L.searchsorted(L.tensor([[1.0, 2.0]]), L.tensor([[1.0], [2.0]])),
        r"first N-1 dimensions.*\[1, 2\].*\[2, 1\]",
    ),
    (
        "searchsorted-side-right",
        lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), right=True, side="left"),
        r"side and right",
    ),
    (
        "searchsorted-side-value",
        lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), side="middle"),
        r"'left' or 'right'.*middle",
    ),
    (
        "searchsorted-sorter-shape",
        lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), sorter=L.tensor([0])),
        r"sorter.*shape",
    ),
    (
        "bucketize-2d-boundaries",
        lambda L: L.bucketize(L.tensor([1.0]), L.tensor([[1.0, 2.0]])),
        r"boundaries.*1 dimension.*dim\(2\)",
    ),
]


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
