"""safetensors files, both ways, without the safetensors package (``tinyattn.safetensors``).

The functions have the shape of ``safetensors.torch``: :func:`load_file`, :func:`save_file`,
:func:`load` and :func:`save` (bytes), and :func:`safe_open`, which reads one tensor at a
time. ``tinyattn.load`` reads these files too, and ``tinyattn.save(sd, f,
format="safetensors")`` writes them.

The format: an 8-byte little-endian header length ``N``, ``N`` bytes of UTF-8 JSON, then
the tensors' bytes, little-endian and C-ordered::

    {"__metadata__": {"format": "pt"},
     "wte.weight": {"dtype": "F32", "shape": [50, 16], "data_offsets": [0, 3200]}, ...}

Offsets count from the end of the header. Before anything is allocated, the header is
checked whole: its length against the file, JSON without duplicate keys, every entry's
dtype and shape, and the offsets: in bounds, each tensor's byte count equal to its dtype
and shape's, and together covering the data exactly, with no overlap and no gap. Every
failure raises :class:`~tinyattn.serialization.CheckpointError` naming the file and the
tensor. BF16 tensors load as float32 (NumPy has no bfloat16), with a warning.

>>> import tinyattn, tinyattn.safetensors as st
>>> data = st.save({"w": tinyattn.ones(2, 3)}, metadata={"step": "7"})
>>> st.load(data)["w"].shape
tinyattn.Size([2, 3])
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .errors import CheckpointError, warn_user

__all__ = ["load_file", "save_file", "load", "save", "safe_open"]

# safetensors dtype -> NumPy dtype of the stored bytes (little-endian); BF16 is widened
_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_NAMES = {np.dtype(v).newbyteorder("="): k for k, v in _DTYPES.items() if k != "BF16"}
_MAX_HEADER = 100_000_000  # the safetensors package's own limit
_MAX_DIMS = 64


class _Entry:
    """One tensor of the header, checked: dtype, shape, and its byte range in the data."""

    def __init__(self, name: str, dtype: str, shape: tuple[int, ...], begin: int, end: int):
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end


def _no_duplicates(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate keys {sorted({k for k in keys if keys.count(k) > 1})}")
    return dict(pairs)


def _error(name: str, what: str) -> CheckpointError:
    return CheckpointError(f"tinyattn.safetensors: {name!r}: {what}")


def read_header(fh: BinaryIO, name: str, size: int) -> tuple[dict[str, _Entry], dict, int]:
    """``({tensor name: entry}, metadata, offset of the data)``, all checked."""
    start = fh.tell()
    head = fh.read(8)
    if len(head) < 8:
        raise _error(name, f"{size} bytes: too short for a safetensors header length")
    n = int.from_bytes(head, "little")
    if n > min(size - 8, _MAX_HEADER):
        raise _error(name, f"the header claims {n} bytes; the file holds {size - 8} after it")
    raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise _error(name, "the header is nested too deeply") from None
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise _error(name, f"the header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise _error(name, f"the header is a JSON {type_name(header)}, not an object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise _error(name, "__metadata__ must map strings to strings")
    entries = {key: _check_entry(key, value, name) for key, value in header.items()}
    _check_layout(entries, size - 8 - n, name)
    return entries, metadata, start + 8 + n


def _check_entry(key: str, value: Any, name: str) -> _Entry:
    where = f"tensor {key!r}"
    if not isinstance(value, dict) or set(value) != {"dtype", "shape", "data_offsets"}:
        raise _error(name, f"{where}: an entry must have exactly dtype, shape and data_offsets")
    dtype, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
    if dtype not in _DTYPES:
        raise _error(
            name, f"{where}: dtype {dtype!r} is not supported by tinyattn ({sorted(_DTYPES)})"
        )
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_DIMS
        or not all(type(d) is int and d >= 0 for d in shape)
    ):
        raise _error(name, f"{where}: shape {shape!r} is not a list of at most 64 sizes >= 0")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int and o >= 0 for o in offsets)
        or offsets[0] > offsets[1]
    ):
        raise _error(name, f"{where}: data_offsets {offsets!r} is not [begin, end]")
    nbytes = math.prod(shape) * np.dtype(_DTYPES[dtype]).itemsize
    if offsets[1] - offsets[0] != nbytes:
        raise _error(
            name,
            f"{where}: dtype {dtype} and shape {shape} need {nbytes} bytes; data_offsets "
            f"{offsets} hold {offsets[1] - offsets[0]}",
        )
    return _Entry(key, dtype, tuple(shape), offsets[0], offsets[1])


def _check_layout(entries: dict[str, _Entry], data_len: int, name: str) -> None:
    """The tensors tile the data: in bounds, no overlap, no gap, nothing after the last."""
    at, last = 0, None
    for entry in sorted(entries.values(), key=lambda e: (e.begin, e.end)):
        if entry.begin != at:
            what = "overlaps the tensor before it" if entry.begin < at else "leaves a gap"
            raise _error(name, f"tensor {entry.name!r} at bytes {entry.begin}.. {what}")
        if entry.end > data_len:
            raise _error(
                name, f"tensor {entry.name!r} ends at byte {entry.end} of {data_len} data bytes"
            )
        at, last = entry.end, entry.name
    if at != data_len:
        raise _error(
            name,
            f"the tensors cover {at} bytes (the last, tensor {last!r}, ends there); the file holds "
            f"{data_len} after the header",
        )


def _array(raw: bytearray, entry: _Entry, name: str) -> np.ndarray:
    flat = np.frombuffer(raw, dtype=_DTYPES[entry.dtype])
    if entry.dtype == "BOOL" and flat.view(np.uint8).max(initial=0) > 1:
        raise _error(name, f"tensor {entry.name!r}: a BOOL tensor holds bytes other than 0 and 1")
    if entry.dtype == "BF16":
        flat = (flat.astype(np.uint32) << 16).view(np.float32)
    elif not flat.dtype.isnative:
        flat = flat.astype(flat.dtype.newbyteorder("="))
    return flat.reshape(entry.shape)


def _read(fh: BinaryIO, entry: _Entry, data_start: int, name: str) -> np.ndarray:
    fh.seek(data_start + entry.begin)
    raw = bytearray(entry.end - entry.begin)  # in bounds: read_header checked the layout
    if read_into(fh, raw) != len(raw):
        raise _error(name, f"tensor {entry.name!r}: the file ends inside its bytes")
    return _array(raw, entry, name)


def read_into(fh: BinaryIO, buffer: bytearray) -> int:
    """Fill ``buffer`` from ``fh`` (one copy, no intermediate bytes); the count read."""
    view, done = memoryview(buffer), 0
    readinto = getattr(fh, "readinto", None)
    while done < len(buffer):
        if readinto is not None:
            n = readinto(view[done:])
        else:  # a file object with read() only
            chunk = fh.read(len(buffer) - done)
            n = len(chunk)
            view[done : done + n] = chunk
        if not n:
            break
        done += n
    return done


def _warn_bf16(entries: list[_Entry], name: str) -> None:
    widened = sorted(e.name for e in entries if e.dtype == "BF16")
    if widened:
        warn_user(
            f"tinyattn.safetensors: {name!r}: BF16 tensors {widened} were loaded as float32 "
            "(NumPy has no bfloat16; the values are exact)"
        )


def read_file(fh: BinaryIO, name: str, size: int) -> dict[str, Tensor]:
    """Every tensor of an open safetensors file, in the header's order."""
    entries, _, data_start = read_header(fh, name, size)
    out = {key: Tensor._make(_read(fh, e, data_start, name)) for key, e in entries.items()}
    _warn_bf16(list(entries.values()), name)
    return out


