"""Building the object tree from a validated ``tinyattn.save`` index (see ``native_reader``).

By the time a :class:`Builder` runs, every node has passed the schema, every ``ref``
is known to point to an object registered before it, every array has been read and
checked, and every class or function named in the file has been resolved (through the
weights-only allowlist unless the caller trusts the file). What can still fail is the
fit between the file and a class: ``__new__`` or ``__setstate__`` raising, a state
that is not a dict for a class without ``__setstate__``, an unhashable key. Each such
failure is a :class:`CheckpointError` naming the index node; nothing partial is returned.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Any

from ..core._dtype import _dtype_by_name
from ..core.device import device
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .native_reader import CheckpointError, _Decoder, _key_label, _tensor


class Builder:
    """Decodes validated nodes recursively (depth <= ``_MAX_DEPTH``), in the writer's order."""

    def __init__(self, reader: _Decoder, arrays: dict, globals_: dict[str, Any]) -> None:
        self.reader = reader
        self.arrays = arrays  # array key -> checked ndarray
        self.globals = globals_  # "module:qualname" -> resolved object
        self.cache: dict[str, Any] = {}  # array key -> its tensor / array / scalar
        self.memo: dict[int, Any] = {}  # memo number -> the object it names

    def error(self, path: str, what: str) -> CheckpointError:
        return self.reader.error(f"index node {path}: {what}")

    def _keep(self, node: dict, obj: Any) -> Any:
        if "m" in node:
            self.memo[node["m"]] = obj
        return obj

    def decode(self, node: dict, path: str) -> Any:
        kind = node["t"]
        if kind == "none":
            return None
        if kind in ("bool", "str", "int"):
            return node["v"]
        if kind == "float":
            return float.fromhex(node["v"])
        if kind in ("tensor", "ndarray", "npscalar"):
            return self._array(node)
        if kind == "bytes":
            return bytes.fromhex(node["v"])
        if kind == "dtype":
            return _dtype_by_name(node["v"])
        if kind == "device":
            return device("cpu")
        if kind == "global":
            return self.globals[node["name"]]
        if kind == "ref":
            return self.memo[node["m"]]
        if kind == "list":
            out: Any = self._keep(node, [])
            out.extend(self.decode(n, f"{path}[{i}]") for i, n in enumerate(node["items"]))
            return out
        if kind in ("tuple", "frozenset"):
            items = [self.decode(n, f"{path}[{i}]") for i, n in enumerate(node["items"])]
            return self._keep(
                node, self._hashing(path, tuple if kind == "tuple" else frozenset, items)
            )
        if kind == "set":
            out = self._keep(node, set())
            for i, n in enumerate(node["items"]):
                self._hashing(path, out.add, self.decode(n, f"{path}[{i}]"))
            return out
        if kind == "object":
            return self._object(node, path)
        if kind == "defaultdict":
            factory = self.decode(node["factory"], f"{path}.default_factory")
            if factory is not None and not callable(factory):
                raise self.error(path, f"default_factory {factory!r} is not callable")
            out = self._keep(node, defaultdict(factory))
        else:
            out = self._keep(node, OrderedDict() if kind == "odict" else {})
        self._fill(out, node, path)
        return out

    def _array(self, node: dict) -> Any:
        key, kind = node["a"], node["t"]
        if key not in self.cache:
            arr = self.arrays[key]
            if kind == "tensor":
                self.cache[key] = _tensor(arr, node.get("rg", False), node.get("param", False))
            else:
                self.cache[key] = arr if kind == "ndarray" else arr[()]
        return self.cache[key]

    def _fill(self, out: Any, node: dict, path: str) -> None:
        """Set ``out[key] = value`` for a dict-like node's pairs (keys decoded first)."""
        for k, v in zip(node["keys"], node["values"]):
            key = self.decode(k, path)
            if self._hashing(path, out.__contains__, key):
                raise self.error(path, "repeats a dict key")
            out[key] = self.decode(v, f"{path}[{_key_label(k)}]")

    def _hashing(self, path: str, fn, arg: Any) -> Any:
        try:
            return fn(arg)
        except TypeError as e:  # an unhashable key or set item
            raise self.error(path, f"{type(e).__name__}: {e}") from e

    def _object(self, node: dict, path: str) -> Any:
        cls = self.globals[node["cls"]]
        name = node["cls"].replace(":", ".")
        if not isinstance(cls, type):
            raise self.error(path, f"{name} is not a class")
        if issubclass(cls, Tensor):  # save writes tensors as "tensor" nodes, never so
            raise self.error(path, f"{name} is a tensor class; tensors are 'tensor' nodes")
        args = [
            self.decode(n, f"{path}.__new__ argument {i}") for i, n in enumerate(node["new_args"])
        ]
        kwargs = self.decode(node["new_kwargs"], path) if "new_kwargs" in node else {}
        if not all(isinstance(k, str) for k in kwargs):
            raise self.error(path, "__new__ keywords must be strings")
        try:
            obj = cls.__new__(cls, *args, **kwargs)
        except Exception as e:
            raise self.error(path, f"{name}.__new__ failed: {type(e).__name__}: {e}") from e
        if not isinstance(obj, cls):
            raise self.error(path, f"{name}.__new__ returned a {type_name(obj)}")
        self._keep(node, obj)
        if "state" in node:
            self._set_state(obj, self.decode(node["state"], f"{path}.state"), name, path)
        try:
            if "listitems" in node:
                obj.extend(self.decode(node["listitems"], f"{path}.listitems"))
            if "dictitems" in node:
                for k, v in self.decode(node["dictitems"], f"{path}.dictitems").items():
                    obj[k] = v
        except Exception as e:
            raise self.error(
                path, f"cannot add the items of {name}: {type(e).__name__}: {e}"
            ) from e
        return obj

    def _set_state(self, obj: Any, state: Any, name: str, path: str) -> None:
        """``__setstate__(state)`` if the class defines one, else pickle's default rule."""
        try:
            if getattr(type(obj), "__setstate__", None) is not None:
                obj.__setstate__(state)
                return
            slots = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slots = state
            for part, what in ((state, "state"), (slots, "slots state")):
                if part is not None and not (
                    type(part) is dict and all(isinstance(k, str) for k in part)
                ):
                    raise self.error(
                        path,
                        f"the {what} of {name} is a {type_name(part)}, not a dict with "
                        "string keys, and the class has no __setstate__",
                    )
            if state:
                obj.__dict__.update(state)
            for k, v in (slots or {}).items():
                setattr(obj, k, v)
        except CheckpointError:
            raise
        except Exception as e:
            raise self.error(
                path, f"cannot set the state of {name}: {type(e).__name__}: {e}"
            ) from e
