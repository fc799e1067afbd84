"""The fair benchmark: each framework in its own fresh process, alternating, for several rounds.

Per round and suite: one process runs tinyattn alone, one runs torch alone (the
order flips every round), and one runs both alternating call by call (the
"same process" columns: what a user mixing them sees). Each process warms up,
then times ``repeats`` calls per case and reports their median; the table shows
the median over rounds, and ratios of those medians (tinyattn / torch).

Where JAX is installed, a JAX process joins each round of the suites it has cases for
(``layers``: MHA, ``train``, ``inference``; ``_jax_cases``, under ``jax.jit``): a third
column. Suite ``inference`` (asked for by name) builds a GPT-2-small-shaped model per
process and reports construction, prefill, decode tokens/s and peak RSS; it has no "same
process" column. Each cell is the median over rounds; the JSON keeps each column's
minimum and maximum over rounds too (``<column> min`` / ``max``).

Suite ``interference`` times torch and NumPy products in a fresh process (after
a 10 ms pause per call) and right after a tinyattn call (attention fwd+bwd and a
LayerNorm); "after / fresh" should stay within 1.1.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

SUITES = ("kernels", "layers", "train", "overhead", "interference", "construction", "inference")
# construction and inference build 124M-parameter models: asked for by name
DEFAULT_SUITES = SUITES[:5]
JAX_SUITES = ("layers", "train", "inference")  # the suites _jax_cases has cases for
SAME = "same process"


def child_env(base: dict, coretype: str | None = None) -> dict:
    """The benchmark processes' environment: ``base`` without ``OPENBLAS_CORETYPE`` and
    ``OPENBLAS_L2_SIZE``, so that OpenBLAS runs the kernels it detects for this processor,
    as on a user's machine; or with ``OPENBLAS_CORETYPE=coretype`` to force that core type.
    Only these child processes change: the parent, tests and CI keep their environment."""
    env = {k: v for k, v in base.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def _child(spec: dict, coretype: str | None = None) -> dict:
    # A script, so that a torch-only process never imports the tinyattn package (see
    # _child's docstring); PYTHONPATH lets a tinyattn process import this same tree.
    script = Path(__file__).with_name("_child.py")
    root = str(Path(__file__).resolve().parents[2])
    env = child_env(dict(os.environ), coretype)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, str(script), json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark process {spec} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _torch_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _jax_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("jax") is not None


def process_plan(suite: str, torch: bool, jax: bool) -> tuple[list[list[str]], list[str] | None]:
    """(the single-framework processes of one round, the two-framework one or None)."""
    if suite == "interference":
        return [["fresh"], ["after tinyattn"]], None
    alone = [["tinyattn"]] + ([["torch"]] if torch else [])
    if jax and suite in JAX_SUITES:
        alone.append(["jax"])
    together = ["tinyattn", "torch"] if torch and suite != "inference" else None
    return alone, together


def run_suite(
    suite: str, rounds: int, repeats: int, quick: bool, threads: int, coretype: str | None = None
) -> tuple[dict, dict]:
    """({case: {column: median ms over rounds}} with columns tinyattn, torch, same process;
    {framework: the BLAS its separate processes ran in}), under ``child_env(coretype)``."""
    spec = dict(suite=suite, quick=quick, repeats=repeats, threads=threads)
    alone, together = process_plan(suite, _torch_available(), _jax_available())
    samples: dict = {}
    blas: dict = {}
    for round_ in range(rounds):
        order = alone if round_ % 2 == 0 else alone[::-1]
        runs = [(fw, _child(dict(spec, frameworks=fw), coretype)) for fw in order]
        if together:
            runs.append((together, _child(dict(spec, frameworks=together), coretype)))
        for frameworks, result in runs:
            if len(frameworks) == 1:
                blas.update(result["blas"])
            for case, times in result["cases"].items():
                for name, ms in times.items():
                    column = f"{SAME} {name}" if len(frameworks) > 1 else name
                    samples.setdefault(case, {}).setdefault(column, []).append(ms)
    table = {case: summarize(columns) for case, columns in samples.items()}
    return table, blas


def summarize(columns: dict[str, list[float]]) -> dict[str, float]:
    """{column: median, "<column> min": ..., "<column> max": ...} over the rounds."""
    row = {column: statistics.median(values) for column, values in columns.items()}
    for column, values in columns.items():
        row[f"{column} min"], row[f"{column} max"] = min(values), max(values)
    return row


def format_blas(blas: dict) -> str:
    """One line per framework: the BLAS library, core type or CPU capability, threads."""
    from ._blas_report import describe

    lines = []
    for framework, info in blas.items():
        if isinstance(info, dict):  # torch
            text = (
                f"{info.get('blas')} ({info.get('version') or 'version unknown'}), CPU "
                f"capability {info.get('cpu_capability')}, {info.get('num_threads')} threads"
            )
        else:
            text = "; ".join(describe(lib) for lib in info) or "no BLAS library found"
        lines.append(f"- {framework}: {text}")
    return "\n".join(lines)


def ratios(row: dict) -> dict:
    """tinyattn / torch in separate processes and in the same process; after / fresh."""
    out = {}
    for key, num, den in (
        ("tinyattn/torch", "tinyattn", "torch"),
        (f"{SAME} tinyattn/torch", f"{SAME} tinyattn", f"{SAME} torch"),
        ("torch same/alone", f"{SAME} torch", "torch"),
        ("after/fresh", "after tinyattn", "fresh"),
        ("tinyattn/jax", "tinyattn", "jax"),
        ("jax/torch", "jax", "torch"),
    ):
        if num in row and den in row:
            out[key] = row[num] / row[den]
    return out


def _cell(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def format_inference(table: dict) -> str:
    """The inference suite: each figure in its unit, "median (min-max)" over rounds, and the
    ratios of the medians (decode: tokens/s, so above 1 is faster than torch)."""
    names = [n for n in ("tinyattn", "torch", "jax") if any(n in row for row in table.values())]
    ratio_keys = [
        k
        for k in ("tinyattn/torch", "jax/torch", "tinyattn/jax")
        if k.split("/")[0] in names and k.split("/")[1] in names
    ]
    head = ["figure", *names, *ratio_keys]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case, row in table.items():
        cells = [
            f"{_cell(row[n])} ({_cell(row[f'{n} min'])}-{_cell(row[f'{n} max'])})"
            if n in row
            else "n/a"
            for n in names
        ]
        found = ratios(row)
        cells += [f"{found[k]:.2f}x" if k in found else "n/a" for k in ratio_keys]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_table(suite: str, table: dict) -> str:
    """A Markdown table of one suite (the README's tables are pasted from these)."""
    if suite == "inference":
        return format_inference(table)
    if suite == "interference":
        head = ["probe", "fresh ms", "after tinyattn ms", "after/fresh"]
        keys = ["fresh", "after tinyattn", "after/fresh"]
    else:
        head = [
            "case",
            "tinyattn ms",
            "torch ms",
            "tinyattn/torch",
            f"{SAME}: tinyattn ms",
            "torch ms",
            "tinyattn/torch",
        ]
        keys = [
            "tinyattn",
            "torch",
            "tinyattn/torch",
            f"{SAME} tinyattn",
            f"{SAME} torch",
            f"{SAME} tinyattn/torch",
        ]
        if any("jax" in row for row in table.values()):
            head += ["jax ms", "tinyattn/jax", "jax/torch"]
            keys += ["jax", "tinyattn/jax", "jax/torch"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case, row in table.items():
        row = dict(row, **ratios(row))
        cells = []
        for key in keys:
            value = row.get(key)
            if value is None:
                cells.append("n/a")
            elif "/" in key:
                cells.append(f"{value:.2f}x")
            else:
                cells.append(f"{value:.2f}" if value < 10 else f"{value:.1f}")
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine_info(threads: int) -> dict:
    import numba
    import numpy as np

    from tinyattn.kernels import blas_backend

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line)
    except (OSError, StopIteration):
        pass
    info = dict(
        date=datetime.date.today().isoformat(),
        cpu=cpu,
        logical_cpus=os.cpu_count(),
        load_average=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        python=platform.python_version(),
        numpy=np.__version__,
        numba=numba.__version__,
        threads=threads,
        tile_blas=blas_backend(),
    )
    if _torch_available():
        import torch

        info["torch"] = torch.__version__
    return info


def _parser():
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tinyattn.bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--suite",
        default=",".join(DEFAULT_SUITES),
        help=f"comma-separated, from {', '.join(SUITES)} (default: all but construction)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per framework")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per case per process")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads")
    parser.add_argument("--quick", action="store_true", help="tiny shapes: checks the harness")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument(
        "--openblas-coretype",
        metavar="NAME",
        help="run the benchmark processes under OPENBLAS_CORETYPE=NAME (e.g. Haswell) instead "
        "of the kernel OpenBLAS detects, to show the difference",
    )
    parser.add_argument(
        "--blas",
        action="store_true",
        help="only print the BLAS each framework's benchmark processes run in",
    )
    parser.add_argument(
        "--legacy",
        action="store_true",
        help="the older in-process report (raw kernels, peak memory, cold start)",
    )
    return parser


