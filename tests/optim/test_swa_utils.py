"""optim.swa_utils: AveragedModel, the averaging functions, update_bn and SWALR against torch."""

import math
import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn.optim import swa_utils

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")
LIBS = ["tinyattn", "torch"]


def _lib(name):
    if name == "torch" and torch is None:
        pytest.skip("torch not installed")
    return tinyattn if name == "tinyattn" else torch


def _model(lib, dtype, seed=0):
    """Linear -> BatchNorm1d -> Linear with fixed weights (the same in both libraries)."""
    nn = lib.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
    return model.to(lib.float64 if dtype == np.float64 else lib.float32)


def _batches(dtype, n=5):
    rng = np.random.default_rng(7)
    return [rng.standard_normal((8, 3)).astype(dtype) for _ in range(n)]


def _run(lib, dtype, make_avg, updates=5):
    """Train with SGD and average after each step; the averaged model's state dict."""
    model = _model(lib, dtype)
    averaged = make_avg(lib, model)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    for x in _batches(dtype, updates):
        opt.zero_grad()
        model(lib.tensor(x)).pow(2).mean().backward()
        opt.step()
        averaged.update_parameters(model)
    return {k: v.detach().numpy().copy() for k, v in averaged.state_dict().items()}


AVERAGES = {
    "swa": lambda lib, m: lib.optim.swa_utils.AveragedModel(m),
    "swa_buffers": lambda lib, m: lib.optim.swa_utils.AveragedModel(m, use_buffers=True),
    "ema_multi": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.9)
    ),
    "ema_multi_buffers": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.8), use_buffers=True
    ),
    "swa_multi": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn()
    ),
    "ema": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, avg_fn=lib.optim.swa_utils.get_ema_avg_fn(0.7)
    ),
    "swa_fn_buffers": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, avg_fn=lib.optim.swa_utils.get_swa_avg_fn(), use_buffers=True
    ),
}


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float64, 1e-13), (np.float32, 1e-5)])
@pytest.mark.parametrize("kind", sorted(AVERAGES))
def test_averaged_model_matches_torch(kind, dtype, atol):
    ours = _run(tinyattn, dtype, AVERAGES[kind])
    theirs = _run(torch, dtype, AVERAGES[kind])
    assert list(ours) == list(theirs)  # n_averaged first, then module.*
    for key, value in theirs.items():
        assert ours[key].dtype == value.dtype, key
        np.testing.assert_allclose(ours[key], value, atol=atol, rtol=0, err_msg=key)
    assert ours["n_averaged"] == 5 and ours["n_averaged"].dtype == np.int64


def test_swa_is_the_running_mean_and_buffers_are_copied():
    model = _model(tinyattn, np.float64)
    swa = swa_utils.AveragedModel(model)
    seen = []
    for x in _batches(np.float64, 4):
        with tinyattn.no_grad():
            model[0].weight.add_(tinyattn.tensor(x[:4]))
        model(tinyattn.tensor(x))  # training mode: moves the batch-norm statistics
        seen.append(model[0].weight.detach().numpy().copy())
        swa.update_parameters(model)
    np.testing.assert_allclose(
        swa.module[0].weight.detach().numpy(), np.mean(seen, axis=0), atol=1e-14
    )
    np.testing.assert_array_equal(swa.module[1].running_mean.numpy(), model[1].running_mean.numpy())
    assert swa.n_averaged.item() == 4
    assert swa.module is not model and swa.module[0].weight is not model[0].weight
    x = tinyattn.tensor(_batches(np.float64, 1)[0])
    swa.eval()
    np.testing.assert_array_equal(swa(x).detach().numpy(), swa.module(x).detach().numpy())


