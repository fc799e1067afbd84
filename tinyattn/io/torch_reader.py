"""Reading files written by ``torch.save``, without torch: the zip format and the legacy one.

**Zip format** (torch >= 1.6, the default): a zip archive of uncompressed entries under one
folder (``archive/`` or the file's stem)::

    archive/data.pkl        the pickled object; tensors name storages by persistent id
    archive/data/<key>      one storage's raw bytes, in the order of archive/byteorder
    archive/byteorder       "little" or "big" (absent in older files: little)
    archive/version         the format version, a small integer

**Legacy format** (``_use_new_zipfile_serialization=False``): five pickles back to back (a
magic number, protocol 1001, a dict of system facts, the object, the list of storage keys),
then each storage as an int64 element count and its raw bytes.

What is checked before anything is allocated: the zip directory (entries stored, none
larger than the file), then for each storage its declared element count against the
bytes that are really there; each tensor's size, stride and offset against its storage.
Storages are read once and tensors are views of them, so tensors that shared a storage in
torch share memory here. ``mmap=True`` maps a zip file's storages copy-on-write instead
of reading them, as torch's does.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from ..foundations.type_names import type_name
from .errors import CheckpointError, warn_user
from .native_reader import checked_directory
from .safetensors import read_into
from .torch_pickle import TrustedUnpickler, WeightsOnlyUnpickler
from .torch_tensors import (
    TORCH_DTYPES,
    LoadContext,
    Storage,
    StorageType,
    finish,
    torch_globals,
)

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
LEGACY_HEAD = b"\x80\x02\x8a\x0a" + LEGACY_MAGIC.to_bytes(10, "little") + b"."
_MAX_FORMAT_VERSION = 10


class Options:
    """How one ``tinyattn.load`` call reads a torch file."""

    def __init__(
        self,
        weights_only: bool,
        map_location: Any,
        user_globals: dict[str, Any],
        mmap_path: str | None = None,
        mmap_requested: bool = False,
    ) -> None:
        self.weights_only = weights_only
        self.map_location = map_location
        self.user_globals = user_globals  # "module.qualname" -> object (add_safe_globals)
        self.mmap_path = mmap_path  # the file to map (mmap=True and f is a path)
        self.mmap_requested = mmap_requested


def torch_zip_prefix(names: list[str]) -> str | None:
    """The folder holding ``data.pkl`` if these zip entries are a torch.save file, else None."""
    found = [n[: -len("/data.pkl")] for n in names if n.endswith("/data.pkl")]
    found = [p for p in found if p and "/" not in p]
    return found[0] if len(found) == 1 else None


def _place(storage: Storage, options: Options, ctx: LoadContext) -> Storage:
    """Apply ``map_location`` to one storage; tinyattn keeps only CPU storages."""
    where, target = storage.location, options.map_location
    if callable(target) and not isinstance(target, (str, dict)):
        result = target(storage, where)
        if result is not None and not isinstance(result, Storage):
            raise ctx.error(
                f"map_location returned a {type_name(result)} for storage {storage.key!r}; "
                "tinyattn runs on the CPU only (return the storage, or None)"
            )
        return result if result is not None else _place(storage, Options(False, None, {}), ctx)
    if isinstance(target, dict):
        where = str(target.get(where, where))
    elif target is not None:
        where = str(target)
    if not where.startswith("cpu"):
        raise ctx.error(
            f"storage {storage.key!r} was saved on device {where!r}; tinyattn runs on the CPU "
            "only. Please use tinyattn.load with map_location='cpu' to map your storages to the "
            "CPU."
        )
    return storage


def _check_pid(pid: Any, length: int, ctx: LoadContext) -> tuple[str, str, str, int]:
    """``(dtype, key, location, numel)`` of a storage persistent id, or CheckpointError."""
    if type(pid) is not tuple or len(pid) != length:
        raise ctx.error(f"persistent id {pid!r} is not a storage of this format")
    _, kind, key, location, numel = pid[:5]
    if not isinstance(kind, StorageType) or kind.dtype not in TORCH_DTYPES:
        name = getattr(kind, "name", repr(kind))
        raise ctx.error(f"storage {key!r} has type {name}, which tinyattn cannot hold")
    if not isinstance(key, str) or not isinstance(location, str):
        raise ctx.error(f"persistent id {pid!r}: key and location must be strings")
    if type(numel) is not int or numel < 0:
        raise ctx.error(f"storage {key!r}: element count {numel!r} is not an int >= 0")
    return kind.dtype, key, location, numel


def _unpickle(data: Any, start: int, where: str, options: Options, ctx, persistent) -> tuple:
    """Run one pickle; ``(value, end position)``."""
    known = torch_globals(ctx)
    if options.weights_only:
        unpickler = WeightsOnlyUnpickler(data, where, known, options.user_globals, persistent)
        unpickler.pos = start
        return unpickler.load(), unpickler.pos
    trusted = TrustedUnpickler(data, known, persistent, start)
    try:
        return trusted.load(), trusted.stream.tell()
    except CheckpointError:
        raise
    except Exception as e:  # the trusted path runs arbitrary classes; one exception type
        raise CheckpointError(f"{where}: {type(e).__name__}: {e}") from e


def _warn_widened(ctx: LoadContext) -> None:
    if ctx.widened:
        warn_user(
            f"tinyattn.load: {ctx.name!r}: bfloat16 storages {sorted(set(ctx.widened))} were "
            "loaded as float32 (NumPy has no bfloat16; the values are exact)"
        )


# -- the zip format ------------------------------------------------------------------------
def load_torch_zip(zf: zipfile.ZipFile, fh, name: str, size: int, options: Options) -> Any:
    """The object in a torch zip-format file (``zf`` open on ``fh``)."""
    ctx = LoadContext(name)
    infos = checked_directory(zf, size, ctx.error, "torch.save")
    prefix = torch_zip_prefix(list(infos))
    if prefix is None:
        raise ctx.error("no single '<folder>/data.pkl' entry: not a file written by torch.save")
    if f"{prefix}/constants.pkl" in infos or any(n.startswith(f"{prefix}/code/") for n in infos):
        raise ctx.error(
            "a TorchScript archive (torch.jit.save): tinyattn cannot run TorchScript; save "
            "the model's state_dict() with torch.save instead"
        )
    _check_version(zf, infos, prefix, ctx)
    if f"{prefix}/byteorder" in infos:
        order = zf.read(f"{prefix}/byteorder").decode("ascii", "replace")
        if order not in ("little", "big"):
            raise ctx.error(f"entry '{prefix}/byteorder' says {order!r}, not little or big")
        ctx.byteorder = order
    mapped = np.memmap(options.mmap_path, np.uint8, "c") if options.mmap_path else None
    storages: dict[tuple[str, str], Storage] = {}

    def persistent_load(pid: Any) -> Storage:
        dtype, key, location, numel = _check_pid(pid, 5, ctx)
        if (key, dtype) not in storages:
            entry = f"{prefix}/data/{key}"
            if entry not in infos:
                raise ctx.error(f"storage {key!r}: entry {entry!r} is missing from the file")
            nbytes = numel * np.dtype(TORCH_DTYPES[dtype]).itemsize
            if infos[entry].file_size != nbytes:
                raise ctx.error(
                    f"entry {entry!r} holds {infos[entry].file_size} bytes; its {numel} "
                    f"{dtype} elements need {nbytes}"
                )
            raw = _entry_bytes(zf, fh, infos[entry], mapped, size, ctx)
            storage = Storage(raw, dtype, key, location)
            storages[key, dtype] = _place(storage, options, ctx)
        return storages[key, dtype]

    pkl = f"{prefix}/data.pkl"
    where = f"tinyattn.load: {name!r}: entry {pkl!r}"
    value, _ = _unpickle(zf.read(pkl), 0, where, options, ctx, persistent_load)
    value = finish(value, ctx)
    _warn_widened(ctx)
    return value


def _check_version(zf: zipfile.ZipFile, infos: dict, prefix: str, ctx: LoadContext) -> None:
    for entry in (f"{prefix}/.data/version", f"{prefix}/version"):
        if entry in infos:
            text = zf.read(entry).decode("ascii", "replace").strip()
            if not text.isdigit() or not 1 <= int(text) <= _MAX_FORMAT_VERSION:
                raise ctx.error(
                    f"entry {entry!r} holds format version {text!r}; this tinyattn reads "
                    f"torch's versions 1 to {_MAX_FORMAT_VERSION}"
                )
            return


def _entry_bytes(zf, fh, info: zipfile.ZipInfo, mapped, size: int, ctx) -> np.ndarray:
    """An entry's bytes as a writable uint8 array: read (CRC checked) or mapped."""
    if mapped is None:
        raw = bytearray(info.file_size)  # bounded by checked_directory
        with zf.open(info) as src:  # the CRC is checked once the entry is read to its end
            if read_into(src, raw) != info.file_size or src.read(1):
                raise ctx.error(f"entry {info.filename!r} is shorter than its directory says")
        return np.frombuffer(raw, dtype=np.uint8)
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ctx.error(f"entry {info.filename!r}: no local zip header at its offset")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    start = info.header_offset + 30 + name_len + extra_len
    if start + info.file_size > size:
        raise ctx.error(f"entry {info.filename!r} reaches past the end of the file")
    return mapped[start : start + info.file_size]


