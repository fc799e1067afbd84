"""``pdist``: the p-norm distance between every pair of rows, the upper triangle flattened."""

from __future__ import annotations

import numbers

import numpy as np

from ...linalg import vector_norm
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor

__all__ = ["pdist"]


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """``out[k] = ||input[i] - input[j]||_p`` for the pairs ``i < j`` in row-major order.

    Shapes: ``input`` (N, M) -> (N * (N - 1) / 2,). Gradient, with ``diff = input[i] -
    input[j]`` and ``dist = out[k]`` (0 where ``dist = 0``)::

        d input[i] = +g[k] * sign(diff) |diff|^(p-1) / dist^(p-1)
        d input[j] = -g[k] * sign(diff) |diff|^(p-1) / dist^(p-1)

    Composes: tinyattn.linalg.vector_norm
    """
    require_tensor(input, "pdist")
    if input.ndim != 2:
        raise RuntimeError(
            f"pdist only supports 2D tensors, got: {input.ndim}D (shape {list(input.shape)})"
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"pdist only supports floating-point dtypes, got {input.dtype}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got p={p!r}")
    rows_i, rows_j = np.triu_indices(input.shape[0], 1)
    diff = input[Tensor._make(rows_i)] - input[Tensor._make(rows_j)]
    return vector_norm(diff, ord=float(p), dim=1)
