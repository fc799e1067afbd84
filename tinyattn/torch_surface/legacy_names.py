"""Names from PyTorch's first releases that widely read tutorials still call.

``torch.autograd.Variable`` (merged into ``Tensor`` in PyTorch 0.4) and ``torch.range``
(deprecated for ``arange``) are kept by torch for old code; tinyattn keeps them for
the same programs (e.g. the char-RNN and seq2seq tutorials of spro/practical-pytorch).
The legacy tensor types (``FloatTensor`` ...) are in ``torch_surface/legacy_types.py``.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ..core._dtype import get_default_dtype
from ..core.device import check_device
from ..core.tensor import Tensor
from ..foundations.type_names import type_name
from ..ops.creation.factories import tensor
from .out import with_out


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:  # every tensor is a Variable, as in torch
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: a new leaf tensor sharing ``data``'s values.

    Since PyTorch 0.4 a Variable *is* a Tensor: the call returns ``data.detach()`` with
    ``requires_grad`` set (no graph links it to ``data``), ``Variable()`` an empty tensor,
    and ``isinstance(t, Variable)`` is True for every tensor. ``volatile`` has no effect
    (use ``no_grad``).
    """

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            return tensor([]).requires_grad_(bool(requires_grad))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type_name(data)}")
        return data.detach().requires_grad_(bool(requires_grad))


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Deprecated: ``start, start + step, ...`` up to and *including* ``end``.

    ``floor((end - start) / step) + 1`` values of the default float dtype (or ``dtype``);
    torch warns that it is deprecated in favour of ``arange`` (which excludes ``end``),
    and so does this. ``end`` is required, as in torch.
    """
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    for name, value in (("start", start), ("end", end), ("step", step)):
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TypeError(f"range(): argument '{name}' must be a number, got {type_name(value)}")
    if step == 0:
        raise RuntimeError("range(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"range(): upper bound and lower bound inconsistent with step sign: "
            f"start={start}, end={end}, step={step}"
        )
    check_device(device)
    count = math.floor((end - start) / step) + 1
    values = np.arange(count, dtype=np.float64) * step + start  # in double, then cast
    return tensor(values, dtype=dtype or get_default_dtype(), requires_grad=requires_grad)


range = with_out(range, "range")  # torch.range(0, 2, out=t)
