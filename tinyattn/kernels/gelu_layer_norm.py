"""GELU and LayerNorm on NumPy arrays through the numba kernels: the checks before them.

``tinyattn.nn.functional.Gelu`` and ``LayerNormFunction`` call these on their
first-order path when ``fits(...)`` says the kernels take the arrays (float32 or
float64, one dtype, not empty, ``TINYATTN_KERNELS`` not ``numpy``); otherwise, and
under ``create_graph=True``, their NumPy/xp formula runs: it is the kernels' twin
(see ``_numba_gelu`` and ``_numba_layer_norm`` for the formulas and the precision).
Inputs of any layout are accepted: a strided one is copied to C order here, before a
kernel sees it; shapes and dtypes are checked here, the kernels check nothing.
"""

from __future__ import annotations

import math

import numpy as np

from ..foundations.type_names import type_name
from . import backend, submodule

__all__ = ["fits", "gelu", "gelu_backward", "layer_norm", "layer_norm_backward"]

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def fits(x: np.ndarray, *others: np.ndarray | None) -> bool:
    """Whether the kernels take ``x`` with ``others`` (None skipped): float32/float64
    arrays of one dtype, ``x`` not empty, and the backend is not ``numpy``."""
    if not isinstance(x, np.ndarray) or x.dtype not in _DTYPES or x.size == 0:
        return False
    for a in others:  # (a loop, not all(...): this runs before every LayerNorm and GELU)
        if a is not None and not (isinstance(a, np.ndarray) and a.dtype == x.dtype):
            return False
    return backend() != "numpy"


def _c_order(a: np.ndarray) -> np.ndarray:
    """``a`` itself if C-contiguous, else a C-ordered copy (0-d stays 0-d, unlike
    ``np.ascontiguousarray``)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _check(name: str, a: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape:
        got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type_name(a)
        raise ValueError(f"{name}: expected a {dtype} array of shape {shape}, got {got}")
    return _c_order(a)


def _check_x(x: np.ndarray) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.dtype not in _DTYPES or x.size == 0:
        got = f"{x.dtype} {x.shape}" if isinstance(x, np.ndarray) else type_name(x)
        raise ValueError(f"x: expected a non-empty float32 or float64 array, got {got}")
    return _c_order(x)


# Below this many elements a kernel's serial twin runs on the calling thread (the same
# loop compiled without ``prange``): waking a second thread costs more than it saves.
# On the idle 2-core machine, LayerNorm + GELU forward+backward (float32, medians of 40,
# 3 of 4 fresh processes): (8, 128, 256) 0.77 ms on two threads against 1.33 on one,
# (8, 128, 512) 1.36 against 2.43, (8, 128, 1024) 2.79 against 3.03-5.37. (On the same
# machine loaded by other work, two threads were 3-4x slower at (8, 128, 256): a shared
# machine's numbers swing both ways.) A decode step's one row of 768 took 176 us through
# the parallel kernel on a loaded machine (the launch waits for a second thread), 5 us
# through the serial one.
PARALLEL_MIN = 1 << 16


def _launch(kernel, serial_kernel, size: int, *args) -> None:
    """``kernel(*args)`` (parallel) from ``PARALLEL_MIN`` elements, else ``serial_kernel``."""
    if size < PARALLEL_MIN:
        serial_kernel(*args)  # no numba threads: no launch lock, no thread count to set
        return
    from ._threads import kernel_launch

    with kernel_launch():
        kernel(*args)


def _check_approximate(approximate: str) -> bool:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate: expected 'none' or 'tanh', got {approximate!r}")
    return approximate == "tanh"


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """``gelu(x)``, any shape; the result has x's shape and dtype."""
    x = _check_x(x)
    tanh = _check_approximate(approximate)
    kernels = submodule("_numba_gelu")
    out = np.empty_like(x)
    _launch(
        kernels.gelu_forward,
        kernels.gelu_forward_serial,
        x.size,
        x.reshape(-1),
        out.reshape(-1),
        tanh,
        x.dtype == np.float32,
    )
    return out


