"""Matrix products that reach BLAS, for every op that multiplies matrices.

NumPy's ``matmul`` on stacked operands does not always hand each matrix to BLAS
efficiently. Measured on the project's 2-core machine (numpy 2.4, float32):

    (32, 512, 64) @ (32, 64, 512)           stacked  48 ms   2-D slices   8 ms
    (4, 8, 512, 64) @ (4, 8, 64, 512)       stacked 558 ms   2-D slices  20 ms
    (512, 4, 512) @ (512, 1536)  (3-D @ 2-D) stacked 927 ms   folded     109 ms
    (512, 8, 8) @ (512, 8, 8)    (tiny)     stacked 0.03 ms  2-D slices 0.54 ms

So: a stacked ``a`` times a 2-D ``b`` is folded into one 2-D product; stacks
of large matrices are multiplied slice by slice; small ones stay with NumPy's
stacked loop, which wins when the per-matrix work is tiny.
"""

from __future__ import annotations

import math

import numpy as np

# Below this many multiply-adds per matrix, NumPy's stacked loop beats a Python loop.
_SLICE_LOOP_MIN_WORK = 32 * 32 * 32


def rows(x: np.ndarray) -> int:
    """The number of rows when all but the last dim are folded (explicit: -1 fails on size 0)."""
    return math.prod(x.shape[:-1])


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)`` (same broadcasting and result), routed so BLAS does the work."""
    if a.ndim <= 2 and b.ndim <= 2 or a.ndim < 2 or b.ndim < 2:
        return np.matmul(a, b)
    if b.ndim == 2:  # fold the leading dims of a into the rows: one GEMM
        out = np.reshape(a, (rows(a), a.shape[-1])) @ b
        return out.reshape(a.shape[:-1] + (b.shape[-1],))
    n, k = a.shape[-2:]
    m = b.shape[-1]
    if n * k * m < _SLICE_LOOP_MIN_WORK:
        return np.matmul(a, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a_full = np.broadcast_to(a, batch + (n, k))
    b_full = np.broadcast_to(b, batch + (k, m))
    out = np.empty(batch + (n, m), dtype=np.result_type(a, b))
    for index in np.ndindex(*batch):
        np.matmul(a_full[index], b_full[index], out=out[index])
    return out


def matmul_sum_batch(a_t: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``sum over leading dims of a_t^T-style products``: ``A^T G`` with A, G (..., n, k/m)
    folded to 2-D, giving (k, m) in one GEMM (the weight gradient of ``x @ W``)."""
    return np.reshape(a_t, (rows(a_t), a_t.shape[-1])).T @ np.reshape(g, (rows(g), g.shape[-1]))
