"""conv_transpose3d and ConvTranspose3d against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")

CASES_3D = [
    # x shape, weight shape, kwargs
    ((1, 2, 2, 2, 3), (2, 2, 2, 2, 2), {}),
    ((1, 2, 2, 2, 2), (2, 1, 2, 2, 2), dict(stride=2, padding=1, output_padding=1)),
    ((1, 4, 2, 2, 1), (4, 1, 2, 1, 2), dict(stride=(2, 1, 2), groups=2, dilation=(2, 1, 1))),
    ((1, 1, 3, 2, 2), (1, 1, 3, 1, 1), dict(padding=(1, 0, 0), dilation=(2, 1, 1))),
    ((2, 2, 2, 2), (2, 1, 2, 2, 2), dict(stride=(3, 1, 1), output_padding=(2, 0, 0))),  # unbatched
]


@pytest.mark.parametrize("xs,ws,kw", CASES_3D)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_transpose3d_gradcheck_and_parity(xs, ws, kw, with_bias):
    out_ch = ws[1] * kw.get("groups", 1)
    arrays = [rand(*xs, seed=1), rand(*ws, seed=2)] + ([rand(out_ch, seed=3)] if with_bias else [])

    def f(lib, x, w, *b):
        return lib.nn.functional.conv_transpose3d(x, w, *b, **kw)

    check_op(f, *arrays)


def test_conv_transpose3d_is_the_adjoint_of_conv3d():
    F = tinyattn.nn.functional
    kw = dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)
    x = tinyattn.tensor(rand(1, 4, 5, 5, 5, seed=4))
    w = tinyattn.tensor(rand(2, 2, 3, 2, 2, seed=5))
    y = F.conv3d(x, w, **kw)
    g = tinyattn.tensor(rand(*y.shape, seed=6))
    sizes = zip(x.shape[2:], y.shape[2:], kw["stride"], kw["padding"], kw["dilation"], w.shape[2:])
    output_padding = [xs - ((ys - 1) * s - 2 * p + d * (k - 1) + 1) for xs, ys, s, p, d, k in sizes]
    back = F.conv_transpose3d(g, w, output_padding=output_padding, **kw)
    assert back.shape == x.shape
    np.testing.assert_allclose((y * g).sum().item(), (x * back).sum().item(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv_transpose3d_module_parity(dtype):
    kw = dict(stride=(2, 1, 1), padding=(1, 0, 0), output_padding=(1, 0, 0), groups=2)
    t = torch.nn.ConvTranspose3d(4, 2, (3, 2, 2), **kw)
    o = tinyattn.nn.ConvTranspose3d(4, 2, (3, 2, 2), **kw)
    assert repr(o) == repr(t)
    assert list(o.state_dict()) == list(t.state_dict()) == ["weight", "bias"]
    assert o.weight.shape == t.weight.shape == (4, 1, 3, 2, 2)
    module_parity(t, o, rand(1, 4, 2, 3, 2, seed=7), dtype=dtype)


def test_conv_transpose3d_output_size_and_init():
    t = torch.nn.ConvTranspose3d(2, 3, 3, stride=2).double()
    o = tinyattn.nn.ConvTranspose3d(2, 3, 3, stride=2).double()
    bound = 1 / np.sqrt(3 * 27)  # torch's fan_in of this weight: weight.size(1) * prod(kernel)
    assert np.abs(o.weight.detach().numpy()).max() <= bound
    assert np.abs(o.bias.detach().numpy()).max() <= bound
    o.load_state_dict({k: tinyattn.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = rand(1, 2, 2, 2, 2, seed=8)
    out_o = o(tinyattn.tensor(x), output_size=(6, 5, 6))
    out_t = t(torch.tensor(x), output_size=(6, 5, 6))
    assert out_o.shape == out_t.shape == (1, 3, 6, 5, 6)
    np.testing.assert_allclose(out_o.detach().numpy(), out_t.detach().numpy(), atol=1e-12)


def test_conv_transpose3d_bad_input():
    F = tinyattn.nn.functional
    x, w = tinyattn.zeros(1, 4, 2, 2, 2), tinyattn.zeros(2, 2, 2, 2, 2)
    with pytest.raises(RuntimeError, match=r"expected input .* to have 2 channels"):
        F.conv_transpose3d(x, w)
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv_transpose3d(torch.zeros(1, 4, 2, 2, 2), torch.zeros(2, 2, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"output size \(0, 2, 2\) is not positive"):
        F.conv_transpose3d(tinyattn.zeros(1, 2, 1, 1, 1), w, padding=(1, 0, 0))
    with pytest.raises(RuntimeError, match=r"5D weight.*\[2, 2, 2, 2\]"):
        F.conv_transpose3d(x, tinyattn.zeros(2, 2, 2, 2))
    with pytest.raises(RuntimeError, match="output_padding must be smaller"):
        F.conv_transpose3d(tinyattn.zeros(1, 2, 2, 2, 2), w, output_padding=1)