# -- the legacy format ---------------------------------------------------------------------
def load_torch_legacy(data: bytearray, name: str, options: Options) -> Any:
    """The object in a legacy-format torch file (its whole bytes in ``data``)."""
    ctx = LoadContext(name)
    if options.mmap_path is not None:
        raise RuntimeError(
            "mmap can only be used with files saved with `torch.save(_use_new_zipfile_"
            "serialization=True), please torch.save your checkpoint with this option in order "
            "to use mmap."
        )
    plain = Options(True, None, {})
    head = f"tinyattn.load: {name!r}: legacy header"
    pos = len(LEGACY_HEAD)
    protocol, pos = _unpickle(data, pos, head, plain, ctx, _no_storage(ctx))
    info, pos = _unpickle(data, pos, head, plain, ctx, _no_storage(ctx))
    if protocol != LEGACY_PROTOCOL or not isinstance(info, dict):
        raise ctx.error(f"legacy protocol {protocol!r} (expected {LEGACY_PROTOCOL})")
    ctx.byteorder = "little" if info.get("little_endian", True) else "big"
    storages: dict[str, Storage] = {}
    budget = [len(data)]  # storage bytes may not exceed the file's size in all

    def persistent_load(pid: Any) -> Storage:
        dtype, key, location, numel = _check_pid(pid, 6, ctx)
        if key not in storages:
            nbytes = numel * np.dtype(TORCH_DTYPES[dtype]).itemsize
            budget[0] -= nbytes
            if budget[0] < 0:
                raise ctx.error(f"storage {key!r} declares more bytes than the file holds")
            raw = np.zeros(nbytes, dtype=np.uint8)  # filled from the tail below
            storages[key] = _place(Storage(raw, dtype, key, location), options, ctx)
        return _legacy_view(storages[key], pid[5], dtype, ctx)

    where = f"tinyattn.load: {name!r}: the pickled object"
    value, pos = _unpickle(data, pos, where, options, ctx, persistent_load)
    keys, pos = _unpickle(data, pos, f"{where}'s storage keys", plain, ctx, _no_storage(ctx))
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ctx.error("the list of storage keys is not a list of strings")
    _fill_legacy(data, pos, keys, storages, ctx)
    value = finish(value, ctx)
    _warn_widened(ctx)
    return value


