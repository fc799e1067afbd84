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
import time

import numpy as np

from ._blas import numpy_blas, single_threaded_blas

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


class BlasThreadChoice:
    """Runs a 2-D product at the BLAS thread count that is faster now for its shape.

    Whether the library's threads help depends on the machine's load, which no fixed
    rule knows. On the project's 2-core machine shared with other work (OpenBLAS,
    SkylakeX kernel, float32, median ms of 30-100 calls, one thread / two, three runs):

    ==========================  ===========  ===========  ===========
    product                     load 1.3     load 1.6     load 5
    ==========================  ===========  ===========  ===========
    (1, 768) x (768, 2304)      0.39 / 8.0   0.34 / 0.17  0.44 / 0.19
    (1, 3072) x (3072, 768)     0.54 / 8.0   0.54 / 8.0   0.63 / 8.2
    (1, 768) x (768, 768)       0.13 / 0.07  0.11 / 0.06  0.12 / 0.06
    (1, 768) x (768, 50257)     16.4 / 16.3  17.0 / 22.2  34.6 / 36.9
    (128, 768) x (768, 2304)    8.9 / 24.0   9.4 / 24.0
    (128, 3072) x (3072, 768)   12.3 / 64.0  11.5 / 63.9
    ==========================  ===========  ===========  ===========

    Two threads win when the second core is free at that moment; when another process
    holds it, the call waits for a thread that is not scheduled (8, 24 and 64 ms are
    multiples of the scheduler's tick). GPT-2-small decoding at load 5-7 ran 5.7
    tokens/s at one thread and 3.2 at two (medians of 4 alternating processes).

    So each shape (rows rounded up to a power of two, the operands' shapes and dtypes)
    keeps its last ``SAMPLES`` timings at one thread and at the library's count, runs
    the count with the smaller total (not the median: the waits are rare but long, and
    the total is what a run pays), and times the other again every ``RETRY_EVERY``
    calls (the load changes). The first calls alternate, the library's count first.
    OpenBLAS splits the output between threads, not the sums: the numbers are the same
    at either count, except that for one row times a wide matrix the last outputs may
    round differently (within float32 rounding). Under
    ``tinyattn.use_deterministic_algorithms(True)`` (``fixed = True``) every product runs
    at the library's count, so repeated runs give the same bits.
    """

    SAMPLES = 5
    RETRY_EVERY = 128
    MIN_WORK = 1 << 18  # multiply-adds; below, the product runs as it is (OpenBLAS keeps
    # such small products on one thread anyway, and timing them would cost more than them)
    MAX_SHAPES = 256  # the table is cleared past this many shapes (timings are cheap to redo)

    def __init__(self) -> None:
        self._timings: dict[tuple, tuple[list[float], list[float], list[int]]] = {}
        self.fixed = False  # True: always the library's count (deterministic algorithms)

    @staticmethod
    def _key(x_shape: tuple, b_shape: tuple, x_dtype, b_dtype) -> tuple:
        rows = 1 << max(0, x_shape[0] - 1).bit_length()
        return (rows, x_shape[1], b_shape, np.dtype(x_dtype), np.dtype(b_dtype))

    def product(self, x2: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``x2 @ b`` (2-D operands) at the faster thread count for this shape."""
        if self.fixed or x2.shape[0] * x2.shape[1] * b.shape[1] < self.MIN_WORK:
            return x2 @ b
        found = numpy_blas()
        if found is None or found["get_threads"]() <= 1:
            return x2 @ b  # one count only: nothing to choose
        key = self._key(x2.shape, b.shape, x2.dtype, b.dtype)
        entry = self._timings.get(key)
        if entry is None:
            if len(self._timings) >= self.MAX_SHAPES:
                self._timings.clear()
            entry = self._timings[key] = ([], [], [0])
        one, many, calls = entry
        calls[0] += 1
        single = self._one_thread(one, many, calls[0])
        start = time.perf_counter()
        if single:
            with single_threaded_blas("numpy"):
                y = x2 @ b
        else:
            y = x2 @ b
        timings = one if single else many
        timings.append(time.perf_counter() - start)
        if len(timings) > self.SAMPLES:
            del timings[0]
        return y

    def _one_thread(self, one: list[float], many: list[float], calls: int) -> bool:
        if len(one) < self.SAMPLES or len(many) < self.SAMPLES:
            return len(one) < len(many)  # alternate until both are timed, many first
        one_is_faster = sum(one) <= sum(many)
        if calls % self.RETRY_EVERY == 0:
            return not one_is_faster  # time the other count again
        return one_is_faster

    def choice(self, x_shape: tuple, b_shape: tuple, dtype) -> str | None:
        """ "one" or "many" (the count now preferred for this shape; both operands of
        ``dtype``), or None before both counts are timed."""
        entry = self._timings.get(self._key(x_shape, b_shape, dtype, dtype))
        if entry is None or min(len(entry[0]), len(entry[1])) < self.SAMPLES:
            return None
        return "one" if sum(entry[0]) <= sum(entry[1]) else "many"


linear_threads = BlasThreadChoice()
