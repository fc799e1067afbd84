"""interpolate's 'bicubic' and 'area' modes, Upsampling{Nearest,Bilinear}2d and the deprecated
upsample* names: gradchecks, torch parity, warnings, reprs, bad input."""

import warnings

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
    "kw",
    [
        dict(size=(5, 3)),
        dict(scale_factor=2.5),
        dict(size=(2, 6), align_corners=True),
        dict(scale_factor=(0.5, 1.7)),
        dict(scale_factor=1.5, align_corners=True),
        dict(scale_factor=1.5, recompute_scale_factor=True),
    ],
)
def test_bicubic(kw):
    check_op(lambda T, x: F(T).interpolate(x, mode="bicubic", **kw), _arr((1, 2, 3, 4), 1))


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((1, 2, 5), dict(size=3)),
        ((1, 1, 5, 4), dict(size=(2, 7))),
        ((1, 1, 4, 6), dict(scale_factor=0.5)),
        ((1, 1, 2, 3, 4), dict(size=(1, 2, 3))),
    ],
)
def test_area(shape, kw):
    check_op(lambda T, x: F(T).interpolate(x, mode="area", **kw), _arr(shape, 2))


@needs_torch
@pytest.mark.parametrize("name", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_deprecated_upsample_names_warn_and_match(name):
    x = _arr((1, 2, 3, 3), 3)
    for lib in (tinyattn, torch):
        with pytest.warns(UserWarning, match=f"{name}` is deprecated"):
            getattr(F(lib), name)(lib.tensor(x), scale_factor=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(lambda T, x: getattr(F(T), name)(x, size=(4, 5)), x)


@needs_torch
@pytest.mark.parametrize(
    "name,kw",
    [
        ("UpsamplingNearest2d", dict(scale_factor=2)),
        ("UpsamplingBilinear2d", dict(size=(4, 5))),
        ("UpsamplingBilinear2d", dict(scale_factor=1.5)),
        ("Upsample", dict(scale_factor=(2, 3), mode="bicubic")),
        ("Upsample", dict(size=2, mode="area")),
    ],
)
def test_upsampling_modules(name, kw):
    ours, theirs = getattr(tinyattn.nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert repr(ours) == repr(theirs)
    module_parity(theirs, ours, _arr((2, 2, 3, 4), 4))


BAD = [
    ("bicubic-rank", lambda L: F(L).interpolate(L.ones(1, 2, 3), size=4, mode="bicubic"), r"bicubic.*4D.*3D.*\[1, 2, 3\]"),
    ("area-align", lambda L: F(L).interpolate(L.ones(1, 2, 3), size=4, mode="area", align_corners=True), r"align_corners"),
    ("bad-mode", lambda L: F(L).interpolate(L.ones(1, 2, 3), size=4, mode="cubic"), r"mode 'cubic'"),
    ("bicubic-both", lambda L: F(L).interpolate(L.ones(1, 2, 3, 3), size=4, scale_factor=2, mode="bicubic"), r"exactly one of size or scale_factor"),
]  # fmt: skip


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
