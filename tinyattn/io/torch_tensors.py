"""Tensors and storages of torch's checkpoint files, rebuilt as tinyattn tensors without torch.

A file written by ``torch.save`` pickles each tensor as a call such as
``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
backward_hooks)``, where ``storage`` is a persistent id naming a flat block of bytes
(``archive/data/<key>`` in the zip format). This module holds tinyattn's own versions of
the names torch's ``weights_only`` loader allows by default (:data:`TORCH_GLOBALS`): they
check every argument and build views on the storages, so tensors that shared a storage
in torch share memory here too.

Element types: float16/32/64, int8/16/32/64, uint8 and bool load as they are. bfloat16 has
no NumPy type: its storages are widened to float32 (exactly: a bfloat16 is the top half of
a float32), and the load warns once. Other torch types (complex, uint16+, float8,
quantized, sparse, nested, meta) raise :class:`CheckpointError`.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core._dtype import _dtype_by_name
from ..core.device import device
from ..core.size import Size
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .errors import CheckpointError

# torch dtype name -> NumPy dtype of its storage bytes ("bfloat16" is widened on load)
TORCH_DTYPES = {
    "float64": np.float64,
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": np.uint16,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
}
# torch's legacy typed storage classes (torch.FloatStorage ...) -> dtype name
STORAGE_TYPES = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "UntypedStorage": "uint8",
}
# torch dtypes and storages torch allows by default but tinyattn cannot hold
_OTHER_DTYPES = ("complex32", "complex64", "complex128", "uint16", "uint32", "uint64")
_OTHER_DTYPES += ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
_OTHER_DTYPES += ("qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits8", "bits16")
_OTHER_STORAGES = ("ComplexFloatStorage", "ComplexDoubleStorage", "QInt8Storage")
_OTHER_STORAGES += ("QUInt8Storage", "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage")
_MAX_DIMS = 64


class LoadContext:
    """What one load needs while rebuilding: the file's name and what it warns about."""

    def __init__(self, name: str, byteorder: str = "little") -> None:
        self.name = name
        self.byteorder = byteorder  # of the storages' bytes (the zip's "byteorder" entry)
        self.widened: list[str] = []  # storages read as bfloat16, widened to float32

    def error(self, what: str) -> CheckpointError:
        return CheckpointError(f"tinyattn.load: {self.name!r}: {what}")


class TorchDtype:
    """A torch dtype named in a file (``torch.float16`` as a GLOBAL)."""

    def __init__(self, name: str) -> None:
        self.name = name


