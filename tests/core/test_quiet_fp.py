"""NumPy's floating-point warnings are off inside ops (forward and backward), as torch
never warns for log(0), 0/0, inf - inf or overflow; the user's own NumPy error state is
kept outside them (core/quiet.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn.core import quiet

SPECIAL = [0.0, -1.0, 1.0, np.inf, -np.inf, np.nan]


def _loss(x):
    parts = [
        tinyattn.log(x),
        tinyattn.sqrt(x) / x,
        x * x.exp(),
        (x - x).sum() * x,  # inf - inf in a reduction
        x.softmax(-1),
        x.pow(x),
    ]
    return sum(p.sum() for p in parts)


@pytest.mark.parametrize("create_graph", [False, True])
def test_forward_and_backward_emit_no_floating_point_warnings(create_graph):
    x = tinyattn.tensor(SPECIAL, dtype=tinyattn.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = _loss(x)
        (grad,) = tinyattn.autograd.grad(loss, [x], create_graph=create_graph)
        if create_graph:
            grad.sum().backward()
    assert np.isnan(loss.item())
    assert grad.shape == x.shape


def test_users_error_state_is_kept_around_ops():
    x = tinyattn.tensor([0.0], requires_grad=True)
    with np.errstate(divide="raise"):
        y = tinyattn.log(x)  # quiet inside the op
        y.sum().backward()
        assert np.isneginf(y.item()) and np.isinf(x.grad.item())
        with pytest.raises(FloatingPointError):  # the user's own NumPy call still raises
            np.log(np.zeros(1))
    assert np.geterr()["divide"] == "warn"


def test_quiet_block_restores_the_previous_state():
    before = np.geterr()
    with quiet.quiet():
        assert set(np.geterr().values()) == {"ignore"}
        with np.errstate(invalid="raise"):
            assert np.geterr()["invalid"] == "raise"
        assert np.geterr()["invalid"] == "ignore"
    assert np.geterr() == before
