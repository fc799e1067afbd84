"""Activations beyond relu/gelu: gradcheck + torch parity (first and second order), the
gradient at every kink against torch's, in-place forms, modules (parity and repr), the
random ones (rrelu, gumbel_softmax) by their statistics, and bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, run_gradcheck, run_gradgradcheck, run_parity

import tinyattn
import tinyattn.nn as nn
import tinyattn.nn.functional as F

try:
    import torch
except ImportError:  # parity parts skip; gradchecks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

X = rand(3, 7, low=-5.0, high=5.0, seed=11)  # no element within 1e-6 of any kink

ELEMENTWISE = {
    "silu": lambda F, x: F.silu(x),
    "leaky_relu": lambda F, x: F.leaky_relu(x),
    "leaky_relu_0.2": lambda F, x: F.leaky_relu(x, 0.2),
    "elu": lambda F, x: F.elu(x),
    "elu_2": lambda F, x: F.elu(x, alpha=2.0),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x),
    "celu_0.5": lambda F, x: F.celu(x, 0.5),
    "softplus": lambda F, x: F.softplus(x),
    "softplus_beta_thr": lambda F, x: F.softplus(x, beta=2.0, threshold=3.0),
    "softplus_negbeta": lambda F, x: F.softplus(x, beta=-1.5, threshold=2.0),
    "softsign": lambda F, x: F.softsign(x),
    "mish": lambda F, x: F.mish(x),
    "hardtanh": lambda F, x: F.hardtanh(x),
    "hardtanh_2_3": lambda F, x: F.hardtanh(x, -2.0, 3.0),
    "relu6": lambda F, x: F.relu6(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "hardswish": lambda F, x: F.hardswish(x),
    "logsigmoid": lambda F, x: F.logsigmoid(x),
    "threshold": lambda F, x: F.threshold(x, 0.3, -2.0),
    "softshrink": lambda F, x: F.softshrink(x),
    "softshrink_2": lambda F, x: F.softshrink(x, 2.0),
    "hardshrink": lambda F, x: F.hardshrink(x, 1.5),
    "tanhshrink": lambda F, x: F.tanhshrink(x),
    "rrelu_eval": lambda F, x: F.rrelu(x),
    "softmin": lambda F, x: F.softmin(x, dim=1),
    "softmin_0": lambda F, x: F.softmin(x, 0),
    "glu": lambda F, x: F.glu(x[:, :6]),
    "glu_0": lambda F, x: F.glu(x[:2], 0),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_activation_gradcheck_and_parity(name):
    f = ELEMENTWISE[name]
    # torch's hardsigmoid backward multiplies by the float32 literal 1/6 in every dtype
    # (a 3e-8 relative error in float64); ours uses the exact 1/6.
    if name == "hardsigmoid":  # (and torch has no second derivative for it)
        g = lambda T, x: f(T.nn.functional, x)  # noqa: E731
        run_gradcheck(g, X)
        run_parity(g, X, rtol=1e-7)
        run_gradgradcheck(g, X)
        return
    check_op(lambda T, x: f(T.nn.functional, x), X)


def test_extreme_inputs_match_torch():
    """No overflow and torch's values/gradients far out (softplus, logsigmoid, mish, elu)."""
    x = np.array([-800.0, -40.0, -20.5, 19.9, 20.5, 40.0, 800.0])
    for name in ("softplus", "logsigmoid", "mish", "elu", "selu", "celu", "silu"):
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            run_parity(lambda T, x, n=name: getattr(T.nn.functional, n)(x), x, dtypes=(np.float64,))


