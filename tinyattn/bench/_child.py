"""One benchmark process: ``python <this file> '<json spec>'`` (run by ``_harness``).

It runs as a script, not as ``-m tinyattn.bench._child``: that would import the tinyattn
package, whose ``__init__`` makes process-wide settings (OpenMP/OpenBLAS spin times, glibc
malloc thresholds), and a torch-only process must run as torch's users run it. The
cases module is then imported from this directory, on its own.

spec: {"suite", "frameworks": [...], "quick", "repeats", "threads"}. Prints one JSON
line: {"cases": {case: {framework: median ms}}, "blas": {framework: the BLAS it ran in}}.
With two frameworks the timed calls alternate (tinyattn, torch, tinyattn, ...): the
"same process" measurement. Framework ``jax`` runs the cases of ``_jax_cases`` (the
suites it takes part in) under ``jax.jit``, always alone in its process.
Suite ``inference`` (one framework per process): ``_inference``'s figures, each in its
own unit (construction s, prefill ms, decode tokens/s, peak RSS MiB).
Suite ``interference``, frameworks ``["fresh"]`` or ``["after tinyattn"]``: each probe
(a torch or NumPy product) timed after a 10 ms pause, or right after a tinyattn call.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

PAUSE_S = 0.010


def _load(framework: str, threads: int):
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
        return torch
    if framework == "jax":  # XLA's CPU client uses every core: the machine's threads
        import jax

        return jax
    import tinyattn

    return tinyattn


def _sibling(name: str):
    """Module ``name`` of this directory: from the package when imported as part of it,
    else from this directory (which is ``sys.path[0]`` when run as a script)."""
    import importlib

    if __package__:
        return importlib.import_module(f"{__package__}.{name}")
    return importlib.import_module(name)


def _cases_module():
    return _sibling("_cases")


def blas_in_use(frameworks: list[str]) -> dict:
    """The BLAS each loaded framework's products run in, as this process sees it:
    {"tinyattn": [NumPy's BLAS libraries], "torch": {blas, version, cpu_capability, ...}}."""
    report = _sibling("_blas_report")
    out: dict = {}
    if frameworks != ["torch"]:  # NumPy's BLAS: tinyattn's products, the NumPy probes
        out["tinyattn"] = report.numpy_blas_report()
    if "torch" in sys.modules:
        out["torch"] = report.torch_blas_report()
    if "jax" in sys.modules:
        import jax

        out["jax"] = dict(
            blas="XLA CPU (its own GEMM kernels)",
            version=jax.__version__,
            cpu_capability="n/a",
            num_threads=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        )
    return out


def _median_ms(samples: list[float]) -> float:
    return 1e3 * statistics.median(samples)


def run_suite(spec: dict) -> dict:
    if spec["frameworks"] == ["jax"]:
        return run_jax_suite(spec)
    _cases = _cases_module()

    libs = {name: _load(name, spec["threads"]) for name in spec["frameworks"]}
    results = {}
    for case, setup in _cases.suites(spec["quick"])[spec["suite"]].items():
        runs = {name: setup(lib) for name, lib in libs.items()}
        results[case] = _time_alternating(runs, spec["repeats"])
    return results


def _time_alternating(runs: dict, repeats: int) -> dict:
    """{name: median ms} of ``repeats`` calls of each run, alternating, after two warm-ups."""
    for run in runs.values():  # warm-up: compile, first touch, thread pools
        run()
        run()
    times: dict = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: _median_ms(t) for name, t in times.items()}


def run_jax_suite(spec: dict) -> dict:
    """The JAX versions of the suite's cases that have one (``_jax_cases``)."""
    _load("jax", spec["threads"])
    cases = _sibling("_jax_cases").suites(spec["quick"]).get(spec["suite"], {})
    return {
        case: _time_alternating({"jax": setup()}, spec["repeats"]) for case, setup in cases.items()
    }


def run_inference(spec: dict) -> dict:
    """The inference figures of the process's one framework: {figure: {framework: value}}."""
    (name,) = spec["frameworks"]
    if name == "jax":
        _load("jax", spec["threads"])
        figures = _sibling("_jax_cases").run_inference(spec["quick"], spec["repeats"])
    else:
        lib = _load(name, spec["threads"])
        figures = _sibling("_inference").run(lib, spec["quick"], spec["repeats"])
    return {figure: {name: value} for figure, value in figures.items()}


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
    if spec["suite"] == "blas":  # only the report: load the frameworks, time nothing
        for name in spec["frameworks"]:
            _load(name, spec["threads"])
        results: dict = {}
    elif spec["suite"] == "interference":
        results = run_interference(spec)
    elif spec["suite"] == "inference":
        results = run_inference(spec)
    else:
        results = run_suite(spec)
    print(json.dumps(dict(cases=results, blas=blas_in_use(spec["frameworks"]))))


if __name__ == "__main__":
    main(sys.argv[1:])
