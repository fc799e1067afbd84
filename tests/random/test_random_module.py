"""``tinyattn.random``: torch.random's names, and ``fork_rng`` restoring the state."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn


def test_fork_rng_restores_the_state_after_the_block():
    tinyattn.manual_seed(3)
    with tinyattn.random.fork_rng():
        inside = tinyattn.rand(4)
        tinyattn.manual_seed(99)
        tinyattn.rand(2)
    after = tinyattn.rand(4)
    assert np.array_equal(inside.numpy(), after.numpy())
    with tinyattn.random.fork_rng(enabled=False):
        tinyattn.rand(1)
    assert not np.array_equal(tinyattn.rand(4).numpy(), after.numpy())


def test_fork_rng_restores_on_error_and_rejects_devices():
    tinyattn.manual_seed(1)
    with pytest.raises(KeyError), tinyattn.random.fork_rng(devices=[]):
        tinyattn.rand(3)
        raise KeyError("x")
    tinyattn.manual_seed(1)
    want = tinyattn.rand(3)
    tinyattn.manual_seed(1)
    with pytest.raises(KeyError), tinyattn.random.fork_rng():
        tinyattn.rand(3)
        raise KeyError("x")
    assert np.array_equal(tinyattn.rand(3).numpy(), want.numpy())
    with (
        pytest.raises(RuntimeError, match="devices must be None or empty"),
        tinyattn.random.fork_rng(devices=[0]),
    ):
        pass
    assert tinyattn.random.thread_safe_generator() is None


def test_has_torch_randoms_public_names():
    torch = pytest.importorskip("torch", reason="reads torch.random.__all__")
    assert sorted(n for n in torch.random.__all__ if not hasattr(tinyattn.random, n)) == []
