"""Row softmax for the returned-weights attention path, parallel over rows.

Used when the weights are returned (``nn.MultiheadAttention(need_weights=True)``);
the NumPy twins are ``tinyattn.kernels.softmax_math.attention_softmax`` and
``softmax_backward`` (``tests/kernels/test_softmax_rows.py`` holds these to them):

    forward   P = exp(S - max) / sum(exp(S - max))   per row; an all -inf row gives 0,
              a row holding NaN or +inf gives NaN (as torch's math path)
    backward  dS = P * (dP - rowsum(dP * P))

Inputs are 2-D C-contiguous ``(rows, S)`` views prepared (and checked) by
``tinyattn.kernels``; each ``prange`` iteration writes only its own row of ``out``
and allocates nothing.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import njit
from ._numba_tiles import exp_shifted_sum, row_dot, row_max, row_sum


@njit(cache=True)
def nan_count(row):
    """How many entries of the row are NaN (an integer sum: vectorises, cannot overflow)."""
    n = 0
    for j in range(row.shape[0]):
        n += row[j] != row[j]
    return n


@njit(cache=True)
def poisoned(row, top):
    """True if the row holds a NaN or +inf (``top``: its max, which skips NaN): its
    softmax is NaN everywhere, as in torch's math path. NaN is never blocking.

    A NaN makes the (vectorised, cheap) row sum NaN; so can partial sums that overflow
    to +inf next to a -inf, hence the exact count when the sum is NaN."""
    if top == np.inf:
        return True
    total = row_sum(row)
    return total != total and nan_count(row) > 0


@njit(parallel=True, cache=True)
def softmax_rows_kernel(scores, out):
    for r in prange(scores.shape[0]):
        row = out[r]
        row[:] = scores[r]
        top = row_max(row)
        if poisoned(row, top):  # NaN is not blocking: the row stays NaN
            row[:] = np.nan
            continue
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
