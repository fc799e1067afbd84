"""``save`` / ``load`` for state dicts and whole objects (modules, optimizers), without pickle.

A checkpoint is an ordinary ``.npz`` archive (``np.savez``, uncompressed) whose
members are:

* ``a0.npy``, ``a1.npy`` ... one per tensor or NumPy array in the object, in the
  order they were met, saved with ``allow_pickle=False``;
* ``__tinyattn_index__.npy``: a uint8 array holding UTF-8 JSON that describes the
  structure and points into the arrays::

      {"format": "tinyattn.save", "version": 2,
       "arrays": {"a0": {"dtype": "float32", "shape": [2, 3]}, ...},
       "root": {"t": "dict", "keys": [{"t": "str", "v": "weight"}],
                "values": [{"t": "tensor", "a": "a0"}]}}

  Node types: ``none``, ``bool``, ``int``, ``float`` (``float.hex``: exact, NaN and
  inf included), ``str``, ``tensor``, ``ndarray``, ``npscalar`` (a NumPy scalar,
  stored as a 0-d array), ``list``, ``tuple``, ``dict``, ``odict`` (``OrderedDict``),
  ``defaultdict``, ``set``, ``frozenset``, ``bytes`` (hex) (dict keys are encoded like values, so int
  keys stay ints), ``dtype`` and ``device`` (tinyattn's), and since version 2:

  * ``{"t": "object", "cls": "module:qualname", "new_args": [...], "state": ...}``:
    any other object, from its ``__reduce_ex__(2)`` when that is the standard form
    (the class, ``__new__`` arguments, a ``__dict__``/slots state, optionally list
    or dict items). Rebuilt as ``cls.__new__(cls, *new_args)``, then
    ``__setstate__(state)`` if the class defines it, else ``__dict__.update``.
  * ``{"t": "global", "name": "module:qualname"}``: a class or function met as a value
    (only importable top-level names: a lambda or a local function cannot be saved).
  * ``{"t": "ref", "m": 3}``: the object, list, dict or set carrying ``"m": 3``, met
    again. Tied weights, a submodule used twice and cycles come back as one object.

  Version-1 files (no objects) are read as before.

What comes back: tinyattn Tensors for tensors (leaves, C-contiguous, bit-identical
data, with the saved ``requires_grad`` and, for ``nn.Parameter``, the Parameter class,
as torch), NumPy arrays for NumPy arrays, NumPy scalars for NumPy
scalars, the same containers, and the objects. An object appearing twice in the tree
(e.g. tied weights) is stored once and comes back as one object, but two different
tensors that share memory (views) come back as independent copies.

Safety: nothing is ever unpickled, and nothing in the file is trusted before it is
checked. ``load`` first checks the zip directory (every member stored uncompressed, as
``save`` writes it, so no zip bomb can inflate; member sizes bounded by the file's
size), then validates the whole JSON index against the schema above (iteratively,
containers nested at most ``_MAX_DEPTH`` deep; supported dtypes only; every declared
shape checked against the member's real size before anything is allocated), then
resolves every class and function the index names, as torch's ``weights_only`` load
does: by default only the allowlisted ones (:func:`add_safe_globals`,
:class:`safe_globals`, and a few plain-data builtins); nothing is imported or called
before all names have passed. Then it reads each member (the zip CRC is verified),
checks its ``.npy`` header against the index, and builds the tree.
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
>>> model = torch.nn.Linear(2, 1)
>>> torch.save(model, path)
>>> with torch.serialization.safe_globals([torch.nn.Linear]):
...     torch.load(path)
Linear(in_features=2, out_features=1, bias=True)
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.device import check_device, device
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .errors import CheckpointError, WeightsOnlyError
from .formats import read_any
from .native_reader import _FORMAT, _INDEX, _VERSION
from .native_writer import Encoder
from .torch_reader import Options
from .torch_writer import PickleWriter, write_torch_zip

__all__ = ["save", "load", "CheckpointError", "WeightsOnlyError"]
__all__ += ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]


def save(
    obj: Any, f, pickle_module=None, pickle_protocol=None, *, format: str = "tinyattn", **kwargs
) -> None:
    """Save ``obj`` (a state dict or any tree of tensors, arrays, numbers, strings) to ``f``.

    Parameters
    ----------
    obj : object
        Nested containers (dict, list, tuple, set, OrderedDict, defaultdict) of Tensors,
        NumPy arrays, numbers, strings, None, bools, dtypes, devices, importable
        classes and functions, and objects such as an ``nn.Module`` or an optimizer
        (stored as their class name plus their state, see the module docstring).
    f : str, os.PathLike or binary file object
        A path is written atomically (temporary file + fsync + rename); a file
        object is written in place.
    format : {"tinyattn", "torch", "safetensors"}
        ``"tinyattn"`` (the default): the format above, no pickle. ``"torch"``: torch's
        zip format, which ``torch.load(f)`` reads with its default ``weights_only=True``
        (state dicts and checkpoint dicts of tensors, numbers, strings and containers;
        see ``tinyattn/io/torch_writer.py``). ``"safetensors"``: a flat dict of
        str -> Tensor, as ``safetensors.torch.save_file`` writes it.
    pickle_module, pickle_protocol, **kwargs
        Accepted for torch compatibility and ignored: nothing is unpickled on load.

    Raises
    ------
    TypeError
        An object in the tree cannot be saved (a lambda, a local or bound function,
        an object whose ``__reduce_ex__(2)`` is not the standard form, or for
        ``format="torch"`` anything but tensors, numbers, strings and containers); the
        message names where it was met (e.g. ``obj['state'][0]['fn']`` or
        ``obj.encoder.act``). Nothing is written.
    ValueError
        ``format`` is not one of the three names.
    """
    if not hasattr(f, "write") and not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"save(): f must be a path (str or os.PathLike) or a binary file object, "
            f"got {type_name(f)}"
        )
    if format not in ("tinyattn", "torch", "safetensors"):
        raise ValueError(
            f"save(): format must be 'tinyattn', 'torch' or 'safetensors', got {format!r}"
        )
    write = _writer(obj, format)
    if hasattr(f, "write"):
        write(f)
        return
    _atomic_write(os.fspath(f), write)


def _writer(obj: Any, format: str) -> Callable[[Any], None]:
    """Encode ``obj`` now (so a bad tree raises before anything is written); a writer."""
    if format == "torch":
        pickled = PickleWriter().encode(obj)
        return lambda fh: write_torch_zip(pickled, fh)
    if format == "safetensors":
        from .safetensors import save as to_bytes

        data = to_bytes(obj)
        return lambda fh: fh.write(data)
    encoder = Encoder()
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
    return lambda fh: np.savez(fh, allow_pickle=False, **members)


def _atomic_write(path: str, write: Callable[[Any], None]) -> None:
    # Write through a symlink (to its final target), as open(path, "wb") and torch.save do:
    # renaming over the link itself would replace it and leave the target stale.
    path = os.path.realpath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
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
    """Load an object saved by :func:`save`, by ``torch.save`` or as safetensors.

    The format is told by the file's bytes, never its name (docs/weights.md): tinyattn's
    own, torch's zip format (``.pt``, ``.pth``, ``pytorch_model.bin``), torch's legacy
    format (``_use_new_zipfile_serialization=False``) or safetensors. torch files are read
    without torch, by a pickle interpreter of tinyattn's own that calls nothing outside
    the allowlist below.

    Parameters
    ----------
    f : str, os.PathLike or binary file object
    map_location : None, "cpu", device, dict or callable
        As torch's, for torch files: each storage's saved location is mapped (a dict
        maps location strings, a callable gets ``(storage, location)`` and returns the
        storage or None); the result must be the CPU, the only device tinyattn has, so a
        file saved on CUDA needs ``map_location="cpu"``, as in torch on a machine without
        a GPU.
    weights_only : bool, optional
        None or True (the default, as torch's since 2.6): classes and functions named in
        the file are resolved only from the allowlist: torch's defaults for torch files
        (tensors, parameters, ``OrderedDict``, dtypes, ``Size``, ``device`` ...; plain-data
        builtins, ``Size``, and as values only tinyattn's Tensor, Parameter, dtype and
        device classes for tinyattn's files), plus what :func:`add_safe_globals` and
        :class:`safe_globals` add. Any other name raises torch's "Weights only load
        failed" error before it is used. False: the file is trusted, and every name is
        imported by its module and qualified name, as torch/pickle would (``__main__``
        names come from the running script), and called: only do it for files you trust.
    mmap : bool, optional
        True maps a torch zip file's storages (copy-on-write) instead of reading them, as
        torch does; ``f`` must then be a path, and a legacy-format file raises torch's
        error. Ignored for tinyattn's and safetensors files.
    pickle_module, **kwargs
        Accepted for torch compatibility and ignored.

    Returns
    -------
    The saved tree: Tensors for tensors (leaves keeping the saved ``requires_grad``;
    ``nn.Parameter`` stays a Parameter), NumPy arrays for arrays, the same containers
    and scalars, and the saved objects (an object met twice comes back as one). From a
    torch file, tensors that shared a storage share memory; bfloat16 becomes float32,
    with a warning.

    Raises
    ------
    CheckpointError
        The file is truncated, corrupted, in no format tinyattn reads, malformed, or
        unsafe; the message names the file and the entry at fault. Nothing partial is
        returned, and no size declared in the file is allocated before it has been
        checked against the file's real size.
    WeightsOnlyError
        (a CheckpointError and a ``pickle.UnpicklingError``, the type torch raises)
        ``weights_only`` is on and the file names a class or function that is not
        allowlisted; the message is torch's, with its remedy.
    FileNotFoundError
        No such file.
    """
    if isinstance(map_location, (str, device)) or type(map_location).__name__ == "device":
        check_device(map_location)  # torch.device("cpu") passes too
        map_location = "cpu"
    if weights_only not in (None, True, False):
        raise TypeError(f"load(): weights_only must be None, True or False, got {weights_only!r}")
    resolve = _import_global if weights_only is False else _allowed_global
    options = Options(weights_only is not False, map_location, _user_globals())
    options.mmap_requested = bool(mmap)
    if hasattr(f, "read"):
        name = getattr(f, "name", "<file object>")
        return read_any(f, str(name), options, resolve)
    if not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(
            f"load(): f must be a path (str or os.PathLike) or a binary file object, "
            f"got {type_name(f)}"
        )
    path = os.fspath(f)
    options.mmap_path = os.fsdecode(path) if mmap else None
    with open(path, "rb") as fh:
        return read_any(fh, os.fsdecode(path), options, resolve)


# -- torch's allowlist for weights_only loads -----------------------------------------------
# torch's ``load(weights_only=True)`` rebuilds only allowlisted globals; programs extend the
# list with ``add_safe_globals`` or the ``safe_globals`` context manager. tinyattn never
# unpickles, but an "object" or "global" node names a class or function just as a pickle
# GLOBAL does, and ``load`` resolves it by the same rule.
_SAFE_GLOBALS: list = []

# Modules that moved: files saved before the move name their classes under the old path
# (``"tinyattn._size:Size"``); loading reads them as the new one.
MOVED_MODULES: dict[str, str] = {
    "tinyattn._tensor": "tinyattn.tensor_api.tensor",
    "tinyattn._size": "tinyattn.core.size",
    "tinyattn._device": "tinyattn.core.device",
}


def _current_name(name: str) -> str:
    """``"module:qualname"`` with a moved module's old path replaced by its new one."""
    module, sep, qualname = name.partition(":")
    return MOVED_MODULES.get(module, module) + sep + qualname


def _default_globals(is_class: bool) -> dict[str, Any]:
    """Allowed without asking: plain-data builtins and tinyattn's own value types.

    As values (``global`` nodes) all of them; as classes to build from a file's state
    (``object`` nodes) only those whose ``__new__`` arguments are their whole value:
    a Tensor, dtype or device built that way would skip the checks of its constructor.
    """
    from collections import Counter

    from ..core._dtype import dtype
    from ..core.size import Size
    from ..nn.parameter import Parameter

    built = (int, float, complex, str, bytes, tuple, frozenset, Size)
    values = (dict, list, set, bool, bytearray, OrderedDict, Counter, defaultdict, Tensor)
    allowed = built if is_class else (*built, *values, Parameter, dtype, device)
    return {_dotted(g): g for g in allowed}


def _dotted(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"


def _user_globals() -> dict[str, Any]:
    """``{"module.qualname": object}`` for what :func:`add_safe_globals` allowed."""
    allowed = {}
    for entry in _SAFE_GLOBALS:
        if isinstance(entry, tuple):
            allowed[entry[1]] = entry[0]
        else:
            allowed[_dotted(entry)] = entry
    return allowed


def _allowed_global(name: str, is_class: bool) -> Any:
    """The allowlisted object saved as ``module:qualname``, or torch's weights-only error."""
    dotted = _current_name(name).replace(":", ".")
    allowed = _default_globals(is_class)
    allowed.update(_user_globals())
    if dotted in allowed:
        return allowed[dotted]
    raise WeightsOnlyError(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint. \n"
        "\t(1) tinyattn.load's `weights_only` defaults to True, as torch.load's does since "
        "PyTorch 2.6. Re-running `tinyattn.load` with `weights_only` set to `False` will "
        "likely succeed, but it can result in arbitrary code execution. Do it only if you "
        "got the file from a trusted source.\n"
        "\t(2) Alternatively, to load with `weights_only=True` please check the recommended "
        "steps in the following error message.\n"
        f"\tWeightsUnpickler error: Unsupported global: GLOBAL {dotted} was not an allowed "
        "global by default. Please use "
        f"`tinyattn.serialization.add_safe_globals([{dotted}])` or the "
        f"`tinyattn.serialization.safe_globals([{dotted}])` context manager to allowlist this "
        "global if you trust this class/function.\n\n"
        "Check the documentation of tinyattn.load to learn more about types accepted by "
        "default with weights_only."
    )


def _import_global(name: str, is_class: bool) -> Any:
    """``weights_only=False``: import ``module`` and walk ``qualname``, as pickle would."""
    module, qualname = _current_name(name).split(":")
    if module == "__main__":
        found = sys.modules["__main__"]
    else:
        found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _check_safe_globals(safe_globals, name: str) -> list:
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(
            f"{name}(): argument 'safe_globals' must be a list of classes/functions "
            f"(or (object, name) tuples), got {type_name(safe_globals)}"
        )
    for entry in safe_globals:
        if isinstance(entry, tuple) and (len(entry) != 2 or not isinstance(entry[1], str)):
            raise TypeError(
                f"{name}(): a tuple entry must be (object, 'module.qualname'), got {entry!r}"
            )
    return list(safe_globals)


def add_safe_globals(safe_globals: list) -> None:
    """Allow :func:`load` (``weights_only=True``) to rebuild these classes and functions.

    Entries are classes/functions, or ``(object, "module.qualname")`` pairs naming the
    object as it was saved.
    """
    _SAFE_GLOBALS.extend(_check_safe_globals(safe_globals, "add_safe_globals"))


def get_safe_globals() -> list:
    """The globals added by :func:`add_safe_globals` / :class:`safe_globals`."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Forget every added global."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with safe_globals([...]):`` allows these globals in :func:`load` for the block."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = _check_safe_globals(safe_globals, "safe_globals")
        self._saved: list = []

    def __enter__(self) -> safe_globals:
        self._saved = list(_SAFE_GLOBALS)
        _SAFE_GLOBALS.extend(self.safe_globals)
        return self

    def __exit__(self, *exc) -> None:
        _SAFE_GLOBALS[:] = self._saved
