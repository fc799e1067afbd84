"""Pooling forward+backward, float32, tinyattn against torch: each framework in its own
process, alternating, the min and median of 30 runs of each process after 10 warm-up runs.

Cases: ``max_pool2d`` and ``avg_pool2d`` at (8, 64, 56, 56), kernel 3, stride 2, padding 1;
``adaptive_avg_pool2d`` and ``adaptive_max_pool2d`` at (8, 16, 32, 32) -> 7 (unequal,
overlapping windows of 5 or 6).

    python benchmarks/bench_pool.py                # all, 3 process pairs, 2 threads
    python benchmarks/bench_pool.py --threads 1    # all, on one thread each
    python benchmarks/bench_pool.py --rounds 5     # 5 alternating process pairs
    python benchmarks/bench_pool.py tinyattn 2     # one process of one framework
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

CASES = {  # name: (input shape, output spatial, call)
    "max_pool2d": ((8, 64, 56, 56), (28, 28), lambda F, x: F.max_pool2d(x, 3, 2, 1)),
    "avg_pool2d": ((8, 64, 56, 56), (28, 28), lambda F, x: F.avg_pool2d(x, 3, 2, 1)),
    "adaptive_avg_pool2d": ((8, 16, 32, 32), (7, 7), lambda F, x: F.adaptive_avg_pool2d(x, 7)),
    "adaptive_max_pool2d": ((8, 16, 32, 32), (7, 7), lambda F, x: F.adaptive_max_pool2d(x, 7)),
}


def run(lib_name: str, threads: int, repeats: int = 30, warmup: int = 10) -> None:
    if lib_name == "torch":
        import torch as lib

        lib.set_num_threads(threads)
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)  # (read when numba loads)
        sys.path.insert(0, str(ROOT))  # this checkout's tinyattn
        import tinyattn as lib
    F = lib.nn.functional
    for name, (shape, out, call) in CASES.items():
        x0 = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        g0 = np.random.default_rng(1).standard_normal(shape[:2] + out).astype(np.float32)
        times = []
        for i in range(repeats + warmup):
            x = lib.tensor(x0, requires_grad=True)
            g = lib.tensor(g0)
            t0 = time.perf_counter()
            call(F, x).backward(g)
            # warm-up: the first call compiles or loads the kernels, and the first dozen
            # backward passes of a process find fresh memory (page faults) for dx
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        median, best = statistics.median(times) * 1e3, min(times) * 1e3
        print(
            f"{lib_name:8s} {name:20s} ({threads} thr): median {median:7.3f} ms, "
            f"min {best:7.3f} ms",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("tinyattn", "torch"):
        run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    else:
        parser = argparse.ArgumentParser()
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--rounds", type=int, default=3)
        args = parser.parse_args()
        for _ in range(args.rounds):
            for lib_name in ("tinyattn", "torch"):
                cmd = [sys.executable, __file__, lib_name, str(args.threads)]
                subprocess.run(cmd, check=True)
