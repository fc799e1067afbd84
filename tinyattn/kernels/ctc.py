"""CTC loss on NumPy arrays: the checks before the numba kernels, and their NumPy twins.

``tinyattn.nn.functional.loss_ctc.CtcLoss`` calls :func:`ctc_alpha` in its forward and :func:`ctc_grad`
in its backward. The formulas are in ``_numba_ctc``'s docstring. float32 and float64
``log_probs`` go to the kernels unless ``TINYATTN_KERNELS=numpy``; that switch, and any
other float dtype, runs the twins (``ctc_alpha_twin``, ``ctc_grad_twin``), which read like
the recursions, vectorised over the batch, and are what ``tests/kernels/test_ctc_kernels.py``
holds the kernels to. Shapes, dtypes, lengths and label indices are all checked here (the
kernels check nothing: an unchecked index would read out of bounds).
"""

from __future__ import annotations

import numpy as np

from ..foundations.type_names import type_name
from . import backend
from ._threads import launch_sized
from .gelu_layer_norm import PARALLEL_MIN

__all__ = ["ctc_alpha", "ctc_grad", "ctc_alpha_twin", "ctc_grad_twin"]

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _check(log_probs, ext, skip, input_lengths, target_lengths):
    """Raise unless the arrays are what the kernels index safely; return them C-ordered."""
    if not isinstance(log_probs, np.ndarray) or log_probs.ndim != 3 or log_probs.dtype.kind != "f":
        got = getattr(log_probs, "shape", type_name(log_probs))
        raise ValueError(f"log_probs: expected a float (T, N, C) array, got {got}")
    steps, batch, classes = log_probs.shape
    if ext.dtype != np.int64 or ext.ndim != 2 or ext.shape[0] != batch or ext.shape[1] % 2 != 1:
        raise ValueError(f"ext: expected int64 (N={batch}, 2 S + 1), got {ext.dtype} {ext.shape}")
    if skip.dtype != np.bool_ or skip.shape != ext.shape:
        raise ValueError(f"skip: expected bool {ext.shape}, got {skip.dtype} {skip.shape}")
    for name, arr in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if arr.dtype != np.int64 or arr.shape != (batch,):
            raise ValueError(f"{name}: expected int64 ({batch},), got {arr.dtype} {arr.shape}")
    if batch and (input_lengths.min() < 1 or input_lengths.max() > steps):
        raise ValueError(f"input_lengths: expected values in [1, {steps}], got {input_lengths}")
    if batch and (target_lengths.min() < 0 or 2 * target_lengths.max() + 1 > ext.shape[1]):
        raise ValueError(
            f"target_lengths: expected values in [0, {ext.shape[1] // 2}], got {target_lengths}"
        )
    if ext.size and (ext.min() < 0 or ext.max() >= classes):
        raise ValueError(f"ext: expected class indices in [0, {classes}), got {ext.min()}..")
    c = np.ascontiguousarray
    return c(log_probs), c(ext), c(skip), c(input_lengths), c(target_lengths)


def _use_kernel(log_probs: np.ndarray) -> bool:
    return log_probs.dtype in _DTYPES and backend() != "numpy"


def ctc_alpha(log_probs, ext, skip, input_lengths, target_lengths):
    """``(alpha (T, N, W) float64, ll (N,) float64)``: the forward recursion, checked."""
    args = _check(log_probs, ext, skip, input_lengths, target_lengths)
    if not _use_kernel(log_probs):
        return ctc_alpha_twin(*args)
    from ._numba_ctc import ctc_alpha as kernel

    steps, batch, _ = log_probs.shape
    alpha = np.empty((steps, batch, ext.shape[1]))
    ll = np.empty(batch)
    launch_sized(kernel, alpha.size, PARALLEL_MIN, *args, alpha, ll)
    return alpha, ll


def ctc_grad(log_probs, ext, skip, input_lengths, target_lengths, alpha, ll, g):
    """``grad`` (T, N, C) in ``log_probs``'s dtype: ``-g[n] d ll[n] / d log_probs``."""
    args = _check(log_probs, ext, skip, input_lengths, target_lengths)
    steps, batch, classes = log_probs.shape
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    ll = np.ascontiguousarray(ll, dtype=np.float64)
    g = np.ascontiguousarray(np.broadcast_to(g, (batch,)), dtype=np.float64)
    if alpha.shape != (steps, batch, ext.shape[1]) or ll.shape != (batch,):
        raise ValueError(f"alpha, ll: expected {(steps, batch, ext.shape[1])}, ({batch},)")
    if not _use_kernel(log_probs):
        return ctc_grad_twin(*args, alpha, ll, g)
    from ._numba_ctc import ctc_grad as kernel

    beta = np.empty((batch, 2, ext.shape[1]))
    acc = np.empty((batch, classes))
    grad = np.empty(log_probs.shape, dtype=log_probs.dtype)
    launch_sized(kernel, alpha.size, PARALLEL_MIN, *args, alpha, ll, g, beta, acc, grad)
    return grad


