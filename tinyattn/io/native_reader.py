"""Reading side of ``tinyattn.save``'s format: the zip directory, index schema and members.

Nothing in the file is trusted before it is checked, in this order:

1. the zip directory: unique names, every member stored uncompressed (as ``save``
   writes it: no member can inflate) and no member claiming more bytes than the file;
2. the JSON index: the top-level fields, each array's dtype (supported dtypes only)
   and shape, whose byte count must match the member's real size, before any
   allocation; then every node of the tree against the schema, iteratively and at
   most ``_MAX_DEPTH`` containers deep;
3. every class and function the index names (``object`` and ``global`` nodes), through
   the caller's ``resolve`` (the weights-only allowlist by default), before any is used;
4. each member: its CRC (zipfile), then its ``.npy`` header against the index.

Only then is the tree built. An ``object`` node is rebuilt as ``cls.__new__(cls, *args)``
and registered (if it carries a memo number ``m``) before its state is decoded, so a
``ref`` inside its state can point back to it; lists, dicts and sets are registered
empty, then filled; tuples and frozensets once built.

Every failure is a :class:`CheckpointError` naming the file and the entry or index
node (as a path like ``obj['model']['weight']``).
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .errors import CheckpointError

_INDEX = "__tinyattn_index__"
_FORMAT = "tinyattn.save"
_VERSION = 2  # 2 added objects, globals, refs, sets, defaultdicts, dtypes and devices
_MAX_DEPTH = 200  # containers nested deeper are refused by save and by load

# Native little/big-endian dtype strings ("<f4" on most machines). Tensors hold one of
# tinyattn's eleven dtypes; NumPy arrays may also be unsigned. Strings, dates, objects and
# foreign byte orders are refused by save and by load.
_TENSOR_DTYPES = frozenset(
    np.dtype(d).str
    for d in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64)
    + (np.uint8, np.bool_, np.complex64, np.complex128)
)
_ARRAY_DTYPES = _TENSOR_DTYPES | frozenset(
    np.dtype(d).str for d in (np.uint16, np.uint32, np.uint64)
)


def _tensor(arr: np.ndarray, requires_grad: bool, parameter: bool) -> Tensor:
    """A loaded tensor: a leaf, with the saved ``requires_grad`` and Parameter class."""
    if parameter:
        from ..nn.parameter import Parameter  # nn imports this module's package: import late

        return Parameter(Tensor._make(arr), requires_grad=requires_grad)
    t = Tensor._make(arr)
    return t.requires_grad_(True) if requires_grad else t


def _no_duplicates(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate JSON keys {sorted({k for k in keys if keys.count(k) > 1})}")
    return dict(pairs)


def _no_constant(token: str):
    raise ValueError(f"JSON constant {token} is not allowed in the index")


_ARRAY_NAME = re.compile(r"a(0|[1-9][0-9]{0,8})")
_NODE_FIELDS = {  # node type -> (required fields, optional fields)
    "none": ({"t"}, set()),
    "bool": ({"t", "v"}, set()),
    "int": ({"t", "v"}, set()),
    "float": ({"t", "v"}, set()),
    "str": ({"t", "v"}, set()),
    "tensor": ({"t", "a"}, {"rg", "param"}),
    "ndarray": ({"t", "a"}, set()),
    "npscalar": ({"t", "a"}, set()),
    "list": ({"t", "items"}, set()),
    "tuple": ({"t", "items"}, set()),
    "dict": ({"t", "keys", "values"}, set()),
    "odict": ({"t", "keys", "values"}, set()),
}
_V1_TYPES = frozenset(_NODE_FIELDS)
_NODE_FIELDS.update(
    {
        "bytes": ({"t", "v"}, set()),
        "set": ({"t", "items"}, set()),
        "frozenset": ({"t", "items"}, set()),
        "defaultdict": ({"t", "factory", "keys", "values"}, set()),
        "dtype": ({"t", "v"}, set()),
        "device": ({"t", "v"}, set()),
        "global": ({"t", "name"}, set()),
        "object": (
            {"t", "cls", "new_args"},
            {"new_kwargs", "state", "listitems", "dictitems"},
        ),
        "ref": ({"t", "m"}, set()),
    }
)
_MEMO_TYPES = {"list", "tuple", "dict", "odict", "defaultdict", "set", "frozenset", "object"}
_UNHASHABLE = {"list", "dict", "odict", "defaultdict", "set", "ndarray"}  # refused as keys
_DTYPE_NAMES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"}
_DTYPE_NAMES |= {"bool", "bfloat16"}
_BUILT_AFTER_CONTENTS = ("tuple", "frozenset")  # registered once built, not before
_READY = object()  # check_tree's mark: the memo number after it is registered
_GLOBAL_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_NPY_MAX_HEADER = 65536  # np.save headers are a few hundred bytes


def checked_directory(
    zf: zipfile.ZipFile, size: int, error: Callable[[str], CheckpointError], writer: str
) -> dict[str, zipfile.ZipInfo]:
    """``{name: ZipInfo}`` once no entry is duplicated, compressed, encrypted or oversized.

    ``writer`` (``tinyattn.save``, ``torch.save``) names what stores members uncompressed.
    """
    infos = zf.infolist()
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        raise error(f"duplicate zip entries {sorted(n for n in names if names.count(n) > 1)}")
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            raise error(
                f"entry {info.filename!r} is compressed or encrypted (method "
                f"{info.compress_type}); {writer} stores members uncompressed, and load refuses "
                "others (a compressed member can inflate without bound)"
            )
        if info.file_size != info.compress_size or info.file_size > size:
            raise error(
                f"entry {info.filename!r} claims {info.file_size} bytes (stored "
                f"{info.compress_size}) in a file of {size} bytes"
            )
    if sum(i.file_size for i in infos) > size:
        raise error("the zip entries claim more bytes than the file holds")
    return {i.filename: i for i in infos}


class _Decoder:
    """Checks the zip directory, validates the index, reads the members, builds the tree."""

    def __init__(
        self, zf: zipfile.ZipFile, name: str, size: int, resolve: Callable[[str, bool], Any]
    ) -> None:
        self.zf = zf
        self.name = name
        self.size = size  # bytes in the archive: no member may claim more
        self.resolve = resolve  # ("module:qualname", is an object's class) -> object, or raises
        self.version = _VERSION

    def error(self, what: str) -> CheckpointError:
        return CheckpointError(f"tinyattn.load: {self.name!r}: {what}")

    # -- step 1: the zip directory ------------------------------------------------------
    def check_directory(self) -> dict[str, zipfile.ZipInfo]:
        return checked_directory(self.zf, self.size, self.error, "tinyattn.save")

    # -- step 2: a member's .npy header, then its data ----------------------------------
    def read_array(
        self, key: str, dtype_str: str, shape: tuple[int, ...], where: str
    ) -> np.ndarray:
        dtype = np.dtype(dtype_str)
        nbytes = math.prod(shape) * dtype.itemsize
        data = self.zf.read(key + ".npy")  # bounded by check_directory; verifies the CRC
        fp = io.BytesIO(data)
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            header = np.lib.format.read_array_header_1_0(fp, max_header_size=_NPY_MAX_HEADER)
        elif version == (2, 0):
            header = np.lib.format.read_array_header_2_0(fp, max_header_size=_NPY_MAX_HEADER)
        else:
            raise self.error(f"{where}: unsupported .npy version {version}")
        got_shape, fortran, got_dtype = header
        if got_dtype.hasobject:
            raise self.error(
                f"{where} is a pickled object array; refusing to load it (tinyattn "
                "checkpoints never contain pickled data, and unpickling can run code)"
            )
        if got_dtype.str != dtype_str or tuple(got_shape) != shape:
            raise self.error(
                f"{where} has dtype {got_dtype.str} and shape {list(got_shape)}; the index "
                f"says {dtype_str} and {list(shape)}"
            )
        offset = fp.tell()
        if len(data) - offset != nbytes:
            raise self.error(
                f"{where} holds {len(data) - offset} data bytes; dtype {dtype_str} and shape "
                f"{list(shape)} need {nbytes}"
            )
        flat = np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=offset)
        arr = np.array(flat.reshape(shape, order="F" if fortran else "C"), order="C")
        if dtype.kind == "b" and arr.view(np.uint8).max(initial=0) > 1:
            raise self.error(f"{where}: a bool array holds bytes other than 0 and 1")
        return arr

    # -- step 3: the index --------------------------------------------------------------
    def read_index(self) -> dict:
        fp = io.BytesIO(self.zf.read(_INDEX + ".npy"))
        version = np.lib.format.read_magic(fp)
        if version != (1, 0):
            raise self.error(f"the index has .npy version {version}")
        shape, _, dtype = np.lib.format.read_array_header_1_0(fp, max_header_size=_NPY_MAX_HEADER)
        raw = fp.read()
        if dtype != np.uint8 or len(shape) != 1 or shape[0] != len(raw):
            raise self.error(f"the index has dtype {dtype} and shape {shape} ({len(raw)} bytes)")
        try:
            index = json.loads(
                raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant
            )
        except RecursionError:
            raise self.error("the index is nested too deeply to be a tinyattn checkpoint") from None
        except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise self.error(f"the index is not valid JSON: {e}") from None
        if not isinstance(index, dict) or index.get("format") != _FORMAT:
            raise self.error("the index does not describe a tinyattn checkpoint")
        if index.get("version") not in (1, _VERSION):
            raise self.error(
                f"checkpoint format version {index.get('version')!r} is not supported "
                f"(this tinyattn reads versions 1 to {_VERSION})"
            )
        self.version = index["version"]
        if set(index) != {"format", "version", "arrays", "root"}:
            raise self.error(f"the index has fields {sorted(index)}")
        return index

    def check_arrays(self, arrays, infos: dict[str, zipfile.ZipInfo]) -> dict[str, tuple]:
        """``{key: (dtype_str, shape)}``, each size checked against the member's real size."""
        if not isinstance(arrays, dict):
            raise self.error(f"index field 'arrays' is a {type_name(arrays)}, not a mapping")
        unknown = sorted(set(infos) - {k + ".npy" for k in arrays} - {_INDEX + ".npy"})
        if unknown:
            raise self.error(f"unexpected entries {unknown} (not listed in the index)")
        out = {}
        for key, meta in arrays.items():
            where = f"index arrays[{key!r}]"
            if not _ARRAY_NAME.fullmatch(key):
                raise self.error(f"{where}: not an array name of the form a0, a1, ...")
            if key + ".npy" not in infos:
                raise self.error(f"entry {key!r} is listed in the index but missing from the file")
            if not isinstance(meta, dict) or set(meta) != {"dtype", "shape"}:
                raise self.error(f"{where} must be a mapping with 'dtype' and 'shape'")
            dtype_str, shape = meta["dtype"], meta["shape"]
            if isinstance(dtype_str, str) and dtype_str.endswith("O"):
                raise self.error(
                    f"entry {key!r} is a pickled object array; refusing to load it (tinyattn "
                    "checkpoints never contain pickled data, and unpickling can run code)"
                )
            if not isinstance(dtype_str, str) or dtype_str not in _ARRAY_DTYPES:
                raise self.error(
                    f"{where}: unsupported dtype {dtype_str!r} (supported: {sorted(_ARRAY_DTYPES)})"
                )
            if (
                not isinstance(shape, list)
                or len(shape) > 64
                or not all(type(n) is int and n >= 0 for n in shape)
            ):
                raise self.error(f"{where}: shape {shape!r} is not a list of at most 64 sizes >= 0")
            nbytes = math.prod(shape) * np.dtype(dtype_str).itemsize
            header = infos[key + ".npy"].file_size - nbytes
            if not 10 <= header <= _NPY_MAX_HEADER:
                raise self.error(
                    f"entry {key!r}: dtype {dtype_str} and shape {shape} declare {nbytes} bytes, "
                    f"but the entry holds {infos[key + '.npy'].file_size}"
                )
            out[key] = (dtype_str, tuple(shape))
        return out

    def check_tree(self, root, arrays: dict[str, tuple]) -> tuple[dict[str, str], dict]:
        """Validate every node (iteratively, depth-limited).

        Returns ``{array key: its tree path}`` and ``{(global name, is an object's class):
        first path naming it}``.
        The walk visits nodes in the order the builder decodes them, so it also checks
        that each ``ref`` points to an object already registered at that point.
        """
        used: dict[str, tuple] = {}  # array key -> (node signature, path)
        names: dict[tuple, str] = {}  # ("module:qualname", names a class to build) -> path
        memo: dict[int, bool] = {}  # memo number -> registered yet
        stack: list = [(root, "obj", 0, False)]
        while stack:
            entry = stack.pop()
            if entry[0] is _READY:
                memo[entry[1]] = True
                continue
            node, path, depth, is_key = entry
            where = f"index node {path}"
            if depth > _MAX_DEPTH:
                raise self.error(f"{where}: containers nested more than {_MAX_DEPTH} deep")
            if not isinstance(node, dict) or not isinstance(node.get("t"), str):
                raise self.error(f"{where} is not a node (a mapping with a type 't')")
            kind = node["t"]
            known = _NODE_FIELDS if self.version > 1 else _V1_TYPES
            if kind not in known or (is_key and kind in _UNHASHABLE):
                what = "dict key" if is_key else "node"
                raise self.error(f"{where}: unknown {what} type {kind!r}")
            required, optional = _NODE_FIELDS[kind]
            if kind in _MEMO_TYPES and self.version > 1:
                optional = optional | {"m"}
            if not required <= set(node) <= required | optional:
                raise self.error(f"{where}: a {kind!r} node has fields {sorted(node)}")
            self._check_value(node, where)
            if "a" in node:
                self._check_array_node(node, path, arrays, used)
            if "m" in node or kind == "ref":
                m = node["m"]
                if type(m) is not int or m < 0:
                    raise self.error(f"{where}: memo number {m!r} is not an int >= 0")
                if kind == "ref" and not memo.get(m):
                    raise self.error(f"{where} refers to {m}, which is not built at that point")
                if kind != "ref" and m in memo:
                    raise self.error(f"{where}: memo number {m} is used twice")
                if kind != "ref":
                    memo[m] = False
            for name, is_class in ((node.get("cls"), True), (node.get("name"), False)):
                if name is not None and not (
                    isinstance(name, str) and _GLOBAL_NAME.fullmatch(name)
                ):
                    raise self.error(f"{where}: {name!r} is not a 'module:qualname' name")
                if name is not None:
                    names.setdefault((name, is_class), path)
            stack.extend(reversed(self._children(node, path, depth + 1, is_key)))
        unused = sorted(set(arrays) - set(used))
        if unused:
            raise self.error(f"entries {unused} are not referenced by the index tree")
        return {key: path for key, (_, path) in used.items()}, names

    def _check_value(self, node: dict, where: str) -> None:
        kind, value = node["t"], node.get("v")
        if (
            (kind == "bool" and type(value) is not bool)
            or (kind == "int" and type(value) is not int)
            or (kind in ("float", "str") and type(value) is not str)
            or (kind == "dtype" and value not in _DTYPE_NAMES)
            or (kind == "device" and value != "cpu")
        ):
            raise self.error(f"{where}: a {kind!r} node holds {type_name(value)} {value!r}")
        if kind == "bytes":
            try:
                bytes.fromhex(value)
            except (TypeError, ValueError):
                raise self.error(f"{where}: {value!r} is not bytes in hex form") from None
        if kind == "float":
            try:
                float.fromhex(value)
            except (ValueError, OverflowError):
                raise self.error(f"{where}: {value!r} is not a float in hex form") from None

    def _children(self, node: dict, path: str, depth: int, is_key: bool) -> list:
        """A node's child nodes (and ``_READY`` marks) in the order the builder decodes them."""
        kind, where = node["t"], f"index node {path}"
        ready = [(_READY, node["m"])] if "m" in node else []
        out: list = []
        if kind == "object":
            args = node["new_args"]
            if not isinstance(args, list):
                raise self.error(f"{where}: 'new_args' is a {type_name(args)}, not a list")
            out += [(a, f"{path}.__new__ argument {i}", depth, False) for i, a in enumerate(args)]
            for field, want in (
                ("new_kwargs", "dict"),
                ("listitems", "list"),
                ("dictitems", "dict"),
            ):
                sub = node.get(field)
                if sub is not None and (not isinstance(sub, dict) or sub.get("t") != want):
                    raise self.error(f"{where}: '{field}' must be a {want!r} node")
            if "new_kwargs" in node:
                out.append((node["new_kwargs"], f"{path}.__new__ keywords", depth, False))
            out += ready
            for field in ("state", "listitems", "dictitems"):
                if field in node:
                    out.append((node[field], f"{path}.{field}", depth, False))
            return out
        if kind == "defaultdict":
            out.append((node["factory"], f"{path}.default_factory", depth, False))
        if kind in ("list", "tuple", "set", "frozenset"):
            items = node["items"]
            if not isinstance(items, list):
                raise self.error(f"{where}: 'items' is a {type_name(items)}, not a list")
            hashed = is_key or kind in ("set", "frozenset")
            out += [(item, f"{path}[{i}]", depth, hashed) for i, item in enumerate(items)]
        elif kind in ("dict", "odict", "defaultdict"):
            keys, values = node["keys"], node["values"]
            if not isinstance(keys, list) or not isinstance(values, list):
                raise self.error(f"{where}: 'keys' and 'values' must be lists")
            if len(keys) != len(values):
                raise self.error(f"{where}: {len(keys)} keys but {len(values)} values")
            for i, (k, v) in enumerate(zip(keys, values)):
                out.append((k, f"{path}.keys[{i}]", depth, True))
                out.append((v, f"{path}[{_key_label(k)}]", depth, False))
        if kind in _BUILT_AFTER_CONTENTS:
            return out + ready
        return ready + out if kind in _MEMO_TYPES else out

    def _check_array_node(self, node: dict, path: str, arrays: dict, used: dict) -> None:
        where = f"index node {path}"
        key, kind = node["a"], node["t"]
        if not isinstance(key, str) or key not in arrays:
            raise self.error(f"{where} points to {key!r}, which the index does not list")
        rg, param = node.get("rg", False), node.get("param", False)
        if type(rg) is not bool or type(param) is not bool:
            raise self.error(f"{where}: 'rg' and 'param' must be true or false")
        dtype_str, shape = arrays[key]
        if kind == "tensor" and dtype_str not in _TENSOR_DTYPES:
            raise self.error(f"{where}: dtype {dtype_str} is not a tinyattn tensor dtype")
        if rg and np.dtype(dtype_str).kind != "f":
            raise self.error(
                f"{where}: requires_grad is set on a tensor of dtype {dtype_str} (only "
                "floating tensors can require gradients)"
            )
        if kind == "npscalar" and shape != ():
            raise self.error(f"{where}: a NumPy scalar with shape {list(shape)}")
        signature = (kind, rg, param)
        if key in used and used[key][0] != signature:
            raise self.error(f"{where}: entry {key!r} is also used as {used[key][0]}")
        used.setdefault(key, (signature, path))

    # -- the whole load -----------------------------------------------------------------
    def run(self):
        infos = self.check_directory()
        if _INDEX + ".npy" not in infos:
            raise self.error(
                "no tinyattn index found: not a file written by tinyattn.save (files written "
                "by torch.save use pickle and cannot be read; convert them with torch, e.g. "
                "to NumPy arrays saved by np.savez, or load their tensors into tinyattn)"
            )
        index = self.read_index()
        arrays = self.check_arrays(index["arrays"], infos)
        paths, names = self.check_tree(index["root"], arrays)
        globals_ = {name: self._resolve(name, cls, path) for (name, cls), path in names.items()}
        arrays_ = {
            key: self.read_array(key, dtype_str, shape, f"entry {key!r} ({paths[key]})")
            for key, (dtype_str, shape) in arrays.items()
        }
        from .native_objects import Builder  # the tree builder, apart for length

        return Builder(self, arrays_, globals_).decode(index["root"], "obj")

    def _resolve(self, name: str, is_class: bool, path: str) -> Any:
        try:
            return self.resolve(name, is_class)
        except CheckpointError:
            raise
        except Exception as e:
            raise self.error(
                f"index node {path}: cannot find {name.replace(':', '.')} ({type(e).__name__}: {e})"
            ) from e


def _key_label(node) -> str:
    """How a dict key node reads in a path: ``'weight'``, ``3``, or ``?`` if unreadable."""
    if isinstance(node, dict) and node.get("t") in ("str", "int", "bool") and "v" in node:
        return repr(node["v"])
    return "?"
