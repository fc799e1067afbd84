"""Tensor factories from data, buffers and strides: asarray, frombuffer, scalar_tensor,
empty_strided.

``asarray`` follows torch's: it aliases what it can (a Tensor, a NumPy array, an object
with the buffer protocol) and copies only when ``copy=True`` or a dtype change needs it;
``copy=False`` refuses to copy. Nothing here is differentiable except ``asarray`` of a
tensor, whose dtype change or copy is recorded (``Tensor.to`` / ``clone``).
"""

from __future__ import annotations

import numbers

import numpy as np

from ...core import _dtype as dt
from ...core.device import check_device
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .factories import _finish, _sizes, tensor

__all__ = [
    "asarray",
    "frombuffer",
    "scalar_tensor",
    "empty_strided",
]


def _set_requires_grad(t: Tensor, requires_grad) -> Tensor:
    if requires_grad is not None:
        t.requires_grad_(bool(requires_grad))
    return t


def _buffer(obj) -> memoryview | None:
    """A memoryview of ``obj`` if it has the buffer protocol (bytes, bytearray, array ...)."""
    if isinstance(obj, (np.ndarray, np.generic, str)):
        return None
    try:
        return memoryview(obj)
    except TypeError:
        return None


def asarray(
    obj, *, dtype=None, device=None, copy: bool | None = None, requires_grad=None
) -> Tensor:
    """``obj`` as a tensor, sharing its memory when possible (as ``torch.asarray``).

    Parameters
    ----------
    obj : Tensor, numpy.ndarray, buffer, number or nested sequence
        A Tensor is returned itself (or cast / cloned, recorded in the graph); a NumPy
        array is aliased (any strides) unless the dtype differs; an object with the buffer
        protocol is read as raw bytes of ``dtype`` (default float dtype); sequences and
        numbers are copied with ``tensor``'s dtype inference.
    dtype : dtype, optional
    copy : bool, optional
        True: always copy. False: never copy (ValueError when a copy is needed). None:
        copy only when needed.
    requires_grad : bool, optional
        Set on the result (on ``obj`` itself when it is returned aliased, as torch).

    Returns
    -------
    Tensor
        ``obj``'s shape.
    """
    check_device(device)
    target = dt.to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Tensor):
        out = obj
        if target is not None and target.np_dtype != obj._data.dtype:
            if copy is False:
                raise ValueError(
                    f"asarray(): can't alias tensor with dtype {obj.dtype} into dtype {target} "
                    "(copy=False)"
                )
            out = obj.to(target)
        elif copy:
            out = obj.clone()
        return _set_requires_grad(out, requires_grad)
    if isinstance(obj, (np.ndarray, np.generic)):
        array = np.asarray(obj)
        dt.from_numpy_dtype(array.dtype)  # a clear TypeError for dtypes tinyattn lacks
        if target is not None and target.np_dtype != array.dtype:
            if copy is False:
                raise ValueError(
                    f"asarray(): can't alias a NumPy array of dtype {array.dtype} into dtype "
                    f"{target} (copy=False)"
                )
            array = array.astype(target.np_dtype)
        elif copy or isinstance(obj, np.generic):
            array = array.copy()
        return _set_requires_grad(Tensor._make(array), requires_grad)
    view = _buffer(obj)
    if view is not None:
        out = frombuffer(obj, dtype=target or dt.get_default_dtype())
        if copy:
            out = Tensor._make(out._data.copy())
        return _set_requires_grad(out, requires_grad)
    if copy is False:
        raise ValueError(
            f"asarray(): can't alias arbitrary sequence into a tensor (got "
            f"{type_name(obj)} with copy=False)"
        )
    return _set_requires_grad(tensor(obj, dtype=target), requires_grad)


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad=False) -> Tensor:
    """A 1-D tensor over the bytes of ``buffer`` (shared memory, no copy).

    Parameters
    ----------
    buffer : object with the buffer protocol (bytes, bytearray, memoryview, array ...)
    dtype : dtype
        How the bytes are read.
    count : int
        Elements to read; -1: everything after ``offset``.
    offset : int
        Bytes to skip first.

    Returns
    -------
    Tensor
        (count,). A read-only buffer (``bytes``) gives a tensor that refuses in-place writes.
    """
    target = dt.to_dtype(dtype)
    view = _buffer(buffer)
    if view is None:
        raise TypeError(
            f"frombuffer(): argument 'buffer' must implement the Python buffer protocol, got "
            f"{type_name(buffer)}"
        )
    size, item = view.nbytes, target.np_dtype.itemsize
    if size == 0 and count <= 0:
        raise ValueError(f"frombuffer(): both buffer length (0) and count ({count}) must not be 0")
    if not 0 <= offset < max(size, 1):
        raise ValueError(
            f"frombuffer(): offset ({offset} bytes) must be non-negative and no greater than "
            f"buffer length ({size} bytes) minus 1"
        )
    if count < 0:
        if (size - offset) % item:
            raise ValueError(
                f"frombuffer(): buffer length ({size - offset} bytes) after offset ({offset} "
                f"bytes) must be a multiple of element size ({item})"
            )
        count = (size - offset) // item
    elif count == 0 or offset + count * item > size:
        raise ValueError(
            f"frombuffer(): requested buffer length ({count} * {item} bytes) after offset "
            f"({offset} bytes) must not be greater than actual buffer length ({size} bytes)"
        )
    data = np.frombuffer(view.cast("B"), dtype=target.np_dtype, count=count, offset=offset)
    return _finish(data, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number ``s``, in the default float dtype unless ``dtype``."""
    check_device(device)
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, (numbers.Number, np.generic)):
        raise TypeError(f"scalar_tensor(): argument 's' must be a number, not {type_name(s)}")
    target = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    return _finish(np.array(s, dtype=target.np_dtype), requires_grad)


def empty_strided(
    size, stride, *, dtype=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """An uninitialised tensor of shape ``size`` with the element strides ``stride``.

    The storage holds ``1 + sum((size[i] - 1) * stride[i])`` elements (none when a size is 0);
    strides may overlap (several indices then share one element, as in torch).
    """
    check_device(device)
    shape = _sizes((size,), "empty_strided")
    strides = tuple(int(s) for s in (stride if isinstance(stride, (tuple, list)) else (stride,)))
    if len(strides) != len(shape):
        raise RuntimeError(
            f"empty_strided(): dimensionality of sizes ({len(shape)}) must match dimensionality "
            f"of strides ({len(strides)})"
        )
    if any(s < 0 for s in strides):
        raise RuntimeError(f"empty_strided(): strides must be non-negative, got {list(strides)}")
    np_dtype = (dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()).np_dtype
    storage = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    flat = np.empty(max(storage, 1), dtype=np_dtype)
    item = np_dtype.itemsize
    data = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * item for s in strides))
    return _finish(data, requires_grad)
