"""Decay, cyclical and chained schedulers: the rates (and momenta) torch gives, state dicts."""

import math
import warnings

import pytest

import tinyattn
import tinyattn.optim as optim
from tinyattn.optim import lr_scheduler as sched_mod

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")


class _Halve:
    """A callable object: its attributes travel in the scheduler's state dict."""

    def __init__(self, every):
        self.every = every

    def __call__(self, epoch):
        return 0.5 if epoch % self.every == 0 else 0.97


SCHEDULES = {
    "exponential": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "multistep": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.5),
    "multiplicative": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95),
    "multiplicative_per_group": lambda m, o: m.MultiplicativeLR(
        o, [_Halve(4), lambda e: 1 - 0.01 * e]
    ),
    "constant": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "polynomial": lambda m, o: m.PolynomialLR(o, total_iters=12, power=2.0),
    "polynomial_linear": lambda m, o: m.PolynomialLR(o, total_iters=9),
    "chained": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=3), m.ExponentialLR(o, gamma=0.9)]
    ),
    "chained_in_sequential": lambda m, o: m.SequentialLR(
        o,
        [m.LinearLR(o, start_factor=0.1, total_iters=4), m.PolynomialLR(o, 20, power=0.5)],
        milestones=[4],
    ),
    "sequential_warm_restarts": lambda m, o: m.SequentialLR(
        o,
        [m.ConstantLR(o, factor=0.5, total_iters=3), m.CosineAnnealingWarmRestarts(o, T_0=5)],
        milestones=[3],
    ),
    "sequential_multistep": lambda m, o: m.SequentialLR(
        o,
        [m.ExponentialLR(o, gamma=0.8), m.MultiStepLR(o, milestones=[2, 6], gamma=0.3)],
        milestones=[5],
    ),
    "chained_three": lambda m, o: m.ChainedScheduler(
        [
            m.MultiplicativeLR(o, lambda e: 0.99),
            m.MultiStepLR(o, milestones=[10, 20]),
            m.ConstantLR(o, factor=0.5, total_iters=4),
        ]
    ),
    "cyclic": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "cyclic_triangular2": lambda m, o: m.CyclicLR(
        o, [0.01, 0.02], [0.1, 0.5], step_size_up=3, step_size_down=5, mode="triangular2"
    ),
    "cyclic_exp_range": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.95, base_momentum=0.7
    ),
    "cyclic_custom": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 1 / (x + 1), scale_mode="iterations"
    ),
    "cyclic_no_momentum": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, cycle_momentum=False
    ),
    "onecycle": lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=30),
    "onecycle_linear": lambda m, o: m.OneCycleLR(
        o, max_lr=[0.1, 0.3], epochs=3, steps_per_epoch=10, anneal_strategy="linear"
    ),
    "onecycle_three_phase": lambda m, o: m.OneCycleLR(
        o, max_lr=0.2, total_steps=30, pct_start=0.25, three_phase=True, div_factor=10.0
    ),
    "warm_restarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.001),
    "warm_restarts_mult": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
}


def _make_opt(lib, opt_name):
    opt_mod = optim if lib is tinyattn else torch.optim
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(2, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.3}]
    if opt_name == "SGD":
        return opt_mod.SGD(groups, lr=1.0, momentum=0.9)
    return opt_mod.Adam(groups, lr=1.0, betas=(0.9, 0.99))


def _momenta(opt):
    return [g["momentum"] if "momentum" in g else g["betas"] for g in opt.param_groups]


def _run(lib, make, opt_name="SGD", steps=30):
    sched_lib = sched_mod if lib is tinyattn else torch.optim.lr_scheduler
    opt = _make_opt(lib, opt_name)
    sched = make(sched_lib, opt)
    rows = []
    for _ in range(steps):
        opt.step()
        rows.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt)))
        sched.step()
    return rows, sched


def _public_keys(state):
    return {k for k in state if k != "_get_lr_called_within_step"}


