"""nn.utils: parameters_to_vector / vector_to_parameters, skip_init, BatchNorm fusion (torch parity)."""

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
from tinyattn.nn.utils import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
    parameters_to_vector,
    skip_init,
    vector_to_parameters,
)


def _model():
    tinyattn.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2, bias=False)).double()


def test_parameters_to_vector_order_values_and_gradient():
    model = _model()
    params = list(model.parameters())
    vec = parameters_to_vector(model.parameters())
    assert tuple(vec.shape) == (12 + 4 + 8,)
    expected = np.concatenate([p.detach().numpy().ravel() for p in params])
    np.testing.assert_array_equal(vec.detach().numpy(), expected)
    weights = tinyattn.arange(24, dtype=tinyattn.float64)
    (vec * weights).sum().backward()
    np.testing.assert_array_equal(
        np.concatenate([p.grad.numpy().ravel() for p in params]), np.arange(24.0)
    )


def test_vector_to_parameters_round_trip():
    model = _model()
    new = tinyattn.arange(24, dtype=tinyattn.float64) / 10
    vector_to_parameters(new, model.parameters())
    np.testing.assert_array_equal(
        model[0].weight.detach().numpy(), np.arange(12).reshape(4, 3) / 10
    )
    np.testing.assert_array_equal(
        model[2].weight.detach().numpy(), np.arange(16, 24).reshape(2, 4) / 10
    )
    assert model[0].weight.requires_grad and model[0].weight.grad_fn is None
    np.testing.assert_array_equal(
        parameters_to_vector(model.parameters()).detach().numpy(), new.numpy()
    )


def test_vector_to_parameters_errors():
    model = _model()
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: numpy.ndarray"):
        vector_to_parameters(np.zeros(24), model.parameters())
    with pytest.raises(RuntimeError, match="vec has 10 elements"):
        vector_to_parameters(tinyattn.zeros(10, dtype=tinyattn.float64), model.parameters())