def gelu_backward(g: np.ndarray, x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """``g * gelu'(x)``: g and x of one shape and dtype."""
    x = _check_x(x)
    g = _check("g", g, x.shape, x.dtype)
    tanh = _check_approximate(approximate)
    from ._numba_gelu import gelu_backward, gelu_backward_serial

    out = np.empty_like(x)
    _launch(
        gelu_backward,
        gelu_backward_serial,
        x.size,
        g.reshape(-1),
        x.reshape(-1),
        out.reshape(-1),
        tanh,
        x.dtype == np.float32,
    )
    return out


def _rows(x: np.ndarray, k: int) -> tuple[int, int]:
    if not isinstance(k, int) or not 1 <= k <= x.ndim:
        raise ValueError(f"k: expected 1 <= k <= x.ndim = {x.ndim} normalized dims, got {k!r}")
    n = math.prod(x.shape[x.ndim - k :])  # (np.prod costs ~10x more on a tuple)
    return x.size // n, n


def _affine(name: str, a: np.ndarray | None, x: np.ndarray, k: int, fill: float) -> np.ndarray:
    shape = x.shape[x.ndim - k :]
    if a is None:
        return np.full(shape, fill, x.dtype).reshape(-1)
    return _check(name, a, shape, x.dtype).reshape(-1)


def layer_norm(
    x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, k: int, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LayerNorm over the last ``k`` dims of ``x``: returns ``(y, mean, rstd)``, ``y`` as x,
    ``mean`` and ``rstd`` of shape ``x.shape[:-k] + (1,) * k`` (x's dtype)."""
    x = _check_x(x)
    rows, n = _rows(x, k)
    w, b = _affine("weight", weight, x, k, 1.0), _affine("bias", bias, x, k, 0.0)
    kernels = submodule("_numba_layer_norm")
    y = np.empty_like(x)
    stats_shape = x.shape[: x.ndim - k] + (1,) * k
    mean, rstd = np.empty(stats_shape, x.dtype), np.empty(stats_shape, x.dtype)
    _launch(
        kernels.layer_norm_forward,
        kernels.layer_norm_forward_serial,
        x.size,
        x.reshape(rows, n),
        w,
        b,
        float(eps),
        y.reshape(rows, n),
        mean.reshape(-1),
        rstd.reshape(-1),
    )
    return y, mean, rstd


def layer_norm_backward(
    g: np.ndarray,
    x: np.ndarray,
    weight: np.ndarray | None,
    mean: np.ndarray,
    rstd: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dx, dweight, dbias)`` of LayerNorm over the last ``k`` dims; ``mean`` and ``rstd``
    from ``layer_norm``; ``dweight``/``dbias`` of the normalized shape, summed over rows."""
    x = _check_x(x)
    rows, n = _rows(x, k)
    g = _check("g", g, x.shape, x.dtype)
    stats_shape = x.shape[: x.ndim - k] + (1,) * k
    mean = _check("mean", mean, stats_shape, x.dtype)
    rstd = _check("rstd", rstd, stats_shape, x.dtype)
    w = _affine("weight", weight, x, k, 1.0)
    from ._numba_layer_norm import (
        ROWS_PER_BLOCK,
        layer_norm_backward,
        layer_norm_backward_serial,
    )

    dx = np.empty_like(x)
    blocks = -(-rows // ROWS_PER_BLOCK)
    dweight_parts, dbias_parts = np.empty((blocks, n)), np.empty((blocks, n))
    _launch(
        layer_norm_backward,
        layer_norm_backward_serial,
        x.size,
        g.reshape(rows, n),
        x.reshape(rows, n),
        w,
        mean.reshape(-1),
        rstd.reshape(-1),
        dx.reshape(rows, n),
        dweight_parts,
        dbias_parts,
    )
    shape = x.shape[x.ndim - k :]
    dweight = dweight_parts.sum(axis=0).astype(x.dtype).reshape(shape)
    dbias = dbias_parts.sum(axis=0).astype(x.dtype).reshape(shape)
    return dx, dweight, dbias
