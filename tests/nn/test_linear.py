"""Linear / LazyLinear: torch parity, init distribution, repr, state_dict, errors."""

import math

import numpy as np
import pytest
from _parity import module_parity
from harness import rand

import tinyattn
import tinyattn.nn as nn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("train", [True, False])
def test_linear_matches_torch(dtype, bias, shape, train):
    tm = torch.nn.Linear(4, 5, bias=bias)
    om = nn.Linear(4, 5, bias=bias)
    module_parity(tm, om, rand(*shape, seed=1), dtype=dtype, train=train)


def test_linear_parameters_and_repr_like_torch():
    om, tm = nn.Linear(3, 4), torch.nn.Linear(3, 4)
    assert repr(om) == repr(tm) == "Linear(in_features=3, out_features=4, bias=True)"
    assert repr(nn.Linear(3, 4, bias=False)) == repr(torch.nn.Linear(3, 4, bias=False))
    assert [(k, tuple(v.shape)) for k, v in om.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in tm.state_dict().items()
    ]
    assert om.weight.dtype == tinyattn.float32 and om.weight.requires_grad
    assert nn.Linear(3, 4, dtype=tinyattn.float64).weight.dtype == tinyattn.float64
    assert nn.Linear(3, 4, bias=False).bias is None


def test_linear_default_init_distribution():
    fan_in = 400
    layer = nn.Linear(fan_in, 500)
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) == U(-1/sqrt(fan_in), ...)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound


def test_linear_errors_name_layer_and_shapes():
    layer = nn.Linear(4, 3)
    with pytest.raises(
        RuntimeError,
        match=r"Linear: input has last dimension 5 but in_features=4 \(input shape \[2, 5\]\)",
    ):
        layer(tinyattn.randn(2, 5))
    with pytest.raises(RuntimeError, match="dtype"):
        layer(tinyattn.randn(2, 4, dtype=tinyattn.float64))


def test_lazy_linear_infers_in_features_and_matches_torch_after_load():
    lazy = nn.LazyLinear(5)
    assert isinstance(lazy.weight, nn.UninitializedParameter)
    out = lazy(tinyattn.randn(2, 7))
    assert out.shape == (2, 5) and type(lazy) is nn.Linear and lazy.in_features == 7
    assert lazy.weight.shape == (5, 7) and type(lazy.weight) is nn.Parameter
    bound = 1 / math.sqrt(7)
    assert np.abs(lazy.weight.detach().numpy()).max() <= bound
    assert np.abs(lazy.bias.detach().numpy()).max() <= bound
    module_parity(torch.nn.Linear(7, 5), lazy, rand(3, 7, seed=2))


def test_lazy_linear_loads_state_dict_before_first_call():
    tm = torch.nn.Linear(6, 2)
    lazy = nn.LazyLinear(2)
    lazy.load_state_dict(tm.state_dict())
    x = rand(4, 6, seed=3).astype(np.float32)
    np.testing.assert_allclose(  # float32 sums in another order: atol for outputs near 0
        lazy(tinyattn.tensor(x)).detach().numpy(),
        tm(torch.tensor(x)).detach().numpy(),
        rtol=1e-6,
        atol=1e-6,
    )
    assert type(lazy) is nn.Linear and lazy.in_features == 6


def test_lazy_linear_without_bias_and_params_in_optimizer_order():
    lazy = nn.LazyLinear(3, bias=False)
    lazy(tinyattn.randn(2, 4))
    assert lazy.bias is None and [n for n, _ in lazy.named_parameters()] == ["weight"]
