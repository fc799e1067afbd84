"""The three one-dimensional discrete Fourier transforms, as differentiable ops.

With ``F`` the DFT matrix (``F[k, t] = exp(-2 pi i k t / n)``) and ``s`` the scale the
``norm`` mode puts on a transform (``"backward"``: 1 forward, 1/n inverse; ``"forward"``:
1/n forward, 1 inverse; ``"ortho"``: 1/sqrt(n) both ways)::

    fft(x)   = s F x          (complex -> complex, length n)
    ifft(x)  = s conj(F) x
    rfft(x)  = the first n//2 + 1 entries of fft(x), x real
    irfft(x) = ifft of the Hermitian-symmetric extension of x, a real result of length n

Each is linear, so under torch's convention (``docs/complex.md``) its gradient is its
adjoint applied to ``g``; ``F^H = conj(F)``, and the adjoint's scale is the same ``s``,
which is what the other direction computes with the *dual* norm mode (``backward`` <->
``forward``, ``ortho`` stays). ``n`` pads the input with zeros or cuts it first, so the
gradient is cut or padded back to the input's length.
"""

from __future__ import annotations

import numpy as np

from ..core.function import Function

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def fit_length(xp, x, length: int, axis: int):
    """``x`` cut to, or padded with zeros up to, ``length`` along ``axis``."""
    have = x.shape[axis]
    if have > length:
        index = (slice(None),) * axis + (slice(0, length),)
        return xp.getitem(x, index)
    if have < length:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (0, length - have)
        return xp.zero_pad(x, pad)
    return x


def _complex_dtype(x: np.ndarray) -> np.dtype:
    return np.dtype(np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128)


def _real_dtype(x: np.ndarray) -> np.dtype:
    return np.dtype(np.float32 if x.dtype in (np.float32, np.complex64) else np.float64)


class FFT(Function):
    """out = fft(x, n) along ``axis`` (``inverse``: ifft).

    dx = ifft(g, dual norm) (for ifft: fft(g, dual norm)), cut or zero-padded back to
    x's length along ``axis``
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, n, axis, norm, inverse):
        ctx.args = (x.shape[axis], n, axis, norm, inverse)
        transform = np.fft.ifft if inverse else np.fft.fft
        return transform(x, n=n, axis=axis, norm=norm).astype(_complex_dtype(x), copy=False)

    @staticmethod
    def backward(ctx, g):
        length, n, axis, norm, inverse = ctx.args
        xp = ctx.xp
        grad = xp.apply(FFT, g, n, axis, _DUAL[norm], not inverse)
        return fit_length(xp, grad, length, axis), None, None, None, None


class RFFT(Function):
    """out = rfft(x, n) along ``axis`` (x real): the first n//2 + 1 entries of fft(x).

    dx = Re(ifft(g zero-padded to n, dual norm)), cut or zero-padded back to x's length
    (the engine takes the real part: x is real)
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, n, axis, norm):
        ctx.args = (x.shape[axis], n, axis, norm)
        out = np.fft.rfft(x, n=n, axis=axis, norm=norm)
        return out.astype(_complex_dtype(x), copy=False)

    @staticmethod
    def backward(ctx, g):
        length, n, axis, norm = ctx.args
        xp = ctx.xp
        full = fit_length(xp, g, n, axis)  # the entries rfft dropped had no effect: zeros
        grad = xp.apply(FFT, full, n, axis, _DUAL[norm], True)
        return fit_length(xp, grad, length, axis), None, None, None


class IRFFT(Function):
    """out = irfft(x, n) along ``axis``: the real signal of length n whose rfft is x (only
    the first n//2 + 1 entries of x are read; the imaginary parts of entry 0 and, for even
    n, of entry n/2 are ignored).

    dx = w * rfft(g, dual norm), w = 2 for the entries that stand for a conjugate pair
    (k != 0 and 2k != n), 1 for the others; cut or zero-padded back to x's length
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x, n, axis, norm):
        ctx.args = (x.shape[axis], n, axis, norm)
        return np.fft.irfft(x, n=n, axis=axis, norm=norm).astype(_real_dtype(x), copy=False)

    @staticmethod
    def backward(ctx, g):
        length, n, axis, norm = ctx.args
        xp = ctx.xp
        grad = xp.apply(RFFT, g, n, axis, _DUAL[norm])
        k = np.arange(n // 2 + 1)
        weights = np.where((k == 0) | (2 * k == n), 1.0, 2.0)  # (the engine casts the result)
        weights = weights.reshape((-1,) + (1,) * (g.ndim - axis - 1))
        return fit_length(xp, grad * weights, length, axis), None, None, None
