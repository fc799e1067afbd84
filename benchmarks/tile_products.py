"""Why the kernels call BLAS on tiles: single-thread GFLOP/s of one tile product.

``python benchmarks/tile_products.py`` times ``gemm`` from
``tinyattn.kernels._numba_tiles`` (c = a @ b^T, the scores product) on the tile
shapes the kernels use, once through scipy's BLAS and once as plain numba loops.
"""

import time

import numpy as np
from numba import njit

from tinyattn.kernels._blas import single_threaded_blas
from tinyattn.kernels._numba_tiles import gemm


@njit
def _repeat(a, b, c, repeats, use_blas):
    for _ in range(repeats):
        gemm(1.0, a, b.T, 0.0, c, use_blas)


def main() -> None:
    rng = np.random.default_rng(0)
    for m, k, n in [(64, 64, 64), (128, 64, 128), (128, 64, 256), (256, 64, 256), (512, 64, 512)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((n, k), dtype=np.float32)
        c = np.empty((m, n), np.float32)
        repeats = max(1, int(1e9 / (2 * m * n * k)))
        rates = []
        for use_blas in (True, False):
            with single_threaded_blas():
                _repeat(a, b, c, 1, use_blas)
                best = float("inf")
                for _ in range(3):
                    start = time.perf_counter()
                    _repeat(a, b, c, repeats, use_blas)
                    best = min(best, time.perf_counter() - start)
            rates.append(2 * m * n * k * repeats / best / 1e9)
        print(
            f"(m, k, n) = {(m, k, n)}: BLAS {rates[0]:6.1f} GFLOP/s, loops {rates[1]:6.1f} GFLOP/s"
        )


if __name__ == "__main__":
    main()
