"""``Parameter``: a leaf tensor that a ``Module`` registers as learnable."""

from __future__ import annotations

import numpy as np

from ..tensor_api.tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a Module attribute registers it.

    ``Parameter(data, requires_grad=True)`` shares memory with ``data`` (as torch).
    """

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            array = np.empty((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            array = data._data
        else:
            array = np.asarray(data)
        Tensor._init(self, array, None, False)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__


class UninitializedParameter(Parameter):
    """A parameter whose shape is set at the first forward (``LazyLinear``)."""

    def materialize(self, shape, dtype=None) -> None:
        from ..core import _dtype as dt

        np_dtype = (
            dt.to_dtype(dtype).np_dtype if dtype is not None else dt.get_default_dtype().np_dtype
        )
        self._data = np.empty(tuple(shape), dtype=np_dtype)
        self.__class__ = Parameter

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class Buffer(Tensor):
    """Marker type for ``torch.nn.Buffer``-style registration (``Module.register_buffer`` is the usual way)."""

    def __init__(self, data, persistent: bool = True) -> None:
        Tensor._init(
            self, data._data if isinstance(data, Tensor) else np.asarray(data), None, False
        )
        self.persistent = persistent
