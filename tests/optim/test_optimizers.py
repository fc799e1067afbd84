"""Optimizers: torch-identical updates, param groups, state dicts, subclassing."""

import numpy as np
import pytest

import tinyattn
import tinyattn.optim as optim

torch = pytest.importorskip("torch")

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("Adam", dict(lr=1e-2, maximize=True, weight_decay=0.05, amsgrad=True)),
    ("Adam", dict(lr=1e-2, betas=(0.3, 0.9))),  # lerp weight >= 0.5 branch
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.3, amsgrad=True)),
]


def _init_weights(dtype):
    rng = np.random.default_rng(1)
    return {
        "w1": rng.standard_normal((4, 8)).astype(dtype) * 0.5,
        "b1": rng.standard_normal(8).astype(dtype) * 0.1,
        "w2": rng.standard_normal((8, 3)).astype(dtype) * 0.5,
    }


def _data(dtype):
    rng = np.random.default_rng(2)
    return rng.standard_normal((16, 4)).astype(dtype), rng.standard_normal((16, 3)).astype(dtype)


def _loss(params, x, y):
    h = (x @ params[0] + params[1]).tanh()
    return ((h @ params[2] - y) ** 2).mean()


def _train(lib, opt_name, kwargs, steps, dtype):
    weights = _init_weights(dtype)
    params = [lib.tensor(weights[k].copy(), requires_grad=True) for k in ("w1", "b1", "w2")]
    opt_mod = optim if lib is tinyattn else torch.optim
    # two groups: the second overrides lr, exercising per-group options
    opt = getattr(opt_mod, opt_name)(
        [{"params": params[:2]}, {"params": params[2:], "lr": kwargs["lr"] * 0.5}], **kwargs
    )
    x, y = (lib.tensor(a) for a in _data(dtype))
    for _ in range(steps):
        opt.zero_grad()
        _loss(params, x, y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


@pytest.mark.parametrize("opt_name,kwargs", CONFIGS)
def test_one_step_float32_matches_torch(opt_name, kwargs):
    ours, _ = _train(tinyattn, opt_name, kwargs, 1, np.float32)
    theirs, _ = _train(torch, opt_name, kwargs, 1, np.float32)
    for a, b in zip(ours, theirs):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


@pytest.mark.parametrize("opt_name,kwargs", CONFIGS)
def test_twenty_steps_mlp_matches_torch(opt_name, kwargs):
    for dtype, atol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        ours, opt_o = _train(tinyattn, opt_name, kwargs, 20, dtype)
        theirs, opt_t = _train(torch, opt_name, kwargs, 20, dtype)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, atol=atol, rtol=0)
        # the state dicts agree too: same keys, same values
        sd_o, sd_t = opt_o.state_dict(), opt_t.state_dict()
        assert sd_o["param_groups"] == sd_t["param_groups"]
        assert sd_o["state"].keys() == sd_t["state"].keys()
        for k in sd_t["state"]:
            assert sd_o["state"][k].keys() == sd_t["state"][k].keys()
            for name, v in sd_t["state"][k].items():
                np.testing.assert_allclose(
                    sd_o["state"][k][name].numpy(), v.numpy(), atol=atol * 10, rtol=1e-5
                )


def test_state_dict_round_trip_resumes_identically():
    ours, opt = _train(tinyattn, "Adam", dict(lr=1e-2, amsgrad=True), 5, np.float64)
    params = [tinyattn.tensor(a.copy(), requires_grad=True) for a in ours]
    fresh = optim.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 5e-3}], lr=1.0)
    fresh.load_state_dict(opt.state_dict())
    assert fresh.param_groups[0]["lr"] == 1e-2 and fresh.param_groups[0]["params"][0] is params[0]
    # copies, not aliases: stepping one optimizer leaves the other's state alone
    assert (
        fresh.state[params[0]]["exp_avg"]._data is not opt.state_dict()["state"][0]["exp_avg"]._data
    )
    orig_params = [g for group in opt.param_groups for g in group["params"]]
    x, y = (tinyattn.tensor(a) for a in _data(np.float64))
    for o, ps in ((opt, orig_params), (fresh, params)):
        o.zero_grad()
        _loss(ps, x, y).backward()
        o.step()
    for a, b in zip(orig_params, params):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_load_torch_state_dict_numbers_into_tinyattn():
    _, opt_t = _train(torch, "SGD", dict(lr=0.1, momentum=0.9), 3, np.float32)
    sd = opt_t.state_dict()
    converted = {
        "state": {
            k: {n: tinyattn.tensor(v.numpy()) for n, v in s.items()} for k, s in sd["state"].items()
        },
        "param_groups": sd["param_groups"],
    }
    params = [tinyattn.zeros(*s, requires_grad=True) for s in ((4, 8), (8,), (8, 3))]
    opt = optim.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=1.0)
    opt.load_state_dict(converted)
    np.testing.assert_array_equal(
        opt.state[params[2]]["momentum_buffer"].numpy(), sd["state"][2]["momentum_buffer"].numpy()
    )
    assert opt.param_groups[1]["lr"] == 0.05