def _logsumexp3(a, b, c):
    """As the kernel's (and torch's): about the largest, NaN from a NaN or +inf."""
    m = np.maximum(np.maximum(a, b), c)
    m = np.where(m == -np.inf, 0.0, m)
    with np.errstate(invalid="ignore", divide="ignore"):  # (log 0 = -inf, as meant)
        return np.log(np.exp(a - m) + np.exp(b - m) + np.exp(c - m)) + m


def _shift(x: np.ndarray, by: int, fill=-np.inf) -> np.ndarray:
    """``x[..., s - by]`` along the last axis (``fill``, log 0, where that is outside)."""
    out = np.full_like(x, fill)
    if by > 0:
        out[..., by:] = x[..., :-by]
    else:
        out[..., :by] = x[..., -by:]
    return out


def _ext_log_probs(log_probs, ext, target_lengths):
    """``y[t, n, s] = log_probs[t, n, ext[n, s]]`` (float64) and the live states (N, W)."""
    steps = log_probs.shape[0]
    index = np.broadcast_to(ext, (steps, *ext.shape))
    y = np.take_along_axis(log_probs, index, axis=2).astype(np.float64)
    live = np.arange(ext.shape[1]) < (2 * target_lengths + 1)[:, None]
    return y, live


def ctc_alpha_twin(log_probs, ext, skip, input_lengths, target_lengths):
    """NumPy twin of the alpha kernel: one vectorised step per time step."""
    steps, batch, _ = log_probs.shape
    y, live = _ext_log_probs(log_probs, ext, target_lengths)
    alpha = np.full(y.shape, -np.inf)
    alpha[0, :, :2] = np.where(live[:, :2], y[0, :, :2], -np.inf)
    for t in range(1, steps):
        prev = alpha[t - 1]
        jump = np.where(skip, _shift(prev, 2), -np.inf)
        step = _logsumexp3(prev, _shift(prev, 1), jump) + y[t]
        alpha[t] = np.where(live & (t < input_lengths)[:, None], step, -np.inf)
    rows = np.arange(batch)
    last = alpha[input_lengths - 1, rows]  # (N, W): each sequence at its own last step
    end = last[rows, 2 * target_lengths]
    before = np.where(
        target_lengths > 0, last[rows, np.maximum(2 * target_lengths - 1, 0)], -np.inf
    )
    return alpha, _logsumexp3(end, before, np.full_like(end, -np.inf))


def ctc_grad_twin(log_probs, ext, skip, input_lengths, target_lengths, alpha, ll, g):
    """NumPy twin of the gradient kernel: the beta recursion backwards in time."""
    steps, batch, classes = log_probs.shape
    y, live = _ext_log_probs(log_probs, ext, target_lengths)
    states = np.arange(ext.shape[1])
    tail = live & (states >= (2 * target_lengths - 1)[:, None])  # the last two live states
    possible = (ll != -np.inf)[:, None]
    beta = np.full(ext.shape, -np.inf)
    grad = np.zeros(log_probs.shape, dtype=np.float64)
    rows = np.broadcast_to(np.arange(batch)[:, None], ext.shape)
    for t in range(steps - 1, -1, -1):
        jump = np.where(_shift(skip, -2, False), _shift(beta, -2), -np.inf)
        step = np.where(live, _logsumexp3(beta, _shift(beta, -1), jump) + y[t], -np.inf)
        start = np.where(tail, y[t], -np.inf)
        beta = np.where((t == input_lengths - 1)[:, None], start, step)
        beta = np.where((t < input_lengths)[:, None], beta, -np.inf)
        reached = (alpha[t] != -np.inf) & (beta != -np.inf) & possible
        with np.errstate(invalid="ignore"):
            share = np.where(reached, np.exp(alpha[t] + beta - y[t] - ll[:, None]), 0.0)
        np.add.at(grad[t], (rows, ext), share)
    nan = np.isnan(ll)[None, :, None] & (np.arange(steps)[:, None] < input_lengths)[:, :, None]
    return np.where(nan, np.nan, -g[:, None] * grad).astype(log_probs.dtype)
