"""nn.utils.parametrize: registration, composition, right_inverse, caching, removal, errors."""

import copy
import pickle

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
import tinyattn.nn.utils.parametrize as P


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.calls = 0

    def forward(self, X):
        self.calls += 1
        return X * self.c

    def right_inverse(self, Y):
        return Y / self.c


class NoInverse(nn.Module):
    def forward(self, X):
        return X * 2


class SplitSum(nn.Module):
    """A weight stored as two tensors: ``weight = a + b`` (right_inverse returns a sequence)."""

    def forward(self, a, b):
        return a + b

    def right_inverse(self, W):
        return W * 0.25, W * 0.75


def _linear(n=3):
    tinyattn.manual_seed(0)
    return nn.Linear(n, n).double()


def test_class_swap_property_and_state_dict_keys():
    m = _linear()
    w0 = m.weight.detach().numpy().copy()
    param = m.weight
    P.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.type_before_parametrizations(m) is nn.Linear
    assert (
        P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    )
    assert m.parametrizations.weight.original is param  # same Parameter object (optimizers keep it)
    np.testing.assert_array_equal(
        param.detach().numpy(), np.triu(w0)
    )  # right_inverse applied in place
    w = m.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    np.testing.assert_array_equal(np.triu(w), np.triu(w0))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert type(nn.Linear(2, 2)) is nn.Linear  # only this instance's class changed


def test_gradient_flows_to_original():
    m = _linear()
    P.register_parametrization(m, "weight", Symmetric())
    x = tinyattn.randn(4, 3, dtype=tinyattn.float64)
    m(x).pow(2).sum().backward()
    original = m.parametrizations.weight.original
    # d/dA of f(triu(A) + triu(A,1)^T): G_upper + G_lower^T on the strict upper part, G on the diagonal
    W = m.weight.detach().numpy()
    y = x.numpy() @ W.T + m.bias.detach().numpy()
    G = 2 * y.T @ x.numpy()
    expected = np.triu(G) + np.triu(G.T, 1)
    np.testing.assert_allclose(original.grad.numpy(), expected, rtol=1e-12)


def test_composition_and_setter_through_right_inverse():
    m = _linear()
    w0 = m.weight.detach().numpy().copy()
    P.register_parametrization(m, "weight", Scale(2.0))
    P.register_parametrization(m, "weight", Scale(3.0))
    assert len(m.parametrizations.weight) == 2
    np.testing.assert_allclose(
        m.weight.detach().numpy(), w0 * 3.0, rtol=1e-15
    )  # first kept w0, second scales
    target = tinyattn.ones(3, 3, dtype=tinyattn.float64)
    original = m.parametrizations.weight.original
    m.weight = target
    assert m.parametrizations.weight.original is original
    np.testing.assert_allclose(original.detach().numpy(), np.full((3, 3), 1 / 6), rtol=1e-15)
    np.testing.assert_allclose(m.weight.detach().numpy(), np.ones((3, 3)), rtol=1e-15)


def test_setter_without_right_inverse_raises():
    m = _linear()
    P.register_parametrization(m, "weight", NoInverse())
    with pytest.raises(
        RuntimeError, match="parametrization NoInverse does not implement right_inverse."
    ):
        m.weight = tinyattn.ones(3, 3, dtype=tinyattn.float64)


def test_cached_computes_once():
    m = _linear()
    scale = Scale(2.0)
    P.register_parametrization(m, "weight", scale)
    scale.calls = 0
    with P.cached():
        a, b = m.weight, m.weight
        with P.cached():
            c = m.weight
    assert a is b is c and scale.calls == 1
    assert m.weight is not a
    assert scale.calls == 2 and P._cache == {}


@pytest.mark.parametrize("leave", [True, False])
def test_remove_round_trip(leave):
    m = _linear()
    w0 = m.weight.detach().numpy().copy()
    original = m.weight
    P.register_parametrization(m, "weight", Scale(2.0))
    P.register_parametrization(m, "bias", Scale(5.0))
    np.testing.assert_allclose(
        m.weight.detach().numpy(), w0, rtol=1e-15
    )  # right_inverse kept the value
    m.weight = tinyattn.full((3, 3), 4.0, dtype=tinyattn.float64)  # original becomes 2
    P.remove_parametrizations(m, "weight", leave_parametrized=leave)
    assert type(m).__name__ == "ParametrizedLinear" and P.is_parametrized(m, "bias")
    assert m.weight is original and isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.full((3, 3), 4.0 if leave else 2.0))
    P.remove_parametrizations(m, "bias", leave_parametrized=leave)
    assert (
        type(m) is nn.Linear and not P.is_parametrized(m) and "parametrizations" not in m._modules
    )
    assert list(m.state_dict()) == ["weight", "bias"]  # re-registered in removal order, as torch
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")


