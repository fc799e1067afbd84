"""ops/windows.py and ops/creation/from_buffers.py: windows, logspace, vander, asarray, frombuffer,
scalar_tensor, empty_strided, and the Tensor method argwhere. Torch parity of values where
installed; plain assertions that run without it; bad input (the random samplers are tested
in tests/ops/random/)."""

import array

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import rand, run_gradcheck, run_gradgradcheck, run_parity, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
WINDOWS = ["hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window"]


@needs_torch
@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_match_torch(name, periodic, dtype):
    for n in (0, 1, 2, 5, 8, 33, 100, 199):
        ours = getattr(tinyattn, name)(n, periodic, dtype=getattr(tinyattn, dtype))
        theirs = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
        assert ours.dtype == getattr(tinyattn, dtype) and tuple(ours.shape) == (n,)
        if name == "bartlett_window":  # no cos, no I0: the same operations, the same bits
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        elif name == "kaiser_window":  # torch's float32 I0 is accurate to ~1e-6
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=5e-6, atol=1e-7)
        else:  # torch's operations in the dtype; its cos may differ from ours by an ulp
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=1.5e-7)


@needs_torch
def test_window_options_match_torch():
    pairs = [
        (tinyattn.kaiser_window(7, False, 5.0), torch.kaiser_window(7, False, 5.0)),
        (tinyattn.hamming_window(6, True, 0.5, 0.5), torch.hamming_window(6, True, 0.5, 0.5)),
        (tinyattn.hann_window(4), torch.hann_window(4)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-7)


def test_windows_without_torch():
    np.testing.assert_allclose(tinyattn.hann_window(4).numpy(), [0, 0.5, 1, 0.5], atol=1e-7)
    np.testing.assert_allclose(
        tinyattn.hann_window(4, periodic=False, dtype=tinyattn.float64).numpy(), [0, 0.75, 0.75, 0]
    )
    np.testing.assert_allclose(tinyattn.bartlett_window(5).numpy(), [0, 0.4, 0.8, 0.8, 0.4])
    assert tinyattn.blackman_window(1).tolist() == [1.0]
    assert tinyattn.kaiser_window(0).shape == (0,)
    w = tinyattn.hann_window(3, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.dtype == tinyattn.float32


def test_logspace():
    np.testing.assert_allclose(tinyattn.logspace(0, 2, 3).numpy(), [1, 10, 100])
    assert tinyattn.logspace(0, 2, 3, base=2, dtype=tinyattn.int64).tolist() == [1, 2, 4]
    assert tinyattn.logspace(0, 2, 0).shape == (0,)
    if torch is not None:
        for args in [(-1, 2, 5), (0.5, -3, 7, 3.0)]:
            ours, theirs = tinyattn.logspace(*args), torch.logspace(*args)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
            assert ours.dtype == tinyattn.float32


def _vander(lib, x, **kw):
    return lib.vander(x, **kw)


@pytest.mark.parametrize("kw", [{}, {"N": 4}, {"N": 2, "increasing": True}, {"increasing": True}])
def test_vander_gradcheck_and_values(kw):
    # torch 2.13's own vander backward fails ("modified by an inplace operation"), so its
    # gradient is checked against finite differences only; values against torch
    run_gradcheck(lambda T, x: T.vander(x, **kw), rand(3))
    run_gradcheck(lambda T, x: T.vander(x, **kw), np.array([0.5, 0.0, -1.2]))
    run_gradgradcheck(lambda T, x: T.vander(x, **kw), rand(3))
    run_parity(lambda T, x: T.vander(x, **kw), rand(3), grad=[False])


def test_vander_without_torch():
    out = tinyattn.vander(tinyattn.tensor([1, 2, 3], dtype=tinyattn.int32))
    assert out.tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]] and out.dtype == tinyattn.int64
    assert tinyattn.vander(tinyattn.tensor([True, False])).tolist() == [[1, 1], [0, 1]]
    assert tinyattn.vander(tinyattn.tensor([1.0, 2.0]), N=0).shape == (2, 0)
    assert tinyattn.vander(tinyattn.tensor([1.0, 2.0], requires_grad=True), N=1).grad_fn is None


def test_asarray_aliases_numpy_and_tensors():
    a = np.arange(6.0)
    x = tinyattn.asarray(a[::2])
    a[2] = 50.0
    assert x.tolist() == [0.0, 50.0, 4.0] and x.dtype == tinyattn.float64
    y = tinyattn.asarray(a, copy=True)
    a[0] = -1.0
    assert y[0].item() == 0.0
    z = tinyattn.asarray(a, dtype=tinyattn.float32)
    a[1] = 9.0
    assert z[1].item() == 1.0 and z.dtype == tinyattn.float32
    t = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    assert tinyattn.asarray(t) is t
    assert tinyattn.asarray(t, dtype=tinyattn.float64).grad_fn is not None
    assert tinyattn.asarray(t, copy=True).grad_fn is not None
    plain = tinyattn.tensor([1.0])
    assert tinyattn.asarray(plain, requires_grad=True) is plain and plain.requires_grad


