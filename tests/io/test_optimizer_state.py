"""Optimizer state from torch: in memory (torch tensors), from a torch file, or as NumPy arrays.

A tinyattn optimizer that loads torch's ``state_dict()`` must keep stepping in lockstep
with the torch optimizer it came from.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from torch_files import ADAMW_INIT, ADAMW_STEPS, DATA

import tinyattn
from tinyattn.serialization import load

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="parity with torch: torch not installed")

# name -> keyword arguments (the same for both libraries)
OPTIMIZERS = {
    "SGD": {"lr": 0.05, "momentum": 0.9, "nesterov": True},
    "Adam": {"lr": 0.05, "amsgrad": True},
    "AdamW": {"lr": 0.05, "weight_decay": 0.1},
    "Adagrad": {"lr": 0.1},
    "Adadelta": {"lr": 1.0},
    "Adamax": {"lr": 0.05},
    "NAdam": {"lr": 0.05},
    "RAdam": {"lr": 0.05},
    "RMSprop": {"lr": 0.01, "momentum": 0.5, "centered": True},
    "Rprop": {"lr": 0.01},
    "ASGD": {"lr": 0.05, "t0": 1.0},
    "Adafactor": {"lr": 0.05},
}


def _loss(lib, w, x):
    return ((w @ x).tanh() ** 2).sum() + (w**2).mean()


def _steps(lib, opt, w, x, n: int) -> None:
    for _ in range(n):
        opt.zero_grad()
        _loss(lib, w, x).backward()
        opt.step()


def _torch_run(name: str, steps: int):
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    x = rng.standard_normal((4, 2)).astype(np.float32)
    w = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = getattr(torch.optim, name)([w], **OPTIMIZERS[name])
    _steps(torch, opt, w, torch.from_numpy(x), steps)
    return w, opt, x


def _resume(name: str, w_torch, state_dict, x):
    w = tinyattn.nn.Parameter(tinyattn.tensor(w_torch.detach().numpy().copy()))
    opt = getattr(tinyattn.optim, name)([w], **OPTIMIZERS[name])
    opt.load_state_dict(state_dict)
    return w, opt, tinyattn.tensor(x)


@needs_torch
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_resumed_from_torch_state_in_memory_steps_in_lockstep(name):
    w_t, opt_t, x = _torch_run(name, 3)
    w, opt, x_o = _resume(name, w_t, opt_t.state_dict(), x)
    for _ in range(4):
        _steps(torch, opt_t, w_t, torch.from_numpy(x), 1)
        _steps(tinyattn, opt, w, x_o, 1)
        np.testing.assert_allclose(w.detach().numpy(), w_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    for state in opt.state.values():
        for value in state.values():
            assert not type(value).__module__.startswith("torch"), (name, type(value))


@needs_torch
@pytest.mark.parametrize("name", ["AdamW", "SGD", "RMSprop"])
def test_resumed_from_a_torch_file_or_numpy_arrays_steps_in_lockstep(tmp_path, name):
    w_t, opt_t, x = _torch_run(name, 2)
    torch.save(opt_t.state_dict(), tmp_path / "opt.pt")
    from_file = load(tmp_path / "opt.pt")
    as_numpy = opt_t.state_dict()
    as_numpy["state"] = {
        k: {s: (v.numpy().copy() if torch.is_tensor(v) else v) for s, v in st.items()}
        for k, st in as_numpy["state"].items()
    }
    resumed = [_resume(name, w_t, sd, x) for sd in (from_file, as_numpy)]
    _steps(torch, opt_t, w_t, torch.from_numpy(x), 3)
    for w, opt, x_o in resumed:
        _steps(tinyattn, opt, w, x_o, 3)
        np.testing.assert_allclose(w.detach().numpy(), w_t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_adamw_state_written_by_torch_resumes_without_torch():
    saved = load(os.path.join(DATA, "torch_adamw.pt"))
    state = saved["optimizer"]["state"][0]
    assert float(state["step"]) == ADAMW_STEPS
    # tinyattn's own AdamW run from the same start reaches the state torch saved
    w = tinyattn.nn.Parameter(tinyattn.tensor(ADAMW_INIT))
    opt = tinyattn.optim.AdamW([w], lr=0.1, weight_decay=0.01)
    for _ in range(ADAMW_STEPS):
        opt.zero_grad()
        (w**2).sum().backward()
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), saved["weight"].numpy(), rtol=1e-6)
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(opt.state[w][key].numpy(), state[key].numpy(), rtol=1e-5)
    # and one resumed from the file continues exactly as the uninterrupted run
    w2 = tinyattn.nn.Parameter(saved["weight"].clone())
    opt2 = tinyattn.optim.AdamW([w2], lr=0.1, weight_decay=0.01)
    opt2.load_state_dict(saved["optimizer"])
    for o, p in ((opt, w), (opt2, w2)):
        o.zero_grad()
        (p**2).sum().backward()
        o.step()
    np.testing.assert_allclose(w2.detach().numpy(), w.detach().numpy(), rtol=1e-6)


@needs_torch
def test_tinyattn_checkpoint_in_torch_format_resumes_in_torch_in_lockstep(tmp_path):
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    x = rng.standard_normal((4, 2)).astype(np.float32)
    w = tinyattn.nn.Parameter(tinyattn.tensor(w0))
    opt = tinyattn.optim.AdamW([w], **OPTIMIZERS["AdamW"])
    x_o = tinyattn.tensor(x)
    _steps(tinyattn, opt, w, x_o, 3)
    tinyattn.save({"w": w, "optimizer": opt.state_dict()}, tmp_path / "c.pt", format="torch")
    ckpt = torch.load(tmp_path / "c.pt", weights_only=True)
    w_t = torch.nn.Parameter(ckpt["w"].detach().clone())
    opt_t = torch.optim.AdamW([w_t], **OPTIMIZERS["AdamW"])
    opt_t.load_state_dict(ckpt["optimizer"])
    _steps(torch, opt_t, w_t, torch.from_numpy(x), 3)
    _steps(tinyattn, opt, w, x_o, 3)
    np.testing.assert_allclose(w_t.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)
