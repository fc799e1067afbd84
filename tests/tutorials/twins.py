"""Run tutorial code under torch and under tinyattn, with the same weights and inputs.

The tutorials' classes live once, in ``examples/`` (each script imports
``tinyattn as torch`` exactly where the tutorial imports torch). ``load_example``
executes a script's source as a module, either as written or with those import
lines swapped back to torch: the project's promise, tested literally.
"""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

import tinyattn

torch = pytest.importorskip("torch", reason="tutorial parity needs torch installed")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SWAPS = (
    ("import tinyattn as torch", "import torch"),
    ("import tinyattn.nn.functional as F", "import torch.nn.functional as F"),
    ("import tinyattn.nn as nn", "import torch.nn as nn"),
    ("from tinyattn import nn", "from torch import nn"),
)


def load_example(name: str, framework: str) -> types.ModuleType:
    """``examples/<name>.py`` as a module, on ``framework`` ("tinyattn" or "torch")."""
    path = EXAMPLES / f"{name}.py"
    source = path.read_text()
    if framework == "torch":
        for ours, theirs in SWAPS:
            source = source.replace(ours, theirs)
    module = types.ModuleType(f"{name}_on_{framework}")
    module.__file__ = str(path)
    exec(compile(source, f"{path} ({framework})", "exec"), module.__dict__)
    return module


def both(name: str) -> tuple[types.ModuleType, types.ModuleType]:
    """(torch version, tinyattn version) of an example."""
    return load_example(name, "torch"), load_example(name, "tinyattn")


def twin_modules(name: str, factory, *, dtype=np.float64):
    """Build ``factory(module)`` from both versions; copy torch's weights into ours."""
    ref_module, our_module = both(name)
    torch.manual_seed(0)
    ref = factory(ref_module)
    ours = factory(our_module)
    if dtype == np.float64:
        ref, ours = ref.double(), ours.double()
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def to_both(array: np.ndarray, requires_grad: bool = False):
    ref = torch.tensor(array, requires_grad=requires_grad and array.dtype.kind == "f")
    ours = tinyattn.tensor(array, requires_grad=requires_grad and array.dtype.kind == "f")
    return ref, ours


def assert_close(ours, ref, atol=1e-10, rtol=1e-8, what="output"):
    a = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    b = ref.detach().numpy()
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, err_msg=what)


def assert_same_grads(ours_module, ref_module, atol=1e-10, rtol=1e-8):
    ref_params = dict(ref_module.named_parameters())
    names = [name for name, _ in ours_module.named_parameters()]
    assert names == list(ref_params), "parameter names differ from torch's"
    for name, p in ours_module.named_parameters():
        q = ref_params[name]
        assert (p.grad is None) == (q.grad is None), f"{name}: gradient presence differs"
        if q.grad is not None:
            np.testing.assert_allclose(
                p.grad.numpy(), q.grad.numpy(), atol=atol, rtol=rtol, err_msg=f"gradient of {name}"
            )
