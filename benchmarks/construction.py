"""Time building a GPT-2-small-shaped model (124M parameters) in tinyattn or torch.

    python -m benchmarks.construction --lib tinyattn [--builds 1] [--seed 0]

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
    args = parser.parse_args(argv)
    lib = importlib.import_module(args.lib)
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


if __name__ == "__main__":
    main()
