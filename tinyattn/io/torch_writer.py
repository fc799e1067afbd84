"""Writing torch's zip format, so that ``torch.load(f)`` (``weights_only=True``) reads it.

``tinyattn.save(obj, f, format="torch")`` writes what ``torch.save`` would for a state dict
or a checkpoint dict: a zip of uncompressed entries ``archive/data.pkl`` (a protocol-2
pickle), ``archive/data/<key>`` (each storage's bytes, little-endian, aligned to 64 bytes as
torch aligns them), ``archive/byteorder`` and ``archive/version``.

The pickle is written opcode by opcode and names only globals torch's weights-only loader
allows by default: ``torch._utils._rebuild_tensor_v2`` and ``_rebuild_parameter``, the
storage classes (``torch.FloatStorage`` ...), ``collections.OrderedDict``, ``builtins.set``,
``_codecs.encode`` (bytes), ``torch.Size``, ``torch.device`` and the dtypes. What can be
written: Tensors and Parameters, dicts, OrderedDicts, lists, tuples, sets, str, bytes,
int, float, bool, None, tinyattn dtypes, devices and Sizes, NumPy scalars (as Python
numbers). Anything else (a NumPy array, a module, an optimizer object) raises TypeError
naming where it was met: save ``model.state_dict()`` and ``optimizer.state_dict()``.

Tensors that share memory (views of one NumPy array) are written as views of one storage,
so torch loads them sharing a storage too; the same tensor met twice is one object.
"""

from __future__ import annotations

import struct
import zipfile
from collections import OrderedDict
from typing import Any, BinaryIO

import numpy as np

from ..core._dtype import dtype as tinyattn_dtype
from ..core.device import device
from ..core.size import Size
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .native_reader import _MAX_DEPTH

_STORAGE_CLASS = {
    np.dtype(np.float64): "DoubleStorage",
    np.dtype(np.float32): "FloatStorage",
    np.dtype(np.float16): "HalfStorage",
    np.dtype(np.int64): "LongStorage",
    np.dtype(np.int32): "IntStorage",
    np.dtype(np.int16): "ShortStorage",
    np.dtype(np.int8): "CharStorage",
    np.dtype(np.uint8): "ByteStorage",
    np.dtype(np.bool_): "BoolStorage",
}
_ALIGN = 64
_PREFIX = "archive"


