"""``save`` / ``load`` for state dicts, without pickle.

A checkpoint is an ordinary ``.npz`` archive (``np.savez``, uncompressed) whose
members are:

* ``a0.npy``, ``a1.npy`` ... one per tensor or NumPy array in the object, in the
  order they were met, saved with ``allow_pickle=False``;
* ``__tinyattn_index__.npy``: a uint8 array holding UTF-8 JSON that describes the
  structure and points into the arrays::

      {"format": "tinyattn.save", "version": 1,
       "arrays": {"a0": {"dtype": "float32", "shape": [2, 3]}, ...},
       "root": {"t": "dict", "keys": [{"t": "str", "v": "weight"}],
                "values": [{"t": "tensor", "a": "a0"}]}}

  Node types: ``none``, ``bool``, ``int``, ``float`` (``float.hex``: exact, NaN and
  inf included), ``str``, ``tensor``, ``ndarray``, ``npscalar`` (a NumPy scalar,
  stored as a 0-d array), ``list``, ``tuple``, ``dict`` and ``odict``
  (``OrderedDict``; keys are encoded like values, so int keys stay ints).

What comes back: tinyattn Tensors for tensors (leaves, C-contiguous, bit-identical
data, with the saved ``requires_grad`` and, for ``nn.Parameter``, the Parameter class,
as torch), NumPy arrays for NumPy arrays, NumPy scalars for NumPy
scalars, and the same containers. An object appearing twice in the tree (e.g.
tied weights) is stored once and comes back as one object, but two different
tensors that share memory (views) come back as independent copies.

Safety: nothing is ever unpickled. ``load`` reads every member through
``np.load(..., allow_pickle=False)``, checks each against the index, and refuses
a file containing an object (pickled) array, an unknown member, or a damaged
member (the zip CRC is verified), raising :class:`CheckpointError` naming the
file. ``save`` writes to a temporary file in the target's directory, fsyncs it
and renames it over the target, so an interrupted or failed save never leaves a
half-written checkpoint behind, and an existing file survives a failed save.

>>> import tinyattn as torch
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "model.pt")
>>> torch.save({"w": torch.ones(2), "step": 3}, path)
>>> torch.load(path)
{'w': tensor([1., 1.]), 'step': 3}
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from ._device import check_device, device
from ._tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]

_INDEX = "__tinyattn_index__"
_FORMAT = "tinyattn.save"
_VERSION = 1
_ARRAY_KINDS = "biufcUSmM"  # dtypes np.save writes without pickle (no objects, no void)


class CheckpointError(RuntimeError):
    """A file is not a readable tinyattn checkpoint (corrupted, truncated or unsafe)."""


# -- encoding -----------------------------------------------------------------------------
class _Encoder:
    """Walks the object tree: arrays go to ``self.arrays``, the structure to JSON nodes."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.memo: dict[int, str] = {}  # id(tensor or array) -> array key
        self.keep: list = []  # keep memoised objects alive so ids stay unique
        self.active: set[int] = set()  # containers on the current path (cycle check)

    def _array(self, obj, data: np.ndarray, path: str) -> str:
        if id(obj) in self.memo:
            return self.memo[id(obj)]
        if data.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(
                f"tinyattn.save: cannot save {path}: arrays of dtype {data.dtype} need pickle, "
                "which tinyattn never uses (supported: bool, integer, float, complex, string)"
            )
        key = f"a{len(self.arrays)}"
        self.arrays[key] = data
        self.memo[id(obj)] = key
        self.keep.append(obj)
        return key

    def encode(self, obj: Any, path: str) -> dict:
        if obj is None:
            return {"t": "none"}
        if isinstance(obj, bool):
            return {"t": "bool", "v": obj}
        if isinstance(obj, int):
            return {"t": "int", "v": int(obj)}
        if isinstance(obj, float):
            return {"t": "float", "v": float(obj).hex()}
        if isinstance(obj, str):
            return {"t": "str", "v": obj}
        if isinstance(obj, Tensor):
            node = {"t": "tensor", "a": self._array(obj, obj._data, path)}
            # torch restores requires_grad and the Parameter class: a learner's
            # ``W = randn(..., requires_grad=True)`` must keep training after a reload.
            if obj.requires_grad:
                node["rg"] = True
            from .nn.parameter import Parameter  # nn imports the package: import late

            if isinstance(obj, Parameter):
                node["param"] = True
            return node
        if isinstance(obj, np.ndarray):
            return {"t": "ndarray", "a": self._array(obj, obj, path)}
        if isinstance(obj, np.generic):
            return {"t": "npscalar", "a": self._array(obj, np.asarray(obj), path)}
        if isinstance(obj, (list, tuple, dict)):
            if id(obj) in self.active:
                raise TypeError(f"tinyattn.save: cannot save {path}: it contains itself")
            self.active.add(id(obj))
            try:
                if isinstance(obj, dict):
                    keys, values = [], []
                    for k, v in obj.items():
                        keys.append(self._key(k, path))
                        values.append(self.encode(v, f"{path}[{k!r}]"))
                    kind = "odict" if isinstance(obj, OrderedDict) else "dict"
                    return {"t": kind, "keys": keys, "values": values}
                items = [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
                return {"t": "list" if isinstance(obj, list) else "tuple", "items": items}
            finally:
                self.active.discard(id(obj))
        raise TypeError(
            f"tinyattn.save: cannot save {path}: objects of type {type(obj).__name__} are not "
            "supported (save tensors, NumPy arrays, numbers, strings, None, bools, and "
            "dicts/lists/tuples of them; tinyattn does not pickle)"
        )

    def _key(self, key: Any, path: str) -> dict:
        if key is None or isinstance(key, (bool, int, float, str)):
            return self.encode(key, path)
        if isinstance(key, tuple):
            return {"t": "tuple", "items": [self._key(k, path) for k in key]}
        raise TypeError(
            f"tinyattn.save: cannot save {path}: dict key {key!r} of type "
            f"{type(key).__name__} is not supported (use str, int, float, bool, None or tuples)"
        )


def save(obj: Any, f, pickle_module=None, pickle_protocol=None, **kwargs) -> None:
    """Save ``obj`` (a state dict or any tree of tensors, arrays, numbers, strings) to ``f``.

    Parameters
    ----------
    obj : object
        Nested dicts / lists / tuples of Tensors, NumPy arrays, numbers, strings,
        None and bools.
    f : str, os.PathLike or binary file object
        A path is written atomically (temporary file + fsync + rename); a file
        object is written in place.
    pickle_module, pickle_protocol, **kwargs
        Accepted for torch compatibility and ignored: nothing is pickled.

    Raises
    ------
    TypeError
        An object in the tree cannot be saved; the message names its key path
        (e.g. ``obj['state'][0]['fn']``). Nothing is written.
    """
    if not hasattr(f, "write") and not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"save(): f must be a path (str or os.PathLike) or a binary file object, "
            f"got {type(f).__name__}"
        )
    encoder = _Encoder()
    root = encoder.encode(obj, "obj")
    index = {
        "format": _FORMAT,
        "version": _VERSION,
        "arrays": {
            k: {"dtype": a.dtype.str, "shape": list(a.shape)} for k, a in encoder.arrays.items()
        },
        "root": root,
    }
    index_bytes = np.frombuffer(json.dumps(index).encode("utf-8"), dtype=np.uint8)
    members = dict(encoder.arrays, **{_INDEX: index_bytes})
    if hasattr(f, "write"):
        np.savez(f, allow_pickle=False, **members)
        return
    _atomic_savez(os.fspath(f), members)


