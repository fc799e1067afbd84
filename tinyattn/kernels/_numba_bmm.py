"""Stacked matrix products, parallel over the stack: ``out[i] = op(a[i]) @ op(b[i])``.

The hot path of attention written by hand (``q @ k.transpose(-2, -1)``, then
``weights @ v``, as every tutorial does) and of ``MultiheadAttention(need_weights=True)``:
many small products (one per batch and head, e.g. 64 of 128 x 64 x 128). NumPy's
stacked ``matmul`` hands these to BLAS one at a time, each product too small for
BLAS's threads to pay off; here the stack is split over the numba threads and each
product is one single-threaded BLAS call (``_numba_tiles.gemm``; BLAS held at one
thread by the launch: one parallel level).

``a`` (n, M, K) or, with ``trans_a``, (n, K, M); ``b`` (n, K, N) or, with ``trans_b``,
(n, N, K); ``out`` (n, M, N). All three are C-contiguous of one float dtype (the
caller, ``tinyattn._matmul``, checks and prepares them); each ``prange`` iteration
writes only ``out[i]``. The NumPy twin is ``np.matmul`` (``tests/kernels/test_bmm.py``).
"""

from __future__ import annotations

from numba import njit, prange

from ._numba_tiles import gemm


@njit(parallel=True, cache=True)
def bmm_kernel(a, b, out, trans_a, trans_b, use_blas):
    for i in prange(out.shape[0]):
        if trans_a and trans_b:
            gemm(1.0, a[i].T, b[i].T, 0.0, out[i], use_blas)
        elif trans_a:
            gemm(1.0, a[i].T, b[i], 0.0, out[i], use_blas)
        elif trans_b:
            gemm(1.0, a[i], b[i].T, 0.0, out[i], use_blas)
        else:
            gemm(1.0, a[i], b[i], 0.0, out[i], use_blas)