class safe_open:
    """``with safe_open(path, framework="pt") as f:`` reads tensors one at a time.

    The header is read and checked when the file opens; :meth:`get_tensor` then reads
    only that tensor's bytes. ``framework`` is ``"pt"`` (tinyattn Tensors; also
    ``"torch"``, ``"tinyattn"``) or ``"np"`` (NumPy arrays; also ``"numpy"``); ``device``
    must be ``"cpu"``.
    """

    def __init__(self, filename: str | os.PathLike, framework: str = "pt", device: str = "cpu"):
        if framework not in ("pt", "torch", "tinyattn", "np", "numpy"):
            raise ValueError(f"safe_open(): framework must be 'pt' or 'np', got {framework!r}")
        if str(device) != "cpu":
            raise ValueError(f"safe_open(): device must be 'cpu' (tinyattn), got {device!r}")
        self.name = os.fsdecode(os.fspath(filename))
        self.numpy = framework in ("np", "numpy")
        self._fh = open(self.name, "rb")
        try:
            size = os.fstat(self._fh.fileno()).st_size
            self._entries, self._metadata, self._data = read_header(self._fh, self.name, size)
        except BaseException:
            self._fh.close()
            raise

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc) -> None:
        self._fh.close()

    def keys(self) -> list[str]:
        """The tensors' names, sorted (as the safetensors package lists them)."""
        return sorted(self._entries)

    def metadata(self) -> dict[str, str]:
        """The header's ``__metadata__`` (empty when there is none)."""
        return dict(self._metadata)

    def get_tensor(self, name: str) -> Any:
        """Read one tensor (only its bytes)."""
        if name not in self._entries:
            raise KeyError(f"safe_open: no tensor named {name!r} in {self.name!r}")
        entry = self._entries[name]
        array = _read(self._fh, entry, self._data, self.name)
        _warn_bf16([entry], self.name)
        return array if self.numpy else Tensor._make(array)

    def get_slice(self, name: str) -> _Slice:
        """A handle with ``get_shape()``, ``get_dtype()`` and indexing (reads on index)."""
        if name not in self._entries:
            raise KeyError(f"safe_open: no tensor named {name!r} in {self.name!r}")
        return _Slice(self, name)


