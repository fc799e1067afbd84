"""RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD: torch's updates and state."""

import numpy as np
import pytest

import tinyattn
import tinyattn.optim as optim

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")

CONFIGS = [
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.9)),
    ("RMSprop", dict(lr=1e-2, centered=True, momentum=0.5, maximize=True)),
    ("RMSprop", dict(lr=1e-2, centered=True, weight_decay=0.05)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.3)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    ("Adamax", dict(lr=1e-2)),
    ("Adamax", dict(lr=1e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=1e-2)),  # rho_t > 5 from step 6 on: both branches in 20 steps
    ("RAdam", dict(lr=1e-2, betas=(0.5, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Rprop", dict(lr=1e-2)),
    ("Rprop", dict(lr=1e-2, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05), maximize=True)),
    ("ASGD", dict(lr=1e-2)),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=0, maximize=True)),
]
NAMES = sorted({name for name, _ in CONFIGS})


def _init_weights(dtype):
    rng = np.random.default_rng(1)
    return [
        rng.standard_normal((4, 8)).astype(dtype) * 0.5,
        rng.standard_normal(8).astype(dtype) * 0.1,
        rng.standard_normal((8, 3)).astype(dtype) * 0.5,
        rng.standard_normal(3).astype(dtype),  # in a group, never gets a gradient
    ]


def _data(dtype):
    rng = np.random.default_rng(2)
    return rng.standard_normal((16, 4)).astype(dtype), rng.standard_normal((16, 3)).astype(dtype)


def _loss(params, x, y):
    h = (x @ params[0] + params[1]).tanh()
    return ((h @ params[2] - y) ** 2).mean()


def _make(lib, opt_name, kwargs, dtype):
    params = [lib.tensor(w.copy(), requires_grad=True) for w in _init_weights(dtype)]
    opt_mod = optim if lib is tinyattn else torch.optim
    lr = kwargs.get("lr", 1.0)
    groups = [{"params": params[:2]}, {"params": params[2:], "lr": lr * 0.5}]
    return params, getattr(opt_mod, opt_name)(groups, **kwargs)


def _train(lib, opt_name, kwargs, steps, dtype):
    params, opt = _make(lib, opt_name, kwargs, dtype)
    x, y = (lib.tensor(a) for a in _data(dtype))
    for _ in range(steps):
        opt.zero_grad()
        _loss(params, x, y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


def _assert_state_dicts_match(sd_o, sd_t, atol):
    assert sd_o["param_groups"] == sd_t["param_groups"]
    assert sd_o["state"].keys() == sd_t["state"].keys()
    for k, state_t in sd_t["state"].items():
        state_o = sd_o["state"][k]
        assert state_o.keys() == state_t.keys()
        for name, v in state_t.items():
            ours = state_o[name].numpy()
            assert ours.dtype == v.numpy().dtype, name
            np.testing.assert_allclose(ours, v.numpy(), atol=atol, rtol=0, err_msg=name)


@needs_torch
@pytest.mark.parametrize("opt_name,kwargs", CONFIGS)
def test_twenty_steps_match_torch_float64(opt_name, kwargs):
    ours, opt_o = _train(tinyattn, opt_name, kwargs, 20, np.float64)
    theirs, opt_t = _train(torch, opt_name, kwargs, 20, np.float64)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-12, rtol=0)
    _assert_state_dicts_match(opt_o.state_dict(), opt_t.state_dict(), atol=1e-12)
    np.testing.assert_array_equal(ours[3], _init_weights(np.float64)[3])


@needs_torch
@pytest.mark.parametrize("opt_name,kwargs", CONFIGS)
def test_twenty_steps_match_torch_float32(opt_name, kwargs):
    ours, opt_o = _train(tinyattn, opt_name, kwargs, 20, np.float32)
    theirs, opt_t = _train(torch, opt_name, kwargs, 20, np.float32)
    for a, b in zip(ours, theirs):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, atol=2e-5, rtol=0)
    _assert_state_dicts_match(opt_o.state_dict(), opt_t.state_dict(), atol=1e-4)


