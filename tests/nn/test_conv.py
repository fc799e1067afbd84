"""conv1d / conv2d and Conv1d / Conv2d / LazyConv1d / LazyConv2d against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")

# (input shape, weight shape, stride, padding, dilation, groups, bias)
CASES_2D = [
    ((2, 2, 5, 4), (3, 2, 3, 2), 1, 0, 1, 1, True),
    ((1, 4, 6, 5), (4, 2, 3, 3), 2, 1, 1, 2, True),
    ((1, 2, 7, 6), (2, 1, 2, 3), (1, 2), (2, 0), (2, 1), 2, False),
    ((1, 2, 5, 5), (2, 2, 2, 3), 1, "same", 1, 1, True),
    ((2, 2, 5, 5), (1, 2, 3, 3), 1, "same", 2, 1, False),
    ((1, 3, 4, 4), (3, 3, 4, 4), 1, "valid", 1, 1, True),
    ((3, 5, 5), (2, 3, 3, 3), 1, 1, 1, 1, True),  # unbatched
]
CASES_1D = [
    ((2, 3, 7), (4, 3, 3), 1, 0, 1, 1, True),
    ((1, 4, 9), (2, 2, 2), 3, 2, 2, 2, False),
    ((2, 2, 6), (2, 2, 4), 1, "same", 1, 1, True),
    ((3, 8), (2, 3, 3), 2, 1, 1, 1, True),  # unbatched
]


def _conv_case(name, x_shape, w_shape, stride, padding, dilation, groups, bias):
    arrays = [rand(*x_shape, seed=1), rand(*w_shape, seed=2)]
    if bias:
        arrays.append(rand(w_shape[0], seed=3))

    def f(lib, x, w, b=None):
        fn = getattr(lib.nn.functional, name)
        return fn(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)

    check_op(f, *arrays)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("case", CASES_2D)
def test_conv2d_gradcheck_and_parity(case):
    _conv_case("conv2d", *case)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("case", CASES_1D)
def test_conv1d_gradcheck_and_parity(case):
    _conv_case("conv1d", *case)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv2d_module_parity(padding_mode, dtype):
    kw = dict(stride=(2, 1), padding=1, dilation=1, groups=2, padding_mode=padding_mode)
    t = torch.nn.Conv2d(4, 6, (3, 2), **kw)
    o = tinyattn.nn.Conv2d(4, 6, (3, 2), **kw)
    assert repr(o) == repr(t)
    module_parity(t, o, rand(2, 4, 5, 6, seed=4), dtype=dtype)


def test_conv1d_module_parity_and_init_bounds():
    t = torch.nn.Conv1d(3, 4, 3, padding="same", bias=False)
    o = tinyattn.nn.Conv1d(3, 4, 3, padding="same", bias=False)
    assert repr(o) == repr(t)
    assert [k for k, _ in o.named_parameters()] == ["weight"]
    module_parity(t, o, rand(2, 3, 7, seed=5))
    m = tinyattn.nn.Conv2d(3, 8, 3)  # U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = 27
    bound = 1 / np.sqrt(27)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert m.weight.detach().numpy().std() > bound / 3


@pytest.mark.parametrize("name,shape", [("LazyConv2d", (2, 3, 6, 5)), ("LazyConv1d", (3, 7))])
def test_lazy_conv_infers_in_channels_and_becomes_eager(name, shape):
    lazy = getattr(tinyattn.nn, name)(4, 3, padding=1).to(tinyattn.float64)
    assert lazy.has_uninitialized_params()
    x = tinyattn.tensor(rand(*shape, seed=6))
    y = lazy(x)
    eager = name.replace("Lazy", "")
    assert type(lazy).__name__ == eager and lazy.weight.dtype == tinyattn.float64
    assert lazy.in_channels == shape[-len(shape) + (1 if len(shape) == 4 else 0)]
    ref = getattr(torch.nn, eager)(lazy.in_channels, 4, 3, padding=1).double()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in lazy.state_dict().items()})
    np.testing.assert_allclose(y.detach().numpy(), ref(torch.tensor(x.numpy())).detach().numpy())


def test_lazy_conv_loads_state_dict_before_first_forward():
    src = tinyattn.nn.Conv2d(3, 2, 3)
    lazy = tinyattn.nn.LazyConv2d(2, 3)
    lazy.load_state_dict(src.state_dict())
    x = tinyattn.randn(1, 3, 4, 4)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), src(x).detach().numpy())
    with pytest.raises(RuntimeError, match="size mismatch"):
        tinyattn.nn.LazyConv2d(2, 5).load_state_dict(src.state_dict())


def test_conv_bad_input():
    F = tinyattn.nn.functional
    x, w = tinyattn.zeros(1, 4, 5, 5), tinyattn.zeros(2, 2, 3, 3)
    with pytest.raises(RuntimeError, match="4 channels|channels"):
        F.conv2d(x, w)  # groups=1 needs 2 input channels
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv2d(torch.zeros(1, 4, 5, 5), torch.zeros(2, 2, 3, 3))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, w, groups=2, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding string"):
        F.conv2d(x, w, groups=2, padding="full")
    with pytest.raises(RuntimeError, match="smaller than"):
        F.conv2d(tinyattn.zeros(1, 2, 2, 2), w)
    with pytest.raises(RuntimeError, match="4D weight"):
        F.conv2d(x, tinyattn.zeros(2, 4, 3))
    with pytest.raises(RuntimeError, match="dtype"):
        F.conv2d(x.double(), w, groups=2)
    with pytest.raises(RuntimeError, match="bias"):
        F.conv2d(x, w, tinyattn.zeros(3), groups=2)
    with pytest.raises(RuntimeError, match="floating point"):
        F.conv2d(x.long(), w.long(), groups=2)
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv2d(torch.zeros(1, 4, 5, 5).long(), torch.zeros(2, 2, 3, 3).long())
    with pytest.raises(ValueError, match="divisible by groups"):
        tinyattn.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError):
        torch.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        tinyattn.nn.Conv2d(2, 2, 3, padding_mode="wrap")
    with pytest.raises(ValueError, match="strided"):
        tinyattn.nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError):
        torch.nn.Conv1d(2, 2, 3, stride=2, padding="same")
