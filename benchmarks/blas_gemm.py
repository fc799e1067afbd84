"""float32 GEMM throughput of NumPy's BLAS, and which kernels ran it.

    python -m benchmarks.blas_gemm [--n 2048] [--repeats 10]
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.blas_gemm   # detected
    OPENBLAS_CORETYPE=Haswell python -m benchmarks.blas_gemm                      # forced

Prints the BLAS libraries (tinyattn/bench/_blas_report.py, loaded by path: tinyattn itself
is not imported) and the best and median GFLOP/s of ``a @ b`` on (n, n) float32 matrices.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

import numpy as np


def _report():
    path = Path(__file__).resolve().parents[1] / "tinyattn" / "bench" / "_blas_report.py"
    spec = importlib.util.spec_from_file_location("_blas_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    report = _report()
    for info in report.numpy_blas_report():
        print("blas:", report.describe(info))
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((args.n, args.n), dtype=np.float32) for _ in range(2))
    a @ b  # warm-up: threads, first touch
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        a @ b
        seconds.append(time.perf_counter() - start)
    flops = 2 * args.n**3
    best, median = flops / min(seconds) / 1e9, flops / statistics.median(seconds) / 1e9
    print(f"float32 GEMM n={args.n}: best {best:.0f} GFLOP/s, median {median:.0f} GFLOP/s")
    return best


if __name__ == "__main__":
    main()