def test_load_state_dict_casts_to_param_dtype_but_not_step():
    p = tinyattn.zeros(3, dtype=tinyattn.float32, requires_grad=True)
    opt = optim.Adam([p])
    sd = {
        "state": {
            0: {
                "step": tinyattn.tensor(2.0),
                "exp_avg": tinyattn.ones(3, dtype=tinyattn.float64),
                "exp_avg_sq": tinyattn.ones(3, dtype=tinyattn.float64),
            }
        },
        "param_groups": [dict(opt.param_groups[0], params=[0])],
    }
    opt.load_state_dict(sd)
    assert opt.state[p]["exp_avg"].dtype == tinyattn.float32
    assert opt.state[p]["step"].item() == 2.0


def test_load_state_dict_rejects_mismatched_groups():
    p, q = tinyattn.zeros(2, requires_grad=True), tinyattn.zeros(2, requires_grad=True)
    sd = optim.SGD([p, q], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([p], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="number of parameter groups"):
        optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        optim.SGD([p], lr=0.1).load_state_dict({"foo": 1})


def test_param_group_defaults_and_add_param_group():
    a, b = tinyattn.zeros(2, requires_grad=True), tinyattn.zeros(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["params"] == [b]
    assert opt.param_groups[1]["lr"] == 0.01 and opt.param_groups[1]["momentum"] == 0.9
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_named_parameters_are_accepted():
    a = tinyattn.zeros(2, requires_grad=True)
    opt = optim.SGD([("layer.weight", a)], lr=0.1)
    assert opt.param_groups[0]["params"] == [a]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["layer.weight"]


def test_constructor_errors():
    a = tinyattn.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([np.zeros(2)], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD([a], lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        optim.Adam([a], betas=(0.9, 1.0))
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a}}], lr=0.1)
    with pytest.raises(NotImplementedError, match="capturable=True"):
        optim.AdamW([a], capturable=True)
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        optim.AdamW([a], fused=True, foreach=True)
    with pytest.raises(NotImplementedError):
        optim.Optimizer([a], {"lr": 0.1}).step()


def test_zero_grad_to_none_and_to_zeros():
    a = tinyattn.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * 2).sum().backward()
    grad = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is grad and np.all(a.grad.numpy() == 0)
    opt.zero_grad()
    assert a.grad is None