class _Slice:
    def __init__(self, owner: safe_open, name: str) -> None:
        self.owner, self.name = owner, name

    def get_shape(self) -> list[int]:
        return list(self.owner._entries[self.name].shape)

    def get_dtype(self) -> str:
        return self.owner._entries[self.name].dtype

    def __getitem__(self, index: Any) -> Any:
        return self.owner.get_tensor(self.name)[index]


def load_file(filename: str | os.PathLike, device: str = "cpu") -> dict[str, Tensor]:
    """Every tensor of a safetensors file, as tinyattn Tensors."""
    with safe_open(filename, "pt", device) as f:
        return {key: f.get_tensor(key) for key in f._entries}


def load(data: bytes) -> dict[str, Tensor]:
    """Every tensor of safetensors bytes (as ``safetensors.torch.load``)."""
    import io

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"load(): data must be bytes, got {type_name(data)}")
    return read_file(io.BytesIO(data), "<bytes>", len(data))


def _tensors(tensors: Any) -> Iterator[tuple[str, np.ndarray]]:
    if not isinstance(tensors, dict):
        raise TypeError(
            f"safetensors: tensors must be a dict of str -> Tensor, got {type_name(tensors)}"
        )
    for key, value in tensors.items():
        if not isinstance(key, str) or key == "__metadata__":
            raise TypeError(
                f"safetensors: tensor names must be strings (not __metadata__), got {key!r}"
            )
        if not isinstance(value, Tensor):
            raise TypeError(
                f"safetensors: tensors[{key!r}] is a {type_name(value)}, not a Tensor "
                "(safetensors files hold tensors only)"
            )
        array = value._data
        if array.dtype.newbyteorder("=") not in _NAMES:
            raise TypeError(f"safetensors: tensors[{key!r}] has unsupported dtype {array.dtype}")
        yield key, array


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (as ``safetensors.torch.save``).

    Tensors are written as C-contiguous little-endian copies; tensors that shared memory
    are written once each.
    """
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise TypeError(f"safetensors: metadata must be a dict of str -> str, got {metadata!r}")
    arrays = sorted(_tensors(tensors), key=lambda kv: (-kv[1].itemsize, kv[0]))
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    at = 0
    for key, array in arrays:
        header[key] = {
            "dtype": _NAMES[array.dtype.newbyteorder("=")],
            "shape": list(array.shape),
            "data_offsets": [at, at + array.nbytes],
        }
        at += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    parts = [len(text).to_bytes(8, "little"), text]
    for _, array in arrays:
        little = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
        parts.append(little.tobytes())
    return b"".join(parts)


def save_file(
    tensors: dict[str, Tensor], filename: str | os.PathLike, metadata: dict[str, str] | None = None
) -> None:
    """Write ``tensors`` to a safetensors file (atomically, as ``tinyattn.save``)."""
    from .serialization import _atomic_write

    data = save(tensors, metadata)
    _atomic_write(os.fspath(filename), lambda fh: fh.write(data))