@needs_torch
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_rates_and_momenta_match_torch(name, opt_name):
    ours, sched_o = _run(tinyattn, SCHEDULES[name], opt_name)
    theirs, sched_t = _run(torch, SCHEDULES[name], opt_name)
    assert ours == theirs  # same formulas in the same order: identical doubles
    assert _public_keys(sched_o.state_dict()) == _public_keys(sched_t.state_dict())


@needs_torch
@pytest.mark.parametrize(
    "name", ["exponential", "multistep", "constant", "polynomial", "warm_restarts"]
)
def test_step_with_epoch_matches_torch(name):
    results = []
    for lib in (tinyattn, torch):
        opt = _make_opt(lib, "SGD")
        sched = SCHEDULES[name](sched_mod if lib is tinyattn else torch.optim.lr_scheduler, opt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 7, 8, 12, 20, 2):
                sched.step(epoch)
                results.append(sched.get_last_lr())
    assert results[:6] == results[6:]


@needs_torch
@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_fractional_epochs_match_torch(T_mult):
    results = []
    for lib in (tinyattn, torch):
        opt = _make_opt(lib, "SGD")
        sched_lib = sched_mod if lib is tinyattn else torch.optim.lr_scheduler
        sched = sched_lib.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=T_mult, eta_min=0.01)
        for epoch in range(12):
            for i in range(5):  # the docs' per-batch recipe: step(epoch + i / iters)
                opt.step()
                sched.step(epoch + i / 5)
                results.append((sched.get_last_lr(), sched.T_cur, sched.T_i, sched.last_epoch))
    n = len(results) // 2
    assert results[:n] == results[n:]


def test_warm_restarts_closed_form_without_torch():
    opt = optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=1.0)
    sched = sched_mod.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
    # cycles: epochs [0, 3), [3, 9), [9, 21)
    for epoch, (t_cur, t_i) in {1.5: (1.5, 3), 3: (0, 6), 7.5: (4.5, 6), 10: (1, 12)}.items():
        sched.step(epoch)
        expected = (1 + math.cos(math.pi * t_cur / t_i)) / 2
        assert sched.get_last_lr()[0] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


def test_onecycle_shape_without_torch():
    w = tinyattn.zeros(1, requires_grad=True)
    opt = optim.SGD([w], lr=1.0, momentum=0.9)
    sched = sched_mod.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25)
    lrs, moms = [], []
    for _ in range(20):
        lrs.append(sched.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        sched.step() if len(lrs) < 20 else None
    assert lrs[0] == pytest.approx(1.0 / 25) and moms[0] == pytest.approx(0.95)
    peak = lrs.index(max(lrs))
    assert lrs[peak] == pytest.approx(1.0) and moms[peak] == pytest.approx(0.85)
    assert all(a <= b for a, b in zip(lrs[:peak], lrs[1 : peak + 1]))
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1 :]))
    assert lrs[-1] == pytest.approx(1.0 / 25 / 1e4)
    sched.step()  # last_epoch == total_steps is still allowed, as torch
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        sched.step()


def test_cyclic_triangle_without_torch():
    opt = optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
    sched = sched_mod.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=2, step_size_down=4)
    lrs = []
    for _ in range(7):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert lrs == pytest.approx([0.0, 0.5, 1.0, 0.75, 0.5, 0.25, 0.0])
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9 - 0.1 * 0.5)


@pytest.mark.parametrize(
    "name", ["multiplicative_per_group", "cyclic_exp_range", "onecycle_three_phase", "chained"]
)
def test_state_dict_round_trip_resumes_schedule(name):
    make = SCHEDULES[name]
    full, _ = _run(tinyattn, make, steps=25)
    _, sched = _run(tinyattn, make, steps=10)
    state = sched.state_dict()
    assert "optimizer" not in state
    opt = _make_opt(tinyattn, "SGD")
    restored = make(sched_mod, opt)
    restored.load_state_dict(state)
    opt.load_state_dict(sched.optimizer.state_dict())
    for i in range(10, 25):
        opt.step()
        row = (list(restored.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt))
        assert row == full[i]
        restored.step()


