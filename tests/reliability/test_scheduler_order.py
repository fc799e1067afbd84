"""A scheduler stepped before its optimizer warns, with torch's text, exactly when torch does."""

from __future__ import annotations

import copy
import warnings

import pytest

import tinyattn

try:
    import torch
except ImportError:
    torch = None

LIBS = ["tinyattn"] + (["torch"] if torch is not None else [])


def _lib(name):
    return tinyattn if name == "tinyattn" else torch


def _setup(L, scheduler="StepLR"):
    w = L.zeros(2, requires_grad=True)
    opt = L.optim.SGD([w], lr=1.0)
    if scheduler == "StepLR":
        sched = L.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    else:
        sched = L.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1))
    return w, opt, sched


def _record(fn):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in record if issubclass(w.category, UserWarning)]


def _runs(name):
    L = _lib(name)
    out = {}
    _, opt, sched = _setup(L)
    out["scheduler-first"] = _record(lambda: (sched.step(), opt.step(), sched.step()))
    _, opt, sched = _setup(L, "LambdaLR")
    out["optimizer-first"] = _record(lambda: [(opt.step(), sched.step()) for _ in range(3)])
    _, opt, sched = _setup(L)
    out["epoch-argument"] = _record(lambda: (opt.step(), sched.step(3)))
    _, opt, _ = _setup(L)
    out["two-schedulers"] = _record(
        lambda: (
            L.optim.lr_scheduler.StepLR(opt, step_size=1).step(),  # wraps step again: no-op
        )
    )
    return out


@pytest.mark.parametrize("lib", LIBS)
def test_warnings_by_call_order(lib):
    out = _runs(lib)
    assert len(out["scheduler-first"]) == 1
    assert out["scheduler-first"][0].startswith(
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
        "In PyTorch 1.1.0 and later, you should call them in the opposite order"
    )
    assert out["optimizer-first"] == []
    assert len(out["epoch-argument"]) == 1 and "epoch parameter" in out["epoch-argument"][0]
    assert len(out["two-schedulers"]) == 1 and "Detected call" in out["two-schedulers"][0]


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_warning_texts_match_torch_exactly():
    assert _runs("tinyattn") == _runs("torch")


def test_wrapped_step_still_steps_and_survives_state_dicts():
    w, opt, sched = _setup(tinyattn)
    w.grad = tinyattn.ones(2)
    opt.step()
    assert w.tolist() == [-1.0, -1.0] and opt._opt_called
    sched.step()
    assert opt.param_groups[0]["lr"] == 0.5
    state = copy.deepcopy(opt.state_dict())
    opt2 = tinyattn.optim.SGD([tinyattn.zeros(2, requires_grad=True)], lr=1.0)
    opt2.load_state_dict(state)
    assert opt2.param_groups[0]["lr"] == 0.5


def test_overridden_optimizer_step_warns_like_torch():
    for name in LIBS:
        L = _lib(name)
        _, opt, sched = _setup(L)
        opt.step = lambda closure=None: None  # replaced after the scheduler was built
        msgs = _record(sched.step)
        assert len(msgs) == 1 and msgs[0].startswith(
            "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
            "initialization."
        ), (name, msgs)
