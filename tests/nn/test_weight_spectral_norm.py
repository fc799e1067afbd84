"""weight_norm / spectral_norm, in both torch forms (parametrizations and the older hooks).

Parity: torch's module is built first, its state (weights, and for spectral norm the
power-iteration vectors u, v) is copied into tinyattn's, and forward values, gradients
and state_dicts are compared in float64. Gradchecks cover the composed formulas.
"""

import warnings

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
from tinyattn.autograd.gradcheck import gradcheck
from tinyattn.nn.utils import (
    parametrizations,
    parametrize,
    remove_spectral_norm,
    remove_weight_norm,
)
from tinyattn.nn.utils import spectral_norm as hook_spectral_norm
from tinyattn.nn.utils import weight_norm as hook_weight_norm
from tinyattn.nn.utils.spectral_norm import _weight_matrix
from tinyattn.nn.utils.weight_norm import _norm_except_dim, _weight_norm

RNG = np.random.default_rng(0)


def _t(a, grad=True):
    return tinyattn.tensor(np.array(a, dtype=np.float64), requires_grad=grad)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, None])
def test_weight_norm_formula_gradcheck_and_torch(dim):
    v = RNG.standard_normal((3, 4, 2))
    d = -1 if dim is None else dim
    g = _norm_except_dim(_t(v, False), d).numpy() * 1.5
    assert gradcheck(lambda g_, v_: _weight_norm(v_, g_, d), (_t(g), _t(v)))
    w = _weight_norm(_t(v, False), _t(g, False), d).numpy()
    norms = (
        np.sqrt((v**2).sum())
        if d == -1
        else np.linalg.norm(np.moveaxis(v, d, 0).reshape(v.shape[d], -1), axis=1)
    )
    assert np.allclose(
        np.linalg.norm(w)
        if d == -1
        else np.linalg.norm(np.moveaxis(w, d, 0).reshape(v.shape[d], -1), axis=1),
        1.5 * norms,
    )
    torch = pytest.importorskip("torch", reason="torch parity")
    np.testing.assert_allclose(
        g / 1.5, torch.norm_except_dim(torch.tensor(v), 2, d).numpy(), rtol=1e-14
    )
    np.testing.assert_allclose(
        w, torch._weight_norm(torch.tensor(v), torch.tensor(g), d).numpy(), rtol=1e-14
    )


def _copy_state(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _compare(torch, ours, theirs, x, steps=1):
    """Forward ``steps`` times, backward the last; values, grads and state must match torch.

    Each forward must read the parametrized weight exactly once, as torch's modules do:
    with spectral norm every read in training mode is one more power-iteration step.
    """
    for _ in range(steps):
        yt, y = theirs(torch.tensor(x)), ours(tinyattn.tensor(x))
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-11, atol=1e-13)
    yt.pow(2).sum().backward()
    y.pow(2).sum().backward()
    ours_named, theirs_named = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(ours_named) == list(theirs_named)
    for name, p in theirs_named.items():
        np.testing.assert_allclose(
            ours_named[name].grad.numpy(), p.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-12, atol=1e-14, err_msg=k
        )


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrized_weight_norm_linear_matches_torch(dim):
    torch = pytest.importorskip("torch", reason="torch parity")
    theirs = torch.nn.Linear(4, 3).double()
    ours = nn.Linear(4, 3).double()
    _copy_state(ours, theirs)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    parametrizations.weight_norm(ours, dim=dim)
    assert type(ours).__name__ == "ParametrizedLinear"
    _compare(torch, ours, theirs, RNG.standard_normal((5, 4)))


