"""One benchmark process: ``python <this file> '<json spec>'`` (run by ``_harness``).

It runs as a script, not as ``-m tinyattn.bench._child``: that would import the tinyattn
package, whose ``__init__`` makes process-wide settings (OpenMP/OpenBLAS spin times, glibc
malloc thresholds), and a torch-only process must run as torch's users run it. The
cases module is then imported from this directory, on its own.

spec: {"suite", "frameworks": [...], "quick", "repeats", "threads"}. Prints one JSON
line: {case: {framework: median ms}}. With two frameworks the timed calls
alternate (tinyattn, torch, tinyattn, ...): the "same process" measurement.
Suite ``interference``, frameworks ``["fresh"]`` or ``["after tinyattn"]``: each probe
(a torch or NumPy product) timed after a 10 ms pause, or right after a tinyattn call.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

PAUSE_S = 0.010


def _load(framework: str, threads: int):
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
        return torch
    import tinyattn

    return tinyattn


def _cases_module():
    """``_cases``: from the package when imported as part of it, else from this directory."""
    if __package__:
        from . import _cases

        return _cases
    import importlib

    return importlib.import_module("_cases")  # (this file's directory is sys.path[0])


def _median_ms(samples: list[float]) -> float:
    return 1e3 * statistics.median(samples)


def run_suite(spec: dict) -> dict:
    _cases = _cases_module()

    libs = {name: _load(name, spec["threads"]) for name in spec["frameworks"]}
    results = {}
    for case, setup in _cases.suites(spec["quick"])[spec["suite"]].items():
        runs = {name: setup(lib) for name, lib in libs.items()}
        for run in runs.values():  # warm-up: compile, first touch, thread pools
            run()
            run()
        times = {name: [] for name in runs}
        for _ in range(spec["repeats"]):
            for name, run in runs.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        results[case] = {name: _median_ms(t) for name, t in times.items()}
    return results


def run_interference(spec: dict) -> dict:
    _cases = _cases_module()

    (mode,) = spec["frameworks"]
    # "fresh": tinyattn is not even imported (its import makes process-wide settings)
    tinyattn = _load("tinyattn", spec["threads"]) if mode == "after tinyattn" else None
    try:
        torch = _load("torch", spec["threads"])
    except ImportError:
        torch = None
    before = _cases.tinyattn_call(spec["quick"])(tinyattn) if tinyattn is not None else None
    results = {}
    for name, setup in _cases.probes(spec["quick"]).items():
        if name.startswith("torch") and torch is None:
            continue
        probe = setup(torch)
        for _ in range(2):
            probe()
            if before is not None:
                before()
        samples = []
        for _ in range(spec["repeats"]):
            if before is None:
                time.sleep(PAUSE_S)  # the probe's own thread pool goes idle, as it would
            else:
                before()
            start = time.perf_counter()
            probe()
            samples.append(time.perf_counter() - start)
        results[name] = {mode: _median_ms(samples)}
    return results


def main(argv: list[str]) -> None:
    spec = json.loads(argv[0])
    if spec["suite"] == "interference":
        results = run_interference(spec)
    else:
        results = run_suite(spec)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
