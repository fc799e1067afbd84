"""``torch.*`` names public programs call, built from existing ops (no new ``Function``):
real-dtype answers to complex-number functions (``conj``, ``real``, ``adjoint`` ...),
``addmv``/``addr``, ``rsub``, ``scalar_tensor``, ``randint_like``, ``empty_strided``,
``logspace``, ``trapz`` and the signal windows (``hann_window`` ...).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import _dtype
from .._device import check_device

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = [
    "adjoint",
    "conj",
    "conj_physical",
    "resolve_conj",
    "resolve_neg",
    "is_conj",
    "is_neg",
    "real",
    "narrow_copy",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "rsub",
    "addmv",
    "addr",
    "scalar_tensor",
    "randint_like",
    "empty_strided",
    "logspace",
    "trapz",
    "hann_window",
    "hamming_window",
    "blackman_window",
    "bartlett_window",
    "kaiser_window",
]


def _ops():
    from .. import ops

    return ops


# -- complex-number functions on real tensors -----------------------------------------------
def adjoint(input: Tensor) -> Tensor:
    """``input.mH``: the last two dims swapped (no conjugation for a real dtype)."""
    return input.adjoint()


def conj(input: Tensor) -> Tensor:
    """``input``: the conjugate of a real tensor."""
    return input.conj()


def conj_physical(input: Tensor) -> Tensor:
    """``input``: the conjugate of a real tensor."""
    return input.conj()


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` (no lazy conjugation to resolve)."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` (no lazy negation to resolve)."""
    return input


def is_conj(input: Tensor) -> bool:
    """False: no lazy conjugation."""
    return False


def is_neg(input: Tensor) -> bool:
    """False: no lazy negation."""
    return False


def real(input: Tensor) -> Tensor:
    """``input``: every tinyattn dtype is real."""
    return input


# -- copies and splits ------------------------------------------------------------------------
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``input.narrow(dim, start, length).clone()``."""
    return input.narrow_copy(dim, start, length)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk`` (torch's unsafe form skips a view check tinyattn does not make)."""
    return input.unsafe_chunk(chunks, dim)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """``split`` (torch's unsafe form skips a view check tinyattn does not make)."""
    return input.unsafe_split(split_size, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes``."""
    return _ops().shape_composites.split_with_sizes(input, split_sizes, dim)


# -- arithmetic -------------------------------------------------------------------------------
def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``other - alpha * input`` (subtraction with the operands reversed).

    Gradient: ``d input = -alpha * g``, ``d other = g`` (summed over broadcast dims).
    """
    sub = _ops().arithmetic.sub
    if isinstance(other, type(input)):
        return sub(other, input, alpha=alpha)
    return sub(other, input * alpha if alpha != 1 else input)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``: mat (n, m), vec (m,) -> (n,).

    Gradient: ``d input = beta * g``, ``d mat = alpha * outer(g, vec)``,
    ``d vec = alpha * mat^T @ g``. With ``beta = 0`` the input is ignored (as torch).
    """
    ops = _ops()
    return ops.linalg._add_scaled(input, ops.products.mv(mat, vec), beta, alpha, "addmv")


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``: (n,), (m,) -> (n, m).

    Gradient: ``d input = beta * g``, ``d vec1 = alpha * g @ vec2``,
    ``d vec2 = alpha * g^T @ vec1``. With ``beta = 0`` the input is ignored (as torch).
    """
    ops = _ops()
    return ops.linalg._add_scaled(input, ops.linalg.outer(vec1, vec2), beta, alpha, "addr")


# -- factories --------------------------------------------------------------------------------
def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number ``s``, of the default float dtype (or ``dtype``)."""
    check_device(device)
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return _ops().creation.tensor(s, dtype=d, requires_grad=requires_grad)


def randint_like(
    input: Tensor, low=0, high=None, *, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    """Random integers in ``[low, high)`` shaped like ``input``, of its dtype (or ``dtype``).

    ``randint_like(x, high)`` draws from ``[0, high)``, as torch.
    """
    check_device(device)
    if high is None:
        low, high = 0, low
    d = _dtype.to_dtype(dtype) if dtype is not None else input.dtype
    out = _ops().creation.randint(low, high, tuple(input.shape), dtype=d)
    return out.requires_grad_(True) if requires_grad else out


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements)."""
    check_device(device)
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    like = _ops().creation.empty(0, dtype=d)
    return like.new_empty_strided(size, stride, requires_grad=requires_grad)


def logspace(
    start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
    requires_grad: bool = False,
) -> Tensor:  # fmt: skip
    """``base ** linspace(start, end, steps)`` of the default float dtype (or ``dtype``)."""
    check_device(device)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise RuntimeError(f"logspace: number of steps must be a non-negative int, got {steps!r}")
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    values = np.power(float(base), np.linspace(float(start), float(end), steps))
    return _ops().creation.tensor(values, dtype=d, requires_grad=requires_grad)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1):
    """The older name of :func:`tinyattn.trapezoid` (same arguments)."""
    return _ops().stats.trapezoid(y, x, dx=dx, dim=dim)


# -- signal windows ---------------------------------------------------------------------------
def _window(name: str, length: int, periodic: bool, formula, dtype, device, requires_grad):
    """``formula(n, N)`` for n = 0..length-1; ``periodic``: the symmetric window of
    ``length + 1`` points without its last one (torch's convention)."""
    check_device(device)
    if not isinstance(length, int) or isinstance(length, bool) or length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={length!r}"
        )
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if length <= 1:
        values = np.ones(length)
    else:
        total = length + 1 if periodic else length
        values = formula(np.arange(total, dtype=np.float64), total)[:length]
    return _ops().creation.tensor(values, dtype=d, requires_grad=requires_grad)


def hann_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None,
    requires_grad: bool = False,
) -> Tensor:  # fmt: skip
    """``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return hamming_window(
        window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad
    )


def hamming_window(
    window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
    dtype=None, device=None, requires_grad: bool = False,
) -> Tensor:  # fmt: skip
    """``alpha - beta cos(2 pi n / (N - 1))``."""

    def formula(n, total):
        return alpha - beta * np.cos(2 * math.pi * n / (total - 1))

    return _window("hamming_window", window_length, periodic, formula, dtype, device, requires_grad)


def blackman_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None,
    requires_grad: bool = False,
) -> Tensor:  # fmt: skip
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""

    def formula(n, total):
        phase = 2 * math.pi * n / (total - 1)
        return 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)

    return _window(
        "blackman_window", window_length, periodic, formula, dtype, device, requires_grad
    )


def bartlett_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None,
    requires_grad: bool = False,
) -> Tensor:  # fmt: skip
    """The triangle ``1 - |2 n / (N - 1) - 1|``."""

    def formula(n, total):
        return 1 - np.abs(2 * n / (total - 1) - 1)

    return _window(
        "bartlett_window", window_length, periodic, formula, dtype, device, requires_grad
    )


def kaiser_window(
    window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, device=None,
    requires_grad: bool = False,
) -> Tensor:  # fmt: skip
    """``I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)`` (I0: modified Bessel)."""

    def formula(n, total):
        ratio = 2 * n / (total - 1) - 1
        return np.i0(beta * np.sqrt(np.clip(1 - ratio * ratio, 0, None))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, formula, dtype, device, requires_grad)
