"""Public module paths whose code lives in this folder.

``import tinyattn.serialization`` (and ``from tinyattn.serialization import safe_globals``)
gives the module ``tinyattn.io.serialization`` itself: one module object under both names,
loaded only when first imported, so ``import tinyattn`` stays light.
"""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

MOVED_MODULES = {
    "tinyattn.serialization": "tinyattn.io.serialization",
    "tinyattn.safetensors": "tinyattn.io.safetensors",
}


class MovedModuleFinder:
    """Import-system finder and loader answering only for the names in ``MOVED_MODULES``."""

    @staticmethod
    def find_spec(name: str, path=None, target=None) -> ModuleSpec | None:
        if name not in MOVED_MODULES:
            return None
        return ModuleSpec(name, MovedModuleFinder)

    @staticmethod
    def create_module(spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED_MODULES[spec.name])
        spec.loader_state = module.__spec__  # the import system overwrites __spec__: restore
        return module

    @staticmethod
    def exec_module(module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (before an editable install's finder)."""
    if MovedModuleFinder not in sys.meta_path:
        sys.meta_path.insert(0, MovedModuleFinder)


install()