def test_callable_object_state_is_saved_plain_functions_are_not():
    opt = _make_opt(tinyattn, "SGD")
    sched = SCHEDULES["multiplicative_per_group"](sched_mod, opt)
    assert sched.state_dict()["lr_lambdas"] == [{"every": 4}, None]
    cyc = sched_mod.CyclicLR(_make_opt(tinyattn, "SGD"), 0.1, 1.0, scale_fn=_Halve(3))
    assert cyc.state_dict()["_scale_fn_custom"] == {"every": 3}


def test_errors_have_torch_messages():
    opt = _make_opt(tinyattn, "SGD")
    cases = [
        (lambda: sched_mod.ConstantLR(opt, factor=1.5), "between 0 and 1"),
        (lambda: sched_mod.MultiplicativeLR(opt, [lambda e: 1.0]), "Expected 2 lr_lambdas"),
        (lambda: sched_mod.CyclicLR(opt, 0.1, 1.0, mode="sine"), "mode is invalid"),
        (lambda: sched_mod.CyclicLR(opt, [0.1], 1.0), "base_lr must have the same length"),
        (lambda: sched_mod.OneCycleLR(opt, 0.1), "You must define either total_steps"),
        (lambda: sched_mod.OneCycleLR(opt, 0.1, total_steps=0), "positive integer total_steps"),
        (lambda: sched_mod.OneCycleLR(opt, 0.1, 10, pct_start=1), "pct_start"),
        (lambda: sched_mod.OneCycleLR(opt, 0.1, 10, anneal_strategy="exp"), "anneal_strategy"),
        (lambda: sched_mod.CosineAnnealingWarmRestarts(opt, T_0=0), "positive integer T_0"),
        (lambda: sched_mod.CosineAnnealingWarmRestarts(opt, 2, T_mult=0), "T_mult >= 1"),
        (lambda: sched_mod.ChainedScheduler([]), "at least one scheduler"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got float"):
        sched_mod.MultiplicativeLR(opt, 3.0)
    plain = optim.Optimizer([tinyattn.zeros(1, requires_grad=True)], {"lr": 0.1})
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        sched_mod.OneCycleLR(plain, 0.1, total_steps=10)
    other = _make_opt(tinyattn, "SGD")
    a, b = sched_mod.ExponentialLR(opt, 0.9), sched_mod.ExponentialLR(other, 0.9)
    with pytest.raises(ValueError, match="same optimizer"):
        sched_mod.ChainedScheduler([a, b])
    plateau = sched_mod.ReduceLROnPlateau(opt)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        sched_mod.ChainedScheduler([a, plateau])


@needs_torch
def test_error_messages_equal_torchs():
    cases = [
        lambda m, o: m.ConstantLR(o, factor=-0.5),
        lambda m, o: m.OneCycleLR(o, 0.1, epochs=2, steps_per_epoch=0),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2.5),
        lambda m, o: m.CyclicLR(o, 0.1, [1.0, 2.0, 3.0]),
    ]
    for make in cases:
        messages = []
        for lib in (tinyattn, torch):
            with pytest.raises(ValueError) as info:
                make(
                    sched_mod if lib is tinyattn else torch.optim.lr_scheduler,
                    _make_opt(lib, "SGD"),
                )
            messages.append(str(info.value))
        assert messages[0] == messages[1]


def test_onecycle_drives_sgd_training():
    """A 1cycle run on least squares ends near the optimum."""
    rng = __import__("numpy").random.default_rng(0)
    x = tinyattn.tensor(rng.standard_normal((32, 3)))
    y = x @ tinyattn.tensor([1.0, -2.0, 0.5], dtype=tinyattn.float64)
    w = tinyattn.zeros(3, dtype=tinyattn.float64, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    sched = sched_mod.OneCycleLR(opt, max_lr=0.2, total_steps=60)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
        opt.step()
        if sched.last_epoch < 59:
            sched.step()
    assert losses[-1] < 1e-2 * losses[0]
