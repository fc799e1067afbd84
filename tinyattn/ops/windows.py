"""Spectral windows and value grids: hann/hamming/bartlett/blackman/kaiser windows,
logspace, vander.

A window of length ``N`` samples ``n = 0 .. N-1`` of a symmetric curve over ``L`` points:
``L = N`` (``periodic=False``, symmetric, for filter design) or ``L = N + 1`` with the last
point dropped (``periodic=True``, the default, for spectral analysis). Length 0 gives an
empty tensor and length 1 gives ``[1.]``, as in torch. The values follow torch's operations
in ``dtype`` (the default float dtype; floating dtypes only): bartlett is bit-identical,
the cosine windows within an ulp or two of the cos, kaiser within ~1e-6 relative.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..core import _dtype as dt
from ..core.device import check_device
from ..core.tensor import Tensor
from ..foundations.type_names import type_name
from .creation.factories import _finish, _linspace_values
from .elementwise.arithmetic import _tensor
from .shape.rearrange import flip

__all__ = [
    "hann_window",
    "hamming_window",
    "bartlett_window",
    "blackman_window",
    "kaiser_window",
    "logspace",
    "vander",
]


def _cos(angle: np.ndarray) -> np.ndarray:
    """cos in ``angle``'s dtype, computed in float64 and rounded once."""
    return np.cos(angle.astype(np.float64)).astype(angle.dtype)


def _window(name: str, window_length, periodic, dtype, device, requires_grad, curve) -> Tensor:
    """The shared frame of every window: checks, the periodic trick, dtype, requires_grad.

    ``curve(length, np_dtype)`` returns the ``length`` symmetric values in ``np_dtype``,
    computed with torch's operations in that dtype (so the roundings are torch's, up to
    its cos, which is not correctly rounded: the values then differ in the last bit).
    """
    check_device(device)
    if not isinstance(window_length, numbers.Integral) or isinstance(window_length, bool):
        raise TypeError(
            f"{name}(): argument 'window_length' must be int, not {type_name(window_length)}"
        )
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    target = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if not target.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got {target}")
    n, np_dtype = int(window_length), target.np_dtype
    if n <= 1:
        values = np.ones(n, dtype=np_dtype)
    else:
        values = curve(n + 1 if periodic else n, np_dtype)[:n]
    return _finish(np.ascontiguousarray(values, dtype=np_dtype), requires_grad)


def _cosine_sum(length: int, np_dtype, alpha: float, beta: float) -> np.ndarray:
    """``alpha - beta cos(2 pi n / (L - 1))`` as torch's ``hamming_window`` computes it."""
    c = np_dtype.type
    angle = np.arange(length, dtype=np_dtype) * c(2.0 * math.pi / (length - 1))
    return _cos(angle) * c(-beta) + c(alpha)


def hann_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """``0.5 - 0.5 cos(2 pi n / (L - 1))``: shape (window_length,) (see the module doc)."""
    return _window(
        "hann_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda length, np_dtype: _cosine_sum(length, np_dtype, 0.5, 0.5),
    )


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """``alpha - beta cos(2 pi n / (L - 1))``: shape (window_length,) (see the module doc)."""
    return _window(
        "hamming_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda length, np_dtype: _cosine_sum(length, np_dtype, alpha, beta),
    )


def _triangle(length: int, np_dtype) -> np.ndarray:
    """``2 n / (L - 1)`` rising, then ``2 - 2 n / (L - 1)`` (torch's two halves)."""
    c = np_dtype.type
    values = np.arange(length, dtype=np_dtype) * c(2.0 / (length - 1))
    half = ((length - 1) >> 1) + 1
    values[half:] = values[half:] * c(-1) + c(2)
    return values


def bartlett_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """The triangle ``1 - |2 n / (L - 1) - 1|``: shape (window_length,) (see the module doc)."""
    return _window(
        "bartlett_window", window_length, periodic, dtype, device, requires_grad, _triangle
    )


def _blackman(length: int, np_dtype) -> np.ndarray:
    c = np_dtype.type
    angle = np.arange(length, dtype=np_dtype) * c(math.pi / (length - 1))
    return (_cos(angle * c(4)) * c(0.08) - _cos(angle * c(2)) * c(0.5)) + c(0.42)


def blackman_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / (L-1)) + 0.08 cos(4 pi n / (L-1))``: shape (window_length,)."""
    return _window(
        "blackman_window", window_length, periodic, dtype, device, requires_grad, _blackman
    )


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """``I0(beta sqrt(1 - (2 n / (L - 1) - 1)^2)) / I0(beta)`` (``I0``: the modified Bessel
    function of order 0): shape (window_length,) (see the module doc). Computed in float64
    and rounded once (torch's float32 I0 is less accurate: they differ by ~1e-6 relative)."""

    def curve(length: int, np_dtype) -> np.ndarray:
        phase = np.arange(length) / (length - 1)
        values = np.i0(beta * np.sqrt(np.clip(1 - (2 * phase - 1) ** 2, 0, None))) / np.i0(beta)
        return values.astype(np_dtype)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, curve)


def logspace(
    start,
    end,
    steps: int,
    base: float = 10.0,
    *,
    dtype=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """``base ** linspace(start, end, steps)``: shape (steps,), the default float dtype
    unless ``dtype`` is given (integer dtypes truncate the ends, then the float64 values, as torch)."""
    check_device(device)
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end)]
    if not isinstance(steps, numbers.Integral) or isinstance(steps, bool):
        raise TypeError(f"logspace(): argument 'steps' must be int, not {type_name(steps)}")
    if steps < 0:
        raise RuntimeError(f"logspace(): number of steps must be non-negative, got {steps}")
    target = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if steps == 1:  # torch's one value is ``base ** start``, start not truncated
        exponents = np.array([vals[0]], dtype=np.float64)
    else:
        exponents = _linspace_values(vals[0], vals[1], int(steps), target.np_dtype)
    values = np.power(float(base), exponents)
    return _finish(values.astype(target.np_dtype), requires_grad)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D ``x`` (n,): shape (n, N), ``N = n`` by default.

    ``out[i, j] = x[i] ** (N - 1 - j)`` (decreasing powers), or ``x[i] ** j`` with
    ``increasing``. Bool and integer inputs give int64; floats keep their dtype.

    Gradient: ``d x[i] = sum_j g[i, j] * p_j * x[i] ** (p_j - 1)`` (``p_j`` the power).
    Composes: cumprod of ``x`` repeated (so a zero in ``x`` is handled exactly).
    """
    from .elementwise.unary import cast
    from .reduce.cumulative import cumprod
    from .shape.rearrange import cat
    from .shape.views import expand, unsqueeze

    x = _tensor(x, "vander")
    if x.ndim != 1:
        raise RuntimeError(
            f"vander(): x must be a one-dimensional tensor, got shape {list(x.shape)}"
        )
    n = x.shape[0]
    if N is None:
        N = n
    if not isinstance(N, numbers.Integral) or N < 0:
        raise RuntimeError(f"vander(): N must be non-negative, got {N}")
    if x._data.dtype.kind in "biu" and x._data.dtype != np.int64:
        x = cast(x, dt.int64)
    if N == 0:
        return Tensor._make(np.zeros((n, 0), dtype=x._data.dtype))
    ones = Tensor._make(np.ones((n, 1), dtype=x._data.dtype))
    if N == 1:  # x ** 0 only: outside the graph, as torch's
        return ones
    powers = cumprod(expand(unsqueeze(x, 1), (n, N - 1)), 1)
    out = cat([ones, powers], 1)
    return out if increasing else flip(out, (1,))
