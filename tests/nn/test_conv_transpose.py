"""conv_transpose1d / conv_transpose2d and ConvTranspose1d / 2d: gradchecks, torch parity,
output_size, init, reprs, bad input."""

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


CASES_2D = [
    # x shape, weight shape, kwargs
    ((1, 2, 3, 2), (2, 2, 2, 2), {}),
    ((2, 2, 2, 3), (2, 1, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    ((1, 4, 2, 2), (4, 1, 2, 3), dict(stride=(2, 1), groups=2, dilation=2, padding=(1, 0))),
    ((1, 2, 2, 2), (2, 2, 2, 2), dict(stride=2, dilation=3, output_padding=2)),
    ((2, 3, 3), (2, 2, 2, 2), dict(stride=2)),  # unbatched
]


@pytest.mark.parametrize("xs,ws,kw", CASES_2D)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_transpose2d(xs, ws, kw, with_bias):
    out_ch = ws[1] * kw.get("groups", 1)
    arrays = [_arr(xs, 1), _arr(ws, 2)] + ([_arr((out_ch,), 3)] if with_bias else [])
    check_op(lambda T, x, w, *b: F(T).conv_transpose2d(x, w, *b, **kw), *arrays)


@pytest.mark.parametrize(
    "xs,ws,kw",
    [
        ((1, 2, 3), (2, 3, 2), {}),
        ((2, 2, 3), (2, 1, 3), dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)),
        ((2, 4), (2, 2, 2), dict(stride=3, dilation=2, padding=1)),  # unbatched
    ],
)
def test_conv_transpose1d(xs, ws, kw):
    out_ch = ws[1] * kw.get("groups", 1)
    check_op(
        lambda T, x, w, b: F(T).conv_transpose1d(x, w, b, **kw),
        _arr(xs, 4),
        _arr(ws, 5),
        _arr((out_ch,), 6),
    )


@needs_torch
def test_conv_transpose_is_the_adjoint_of_conv():
    x, w = (
        tinyattn.tensor(_arr((1, 3, 5, 4), 7), requires_grad=True),
        tinyattn.tensor(_arr((2, 3, 3, 2), 8)),
    )
    y = F(tinyattn).conv2d(x, w, stride=2, padding=1)
    g = tinyattn.tensor(_arr(tuple(y.shape), 9))
    (y * g).sum().backward()
    back = F(tinyattn).conv_transpose2d(g, w, stride=2, padding=1, output_padding=0)
    np.testing.assert_allclose(back.numpy(), x.grad.numpy(), atol=1e-12)


MODULES = [
    ("ConvTranspose1d", (2, 4, 3), {}, (2, 2, 5)),
    ("ConvTranspose1d", (4, 2, 2), dict(stride=2, padding=1, output_padding=1, groups=2, bias=False), (4, 3)),
    ("ConvTranspose2d", (2, 4, 3), dict(stride=2, padding=1, output_padding=1), (2, 2, 3, 3)),
    ("ConvTranspose2d", (2, 4, (2, 3)), dict(stride=(2, 1), dilation=2, groups=2), (2, 3, 2)),
]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("name,args,kw,shape", MODULES)
def test_conv_transpose_modules(name, args, kw, shape):
    ours, theirs = getattr(tinyattn.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape)
    for attr in ("stride", "padding", "output_padding", "dilation", "groups", "transposed"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr  # (transposed was missing)
    for dtype in (np.float64, np.float32):
        module_parity(theirs, ours, _arr(shape, 10), dtype=dtype)


@needs_torch
def test_conv_transpose_output_size_and_init():
    ours, theirs = (
        tinyattn.nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1),
        torch.nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1),
    )
    x = _arr((1, 2, 3, 4), 11)
    for size in ([8, 11], [1, 3, 9, 12], (7, 10)):
        out = module_parity(theirs, ours, x, output_size=size)[0]
        assert tuple(out.shape[-2:]) == tuple(size[-2:])
    with pytest.raises(ValueError, match="valid sizes range from 7 to 9"):
        ours(tinyattn.tensor(x), output_size=[10, 10])
    big = tinyattn.nn.ConvTranspose2d(4, 8, 3, groups=2)
    bound = 1 / np.sqrt(4 * 9)  # fan_in = weight.size(1) * kh * kw = out/groups * 9
    assert (
        np.abs(big.weight.detach().numpy()).max() <= bound
        and np.abs(big.bias.detach().numpy()).max() <= bound
    )
    assert np.abs(big.weight.detach().numpy()).max() > bound / 2


BAD = [
    ("ct-channels", lambda L: F(L).conv_transpose2d(L.ones(1, 3, 2, 2), L.ones(2, 1, 2, 2)), r"\[2, 1, 2, 2\].*\[1, 3, 2, 2\].*3 channels"),
    ("ct-rank", lambda L: F(L).conv_transpose2d(L.ones(2, 2), L.ones(2, 1, 2, 2)), r"3D.*4D.*\[2, 2\]"),
    ("ct-weight-rank", lambda L: F(L).conv_transpose1d(L.ones(1, 2, 3), L.ones(2, 1)), r"3D weight.*\[2, 1\]"),
    ("ct-output-padding", lambda L: F(L).conv_transpose2d(L.ones(1, 2, 2, 2), L.ones(2, 1, 2, 2), stride=2, output_padding=2), r"output_padding.*smaller"),
    ("ct-groups", lambda L: F(L).conv_transpose2d(L.ones(1, 3, 2, 2), L.ones(3, 1, 2, 2), groups=2), r"groups=2"),
    ("ct-bias", lambda L: F(L).conv_transpose1d(L.ones(1, 2, 3), L.ones(2, 1, 2), L.ones(3)), r"bias.*\[1\].*\[3\]"),
    ("ct-module-groups", lambda L: L.nn.ConvTranspose2d(3, 4, 2, groups=2), r"divisible by groups"),
    ("ct-module-padding-mode", lambda L: L.nn.ConvTranspose1d(2, 2, 2, padding_mode="reflect"), r"zeros.*padding_mode"),
]  # fmt: skip


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
