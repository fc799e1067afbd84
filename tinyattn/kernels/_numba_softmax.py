"""Row softmax for the materialised attention path, parallel over rows.

Used when the weights are kept (``nn.MultiheadAttention(need_weights=True)``):

    forward   P = exp(S - max) / sum(exp(S - max))   per row; an all -inf row gives 0
    backward  dS = P * (dP - rowsum(dP * P))

Inputs are 2-D C-contiguous ``(rows, S)`` views prepared (and checked) by
``tinyattn.kernels``; each ``prange`` iteration writes only its own row of ``out``
and allocates nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._numba_tiles import exp_shifted_sum, row_dot, row_max


@njit(parallel=True, cache=True)
def softmax_rows_kernel(scores, out):
    for r in prange(scores.shape[0]):
        row = out[r]
        row[:] = scores[r]
        top = row_max(row)
        if top == -np.inf:  # every key blocked: weights 0, not NaN
            row[:] = 0.0
            continue
        inv_total = 1.0 / exp_shifted_sum(row, top)
        for j in range(row.shape[0]):
            row[j] *= inv_total


@njit(parallel=True, cache=True)
def softmax_rows_backward_kernel(dweights, weights, out):
    for r in prange(weights.shape[0]):
        d = row_dot(dweights[r], weights[r])
        for j in range(weights.shape[1]):
            out[r, j] = weights[r, j] * (dweights[r, j] - d)
