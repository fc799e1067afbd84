"""conv3d and Conv3d / LazyConv3d against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")

# (input shape, weight shape, stride, padding, dilation, groups, bias)
CASES_3D = [
    ((2, 2, 3, 4, 3), (2, 2, 2, 3, 2), 1, 0, 1, 1, True),
    ((1, 2, 4, 3, 4), (2, 1, 2, 2, 3), (2, 1, 2), (1, 0, 1), (1, 1, 1), 2, False),
    ((1, 1, 5, 3, 3), (1, 1, 2, 2, 2), 1, 0, (2, 1, 1), 1, True),
    ((1, 2, 3, 3, 3), (1, 2, 2, 3, 2), 1, "same", 1, 1, True),
    ((2, 3, 3, 3), (2, 2, 2, 2, 2), 1, 1, 1, 1, True),  # unbatched
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("case", CASES_3D)
def test_conv3d_gradcheck_and_parity(case):
    x_shape, w_shape, stride, padding, dilation, groups, bias = case
    arrays = [rand(*x_shape, seed=1), rand(*w_shape, seed=2)]
    if bias:
        arrays.append(rand(w_shape[0], seed=3))

    def f(lib, x, w, b=None):
        return lib.nn.functional.conv3d(
            x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups
        )

    check_op(f, *arrays)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv3d_module_parity(padding_mode, dtype):
    kw = dict(stride=(2, 1, 1), padding=1, groups=2, padding_mode=padding_mode)
    t = torch.nn.Conv3d(4, 2, (3, 2, 2), **kw)
    o = tinyattn.nn.Conv3d(4, 2, (3, 2, 2), **kw)
    assert repr(o) == repr(t)
    assert list(o.state_dict()) == list(t.state_dict()) == ["weight", "bias"]
    assert o.weight.shape == t.weight.shape
    module_parity(t, o, rand(2, 4, 4, 3, 3, seed=4), dtype=dtype)


def test_conv3d_init_bounds():
    m = tinyattn.nn.Conv3d(2, 40, (3, 2, 2))  # U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in 24
    bound = 1 / np.sqrt(24)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert w.shape == (40, 2, 3, 2, 2) and b.shape == (40,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert w.std() > bound / 3


def test_lazy_conv3d_infers_in_channels():
    lazy = tinyattn.nn.LazyConv3d(3, 2, padding=1).to(tinyattn.float64)
    x = tinyattn.tensor(rand(1, 2, 3, 3, 2, seed=6))
    y = lazy(x)
    assert type(lazy).__name__ == "Conv3d" and lazy.in_channels == 2
    ref = torch.nn.Conv3d(2, 3, 2, padding=1).double()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in lazy.state_dict().items()})
    np.testing.assert_allclose(y.detach().numpy(), ref(torch.tensor(x.numpy())).detach().numpy())


def test_conv3d_bad_input():
    F = tinyattn.nn.functional
    x, w = tinyattn.zeros(1, 4, 3, 3, 3), tinyattn.zeros(2, 2, 2, 2, 2)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 4, 3, 3, 3\] to have 2 channels"):
        F.conv3d(x, w)
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv3d(torch.zeros(1, 4, 3, 3, 3), torch.zeros(2, 2, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"smaller than the dilated kernel \(4, 4, 4\)"):
        F.conv3d(x, w, groups=2, dilation=3)
    with pytest.raises(RuntimeError, match=r"5D weight.*\[2, 2, 2, 2\]"):
        F.conv3d(x, tinyattn.zeros(2, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"4D \(unbatched\) or 5D \(batched\).*\[4, 3, 3\]"):
        F.conv3d(tinyattn.zeros(4, 3, 3), w)
    with pytest.raises(ValueError, match="'stride' must be an int or 3 ints"):
        F.conv3d(x, w, groups=2, stride=(1, 2))


@pytest.mark.parametrize(
    "name,x_shape,w_shape",
    [
        ("conv1d", (0, 2, 3), (2, 2, 2)),
        ("conv2d", (0, 2, 3, 3), (2, 2, 2, 2)),
        ("conv3d", (0, 2, 3, 3, 3), (2, 2, 2, 2, 2)),
        ("conv_transpose3d", (0, 2, 3, 3, 3), (2, 2, 2, 2, 2)),
    ],
)
def test_empty_batch_gives_empty_output_and_gradients(name, x_shape, w_shape):
    shapes = []
    for lib in (tinyattn, torch):
        x = lib.zeros(*x_shape, requires_grad=True)
        w = lib.ones(*w_shape, requires_grad=True)
        out = getattr(lib.nn.functional, name)(x, w)
        out.sum().backward()
        shapes.append((tuple(out.shape), tuple(x.grad.shape)))
        assert not w.grad.numpy().any()
    assert shapes[0] == shapes[1]
