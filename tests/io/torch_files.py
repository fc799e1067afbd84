"""The checkpoint that torch writes for the reader tests, and what loading it must give.

``tests/io/data/torch_zip.pt``, ``torch_legacy.pt``, ``torch_adamw.pt`` (an optimizer's
state) and the fault tests' ``small_zip.pt`` and ``small_legacy.pt`` were written by
:func:`write` with
torch 2.13 (``python -m tests.io.torch_files`` from the repository root writes them again),
so the reader is tested against torch's own bytes on machines without torch too.
"""

from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np

DATA = os.path.join(os.path.dirname(__file__), "data")
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def arrays() -> dict[str, np.ndarray]:
    """One small array per dtype, with values that exercise signs, NaN/inf and extremes."""
    out = {}
    for name in DTYPES:
        dtype = np.dtype(name)
        if dtype.kind == "f":
            a = np.linspace(-3.0, 3.0, 12).astype(dtype).reshape(3, 4)
            a[0, :3] = [np.nan, np.inf, -0.0]
        elif dtype.kind == "b":
            a = (np.arange(12) % 3 == 0).reshape(3, 4)
        else:
            info = np.iinfo(dtype)
            values = [info.min, info.max, 0, 1, info.min + 1, info.max - 1, 2, 3, 5, 7, 11, 13]
            a = np.array(values, dtype=dtype).reshape(3, 4)
        out[name] = a
    return out


BF16_VALUES = [1.5, -2.25, 0.0, 2.0**100]  # exactly representable in bfloat16


def build(torch):
    """The object to save, built with ``torch`` (the module)."""
    tensors = OrderedDict((k, torch.from_numpy(a.copy())) for k, a in arrays().items())
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return {
        "tensors": tensors,
        "base": base,
        "row": base[1],  # a view: shares base's storage
        "transposed": base.t(),
        "bf16": torch.tensor(BF16_VALUES, dtype=torch.bfloat16),
        "param": torch.nn.Parameter(torch.tensor([0.5, -0.5])),
        "frozen": torch.nn.Parameter(torch.tensor([1.0]), requires_grad=False),
        "grad_leaf": torch.tensor([2.0], requires_grad=True),
        "scalar": torch.tensor(3.25),
        "empty": torch.zeros(0, 3),
        "meta": [1, -2, 2**70, 0.1, "text", b"\x00\xff", None, True, (1, 2)],
        "set": {3, 4},
        "size": torch.Size([2, 3]),
        "dtype": torch.float16,
        "device": torch.device("cpu"),
        "step": 7,
    }


def small(torch) -> dict:
    """The small tree of the fault tests (tests/reliability/test_checkpoint_faults.py)."""
    return {
        "w": torch.tensor([[1.5, -2.0], [0.25, 3.0]]),
        "idx": torch.tensor([1, 0], dtype=torch.int64),
        "step": 3,
        "lr": 0.5,
    }


def write(torch, directory: str = DATA) -> None:
    torch.save(small(torch), os.path.join(directory, "small_zip.pt"))
    torch.save(
        small(torch),
        os.path.join(directory, "small_legacy.pt"),
        _use_new_zipfile_serialization=False,
    )
    obj = build(torch)
    torch.save(obj, os.path.join(directory, "torch_zip.pt"))
    torch.save(
        obj, os.path.join(directory, "torch_legacy.pt"), _use_new_zipfile_serialization=False
    )
    torch.save(adamw_state(torch), os.path.join(directory, "torch_adamw.pt"))


ADAMW_INIT = [[0.5, -1.0, 2.0], [0.25, 1.5, -0.75]]
ADAMW_STEPS = 3


def adamw_state(torch) -> dict:
    """torch's AdamW state after ``ADAMW_STEPS`` steps of ``sum(w**2)`` from ``ADAMW_INIT``."""
    w = torch.nn.Parameter(torch.tensor(ADAMW_INIT))
    opt = torch.optim.AdamW([w], lr=0.1, weight_decay=0.01)
    for _ in range(ADAMW_STEPS):
        opt.zero_grad()
        (w**2).sum().backward()
        opt.step()
    return {"weight": w.detach(), "optimizer": opt.state_dict()}


if __name__ == "__main__":
    import torch

    write(torch)