class PickleWriter:
    """Builds the protocol-2 pickle of ``data.pkl`` and collects the storages."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")
        self.memo: dict[int, int] = {}  # id(object) -> memo index
        self.keep: list = []  # objects in the memo stay alive so their ids stay unique
        self.storages: list[np.ndarray] = []  # key = position; C-contiguous, little-endian
        self.storage_keys: dict[int, int] = {}  # id(root array) -> storage key

    def encode(self, obj: Any) -> Pickled:
        """The pickle of ``obj`` and the storages it names."""
        self.value(obj, "obj", 0)
        self.out += b"."
        return Pickled(bytes(self.out), self.storages)

    # -- primitives ---------------------------------------------------------------------
    def global_(self, module: str, name: str) -> None:
        self.out += b"c" + f"{module}\n{name}\n".encode()

    def string(self, text: str) -> None:
        raw = text.encode("utf-8", "surrogatepass")
        self.out += b"X" + struct.pack("<I", len(raw)) + raw

    def integer(self, v: int, path: str) -> None:
        if 0 <= v < 256:
            self.out += b"K" + bytes([v])
        elif 0 <= v < 65536:
            self.out += b"M" + struct.pack("<H", v)
        elif -(2**31) <= v < 2**31:
            self.out += b"J" + struct.pack("<i", v)
        else:
            raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            if len(raw) > 255:
                raise OverflowError(f"tinyattn.save: cannot save {path}: the int is too large")
            self.out += b"\x8a" + bytes([len(raw)]) + raw

    def put(self, obj: Any) -> None:
        index = len(self.memo)
        self.memo[id(obj)] = index
        self.keep.append(obj)
        self.out += b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index)

    def get(self, obj: Any) -> bool:
        index = self.memo.get(id(obj))
        if index is None:
            return False
        self.out += b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)
        return True

    def call(self, module: str, name: str, args: tuple, path: str, depth: int) -> None:
        """``module.name(*args)`` as GLOBAL, the argument tuple, REDUCE."""
        self.global_(module, name)
        self.sequence(args, path, depth, tuple)
        self.out += b"R"

    def sequence(self, items, path: str, depth: int, kind: type) -> None:
        if kind is tuple and len(items) <= 3:
            for i, item in enumerate(items):
                self.value(item, f"{path}[{i}]", depth + 1)
            self.out += (b")", b"\x85", b"\x86", b"\x87")[len(items)]
            return
        if kind is list:
            self.out += b"]"
            self.put(items)
        self.out += b"("
        for i, item in enumerate(items):
            self.value(item, f"{path}[{i}]", depth + 1)
        self.out += b"t" if kind is tuple else b"e"

    # -- values --------------------------------------------------------------------------
    def value(self, obj: Any, path: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise ValueError(
                f"tinyattn.save: cannot save {path}: nested more than {_MAX_DEPTH} deep"
            )
        if isinstance(obj, np.generic) and not isinstance(obj, np.ndarray):
            obj = obj.item()
        if obj is None or isinstance(obj, bool):
            self.out += {None: b"N", True: b"\x88", False: b"\x89"}[obj]
        elif isinstance(obj, int):
            self.integer(int(obj), path)
        elif isinstance(obj, float):
            self.out += b"G" + struct.pack(">d", obj)
        elif isinstance(obj, str):
            self.string(obj)
        elif isinstance(obj, bytes):
            self.call("_codecs", "encode", (obj.decode("latin1"), "latin1"), path, depth)
        elif isinstance(obj, tinyattn_dtype):
            self.global_("torch", obj.name)
        elif isinstance(obj, device):
            self.call("torch", "device", ("cpu",), path, depth)
        elif isinstance(obj, Size):
            self.call("torch", "Size", (tuple(int(n) for n in obj),), path, depth)
        elif self.get(obj):
            return
        elif isinstance(obj, Tensor):
            self.tensor(obj, path, depth)
        else:
            self.container(obj, path, depth)

    def container(self, obj: Any, path: str, depth: int) -> None:
        if type(obj) is list:
            self.sequence(obj, path, depth, list)
        elif type(obj) is tuple:
            self.sequence(obj, path, depth, tuple)
        elif type(obj) in (dict, OrderedDict):
            if type(obj) is dict:
                self.out += b"}"
            else:
                self.call("collections", "OrderedDict", (), path, depth)
            self.put(obj)
            self.out += b"("
            for k, v in obj.items():
                self.value(k, f"{path}.keys()", depth + 1)
                self.value(v, f"{path}[{k!r}]", depth + 1)
            self.out += b"u"
        elif type(obj) is set:
            items = sorted(obj, key=repr)
            self.global_("builtins", "set")
            self.sequence(items, path, depth, list)
            self.out += b"\x85R"
        else:
            hint = " (convert it with tinyattn.from_numpy)" if isinstance(obj, np.ndarray) else ""
            raise TypeError(
                f"tinyattn.save(format='torch'): cannot save {path}: a {type_name(obj)}"
                f"{hint}; torch's weights_only loader reads tensors, numbers, strings and "
                "containers only (save model.state_dict() / optimizer.state_dict(), not the "
                "objects)"
            )

    def tensor(self, t: Tensor, path: str, depth: int) -> None:
        from ..nn.parameter import Parameter  # nn imports the package: import late

        if isinstance(t, Parameter):
            self.global_("torch._utils", "_rebuild_parameter")
            self.out += b"("
            self.plain_tensor(t, False, path)
            self.value(bool(t.requires_grad), path, depth)
            self.call("collections", "OrderedDict", (), path, depth)
            self.out += b"tR"
        else:
            self.plain_tensor(t, bool(t.requires_grad), path)
        self.put(t)

    def plain_tensor(self, t: Tensor, requires_grad: bool, path: str) -> None:
        array = t._data
        if array.dtype.newbyteorder("=") not in _STORAGE_CLASS:
            raise TypeError(
                f"tinyattn.save(format='torch'): cannot save {path}: dtype {array.dtype}"
            )
        key, offset, strides, numel, cls = self.storage_of(array)
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out += b"((" + b"X\x07\x00\x00\x00storage"
        self.global_("torch", cls)
        self.string(str(key))
        self.string("cpu")
        self.integer(numel, path)
        self.out += b"tQ"
        self.integer(offset, path)
        self.sequence(tuple(int(n) for n in array.shape), path, 0, tuple)
        self.sequence(strides, path, 0, tuple)
        self.out += b"\x88" if requires_grad else b"\x89"
        self.call("collections", "OrderedDict", (), path, 0)
        self.out += b"tR"

    def storage_of(self, array: np.ndarray) -> tuple[int, int, tuple, int, str]:
        """``(key, offset, strides, numel, class)``; views of one array share its storage."""
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        item = array.itemsize
        offset_bytes = array.ctypes.data - root.ctypes.data if array.size else 0
        shares = (
            root is not array
            and root.flags.c_contiguous
            and root.dtype == array.dtype
            and offset_bytes % item == 0
            and all(s >= 0 and s % item == 0 for s in array.strides)
        )
        if not shares:
            root, offset_bytes = array, 0
        if id(root) not in self.storage_keys:
            flat = np.ascontiguousarray(root).reshape(-1).astype(root.dtype.newbyteorder("<"))
            self.storage_keys[id(root)] = len(self.storages)
            self.storages.append(flat)
            self.keep.append(root)
        key = self.storage_keys[id(root)]
        if shares:
            strides = tuple(s // item for s in array.strides)
        else:
            strides = tuple(s // item for s in np.empty(array.shape, array.dtype).strides)
        cls = _STORAGE_CLASS[array.dtype.newbyteorder("=")]
        return key, offset_bytes // item, strides, self.storages[key].size, cls


class Pickled:
    """``data.pkl``'s bytes and the storages (key = position) it refers to."""

    def __init__(self, data: bytes, storages: list[np.ndarray]) -> None:
        self.data = data
        self.storages = storages


def write_torch_zip(pickled: Pickled, fh: BinaryIO) -> None:
    """Write an encoded object to the binary file ``fh`` in torch's zip format."""
    entries: list[tuple[str, bytes | np.ndarray]] = [
        ("data.pkl", pickled.data),
        (".format_version", b"1"),
        (".storage_alignment", b"64"),
        ("byteorder", b"little"),
    ]
    entries += [(f"data/{key}", data) for key, data in enumerate(pickled.storages)]
    entries.append(("version", b"3\n"))
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(f"{_PREFIX}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            header_end = fh.tell() + 30 + len(info.filename) + 4  # data offset in the file
            pad = -header_end % _ALIGN
            info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
            zf.writestr(info, data.tobytes() if isinstance(data, np.ndarray) else data)
