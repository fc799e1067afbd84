"""tinyattn.fft against finite differences (complex128, every real and imaginary part) and
against torch.fft (values, dtypes and gradients in float64/complex128 and float32/complex64)."""

import numpy as np
import pytest
from harness import check_op, rand, torch

import tinyattn
import tinyattn.fft as tfft

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


@pytest.mark.parametrize("norm, n", [(None, None), ("backward", 3), ("forward", 7), ("ortho", 3)])
def test_fft_and_ifft(norm, n):
    z = rand(2, 5, complex=True)
    check_op(lambda T, z: T.fft.fft(z, n=n, norm=norm), z)
    check_op(lambda T, z: T.fft.ifft(z, n=n, dim=0, norm=norm), z)


@pytest.mark.parametrize("norm, n", [(None, None), ("forward", 4), ("ortho", 7)])
def test_fft_of_a_real_signal(norm, n):
    check_op(lambda T, x: T.fft.fft(x, n=n, norm=norm), rand(3, 5))


@pytest.mark.parametrize("norm, n", [(None, None), ("backward", 4), ("forward", 9), ("ortho", 5)])
def test_rfft(norm, n):
    check_op(lambda T, x: T.fft.rfft(x, n=n, norm=norm), rand(2, 6))
    check_op(lambda T, x: T.fft.rfft(x, n=n, dim=0, norm=norm), rand(5, 2))


@pytest.mark.parametrize(
    "norm, n", [(None, None), ("backward", 4), ("forward", 5), ("ortho", 11), (None, 5)]
)
def test_irfft(norm, n):
    """Even and odd n, shorter and longer than the input's 2 (m - 1)."""
    check_op(lambda T, z: T.fft.irfft(z, n=n, norm=norm), rand(2, 4, complex=True))


def test_irfft_of_rfft_is_the_signal():
    x = tinyattn.tensor(rand(3, 7))
    back = tfft.irfft(tfft.rfft(x), n=7)
    np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-6)


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_n_dimensional_transforms(norm):
    x, z = rand(3, 2, 2), rand(2, 3, 3, complex=True)
    check_op(lambda T, z: T.fft.fftn(z, norm=norm), z)
    check_op(lambda T, z: T.fft.ifftn(z, s=(5, 2), norm=norm), z)
    check_op(lambda T, z: T.fft.fftn(z, dim=(0, 2), norm=norm), z)
    check_op(lambda T, x: T.fft.rfftn(x, norm=norm), x)
    check_op(lambda T, x: T.fft.rfftn(x, s=(2, 6), dim=(0, 1), norm=norm), x)
    check_op(lambda T, z: T.fft.irfftn(z, norm=norm), z)
    check_op(lambda T, z: T.fft.irfftn(z, s=(3, 5), norm=norm), z)


def test_two_dimensional_forms():
    x, z = rand(3, 4), rand(2, 3, 4, complex=True)
    check_op(lambda T, z: T.fft.fft2(z), z)
    check_op(lambda T, z: T.fft.ifft2(z, norm="ortho"), z)
    check_op(lambda T, x: T.fft.rfft2(x), x)
    check_op(lambda T, z: T.fft.irfft2(z, s=(3, 4)), z)


def test_a_spectral_filter_end_to_end():
    """A real loss through rfft, a complex filter and irfft (the FNet/FNO pattern)."""
    check_op(
        lambda T, x, w: (T.fft.irfft(T.fft.rfft(x) * w, n=6) ** 2).sum(),
        rand(2, 6),
        rand(4, complex=True),
    )


def test_shifts():
    check_op(lambda T, x: T.fft.fftshift(x), rand(3, 5))
    check_op(lambda T, z: T.fft.ifftshift(z, dim=1), rand(2, 5, complex=True))


@needs_torch
@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.5])
def test_frequencies_match_torch(n, d):
    for name in ("fftfreq", "rfftfreq"):
        ours, theirs = getattr(tfft, name)(n, d), getattr(torch.fft, name)(n, d)
        assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    ours = tfft.fftfreq(4, dtype=tinyattn.float64)
    assert ours.dtype is tinyattn.float64
    np.testing.assert_array_equal(ours.numpy(), torch.fft.fftfreq(4, dtype=torch.float64))


@needs_torch
@pytest.mark.parametrize(
    "values", [np.arange(6), np.ones(4, np.float32), np.arange(4.0) + 1j, np.zeros((2, 3))]
)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fftn", "rfftn", "irfftn"])
def test_result_dtypes_match_torch(values, name):
    if name.startswith("r") and values.dtype.kind == "c":
        return  # refused by both (test_bad_input)
    ours = getattr(tfft, name)(tinyattn.tensor(values))
    theirs = getattr(torch.fft, name)(torch.tensor(values))
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    assert tuple(ours.shape) == tuple(theirs.shape)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: tfft.fft(tinyattn.ones(4), norm="bogus"), ValueError, "normalization mode"),
        (lambda: tfft.fft(tinyattn.ones(4), n=0), RuntimeError, "number of data points"),
        (lambda: tfft.fft(tinyattn.ones(4), dim=2), IndexError, "fft.fft"),
        (lambda: tfft.fft(tinyattn.tensor(1.0)), IndexError, "at least 1 dimension"),
        (lambda: tfft.rfft(tinyattn.ones(4, dtype=tinyattn.complex64)), RuntimeError, "real"),
        (lambda: tfft.fft([1.0, 2.0]), TypeError, "must be a Tensor"),
        (lambda: tfft.fftn(tinyattn.ones(2, 2), s=(2,), dim=(0, 1)), RuntimeError, "same length"),
        (lambda: tfft.fftn(tinyattn.ones(2, 2), dim=(0, 0)), RuntimeError, "unique"),
        (lambda: tfft.fft(tinyattn.ones(2, dtype=tinyattn.float16)), RuntimeError, "complex32"),
        (lambda: tfft.fftfreq(0), RuntimeError, "number of data points"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@needs_torch
def test_bad_input_that_torch_refuses_too():
    for call in (
        lambda T: T.fft.rfft(T.ones(4, dtype=T.complex64)),
        lambda T: T.fft.fft(T.ones(4), n=0),
        lambda T: T.fft.fft(T.ones(4), norm="bogus"),
    ):
        with pytest.raises((RuntimeError, ValueError)):
            call(torch)
        with pytest.raises((RuntimeError, ValueError)):
            call(tinyattn)


@pytest.mark.parametrize("factory", [tinyattn.fft.fftfreq, tinyattn.fft.rfftfreq])
def test_frequency_factories_refuse_what_a_cpu_tensor_cannot_be(factory):
    assert factory(4, layout=tinyattn.strided, device="cpu", pin_memory=False).shape[0] >= 3
    with pytest.raises(RuntimeError, match="not available"):
        factory(4, device="cuda")
    with pytest.raises(RuntimeError, match="pin_memory"):
        factory(4, pin_memory=True)
    with pytest.raises(NotImplementedError, match="sparse_coo"):
        factory(4, layout=tinyattn.sparse_coo)
    with pytest.raises(TypeError, match="'layout' must be a layout"):
        factory(4, layout=3)
