"""Losses: gradcheck + torch parity of the functional forms, module wrappers, and errors."""

import warnings

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_parity

import tinyattn
import tinyattn.nn as nn
import tinyattn.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def _F(T):
    return T.nn.functional


def _w(T, w, like):
    return None if w is None else T.tensor(w).to(like.dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("use_weight", [False, True])
@pytest.mark.parametrize("ignore", [-100, 2])
def test_nll_loss(reduction, use_weight, ignore):
    logp, t = rand(5, 4, seed=1), np.array([0, 2, 3, 2, 1])
    w = np.array([0.5, 1.0, 2.0, 1.5]) if use_weight else None

    def f(T, x):
        return _F(T).nll_loss(
            x, T.tensor(t), weight=_w(T, w, x), ignore_index=ignore, reduction=reduction
        )

    check_op(f, logp)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("use_weight", [False, True])
def test_cross_entropy_class_indices(reduction, smoothing, use_weight):
    x, t = rand(6, 5, seed=2, low=-3, high=3), np.array([0, 4, -100, 2, 2, 1])
    w = np.array([0.5, 1.0, 2.0, 1.5, 0.7]) if use_weight else None

    def f(T, x):
        return _F(T).cross_entropy(
            x, T.tensor(t), weight=_w(T, w, x), reduction=reduction, label_smoothing=smoothing
        )

    check_op(f, x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_spatial_targets(reduction, smoothing):
    x = rand(2, 3, 4, 2, seed=3)
    t = np.array([[[0, 1], [2, 2], [1, 0], [0, 5]], [[1, 1], [2, 0], [5, 5], [0, 2]]])
    w = np.array([1.0, 2.0, 0.5])

    def f(T, x):
        return _F(T).cross_entropy(
            x,
            T.tensor(t),
            _w(T, w, x),
            ignore_index=5,
            reduction=reduction,
            label_smoothing=smoothing,
        )

    check_op(f, x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_unbatched(reduction):
    check_op(lambda T, x: _F(T).cross_entropy(x, T.tensor(2), reduction=reduction), rand(4, seed=4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("use_weight", [False, True])
def test_cross_entropy_probability_targets(reduction, smoothing, use_weight):
    x = rand(4, 3, 2, seed=5)
    p = np.random.default_rng(6).dirichlet(np.ones(3), size=(4, 2)).transpose(0, 2, 1).copy()
    w = np.array([0.3, 1.0, 2.0]) if use_weight else None

    def f(T, x, p):
        return _F(T).cross_entropy(
            x, p, weight=_w(T, w, x), reduction=reduction, label_smoothing=smoothing
        )

    check_op(f, x, p)


def test_cross_entropy_all_ignored_is_nan_like_torch():
    x = tinyattn.randn(3, 4)
    out = F.cross_entropy(x, tinyattn.tensor([-100, -100, -100]))
    assert np.isnan(out.item())


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_all_ignored_gradient_is_zero_like_torch(smoothing):
    # A batch made only of padding: the loss is nan (0/0) in both libraries, but
    # torch's gradient is 0 (ignored rows are never written); it was nan here.
    torch = pytest.importorskip("torch")
    x = rand(2, 5, seed=3)
    grads = []
    for T in (torch, tinyattn):
        xt = T.tensor(x, requires_grad=True)
        loss = _F(T).cross_entropy(xt, T.tensor([3, 3]), ignore_index=3, label_smoothing=smoothing)
        loss.backward()
        assert np.isnan(loss.item())
        grads.append(xt.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
    np.testing.assert_array_equal(grads[1], np.zeros_like(x))


def test_cross_entropy_errors():
    x = tinyattn.randn(3, 4)
    with pytest.raises(IndexError, match=r"Target 4 is out of bounds.*for 4 classes"):
        F.cross_entropy(x, tinyattn.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="4 classes"):
        nn.CrossEntropyLoss()(x, tinyattn.tensor([0, -3, 1]))
    with pytest.raises(ValueError, match=r"expected target of shape \[3\].*got target shape \[2\]"):
        F.cross_entropy(x, tinyattn.tensor([0, 1]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.cross_entropy(x, tinyattn.tensor([0, 1, 2]), reduction="avg")
    with pytest.raises(RuntimeError, match=r"weight must have shape \[4\]"):
        F.cross_entropy(x, tinyattn.tensor([0, 1, 2]), weight=tinyattn.ones(3))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "mean", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np.log(np.random.default_rng(7).dirichlet(np.ones(5), size=3))
    p = np.random.default_rng(8).dirichlet(np.ones(5), size=3)
    t = np.log(p) if log_target else p

    def f(T, x, t):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _F(T).kl_div(x, t, reduction=reduction, log_target=log_target)

    check_op(f, x, t)


def test_kl_div_zero_target_contributes_zero_and_mean_warns():
    x = tinyattn.tensor([[-1.0, -2.0]])
    out = F.kl_div(x, tinyattn.tensor([[0.0, 1.0]]), reduction="sum")
    assert out.item() == pytest.approx(2.0)
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(x, tinyattn.tensor([[0.5, 0.5]]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss(reduction):
    check_op(
        lambda T, x, y: _F(T).mse_loss(x, y, reduction=reduction),
        rand(3, 4, seed=9),
        rand(3, 4, seed=10),
    )


def test_mse_loss_broadcast_warns():
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(tinyattn.randn(3, 4), tinyattn.randn(4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits(reduction):
    x, t = rand(4, 3, low=-5, high=5, seed=11), rand(4, 3, low=0, high=1, seed=12)
    w, pw = rand(4, 3, low=0.2, high=2, seed=13), rand(3, low=0.5, high=3, seed=14)
    check_op(
        lambda T, x, t: _F(T).binary_cross_entropy_with_logits(x, t, reduction=reduction), x, t
    )

    def f(T, x, t, w, pw):
        return _F(T).binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw)

    # torch refuses gradients for `weight` and `pos_weight`; tinyattn gives one, checked by finite differences
    check_op(f, x, t, w, pw, grad=[True, True, False, False])
    run_gradcheck(f, x, t, w, pw)


def test_bce_with_logits_is_stable_for_large_logits():
    x = np.array([-800.0, -50.0, 0.0, 50.0, 800.0])
    t = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    out = F.binary_cross_entropy_with_logits(
        tinyattn.tensor(x), tinyattn.tensor(t), reduction="none"
    )
    assert np.isfinite(out.numpy()).all()
    run_parity(lambda T, x, t: _F(T).binary_cross_entropy_with_logits(x, t, reduction="none"), x, t)


def _module_pairs():
    w = np.array([0.5, 1.0, 2.0, 1.5])
    return [
        ("CrossEntropyLoss", dict(weight=w, ignore_index=1, label_smoothing=0.1), "index"),
        ("CrossEntropyLoss", dict(reduction="sum"), "prob"),
        ("NLLLoss", dict(weight=w, reduction="mean"), "index"),
        ("KLDivLoss", dict(reduction="batchmean", log_target=True), "prob"),
        ("MSELoss", dict(reduction="sum"), "prob"),
        ("BCEWithLogitsLoss", dict(pos_weight=w), "prob"),
    ]


@pytest.mark.parametrize("name,kwargs,kind", _module_pairs())
def test_loss_modules_match_torch(name, kwargs, kind):
    torch_ = pytest.importorskip("torch")
    x = rand(3, 4, seed=15)
    if kind == "index":
        tgt_o, tgt_t = tinyattn.tensor([0, 3, 1]), torch_.tensor([0, 3, 1])
    else:
        p = rand(3, 4, low=0.05, high=1, seed=16)
        p = np.log(p) if name == "KLDivLoss" else p
        tgt_o, tgt_t = tinyattn.tensor(p), torch_.tensor(p)

    def build(lib):
        kw = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        return getattr(lib.nn, name)(**kw)

    mo, mt = build(tinyattn), build(torch_)
    assert repr(mo) == repr(mt)
    assert list(mo.state_dict()) == list(mt.state_dict())
    xo, xt = tinyattn.tensor(x, requires_grad=True), torch_.tensor(x, requires_grad=True)
    lo, lt = mo(xo, tgt_o), mt(xt, tgt_t)
    np.testing.assert_allclose(lo.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    lo.backward()
    lt.backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_legacy_size_average_reduce_flags():
    assert nn.MSELoss(size_average=False).reduction == "sum"
    assert nn.MSELoss(reduce=False).reduction == "none"
    assert nn.NLLLoss(size_average=True, reduce=True).reduction == "mean"
