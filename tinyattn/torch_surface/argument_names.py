"""torch's argument names and order where one tinyattn function serves two torch names.

``torch.softmax(input, dim, dtype)`` and ``torch.nn.functional.softmax(input, dim,
_stacklevel, dtype)`` put ``dtype`` at different positions; ``torch.norm`` takes ``out``
by position before ``dtype``. The forms here only reorder arguments and call the one
implementation, so ``F.softmax(x, 1, 3, torch.float64)`` means what it means in torch.
"""

from __future__ import annotations

import functools
import inspect

from ..core.tensor import Tensor
from ..ops.reduce import softmax as softmax_ops
from ..ops.reduce.reduction import norm as _norm
from .out import with_out


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """:func:`tinyattn.softmax` in ``torch.nn.functional``'s argument order."""
    return softmax_ops.softmax(input, dim, dtype, _stacklevel=_stacklevel + 1)  # + this frame


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """:func:`tinyattn.log_softmax` in ``torch.nn.functional``'s argument order."""
    return softmax_ops.log_softmax(input, dim, dtype, _stacklevel=_stacklevel + 1)  # + this frame


def norm_with_positional_out(norm_with_out):
    """``torch.norm(input, p, dim, keepdim, out, dtype)`` over tinyattn's ``norm`` (whose
    ``out`` is keyword-only, added by ``_out.with_out``)."""

    def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, out=None, dtype=None):
        return norm_with_out(input, p, dim, keepdim, dtype, out=out)

    signature = inspect.signature(norm)
    norm = functools.wraps(norm_with_out)(norm)  # its name, docstring and out= marks
    norm.__signature__ = signature
    return norm


norm = norm_with_positional_out(with_out(_norm, "norm"))  # torch.norm(x, 2, 0, False, out_t)