@pytest.mark.parametrize("opt_name,kwargs", CONFIGS)
def test_state_dict_round_trip_resumes_identically(opt_name, kwargs):
    full, _ = _train(tinyattn, opt_name, kwargs, 8, np.float64)
    ours, opt = _train(tinyattn, opt_name, kwargs, 4, np.float64)
    params = [tinyattn.tensor(a.copy(), requires_grad=True) for a in ours]
    other = dict(kwargs, lr=123.0)  # overwritten by the loaded groups
    fresh = getattr(optim, opt_name)([{"params": params[:2]}, {"params": params[2:]}], **other)
    fresh.load_state_dict(opt.state_dict())
    assert fresh.param_groups[0]["lr"] == kwargs.get("lr", 1.0)
    x, y = (tinyattn.tensor(a) for a in _data(np.float64))
    for _ in range(4):
        fresh.zero_grad()
        _loss(params, x, y).backward()
        fresh.step()
    # NAdam's and ASGD's float32 scalar state is cast to the parameters' float64 on
    # loading (as torch does), so the resumed arithmetic rounds differently
    rtol = 1e-6 if opt_name in ("NAdam", "ASGD") else 0
    for a, b in zip(full, params):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=rtol, atol=0)


@needs_torch
@pytest.mark.parametrize("opt_name,kwargs", [c for c in CONFIGS if c[0] in ("NAdam", "ASGD")])
def test_resumed_run_matches_torchs_resumed_run(opt_name, kwargs):
    results = []
    for lib in (tinyattn, torch):
        _, opt = _train(lib, opt_name, kwargs, 4, np.float64)
        params, fresh = _make(lib, opt_name, kwargs, np.float64)
        with torch.no_grad() if lib is torch else tinyattn.no_grad():
            for p, q in zip(params, (q for g in opt.param_groups for q in g["params"])):
                p.copy_(q)
        fresh.load_state_dict(opt.state_dict())
        x, y = (lib.tensor(a) for a in _data(np.float64))
        for _ in range(4):
            fresh.zero_grad()
            _loss(params, x, y).backward()
            fresh.step()
        results.append(([p.detach().numpy().copy() for p in params], fresh.state_dict()))
    (ours, sd_o), (theirs, sd_t) = results
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-12, rtol=0)
    _assert_state_dicts_match(sd_o, sd_t, atol=1e-12)


@pytest.mark.parametrize("opt_name", NAMES)
def test_least_squares_loss_decreases(opt_name):
    rng = np.random.default_rng(3)
    x = tinyattn.tensor(rng.standard_normal((64, 5)))
    y = x @ tinyattn.tensor(rng.standard_normal(5))
    w = tinyattn.zeros(5, dtype=tinyattn.float64, requires_grad=True)
    lr = {"Adadelta": 10.0, "Adagrad": 0.5}.get(opt_name, 0.05)
    opt = getattr(optim, opt_name)([w], lr=lr)
    losses = []
    for _ in range(100):
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0], (losses[0], losses[-1])


