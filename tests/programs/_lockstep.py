"""Run one program under torch and under tinyattn, from the same weights, and compare.

A program is written once as ``program(lib, init, **cfg)``, using ``lib.nn``,
``lib.nn.functional``, ``lib.optim``, ``lib.utils.data`` as a user of
``import tinyattn as torch`` sees them. It calls ``init(lib, model)`` right after
building each model: the torch run records the model's initial ``state_dict``, the
tinyattn run loads it, so both start from torch's initialisation. The program returns
its observations (forward outputs, gradients, losses, parameters after a few
optimizer steps, generated tokens ...) as a dict; ``lockstep`` compares the two runs'
dicts value by value.

Data comes from NumPy (seeded), never from either library's random generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="lockstep programs compare with torch")

from integration.test_training_parity import TOL, _np  # noqa: E402  (the project's helpers)

import tinyattn  # noqa: E402

LIBS = {"torch": torch, "tinyattn": tinyattn}


@dataclass
class Loose:
    """An observation compared by shape and dtype only (e.g. sampled tokens)."""

    value: Any


@dataclass
class Exact:
    """An observation that must be equal in both runs (e.g. greedy tokens)."""

    value: Any


class Init:
    """Records torch's initial weights on the first call, loads them on later ones."""

    def __init__(self) -> None:
        self.states: list[dict[str, np.ndarray]] = []
        self.calls = 0

    def __call__(self, lib, model):
        if lib is torch:
            self.states.append({k: _np(v).copy() for k, v in model.state_dict().items()})
        else:
            state = self.states[self.calls]
            self.calls += 1
            result = model.load_state_dict({k: lib.tensor(v.copy()) for k, v in state.items()})
            assert not result.missing_keys and not result.unexpected_keys, result
        return model


def grads(model) -> dict[str, Any]:
    """Every parameter's gradient by name (None where there is none)."""
    return {n: (None if p.grad is None else p.grad.clone()) for n, p in model.named_parameters()}


def params(model) -> dict[str, Any]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def lockstep(program, dtype: str = "float64", **cfg) -> tuple[dict, dict]:
    """Run ``program`` under torch then tinyattn from the same weights; compare all observations."""
    init = Init()
    torch.manual_seed(0)
    obs_t = program(torch, init, dtype=dtype, **cfg)
    tinyattn.manual_seed(0)
    obs_a = program(tinyattn, init, dtype=dtype, **cfg)
    assert init.calls == len(init.states), "tinyattn run built a different number of models"
    compare(obs_t, obs_a, TOL[dtype], "")
    return obs_t, obs_a


def _is_tensor(x) -> bool:
    return isinstance(x, (torch.Tensor, tinyattn.Tensor))


def compare(t, a, tol: dict, where: str) -> None:
    """Recursively compare a torch observation ``t`` with tinyattn's ``a``."""
    if isinstance(t, Loose):
        assert isinstance(a, Loose), where
        assert _is_tensor(a.value), where
        assert tuple(a.value.shape) == tuple(t.value.shape), where
        assert str(a.value.dtype).split(".")[-1] == str(t.value.dtype).split(".")[-1], where
        return
    if isinstance(t, Exact):
        assert isinstance(a, Exact), where
        ta, aa = t.value, a.value
        if _is_tensor(ta):
            assert _is_tensor(aa), where
            np.testing.assert_array_equal(_np(aa), _np(ta), err_msg=where)
        else:
            assert aa == ta, where
        return
    if isinstance(t, dict):
        assert isinstance(a, dict) and list(a) == list(t), f"{where}: keys {list(a)} vs {list(t)}"
        for k in t:
            compare(t[k], a[k], tol, f"{where}.{k}")
        return
    if isinstance(t, (list, tuple)):
        assert isinstance(a, (list, tuple)) and len(a) == len(t), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(t, a)):
            compare(x, y, tol, f"{where}[{i}]")
        return
    if _is_tensor(t):
        assert _is_tensor(a), f"{where}: tinyattn gave {type(a).__name__}"
        assert tuple(a.shape) == tuple(t.shape), f"{where}: shape {a.shape} vs {t.shape}"
        assert str(a.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (
            f"{where}: dtype {a.dtype} vs {t.dtype}"
        )
        # A float32 tensor in a float64 program (e.g. ``torch.zeros(n)`` filled with losses,
        # then ``.mean()``) is compared at float32 precision: the two libraries may sum in
        # different orders (for one such mean torch is 1 ulp off the correctly rounded value
        # and tinyattn is not), which float64 tolerances would flag.
        if str(t.dtype).split(".")[-1] == "float32":
            tol = {k: max(v, TOL["float32"][k]) for k, v in tol.items()}
        np.testing.assert_allclose(_np(a), _np(t), **tol, err_msg=where)
        return
    if isinstance(t, float):
        assert isinstance(a, float), f"{where}: {type(a).__name__} vs float"
        assert math.isclose(a, t, rel_tol=tol["rtol"], abs_tol=tol["atol"]), f"{where}: {a} vs {t}"
        return
    assert a == t, f"{where}: {a!r} vs {t!r}"


def dtype_of(lib, dtype: str):
    return getattr(lib, dtype)
