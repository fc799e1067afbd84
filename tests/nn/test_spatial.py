"""pad (all modes), interpolate, unfold/fold, their modules, one_hot: gradchecks, torch parity,
bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, torch
from hypothesis import given
from hypothesis import strategies as st

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def F(lib):
    return lib.nn.functional


# -- pad --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "shape,pad",
    [
        ((2, 5), (2, 1)),  # unbatched 1-D signal
        ((1, 2, 5), (0, 3)),
        ((1, 2, 5), (-1, 2)),  # negative: crop
        ((2, 4, 3), (1, 2, 2, 0)),
        ((1, 2, 3, 4), (3, 1, 2, 2)),
        ((1, 3, 3, 2), (1, 1, 1, -1)),
        ((1, 1, 2, 3, 4), (1, 1, 1, 1, 1, 1)),
    ],
)
def test_pad_modes(mode, shape, pad):
    check_op(lambda T, x: F(T).pad(x, pad, mode=mode), _arr(shape, seed=1))


@given(st.integers(1, 5), st.integers(0, 4), st.integers(0, 4))
def test_pad_replicate_any_amount_and_circular_up_to_size(n, lo, hi):
    x = _arr((1, 2, n), seed=2)
    check_op(lambda T, x: F(T).pad(x, (lo, hi), mode="replicate"), x)
    if lo <= n and hi <= n:
        check_op(lambda T, x: F(T).pad(x, (lo, hi), mode="circular"), x)
    if lo < n and hi < n:
        check_op(lambda T, x: F(T).pad(x, (lo, hi), mode="reflect"), x)


def test_pad_constant_still_works():
    check_op(lambda T, x: F(T).pad(x, (1, 2, -1, 1), value=0.5), _arr((2, 3, 4), seed=3))
    assert tinyattn.nn.functional.pad is tinyattn.nn.functional.sampling_spatial.pad


# -- interpolate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {"size": 7},
        {"size": 3},
        {"scale_factor": 2},
        {"scale_factor": 1.7},
        {"scale_factor": 0.5},
        {"size": 7, "mode": "nearest-exact"},
        {"size": 7, "mode": "linear"},
        {"size": 3, "mode": "linear"},
        {"size": 8, "mode": "linear", "align_corners": True},
        {"size": 1, "mode": "linear", "align_corners": True},
        {"scale_factor": 2.5, "mode": "linear"},
        {"scale_factor": 1.5, "mode": "linear", "recompute_scale_factor": True},
        {"scale_factor": 0.6, "mode": "linear", "align_corners": False},
    ],
)
def test_interpolate_1d(kw):
    check_op(lambda T, x: F(T).interpolate(x, **kw), _arr((2, 3, 5), seed=4))


@pytest.mark.parametrize(
    "kw",
    [
        {"size": (5, 3)},
        {"scale_factor": (2, 0.5)},
        {"size": (5, 7), "mode": "bilinear"},
        {"size": (2, 9), "mode": "bilinear", "align_corners": True},
        {"scale_factor": 1.5, "mode": "bilinear"},
    ],
)
def test_interpolate_2d(kw):
    check_op(lambda T, x: F(T).interpolate(x, **kw), _arr((1, 2, 3, 4), seed=5))


def test_interpolate_3d_and_int_nearest():
    check_op(
        lambda T, x: F(T).interpolate(x, size=(3, 2, 4), mode="trilinear"), _arr((1, 1, 2, 3, 2))
    )
    ints = tinyattn.tensor([[[1, 2, 3]]])
    out = tinyattn.nn.functional.interpolate(ints, scale_factor=2)
    assert out.dtype == tinyattn.int64
    np.testing.assert_array_equal(out.numpy(), [[[1, 1, 2, 2, 3, 3]]])


# -- unfold / fold ----------------------------------------------------------------------------

_BLOCKS = [
    {"kernel_size": 2},
    {"kernel_size": (2, 3), "stride": (1, 2)},
    {"kernel_size": 2, "padding": 1, "stride": 2},
    {"kernel_size": (2, 2), "dilation": (2, 1), "padding": (1, 0)},
    {"kernel_size": 3, "padding": 1},
]


@pytest.mark.parametrize("kw", _BLOCKS)
def test_unfold(kw):
    check_op(lambda T, x: F(T).unfold(x, **kw), _arr((2, 2, 4, 5), seed=6))
    check_op(lambda T, x: F(T).unfold(x, **kw), _arr((2, 4, 5), seed=7))  # unbatched


@pytest.mark.parametrize("kw", _BLOCKS)
def test_fold(kw):
    blocks = tinyattn.nn.functional.unfold(tinyattn.zeros(1, 2, 4, 5), **kw).shape
    check_op(lambda T, x: F(T).fold(x, (4, 5), **kw), _arr((1,) + tuple(blocks[1:]), seed=8))
    check_op(lambda T, x: F(T).fold(x, (4, 5), **kw), _arr(tuple(blocks[1:]), seed=9))


def test_fold_of_unfold_counts_overlaps():
    """fold(unfold(ones)) = how many blocks cover each pixel: the adjoint pair."""
    ones = tinyattn.ones(1, 1, 3, 3)
    cover = tinyattn.nn.functional.fold(tinyattn.nn.functional.unfold(ones, 2), (3, 3), 2)
    np.testing.assert_array_equal(cover.numpy()[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


@needs_torch
def test_modules_match_torch():
    x = _arr((2, 3, 4, 4), seed=10)
    pairs = [
        (lambda L: L.nn.Unfold(2, padding=1, stride=2), x),
        (lambda L: L.nn.Fold((3, 3), 2), _arr((2, 8, 4), seed=11)),
        (lambda L: L.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), x),
        (lambda L: L.nn.Upsample(size=(5, 3)), x),
    ]
    for make, a in pairs:
        ours = make(tinyattn)(tinyattn.tensor(a)).numpy()
        theirs = make(torch)(torch.tensor(a)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    assert repr(tinyattn.nn.Unfold(2)) == repr(torch.nn.Unfold(2))


# -- one_hot matches torch --------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda L: L.nn.functional.one_hot(L.tensor([0, 2, 1])),
        lambda L: L.nn.functional.one_hot(L.tensor([[0], [3]]), 5),
        lambda L: L.nn.functional.one_hot(L.tensor([], dtype=L.int64), 3),
        lambda L: L.nn.functional.one_hot(L.tensor(2), 4),
    ],
)
def test_one_hot_matches_torch(fn):
    ours, theirs = fn(tinyattn), fn(torch)
    assert ours.dtype == tinyattn.int64 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# -- bad input --------------------------------------------------------------------------------

BAD = [
    (
        "pad-reflect-too-large",
        lambda L: L.nn.functional.pad(L.zeros(1, 3, 4), (4, 1), mode="reflect"),
        r"less than.*\(4, 1\).*dimension 2.*\[1, 3, 4\]",
    ),
    (
        "pad-circular-too-large",
        lambda L: L.nn.functional.pad(L.zeros(1, 3, 4), (5, 1), mode="circular"),
        r"at most.*\(5, 1\)",
    ),
    (
        "pad-reflect-ndim",
        lambda L: L.nn.functional.pad(L.zeros(4), (1, 1), mode="reflect"),
        r"padding size 2.*1D",
    ),
    (
        "pad-replicate-ndim",
        lambda L: L.nn.functional.pad(L.zeros(3, 4), (1, 1, 1, 1), mode="replicate"),
        r"padding size 4.*2D",
    ),
    (
        "pad-odd",
        lambda L: L.nn.functional.pad(L.zeros(1, 2, 3), (1, 1, 1), mode="reflect"),
        r"divisible by 2",
    ),
    (
        "pad-value-with-reflect",
        lambda L: L.nn.functional.pad(L.zeros(1, 2, 3), (1, 1), mode="reflect", value=2.0),
        r"value",
    ),
    (
        "pad-mode",
        lambda L: L.nn.functional.pad(L.zeros(1, 2, 3), (1, 1), mode="bogus"),
        r"bogus",
    ),
    (
        "pad-empty-dim",
        lambda L: L.nn.functional.pad(L.zeros(1, 2, 0), (1, 1), mode="replicate"),
        r"non-empty.*\[1, 2, 0\]",
    ),
    (
        "interpolate-align-nearest",
        lambda L: L.nn.functional.interpolate(L.zeros(1, 2, 5), size=3, align_corners=True),
        r"align_corners",
    ),
    (
        "interpolate-no-size",
        lambda L: L.nn.functional.interpolate(L.zeros(1, 2, 5)),
        r"size or scale_factor",
    ),
    (
        "interpolate-both",
        lambda L: L.nn.functional.interpolate(L.zeros(1, 2, 5), size=3, scale_factor=2),
        r"size or scale_factor",
    ),
    (
        "interpolate-size-len",
        lambda L: L.nn.functional.interpolate(L.zeros(1, 2, 5), size=(3, 4)),
        r"spatial dim",
    ),
    (
        "interpolate-bilinear-3d",
        lambda L: L.nn.functional.interpolate(L.zeros(1, 2, 5), size=3, mode="bilinear"),
        r"3D input.*bilinear.*4D",
    ),
    (
        "interpolate-2d-input",
        lambda L: L.nn.functional.interpolate(L.zeros(2, 5), size=3),
        r"3D, 4D and 5D.*\[2, 5\]",
    ),
    (
        "interpolate-zero-out",
        lambda L: L.nn.functional.interpolate(L.zeros(1, 2, 5), scale_factor=0.1),
        r"greater than 0",
    ),
    (
        "unfold-kernel-too-big",
        lambda L: L.nn.functional.unfold(L.zeros(1, 2, 3, 3), 4),
        r"sliding blocks.*at least one",
    ),
    (
        "unfold-2d",
        lambda L: L.nn.functional.unfold(L.zeros(3, 3), 2),
        r"3D.*4D.*\[3, 3\]",
    ),
    (
        "unfold-stride-zero",
        lambda L: L.nn.functional.unfold(L.zeros(1, 2, 3, 3), 2, stride=0),
        r"stride should be greater than zero",
    ),
    (
        "unfold-padding-negative",
        lambda L: L.nn.functional.unfold(L.zeros(1, 2, 3, 3), 2, padding=-1),
        r"padding should be non-negative",
    ),
    (
        "fold-channels",
        lambda L: L.nn.functional.fold(L.zeros(1, 7, 4), (3, 3), 2),
        r"divisible.*7",
    ),
    (
        "fold-blocks",
        lambda L: L.nn.functional.fold(L.zeros(1, 8, 5), (3, 3), 2),
        r"2 \* 2 = 4.*5",
    ),
    (
        "one-hot-too-small",
        lambda L: L.nn.functional.one_hot(L.tensor([0, 3]), 3),
        r"smaller than num_classes",
    ),
    (
        "one-hot-negative",
        lambda L: L.nn.functional.one_hot(L.tensor([-1, 0])),
        r"non-negative",
    ),
    (
        "one-hot-float",
        lambda L: L.nn.functional.one_hot(L.tensor([0.0, 1.0])),
        r"LongTensor",
    ),
]


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
