"""AdamW step alone on the GPT benchmark's parameters (4L d256 V256 T128: ~3.3M numbers).

Runs the fused numba kernel and the NumPy twin interleaved (``--rounds`` rounds of
``--repeats`` steps each) and prints medians of wall and CPU time per step.

    python -m benchmarks.bench_optim [--rounds 7] [--repeats 10]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tinyattn


def gpt_shapes(n_layer=4, d=256, T=128, vocab=256) -> list[tuple[int, ...]]:
    block = [(d,), (d,), (d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,)]
    block += [(4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    return [(vocab, d), (T, d)] + block * n_layer + [(d,), (d,), (vocab, d)]


def make(fused: bool, dtype=np.float32):
    rng = np.random.default_rng(0)
    params = [
        tinyattn.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
        for s in gpt_shapes()
    ]
    for p in params:
        p.grad = tinyattn.tensor(rng.standard_normal(p.shape).astype(dtype))
    return params, tinyattn.optim.AdamW(params, lr=3e-4, fused=fused)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    runs = {"twin (NumPy)": make(False), "fused kernel": make(True)}
    n = sum(p.numel() for p in runs["twin (NumPy)"][0])
    for _, opt in runs.values():
        opt.step()  # warm-up (compiles or loads the cached kernel)
    wall = {k: [] for k in runs}
    cpu = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, (_, opt) in runs.items():
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(args.repeats):
                opt.step()
            wall[name].append((time.perf_counter() - t0) / args.repeats)
            cpu[name].append((time.process_time() - c0) / args.repeats)
    print(f"AdamW step, {len(runs['twin (NumPy)'][0])} parameters, {n:,} numbers, float32")
    for name in runs:
        print(
            f"  {name:<14} wall {statistics.median(wall[name]) * 1e3:7.2f} ms"
            f"   CPU {statistics.median(cpu[name]) * 1e3:7.2f} ms"
        )


if __name__ == "__main__":
    main()
