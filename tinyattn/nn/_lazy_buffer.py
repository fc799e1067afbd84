"""``UninitializedBuffer``: a buffer whose shape is set at a lazy module's first forward.

The buffer twin of ``UninitializedParameter`` (torch's ``nn.UninitializedBuffer``): it holds
no data until ``materialize(shape)``, which turns it, in place, into a plain ``Tensor``
(the lazy batch norms' ``running_mean`` / ``running_var`` start as these).
"""

from __future__ import annotations

import numpy as np

from ..core import _dtype as dt
from ..core.device import check_device
from ..tensor_api.tensor import Tensor

__all__ = ["UninitializedBuffer"]


class UninitializedBuffer(Tensor):
    """A buffer of unknown shape; ``materialize(shape)`` makes it a ``Tensor`` of that shape.

    ``dtype`` (default: the default dtype) is the dtype it materialises in;
    ``persistent`` is read by ``Module.register_buffer``'s callers, as torch's.
    """

    def __init__(
        self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True
    ) -> None:
        check_device(device)
        d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        Tensor._init(self, np.empty((0,), dtype=d.np_dtype), None, False)
        if requires_grad:
            self.requires_grad_(True)
        self.persistent = persistent
        self._is_buffer = True

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the buffer ``shape`` (uninitialised values) and make it a plain ``Tensor``."""
        check_device(device)
        d = dt.to_dtype(dtype).np_dtype if dtype is not None else self._data.dtype
        self._data = np.empty(tuple(shape), dtype=d)
        self.__class__ = Tensor

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"

    __str__ = __repr__
