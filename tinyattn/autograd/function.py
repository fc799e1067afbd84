"""``tinyattn.autograd.function``: the op base and graph node of the core
(``tinyattn/core/function.py``), and torch's names of this module for custom functions.

``Function`` here is the array-level op base (``forward``/``backward`` on NumPy arrays);
the user-level ``torch.autograd.Function`` is ``tinyattn.autograd.Function``.
"""

from __future__ import annotations

from ..core.function import (
    AccumulateGrad,
    Function,
    Node,
    NoGradContext,
    OpaqueGrad,
    VersionCounter,
    leaf_node,
)
from .custom_function import BackwardCFunction, FunctionCtx, once_differentiable

__all__ = [
    "AccumulateGrad",
    "BackwardCFunction",
    "Function",
    "FunctionCtx",
    "Node",
    "NoGradContext",
    "OpaqueGrad",
    "VersionCounter",
    "leaf_node",
    "once_differentiable",
]
