"""Complex tensors: ``complex``, ``polar``, ``view_as_complex``/``view_as_real``, the
``real``/``imag`` views and ``conj``.

A complex tensor is a NumPy ``complex64``/``complex128`` array. Every gradient follows
torch's convention: for a real loss ``L`` of ``z = a + ib``, ``z.grad = dL/da + i dL/db``
(twice the conjugate Wirtinger derivative ``dL/d conj(z)``). So ``L = sum(|z|**2)`` gives
``z.grad = 2 z``, and a holomorphic ``out = f(z)`` passes back ``g * conj(f'(z))``. A
real input of an op with a complex result gets the real part of that gradient (the
engine takes it, in one place). docs/complex.md has the rules and the list of ops.

``view_as_complex``, ``view_as_real``, ``real`` and ``imag`` share memory with their
input, as in torch: a write into ``z.real`` changes ``z``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core import _dtype as dt
from ..core.function import Function
from ..core.tensor import Tensor
from ..foundations.type_names import type_name
from ._util import gradient_doc
from .elementwise.arithmetic import _tensor
from .shape.views import _as_view

__all__ = [
    "complex",
    "polar",
    "view_as_complex",
    "view_as_real",
    "real",
    "imag",
    "is_complex",
]

_warned_discarding_imaginary = False


def warn_discarding_imaginary() -> None:
    """torch's warning when a complex tensor is cast to a real dtype (once per process, as
    torch's ``TORCH_WARN_ONCE``): the imaginary part is dropped."""
    global _warned_discarding_imaginary
    if not _warned_discarding_imaginary:
        _warned_discarding_imaginary = True
        warnings.warn(
            "Casting complex values to real discards the imaginary part", UserWarning, stacklevel=4
        )


def real_pairs(z: np.ndarray) -> np.ndarray:
    """The real view ``(..., 2)`` of a complex array of any strides: ``[..., 0]`` is the real
    part, ``[..., 1]`` the imaginary part, in ``z``'s own memory."""
    re = z.real
    return np.lib.stride_tricks.as_strided(
        re, z.shape + (2,), z.strides + (re.itemsize,), writeable=z.flags.writeable
    )


def _check_complex(z: Tensor, op: str) -> Tensor:
    _tensor(z, op)
    if z._data.dtype.kind != "c":
        raise RuntimeError(
            f"{op}(): expected a complex tensor (complex64 or complex128), got {z.dtype}"
        )
    return z


def _check_real_float(x, op: str, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type_name(x)}")
    if x._data.dtype not in dt._COMPLEX_OF:
        raise RuntimeError(
            f"{op}(): expected '{name}' to be a float32 or float64 tensor (the complex result is "
            f"complex64 or complex128; tinyattn has no complex32), got {x.dtype}"
        )
    return x


# -- building complex numbers ------------------------------------------------------------------
class Complex(Function):
    """out = re + i im  (broadcast).   d re = Re(g),  d im = Im(g)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, re, im):
        shape = np.broadcast_shapes(re.shape, im.shape)
        out = np.empty(shape, dtype=dt._COMPLEX_OF[re.dtype])
        out.real, out.imag = re, im  # (not re + 1j * im: inf * 1j would give a NaN real part)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        return xp.real(g), xp.imag(g)


@gradient_doc(Complex)
def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + i imag`` (broadcast); both float32 or both float64, as torch."""
    re = _check_real_float(real, "complex", "real")
    im = _check_real_float(imag, "complex", "imag")
    if re._data.dtype != im._data.dtype:
        raise RuntimeError(
            f"complex(): expected 'real' and 'imag' to have the same dtype, but got {re.dtype} "
            f"and {im.dtype}"
        )
    try:
        np.broadcast_shapes(re._data.shape, im._data.shape)
    except ValueError:
        raise RuntimeError(
            f"complex(): the shapes of 'real' {list(re.shape)} and 'imag' {list(im.shape)} are "
            "not broadcastable"
        ) from None
    return Complex.apply(re, im)


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor ``abs * (cos(angle) + i sin(angle))`` (broadcast), as ``torch.polar``.

    Composes: tinyattn.complex, tinyattn.mul, tinyattn.cos, tinyattn.sin
    """
    r = _check_real_float(abs, "polar", "abs")
    theta = _check_real_float(angle, "polar", "angle")
    if r._data.dtype != theta._data.dtype:
        raise RuntimeError(
            f"polar(): expected 'abs' and 'angle' to have the same dtype, but got {r.dtype} and "
            f"{theta.dtype}"
        )
    return complex(r * theta.cos(), r * theta.sin())


# -- views between real pairs and complex numbers ----------------------------------------------
class ViewAsComplex(Function):
    """out[...] = x[..., 0] + i x[..., 1]  (a view).   dx = view_as_real(g)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, x):
        return x.view(dt._COMPLEX_OF[x.dtype])[..., 0]

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.view_as_real(g)


