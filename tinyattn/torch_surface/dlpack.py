"""DLPack exchange, through NumPy's (NumPy >= 2.1): ``from_dlpack`` / ``to_dlpack`` (torch's
names), and the ``Tensor.__dlpack__`` / ``__dlpack_device__`` protocol is in
``tensor_longtail.py``. Memory is shared both ways: no copy unless ``copy=True``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.device import check_device
from ..foundations.type_names import type_name

if TYPE_CHECKING:
    from ..core.tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]

_CPU = (1, 0)  # (kDLCPU, device id)


class _LegacyCapsule:
    """A bare DLPack capsule (as ``to_dlpack`` returns) dressed in the protocol NumPy reads."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return _CPU


class _WritableAlias:
    """An ``__array_interface__`` over the same memory marked writable, keeping ``owner``
    alive: NumPy imports a legacy (unversioned) capsule read-only, but such a capsule does
    not signal read-only memory (torch's ``from_dlpack`` of one is writable)."""

    def __init__(self, owner: np.ndarray) -> None:
        self.owner = owner
        interface = dict(owner.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface


def from_dlpack(ext_tensor: Any, *, device=None, copy: bool | None = None) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor``: any object with ``__dlpack__`` (a
    NumPy array, a torch CPU tensor, ...) or a DLPack capsule (consumed: usable once).
    ``copy=True`` copies, ``copy=False`` refuses to. CPU memory only."""
    from ..ops.creation.factories import from_numpy

    check_device(device)
    source = ext_tensor
    if type(ext_tensor).__name__ == "PyCapsule":
        source = _LegacyCapsule(ext_tensor)
    elif not hasattr(ext_tensor, "__dlpack__"):
        raise RuntimeError(
            "from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
            "consumed only once, so you might have already constructed a tensor from it once. "
            f"(got {type_name(ext_tensor)}: expected an object with __dlpack__ or a capsule)"
        )
    try:
        array = np.from_dlpack(source, copy=copy)
    except (TypeError, ValueError) as exc:
        raise RuntimeError(f"from_dlpack: {exc}") from None
    if isinstance(source, _LegacyCapsule) and not array.flags.writeable:
        array = np.asarray(_WritableAlias(array))
    return from_numpy(array)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule ("dltensor", the legacy interface) of ``tensor``'s memory, for a
    consumer's ``from_dlpack``; it can be consumed once."""
    from ..core.tensor import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be Tensor, not {type_name(tensor)}")
    return tensor._data.__dlpack__()