NAN_INF = {
    "threshold": lambda F, x: F.threshold(x, 0.5, -2.0),
    "softshrink": lambda F, x: F.softshrink(x, 0.3),
    "hardshrink": lambda F, x: F.hardshrink(x, 0.3),
    "hardtanh": lambda F, x: F.hardtanh(x, -2.0, 0.5),
    "relu6": lambda F, x: F.relu6(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "hardswish": lambda F, x: F.hardswish(x),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(NAN_INF))
def test_nan_and_inf_inputs_match_torch(name):
    """A NaN stays NaN (threshold gave ``value``, soft/hardshrink gave 0); hardswish(-inf) is
    NaN (was 0) and its gradient at +inf is 1 (was NaN through the unused branch). Values
    and gradients at +-inf are torch's. (torch's gradient *at* a NaN depends on the
    element's position, vectorised body or scalar tail, so only its value is compared.)"""
    f = NAN_INF[name]
    x = np.array([np.inf, -np.inf, -4.0, -0.2, 0.1, 0.4, 2.0, 4.0, 7.0])
    run_parity(lambda T, x: f(T.nn.functional, x), x, rtol=1e-7)  # (hardsigmoid's 1/6)
    for dtype in (np.float64, np.float32):
        nan = np.array([np.nan, 1.0], dtype=dtype)
        ours = f(F, tinyattn.tensor(nan)).numpy()
        theirs = f(torch.nn.functional, torch.tensor(nan)).numpy()
        np.testing.assert_array_equal(ours, theirs)
        assert np.isnan(ours[0])


KINKS = {
    "relu6": ([0.0, 6.0, -1.0, 7.0], lambda F, x: F.relu6(x)),
    "hardtanh": ([-1.0, 1.0], lambda F, x: F.hardtanh(x)),
    "hardtanh_2_3": ([-2.0, 3.0], lambda F, x: F.hardtanh(x, -2.0, 3.0)),
    "leaky_relu": ([0.0], lambda F, x: F.leaky_relu(x, 0.1)),
    "hardswish": ([-3.0, 3.0], lambda F, x: F.hardswish(x)),
    "hardsigmoid": ([-3.0, 3.0], lambda F, x: F.hardsigmoid(x)),
    "softshrink": ([-0.5, 0.5], lambda F, x: F.softshrink(x)),
    "hardshrink": ([-0.5, 0.5], lambda F, x: F.hardshrink(x)),
    "threshold": ([0.5], lambda F, x: F.threshold(x, 0.5, 2.0)),
    "elu": ([0.0], lambda F, x: F.elu(x, 2.0)),
    "selu": ([0.0], lambda F, x: F.selu(x)),
    "celu": ([0.0], lambda F, x: F.celu(x, 2.0)),
    "softplus": ([0.5, 0.0], lambda F, x: F.softplus(x, 2.0, 1.0)),
    "logsigmoid": ([0.0], lambda F, x: F.logsigmoid(x)),
    "softsign": ([0.0], lambda F, x: F.softsign(x)),
    "mish": ([0.0], lambda F, x: F.mish(x)),
    "rrelu_eval": ([0.0], lambda F, x: F.rrelu(x)),
    "prelu": ([0.0], lambda F, x: F.prelu(x, x.new_tensor([0.3]))),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(KINKS))
def test_gradient_at_kinks_is_torchs(name):
    points, f = KINKS[name]
    run_parity(lambda T, x: f(T.nn.functional, x), np.array(points))


@pytest.mark.parametrize(
    "shape,weight", [((2, 3, 4), 3), ((2, 3), 1), ((5,), 1), ((2, 4, 2, 2), 4)]
)
def test_prelu(shape, weight):
    x, w = rand(*shape, low=-2, high=2, seed=3), rand(weight, low=0, high=0.5, seed=4)
    check_op(lambda T, x, w: T.nn.functional.prelu(x, w), x, w)


INPLACE = {
    "elu": (lambda F, x: F.elu(x, 0.7, inplace=True), lambda F, x: F.elu_(x, 0.7)),
    "selu": (lambda F, x: F.selu(x, inplace=True), lambda F, x: F.selu_(x)),
    "celu": (lambda F, x: F.celu(x, 0.5, inplace=True), lambda F, x: F.celu_(x, 0.5)),
    "leaky_relu": (
        lambda F, x: F.leaky_relu(x, 0.2, True),
        lambda F, x: F.leaky_relu_(x, 0.2),
    ),
    "hardtanh": (
        lambda F, x: F.hardtanh(x, -2.0, 2.0, True),
        lambda F, x: F.hardtanh_(x, -2.0, 2.0),
    ),
    "threshold": (
        lambda F, x: F.threshold(x, 0.1, 3.0, True),
        lambda F, x: F.threshold_(x, 0.1, 3.0),
    ),
    "rrelu": (lambda F, x: F.rrelu(x, inplace=True), lambda F, x: F.rrelu_(x)),
    "relu": (lambda F, x: F.relu(x, inplace=True), lambda F, x: F.relu_(x)),
    "silu": (lambda F, x: F.silu(x, True), None),
    "mish": (lambda F, x: F.mish(x, True), None),
    "relu6": (lambda F, x: F.relu6(x, True), None),
    "hardswish": (lambda F, x: F.hardswish(x, True), None),
    "hardsigmoid": (lambda F, x: F.hardsigmoid(x, True), None),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_forms(name):
    """In place on a non-leaf: same values and gradients as torch, the input is rebound."""
    if name == "hardsigmoid":  # torch has no second derivative: first order only

        def g(T, x):
            y = x * 1.0
            assert T.nn.functional.hardsigmoid(y, True) is y
            return y

        run_gradcheck(g, X)
        run_parity(g, X, rtol=1e-7)
        return
    for f in INPLACE[name]:
        if f is None:
            continue

        def g(T, x, f=f):
            y = x * 1.0
            out = f(T.nn.functional, y)
            assert out is y
            return out

        check_op(g, X)


@needs_torch
def test_celu_gradient_is_exact_where_torchs_is_rounded():
    """torch 2.13's float64 celu gradient carries a ~1e-8 relative error when 1/alpha is not
    exact (alpha=0.7); ours is exp(x / alpha) to float64 precision (kept deviation)."""
    x = tinyattn.tensor([-1.3], dtype=tinyattn.float64, requires_grad=True)
    F.celu(x, 0.7).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(-1.3 / 0.7), rtol=1e-14)
    xt = torch.tensor([-1.3], dtype=torch.float64, requires_grad=True)
    torch.nn.functional.celu(xt, 0.7).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-7)