def test_parametrized_weight_norm_conv_remove_and_gradcheck():
    conv = nn.Conv1d(2, 3, 2).double()
    w0 = conv.weight.detach().numpy().copy()
    parametrizations.weight_norm(conv)
    plist = conv.parametrizations.weight
    assert tuple(plist.original0.shape) == (3, 1, 1) and plist.original1 is not None
    np.testing.assert_allclose(conv.weight.detach().numpy(), w0, rtol=1e-14)
    x = _t(RNG.standard_normal((2, 2, 5)), False)
    assert gradcheck(
        lambda g, v: nn.functional.conv1d(x, _weight_norm(v, g, 0)),
        (plist.original0, plist.original1),
    )
    parametrize.remove_parametrizations(conv, "weight")
    assert type(conv) is nn.Conv1d and list(conv.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(conv.weight.detach().numpy(), w0, rtol=1e-14)


@pytest.mark.parametrize(
    "make,x_shape,n_power",
    [
        (lambda lib: lib.nn.Linear(4, 3), (5, 4), 1),
        (lambda lib: lib.nn.Conv2d(2, 3, 2), (2, 2, 4, 4), 3),
        (lambda lib: lib.nn.ConvTranspose2d(2, 3, 2), (2, 2, 3, 3), 1),
    ],
)
def test_parametrized_spectral_norm_matches_torch(make, x_shape, n_power):
    torch = pytest.importorskip("torch", reason="torch parity")
    theirs, ours = make(torch).double(), make(tinyattn).double()
    torch.nn.utils.parametrizations.spectral_norm(theirs, n_power_iterations=n_power)
    parametrizations.spectral_norm(ours, n_power_iterations=n_power)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_state(ours, theirs)  # u, v included
    x = RNG.standard_normal(x_shape)
    _compare(torch, ours, theirs, x, steps=3)  # training: u, v advance each forward
    theirs.eval(), ours.eval()
    _compare(torch, ours, theirs, x)


def test_parametrized_spectral_norm_properties():
    lin = nn.Linear(6, 4).double()
    parametrizations.spectral_norm(lin, n_power_iterations=1)
    for _ in range(30):
        w = lin.weight.detach().numpy()
    np.testing.assert_allclose(np.linalg.svd(w, compute_uv=False)[0], 1.0, rtol=1e-6)
    vec = nn.Module()
    vec.register_parameter(
        "weight", nn.Parameter(tinyattn.tensor([3.0, 4.0], dtype=tinyattn.float64))
    )
    parametrizations.spectral_norm(vec)
    np.testing.assert_allclose(vec.weight.detach().numpy(), [0.6, 0.8])  # 1-D: plain normalisation
    with pytest.raises(
        ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"
    ):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(
        IndexError,
        match=r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)",
    ):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), name="nope")


def test_spectral_norm_gradcheck_with_u_v_fixed():
    W = RNG.standard_normal((3, 2, 2))
    u, v = RNG.standard_normal(3), RNG.standard_normal(4)
    u, v = u / np.linalg.norm(u), v / np.linalg.norm(v)
    ut, vt = _t(u, False), _t(v, False)

    def f(w):
        mat = _weight_matrix(w, 0)
        return w / tinyattn.dot(ut, tinyattn.mv(mat, vt))

    assert gradcheck(f, (_t(W),))


def test_hook_weight_norm_matches_torch_and_removes():
    torch = pytest.importorskip("torch", reason="torch parity")
    theirs, ours = torch.nn.Linear(4, 3).double(), nn.Linear(4, 3).double()
    _copy_state(ours, theirs)
    with pytest.warns(FutureWarning) as t_warn:
        torch.nn.utils.weight_norm(theirs)
    with pytest.warns(FutureWarning) as o_warn:
        hook_weight_norm(ours)
    assert str(o_warn[0].message) == str(t_warn[0].message)
    assert list(ours.state_dict()) == ["bias", "weight_g", "weight_v"]
    _compare(torch, ours, theirs, RNG.standard_normal((5, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(
            RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"
        ):
            hook_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    remove_weight_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(
        ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-14
    )
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        remove_weight_norm(ours)


@pytest.mark.parametrize("n_power", [1, 4])
@pytest.mark.parametrize("transposed", [False, True])
def test_hook_spectral_norm_matches_torch_and_removes(n_power, transposed):
    torch = pytest.importorskip("torch", reason="torch parity")
    name = "ConvTranspose2d" if transposed else "Conv2d"
    theirs, ours = getattr(torch.nn, name)(2, 3, 2).double(), getattr(nn, name)(2, 3, 2).double()
    torch.nn.utils.spectral_norm(theirs, n_power_iterations=n_power)
    hook_spectral_norm(ours, n_power_iterations=n_power)
    assert list(ours.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert tuple(ours.weight_u.shape) == tuple(theirs.weight_u.shape)
    _copy_state(ours, theirs)
    x = RNG.standard_normal((2, 2, 4, 4))
    _compare(torch, ours, theirs, x, steps=2)
    theirs.eval(), ours.eval()
    _compare(torch, ours, theirs, x)
    torch.nn.utils.remove_spectral_norm(theirs)
    remove_spectral_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(
        ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-12
    )


def test_hook_spectral_norm_errors():
    lin = nn.Linear(3, 2)
    hook_spectral_norm(lin)
    with pytest.raises(
        RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"
    ):
        hook_spectral_norm(lin)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        hook_spectral_norm(nn.Linear(3, 2), n_power_iterations=0)
    with pytest.raises(
        ValueError, match="`SpectralNorm` cannot be applied as parameter `bias` is None"
    ):
        hook_spectral_norm(nn.Linear(3, 2, bias=False), name="bias")
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found in"):
        remove_spectral_norm(lin, "bias")
