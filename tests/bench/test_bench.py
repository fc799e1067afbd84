"""The benchmark harness runs end to end on tiny shapes and prints its tables (not timed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import tinyattn
from tinyattn.bench import _cases, _harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("suite", ["kernels", "layers", "train", "overhead", "construction"])
def test_every_quick_case_runs_on_each_library(suite):
    libs = [tinyattn]
    try:
        import torch

        libs.append(torch)
    except ImportError:
        pass
    cases = _cases.suites(quick=True)[suite]
    assert cases
    for setup in cases.values():
        for lib in libs:
            run = setup(lib)
            run()
            run()


def test_interference_probes_and_tinyattn_call_run():
    _cases.tinyattn_call(quick=True)(tinyattn)()
    torch = pytest.importorskip("torch")
    for setup in _cases.probes(quick=True).values():
        setup(torch)()


def test_quick_run_end_to_end(tmp_path):
    path = tmp_path / "bench.json"
    args = ["--quick", "--rounds", "1", "--repeats", "1", "--suite", "overhead,interference"]
    result = subprocess.run(
        [sys.executable, "-m", "tinyattn.bench", *args, "--json", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "command: python -m tinyattn.bench " + " ".join(args + ["--json", str(path)])
    assert lines[1].startswith("machine: date=")
    assert "tile_blas=" in lines[1] and "blas_kernel=detected" in lines[1]
    assert lines[2].startswith("BLAS in the benchmark processes (detected:")
    assert lines[3].startswith("- tinyattn: ")
    report = json.loads(path.read_text())
    assert set(report["suite_blas"]) == {"overhead", "interference"}
    assert "tinyattn" in report["blas"] and "BLAS of these figures:" in result.stdout
    assert set(report["suites"]) == {"overhead", "interference"}
    overhead = report["suites"]["overhead"]
    assert set(overhead) == set(_cases.suites(quick=True)["overhead"])
    for case, row in overhead.items():
        assert row["tinyattn"] > 0
        assert f"| {case} |" in result.stdout
        if "torch" in row:
            assert row["tinyattn/torch"] == pytest.approx(row["tinyattn"] / row["torch"])
            assert row["same process tinyattn"] > 0 and row["same process torch"] > 0
    for row in report["suites"]["interference"].values():
        assert row["after/fresh"] == pytest.approx(row["after tinyattn"] / row["fresh"])
    assert "### interference" in result.stdout
    assert "| probe | fresh ms | after tinyattn ms | after/fresh |" in result.stdout


def test_table_format():
    table = {"case a": {"tinyattn": 2.0, "torch": 4.0, "same process tinyattn": 30.0}}
    text = _harness.format_table("layers", table)
    header, rule, row = text.splitlines()
    assert header.startswith("| case | tinyattn ms | torch ms | tinyattn/torch | same process")
    assert rule == "|---|---|---|---|---|---|---|"
    assert row == "| case a | 2.00 | 4.00 | 0.50x | 30.0 | n/a | n/a |"


def test_unknown_suite_is_an_error(capsys):
    with pytest.raises(SystemExit):
        _harness.main(["--suite", "kernels,bogus"])
    assert "bogus" in capsys.readouterr().err
