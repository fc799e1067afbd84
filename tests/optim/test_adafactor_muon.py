"""Adafactor, Muon and SparseAdam: torch 2.13's updates, state layout, errors."""

import numpy as np
import pytest

import tinyattn
import tinyattn.optim as optim

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")

ADAFACTOR = [
    dict(),
    dict(lr=0.05, weight_decay=0.1, d=1.5, eps=(1e-20, 1e-2), beta2_decay=-0.5, maximize=True),
    dict(lr=0.5, eps=(None, 0.0), d=1.0),  # rho_t = 1/sqrt(t) from step 5 on; clipping active
]
MUON = [
    dict(lr=0.02),
    dict(lr=0.02, nesterov=False, adjust_lr_fn="match_rms_adamw", momentum=0.9),
    dict(lr=0.02, weight_decay=0.0, ns_steps=3, adjust_lr_fn="original"),
    dict(lr=0.02, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3),
]
CONFIGS = [("Adafactor", kw) for kw in ADAFACTOR] + [("Muon", kw) for kw in MUON]


def _weights(dtype, name):
    rng = np.random.default_rng(1)
    w = [rng.standard_normal((4, 8)) * 0.5, rng.standard_normal((8, 3)) * 0.5]
    w.append(rng.standard_normal((3, 5)))  # in its own group, never gets a gradient
    if name != "Muon":  # Muon takes matrices only; Adafactor: vector, 3-D and 0-d too
        w += [rng.standard_normal(8) * 0.1, rng.standard_normal((2, 3, 4)), np.array(0.7)]
    return [a.astype(dtype) for a in w]


def _loss(params, x, y):
    h = x @ params[0]
    if len(params) > 3:
        h = h + params[3]
    out = ((h.tanh() @ params[1] - y) ** 2).mean()
    if len(params) > 3:
        out = out + (params[4].tanh() ** 2).mean() + (params[5] - 0.3) ** 2
    return out


def _make(lib, name, kwargs, dtype):
    params = [lib.tensor(a.copy(), requires_grad=True) for a in _weights(dtype, name)]
    module = optim if lib is tinyattn else torch.optim
    lr = kwargs.get("lr", 1e-2)
    groups = [
        {"params": [p for i, p in enumerate(params) if i != 2]},
        {"params": [params[2]], "lr": lr * 0.5},
    ]
    return params, getattr(module, name)(groups, **kwargs)


def _data(lib, dtype):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 3))
    return lib.tensor(x.astype(dtype)), lib.tensor(y.astype(dtype))


def _train(lib, name, kwargs, steps, dtype):
    params, opt = _make(lib, name, kwargs, dtype)
    x, y = _data(lib, dtype)
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
        assert list(state_o) == list(state_t)  # same keys, same order
        for key, v in state_t.items():
            ours = state_o[key].numpy()
            assert ours.dtype == v.numpy().dtype and ours.shape == v.numpy().shape, key
            np.testing.assert_allclose(ours, v.numpy(), atol=atol, rtol=0, err_msg=key)


def _assert_params_match(name, ours, theirs, atol):
    """Adafactor to ``atol``. Muon's Newton–Schulz runs in bfloat16: a gradient one
    float64 ulp away from torch's (computed by another engine) can round to the
    neighbouring bfloat16, a 2**-8 relative jump in the update, after which the runs
    drift apart slowly; 20 steps of lr 0.02 move a weight by up to 0.4, and the runs
    stay within 5e-3 (about 1e-3 seen). With identical gradients Muon matches torch
    to float64 rounding
    (``test_muon_matches_torch_on_identical_gradients``)."""
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=5e-3 if name == "Muon" else atol, rtol=0)


@needs_torch
@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_twenty_steps_match_torch_float64(name, kwargs):
    ours, opt_o = _train(tinyattn, name, kwargs, 20, np.float64)
    theirs, opt_t = _train(torch, name, kwargs, 20, np.float64)
    _assert_params_match(name, ours, theirs, atol=1e-12)
    atol = 1e-12 if name == "Adafactor" else 5e-3
    _assert_state_dicts_match(opt_o.state_dict(), opt_t.state_dict(), atol=atol)
    np.testing.assert_array_equal(ours[2], _weights(np.float64, name)[2])