def test_asarray_sequences_numbers_and_buffers():
    assert tinyattn.asarray([1, 2.5]).dtype == tinyattn.float32
    assert tinyattn.asarray(3).dtype == tinyattn.int64 and tinyattn.asarray(3).shape == ()
    assert tinyattn.asarray(np.float64(2.0)).dtype == tinyattn.float64
    assert tinyattn.asarray([tinyattn.tensor(1.0), tinyattn.tensor(2.0)]).tolist() == [1.0, 2.0]
    buf = array.array("i", [1, 2, 3])
    t = tinyattn.asarray(buf, dtype=tinyattn.int32)
    buf[0] = 7
    assert t.tolist() == [7, 2, 3]
    assert tinyattn.asarray(array.array("f", [1.5])).tolist() == [1.5]
    if torch is not None:
        for obj in ([1, 2.5], 3, [[True, False]], np.arange(4, dtype=np.int16)[::2]):
            ours, theirs = tinyattn.asarray(obj), torch.asarray(obj)
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_frombuffer_shares_memory():
    buf = bytearray(b"\x01\x00\x02\x00\x03\x00")
    t = tinyattn.frombuffer(buf, dtype=tinyattn.int16)
    buf[0] = 9
    assert t.tolist() == [9, 2, 3]
    assert tinyattn.frombuffer(buf, dtype=tinyattn.int16, count=2, offset=2).tolist() == [2, 3]
    r = tinyattn.frombuffer(b"\x00\x00\x80\x3f", dtype=tinyattn.float32, requires_grad=True)
    assert r.tolist() == [1.0] and r.requires_grad
    with pytest.raises(RuntimeError, match="read-only"):
        tinyattn.frombuffer(b"\x01\x00", dtype=tinyattn.int16).add_(1)


def test_scalar_tensor_and_empty_strided():
    s = tinyattn.scalar_tensor(3)
    assert s.shape == () and s.dtype == tinyattn.float32 and s.item() == 3.0
    assert tinyattn.scalar_tensor(True).item() == 1.0
    assert tinyattn.scalar_tensor(3, dtype=tinyattn.int64).dtype == tinyattn.int64
    e = tinyattn.empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2)
    assert tinyattn.empty_strided((2, 0), (0, 1)).shape == (2, 0)
    if torch is not None:
        for size, stride in [((2, 3), (1, 2)), ((3, 4), (4, 1)), ((2, 2), (0, 1))]:
            assert (
                tinyattn.empty_strided(size, stride).stride()
                == torch.empty_strided(size, stride).stride()
            )


def test_argwhere_method():
    assert tinyattn.tensor([0, 3, 0, 2]).argwhere().tolist() == [[1], [3]]


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda L: L.hann_window(-1), r"hann_window.*non-negative.*-1"),
        (lambda L: L.kaiser_window(4, dtype=L.int64), r"kaiser_window.*floating.*int64"),
        (lambda L: L.logspace(0, 1, -2), r"logspace.*non-negative.*-2"),
        (lambda L: L.vander(L.ones(2, 2)), r"vander.*one-dimensional.*\[2, 2\]"),
        (lambda L: L.vander(L.ones(2), N=-1), r"vander.*N must be non-negative.*-1"),
        (
            lambda L: L.asarray(np.arange(3.0), dtype=L.float32, copy=False),
            r"alias.*float64.*float32",
        ),
        (lambda L: L.asarray([1, 2], copy=False), r"can't alias arbitrary sequence"),
        (lambda L: L.asarray(L.tensor([1, 2]), requires_grad=True), r"floating point"),
        (
            lambda L: L.frombuffer(bytearray(b"\x01\x00\x02"), dtype=L.int16),
            r"multiple of element size \(2\)",
        ),
        (
            lambda L: L.frombuffer(bytearray(4), dtype=L.int16, count=3),
            r"3 \* 2 bytes.*\(4 bytes\)",
        ),
        (lambda L: L.frombuffer(bytearray(4), dtype=L.int16, offset=4), r"offset \(4 bytes\)"),
        (lambda L: L.frombuffer(bytearray(), dtype=L.int16), r"buffer length \(0\)"),
        (lambda L: L.frombuffer([1, 2], dtype=L.int16), r"buffer protocol"),
        (lambda L: L.empty_strided((2, 3), (1,)), r"sizes \(2\).*strides \(1\)"),
    ],
)
def test_creation_bad_input(call, expected):
    check_bad_call(call, expected)
