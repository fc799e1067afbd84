"""Discrete Fourier transforms, as ``torch.fft``: ``fft``/``ifft``, ``rfft``/``irfft``, their
2-D and n-D forms, ``fftfreq``/``rfftfreq`` and ``fftshift``/``ifftshift``.

The one-dimensional transforms are differentiable ops (``_transforms.py``: each gradient
is the adjoint transform, under torch's complex convention, ``docs/complex.md``); the
n-dimensional ones apply them one dim after another (the DFT is separable), so their
gradients are the composition's. ``norm`` is ``"backward"`` (the default: no scale
forward, 1/n inverse), ``"forward"`` (1/n forward) or ``"ortho"`` (1/sqrt(n) both ways).
Real inputs give complex64 (float32) or complex128 (float64) results; integer inputs
are computed in the default float dtype, as torch.
"""

from __future__ import annotations

from ..foundations.type_names import type_name

from collections.abc import Sequence

import numpy as np

from ..core import _dtype as dt
from ..core.device import check_device
from ..tensor_api.tensor import Tensor
from ..ops._util import gradient_doc, normalize_dim
from ..ops.shape.rearrange import roll
from ._transforms import FFT, IRFFT, RFFT

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]


def _input(input, op: str, real: bool = False) -> Tensor:
    """``input`` checked, integer/bool cast to the default float dtype (torch's rule)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fft.{op}(): argument 'input' must be a Tensor, not {type_name(input)}")
    kind = input._data.dtype.kind
    if real and kind == "c":
        raise RuntimeError(f"fft.{op}(): expects a real input tensor, but got {input.dtype}")
    if kind in "biu":
        return input.to(dt.get_default_dtype())
    if input._data.dtype == np.float16:
        raise RuntimeError(
            f"fft.{op}(): float16 input would give complex32, which tinyattn cannot store "
            "(NumPy has no complex32); convert to float32 first"
        )
    return input


def _norm(norm: str | None, op: str) -> str:
    if norm is None:
        return "backward"
    if norm not in ("backward", "forward", "ortho"):
        raise ValueError(
            f'fft.{op}(): Invalid normalization mode: "{norm}" (expected None, "backward", '
            '"forward" or "ortho")'
        )
    return norm


def _length(n, default: int, op: str) -> int:
    if n is None or n == -1:
        return default
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise RuntimeError(f"fft.{op}(): Invalid number of data points ({n}) specified")
    return int(n)


def _one_dim(input: Tensor, n, dim: int, op: str) -> tuple[int, int]:
    if input.ndim == 0:
        raise IndexError(f"fft.{op}(): expects a tensor with at least 1 dimension, got a 0-d one")
    axis = normalize_dim(dim, input.ndim, f"fft.{op}")
    return axis, _length(n, input.shape[axis], op)


@gradient_doc(FFT)
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The discrete Fourier transform along ``dim`` (``n``: pad with zeros or cut to n first)."""
    x = _input(input, "fft")
    axis, length = _one_dim(x, n, dim, "fft")
    return FFT.apply(x, length, axis, _norm(norm, "fft"), False)


@gradient_doc(FFT)
def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse discrete Fourier transform along ``dim``."""
    x = _input(input, "ifft")
    axis, length = _one_dim(x, n, dim, "ifft")
    return FFT.apply(x, length, axis, _norm(norm, "ifft"), True)


@gradient_doc(RFFT)
def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The Fourier transform of a real signal: the n//2 + 1 non-negative frequencies."""
    x = _input(input, "rfft", real=True)
    axis, length = _one_dim(x, n, dim, "rfft")
    return RFFT.apply(x, length, axis, _norm(norm, "rfft"))