def test_parameters_to_vector_matches_torch():
    torch = pytest.importorskip("torch", reason="torch parity")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).double()
    ours = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)).double()
    ours.load_state_dict({k: tinyattn.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    np.testing.assert_array_equal(
        parameters_to_vector(ours.parameters()).detach().numpy(),
        torch.nn.utils.parameters_to_vector(tm.parameters()).detach().numpy(),
    )


def test_skip_init_draws_nothing_and_checks_its_argument():
    tinyattn.manual_seed(5)
    expected_next = tinyattn.rand(3)
    tinyattn.manual_seed(5)
    m = skip_init(nn.Linear, 5, 2, bias=True)
    assert isinstance(m, nn.Linear) and tuple(m.weight.shape) == (2, 5) and m.weight.requires_grad
    np.testing.assert_array_equal(
        tinyattn.rand(3).numpy(), expected_next.numpy()
    )  # no RNG consumed
    m2 = skip_init(nn.Linear, in_features=6, out_features=1)
    assert tuple(m2.weight.shape) == (1, 6)
    tinyattn.manual_seed(5)  # initialisers work again after skip_init
    assert not np.array_equal(nn.Linear(5, 2).weight.detach().numpy(), np.zeros((2, 5)))
    with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
        skip_init(int)

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(
        RuntimeError, match="Module must support a 'device' arg to skip initialization"
    ):
        skip_init(NoDevice, 3)


def _load(ours, theirs):
    ours.load_state_dict(
        {k: tinyattn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )


def _randomise_bn(torch, bn):
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        if bn.weight is not None:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)


CONV_CASES = [
    ("Conv1d", "BatchNorm1d", (2, 3, 7), dict(in_channels=3, out_channels=4, kernel_size=3), False),
    (
        "Conv2d",
        "BatchNorm2d",
        (2, 3, 6, 5),
        dict(in_channels=3, out_channels=4, kernel_size=3, bias=False),
        False,
    ),
    (
        "Conv3d",
        "BatchNorm3d",
        (1, 2, 4, 4, 4),
        dict(in_channels=2, out_channels=3, kernel_size=2),
        False,
    ),
    (
        "ConvTranspose2d",
        "BatchNorm2d",
        (2, 3, 4, 4),
        dict(in_channels=3, out_channels=4, kernel_size=3),
        True,
    ),
]


@pytest.mark.parametrize("conv_name,bn_name,x_shape,kw,transpose", CONV_CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_fuse_conv_bn_matches_torch(conv_name, bn_name, x_shape, kw, transpose, affine):
    torch = pytest.importorskip("torch", reason="torch parity")
    torch.manual_seed(0)
    out_channels = kw["out_channels"]
    t_conv = getattr(torch.nn, conv_name)(**kw).double().eval()
    t_bn = getattr(torch.nn, bn_name)(out_channels, eps=1e-3, affine=affine).double().eval()
    _randomise_bn(torch, t_bn)
    conv = getattr(nn, conv_name)(**kw).double().eval()
    bn = getattr(nn, bn_name)(out_channels, eps=1e-3, affine=affine).double().eval()
    _load(conv, t_conv)
    _load(bn, t_bn)
    t_fused = torch.nn.utils.fuse_conv_bn_eval(t_conv, t_bn, transpose=transpose)
    fused = fuse_conv_bn_eval(conv, bn, transpose=transpose)
    assert type(fused) is type(conv) and fused is not conv
    assert isinstance(fused.weight, nn.Parameter) and isinstance(fused.bias, nn.Parameter)
    np.testing.assert_allclose(
        fused.weight.detach().numpy(), t_fused.weight.detach().numpy(), rtol=1e-14
    )
    np.testing.assert_allclose(
        fused.bias.detach().numpy(), t_fused.bias.detach().numpy(), rtol=1e-14, atol=1e-15
    )
    x = np.random.default_rng(0).standard_normal(x_shape)
    unfused = bn(conv(tinyattn.tensor(x))).detach().numpy()
    np.testing.assert_allclose(
        fused(tinyattn.tensor(x)).detach().numpy(), unfused, rtol=1e-12, atol=1e-12
    )
    assert conv.bias is None or kw.get("bias", True)  # the original conv is left as it was


@pytest.mark.parametrize("num_features", [4, 1])
@pytest.mark.parametrize("bias", [True, False])
def test_fuse_linear_bn_matches_torch(num_features, bias):
    torch = pytest.importorskip("torch", reason="torch parity")
    torch.manual_seed(1)
    t_lin = torch.nn.Linear(3, 4, bias=bias).double().eval()
    t_bn = torch.nn.BatchNorm1d(num_features).double().eval()
    _randomise_bn(torch, t_bn)
    lin, bn = (
        nn.Linear(3, 4, bias=bias).double().eval(),
        nn.BatchNorm1d(num_features).double().eval(),
    )
    _load(lin, t_lin)
    _load(bn, t_bn)
    t_fused = torch.nn.utils.fuse_linear_bn_eval(t_lin, t_bn)
    fused = fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(
        fused.weight.detach().numpy(), t_fused.weight.detach().numpy(), rtol=1e-14
    )
    np.testing.assert_allclose(
        fused.bias.detach().numpy(), t_fused.bias.detach().numpy(), rtol=1e-14, atol=1e-15
    )
    if num_features == 4:
        x = tinyattn.tensor(np.random.default_rng(1).standard_normal((5, 3)))
        np.testing.assert_allclose(
            fused(x).detach().numpy(), bn(lin(x)).detach().numpy(), rtol=1e-12
        )


def test_fuse_weights_functions_float32_and_requires_grad():
    torch = pytest.importorskip("torch", reason="torch parity")
    rng = np.random.default_rng(2)
    w, b = (
        rng.standard_normal((4, 3, 2)).astype(np.float32),
        rng.standard_normal(4).astype(np.float32),
    )
    rm, rv = rng.standard_normal(4).astype(np.float32), rng.uniform(0.5, 2, 4).astype(np.float32)
    g, beta = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    ours = fuse_conv_bn_weights(
        *(tinyattn.tensor(a) for a in (w, b, rm, rv)), 1e-5, tinyattn.tensor(g), None
    )
    theirs = torch.nn.utils.fuse_conv_bn_weights(
        *(torch.tensor(a) for a in (w, b, rm, rv)), 1e-5, torch.tensor(g), None
    )
    for o, t in zip(ours, theirs):
        assert o.dtype == tinyattn.float32 and o.requires_grad == t.requires_grad
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    lin_args = (w[:, :, 0], rm, rv)
    ours = fuse_linear_bn_weights(
        tinyattn.tensor(lin_args[0]),
        None,
        *(tinyattn.tensor(a) for a in lin_args[1:]),
        1e-5,
        tinyattn.tensor(g),
        tinyattn.tensor(beta),
    )
    theirs = torch.nn.utils.fuse_linear_bn_weights(
        torch.tensor(lin_args[0]),
        None,
        *(torch.tensor(a) for a in lin_args[1:]),
        1e-5,
        torch.tensor(g),
        torch.tensor(beta),
    )
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-6)


def test_fuse_errors_as_torch():
    conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fuse_conv_bn_eval(conv, bn)
    no_stats = nn.BatchNorm2d(3, track_running_stats=False).eval()
    with pytest.raises(AssertionError, match="bn.running_mean and bn.running_var must not be None"):
        fuse_conv_bn_eval(conv.eval(), no_stats)
    with pytest.raises(AssertionError, match="linear.out_features=4 and bn.num_features=3"):
        fuse_linear_bn_eval(nn.Linear(2, 4).eval(), nn.BatchNorm1d(3).eval())
