"""torch's legacy tensor types: ``FloatTensor``, ``LongTensor``, ``ByteTensor`` ...

Before dtypes (PyTorch 0.4) a tensor's type named its element type, and old programs and
tutorials still use those names. As in torch, each is a class (of the metaclass
``tensortype``) that no tensor is an instance of by construction, yet:

* ``isinstance(x, LongTensor)`` is true iff ``x`` is a tensor of dtype int64 (tinyattn
  tensors are all on the CPU); ``issubclass(FloatTensor, Tensor)`` is false;
* ``FloatTensor(2, 3)`` / ``FloatTensor(Size([2, 3]))`` is a tensor of that shape (torch
  leaves it uninitialised; tinyattn fills zeros), ``FloatTensor()`` an empty one,
  ``LongTensor([1, 2])`` / ``LongTensor(ndarray)`` converts data (floats truncate),
  ``FloatTensor(t)`` of a float32 tensor shares its memory; a tensor of another dtype,
  a number or a string is a TypeError, a negative size a RuntimeError;
* ``x.type()`` is ``'torch.FloatTensor'`` (torch's string, so programs comparing with it
  work), ``x.type(ByteTensor)`` / ``x.type('torch.ByteTensor')`` convert (``x`` itself when
  the dtype is already right), see :func:`tensor_type`.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..core import _dtype as dt
from ..core.device import check_device
from ..core.size import Size
from ..core.tensor import Tensor
from ..foundations.type_names import type_name as python_type_name
from .layouts import strided

# dtype name -> the legacy type's name without "Tensor" (torch's names)
_PREFIX = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip


class tensortype(type):  # torch's name for this metaclass
    """The metaclass of the legacy types: instance checks and calls go by dtype."""

    dtype: dt.dtype
    is_cuda = False
    is_sparse = False
    layout = strided

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'tinyattn.{cls.__name__}'>"

    def __call__(cls, *args, device=None) -> Tensor:
        check_device(device)
        return _construct(cls.dtype, cls.__name__, args)


def _construct(dtype: dt.dtype, name: str, args: tuple) -> Tensor:
    if not args:
        return Tensor._make(np.zeros((0,), dtype=dtype.np_dtype))
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if all(isinstance(a, (numbers.Integral, np.integer)) for a in args):
        shape = tuple(int(a) for a in args)
        if any(n < 0 for n in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
        return Tensor._make(np.zeros(shape, dtype=dtype.np_dtype))
    if len(args) > 1:
        raise TypeError(
            f"{name}(): expected sizes (ints) or one sequence of data, got "
            f"({', '.join(type(a).__name__ for a in args)})"
        )
    return _from_data(dtype, name, args[0])


def _is_sequence(data) -> bool:
    """Python's sequence protocol (``len`` and indexing), as torch's legacy constructors
    require: lists, tuples, ranges, arrays; not iterators, sets or mappings."""
    if isinstance(data, np.ndarray):
        return True
    kind = type(data)
    return (
        hasattr(kind, "__len__")
        and hasattr(kind, "__getitem__")
        and not isinstance(data, (dict, str, bytes))
        and not hasattr(kind, "keys")
    )


def _from_data(dtype: dt.dtype, name: str, data) -> Tensor:
    if isinstance(data, Tensor):
        if data.dtype != dtype:
            raise TypeError(f"{name}(): expected a tensor of dtype {dtype}, got {data.dtype}")
        return data.detach()  # shares memory, as torch's legacy constructor
    if isinstance(data, str):
        raise TypeError(f"{name}(): invalid data type 'str'")
    if not _is_sequence(data):
        raise TypeError(f"{name}(): data must be a sequence (got {python_type_name(data)})")
    from ..ops.creation.factories import tensor

    if not isinstance(data, (list, tuple, np.ndarray)):
        data = list(data)  # range, array.array, any object with the sequence protocol

    try:
        return tensor(data, dtype=dtype)
    except OverflowError:
        raise RuntimeError(
            f"{name}(): value cannot be converted to type {dtype} without overflow"
        ) from None


def _legacy_type(dtype: dt.dtype) -> tensortype:
    name = f"{_PREFIX[dtype.name]}Tensor"
    doc = f"Legacy tensor type of dtype {dtype}: ``{name}(*sizes)`` or ``{name}(data)``."
    return tensortype(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "tinyattn"})


FloatTensor = _legacy_type(dt.float32)
DoubleTensor = _legacy_type(dt.float64)
HalfTensor = _legacy_type(dt.float16)
BFloat16Tensor = _legacy_type(dt.bfloat16)
LongTensor = _legacy_type(dt.int64)
IntTensor = _legacy_type(dt.int32)
ShortTensor = _legacy_type(dt.int16)
CharTensor = _legacy_type(dt.int8)
ByteTensor = _legacy_type(dt.uint8)
BoolTensor = _legacy_type(dt.bool_)

__all__ = [
    "tensortype", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
    "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
]  # fmt: skip

LEGACY_TYPES = {
    t.__name__: t
    for t in (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor,
              ShortTensor, CharTensor, ByteTensor, BoolTensor)
}  # fmt: skip


def type_name(t: Tensor) -> str:
    """``x.type()``: torch's string for ``x``'s legacy type (``'torch.FloatTensor'``)."""
    return f"torch.{_PREFIX[t.dtype.name]}Tensor"


def _parse_type_string(name: str) -> dt.dtype:
    prefix, _, cls = name.rpartition(".")
    if prefix in ("torch.cuda", "tinyattn.cuda"):
        raise RuntimeError(f"type({name!r}): tinyattn runs on the CPU only (no CUDA tensor types)")
    if prefix not in ("torch", "tinyattn") or cls not in LEGACY_TYPES:
        raise ValueError(f"invalid type: '{name}'")
    return LEGACY_TYPES[cls].dtype


def tensor_type(t: Tensor, dtype=None, non_blocking: bool = False) -> Tensor | str:
    """``x.type(dtype=None, non_blocking=False)``: the type string without ``dtype``; else ``x``
    converted to a legacy type (``ByteTensor``), its name (``'torch.ByteTensor'``), a dtype,
    or ``Tensor`` (the default dtype), as ``x.to`` does (``x`` itself if nothing changes)."""
    if dtype is None:
        return type_name(t)
    if isinstance(dtype, str):
        target = _parse_type_string(dtype)
    elif isinstance(dtype, tensortype):
        target = dtype.dtype
    elif dtype is Tensor._output_class:  # the Tensor class itself (x.type(torch.Tensor))
        target = dt.get_default_dtype()
    elif isinstance(dtype, dt.dtype):
        target = dtype
    else:
        raise TypeError(
            f"type(): dtype must be a type, str, or dtype object, got {python_type_name(dtype)}"
        )
    return t.to(target)