@pytest.mark.parametrize("lib_name", LIBS)
def test_averaging_function_errors(lib_name):
    lib = _lib(lib_name)
    su = lib.optim.swa_utils
    for make in (su.get_ema_avg_fn, su.get_ema_multi_avg_fn):
        with pytest.raises(ValueError) as err:
            make(1.5)
        assert str(err.value) == (
            "Invalid decay value 1.5 provided. Please provide a value in [0,1] range."
        )
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        su.AveragedModel(
            lib.nn.Linear(1, 1), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn()
        )
    # the running mean over lists refuses integer tensors as torch (addcdiv on integers)
    model = lib.nn.BatchNorm1d(2)
    swa = su.AveragedModel(model, multi_avg_fn=su.get_swa_multi_avg_fn(), use_buffers=True)
    swa.update_parameters(model)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        swa.update_parameters(model)


@pytest.mark.parametrize("lib_name", LIBS)
def test_single_tensor_averaging_functions(lib_name):
    lib = _lib(lib_name)
    su = lib.optim.swa_utils
    a = lib.tensor([1.0, 2.0], dtype=lib.float64)
    b = lib.tensor([3.0, 8.0], dtype=lib.float64)
    assert su.get_swa_avg_fn()(a, b, 2).tolist() == [1 + 2 / 3, 4.0]
    np.testing.assert_allclose(su.get_ema_avg_fn(0.75)(a, b, 0).numpy(), [1.5, 3.5])
    su.get_ema_multi_avg_fn(0.5)([a], [b], 0)
    assert a.tolist() == [2.0, 5.0]
    su.get_swa_multi_avg_fn()([a], [b], lib.tensor(2))  # weight float32(1/3), as torch
    assert a.tolist() == [2 + float(np.float32(1 / 3)) * 1.0, 5 + float(np.float32(1 / 3)) * 3.0]


def _bn_model(lib, dtype):
    model = _model(lib, dtype)
    model[1].momentum = 0.3
    return model


@needs_torch
@pytest.mark.parametrize("batch_kind", ["tensor", "tuple", "list"])
def test_update_bn_matches_torch(batch_kind):
    results = []
    for lib in (tinyattn, torch):
        model = _bn_model(lib, np.float64)
        model.eval()
        data = [lib.tensor(x) for x in _batches(np.float64)]
        if batch_kind == "tuple":
            data = [(x, lib.zeros(8)) for x in data]
        elif batch_kind == "list":
            data = [[x, lib.zeros(8)] for x in data]
        lib.optim.swa_utils.update_bn(data, model)
        bn = model[1]
        assert bn.momentum == 0.3 and not model.training  # both restored
        results.append([bn.running_mean.numpy(), bn.running_var.numpy(), bn.num_batches_tracked])
    (mean_o, var_o, n_o), (mean_t, var_t, n_t) = results
    np.testing.assert_allclose(mean_o, mean_t, atol=1e-13, rtol=0)
    np.testing.assert_allclose(var_o, var_t, atol=1e-13, rtol=0)
    assert n_o.item() == n_t.item() == 5


def test_update_bn_is_the_mean_of_the_batch_statistics():
    model = _bn_model(tinyattn, np.float64)
    batches = _batches(np.float64)
    swa_utils.update_bn([tinyattn.tensor(x) for x in batches], model)
    assert model.training
    first = [
        (x @ model[0].weight.detach().numpy().T + model[0].bias.detach().numpy()) for x in batches
    ]
    expected_mean = np.mean([h.mean(axis=0) for h in first], axis=0)
    expected_var = np.mean([h.var(axis=0, ddof=1) for h in first], axis=0)
    np.testing.assert_allclose(model[1].running_mean.numpy(), expected_mean, atol=1e-13)
    np.testing.assert_allclose(model[1].running_var.numpy(), expected_var, atol=1e-13)


def test_update_bn_without_batch_norm_does_nothing():
    model = tinyattn.nn.Linear(3, 2)

    class NeverIterated:
        def __iter__(self):
            raise AssertionError("the loader was iterated")

    model.eval()
    swa_utils.update_bn(NeverIterated(), model)
    assert not model.training


def _swalr_lrs(lib, steps=14, **kwargs):
    p = lib.zeros(1, requires_grad=True)
    q = lib.zeros(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=1.0)
    sched = lib.optim.swa_utils.SWALR(opt, **kwargs)
    lrs = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs, sched, opt