def _atomic_savez(path: str, members: dict[str, np.ndarray]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, allow_pickle=False, **members)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def _new_file_mode(path: str) -> int:
    """The mode an ordinary ``open(path, "wb")`` would give (mkstemp's is 0o600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_directory(directory: str) -> None:
    """Make the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- decoding -----------------------------------------------------------------------------
def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **kwargs):
    """Load an object saved by :func:`save`.

    Parameters
    ----------
    f : str, os.PathLike or binary file object
    map_location : None, "cpu", device, dict or callable
        Accepted for torch compatibility; tinyattn is CPU-only, so a device string
        other than cpu is refused and dicts/callables are ignored.
    weights_only : bool, optional
        Accepted and ignored: loading never unpickles, so it is always weights-only.
    pickle_module, mmap, **kwargs
        Accepted for torch compatibility and ignored.

    Returns
    -------
    The saved tree: Tensors for tensors (leaves keeping the saved ``requires_grad``;
    ``nn.Parameter`` stays a Parameter), NumPy arrays for arrays, and the same
    containers and scalars.

    Raises
    ------
    CheckpointError
        The file is truncated, corrupted, not a tinyattn checkpoint, or carries a
        pickled object. Nothing partial is returned.
    FileNotFoundError
        No such file.
    """
    if isinstance(map_location, (str, device)) or type(map_location).__name__ == "device":
        check_device(map_location)  # torch.device("cpu") passes too
    if hasattr(f, "read"):
        name = getattr(f, "name", "<file object>")
        return _load_zip(f, str(name))
    if not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"load(): f must be a path (str or os.PathLike) or a binary file object, "
            f"got {type(f).__name__}"
        )
    path = os.fspath(f)
    with open(path, "rb") as fh:
        return _load_zip(fh, path)