def kernel_note(coretype: str | None, parent_env: dict) -> str:
    """How the benchmark processes choose NumPy's OpenBLAS kernels, for the report."""
    inherited = ", ".join(
        f"{k}={parent_env[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in parent_env
    )
    note = (
        f"forced: OPENBLAS_CORETYPE={coretype}"
        if coretype
        else "detected: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset"
    )
    return note + (f" (this shell has {inherited})" if inherited else "")


def main(argv: list[str] | None = None) -> dict:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.legacy:
        from ._legacy import main as legacy_main

        return legacy_main(["--quick"] if args.quick else [])
    suites = [s.strip() for s in args.suite.split(",") if s.strip()]
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        parser.error(f"--suite: unknown {unknown}; expected some of {list(SUITES)}")
    command = "python -m tinyattn.bench " + shlex.join(argv if argv is not None else sys.argv[1:])
    info = machine_info(args.threads)
    info["blas_kernel"] = kernel_note(args.openblas_coretype, dict(os.environ))
    print(f"command: {command.strip()}")
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    blas = blas_in_children(args.threads, args.openblas_coretype)
    print(f"BLAS in the benchmark processes ({info['blas_kernel']}):\n{format_blas(blas)}")
    report = dict(command=command.strip(), machine=info, blas=blas, suites={})
    if args.blas:
        return _write_json(report, args.json)
    print(f"medians over {args.rounds} rounds of fresh processes, {args.repeats} calls each")
    for suite in suites:
        table, used = run_suite(
            suite, args.rounds, args.repeats, args.quick, args.threads, args.openblas_coretype
        )
        report["suites"][suite] = {case: dict(row, **ratios(row)) for case, row in table.items()}
        report.setdefault("suite_blas", {})[suite] = used
        print(f"\n### {suite}\n\n{format_table(suite, table)}", flush=True)
        print(f"\nBLAS of these figures:\n{format_blas(used)}", flush=True)
    return _write_json(report, args.json)


def _write_json(report: dict, path: str | None) -> dict:
    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=2)
    return report


def blas_in_children(threads: int, coretype: str | None) -> dict:
    """{framework: its BLAS} as a fresh benchmark process of each framework reports it."""
    blas: dict = {}
    plan = [["tinyattn"]] + [["torch"]] * _torch_available() + [["jax"]] * _jax_available()
    for frameworks in plan:
        spec = dict(suite="blas", quick=True, repeats=0, threads=threads, frameworks=frameworks)
        blas.update(_child(spec, coretype)["blas"])
    return blas
