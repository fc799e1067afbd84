"""``skip_init``: build a module without running its parameter initialisers."""

from __future__ import annotations

import inspect

from .. import init
from ..modules.module import Module


def skip_init(module_cls, *args, **kwargs) -> Module:
    """Instantiate ``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialised.

    As torch's, the class must accept a ``device`` argument. torch builds the module on
    the ``meta`` device and then allocates empty storage; tinyattn has no meta device, so
    it builds the module with every ``nn.init`` initialiser turned into a no-op (no values
    written, no random numbers drawn): the values are whatever ``empty`` gave.
    """
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    with init._skip_init():
        return module_cls(*args, **kwargs)
