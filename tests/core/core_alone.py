"""Run a script in a subprocess where only ``tinyattn.core`` can be imported: the package
``tinyattn`` is registered without running its ``__init__`` (the full API), so ``import
tinyattn.core`` loads the core and nothing else."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LOADER = textwrap.dedent(
    f"""
    import importlib.util, sys, types
    package = types.ModuleType("tinyattn")
    package.__path__ = [{str(ROOT / "tinyattn")!r}]
    sys.modules["tinyattn"] = package  # the package without its __init__ (the full API)
    """
)


def run_core_alone(script: str) -> subprocess.CompletedProcess:
    """Run ``script`` (Python source) after the loader; its output is captured as text."""
    return subprocess.run(
        [sys.executable, "-c", LOADER + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