class StorageType:
    """A storage class named in a persistent id (``torch.FloatStorage``, ``UntypedStorage``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = STORAGE_TYPES.get(name)


class Storage:
    """One storage of the file: its bytes as a flat NumPy array of its element type.

    Every tensor rebuilt on it is a view of :attr:`array`, so tensors that shared a
    storage in torch share memory here. ``map_location`` callables receive it (and may
    return it, as ``lambda storage, loc: storage`` does).
    """

    def __init__(self, data: np.ndarray, dtype: str, key: str, location: str) -> None:
        self.key = key
        self.location = location
        self.dtype = dtype
        self.raw = data  # uint8 bytes, possibly a memory map
        self._views: dict[str, np.ndarray] = {}

    def nbytes(self) -> int:
        return int(self.raw.size)

    def cpu(self) -> Storage:
        return self

    def elements(self, dtype: str, ctx: LoadContext) -> np.ndarray:
        """The storage as a flat array of ``dtype`` (bfloat16 widened to float32), cached."""
        if dtype not in self._views:
            itemsize = np.dtype(TORCH_DTYPES[dtype]).itemsize
            if self.raw.size % itemsize:
                raise ctx.error(
                    f"storage {self.key!r} holds {self.raw.size} bytes, not a whole number of "
                    f"{dtype} elements"
                )
            self._views[dtype] = self._convert(dtype, ctx)
            if dtype == "bfloat16":
                ctx.widened.append(self.key)
        return self._views[dtype]

    def _convert(self, dtype: str, ctx: LoadContext) -> np.ndarray:
        order = "<" if ctx.byteorder == "little" else ">"
        np_dtype = np.dtype(TORCH_DTYPES[dtype]).newbyteorder(order)
        flat = self.raw.view(np_dtype)
        if not np_dtype.isnative:
            flat = flat.astype(np_dtype.newbyteorder("="))
        if dtype == "bool" and flat.view(np.uint8).max(initial=0) > 1:
            raise ctx.error(f"storage {self.key!r}: a bool storage holds bytes other than 0 and 1")
        if dtype == "bfloat16":
            flat = (flat.astype(np.uint32) << 16).view(np.float32)
        return flat

    def fill(self, data: np.ndarray, ctx: LoadContext) -> None:
        """Copy the bytes in (the legacy format stores them after the tensors that use them)."""
        self.raw[...] = data
        for dtype, view in self._views.items():
            if not np.may_share_memory(view, self.raw):
                view[...] = self._convert(dtype, ctx)
            elif dtype == "bool":
                self._convert(dtype, ctx)  # the 0/1 check


def _ints(value: Any, what: str, ctx: LoadContext) -> tuple[int, ...]:
    if (
        not isinstance(value, (tuple, list))
        or len(value) > _MAX_DIMS
        or not all(type(v) is int and v >= 0 for v in value)
    ):
        raise ctx.error(f"a tensor's {what} {value!r} is not a tuple of at most 64 ints >= 0")
    return tuple(value)


def view_tensor(
    storage: Any, offset: Any, size: Any, stride: Any, dtype: str | None, ctx: LoadContext
) -> np.ndarray:
    """The strided view ``size``/``stride`` at ``offset`` of ``storage``, bounds checked."""
    if not isinstance(storage, Storage):
        raise ctx.error(f"a tensor is rebuilt from a {type_name(storage)}, not a storage")
    dtype = dtype or storage.dtype
    if dtype not in TORCH_DTYPES:
        raise ctx.error(f"storage {storage.key!r}: dtype {dtype} is not supported by tinyattn")
    flat = storage.elements(dtype, ctx)
    size, stride = _ints(size, "size", ctx), _ints(stride, "stride", ctx)
    if type(offset) is not int or offset < 0 or len(size) != len(stride):
        raise ctx.error(
            f"storage {storage.key!r}: offset {offset!r}, size {size} and stride {stride} "
            "do not describe a tensor"
        )
    if math.prod(size) and offset + sum((n - 1) * s for n, s in zip(size, stride)) >= flat.size:
        raise ctx.error(
            f"storage {storage.key!r} holds {flat.size} elements; a tensor of size "
            f"{list(size)}, stride {list(stride)} at offset {offset} reaches past its end"
        )
    if not math.prod(size):
        return np.empty(size, dtype=flat.dtype)
    if _row_major(size, stride):  # the usual case: a plain slice keeps the base chain
        array = flat[offset : offset + math.prod(size)].reshape(size)
    else:
        item = flat.itemsize
        strides = [s * item for s in stride]
        array = np.lib.stride_tricks.as_strided(
            flat[offset:], shape=size, strides=strides, writeable=flat.flags.writeable
        )
    return array.view(np.ndarray) if isinstance(array, np.memmap) else array


def _row_major(size: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expected = 1
    for n, s in zip(reversed(size), reversed(stride)):
        if n > 1 and s != expected:
            return False
        expected *= n
    return True


def _leaf(array: np.ndarray, requires_grad: Any, ctx: LoadContext) -> Tensor:
    t = Tensor._make(array)
    if requires_grad:
        if array.dtype.kind != "f":
            raise ctx.error(f"requires_grad is set on a tensor of dtype {array.dtype}")
        t.requires_grad_(True)
    return t


def rebuild_functions(ctx: LoadContext) -> dict[str, Callable]:
    """tinyattn's versions of ``torch._utils._rebuild_*`` (and siblings), bound to a load."""

    def rebuild_tensor(storage, offset, size, stride):
        return _leaf(view_tensor(storage, offset, size, stride, None, ctx), False, ctx)

    def rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False, hooks=None, *_):
        array = view_tensor(storage, offset, size, stride, None, ctx)
        return _leaf(array, requires_grad, ctx)

    def rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype, *_):
        if not isinstance(dtype, TorchDtype):
            raise ctx.error(f"_rebuild_tensor_v3 got dtype {dtype!r}")
        array = view_tensor(storage, offset, size, stride, dtype.name, ctx)
        return _leaf(array, requires_grad, ctx)

    def rebuild_parameter(data, requires_grad, hooks=None, state=None):
        from ..nn.parameter import Parameter  # nn imports the package: import late

        if not isinstance(data, Tensor):
            raise ctx.error(f"a Parameter is rebuilt from a {type_name(data)}")
        param = Parameter(data, requires_grad=bool(requires_grad))
        for k, v in (state or {}).items() if isinstance(state, dict) else ():
            setattr(param, k, v)
        return param

    def from_cpu_tensor(data, dtype, device_, requires_grad):
        if not isinstance(data, Tensor):
            raise ctx.error(f"a device tensor is rebuilt from a {type_name(data)}")
        return data.requires_grad_(True) if requires_grad else data

    def from_numpy(data, dtype, device_, requires_grad):
        if not isinstance(data, np.ndarray):
            raise ctx.error(f"a device tensor is rebuilt from a {type_name(data)}")
        return _leaf(np.array(data), requires_grad, ctx)

    def from_type_v2(func, new_type, args, state):
        from ..nn.parameter import Parameter

        if not callable(func) or not isinstance(args, tuple):
            raise ctx.error("_rebuild_from_type_v2 got a function and arguments it cannot call")
        result = func(*args)
        if new_type is Parameter and not isinstance(result, Parameter):
            result = Parameter(result, requires_grad=result.requires_grad)
        elif new_type not in (Tensor, Parameter):
            raise ctx.error(f"tensor subclass {new_type!r} is not supported by tinyattn")
        for k, v in (state or {}).items() if isinstance(state, dict) else ():
            setattr(result, k, v)
        return result

    def unsupported(kind: str) -> Callable:
        def refuse(*args):
            raise ctx.error(f"{kind} tensors are not supported by tinyattn")

        return refuse

    prefix = "torch._utils."
    table: dict[str, Callable] = {
        prefix + "_rebuild_tensor": rebuild_tensor,
        prefix + "_rebuild_tensor_v2": rebuild_tensor_v2,
        prefix + "_rebuild_tensor_v3": rebuild_tensor_v3,
        prefix + "_rebuild_parameter": rebuild_parameter,
        prefix + "_rebuild_parameter_with_state": rebuild_parameter,
        prefix + "_rebuild_device_tensor_from_cpu_tensor": from_cpu_tensor,
        prefix + "_rebuild_device_tensor_from_numpy": from_numpy,
        "torch._tensor._rebuild_from_type_v2": from_type_v2,
    }
    for name, kind in (("qtensor", "quantized"), ("sparse_tensor", "sparse")):
        table[f"{prefix}_rebuild_{name}"] = unsupported(kind)
    for name, kind in (("meta_tensor_no_storage", "meta"), ("nested_tensor", "nested")):
        table[f"{prefix}_rebuild_{name}"] = unsupported(kind)
    table[prefix + "_rebuild_wrapper_subclass"] = unsupported("wrapper-subclass")
    return table


