"""Tensor methods about the tensor itself rather than its values: its memory (``nbytes``,
``itemsize``, ``storage_offset``), dtype predicates and size checks."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tensor import Tensor


class TensorMetaMethods:
    """Mixin of :class:`tinyattn.Tensor`."""

    __slots__ = ()

    def storage_offset(self) -> builtins.int:
        """Elements between the start of the memory this tensor views and its first element."""
        base = self._base
        if base is None or not self._data.size:
            return 0
        start = base._data.__array_interface__["data"][0]
        return (self.data_ptr() - start) // self._data.itemsize

    @property
    def nbytes(self) -> builtins.int:
        """Bytes of its elements: ``numel() * itemsize``."""
        return self._data.size * self._data.itemsize

    @property
    def itemsize(self) -> builtins.int:
        """Bytes per element."""
        return self._data.itemsize

    def is_complex(self) -> builtins.bool:
        """Whether the dtype is complex64 or complex128."""
        return self._data.dtype.kind == "c"

    def is_signed(self) -> builtins.bool:
        """Whether the dtype holds negative numbers (floats and signed ints)."""
        return self._data.dtype.kind in "fi"

    def is_nonzero(self) -> builtins.bool:
        """``bool(self)`` for a one-element tensor; RuntimeError for any other size."""
        n = self._data.size
        if n != 1:
            which = "no values" if n == 0 else "more than one value"
            raise RuntimeError(
                f"Boolean value of Tensor with {which} is ambiguous (shape {list(self.shape)})"
            )
        return builtins.bool(self._data.reshape(()).item())

    def is_same_size(self, other: Tensor) -> builtins.bool:
        """Whether ``other`` has the same shape."""
        return self._data.shape == other._data.shape
