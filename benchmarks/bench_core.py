"""Core framework benchmark: per-op overhead and a matmul + softmax block, vs torch.

Run:  python benchmarks/bench_core.py [--repeat N]

(a) a chain of 1,000 small elementwise ops (forward, then backward) on a (16,)
    float32 tensor: this measures the framework's per-op overhead;
(b) (64, 512) x (512, 512) matmul + softmax + sum, forward and backward, float32.

tinyattn and torch (when installed, threads = 2) run side by side in this process;
the table shows medians over repeats and the ratio tinyattn / torch.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import tinyattn


def _median_ms(fn, repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def chain(lib, n_ops: int = 1000):
    x = lib.ones(16, requires_grad=True)

    def run():
        y = x
        for _ in range(n_ops // 4):
            y = y * 1.0001
            y = y + 0.001
            y = y.tanh()
            y = y - 0.0005
        y.sum().backward()

    return run


def matmul_softmax(lib):
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.standard_normal((64, 512)).astype(np.float32), requires_grad=True)
    w = lib.tensor(
        (rng.standard_normal((512, 512)) / 512**0.5).astype(np.float32), requires_grad=True
    )
    g = lib.tensor(rng.standard_normal((64, 512)).astype(np.float32))

    def run():
        y = lib.softmax(a @ w, dim=-1)
        (y * g).sum().backward()

    return run


def numpy_matmul_softmax():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 512)).astype(np.float32)
    w = (rng.standard_normal((512, 512)) / 512**0.5).astype(np.float32)
    g = rng.standard_normal((64, 512)).astype(np.float32)

    def run():
        s = a @ w
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        ds = p * (g - (g * p).sum(-1, keepdims=True))
        return ds @ w.T, a.T @ ds

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:
        torch = None

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
        f"python {platform.python_version()}, numpy {np.__version__}"
        + (f", torch {torch.__version__}" if torch else ", torch not installed")
    )
    rows = [
        (
            "(a) 1000-op elementwise chain, fwd+bwd",
            chain(tinyattn),
            chain(torch) if torch else None,
            None,
        ),
        (
            "(b) matmul(64x512x512)+softmax+sum, fwd+bwd",
            matmul_softmax(tinyattn),
            matmul_softmax(torch) if torch else None,
            numpy_matmul_softmax(),
        ),
    ]
    print(
        f"{'benchmark':<46} {'tinyattn ms':>12} {'torch ms':>10} {'numpy ms':>10} {'tinyattn/torch':>15}"
    )
    for name, ours, theirs, plain in rows:
        t_ours = _median_ms(ours, args.repeat)
        t_torch = _median_ms(theirs, args.repeat) if theirs else float("nan")
        t_np = _median_ms(plain, args.repeat) if plain else float("nan")
        ratio = t_ours / t_torch if theirs else float("nan")
        print(f"{name:<46} {t_ours:>12.2f} {t_torch:>10.2f} {t_np:>10.2f} {ratio:>15.2f}")


if __name__ == "__main__":
    main()
