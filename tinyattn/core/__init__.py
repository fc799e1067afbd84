"""The core of tinyattn: a tensor that records, the graph it records, and the engine that
runs it backward. It imports nothing from the rest of the package.

Reading order: ``tensor_base.py`` (a tensor's autograd fields), ``function.py`` (the op
base ``Function`` and the graph ``Node``), ``engine.py`` (the backward loop) and its seam
``extensions.py``; ``grad_mode.py``, ``quiet.py``, ``padded.py``, ``xp.py`` and
``_dtype.py`` are the small pieces they use; ``device.py`` and ``size.py`` hold the
``device`` and ``Size`` types a tensor reports.
"""

from __future__ import annotations

from . import _dtype, engine, extensions, function, grad_mode, primitives, tensor, tensor_base
from .engine import run_backward, unbroadcast
from .extensions import Extensions
from .function import AccumulateGrad, Function, Node
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .tensor import Tensor
from .tensor_base import TensorBase

__all__ = [
    "AccumulateGrad",
    "Extensions",
    "Function",
    "Node",
    "Tensor",
    "TensorBase",
    "enable_grad",
    "is_grad_enabled",
    "no_grad",
    "run_backward",
    "unbroadcast",
    "engine",
    "extensions",
    "function",
    "grad_mode",
    "primitives",
    "tensor",
    "tensor_base",
]
