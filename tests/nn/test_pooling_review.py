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


# torch's adaptive_avg_pool1d/2d return an empty result for 0 channels; the other pools raise
EMPTY_CHANNELS_ALLOWED = ("adaptive_avg_pool1d", "adaptive_avg_pool2d")


@pytest.mark.parametrize("name,n,kw", [p for p in POOLS if p[0] not in EMPTY_CHANNELS_ALLOWED])
@pytest.mark.parametrize("lead", [(1, 0), (0, 0), (0,)])
def test_zero_channels_are_refused(name, n, kw, lead):
    # torch raises RuntimeError (only the batch dim may be empty); we returned an empty result
    x = tinyattn.zeros(*lead, *(4,) * n)
    with pytest.raises(RuntimeError, match="non-zero channels"):
        getattr(F, name)(x, **kw)


@pytest.mark.parametrize("name", EMPTY_CHANNELS_ALLOWED)
@pytest.mark.parametrize("lead", [(1, 0), (0, 0), (0,)])
def test_adaptive_avg_pool_with_zero_channels_is_empty_as_in_torch(name, lead):
    n = int(name[-2])
    out = getattr(F, name)(tinyattn.zeros(*lead, *(4,) * n), output_size=2)
    assert tuple(out.shape) == (*lead, *(2,) * n)


@pytest.mark.parametrize(
    "shape,kernel,padding",
    [
        ((1, 1, 5, 2, 1), (4, 3, 2), 1),  # padded input 7x4x3 holds the kernel: torch still refuses
        ((1, 3, 3, 1), (1, 1, 2), (0, 0, 1)),  # unbatched
        ((2, 1, 2, 5, 7), (4, 1, 4), (1, 0, 1)),
    ],
)
def test_avg_pool3d_refuses_a_kernel_larger_than_the_unpadded_input(shape, kernel, padding):
    x = tinyattn.zeros(*shape)
    with pytest.raises(RuntimeError, match="smaller than kernel_size"):
        F.avg_pool3d(x, kernel, 1, padding)
    with pytest.raises(RuntimeError, match="smaller than kernel_size"):
        tinyattn.nn.AvgPool3d(kernel, 1, padding)(x)
    # max_pool3d (and 1-D/2-D avg pooling) accept it, as torch's
    assert F.max_pool3d(x, kernel, 1, padding).shape[-3:] is not None
    if torch is not None:
        with pytest.raises(RuntimeError, match="smaller than kernel size"):
            torch.nn.functional.avg_pool3d(torch.zeros(*shape), kernel, 1, padding)


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint8"])
def test_max_unpool_refuses_indices_other_than_int64(dtype):
    # torch: "elements in indices should be type int64"; we scattered with them
    y, i = F.max_pool2d(tinyattn.randn(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="int64 indices"):
        F.max_unpool2d(y, i.to(getattr(tinyattn, dtype)), 2)
    with pytest.raises(RuntimeError, match="int64 indices"):
        F.max_unpool1d(y[0], i[0].to(getattr(tinyattn, dtype)), 2)


# (input spatial, kernel, stride, output_size, accepted by torch): default size d =
# (H - 1) stride - 2 padding + kernel; torch wants d - stride < size < d + stride per dim
UNPOOL_SIZES = [
    ((1, 1), 2, 2, (2, 2), True),
    ((1, 1), 2, 2, (3, 3), True),
    ((1, 1), 2, 2, (1, 1), True),
    ((1, 1), 2, 2, (4, 4), False),
    ((1, 1), 2, 2, (5, 5), False),
    ((1, 1), 2, 2, (1, 1, 4, 4), False),
    ((2, 3), 2, 1, (3, 4), True),
    ((2, 3), 2, 1, (3, 5), False),
    ((2, 3), 2, 1, (2, 4), False),
]


@pytest.mark.parametrize("spatial,kernel,stride,size,ok", UNPOOL_SIZES)
def test_max_unpool_output_size_range(spatial, kernel, stride, size, ok):
    x = tinyattn.ones(1, 1, *spatial)
    index = tinyattn.zeros(1, 1, *spatial, dtype=tinyattn.int64)
    if ok:
        out = F.max_unpool2d(x, index, kernel, stride, output_size=size)
        assert tuple(out.shape[-2:]) == tuple(size[-2:])
    else:
        with pytest.raises(ValueError, match="output_size"):
            F.max_unpool2d(x, index, kernel, stride, output_size=size)


@needs_torch
@pytest.mark.parametrize("spatial,kernel,stride,size,ok", UNPOOL_SIZES)
def test_max_unpool_output_size_range_is_torchs(spatial, kernel, stride, size, ok):
    x = torch.ones(1, 1, *spatial)
    index = torch.zeros(1, 1, *spatial, dtype=torch.int64)
    if ok:
        torch.nn.functional.max_unpool2d(x, index, kernel, stride, output_size=size)
    else:
        with pytest.raises(ValueError):
            torch.nn.functional.max_unpool2d(x, index, kernel, stride, output_size=size)


def test_zero_channel_data_check_does_not_touch_valid_shapes():
    x = tinyattn.tensor(np.arange(8.0).reshape(2, 4))  # unbatched (C, L)
    assert F.max_pool1d(x, 2).tolist() == [[1.0, 3.0], [5.0, 7.0]]
