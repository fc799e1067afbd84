"""Optimizer hooks: step pre/post (per optimizer and global) and state-dict hooks, as torch's."""

import importlib

import pytest

import tinyattn
from tinyattn.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")


def _trace_step_hooks(lib, name):
    """The order in which hooks and the step run, and what they see."""
    events = []
    w = lib.ones(2, requires_grad=True)
    opt = getattr(lib.optim, name)([w], lr=0.1)
    module = importlib.import_module(f"{lib.__name__}.optim.optimizer")
    handles = [
        module.register_optimizer_step_pre_hook(lambda o, a, k: events.append("global pre")),
        module.register_optimizer_step_post_hook(lambda o, a, k: events.append("global post")),
        opt.register_step_pre_hook(
            lambda o, a, k: events.append(("pre", o is opt, a[0] is opt, len(a), sorted(k)))
        ),
        opt.register_step_post_hook(lambda o, a, k: events.append(("post", round(w[0].item(), 4)))),
    ]

    def closure():
        events.append("closure")
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    try:
        loss = opt.step(closure)
        events.append(("loss", float(loss.detach())))
        handles[2].remove()
        opt.step(closure=closure)  # the removed hook is gone; kwargs reach the hooks
    finally:
        for h in handles:
            h.remove()
    opt.step(closure)  # no hooks at all
    events.append("end")
    return events


EXPECTED_SGD = [
    "global pre",
    ("pre", True, True, 2, []),
    "closure",
    ("post", 0.8),
    "global post",
    ("loss", 2.0),
    "global pre",
    "closure",
    ("post", 0.64),
    "global post",
    "closure",
    "end",
]


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "LBFGS"])
def test_step_hooks_run_in_torchs_order(name):
    events = _trace_step_hooks(tinyattn, name)
    if name == "SGD":
        assert events == EXPECTED_SGD  # torch's trace, stated as data
    if torch is not None:
        assert events == _trace_step_hooks(torch, name)


def test_pre_hook_can_replace_the_arguments():
    w = tinyattn.ones(2, requires_grad=True)
    opt = tinyattn.optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    opt.register_step_pre_hook(lambda o, args, kwargs: ((o,), {"closure": closure}))
    assert float(opt.step()) == 2.0  # the hook supplied the closure
    assert w.tolist() == pytest.approx([0.8, 0.8])


def test_pre_hook_returning_something_else_is_an_error():
    opt = tinyattn.optim.SGD([tinyattn.ones(2, requires_grad=True)], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args"):
        opt.step()


def test_hook_must_be_callable():
    opt = tinyattn.optim.SGD([tinyattn.ones(2, requires_grad=True)], lr=0.1)
    with pytest.raises(TypeError, match="hook must be callable, but got int"):
        opt.register_step_post_hook(3)


def test_subclass_step_calling_super_runs_hooks_once():
    class Logged(tinyattn.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    w = tinyattn.ones(2, requires_grad=True)
    opt = Logged([w], lr=0.1)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    with register_optimizer_step_pre_hook(lambda o, a, k: calls.append(0)):
        opt.step()
    opt.step()
    assert calls == [0, 1, 1]


def test_global_post_hook_handle_removes_it():
    calls = []
    handle = register_optimizer_step_post_hook(lambda o, a, k: calls.append(type(o).__name__))
    opt = tinyattn.optim.Adam([tinyattn.ones(1, requires_grad=True)])
    opt.step()
    handle.remove()
    opt.step()
    assert calls == ["Adam"]


def _trace_state_dict_hooks(lib):
    events = []
    w = lib.ones(2, requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = lib.ones(2)
    opt.step()
    opt.register_state_dict_pre_hook(lambda o: events.append("sd pre"))
    opt.register_state_dict_pre_hook(lambda o: events.append("sd pre first"), prepend=True)

    def add_note(o, sd):
        events.append(("sd post", sorted(sd)))
        return {**sd, "note": 1}

    opt.register_state_dict_post_hook(add_note)
    sd = opt.state_dict()
    events.append(("saved", sorted(sd)))

    def drop_note(o, sd):
        events.append(("load pre", sd.get("note")))
        return {k: v for k, v in sd.items() if k != "note"}

    opt.register_load_state_dict_pre_hook(drop_note)
    opt.register_load_state_dict_post_hook(lambda o: events.append(("load post", o is opt)))
    sd["param_groups"][0]["lr"] = 0.5
    opt.load_state_dict(sd)
    events.append(("lr", opt.param_groups[0]["lr"]))
    return events


def test_state_dict_hooks_as_torch():
    events = _trace_state_dict_hooks(tinyattn)
    assert events == [
        "sd pre first",
        "sd pre",
        ("sd post", ["param_groups", "state"]),
        ("saved", ["note", "param_groups", "state"]),
        ("load pre", 1),
        ("load post", True),
        ("lr", 0.5),
    ]
    if torch is not None:
        assert events == _trace_state_dict_hooks(torch)