def _no_storage(ctx: LoadContext) -> Callable[[Any], Any]:
    def refuse(pid: Any) -> Any:
        raise ctx.error(f"a storage persistent id {pid!r} where none can be")

    return refuse


def _legacy_view(storage: Storage, view: Any, dtype: str, ctx: LoadContext) -> Storage:
    """Old files name part of a storage as ``(view key, offset, size)``."""
    if view is None:
        return storage
    if type(view) is not tuple or len(view) != 3:
        raise ctx.error(f"storage {storage.key!r}: view {view!r} is not (key, offset, size)")
    _, offset, count = view
    item = np.dtype(TORCH_DTYPES[dtype]).itemsize
    if type(offset) is not int or type(count) is not int or offset < 0 or count < 0:
        raise ctx.error(f"storage {storage.key!r}: view {view!r} is not (key, offset, size)")
    if (offset + count) * item > storage.raw.size:
        raise ctx.error(f"storage {storage.key!r}: view {view!r} reaches past its end")
    part = storage.raw[offset * item : (offset + count) * item]
    return Storage(part, dtype, f"{storage.key}[{offset}:{offset + count}]", storage.location)


def _fill_legacy(data: bytearray, pos: int, keys: list, storages: dict, ctx) -> None:
    order = "<" if ctx.byteorder == "little" else ">"
    for key in keys:
        if key not in storages:
            raise ctx.error(f"storage {key!r} is listed but no tensor uses it")
        storage = storages[key]
        if pos + 8 > len(data):
            raise ctx.error(f"storage {key!r}: the file ends before its element count")
        (numel,) = struct.unpack(order + "q", data[pos : pos + 8])
        nbytes = storage.raw.size
        item = np.dtype(TORCH_DTYPES[storage.dtype]).itemsize
        if numel * item != nbytes:
            raise ctx.error(f"storage {key!r} holds {numel} elements; its tensors declared more")
        if pos + 8 + nbytes > len(data):
            raise ctx.error(f"storage {key!r}: the file ends inside its {nbytes} bytes")
        storage.fill(np.frombuffer(data, np.uint8, nbytes, pos + 8), ctx)
        pos += 8 + nbytes
    missing = sorted(set(storages) - set(keys))
    if missing:
        raise ctx.error(f"storages {missing} are used by tensors but missing from the file")
