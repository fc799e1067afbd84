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

Safety: nothing is ever unpickled, and nothing in the file is trusted before it is
checked. ``load`` first checks the zip directory (every member stored uncompressed, as
``save`` writes it, so no zip bomb can inflate; member sizes bounded by the file's
size), then validates the whole JSON index against the schema above (iteratively,
containers nested at most ``_MAX_DEPTH`` deep; supported dtypes only; every declared
shape checked against the member's real size before anything is allocated), then reads
each member (the zip CRC is verified) and checks its ``.npy`` header against the index.
Every failure raises :class:`CheckpointError` (a ``RuntimeError``, as torch's load
errors are) naming the file and the entry or index node at fault; no other exception
type escapes for a bad file, and nothing partial is returned.

``save`` writes to a temporary file beside the target (beside the link's target when
the path is a symlink: the link is written through, as ``open(path, "wb")`` would),
fsyncs it and renames it over the target, so an interrupted or failed save never
leaves a half-written checkpoint behind, and an existing file survives a failed save.

>>> import tinyattn as torch
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "model.pt")
>>> torch.save({"w": torch.ones(2), "step": 3}, path)
>>> torch.load(path)
{'w': tensor([1., 1.]), 'step': 3}
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from ._checkpoint_reader import (
    _ARRAY_DTYPES,
    _FORMAT,
    _INDEX,
    _MAX_DEPTH,
    _VERSION,
    CheckpointError,
    _Decoder,
)
from ._device import check_device, device
from ._tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]
__all__ += ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]


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
        if data.dtype.str not in _ARRAY_DTYPES:
            raise TypeError(
                f"tinyattn.save: cannot save {path}: arrays of dtype {data.dtype} "
                f"({data.dtype.str}) are not supported (supported: bool, integer, float and "
                "complex in the machine's byte order; objects would need pickle, which "
                "tinyattn never uses)"
            )
        key = f"a{len(self.arrays)}"
        self.arrays[key] = data
        self.memo[id(obj)] = key
        self.keep.append(obj)
        return key

    def encode(self, obj: Any, path: str, depth: int = 0) -> dict:
        if depth > _MAX_DEPTH:
            raise ValueError(
                f"tinyattn.save: cannot save {path}: containers are nested more than "
                f"{_MAX_DEPTH} deep (tinyattn.load refuses deeper files)"
            )
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
                        keys.append(self._key(k, path, depth + 1))
                        values.append(self.encode(v, f"{path}[{k!r}]", depth + 1))
                    kind = "odict" if isinstance(obj, OrderedDict) else "dict"
                    return {"t": kind, "keys": keys, "values": values}
                items = [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj)]
                return {"t": "list" if isinstance(obj, list) else "tuple", "items": items}
            finally:
                self.active.discard(id(obj))
        raise TypeError(
            f"tinyattn.save: cannot save {path}: objects of type {type(obj).__name__} are not "
            "supported (save tensors, NumPy arrays, numbers, strings, None, bools, and "
            "dicts/lists/tuples of them; tinyattn does not pickle)"
        )

    def _key(self, key: Any, path: str, depth: int) -> dict:
        if key is None or isinstance(key, (bool, int, float, str)):
            return self.encode(key, path, depth)
        if isinstance(key, tuple):
            if depth > _MAX_DEPTH:
                raise ValueError(
                    f"tinyattn.save: cannot save {path}: a dict key is nested more than "
                    f"{_MAX_DEPTH} deep"
                )
            return {"t": "tuple", "items": [self._key(k, path, depth + 1) for k in key]}
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
    # Write through a symlink (to its final target), as open(path, "wb") and torch.save do:
    # renaming over the link itself would replace it and leave the target stale.
    path = os.path.realpath(path)
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
        The file is truncated, corrupted, not a tinyattn checkpoint, malformed, or
        carries a pickled object; the message names the file and the entry or index
        node at fault. Nothing partial is returned, and nothing is allocated beyond
        the file's own size before the index has been validated.
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
        return _load_zip(fh, os.fsdecode(path))


def _load_zip(fh, name: str):
    try:
        start = fh.tell()
        size = fh.seek(0, os.SEEK_END) - start
        fh.seek(start)
        with zipfile.ZipFile(fh) as zf:
            return _Decoder(zf, name, size).run()
    except CheckpointError:
        raise
    except Exception as e:
        # zipfile and the .npy header parser raise a zoo of types on damaged bytes
        # (BadZipFile, EOFError, struct.error, NotImplementedError, ...): the promise is
        # one exception type for any bad file.
        raise CheckpointError(
            f"tinyattn.load: {name!r} is not a readable tinyattn checkpoint (truncated or "
            f"corrupted?): {type(e).__name__}: {e}"
        ) from e


# -- torch's unpickling allow-list, kept for source compatibility ------------------------------
# torch's ``load(weights_only=True)`` unpickles only allow-listed globals; programs extend the
# list with ``add_safe_globals`` or the ``safe_globals`` context manager. tinyattn never
# unpickles anything (see the module docstring), so there is nothing to allow: the list is
# kept (validated and returned by ``get_safe_globals``) but changes what ``load`` accepts in
# no way.
_SAFE_GLOBALS: list = []


def _check_safe_globals(safe_globals, name: str) -> list:
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(
            f"{name}(): argument 'safe_globals' must be a list of classes/functions "
            f"(or (object, name) tuples), got {type(safe_globals).__name__}"
        )
    return list(safe_globals)


def add_safe_globals(safe_globals: list) -> None:
    """Record ``safe_globals`` (no effect on :func:`load`: tinyattn never unpickles)."""
    _SAFE_GLOBALS.extend(_check_safe_globals(safe_globals, "add_safe_globals"))


def get_safe_globals() -> list:
    """The globals recorded by :func:`add_safe_globals` / :class:`safe_globals`."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Forget every recorded global."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with safe_globals([...]):`` records the globals for the block (no effect on :func:`load`)."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = _check_safe_globals(safe_globals, "safe_globals")
        self._saved: list = []

    def __enter__(self) -> safe_globals:
        self._saved = list(_SAFE_GLOBALS)
        _SAFE_GLOBALS.extend(self.safe_globals)
        return self

    def __exit__(self, *exc) -> None:
        _SAFE_GLOBALS[:] = self._saved
