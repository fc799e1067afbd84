"""CPU stand-ins for torch's GPU-era and deployment modules: ``cuda``, ``backends``, ``amp``,
``distributed``, ``onnx``, ``accelerator``, ``multiprocessing`` and ``compile``.

Each does, on a CPU, what its docstring says (``cuda.is_available()`` is False, ``autocast``
keeps float32, ``compile`` returns the function ...), so GPU-era scripts run unchanged.

They live here, apart from the core, yet scripts import them by torch's paths:
``import tinyattn.cuda.amp``, ``from tinyattn.backends import cudnn``. :func:`install` adds
an import hook that answers ``tinyattn.<shim>[.<submodule>]`` with the module
``tinyattn.shims.<shim>[.<submodule>]`` itself: one module object, whichever path reaches it
(``tinyattn.cuda is tinyattn.shims.cuda``), so a switch set through one path is seen
through the other. The files keep one name each (the one under ``shims``), so their
relative imports read as they resolve. The same hook serves the two public paths whose
code lives in ``tinyattn/io/`` (``tinyattn.serialization``, ``tinyattn.safetensors``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# torch's path below ``tinyattn`` -> the module that answers it (its submodules follow).
PUBLIC_PATHS = {
    "accelerator": "tinyattn.shims.accelerator",
    "amp": "tinyattn.shims.amp",
    "backends": "tinyattn.shims.backends",
    "cuda": "tinyattn.shims.cuda",
    "distributed": "tinyattn.shims.distributed",
    "multiprocessing": "tinyattn.shims.multiprocessing",
    "onnx": "tinyattn.shims.onnx",
    "serialization": "tinyattn.io.serialization",
    "safetensors": "tinyattn.io.safetensors",
    "version": "tinyattn.shims.version",
}


class _Alias(importlib.abc.Loader):
    """Loads a public path as the module it names (already imported under its own name)."""

    def __init__(self, real: str) -> None:
        self.real = real

    def create_module(self, spec):
        module = importlib.import_module(self.real)
        self.spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # The real module ran when it was imported under its own name; importlib has just
        # stamped the alias's spec on it: give it back its own.
        module.__spec__ = self.spec


class _ShimPaths(importlib.abc.MetaPathFinder):
    """Finds ``tinyattn.cuda``, ``tinyattn.cuda.amp`` ... as the modules of ``PUBLIC_PATHS``."""

    def find_spec(self, fullname: str, path=None, target=None):
        parts = fullname.split(".")
        if len(parts) < 2 or parts[0] != "tinyattn" or parts[1] not in PUBLIC_PATHS:
            return None
        real = ".".join([PUBLIC_PATHS[parts[1]], *parts[2:]])
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(real))


def install() -> None:
    """Make the public paths (``tinyattn.cuda``, ``tinyattn.serialization`` ...) import their
    modules (once per process)."""
    if not any(isinstance(finder, _ShimPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, _ShimPaths())
