"""DLPack exchange: tinyattn.from_dlpack / to_dlpack and Tensor.__dlpack__ /
__dlpack_device__, round trips with NumPy and (when installed) torch, sharing memory."""

import numpy as np
import pytest
from harness import torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="round trip with torch")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_])
def test_numpy_round_trip_shares_memory(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    t = tinyattn.from_dlpack(a)
    assert t.shape == (2, 3) and t.numpy().dtype == dtype
    np.testing.assert_array_equal(t.numpy(), a)
    back = np.from_dlpack(t)
    np.testing.assert_array_equal(back, a)
    if dtype is not np.bool_:
        t[0, 0] = 5
        assert a[0, 0] == 5 and back[0, 0] == 5


def test_strided_views_keep_their_strides():
    x = tinyattn.arange(12.0, dtype=tinyattn.float64).reshape(3, 4).t()
    a = np.from_dlpack(x)
    assert a.strides == (8, 32)
    np.testing.assert_array_equal(a, x.numpy())
    y = tinyattn.from_dlpack(np.arange(10.0)[::2])
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0] and y.stride() == (2,)


def test_capsules_and_protocol():
    x = tinyattn.arange(3.0)
    assert x.__dlpack_device__() == (1, 0)
    capsule = tinyattn.to_dlpack(x)
    assert "dltensor" in repr(capsule)
    y = tinyattn.from_dlpack(capsule)
    y[0] = 4.0  # writable, as torch's import of a capsule
    assert x[0].item() == 4.0
    del x, capsule
    y[1] = 5.0  # the alias keeps the memory alive
    assert y.tolist() == [4.0, 5.0, 2.0]
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        tinyattn.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(RuntimeError, match="from_dlpack received an invalid capsule"):
        tinyattn.from_dlpack(3)
    copied = tinyattn.from_dlpack(np.ones(2), copy=True)
    copied[0] = 0.0
    assert copied.tolist() == [0.0, 1.0]


@needs_torch
def test_torch_round_trip():
    x = tinyattn.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(x)
    assert t.dtype == torch.float32 and t.shape == (2, 3)
    t[1, 1] = -1.0
    assert x[1, 1].item() == -1.0  # shared memory
    back = tinyattn.from_dlpack(t)
    back[0, 0] = 8.0
    assert t[0, 0].item() == 8.0
    from_capsule = tinyattn.from_dlpack(torch.to_dlpack(torch.arange(4)))
    assert from_capsule.dtype == tinyattn.int64 and from_capsule.tolist() == [0, 1, 2, 3]
    via_torch = torch.from_dlpack(tinyattn.to_dlpack(tinyattn.ones(2, dtype=tinyattn.float64)))
    assert via_torch.dtype == torch.float64 and via_torch.tolist() == [1.0, 1.0]
    theirs = torch.zeros(2, requires_grad=True)
    with pytest.raises(BufferError) as ours_err:
        tinyattn.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError) as torch_err:
        theirs.__dlpack__()
    assert str(ours_err.value) == str(torch_err.value)