SWALR_CONFIGS = [
    dict(swa_lr=0.05),
    dict(swa_lr=0.05, anneal_epochs=4, anneal_strategy="linear"),
    dict(swa_lr=[0.1, 0.2], anneal_epochs=3),
    dict(swa_lr=0.3, anneal_epochs=0),
    dict(swa_lr=2.0, anneal_epochs=1, anneal_strategy="linear"),
]


@needs_torch
@pytest.mark.parametrize("kwargs", SWALR_CONFIGS)
def test_swalr_matches_torch(kwargs):
    ours, sched_o, opt_o = _swalr_lrs(tinyattn, **kwargs)
    theirs, sched_t, opt_t = _swalr_lrs(torch, **kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=0)
    assert set(sched_o.state_dict()) >= {"anneal_epochs", "_anneal_strategy", "base_lrs"}
    assert "anneal_func" not in sched_o.state_dict() and "optimizer" not in sched_o.state_dict()
    assert [g["swa_lr"] for g in opt_o.param_groups] == [g["swa_lr"] for g in opt_t.param_groups]


def test_swalr_reaches_and_holds_swa_lr_by_the_formula():
    lrs, _, _ = _swalr_lrs(tinyattn, swa_lr=0.05, anneal_epochs=4)
    for epoch, (lr0, lr1) in enumerate(lrs):
        alpha = (1 - math.cos(math.pi * min(1, epoch / 4))) / 2
        assert lr0 == pytest.approx(0.05 * alpha + 1.0 * (1 - alpha), rel=1e-12)
        assert lr1 == pytest.approx(0.05 * alpha + 0.5 * (1 - alpha), rel=1e-12)


def test_swalr_state_dict_round_trip():
    _, sched, opt = _swalr_lrs(tinyattn, steps=2, swa_lr=0.05, anneal_epochs=5)
    state = sched.state_dict()
    fresh = swa_utils.SWALR(opt, swa_lr=0.9, anneal_strategy="linear")
    fresh.load_state_dict(state)
    assert fresh.anneal_func(0.5) == pytest.approx(0.5) and fresh._anneal_strategy == "cos"
    assert fresh.anneal_func(0.25) == pytest.approx((1 - math.cos(math.pi / 4)) / 2)
    for s in (sched, fresh):
        opt.param_groups[0]["lr"] = 0.7  # same starting point for both
        s.step()
    assert fresh.last_epoch == sched.last_epoch


@pytest.mark.parametrize("lib_name", LIBS)
def test_swalr_errors_and_warning(lib_name):
    lib = _lib(lib_name)
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
    SWALR = lib.optim.swa_utils.SWALR
    with pytest.raises(ValueError) as err:
        SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    assert str(err.value) == "anneal_strategy must be one of 'cos' or 'linear', instead got exp"
    for bad in (-1, 2.5):
        with pytest.raises(ValueError) as err:
            SWALR(opt, swa_lr=0.1, anneal_epochs=bad)
        assert str(err.value) == f"anneal_epochs must be equal or greater than 0, got {bad}"
    with pytest.raises(ValueError) as err:
        SWALR(opt, swa_lr=[0.1, 0.2])
    assert str(err.value) == (
        "swa_lr must have the same length as optimizer.param_groups. swa_lr has 2 values, "
        "param_groups has 1."
    )
    sched = SWALR(opt, swa_lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched.get_lr()
    assert any("get_last_lr()" in str(w.message) for w in caught)


@needs_torch
def test_signatures_match_torch():
    import inspect

    for name in torch.optim.swa_utils.__all__:
        ours = inspect.signature(getattr(swa_utils, name))
        theirs = inspect.signature(getattr(torch.optim.swa_utils, name))
        assert list(ours.parameters) == list(theirs.parameters), name
        for key, param in theirs.parameters.items():
            assert ours.parameters[key].default == param.default, (name, key)
    assert sorted(swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)