@needs_torch
@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_twenty_steps_match_torch_float32(name, kwargs):
    ours, opt_o = _train(tinyattn, name, kwargs, 20, np.float32)
    theirs, opt_t = _train(torch, name, kwargs, 20, np.float32)
    assert all(a.dtype == np.float32 for a in ours)
    # lr=0.5 steps amplify float32 rounding (the sums run in another order): 1e-4
    _assert_params_match(name, ours, theirs, atol=1e-4)
    atol = 1e-4 if name == "Adafactor" else 5e-3
    _assert_state_dicts_match(opt_o.state_dict(), opt_t.state_dict(), atol=atol)


@needs_torch
@pytest.mark.parametrize("kwargs", MUON)
def test_muon_matches_torch_on_identical_gradients(kwargs):
    # the same gradients given to both (no autograd in between): the Newton–Schulz inputs
    # agree to the last float64 bit or so (torch's lerp fuses a multiply-add), and
    # torch's bfloat16 rounding is reproduced, so no update lands a bfloat16 step away
    rng = np.random.default_rng(5)
    grads = [[rng.standard_normal(s) for s in ((4, 8), (8, 3), (3, 5))] for _ in range(10)]
    results = []
    for lib in (tinyattn, torch):
        params, opt = _make(lib, "Muon", kwargs, np.float64)
        for step_grads in grads:
            for p, g in zip(params, step_grads):
                p.grad = lib.tensor(g)
            opt.step()
        results.append([p.detach().numpy().copy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, atol=1e-15, rtol=0)


@needs_torch
def test_newton_schulz_matches_torchs_bfloat16_iteration():
    from torch.optim._muon import _zeropower_via_newtonschulz as theirs

    from tinyattn.optim.muon import zeropower_via_newtonschulz as ours

    rng = np.random.default_rng(0)
    exact = 0
    for _ in range(60):
        rows, cols = rng.integers(1, 30, 2)
        g = rng.standard_normal((rows, cols)) * 10 ** rng.uniform(-3, 3)
        o = ours(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
        t = theirs(torch.tensor(g), (3.4445, -4.7750, 2.0315), 5, 1e-7).float().numpy()
        assert o.shape == t.shape and o.dtype == np.float32
        assert not (o.view(np.uint32) & 0xFFFF).any()  # every value is a bfloat16
        np.testing.assert_allclose(o, t, atol=0.02, rtol=0)  # a few bfloat16 steps at most
        exact += np.array_equal(o, t)
    assert exact >= 45, exact  # most bit for bit; the rest differ by a tie's rounding


def test_newton_schulz_orthogonalises():
    from tinyattn.optim.muon import zeropower_via_newtonschulz

    rng = np.random.default_rng(3)
    for shape in ((6, 10), (10, 6)):
        g = rng.standard_normal(shape)
        o = zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7).astype(np.float64)
        singular = np.linalg.svd(o, compute_uv=False)
        assert singular.min() > 0.5 and singular.max() < 1.5, singular  # torch's S' range
        u, _, vt = np.linalg.svd(g, full_matrices=False)
        assert np.sum(o * (u @ vt)) / np.linalg.norm(o) / np.linalg.norm(u @ vt) > 0.95


@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_state_dict_round_trip_resumes_identically(name, kwargs):
    full, _ = _train(tinyattn, name, kwargs, 8, np.float64)
    half, opt = _train(tinyattn, name, kwargs, 4, np.float64)
    params, fresh = _make(tinyattn, name, dict(kwargs, lr=123.0), np.float64)
    with tinyattn.no_grad():
        for p, a in zip(params, half):
            p.copy_(tinyattn.tensor(a))
    fresh.load_state_dict(opt.state_dict())
    assert fresh.param_groups[0]["lr"] == kwargs.get("lr", 1e-2)
    x, y = _data(tinyattn, np.float64)
    for _ in range(4):
        fresh.zero_grad()
        _loss(params, x, y).backward()
        fresh.step()
    for a, p in zip(full, params):
        np.testing.assert_array_equal(a, p.detach().numpy())


@needs_torch
@pytest.mark.parametrize("name,kwargs", [CONFIGS[0], CONFIGS[len(ADAFACTOR)]])
def test_torchs_state_dict_loads_and_resumes_as_torch(name, kwargs):
    results = []
    _, opt_t = _train(torch, name, kwargs, 4, np.float64)
    sd = opt_t.state_dict()
    converted = {
        "state": {
            k: {n: tinyattn.tensor(v.numpy()) for n, v in s.items()} for k, s in sd["state"].items()
        },
        "param_groups": sd["param_groups"],
    }
    start = [p.detach().numpy().copy() for g in opt_t.param_groups for p in g["params"]]
    for lib, state_dict in ((tinyattn, converted), (torch, sd)):
        params, fresh = _make(lib, name, kwargs, np.float64)
        ordered = [p for g in fresh.param_groups for p in g["params"]]
        with tinyattn.no_grad() if lib is tinyattn else torch.no_grad():
            for p, a in zip(ordered, start):
                p.copy_(lib.tensor(a))
        fresh.load_state_dict(state_dict)
        x, y = _data(lib, np.float64)
        for _ in range(3):
            fresh.zero_grad()
            _loss(params, x, y).backward()
            fresh.step()
        results.append([p.detach().numpy().copy() for p in params])
    _assert_params_match(name, results[0], results[1], atol=1e-12)


def test_adafactor_state_is_factored_for_matrices_and_full_for_vectors():
    p = tinyattn.zeros(2, 3, 4, requires_grad=True)
    v = tinyattn.zeros(5, requires_grad=True)
    s = tinyattn.tensor(1.0, requires_grad=True)
    opt = optim.Adafactor([p, v, s])
    for t in (p, v, s):
        t.grad = tinyattn.ones(*t.shape)
    opt.step()
    assert list(opt.state[p]) == ["step", "row_var", "col_var"]
    assert opt.state[p]["row_var"].shape == (2, 3, 1)
    assert opt.state[p]["col_var"].shape == (2, 1, 4)
    assert list(opt.state[v]) == ["step", "variance"] and opt.state[v]["variance"].shape == (5,)
    assert opt.state[s]["variance"].shape == ()
    assert opt.state[p]["step"].dtype == tinyattn.float32 and opt.state[p]["step"].item() == 1


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
@pytest.mark.parametrize("saved", [(3, 4), (2, 5)])
def test_state_for_other_shapes_is_refused_at_step(name, saved):
    a = tinyattn.ones(*saved, requires_grad=True)
    opt = getattr(optim, name)([a], lr=0.1)
    a.grad = tinyattn.ones(*saved)
    opt.step()
    b = tinyattn.ones(2, 4, requires_grad=True)
    opt2 = getattr(optim, name)([b], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    b.grad = tinyattn.ones(2, 4)
    with pytest.raises(RuntimeError, match=rf"{name}\.step: state '\w+' of a parameter of shape"):
        opt2.step()
    assert b.tolist() == [[1.0] * 4] * 2  # refused before any write


@needs_torch
@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_state_for_other_shapes_torch_reference(name):
    a = torch.ones(3, 4, requires_grad=True)
    opt = getattr(torch.optim, name)([a], lr=0.1)
    a.grad = torch.ones(3, 4)
    opt.step()
    b = torch.ones(2, 4, requires_grad=True)
    opt2 = getattr(torch.optim, name)([b], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    b.grad = torch.ones(2, 4)
    with pytest.raises(RuntimeError):
        opt2.step()


BAD = [
    ("Adafactor", dict(lr=-1), "Learning rate should be >= 0 but is: -1"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(eps=(-1e-3, 1e-3)), "epsilon1 should be >= 0 but is: -0.001"),
    ("Adafactor", dict(eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("Adafactor", dict(weight_decay=-0.1), "weight_decay should be >= 0 but is: -0.1"),
    ("Muon", dict(lr=-0.5), "Learning rate should be >= 0 but is: -0.5"),
    ("Muon", dict(momentum=-1), "momentum should be >= 0 but is: -1"),
    ("Muon", dict(weight_decay=-1), "weight decay should be >= 0 but is: -1"),
    ("Muon", dict(adjust_lr_fn="x"), "Adjust learning rate function x is not supported"),
    ("SparseAdam", dict(lr=0.0), "Invalid learning rate: 0.0"),
    ("SparseAdam", dict(eps=0.0), "Invalid epsilon value: 0.0"),
    ("SparseAdam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("SparseAdam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
]


@pytest.mark.parametrize("name,kwargs,message", BAD)
def test_bad_hyper_parameters_raise_torchs_message(name, kwargs, message):
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([tinyattn.zeros(2, 2, requires_grad=True)], **kwargs)
    assert str(ours.value) == message
    if torch is not None:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, name)([torch.zeros(2, 2, requires_grad=True)], **kwargs)
        assert str(theirs.value) == message


@pytest.mark.parametrize("lib", ["tinyattn", "torch"])
def test_muon_refuses_parameters_that_are_not_matrices(lib):
    mod = tinyattn if lib == "tinyattn" else torch
    if mod is None:
        pytest.skip("torch not installed")
    with pytest.raises(ValueError) as err:
        mod.optim.Muon([mod.zeros(3, requires_grad=True)])
    assert str(err.value) == (
        f"Muon only supports 2D parameters whereas we found a parameter with size: {lib}.Size([3])"
    )


@pytest.mark.parametrize("lib", ["tinyattn", "torch"])
def test_muon_step_errors(lib):
    mod = tinyattn if lib == "tinyattn" else torch
    if mod is None:
        pytest.skip("torch not installed")
    w = mod.zeros(2, 3, requires_grad=True)
    w.grad = mod.ones(2, 3)
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        mod.optim.Muon([w], ns_steps=100).step()
    with pytest.raises(ValueError, match="Coefficients must be a tuple of exactly 3 values"):
        mod.optim.Muon([w], ns_coefficients=(1.0, 2.0)).step()
    v = mod.zeros(3, requires_grad=True)  # a vector slipped in through add_param_group
    opt = mod.optim.Muon([w])
    opt.add_param_group({"params": [v]})
    v.grad = mod.ones(3)
    with pytest.raises(ValueError, match="Param gradient must be a 2D matrix"):
        opt.step()


def test_signatures_and_defaults_match_torch():
    if torch is None:
        pytest.skip("torch not installed")
    import inspect

    for name in ("Adafactor", "Muon", "SparseAdam"):
        ours = inspect.signature(getattr(optim, name))
        theirs = inspect.signature(getattr(torch.optim, name))
        assert list(ours.parameters) == list(theirs.parameters), name
        for key, param in theirs.parameters.items():
            assert ours.parameters[key].default == param.default, (name, key)
            assert ours.parameters[key].kind == param.kind, (name, key)
        w_o, w_t = tinyattn.zeros(2, 2, requires_grad=True), torch.zeros(2, 2, requires_grad=True)
        assert getattr(optim, name)([w_o]).defaults == getattr(torch.optim, name)([w_t]).defaults


@pytest.mark.parametrize("lib", ["tinyattn", "torch"])
def test_sparse_adam_constructs_and_refuses_dense_gradients(lib):
    mod = tinyattn if lib == "tinyattn" else torch
    if mod is None:
        pytest.skip("torch not installed")
    w = mod.ones(3, requires_grad=True)
    opt = mod.optim.SparseAdam([w], lr=0.01)
    calls = []
    assert opt.step(lambda: calls.append(1) or 5.0) == 5.0  # no gradient yet: nothing to do
    assert calls == [1] and opt.state_dict()["state"] == {}
    (w * w).sum().backward()
    with pytest.raises(RuntimeError) as err:
        opt.step()
    assert str(err.value) == (
        "SparseAdam does not support dense gradients, please consider Adam instead"
    )
    assert w.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("name,kwargs", [c for c in CONFIGS if not c[1].get("maximize")])
def test_loss_decreases(name, kwargs):
    params, opt = _make(tinyattn, name, dict(kwargs, lr=0.02), np.float64)
    x, y = _data(tinyattn, np.float64)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = _loss(params, x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], (losses[0], losses[-1])