def test_step_skips_params_without_grad_and_evaluates_closure():
    a, b = tinyattn.ones(2, requires_grad=True), tinyattn.ones(2, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with tinyattn.no_grad():  # step re-enables grad for the closure, as torch does
        loss = opt.step(closure)
    assert loss.item() == 2.0
    assert np.all(b.numpy(force=True) == 1.0) and b not in opt.state
    assert np.all(a.detach().numpy() < 1.0)


def test_step_bumps_version_so_stale_graphs_fail():
    w = tinyattn.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    y = (w * w).sum()  # saves w
    v = w._version_value
    opt.step()
    assert w._version_value > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_user_subclass_like_tutorials():
    class PlainSGD(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        @tinyattn.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    self.state[p]["n"] = self.state[p].get("n", 0) + 1
                    p.add_(p.grad, alpha=-group["lr"])

    w = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    opt = PlainSGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [0.0, 0.0])
    assert opt.state[w]["n"] == 1
    assert opt.state_dict()["state"] == {0: {"n": 1}}


def test_wrapper_setting_lr_like_noam_opt():
    """The Annotated Transformer's NoamOpt sets param_groups[i]["lr"] before each step."""
    w = tinyattn.tensor([1.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.0)
    for step, lr in enumerate([0.1, 0.2], 1):
        for p in opt.param_groups:
            p["lr"] = lr
        opt.zero_grad()
        (w * 1.0).sum().backward()
        opt.step()
        assert step
    np.testing.assert_allclose(w.detach().numpy(), [1.0 - 0.1 - 0.2])


def test_float16_params_update_in_their_dtype():
    w = tinyattn.ones(3, dtype=tinyattn.float16, requires_grad=True)
    opt = optim.AdamW([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w.dtype == tinyattn.float16
    assert opt.state[w]["exp_avg"].dtype == tinyattn.float16


# -- Adam/AdamW's two update paths (fused numba kernel, NumPy twin): parity and checks ------
ADAM_CONFIGS = [(name, kwargs) for name, kwargs in CONFIGS if name.startswith("Adam")]


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("opt_name,kwargs", ADAM_CONFIGS)
def test_adam_twenty_steps_match_torch_on_both_paths(opt_name, kwargs, fused):
    torch = pytest.importorskip("torch")
    if fused:
        pytest.importorskip("numba")
    for dtype, atol in ((np.float64, 1e-12), (np.float32, 2e-5)):  # as the test above
        ours, _ = _train(tinyattn, opt_name, dict(kwargs, fused=fused), 20, dtype)
        theirs, _ = _train(torch, opt_name, kwargs, 20, dtype)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, atol=atol, rtol=0)


def _big_params(dtype, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(300, 256), (256,), (70000,)]  # the last one takes the parallel launch
    return [
        tinyattn.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in shapes
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_and_twin_paths_agree_bit_for_bit(dtype, amsgrad, monkeypatch):
    pytest.importorskip("numba")
    from tinyattn.kernels import _numba_optim

    monkeypatch.setattr(_numba_optim, "PARALLEL_MIN", 65536)  # the (70000,) one: parallel
    results = []
    for fused in (False, True):
        params = _big_params(dtype)
        opt = optim.AdamW(params, lr=1e-2, weight_decay=0.1, amsgrad=amsgrad, fused=fused)
        rng = np.random.default_rng(5)
        for _ in range(3):
            for p in params:
                p.grad = tinyattn.tensor(rng.standard_normal(p.shape).astype(dtype))
            opt.step()
        results.append([p.detach().numpy().copy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_strided_parameter_and_gradient_agree_on_both_paths():
    pytest.importorskip("numba")
    results = []
    for fused in (False, True):
        w = tinyattn.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 7, requires_grad=True)
        w._data = np.asfortranarray(w._data)  # a leaf whose memory is not C-ordered
        opt = optim.Adam([w], lr=0.1, amsgrad=True, fused=fused)
        for _ in range(2):
            w.grad = tinyattn.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3).T)
            opt.step()
        results.append(w.detach().numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.allclose(results[0], np.arange(12).reshape(3, 4) / 7)


def test_float16_parameters_use_the_twin():
    pytest.importorskip("numba")
    w = tinyattn.ones(4, dtype=tinyattn.float16, requires_grad=True)
    opt = optim.Adam([w], lr=0.1, fused=True)
    w.grad = tinyattn.ones(4, dtype=tinyattn.float16)
    opt.step()
    assert w.dtype == tinyattn.float16
    np.testing.assert_allclose(w.detach().numpy(), 0.9, rtol=1e-3)


def test_adam_bad_input():
    w = tinyattn.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        optim.Adam([w], fused=True, foreach=True)
    for fused in (False, True, None):
        opt = optim.Adam([w], fused=fused)
        w.grad = tinyattn.ones(3)
        w.grad._data = np.ones(4, np.float32)  # a gradient of the wrong shape, behind the setter
        with pytest.raises(RuntimeError, match=r"shape \[3\] has shape \[4\]"):
            opt.step()


def test_foreach_flag_is_accepted_and_changes_nothing():
    results = []
    for foreach in (None, False, True):
        w = tinyattn.tensor([1.0, -2.0], requires_grad=True)
        opt = optim.AdamW([w], lr=0.1, foreach=foreach)
        (w * w).sum().backward()
        opt.step()
        results.append(w.detach().numpy().copy())
        assert opt.param_groups[0]["foreach"] == foreach
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
