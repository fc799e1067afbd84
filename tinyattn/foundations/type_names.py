"""How error messages name a type: with its module, so that two classes called ``Tensor``
cannot be told apart only by the reader's guess.

``type_name(torch.ones(2))`` is ``'torch.Tensor (a tensor of another library: ...)'``:
a tensor of another library gets the ways to turn it into a tinyattn tensor without a
copy. Builtins keep their bare name (``int``, ``list``), as in torch's messages.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["type_name"]


def _public_name(cls: type) -> str:
    """``module.QualName``, with the shortest module that exports the class under its name
    (``tinyattn.tensor_api.tensor.Tensor`` is ``tinyattn.Tensor``, ``numpy`` for ndarray)."""
    module = cls.__module__ or ""
    if module in ("", "builtins"):
        return cls.__qualname__
    parts = module.split(".")
    for end in range(1, len(parts)):
        prefix = ".".join(parts[:end])
        if getattr(sys.modules.get(prefix), cls.__name__, None) is cls:
            return f"{prefix}.{cls.__qualname__}"
    return f"{module}.{cls.__qualname__}"


def _is_own(cls: type) -> bool:
    return (cls.__module__ or "").split(".")[0] in ("tinyattn", "numpy", "builtins")


def _conversion_hint(obj: Any) -> str:
    """For a tensor of another library (it speaks DLPack): how to make it a tinyattn one."""
    if isinstance(obj, type) or _is_own(type(obj)) or not hasattr(obj, "__dlpack__"):
        return ""
    numpy_way = (
        ", or tinyattn.from_numpy(t.numpy())" if callable(getattr(obj, "numpy", None)) else ""
    )
    return (
        " (a tensor of another library: tinyattn.from_dlpack(t) makes a tinyattn tensor "
        f"that shares its memory{numpy_way})"
    )


def type_name(obj: Any) -> str:
    """The type of ``obj`` (or ``obj`` itself, if it is a class) as messages name it:
    ``int``, ``numpy.ndarray``, ``tinyattn.Tensor``, ``torch.Tensor (...)``."""
    cls = obj if isinstance(obj, type) else type(obj)
    return _public_name(cls) + _conversion_hint(obj)