def torch_globals(ctx: LoadContext) -> dict[str, Any]:
    """Every name torch's ``weights_only=True`` loader allows by default, as tinyattn's."""
    from ..nn.parameter import Parameter

    def torch_device(kind, index=None):
        where = f"{kind}:{index}" if index is not None else str(kind)
        if not isinstance(kind, str) or not where.startswith("cpu"):
            raise ctx.error(
                f"the file holds torch.device({where!r}); tinyattn runs on the CPU only"
            )
        return device("cpu")

    def encode(text, encoding="utf-8"):  # _codecs.encode: how protocol 2 pickles bytes
        if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8"):
            raise ctx.error(f"_codecs.encode({type_name(text)}, {encoding!r}) is not bytes")
        return text.encode(encoding)

    def byte_array(*args):  # bytearray(n) would allocate n bytes the file never held
        if any(isinstance(a, int) for a in args):
            raise ctx.error("bytearray(<size>) in a file is refused (it allocates the size)")
        return bytearray(*args)

    def get_layout(name):
        if name != "torch.strided":
            raise ctx.error(f"layout {name!r} is not supported by tinyattn (strided only)")
        return name

    table: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": torch_device,
        "_codecs.encode": encode,
        "builtins.bytearray": byte_array,
        "builtins.set": set,
        "builtins.complex": complex,
    }
    for name in TORCH_DTYPES:
        table[f"torch.{name}"] = TorchDtype(name)
    for name in _OTHER_DTYPES:
        table[f"torch.{name}"] = TorchDtype(name)
    for name in (*STORAGE_TYPES, *_OTHER_STORAGES):
        module = "torch.storage" if name == "UntypedStorage" else "torch"
        table[f"{module}.{name}"] = StorageType(name)
    table["torch.storage.TypedStorage"] = StorageType("TypedStorage")
    table.update(rebuild_functions(ctx))
    return table


def finish(value: Any, ctx: LoadContext) -> Any:
    """Replace torch dtype markers left as values (``{"dtype": torch.float16}``) by tinyattn's."""
    stack, seen = [value], set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen or not isinstance(obj, (dict, list)):
            continue
        seen.add(id(obj))
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for k, v in list(items):
            if isinstance(v, TorchDtype):
                obj[k] = _tinyattn_dtype(v, ctx)
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return _tinyattn_dtype(value, ctx) if isinstance(value, TorchDtype) else value


def _tinyattn_dtype(d: TorchDtype, ctx: LoadContext) -> Any:
    if d.name not in TORCH_DTYPES:
        raise ctx.error(f"the file holds torch.{d.name}, a dtype tinyattn does not have")
    return _dtype_by_name(d.name)
