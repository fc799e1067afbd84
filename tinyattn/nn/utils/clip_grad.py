"""Gradient clipping by total norm or by value, in place, with torch's numerics.

total = || (||g_1||_p, ..., ||g_k||_p) ||_p   (max |g| for p = inf)
coef  = min(max_norm / (total + 1e-6), 1);   every g is multiplied by coef
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import numpy as np

from ...ops.reduce.reduction import norm
from ...tensor_api.tensor import Tensor


def _grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _vector_norm(a: np.ndarray, norm_type: float) -> np.ndarray:
    if norm_type == math.inf:
        return np.abs(a).max(initial=0).astype(a.dtype)
    if norm_type == -math.inf:
        return np.abs(a).min().astype(a.dtype)
    if norm_type == 0:
        return np.asarray(np.count_nonzero(a), dtype=a.dtype)
    # the library's norm: float16 gradients accumulate in float32 and round once, as torch
    return norm(Tensor._make(a), norm_type)._data


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach=None,
) -> Tensor:
    """The ``norm_type``-norm of the per-tensor norms of ``tensors`` (as one vector)."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = [t for t in tensors if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return Tensor._make(np.asarray(0.0, dtype=np.float32))
    norms = [_vector_norm(t._data, norm_type) for t in tensors]
    dtype = np.result_type(*norms)
    total = _vector_norm(np.stack([n.astype(dtype) for n in norms]), norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return Tensor._make(np.asarray(total))


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients by ``min(max_norm / (total_norm + 1e-6), 1)`` in place."""
    grads = _grads(parameters)
    if not grads:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
    coef = np.minimum(float(max_norm) / (total + 1e-6), 1.0)
    for g in grads:
        with np.errstate(invalid="ignore"):  # inf * 0 = nan for a non-finite norm, as torch
            g._data *= coef.astype(g._data.dtype)
        g._bump_version()


def clip_grad_norm_(
    parameters,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach=None,
) -> Tensor:
    """Clip the gradients of ``parameters`` so their total ``norm_type``-norm is at most ``max_norm``.

    Returns the total norm before clipping (a 0-d tensor).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        np.clip(g._data, -clip_value, clip_value, out=g._data)
        g._bump_version()


def clip_grad_norm(
    parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (torch warns with a FutureWarning; so do we).

    Composes: clip_grad_norm_
    """
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)
