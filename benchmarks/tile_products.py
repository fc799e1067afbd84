"""Why the kernels call BLAS on tiles: single-thread GFLOP/s of one tile product.

``python benchmarks/tile_products.py`` times ``gemm`` from
``tinyattn.kernels._numba_tiles`` (c = a @ b^T, the scores product) on the tile
shapes the kernels use: through NumPy's bundled BLAS, scipy's (if installed) and as
plain numba loops (the three ``use_blas`` codes of ``gemm``).
"""

import time

import numpy as np
from numba import njit

from tinyattn.kernels._blas import numpy_blas, scipy_available, single_threaded_blas
from tinyattn.kernels._numba_tiles import gemm

BACKENDS = [
    ("NumPy BLAS", 1, lambda: numpy_blas() is not None),
    ("scipy BLAS", 2, scipy_available),
    ("loops", 0, lambda: True),
]


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
        backends = [(name, code) for name, code, ok in BACKENDS if ok()]
        rates = {}
        for name, code in backends:
            with single_threaded_blas("numpy" if code == 1 else "scipy" if code == 2 else "loops"):
                _repeat(a, b, c, 1, code)
                best = float("inf")
                for _ in range(3):
                    start = time.perf_counter()
                    _repeat(a, b, c, repeats, code)
                    best = min(best, time.perf_counter() - start)
            rates[name] = 2 * m * n * k * repeats / best / 1e9
        cells = ", ".join(f"{name} {rate:6.1f} GFLOP/s" for name, rate in rates.items())
        print(f"(m, k, n) = {(m, k, n)}: {cells}")


if __name__ == "__main__":
    main()
