"""nn.init: distributions checked statistically (tinyattn's RNG is not torch's)."""

import math

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.init as init

N_OUT, N_IN = 300, 400  # 120k draws: sample std within ~0.5% of the true std


def _big(*shape):
    return tinyattn.empty(*(shape or (N_OUT, N_IN)))


def test_fan_in_fan_out():
    assert init._calculate_fan_in_and_fan_out(_big(3, 5)) == (5, 3)
    assert init._calculate_fan_in_and_fan_out(_big(4, 3, 2, 5)) == (30, 40)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(_big(5))


def test_calculate_gain_table_matches_torch():
    torch = pytest.importorskip("torch")
    for name, param in [
        ("linear", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("selu", None),
        ("conv2d", None),
    ]:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param), rel=1e-15
        )
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")


def _check_uniform(t, bound):
    a = t.detach().numpy()
    assert a.min() >= -bound and a.max() <= bound
    assert a.max() > 0.99 * bound and a.min() < -0.99 * bound
    assert abs(a.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert abs(a.mean()) < 0.01 * bound


def _check_normal(t, std, mean=0.0):
    a = t.detach().numpy()
    assert abs(a.std() - std) < 0.01 * std
    assert abs(a.mean() - mean) < 0.01 * std
    assert np.abs(a - mean).max() > 3 * std  # a normal, not a bounded distribution


def test_returns_same_tensor_in_place_without_grad_history():
    p = tinyattn.nn.Parameter(_big(3, 4))
    for fn in (init.zeros_, init.ones_, init.xavier_uniform_, init.kaiming_normal_):
        assert fn(p) is p
        assert p.grad_fn is None and p.requires_grad
    assert init.constant_(p, 0.25) is p and (p.detach().numpy() == 0.25).all()
    assert (init.zeros_(p).detach().numpy() == 0).all()
    assert (init.ones_(p).detach().numpy() == 1).all()


def test_uniform_and_normal():
    t = init.uniform_(_big(), -0.5, 1.5).detach().numpy()
    assert t.min() >= -0.5 and t.max() <= 1.5 and abs(t.mean() - 0.5) < 0.01
    _check_normal(init.normal_(_big(), 2.0, 0.3), 0.3, mean=2.0)


@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(gain):
    std = gain * math.sqrt(2.0 / (N_IN + N_OUT))
    _check_uniform(init.xavier_uniform_(_big(), gain=gain), math.sqrt(3) * std)
    _check_normal(init.xavier_normal_(_big(), gain=gain), std)


@pytest.mark.parametrize(
    "a,mode,nonlinearity",
    [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"), (0, "fan_out", "relu")],
)
def test_kaiming(a, mode, nonlinearity):
    fan = N_IN if mode == "fan_in" else N_OUT
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    _check_uniform(init.kaiming_uniform_(_big(), a, mode, nonlinearity), math.sqrt(3) * std)
    _check_normal(init.kaiming_normal_(_big(), a, mode, nonlinearity), std)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(_big(3, 3), mode="fan_avg")


def test_trunc_normal():
    a = init.trunc_normal_(_big(), mean=0.5, std=1.0, a=-1.0, b=1.0).detach().numpy()
    assert a.min() >= -1.0 and a.max() <= 1.0
    # standard-normal truncated to [-1.5, 0.5], shifted by 0.5: mean 0.5 + (phi(-1.5) - phi(.5)) / Z
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    expected_mean = 0.5 + (phi(-1.5) - phi(0.5)) / (cdf(0.5) - cdf(-1.5))
    assert abs(a.mean() - expected_mean) < 0.01
    b = init.trunc_normal_(_big(), std=0.02).detach().numpy()  # default bounds +-2: ~no truncation
    assert abs(b.std() - 0.02) < 0.0003


def test_seeded_reproducible_and_empty_tensor_warns():
    tinyattn.manual_seed(5)
    x = init.normal_(_big(4, 4)).detach().numpy().copy()
    tinyattn.manual_seed(5)
    np.testing.assert_array_equal(init.normal_(_big(4, 4)).detach().numpy(), x)
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(_big(0, 3))


def test_float64_parameter_keeps_dtype():
    t = tinyattn.empty(5, 6, dtype=tinyattn.float64)
    assert init.xavier_uniform_(t).dtype == tinyattn.float64