def test_sequence_right_inverse_and_its_removal():
    m = _linear()
    w0 = m.weight.detach().numpy().copy()
    P.register_parametrization(m, "weight", SplitSum())
    plist = m.parametrizations.weight
    assert not plist.is_tensor and plist.ntensors == 2
    assert list(m.state_dict()) == [
        "bias",
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ]
    assert isinstance(plist.original0, nn.Parameter) and plist.original1.requires_grad
    np.testing.assert_allclose(m.weight.detach().numpy(), w0, rtol=1e-15)
    m(tinyattn.ones(1, 3, dtype=tinyattn.float64)).sum().backward()
    np.testing.assert_array_equal(plist.original0.grad.numpy(), np.ones((3, 3)))
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), w0, rtol=1e-15)


def test_buffers_can_be_parametrized():
    m = nn.BatchNorm1d(3).double()
    P.register_parametrization(m, "running_var", Scale(2.0))
    np.testing.assert_array_equal(m.running_var.numpy(), np.ones(3))
    assert "parametrizations.running_var.original" in m.state_dict()
    assert not isinstance(m.parametrizations.running_var.original, nn.Parameter)


def test_unsafe_and_consistency_errors():
    class Wider(nn.Module):
        def forward(self, X):
            return tinyattn.cat([X, X], dim=1)

    m = _linear()
    with pytest.raises(
        ValueError, match="may not change the shape of the tensor, unless `unsafe` flag is enabled"
    ):
        P.register_parametrization(m, "weight", Wider())
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)  # nothing changed
    P.register_parametrization(m, "weight", Wider(), unsafe=True)
    assert tuple(m.weight.shape) == (3, 6)

    class ToFloat(nn.Module):
        def forward(self, X):
            return X.float()

    m = _linear()
    with pytest.raises(ValueError, match="may not change the dtype of the tensor"):
        P.register_parametrization(m, "weight", ToFloat())
    P.register_parametrization(m, "weight", Scale(2.0))
    with pytest.raises(
        ValueError, match=r"unless the `unsafe` flag is enabled.\nmodule.weight.shape"
    ):
        P.register_parametrization(m, "weight", Wider())
    with pytest.raises(
        ValueError,
        match="does not have a parameter, a buffer, or a parametrized element with name 'nope'",
    ):
        P.register_parametrization(m, "nope", Scale(2.0))

    class BadInverse(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return 3

    with pytest.raises(
        ValueError, match="'right_inverse' must return a Tensor or a Sequence of tensors"
    ):
        P.register_parametrization(_linear(), "weight", BadInverse())
    with pytest.raises(ValueError, match="ParametrizationList requires one or more modules."):
        P.ParametrizationList([], tinyattn.ones(2))


def test_train_mode_follows_module_and_deepcopy_but_no_pickle():
    m = _linear().eval()
    scale = Scale(2.0)
    P.register_parametrization(m, "weight", scale)
    assert not scale.training
    m.train()
    assert scale.training
    clone = copy.deepcopy(m)
    assert type(clone).__name__ == "ParametrizedLinear"
    np.testing.assert_array_equal(clone.weight.detach().numpy(), m.weight.detach().numpy())
    assert clone.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(
        RuntimeError,
        match="Serialization of parametrized modules is only supported through state_dict",
    ):
        pickle.dumps(m)


def test_load_state_dict_round_trip():
    a, b = _linear(), nn.Linear(3, 3).double()
    P.register_parametrization(a, "weight", Symmetric())
    P.register_parametrization(b, "weight", Symmetric())
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(b.weight.detach().numpy(), a.weight.detach().numpy())


def test_transfer_parametrizations_and_params():
    a, b = _linear(), nn.Linear(3, 3).double()
    P.register_parametrization(a, "weight", Scale(2.0))
    P.transfer_parametrizations_and_params(a, b)
    assert P.is_parametrized(b, "weight")
    np.testing.assert_array_equal(b.weight.detach().numpy(), a.weight.detach().numpy())


def test_matches_torch_structure_and_values():
    torch = pytest.importorskip("torch", reason="torch parity")
    import torch.nn.utils.parametrize as TP

    class TSym(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    tm = torch.nn.Linear(3, 3).double()
    m = nn.Linear(3, 3).double()
    m.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    TP.register_parametrization(tm, "weight", TSym())
    P.register_parametrization(m, "weight", Symmetric())
    assert type(tm).__name__ == type(m).__name__
    assert list(tm.state_dict()) == list(m.state_dict())
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), v.numpy())
    x = np.random.default_rng(0).standard_normal((4, 3))
    yt, y = tm(torch.tensor(x)), m(tinyattn.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    yt.pow(2).sum().backward()
    y.pow(2).sum().backward()
    np.testing.assert_allclose(
        m.parametrizations.weight.original.grad.numpy(),
        tm.parametrizations.weight.original.grad.numpy(),
        rtol=1e-12,
    )
    TP.remove_parametrizations(tm, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(m.weight.detach().numpy(), tm.weight.detach().numpy())
