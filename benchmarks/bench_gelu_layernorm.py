"""F.gelu and F.layer_norm forward + backward against torch (float32, the GPT benchmark's shapes).

For each op and shape, runs tinyattn with the numba kernels, tinyattn with
``TINYATTN_KERNELS=numpy`` (the NumPy formula) and torch interleaved: ``--rounds``
rounds of ``--repeats`` forward+backward calls each, and prints the medians of wall
and CPU time per call (CPU time: the machine may be shared).

    python -m benchmarks.bench_gelu_layernorm [--rounds 15] [--repeats 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import tinyattn
import tinyattn.nn.functional as F

SHAPES = [(8, 128, 1024), (8, 128, 256)]


def _tinyattn_case(op: str, shape, backend: str):
    rng = np.random.default_rng(0)
    x = tinyattn.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    g = tinyattn.tensor(rng.standard_normal(shape).astype(np.float32))
    d = shape[-1]
    w = tinyattn.tensor(rng.standard_normal(d).astype(np.float32), requires_grad=True)
    b = tinyattn.tensor(rng.standard_normal(d).astype(np.float32), requires_grad=True)

    def run():
        os.environ["TINYATTN_KERNELS"] = backend
        y = F.gelu(x) if op == "gelu" else F.layer_norm(x, (d,), w, b)
        y.backward(g)
        x.grad = w.grad = b.grad = None

    return run


def _torch_case(op: str, shape):
    import torch

    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    g = torch.tensor(rng.standard_normal(shape).astype(np.float32))
    d = shape[-1]
    w = torch.tensor(rng.standard_normal(d).astype(np.float32), requires_grad=True)
    b = torch.tensor(rng.standard_normal(d).astype(np.float32), requires_grad=True)

    def run():
        y = (
            torch.nn.functional.gelu(x)
            if op == "gelu"
            else torch.nn.functional.layer_norm(x, (d,), w, b)
        )
        y.backward(g)
        x.grad = w.grad = b.grad = None

    return run


def _time(run, repeats: int) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - t0) / repeats, (time.process_time() - c0) / repeats


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    saved = os.environ.get("TINYATTN_KERNELS")
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    print(f"float32 forward+backward, medians of {args.rounds} rounds x {args.repeats} calls")
    for op in ("gelu", "layer_norm"):
        for shape in SHAPES:
            runs = {
                "tinyattn numba": _tinyattn_case(op, shape, "numba"),
                "tinyattn numpy": _tinyattn_case(op, shape, "numpy"),
            }
            if have_torch:
                runs["torch"] = _torch_case(op, shape)
            for run in runs.values():
                run()  # warm-up (compiles or loads the cached kernels)
            wall: dict[str, list[float]] = {k: [] for k in runs}
            cpu: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(args.rounds):
                for name, run in runs.items():
                    w, c = _time(run, args.repeats)
                    wall[name].append(w)
                    cpu[name].append(c)
            print(f"{op} {shape}")
            for name in runs:
                print(
                    f"  {name:<15} wall {statistics.median(wall[name]) * 1e3:7.3f} ms"
                    f"   CPU {statistics.median(cpu[name]) * 1e3:7.3f} ms"
                )
    if saved is None:
        os.environ.pop("TINYATTN_KERNELS", None)
    else:
        os.environ["TINYATTN_KERNELS"] = saved


if __name__ == "__main__":
    main()
