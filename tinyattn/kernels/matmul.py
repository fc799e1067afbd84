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


class FewRowThreads:
    """Runs few-row products (decode steps) at the BLAS thread count that is faster now.

    A product of one to a few rows is a matrix-vector one, bound by reading the weight.
    Whether the library's threads help depends on the machine's load, which no fixed
    rule knows. On the project's 2-core machine (OpenBLAS, SkylakeX kernel, float32,
    medians of 30 calls): at load 1.6 a (1, 768) x (768, 2304) product took 0.17 ms at
    two threads against 0.34 ms at one, (1, 768) x (768, 768) 0.06 against 0.11; at
    load 5, with other processes on both cores, two threads took 4-8 ms on some shapes
    (each call waits for a second thread that is not scheduled) against 0.5 ms at one,
    and GPT-2-small decoding ran 3.2 tokens/s at two threads against 5.7 at one
    (medians of 4 alternating processes).

    So each product shape keeps its last ``SAMPLES`` timings at one thread and at the
    library's count, runs the faster, and times the other again every ``RETRY_EVERY``
    calls (the machine's load changes). The first calls alternate. The counts split the
    output between threads, not the sums: the numbers are the same at either count
    (for (1, k) x (k, n) OpenBLAS may round the last few outputs differently, within
    float32 rounding).
    """

    SAMPLES = 5
    RETRY_EVERY = 64
    MAX_SHAPES = 256  # the table is cleared past this many shapes (timings are cheap to redo)

    def __init__(self) -> None:
        self._timings: dict[tuple, tuple[list[float], list[float], list[int]]] = {}

    def product(self, x2: np.ndarray, weight_t: np.ndarray) -> np.ndarray:
        """``x2 @ weight_t`` (2-D operands) at the faster thread count for this shape."""
        found = numpy_blas()
        if found is None or found["get_threads"]() <= 1:
            return x2 @ weight_t  # one count only: nothing to choose
        key = (x2.shape, weight_t.shape, x2.dtype.char, weight_t.dtype.char)
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
                y = x2 @ weight_t
        else:
            y = x2 @ weight_t
        timings = one if single else many
        timings.append(time.perf_counter() - start)
        if len(timings) > self.SAMPLES:
            del timings[0]
        return y

    def _one_thread(self, one: list[float], many: list[float], calls: int) -> bool:
        if len(one) < self.SAMPLES or len(many) < self.SAMPLES:
            return len(one) <= len(many)  # alternate until both counts are timed
        middle = self.SAMPLES // 2
        one_is_faster = sorted(one)[middle] <= sorted(many)[middle]
        if calls % self.RETRY_EVERY == 0:
            return not one_is_faster  # time the other count again
        return one_is_faster

    def choice(self, x_shape: tuple, weight_t_shape: tuple, dtype: np.dtype) -> str | None:
        """ "one", "many" (the count now preferred for this shape) or None before both are
        timed."""
        char = np.dtype(dtype).char
        entry = self._timings.get((tuple(x_shape), tuple(weight_t_shape), char, char))
        if entry is None or min(len(entry[0]), len(entry[1])) < self.SAMPLES:
            return None
        middle = self.SAMPLES // 2
        return "one" if sorted(entry[0])[middle] <= sorted(entry[1])[middle] else "many"


few_row_threads = FewRowThreads()
