"""Learning-rate schedulers: same rates as torch over 25+ steps, state dicts, errors."""

import math

import numpy as np
import pytest

import tinyattn
import tinyattn.optim as optim
from tinyattn.optim import lr_scheduler as sched_mod

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")


def _noam(step):
    step = max(step, 1)
    return 512**-0.5 * min(step**-0.5, step * 400**-1.5)


SCHEDULES = {
    "lambda": lambda m, o: m.LambdaLR(o, lr_lambda=_noam),
    "lambda_per_group": lambda m, o: m.LambdaLR(o, [lambda e: 0.9**e, lambda e: 1 / (e + 1)]),
    "step": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "cosine": lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=1e-3),  # wraps past T_max
    "linear": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=7),
    "sequential": lambda m, o: m.SequentialLR(
        o,
        [m.LinearLR(o, start_factor=0.2, total_iters=5), m.CosineAnnealingLR(o, T_max=15)],
        milestones=[5],
    ),
    "sequential3": lambda m, o: m.SequentialLR(
        o,
        [
            m.LinearLR(o, start_factor=0.5, total_iters=3),
            m.StepLR(o, step_size=3, gamma=0.7),
            m.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
        ],
        milestones=[4, 11],
    ),
}


def _run(lib, make, steps=30):
    opt_mod = optim if lib is tinyattn else torch.optim
    sched_lib = sched_mod if lib is tinyattn else torch.optim.lr_scheduler
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(2, requires_grad=True)
    opt = opt_mod.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=1.0)
    sched = make(sched_lib, opt)
    lrs = []
    for _ in range(steps):
        opt.step()
        lrs.append(list(sched.get_last_lr()) + [g["lr"] for g in opt.param_groups])
        sched.step()
    return lrs, sched


@needs_torch
@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_rates_match_torch(name):
    ours, _ = _run(tinyattn, SCHEDULES[name])
    theirs, _ = _run(torch, SCHEDULES[name])
    # same formulas, same order of float operations: identical doubles
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("name", ["step", "cosine", "linear"])
def test_step_with_epoch_uses_closed_form_like_torch(name):
    import warnings

    results = []
    for lib, sched_lib, opt_mod in (
        (tinyattn, sched_mod, optim),
        (torch, torch.optim.lr_scheduler, torch.optim),
    ):
        opt = opt_mod.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        sched = SCHEDULES[name](sched_lib, opt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 7, 12):
                sched.step(epoch)
                results.append(sched.get_last_lr()[0])
    assert results[:3] == results[3:]


def test_cosine_closed_form_without_torch():
    opt = optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=0.1)
    sched = sched_mod.CosineAnnealingLR(opt, T_max=20)
    for t in range(1, 21):
        opt.step()
        sched.step()
        expected = 0.1 * (1 + math.cos(math.pi * t / 20)) / 2
        assert sched.get_last_lr()[0] == pytest.approx(expected, abs=1e-12)


def test_state_dict_round_trip_resumes_schedule():
    full, _ = _run(tinyattn, SCHEDULES["sequential"], steps=20)
    lrs, sched = _run(tinyattn, SCHEDULES["sequential"], steps=8)
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 8
    # a fresh optimizer + scheduler pair, restored from the saved states
    a, b = tinyattn.zeros(2, requires_grad=True), tinyattn.zeros(2, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=1.0)
    restored = SCHEDULES["sequential"](sched_mod, opt)
    restored.load_state_dict(state)
    # torch's documented order: the optimizer's state after the scheduler's (building
    # the scheduler rewrote the groups' lr)
    opt.load_state_dict(sched.optimizer.state_dict())
    for i in range(8, 20):
        opt.step()
        assert list(restored.get_last_lr()) + [g["lr"] for g in opt.param_groups] == full[i]
        restored.step()


def test_lambda_state_dict_keeps_callable_object_state():
    class Warmup:
        def __init__(self, n):
            self.n = n

        def __call__(self, epoch):
            return min(1.0, (epoch + 1) / self.n)

    opt = optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=1.0)
    sched = sched_mod.LambdaLR(opt, Warmup(4))
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"n": 4}]
    other = sched_mod.LambdaLR(
        optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=1.0), Warmup(10)
    )
    other.load_state_dict(state)
    assert other.lr_lambdas[0].n == 4
    assert sched.state_dict()["lr_lambdas"] == [{"n": 4}]  # input dict left intact


def test_errors():
    opt = optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        sched_mod.StepLR(object(), step_size=2)
    with pytest.raises(KeyError, match="initial_lr"):
        sched_mod.StepLR(opt, step_size=2, last_epoch=3)
    with pytest.raises(ValueError, match="start_factor"):
        sched_mod.LinearLR(opt, start_factor=0.0)
    with pytest.raises(ValueError, match="expected 1 lr_lambdas.*got 2"):
        sched_mod.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0])
    s1 = sched_mod.StepLR(opt, step_size=2)
    with pytest.raises(ValueError, match="one milestone fewer"):
        sched_mod.SequentialLR(opt, [s1], milestones=[3])
    other = optim.SGD([tinyattn.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="same optimizer"):
        sched_mod.SequentialLR(other, [s1, sched_mod.StepLR(other, 2)], milestones=[3])


def test_scheduler_drives_training_rates():
    """The rate the scheduler sets is the one the next optimizer step uses."""
    w = tinyattn.tensor([0.0], requires_grad=True)
    opt = optim.SGD([w], lr=1.0)
    sched = sched_mod.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        (w * 1.0).sum().backward()  # gradient 1: each step subtracts lr
        opt.step()
        sched.step()
    np.testing.assert_allclose(w.detach().numpy(), [-(1.0 + 0.5 + 0.25)])