def _load_zip(fh, name: str):
    try:
        with zipfile.ZipFile(fh) as zf:
            return _Decoder(zf, name).run()
    except CheckpointError:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        ValueError,
        KeyError,
        OSError,
        UnicodeDecodeError,
        TypeError,
        IndexError,
    ) as e:
        raise CheckpointError(
            f"tinyattn.load: {name!r} is not a readable tinyattn checkpoint (truncated or "
            f"corrupted?): {type(e).__name__}: {e}"
        ) from e


def _tensor(arr: np.ndarray, requires_grad: bool, parameter: bool) -> Tensor:
    """A loaded tensor: a leaf, with the saved ``requires_grad`` and Parameter class."""
    if parameter:
        from .nn.parameter import Parameter  # nn imports this module's package: import late

        return Parameter(Tensor._make(arr), requires_grad=requires_grad)
    t = Tensor._make(arr)
    return t.requires_grad_(True) if requires_grad else t


class _Decoder:
    def __init__(self, zf: zipfile.ZipFile, name: str) -> None:
        self.zf = zf
        self.name = name
        self.cache: dict[str, Any] = {}

    def error(self, what: str) -> CheckpointError:
        return CheckpointError(f"tinyattn.load: {self.name!r}: {what}")

    def member(self, key: str) -> np.ndarray:
        data = self.zf.read(key + ".npy")  # verifies the member's CRC
        try:
            return np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as e:
            if "allow_pickle" in str(e):
                raise self.error(
                    f"entry {key!r} is a pickled object array; refusing to load it (tinyattn "
                    "checkpoints never contain pickled data, and unpickling can run code)"
                ) from e
            raise

    def run(self):
        names = self.zf.namelist()
        if _INDEX + ".npy" not in names:
            raise self.error(
                "no tinyattn index found: not a file written by tinyattn.save (files written "
                "by torch.save use pickle and cannot be read; convert them with torch, e.g. "
                "to NumPy arrays saved by np.savez, or load their tensors into tinyattn)"
            )
        raw = self.member(_INDEX)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise self.error(f"the index has dtype {raw.dtype} and shape {raw.shape}")
        index = json.loads(raw.tobytes().decode("utf-8"))
        if not isinstance(index, dict) or index.get("format") != _FORMAT:
            raise self.error("the index does not describe a tinyattn checkpoint")
        if index.get("version") != _VERSION:
            raise self.error(
                f"checkpoint format version {index.get('version')!r} is not supported "
                f"(this tinyattn reads version {_VERSION})"
            )
        expected = set(index["arrays"]) | {_INDEX}
        unknown = sorted(n for n in names if n[:-4] not in expected or not n.endswith(".npy"))
        if unknown:
            raise self.error(f"unexpected entries {unknown} (not listed in the index)")
        self.arrays = {}
        for key, meta in index["arrays"].items():
            arr = self.member(key)
            if arr.dtype.str != meta["dtype"] or list(arr.shape) != meta["shape"]:
                raise self.error(
                    f"entry {key!r} has dtype {arr.dtype.str} and shape {list(arr.shape)}; the "
                    f"index says {meta['dtype']} and {meta['shape']}"
                )
            self.arrays[key] = arr if arr.flags.c_contiguous else arr.copy(order="C")
        return self.decode(index["root"])

    def decode(self, node: dict):
        kind = node["t"]
        if kind == "none":
            return None
        if kind in ("bool", "str"):
            return node["v"]
        if kind == "int":
            return int(node["v"])
        if kind == "float":
            return float.fromhex(node["v"])
        if kind in ("tensor", "ndarray", "npscalar"):
            key = node["a"]
            if key not in self.cache:
                arr = self.arrays[key]
                if kind == "tensor":
                    self.cache[key] = _tensor(arr, node.get("rg", False), node.get("param", False))
                elif kind == "ndarray":
                    self.cache[key] = arr
                else:
                    self.cache[key] = arr[()]
            return self.cache[key]
        if kind in ("list", "tuple"):
            items = [self.decode(n) for n in node["items"]]
            return items if kind == "list" else tuple(items)
        if kind in ("dict", "odict"):
            pairs = [(self.decode(k), self.decode(v)) for k, v in zip(node["keys"], node["values"])]
            return OrderedDict(pairs) if kind == "odict" else dict(pairs)
        raise self.error(f"unknown node type {kind!r} in the index")
