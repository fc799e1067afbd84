"""Edge cases a randomized comparison with torch 2.13 found: each once differed from torch.

Every test states torch's behaviour as data and, when torch is installed, checks
that torch still behaves so (the table cannot drift from the reference).
"""

import pytest

import tinyattn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed: no parity reference")

ALL_OPTIMIZERS = [
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "Rprop",
    "ASGD",
]


def _lr_two_elements(lib, name):
    p = lib.zeros(2, requires_grad=True)
    return getattr(lib.optim, name)([p], lr=lib.tensor([0.1, 0.2]))


@pytest.mark.parametrize("name", ALL_OPTIMIZERS)
def test_tensor_lr_with_two_elements_is_rejected_as_torch(name):
    # torch: ValueError("Tensor lr must be 1-element"), for every optimizer
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        _lr_two_elements(tinyattn, name)


@needs_torch
@pytest.mark.parametrize("name", ALL_OPTIMIZERS)
def test_tensor_lr_with_two_elements_torch_reference(name):
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        _lr_two_elements(torch, name)


def _sequential_with_plateau(lib):
    sched = lib.optim.lr_scheduler
    opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
    schedulers = [sched.StepLR(opt, 2), sched.ReduceLROnPlateau(opt)]
    return sched.SequentialLR(opt, schedulers, milestones=[2])


def test_sequential_lr_rejects_reduce_on_plateau_at_construction():
    # torch raises at construction; tinyattn used to accept it and fail in a later step()
    # with "ReduceLROnPlateau.step() missing 1 required positional argument"
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`.*index 1"):
        _sequential_with_plateau(tinyattn)


@needs_torch
def test_sequential_lr_rejects_reduce_on_plateau_torch_reference():
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`.*index 1"):
        _sequential_with_plateau(torch)


def _lbfgs_on_empty_parameters(lib):
    p = lib.zeros(0, requires_grad=True)
    opt = lib.optim.LBFGS([p])

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    return opt.step(closure)


def test_lbfgs_on_empty_parameters_raises_a_clear_error():
    # torch: RuntimeError from max() of an empty tensor; tinyattn raised NumPy's
    # "zero-size array to reduction operation maximum which has no identity"
    with pytest.raises(RuntimeError, match="LBFGS.step: every parameter is empty"):
        _lbfgs_on_empty_parameters(tinyattn)


@needs_torch
def test_lbfgs_on_empty_parameters_torch_reference():
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        _lbfgs_on_empty_parameters(torch)
