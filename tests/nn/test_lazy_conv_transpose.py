"""LazyConvTranspose1d / 2d / 3d against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import rand

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "name,shape", [("LazyConvTranspose1d", (2, 3, 4)), ("LazyConvTranspose1d", (3, 4)),
                   ("LazyConvTranspose2d", (2, 4, 3, 2)), ("LazyConvTranspose3d", (1, 4, 2, 2, 3))],
)  # fmt: skip
def test_lazy_conv_transpose_infers_in_channels_and_becomes_eager(name, shape):
    n = int(name[-2])
    channels = shape[1] if len(shape) == n + 2 else shape[0]
    kw = dict(stride=2, padding=1, output_padding=1, groups=2 if channels % 2 == 0 else 1)
    lazy = getattr(tinyattn.nn, name)(4, 3, **kw).to(tinyattn.float64)
    ref_lazy = getattr(torch.nn, name)(4, 3, **kw)
    assert repr(lazy) == repr(ref_lazy) and lazy.has_uninitialized_params()
    x = tinyattn.tensor(rand(*shape, seed=1))
    y = lazy(x)
    eager = name.replace("Lazy", "")
    assert type(lazy).__name__ == eager and lazy.in_channels == channels
    assert lazy.weight.dtype == tinyattn.float64
    ref = getattr(torch.nn, eager)(channels, 4, 3, **kw).double()
    assert repr(lazy) == repr(ref) and lazy.weight.shape == ref.weight.shape
    bound = 1 / np.sqrt(lazy.weight.shape[1] * 3**lazy._n)  # torch's fan_in of this weight
    assert np.abs(lazy.weight.detach().numpy()).max() <= bound
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in lazy.state_dict().items()})
    np.testing.assert_allclose(
        y.detach().numpy(), ref(torch.tensor(x.numpy())).detach().numpy(), atol=1e-12
    )


def test_lazy_conv_transpose_loads_state_dict_before_first_forward():
    src = tinyattn.nn.ConvTranspose2d(3, 2, 3)
    lazy = tinyattn.nn.LazyConvTranspose2d(2, 3)
    lazy.load_state_dict(src.state_dict())
    x = tinyattn.randn(1, 3, 4, 4)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), src(x).detach().numpy())
    assert lazy.in_channels == 3
    with pytest.raises(RuntimeError, match=r"size mismatch|\[in_channels, 5, 3, 3\]"):
        tinyattn.nn.LazyConvTranspose2d(5, 3).load_state_dict(src.state_dict())


def test_lazy_conv_transpose_bad_input():
    with pytest.raises(RuntimeError, match=r"3D \(unbatched\) or 4D \(batched\).*\[3, 4\]"):
        tinyattn.nn.LazyConvTranspose2d(2, 3)(tinyattn.zeros(3, 4))
    with pytest.raises(ValueError, match=r"in_channels \(3\) must be divisible by groups"):
        tinyattn.nn.LazyConvTranspose1d(2, 3, groups=2)(tinyattn.zeros(1, 3, 4))