BAD = [
    ("RMSprop", dict(lr=-1), "Invalid learning rate: -1"),
    ("RMSprop", dict(eps=-1e-3), "Invalid epsilon value: -0.001"),
    ("RMSprop", dict(momentum=-0.5), "Invalid momentum value: -0.5"),
    ("RMSprop", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("RMSprop", dict(alpha=-0.1), "Invalid alpha value: -0.1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("NAdam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("RAdam", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    ("ASGD", dict(lr=-0.5), "Invalid learning rate: -0.5"),
]


@pytest.mark.parametrize("opt_name,kwargs,message", BAD)
def test_bad_hyper_parameters_raise_torchs_message(opt_name, kwargs, message):
    w = tinyattn.zeros(2, requires_grad=True)
    with pytest.raises(ValueError) as ours:
        getattr(optim, opt_name)([w], **kwargs)
    assert str(ours.value).startswith(message)
    if torch is not None:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, opt_name)([torch.zeros(2, requires_grad=True)], **kwargs)
        assert str(ours.value) == str(theirs.value)


UNSUPPORTED = {
    "RMSprop": ["capturable", "differentiable"],
    "Adagrad": ["differentiable"],  # fused=True runs (tests/optim/test_optim_edge_cases.py)
    "Adadelta": ["capturable", "differentiable"],
    "Adamax": ["capturable", "differentiable"],
    "NAdam": ["capturable", "differentiable"],
    "RAdam": ["capturable", "differentiable"],
    "Rprop": ["capturable", "differentiable"],
    "ASGD": ["capturable", "differentiable"],
}


@pytest.mark.parametrize("opt_name", NAMES)
def test_unbuilt_flags_raise_and_defaults_are_accepted(opt_name):
    w = tinyattn.zeros(2, requires_grad=True)
    for flag in UNSUPPORTED[opt_name]:
        with pytest.raises(NotImplementedError, match=f"{opt_name}: {flag}=True is not supported"):
            getattr(optim, opt_name)([w], **{flag: True})
    opt = getattr(optim, opt_name)([w], foreach=True)  # same numbers on every path
    assert opt.param_groups[0]["foreach"] is True


@pytest.mark.parametrize("opt_name", NAMES)
def test_tensor_lr_and_gradient_shape_checks(opt_name):
    w = tinyattn.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(optim, opt_name)([w], lr=tinyattn.ones(2))
    opt = getattr(optim, opt_name)([w], lr=tinyattn.tensor(0.01))
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
    w.grad = tinyattn.ones(3)
    w.grad._data = np.ones(4, np.float32)  # a gradient of the wrong shape, behind the setter
    with pytest.raises(RuntimeError, match=r"shape \[3\] has shape \[4\]"):
        opt.step()


@pytest.mark.parametrize("opt_name", NAMES)
def test_step_bumps_versions_and_runs_closure(opt_name):
    w = tinyattn.ones(2, requires_grad=True)
    opt = getattr(optim, opt_name)([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    v = w._version_value
    assert opt.step(closure).item() == 2.0
    assert w._version_value > v
    assert not np.allclose(w.detach().numpy(), 1.0)


def test_nadam_mu_product_is_float32_like_torch():
    w = tinyattn.ones(2, dtype=tinyattn.float64, requires_grad=True)
    opt = optim.NAdam([w], lr=0.1)
    for _ in range(3):
        w.grad = tinyattn.ones(2, dtype=tinyattn.float64)
        opt.step()
    product = opt.state[w]["mu_product"]
    assert product.dtype == tinyattn.float32
    expected = np.float32(1.0)
    for t in (1, 2, 3):
        expected = expected * np.float32(0.9 * (1 - 0.5 * 0.96 ** (t * 0.004)))
    assert product.item() == float(expected)


def test_asgd_averages_after_t0():
    w = tinyattn.zeros(1, dtype=tinyattn.float64, requires_grad=True)
    opt = optim.ASGD([w], lr=0.5, lambd=0.0, alpha=0.0, t0=2)  # eta stays 0.5
    seen = []
    for _ in range(6):
        w.grad = tinyattn.tensor([-1.0], dtype=tinyattn.float64)  # w climbs 0.5 a step
        opt.step()
        seen.append(w.item())
    # mu (set after each step) stays 1 through step 4 (ax = w), then is 1 / (t - t0):
    # ax is the mean of w over steps 4, 5, 6
    np.testing.assert_allclose(opt.state[w]["ax"].numpy(), [np.mean(seen[3:])], rtol=1e-7)


@pytest.fixture
def float64_default():
    """Both frameworks' default dtype float64 for the test (torch's scalar state follows it)."""
    tinyattn.set_default_dtype(tinyattn.float64)
    if torch is not None:
        torch.set_default_dtype(torch.float64)
    yield
    tinyattn.set_default_dtype(tinyattn.float32)
    if torch is not None:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("opt_name", [*NAMES, "Adam", "AdamW"])
def test_scalar_state_follows_a_float64_default_dtype(float64_default, opt_name):
    _, opt = _train(tinyattn, opt_name, dict(lr=1e-2), 2, np.float64)
    scalars = [v for s in opt.state.values() for v in s.values() if v.ndim == 0]
    assert scalars and all(v.dtype == tinyattn.float64 for v in scalars)


@needs_torch
@pytest.mark.parametrize("opt_name,kwargs", [c for c in CONFIGS if c[0] in ("NAdam", "ASGD")])
def test_float64_default_dtype_matches_torch(float64_default, opt_name, kwargs):
    # NAdam's mu_product and ASGD's eta/mu are float64 here: float32 rounding would differ
    ours, opt_o = _train(tinyattn, opt_name, kwargs, 20, np.float64)
    theirs, opt_t = _train(torch, opt_name, kwargs, 20, np.float64)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-13, rtol=0)
    _assert_state_dicts_match(opt_o.state_dict(), opt_t.state_dict(), atol=1e-13)
