"""group_norm, instance_norm, local_response_norm and their modules: gradchecks, torch
parity, running stats, reprs, bad input."""

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


@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((1, 6, 2, 3), 3), ((2, 3), 1)])
def test_group_norm(shape, groups):
    c = shape[1]
    check_op(lambda T, x: F(T).group_norm(x, groups), _arr(shape, 1))
    check_op(
        lambda T, x, w, b: F(T).group_norm(x, groups, w, b, eps=1e-3),
        _arr(shape, 2),
        _arr((c,), 3),
        _arr((c,), 4),
    )


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 2, 3, 2)])
def test_instance_norm(shape):
    c = shape[1]
    check_op(lambda T, x: F(T).instance_norm(x), _arr(shape, 5))
    check_op(
        lambda T, x, w, b: F(T).instance_norm(x, weight=w, bias=b),
        _arr(shape, 6),
        _arr((c,), 7),
        _arr((c,), 8),
    )
    rm, rv = _arr((c,), 9), _arr((c,), 10) + 2
    check_op(
        lambda T, x: F(T).instance_norm(x, T.tensor(rm), T.tensor(rv), use_input_stats=False),
        _arr(shape, 11),
    )


@needs_torch
def test_instance_norm_running_stats_as_torch():
    x = _arr((3, 2, 5), 12)
    ours = [tinyattn.zeros(2, dtype=tinyattn.float64), tinyattn.ones(2, dtype=tinyattn.float64)]
    theirs = [torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)]
    F(tinyattn).instance_norm(tinyattn.tensor(x), *ours, momentum=0.3)
    F(torch).instance_norm(torch.tensor(x), *theirs, momentum=0.3)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)


@pytest.mark.parametrize("shape,size", [((2, 5, 3), 3), ((1, 4, 2, 3), 2), ((1, 3, 2, 2, 2), 5)])
def test_local_response_norm(shape, size):
    check_op(
        lambda T, x: F(T).local_response_norm(x, size, alpha=0.5, beta=0.6, k=2.0), _arr(shape, 13)
    )


# -- modules ---------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize(
    "args,kw", [((2, 4), {}), ((1, 4), dict(affine=False)), ((4, 4), dict(bias=False, eps=1e-3))]
)
def test_group_norm_module(args, kw):
    ours, theirs = tinyattn.nn.GroupNorm(*args, **kw), torch.nn.GroupNorm(*args, **kw)
    assert repr(ours) == repr(theirs)
    if ours.weight is not None:
        theirs.weight.data.uniform_(0.5, 1.5)
        if theirs.bias is not None:
            theirs.bias.data.uniform_(-0.5, 0.5)
    for dtype in (np.float64, np.float32):
        module_parity(theirs, ours, _arr((2, 4, 3, 2), 14), dtype=dtype)


@needs_torch
@pytest.mark.parametrize(
    "name,shape",
    [
        ("InstanceNorm1d", (2, 3, 5)),
        ("InstanceNorm2d", (3, 4, 2)),
        ("InstanceNorm2d", (2, 3, 4, 2)),
    ],
)
@pytest.mark.parametrize(
    "affine,track", [(False, False), (True, True), (True, False), (False, True)]
)
def test_instance_norm_modules(name, shape, affine, track):
    kw = dict(affine=affine, track_running_stats=track, momentum=0.2)
    ours, theirs = getattr(tinyattn.nn, name)(3, **kw), getattr(torch.nn, name)(3, **kw)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if affine:
        theirs.weight.data.uniform_(0.5, 1.5)
        theirs.bias.data.uniform_(-0.5, 0.5)
    module_parity(theirs, ours, _arr(shape, 15), train=True)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12)
    module_parity(theirs, ours, _arr(shape, 16), train=False)


@needs_torch
def test_local_response_norm_module():
    ours, theirs = (
        tinyattn.nn.LocalResponseNorm(3, 0.1, 0.5, 2.0),
        torch.nn.LocalResponseNorm(3, 0.1, 0.5, 2.0),
    )
    assert repr(ours) == repr(theirs)
    module_parity(theirs, ours, _arr((2, 4, 3, 3), 17))


def test_instance_norm_warns_on_channel_mismatch_without_affine():
    with pytest.warns(UserWarning, match="num_features"):
        tinyattn.nn.InstanceNorm1d(3)(tinyattn.ones(2, 4, 5))


# -- bad input -------------------------------------------------------------------------------

BAD = [
    ("gn-groups", lambda L: F(L).group_norm(L.ones(2, 6, 3), 4), r"num_groups=4.*\[2, 6, 3\]"),
    ("gn-weight", lambda L: F(L).group_norm(L.ones(2, 6, 3), 3, L.ones(5)), r"weight.*\[6\].*\[5\]"),
    ("gn-module-divide", lambda L: L.nn.GroupNorm(4, 6), r"divisible"),
    ("in-rank", lambda L: F(L).instance_norm(L.ones(2, 6)), r"at least 3 dims.*\[2, 6\]"),
    ("in-module-affine-channels", lambda L: L.nn.InstanceNorm1d(3, affine=True)(L.ones(2, 4, 5)), r"num_features \(3\).*4"),
    ("in-running", lambda L: F(L).instance_norm(L.ones(2, 3, 4), L.zeros(2), L.ones(2)), r"running_mean.*\[3\].*\[2\]"),
    ("lrn-rank", lambda L: F(L).local_response_norm(L.ones(2, 3), 2), r"at least 3 dims.*\[2, 3\]"),
]  # fmt: skip


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