def test_inplace_on_a_leaf_raises():
    x = tinyattn.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.elu(x, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.leaky_relu_(x)


# -- random ones ------------------------------------------------------------------------------


def test_rrelu_training_slopes_are_uniform_in_bounds():
    x = tinyattn.full((200, 100), -1.0, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.005 and slopes.std() > 0.05  # random, not fixed
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)  # the same slopes
    pos = tinyattn.ones(4)
    np.testing.assert_array_equal(F.rrelu(pos, training=True).numpy(), np.ones(4))


def test_rrelu_module_train_and_eval():
    m = nn.RReLU(0.1, 0.3)
    x = tinyattn.full((50, 50), -2.0)
    assert np.unique(m(x).numpy()).size > 100
    m.eval()
    np.testing.assert_allclose(m(x).numpy(), np.full((50, 50), -0.4))


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_structure_and_gradient(hard):
    tinyattn.manual_seed(0)
    logits = tinyattn.tensor(np.log([[0.7, 0.2, 0.1]] * 2000), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=hard)
    a = y.detach().numpy()
    np.testing.assert_allclose(a.sum(-1), 1.0)
    if hard:
        assert set(np.unique(a)) == {0.0, 1.0}
    # the argmax of logits + Gumbel noise is a sample of softmax(logits)
    freq = np.bincount(a.argmax(-1), minlength=3) / 2000
    np.testing.assert_allclose(freq, [0.7, 0.2, 0.1], atol=0.04)
    w = tinyattn.tensor(np.random.default_rng(0).standard_normal(a.shape))
    (y * w).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
    np.testing.assert_allclose(logits.grad.numpy().sum(-1), 0.0, atol=1e-9)  # softmax's Jacobian


def test_gumbel_softmax_gradient_is_the_soft_samples():
    """Straight-through: the hard output's gradient is the soft sample's, for the same noise."""
    logits = tinyattn.tensor(rand(4, 5, seed=7), requires_grad=True)
    w = tinyattn.tensor(rand(4, 5, seed=8))
    tinyattn.manual_seed(3)
    (F.gumbel_softmax(logits, tau=0.7, hard=True) * w).sum().backward()
    hard_grad = logits.grad.numpy().copy()
    logits.grad = None
    tinyattn.manual_seed(3)
    soft = F.gumbel_softmax(logits, tau=0.7)
    (soft * w).sum().backward()
    np.testing.assert_allclose(hard_grad, logits.grad.numpy())


# -- modules -------------------------------------------------------------------------------

MODULES = [
    ("SiLU", (), {}),
    ("SiLU", (True,), {}),
    ("Mish", (), {}),
    ("Mish", (), {"inplace": True}),
    ("SELU", (), {}),
    ("SELU", (True,), {}),
    ("Hardsigmoid", (), {}),
    ("Hardsigmoid", (True,), {}),
    ("Hardswish", (), {}),
    ("Hardswish", (True,), {}),
    ("LeakyReLU", (), {}),
    ("LeakyReLU", (0.2, True), {}),
    ("ELU", (), {}),
    ("ELU", (2.0, True), {}),
    ("CELU", (), {}),
    ("CELU", (0.5, True), {}),
    ("Softplus", (), {}),
    ("Softplus", (2, 10), {}),
    ("Softsign", (), {}),
    ("LogSigmoid", (), {}),
    ("Tanhshrink", (), {}),
    ("Hardtanh", (), {}),
    ("Hardtanh", (-2, 3, True), {}),
    ("ReLU6", (), {}),
    ("ReLU6", (True,), {}),
    ("Threshold", (0.1, 20), {}),
    ("Threshold", (0.1, 20.0, True), {}),
    ("Softshrink", (), {}),
    ("Softshrink", (1.5,), {}),
    ("Hardshrink", (), {}),
    ("Softmin", (), {"dim": 1}),
    ("Softmin", (), {}),
    ("GLU", (), {}),
    ("GLU", (1,), {}),
    ("PReLU", (), {}),
    ("PReLU", (4, 0.1), {}),
    ("RReLU", (), {}),
    ("RReLU", (0.1, 0.3, True), {}),
    ("Softmax2d", (), {}),
]


@needs_torch
@pytest.mark.filterwarnings("ignore:Implicit dimension choice for softmin")
@pytest.mark.parametrize("name,args,kwargs", MODULES)
def test_module_repr_and_parity(name, args, kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    ours.double(), theirs.double()
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ours.eval(), theirs.eval()  # RReLU: the mean slope
    x = rand(2, 4, 3, 2, low=-4, high=4, seed=5)
    xo = tinyattn.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo * 1.0), theirs(xt * 1.0)  # (a non-leaf, for the inplace ones)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-12)
    w = rand(*yt.shape, seed=6)
    (yo * tinyattn.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-12)
    for (k, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, err_msg=k)


def test_softmin_implicit_dim_warns_like_torch():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin") as rec:
        F.softmin(tinyattn.ones(2, 3))
    assert rec[0].filename == __file__  # points at the caller


def test_prelu_parameter_shape_and_init():
    m = nn.PReLU(5, init=0.1)
    assert tuple(m.weight.shape) == (5,) and m.weight.requires_grad
    np.testing.assert_allclose(m.weight.detach().numpy(), 0.1, rtol=1e-6)
    assert m.weight.dtype == tinyattn.float32


# -- bad input -------------------------------------------------------------------------------

BAD = [
    ("glu_odd", lambda T: T.nn.functional.glu(T.ones(2, 3)), r"even.*dimension 1 is size 3"),
    ("glu_scalar", lambda T: T.nn.functional.glu(T.ones(())), r"scalar"),
    (
        "prelu_channels",
        lambda T: T.nn.functional.prelu(T.ones(2, 3), T.ones(2)),
        r"parameter numbers = 2 and channel size = 3",
    ),
    ("softmax2d_2d", lambda T: T.nn.Softmax2d()(T.ones(2, 3)), r"3D or 4D, got 2D"),
    ("hardtanh_bounds", lambda T: T.nn.functional.hardtanh(T.ones(2), 2.0, 1.0), r"min_val"),
    ("Hardtanh_bounds", lambda T: T.nn.Hardtanh(2.0, 1.0), r"min_val"),
    ("rrelu_bounds", lambda T: T.nn.functional.rrelu(T.ones(2), 0.5, 0.1, True), r"Lower bound"),
    ("celu_alpha0", lambda T: T.nn.functional.celu(T.ones(2), 0.0), r"alpha cannot be 0"),
    ("elu_int", lambda T: T.nn.functional.elu(T.tensor([1, 2])), r"elu.*not implemented"),
    ("silu_int", lambda T: T.nn.functional.silu(T.tensor([1, 2])), r"silu.*not implemented"),
    ("leaky_int", lambda T: T.nn.functional.leaky_relu(T.tensor([1])), r"leaky_relu.*not impl"),
]


@pytest.mark.parametrize("name,call,expected", BAD, ids=[b[0] for b in BAD])
def test_bad_input(name, call, expected):
    check_bad_call(call, expected)


def test_hardshrink_dead_zone_is_positive_zero_and_keeps_nan():
    """torch returns +0 inside [-lambd, lambd] (negative inputs too) and NaN for NaN."""
    x = np.array([-0.3, -0.0, 0.2, np.nan, -0.7], dtype=np.float32)
    y = F.hardshrink(tinyattn.tensor(x), 0.5).numpy()
    assert not np.signbit(y[:3]).any(), y
    assert np.isnan(y[3]) and y[4] == np.float32(-0.7)
