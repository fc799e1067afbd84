"""Where the op chain's Python time goes: bytecodes run per op, by function.

The op-chain benchmark (1,000 small elementwise ops on a (16,) tensor, forward and
backward) measures per-op overhead; its remaining cost is the Python that runs for each
op. This counts the bytecodes each function executes (``sys.settrace`` opcode events,
deterministic, unlike a timer on a shared machine) and prints them per op, largest first.

    python -m benchmarks.op_chain_profile [--ops 1000] [--top 25]

``--time tinyattn`` (or ``--time torch``) times the chain instead, in this process with
only that framework imported: the median and range of ``--runs`` runs, in ms. Compare
the two frameworks in separate processes, in turn (the machine's speed drifts)::

    for i in 1 2 3; do python -m benchmarks.op_chain_profile --time torch
                       python -m benchmarks.op_chain_profile --time tinyattn; done
"""

from __future__ import annotations

import argparse
import collections
import importlib
import statistics
import sys
import time


def chain(x, n_ops: int) -> None:
    y = x
    for _ in range(n_ops // 4):
        y = ((y * 1.0001 + 0.001).tanh()) - 0.0005
    y.sum().backward()


def count_bytecodes(n_ops: int) -> collections.Counter:
    import tinyattn

    x = tinyattn.ones(16, requires_grad=True)
    chain(x, 20)  # warm-up: lazy imports, first-call paths
    counts: collections.Counter = collections.Counter()

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            where = code.co_filename.rsplit("tinyattn/", 1)[-1]
            counts[f"{where}:{code.co_name}"] += 1
        return tracer

    sys.settrace(tracer)
    try:
        chain(x, n_ops)
    finally:
        sys.settrace(None)
    return counts


def time_chain(framework: str, n_ops: int, runs: int) -> list[float]:
    """Milliseconds of each of ``runs`` runs of the chain (after two warm-up runs)."""
    lib = importlib.import_module(framework)
    x = lib.ones(16, requires_grad=True)
    chain(x, n_ops)
    chain(x, n_ops)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        chain(x, n_ops)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--time", choices=["tinyattn", "torch"], help="time it instead")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    if args.time:
        times = time_chain(args.time, args.ops, args.runs)
        print(
            f"{args.time}: {args.ops}-op chain {statistics.median(times):.2f} ms median of "
            f"{args.runs} runs (min {min(times):.2f}, max {max(times):.2f})"
        )
        return
    counts = count_bytecodes(args.ops)
    total = sum(counts.values())
    print(f"{total / args.ops:.0f} bytecodes per op (forward + backward), by function:")
    for name, n in counts.most_common(args.top):
        print(f"{n / args.ops:8.1f}  {name}")


if __name__ == "__main__":
    main()
