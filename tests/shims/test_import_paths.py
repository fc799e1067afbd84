"""The CPU shims live in ``tinyattn/shims/`` and are imported by torch's paths.

Every path a torch script uses (``import tinyattn.cuda.amp``, ``from tinyattn.backends
import cudnn``, ``tinyattn.amp.autocast`` ...) must give the module under ``tinyattn.shims``
itself, not a second copy: a switch set through one path is then seen through the other.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import tinyattn

# torch's path -> the module's own name.
PATHS = {
    "tinyattn.accelerator": "tinyattn.shims.accelerator",
    "tinyattn.amp": "tinyattn.shims.amp",
    "tinyattn.amp.autocast_mode": "tinyattn.shims.amp.autocast_mode",
    "tinyattn.amp.grad_scaler": "tinyattn.shims.amp.grad_scaler",
    "tinyattn.backends": "tinyattn.shims.backends",
    "tinyattn.backends.cuda": "tinyattn.shims.backends.cuda",
    "tinyattn.backends.cudnn": "tinyattn.shims.backends.cudnn",
    "tinyattn.backends.mps": "tinyattn.shims.backends.mps",
    "tinyattn.cuda": "tinyattn.shims.cuda",
    "tinyattn.cuda.amp": "tinyattn.shims.cuda.amp",
    "tinyattn.distributed": "tinyattn.shims.distributed",
    "tinyattn.multiprocessing": "tinyattn.shims.multiprocessing",
    "tinyattn.onnx": "tinyattn.shims.onnx",
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_torch_path_is_the_shim_module(path):
    module = importlib.import_module(path)
    real = importlib.import_module(PATHS[path])
    assert module is real
    assert module.__name__ == PATHS[path] and module.__spec__.name == PATHS[path]
    assert sys.modules[path] is real


def test_attribute_access_reaches_the_same_modules():
    assert tinyattn.cuda is tinyattn.shims.cuda
    assert tinyattn.cuda.amp is tinyattn.shims.cuda.amp
    assert tinyattn.backends.cudnn is tinyattn.shims.backends.cudnn
    assert tinyattn.amp.autocast is tinyattn.shims.amp.autocast
    assert tinyattn.autocast is tinyattn.shims.amp.autocast
    assert tinyattn.compile is tinyattn.shims.compile.compile


def test_a_switch_set_through_one_path_is_seen_through_the_other():
    from tinyattn.backends import cudnn
    from tinyattn.shims.backends import cudnn as real

    before = real.deterministic
    try:
        cudnn.deterministic = not before
        assert real.deterministic is (not before)
    finally:
        cudnn.deterministic = before


def test_unknown_names_still_fail():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tinyattn.cuda.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tinyattn.no_such_shim")


def test_a_fresh_process_imports_the_torch_paths_first():
    """``import tinyattn.cuda.amp`` as a script's first line (nothing imported before)."""
    code = (
        "import tinyattn.cuda.amp, tinyattn.backends.cudnn\n"
        "from tinyattn.amp import GradScaler\n"
        "import tinyattn.shims.cuda.amp as a\n"
        "assert tinyattn.cuda.amp is a\n"
        "print(GradScaler.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tinyattn.shims.amp.grad_scaler"
