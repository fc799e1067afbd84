"""The public module paths of saving and loading survive the move into ``tinyattn/io/``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_tinyattn_serialization_is_the_io_module_loaded_lazily():
    out = _run(
        """
        import sys
        import tinyattn
        print("tinyattn.io.serialization" in sys.modules)
        import tinyattn.serialization
        import tinyattn.io.serialization as real
        from tinyattn.serialization import CheckpointError, add_safe_globals, safe_globals
        print(tinyattn.serialization is real, real.__spec__.name)
        print(safe_globals is real.safe_globals, add_safe_globals is real.add_safe_globals)
        print(tinyattn.save is real.save, tinyattn.load is real.load)
        print(sys.modules["tinyattn.serialization"] is real)
        """
    )
    assert out.splitlines() == [
        "False",
        "True tinyattn.io.serialization",
        "True True",
        "True True",
        "True",
    ], out


def test_attribute_access_without_import_statement():
    out = _run(
        """
        import tinyattn
        print(tinyattn.serialization.safe_globals.__module__)
        print(tinyattn.serialization.__file__)
        """
    )
    module, path = out.splitlines()
    assert module == "tinyattn.io.serialization"
    assert Path(path).resolve() == Path(ROOT, "tinyattn", "io", "serialization.py")


def test_tinyattn_safetensors_is_the_io_module():
    out = _run(
        """
        import tinyattn
        import tinyattn.io.safetensors as real
        print(tinyattn.safetensors is real)
        from tinyattn.safetensors import load_file, safe_open, save_file
        print(load_file is real.load_file, safe_open is real.safe_open)
        """
    )
    assert out.splitlines() == ["True", "True True"]
