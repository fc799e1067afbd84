"""Run tutorial code under torch and under tinyattn, with the same weights and inputs.

Each tutorial is written once, as a builder ``build(torch, nn, F)`` that defines
its classes with the module it is given, exactly as the tutorial does after
``import torch`` / ``from torch import nn`` / ``import torch.nn.functional as F``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn

torch = pytest.importorskip("torch", reason="tutorial parity needs torch installed")


def libs():
    """(torch, nn, F) for both frameworks."""
    import tinyattn.nn as tnn
    import tinyattn.nn.functional as tF

    return (torch, torch.nn, torch.nn.functional), (tinyattn, tnn, tF)


def twin_modules(build, make_args, *, dtype=np.float64):
    """Instantiate the tutorial's model under both libraries; copy torch's weights over."""
    (T, Tnn, TF), (A, Ann, AF) = libs()
    torch.manual_seed(0)
    ref = build(T, Tnn, TF)(*make_args(T))
    ours = build(A, Ann, AF)(*make_args(A))
    if dtype == np.float64:
        ref = ref.double()
        ours = ours.double()
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
    for name, p in ours_module.named_parameters():
        q = ref_params[name]
        assert (p.grad is None) == (q.grad is None), f"{name}: gradient presence differs"
        if q.grad is not None:
            np.testing.assert_allclose(
                p.grad.numpy(), q.grad.numpy(), atol=atol, rtol=rtol, err_msg=f"gradient of {name}"
            )
