"""Time building a GPT-2-small-shaped model (124M parameters) in tinyattn or torch.

    python -m benchmarks.construction --lib tinyattn [--builds 1] [--seed 0]
    python -m benchmarks.construction --lib torch --fills   # nn.init fills alone

The model is ``tinyattn/bench/_cases.py``'s ``gpt2_model`` (nanoGPT's layout: default
layer construction, then N(0, 0.02^2) weights, zero biases, tied head). The cases file is
loaded by path, so a torch run never imports tinyattn. Prints one line per build:
wall and CPU seconds (CPU: all threads of the process) and the parameter count. For whole-process figures, time this command from
outside in fresh processes, alternating with ``--lib torch``.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path


def _cases():
    path = Path(__file__).resolve().parents[1] / "tinyattn" / "bench" / "_cases.py"
    spec = importlib.util.spec_from_file_location("_bench_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lib", choices=("tinyattn", "torch"), default="tinyattn")
    parser.add_argument("--builds", type=int, default=1, help="models built one after another")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--fills",
        action="store_true",
        help="instead: CPU ns per number of nn.init.normal_ / uniform_ on a (8192, 768) "
        "float32 tensor (min of 7 after a warm-up)",
    )
    args = parser.parse_args(argv)
    lib = importlib.import_module(args.lib)
    if args.fills:
        return time_fills(lib)
    cases = _cases()
    lib.manual_seed(args.seed)
    seconds = []
    for _ in range(args.builds):
        start, cpu = time.perf_counter(), time.process_time()
        model = cases.gpt2_model(lib, **cases.GPT2_SMALL)
        seconds.append(time.perf_counter() - start)
        cpu = time.process_time() - cpu
        n = sum(p.numel() for p in model.parameters())
        print(
            f"{args.lib} build {seconds[-1]:.3f} s wall, {cpu:.3f} s cpu (all threads), "
            f"{n / 1e6:.1f}M parameters",
            flush=True,
        )
        del model
    return seconds


def time_fills(lib) -> list[float]:
    """CPU nanoseconds per number of the two initialisers every model calls."""
    weight = lib.empty(8192, 768)
    fills = {
        "normal_(std=0.02)": lambda: lib.nn.init.normal_(weight, std=0.02),
        "uniform_(-0.1, 0.1)": lambda: lib.nn.init.uniform_(weight, -0.1, 0.1),
    }
    out = []
    for name, fill in fills.items():
        fill()
        cpu = []
        for _ in range(7):
            start = time.process_time()
            fill()
            cpu.append(time.process_time() - start)
        out.append(min(cpu) / weight.numel() * 1e9)
        print(f"{lib.__name__} {name}: {out[-1]:.2f} ns cpu per number", flush=True)
    return out


if __name__ == "__main__":
    main()
