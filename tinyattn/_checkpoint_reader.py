"""Reading side of ``tinyattn.save``'s format: the zip directory, index schema and members.

Nothing in the file is trusted before it is checked, in this order:

1. the zip directory: unique names, every member stored uncompressed (as ``save``
   writes it: no member can inflate) and no member claiming more bytes than the file;
2. the JSON index: the top-level fields, each array's dtype (supported dtypes only)
   and shape, whose byte count must match the member's real size, before any
   allocation; then every node of the tree against the schema, iteratively and at
   most ``_MAX_DEPTH`` containers deep;
3. each member: its CRC (zipfile), then its ``.npy`` header against the index.

Every failure is a :class:`CheckpointError` naming the file and the entry or index
node (as a path like ``obj['model']['weight']``).
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from ._tensor import Tensor

_INDEX = "__tinyattn_index__"
_FORMAT = "tinyattn.save"
_VERSION = 1
_MAX_DEPTH = 200  # containers nested deeper are refused by save and by load

# Native little/big-endian dtype strings ("<f4" on most machines). Tensors hold one of
# tinyattn's nine dtypes; NumPy arrays may also be unsigned or complex. Strings, dates,
# objects and foreign byte orders are refused by save and by load.
_TENSOR_DTYPES = frozenset(
    np.dtype(d).str
    for d in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64)
    + (np.uint8, np.bool_)
)
_ARRAY_DTYPES = _TENSOR_DTYPES | frozenset(
    np.dtype(d).str for d in (np.uint16, np.uint32, np.uint64, np.complex64, np.complex128)
)


class CheckpointError(RuntimeError):
    """A file is not a readable tinyattn checkpoint (corrupted, truncated, malformed or unsafe).

    A ``RuntimeError``, as the errors of torch's ``load`` on a damaged file are; the
    message names the file and the entry or index node at fault.
    """


CheckpointError.__module__ = "tinyattn.serialization"  # where users import it from


def _tensor(arr: np.ndarray, requires_grad: bool, parameter: bool) -> Tensor:
    """A loaded tensor: a leaf, with the saved ``requires_grad`` and Parameter class."""
    if parameter:
        from .nn.parameter import Parameter  # nn imports this module's package: import late

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
_KEY_TYPES = {"none", "bool", "int", "float", "str", "tuple"}  # hashable, as save writes keys
_NPY_MAX_HEADER = 65536  # np.save headers are a few hundred bytes


class _Decoder:
    """Checks the zip directory, validates the index, reads the members, builds the tree."""

    def __init__(self, zf: zipfile.ZipFile, name: str, size: int) -> None:
        self.zf = zf
        self.name = name
        self.size = size  # bytes in the archive: no member may claim more
        self.cache: dict[str, Any] = {}

    def error(self, what: str) -> CheckpointError:
        return CheckpointError(f"tinyattn.load: {self.name!r}: {what}")

    # -- step 1: the zip directory ------------------------------------------------------
    def check_directory(self) -> dict[str, zipfile.ZipInfo]:
        infos = self.zf.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise self.error(
                f"duplicate zip entries {sorted(n for n in names if names.count(n) > 1)}"
            )
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
                raise self.error(
                    f"entry {info.filename!r} is compressed or encrypted (method "
                    f"{info.compress_type}); tinyattn.save stores members uncompressed, and "
                    "load refuses others (a compressed member can inflate without bound)"
                )
            if info.file_size != info.compress_size or info.file_size > self.size:
                raise self.error(
                    f"entry {info.filename!r} claims {info.file_size} bytes (stored "
                    f"{info.compress_size}) in a file of {self.size} bytes"
                )
        if sum(i.file_size for i in infos) > self.size:
            raise self.error("the zip entries claim more bytes than the file holds")
        return {i.filename: i for i in infos}

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
        if index.get("version") != _VERSION:
            raise self.error(
                f"checkpoint format version {index.get('version')!r} is not supported "
                f"(this tinyattn reads version {_VERSION})"
            )
        if set(index) != {"format", "version", "arrays", "root"}:
            raise self.error(f"the index has fields {sorted(index)}")
        return index

    def check_arrays(self, arrays, infos: dict[str, zipfile.ZipInfo]) -> dict[str, tuple]:
        """``{key: (dtype_str, shape)}``, each size checked against the member's real size."""
        if not isinstance(arrays, dict):
            raise self.error(f"index field 'arrays' is a {type(arrays).__name__}, not a mapping")
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

    def check_tree(self, root, arrays: dict[str, tuple]) -> dict[str, str]:
        """Validate every node (iteratively, depth-limited); ``{array key: its tree path}``."""
        used: dict[str, tuple] = {}  # array key -> (node signature, path)
        stack = [(root, "obj", 0, False)]
        while stack:
            node, path, depth, is_key = stack.pop()
            where = f"index node {path}"
            if depth > _MAX_DEPTH:
                raise self.error(f"{where}: containers nested more than {_MAX_DEPTH} deep")
            if not isinstance(node, dict) or not isinstance(node.get("t"), str):
                raise self.error(f"{where} is not a node (a mapping with a type 't')")
            kind = node["t"]
            if kind not in _NODE_FIELDS or (is_key and kind not in _KEY_TYPES):
                what = "dict key" if is_key else "node"
                raise self.error(f"{where}: unknown {what} type {kind!r}")
            required, optional = _NODE_FIELDS[kind]
            if not required <= set(node) <= required | optional:
                raise self.error(f"{where}: a {kind!r} node has fields {sorted(node)}")
            value = node.get("v")
            if (
                (kind == "bool" and type(value) is not bool)
                or (kind == "int" and type(value) is not int)
                or (kind in ("float", "str") and type(value) is not str)
            ):
                raise self.error(f"{where}: a {kind!r} node holds {type(value).__name__} {value!r}")
            if kind == "float":
                try:
                    float.fromhex(value)
                except (ValueError, OverflowError):
                    raise self.error(f"{where}: {value!r} is not a float in hex form") from None
            if "a" in node:
                self._check_array_node(node, path, arrays, used)
            if kind in ("list", "tuple"):
                items = node["items"]
                if not isinstance(items, list):
                    raise self.error(f"{where}: 'items' is a {type(items).__name__}, not a list")
                for i, item in enumerate(reversed(items)):
                    stack.append((item, f"{path}[{len(items) - 1 - i}]", depth + 1, is_key))
            elif kind in ("dict", "odict"):
                keys, values = node["keys"], node["values"]
                if not isinstance(keys, list) or not isinstance(values, list):
                    raise self.error(f"{where}: 'keys' and 'values' must be lists")
                if len(keys) != len(values):
                    raise self.error(f"{where}: {len(keys)} keys but {len(values)} values")
                for i in reversed(range(len(keys))):
                    label = _key_label(keys[i])
                    stack.append((values[i], f"{path}[{label}]", depth + 1, False))
                    stack.append((keys[i], f"{path}.keys[{i}]", depth + 1, True))
        unused = sorted(set(arrays) - set(used))
        if unused:
            raise self.error(f"entries {unused} are not referenced by the index tree")
        return {key: path for key, (_, path) in used.items()}

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
        paths = self.check_tree(index["root"], arrays)
        self.arrays = {
            key: self.read_array(key, dtype_str, shape, f"entry {key!r} ({paths[key]})")
            for key, (dtype_str, shape) in arrays.items()
        }
        return self.decode(index["root"], "obj")

    def decode(self, node: dict, path: str):
        """Build the object for a validated node (recursion depth <= _MAX_DEPTH)."""
        kind = node["t"]
        if kind == "none":
            return None
        if kind in ("bool", "str", "int"):
            return node["v"]
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
            items = [self.decode(n, f"{path}[{i}]") for i, n in enumerate(node["items"])]
            return items if kind == "list" else tuple(items)
        pairs = [
            (self.decode(k, path), self.decode(v, f"{path}[{_key_label(k)}]"))
            for k, v in zip(node["keys"], node["values"])
        ]
        out = OrderedDict(pairs) if kind == "odict" else dict(pairs)
        if len(out) != len(pairs):
            raise self.error(f"index node {path} repeats a dict key")
        return out


def _key_label(node) -> str:
    """How a dict key node reads in a path: ``'weight'``, ``3``, or ``?`` if unreadable."""
    if isinstance(node, dict) and node.get("t") in ("str", "int", "bool") and "v" in node:
        return repr(node["v"])
    return "?"