@gradient_doc(IRFFT)
def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default 2 (m - 1) for m
    input frequencies)."""
    x = _input(input, "irfft")
    axis = _one_dim(x, None, dim, "irfft")[0]
    length = _length(n, 2 * (x.shape[axis] - 1), "irfft")
    if x._data.dtype.kind != "c":
        x = x.to(dt.from_numpy_dtype(x._data.dtype).to_complex())
    return IRFFT.apply(x, length, axis, _norm(norm, "irfft"))


def _dims_and_sizes(x: Tensor, s, dim, op: str) -> tuple[list[int], list]:
    """torch's rule: ``dim`` None and ``s`` given: the last len(s) dims; both None: all dims."""
    if dim is None:
        dims = list(range(x.ndim - len(s), x.ndim)) if s is not None else list(range(x.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [normalize_dim(d, x.ndim, f"fft.{op}") for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"fft.{op}(): dims must be unique, got {dims}")
    sizes = [None] * len(dims) if s is None else list(s)
    if len(sizes) != len(dims):
        raise RuntimeError(
            f"fft.{op}(): When given, dim and shape arguments must have the same length "
            f"(got s={list(sizes)}, dim={dims})"
        )
    if not dims:
        raise RuntimeError(f"fft.{op}(): expects at least one dimension to transform")
    return dims, sizes


def fftn(input: Tensor, s: Sequence[int] | None = None, dim=None, norm: str | None = None):
    """The n-dimensional Fourier transform: :func:`fft` along each of ``dim`` in turn.

    Composes: tinyattn.fft.fft
    """
    x = _input(input, "fftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "fftn")
    for d, n in zip(dims, sizes):
        x = fft(x, n, d, norm)
    return x


def ifftn(input: Tensor, s: Sequence[int] | None = None, dim=None, norm: str | None = None):
    """The n-dimensional inverse Fourier transform: :func:`ifft` along each of ``dim``.

    Composes: tinyattn.fft.ifft
    """
    x = _input(input, "ifftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "ifftn")
    for d, n in zip(dims, sizes):
        x = ifft(x, n, d, norm)
    return x


def rfftn(input: Tensor, s: Sequence[int] | None = None, dim=None, norm: str | None = None):
    """The n-dimensional Fourier transform of a real signal: :func:`rfft` along the last of
    ``dim``, then :func:`fft` along the others.

    Composes: tinyattn.fft.rfft, tinyattn.fft.fft
    """
    x = _input(input, "rfftn", real=True)
    dims, sizes = _dims_and_sizes(x, s, dim, "rfftn")
    x = rfft(x, sizes[-1], dims[-1], norm)
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = fft(x, n, d, norm)
    return x


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim=None, norm: str | None = None):
    """The inverse of :func:`rfftn`: :func:`ifft` along all but the last of ``dim``, then
    :func:`irfft` along the last.

    Composes: tinyattn.fft.ifft, tinyattn.fft.irfft
    """
    x = _input(input, "irfftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "irfftn")
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = ifft(x, n, d, norm)
    return irfft(x, sizes[-1], dims[-1], norm)


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """:func:`fftn` over the last two dims.   Composes: tinyattn.fft.fftn"""
    return fftn(input, s, dim, norm)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """:func:`ifftn` over the last two dims.   Composes: tinyattn.fft.ifftn"""
    return ifftn(input, s, dim, norm)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """:func:`rfftn` over the last two dims.   Composes: tinyattn.fft.rfftn"""
    return rfftn(input, s, dim, norm)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    """:func:`irfftn` over the last two dims.   Composes: tinyattn.fft.irfftn"""
    return irfftn(input, s, dim, norm)


def _check_factory_options(op: str, layout, device, pin_memory: bool) -> None:
    """A dense CPU tensor is all tinyattn makes: refuse any other layout, device or pinning."""
    check_device(device)
    if layout is not None and type(layout).__name__ != "layout":
        raise TypeError(f"{op}(): argument 'layout' must be a layout, not {type_name(layout)}")
    if layout is not None and str(layout).rpartition(".")[2] != "strided":
        raise NotImplementedError(f"{op}(): layout={layout} is not supported: tensors are dense")
    if pin_memory:
        raise RuntimeError(
            f"{op}(): pin_memory=True needs an accelerator; tinyattn runs on the CPU"
        )


def _frequencies(values: np.ndarray, d: float, dtype, requires_grad: bool) -> Tensor:
    target = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if not target.is_floating_point:
        raise RuntimeError(f"fftfreq(): expected a floating dtype, got {target}")
    out = Tensor._make((values / (d * 1.0)).astype(target.np_dtype))
    return out.requires_grad_() if requires_grad else out


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of :func:`fft` of length ``n`` and spacing ``d``:
    ``[0, 1, ..., n//2 - 1 (or n//2), -(n//2), ..., -1] / (d n)``."""
    _check_factory_options("fftfreq", layout, device, pin_memory)
    n = _length(n, 0, "fftfreq")
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _frequencies(k / n, d, dtype, requires_grad)


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of :func:`rfft` of length ``n``: ``[0, 1, ..., n//2] / (d n)``."""
    _check_factory_options("rfftfreq", layout, device, pin_memory)
    n = _length(n, 0, "rfftfreq")
    return _frequencies(np.arange(n // 2 + 1) / n, d, dtype, requires_grad)


def _shift_dims(x: Tensor, dim) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(x.ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(normalize_dim(d, x.ndim, "fftshift") for d in dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Move the zero frequency to the centre: roll each of ``dim`` by half its size.

    Composes: tinyattn.roll
    """
    dims = _shift_dims(input, dim)
    return roll(input, tuple(input.shape[d] // 2 for d in dims), dims)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of :func:`fftshift`.   Composes: tinyattn.roll"""
    dims = _shift_dims(input, dim)
    return roll(input, tuple(-(input.shape[d] // 2) for d in dims), dims)


# torch's out= keyword on every function (tinyattn/_out.py; the names are data in
# tinyattn/_out_names.py)
from ..torch_surface.out import install as _install_out
from ..torch_surface.out_table import OUT_FFT as _OUT_NAMES

_install_out(globals(), _OUT_NAMES, "fft_")