def _check_complex_view(x: Tensor) -> None:
    data = x._data
    if data.dtype.kind != "f":
        raise RuntimeError(
            f"view_as_complex(): expected a float32 or float64 tensor, got {x.dtype}"
        )
    if data.dtype not in dt._COMPLEX_OF:
        raise RuntimeError(
            "view_as_complex(): float16 would view as complex32, which tinyattn cannot store "
            "(NumPy has no complex32); convert to float32 first"
        )
    if data.ndim == 0 or data.shape[-1] != 2:
        raise RuntimeError(
            "view_as_complex(): Tensor must have a last dimension of size 2, got shape "
            f"{list(data.shape)}"
        )
    steps = [s // data.itemsize for s in data.strides]
    if steps[-1] != 1:
        raise RuntimeError(
            f"view_as_complex(): Tensor must have a last dimension with stride 1, got strides "
            f"{steps} (call .contiguous() first)"
        )
    if any(s % 2 for s, n in zip(steps[:-1], data.shape[:-1]) if n > 1):
        raise RuntimeError(
            f"view_as_complex(): Tensor must have a stride divisible by 2 for all but last "
            f"dimension, got strides {steps} (call .contiguous() first)"
        )
    base = x._base._data if x._base is not None else data
    offset = data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if (offset // data.itemsize) % 2:
        raise RuntimeError(
            "view_as_complex(): Tensor must have a storage offset divisible by 2 (call "
            ".contiguous() first)"
        )


@gradient_doc(ViewAsComplex)
def view_as_complex(input: Tensor) -> Tensor:
    """The ``(..., 2)`` float tensor ``input`` seen as complex numbers ``(...)``, sharing memory.

    The last dim must have size 2 and stride 1, the other strides must be even (as torch).
    """
    _check_complex_view(_tensor(input, "view_as_complex"))
    return _as_view(ViewAsComplex.apply(input), input, shares=True)


class ViewAsReal(Function):
    """out[..., 0] = Re(z), out[..., 1] = Im(z)  (a view).   dz = g[..., 0] + i g[..., 1]"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, z):
        return real_pairs(z)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.view_as_complex(g)


@gradient_doc(ViewAsReal)
def view_as_real(input: Tensor) -> Tensor:
    """The complex tensor ``input`` as a float tensor with a last dim of 2 (real, imaginary),
    sharing memory."""
    z = _check_complex(input, "view_as_real")
    return _as_view(ViewAsReal.apply(z), z, shares=True)


def pairs_to_complex(x: Tensor) -> Tensor:
    """``x[..., 0] + i x[..., 1]`` as a new tensor, for any strides (``view_as_complex``
    without its layout rules).   Composes: tinyattn.complex"""
    return complex(x[..., 0], x[..., 1])


# -- real and imaginary parts ---------------------------------------------------------------
class Real(Function):
    """out = Re(z)  (a view).   dz = g  (a real gradient: no imaginary part)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, z):
        return z.real

    @staticmethod
    def backward(ctx, g):
        return g


class Imag(Function):
    """out = Im(z)  (a view).   dz = i g"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, z):
        return z.imag

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, np.ndarray):  # 0 + i g exactly (g * 1j makes a NaN g's real part NaN)
            dz = np.zeros(g.shape, np.result_type(g.dtype, np.complex64))
            dz.imag = g
            return dz
        return g * 1j  # under create_graph: differentiable (a NaN g spreads to the real part)


@gradient_doc(Real)
def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor, as a view sharing its memory (writes change
    ``input``); a real tensor itself, as torch."""
    z = _tensor(input, "real")
    if z._data.dtype.kind != "c":
        return z
    return _as_view(Real.apply(z), z, shares=True)


@gradient_doc(Imag)
def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view sharing its memory (writes change
    ``input``). A real tensor raises, as torch."""
    z = _tensor(input, "imag")
    if z._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _as_view(Imag.apply(z), z, shares=True)


def set_part(z: Tensor, part: str, value) -> None:
    """``z.real = value`` / ``z.imag = value``: copy ``value`` into that view of ``z``."""
    view = real(z) if part == "real" else imag(z)
    if part == "real" and view is z:
        raise RuntimeError("setting .real of a real tensor: assign to the tensor itself")
    view.copy_(value if isinstance(value, Tensor) else Tensor._make(np.asarray(value)))


# -- conjugate ------------------------------------------------------------------------------
class Conj(Function):
    """out = conj(z) = a - ib.   dz = conj(g)"""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, z):
        return np.conj(z)

    @staticmethod
    def backward(ctx, g):
        return ctx.xp.conj(g)


@gradient_doc(Conj)
def conj_complex(z: Tensor) -> Tensor:
    """The conjugate of a complex tensor, as a new tensor (torch returns a lazy view with its
    conjugate bit set: the values are the same, writes into it are not shared here)."""
    return Conj.apply(z)


def sgn_complex(z: Tensor) -> Tensor:
    """``z / |z|`` (0 where ``z = 0``): torch's ``sgn`` of a complex tensor.

    Composes: tinyattn.abs, tinyattn.where, tinyattn.div
    """
    from .elementwise.arithmetic import where

    magnitude = z.abs()
    at_zero = magnitude == 0
    return where(at_zero, 0, z / where(at_zero, 1, magnitude))


def is_complex(input: Tensor) -> bool:
    """Whether ``input``'s dtype is complex64 or complex128."""
    return _tensor(input, "is_complex")._data.dtype.kind == "c"
