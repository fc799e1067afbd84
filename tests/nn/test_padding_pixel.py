"""Padding modules, pixel_shuffle / pixel_unshuffle / channel_shuffle and their modules:
gradchecks, torch parity, reprs, bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, torch

import tinyattn
from tests.nn._module_parity import module_parity

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def F(lib):
    return lib.nn.functional


@pytest.mark.parametrize(
    "shape,r", [((1, 8, 2, 3), 2), ((2, 9, 1, 2), 3), ((4, 2, 2), 1), ((2, 1, 4, 2, 1), 2)]
)
def test_pixel_shuffle(shape, r):
    check_op(lambda T, x: F(T).pixel_shuffle(x, r), _arr(shape, 1))


@pytest.mark.parametrize("shape,r", [((1, 2, 4, 6), 2), ((3, 3, 3), 3), ((2, 1, 1, 2, 2), 2)])
def test_pixel_unshuffle(shape, r):
    check_op(lambda T, x: F(T).pixel_unshuffle(x, r), _arr(shape, 2))


@pytest.mark.parametrize("shape,g", [((1, 6, 2), 3), ((2, 4, 2, 2), 2), ((1, 6, 1, 1, 2), 6)])
def test_channel_shuffle(shape, g):
    check_op(lambda T, x: F(T).channel_shuffle(x, g), _arr(shape, 3))


PADS = [
    ("ZeroPad1d", (2,), (2, 3, 4)),
    ("ZeroPad1d", ((1, -1),), (3, 4)),
    ("ZeroPad2d", ((1, 0, 2, 1),), (1, 2, 3, 3)),
    ("ConstantPad1d", ((1, 2), 1.5), (2, 3, 4)),
    ("ConstantPad2d", (1, -0.5), (2, 3, 3)),
    ("ConstantPad3d", ((1, 0, 0, 1, 1, 1), 2.0), (1, 1, 2, 2, 2)),
    ("ReflectionPad1d", ((2, 1),), (2, 3, 4)),
    ("ReflectionPad2d", (1,), (3, 3, 4)),
    ("ZeroPad3d", ((1, 0, 2, 1, 0, 1),), (1, 2, 2, 3, 3)),
    ("ReflectionPad3d", (1,), (1, 2, 2, 3, 3)),
    ("ReflectionPad3d", ((1, 0, 2, 1, 0, 1),), (2, 3, 3, 3)),
    ("ReplicationPad3d", ((2, 0, 1, 1, 0, 3),), (1, 1, 2, 2, 3)),
    ("CircularPad3d", ((1, 2, 0, 1, 1, 0),), (1, 2, 2, 3, 3)),
    ("ReplicationPad1d", ((3, 1),), (2, 4)),
    ("ReplicationPad2d", ((1, 2, 0, 3),), (1, 2, 2, 3)),
    ("CircularPad1d", (2,), (1, 2, 3)),
    ("CircularPad2d", ((1, 2, 2, 1),), (1, 1, 3, 3)),
]


@needs_torch
@pytest.mark.parametrize("name,args,shape", PADS)
def test_padding_modules(name, args, shape):
    ours, theirs = getattr(tinyattn.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    assert ours.padding == theirs.padding
    for dtype in (np.float64, np.float32):
        module_parity(theirs, ours, _arr(shape, 4), dtype=dtype)
    check_op(lambda T, x: getattr(T.nn, name)(*args)(x), _arr(shape, 5))


@needs_torch
@pytest.mark.parametrize(
    "name,arg,shape",
    [
        ("PixelShuffle", 2, (2, 8, 2, 3)),
        ("PixelUnshuffle", 2, (2, 2, 4, 2)),
        ("ChannelShuffle", 2, (2, 4, 3)),
    ],
)
def test_pixel_modules(name, arg, shape):
    ours, theirs = getattr(tinyattn.nn, name)(arg), getattr(torch.nn, name)(arg)
    assert repr(ours) == repr(theirs)
    module_parity(theirs, ours, _arr(shape, 6))


def test_pixel_shuffle_round_trip():
    x = tinyattn.tensor(_arr((2, 8, 3, 2), 7))
    back = F(tinyattn).pixel_unshuffle(F(tinyattn).pixel_shuffle(x, 2), 2)
    np.testing.assert_array_equal(back.numpy(), x.numpy())


BAD = [
    ("ps-channels", lambda L: F(L).pixel_shuffle(L.ones(1, 3, 2, 2), 2), r"divisible.*4.*\[1, 3, 2, 2\]"),
    ("ps-rank", lambda L: F(L).pixel_shuffle(L.ones(4, 2), 2), r"at least 3 dims.*\[4, 2\]"),
    ("pu-size", lambda L: F(L).pixel_unshuffle(L.ones(1, 1, 3, 4), 2), r"divisible.*downscale_factor=2.*\[1, 1, 3, 4\]"),
    ("cs-groups", lambda L: F(L).channel_shuffle(L.ones(1, 3, 2, 2), 2), r"3 channels.*groups=2"),
    ("reflect-too-big", lambda L: L.nn.ReflectionPad1d(3)(L.ones(1, 2, 3)), r"padding.*\(3, 3\).*\[1, 2, 3\]"),
    ("pad-arity", lambda L: L.nn.ZeroPad2d((1, 2, 3))(L.ones(1, 2, 3)), r"padding must be an int or 4 ints"),
]  # fmt: skip


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
