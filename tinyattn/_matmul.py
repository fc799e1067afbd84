"""Matrix products that reach BLAS, for every op that multiplies matrices.

NumPy's ``matmul`` on stacked operands does not always hand each matrix to BLAS
efficiently. Measured on the project's 2-core machine (numpy 2.4, float32):

    (32, 512, 64) @ (32, 64, 512)           stacked  48 ms   2-D slices   8 ms
    (4, 8, 512, 64) @ (4, 8, 64, 512)       stacked 558 ms   2-D slices  20 ms
    (512, 4, 512) @ (512, 1536)  (3-D @ 2-D) stacked 927 ms   folded     109 ms
    (512, 8, 8) @ (512, 8, 8)    (tiny)     stacked 0.03 ms  2-D slices 0.54 ms

So: a stacked ``a`` times a 2-D ``b`` is folded into one 2-D product; stacks
of large matrices go to the numba stacked product (``kernels/_numba_bmm.py``: the
stack split over the threads, one single-threaded BLAS call per matrix; 2-3x faster
than slice by slice at attention's shapes, e.g. 64 products of 128 x 64 x 128), or,
with ``TINYATTN_KERNELS=numpy`` or another dtype, slice by slice; small ones stay with
NumPy's stacked loop, which wins when the per-matrix work is tiny.
"""

from __future__ import annotations

import math

import numpy as np

# Below this many multiply-adds per matrix, NumPy's stacked loop beats a Python loop.
_SLICE_LOOP_MIN_WORK = 32 * 32 * 32
# Below this many multiply-adds in all, the numba stacked product's launch (~30 us: the
# thread pool, BLAS set to one thread and back) costs more than it saves.
_STACK_KERNEL_MIN_WORK = 2**21


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
    if _stack_kernel_applies(a, b, math.prod(batch), n * k * m):
        _stack_kernel(a_full, b_full, out)
        return out
    for index in np.ndindex(*batch):
        np.matmul(a_full[index], b_full[index], out=out[index])
    return out


def _stack_kernel_applies(a: np.ndarray, b: np.ndarray, count: int, work: int) -> bool:
    """The numba stacked product runs for float32/float64 stacks of 2+ products of
    ``_STACK_KERNEL_MIN_WORK`` multiply-adds in all when the kernels are on and reach a
    BLAS (with plain loops NumPy's per-slice BLAS is faster)."""
    if count < 2 or count * work < _STACK_KERNEL_MIN_WORK:
        return False
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64):
        return False
    from .kernels import _blas, backend

    return backend() != "numpy" and _blas.tile_blas_code() != 0


def _as_stack(x: np.ndarray, count: int) -> tuple[np.ndarray, bool]:
    """``x`` (..., r, c) as a C-contiguous (count, r, c) array, or as (count, c, r) with
    True when ``x`` is the transpose of a contiguous stack (``k.transpose(-2, -1)``): no copy."""
    r, c = x.shape[-2:]
    if x.flags.c_contiguous:
        return x.reshape(count, r, c), False
    xt = x.swapaxes(-1, -2)
    if xt.flags.c_contiguous:
        return xt.reshape(count, c, r), True
    return np.ascontiguousarray(x).reshape(count, r, c), False


def _stack_kernel(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = a[i] @ b[i]`` over the broadcast stack, by ``kernels._numba_bmm``."""
    from .kernels import _blas
    from .kernels._numba_bmm import bmm_kernel
    from .kernels._threads import kernel_launch

    count = math.prod(out.shape[:-2])
    (a3, trans_a), (b3, trans_b) = _as_stack(a, count), _as_stack(b, count)
    with kernel_launch(blas=True):
        bmm_kernel(
            a3, b3, out.reshape(count, *out.shape[-2:]), trans_a, trans_b, _blas.tile_blas_code()
        )


def matmul_sum_batch(a_t: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``sum over leading dims of a_t^T-style products``: ``A^T G`` with A, G (..., n, k/m)
    folded to 2-D, giving (k, m) in one GEMM (the weight gradient of ``x @ W``)."""
    return np.reshape(a_t, (rows(a_t), a_t.shape[-1])).T @ np.reshape(g, (rows(g), g.shape[-1]))
