"""Writing side of ``tinyattn.save``'s format: an object tree becomes JSON nodes plus arrays.

Containers, numbers, strings, tensors and arrays have node types of their own (see
``serialization``'s docstring). Any other object is stored the way pickle's protocol 2
describes it, but as data: ``obj.__reduce_ex__(2)`` must be the standard form
``(copyreg.__newobj__, (cls, *args), state, listitems, dictitems)`` (or
``__newobj_ex__`` with keyword arguments), and becomes::

    {"t": "object", "cls": "module:qualname", "new_args": [...], "state": <node>}

Classes and functions met as values become ``{"t": "global", "name": "module:qualname"}``,
and only names that import back to the same object are accepted (a lambda, a class or
function defined inside a function, or a bound method raises ``TypeError`` naming where
in the tree it was met, as pickle fails on them too).

An object, list, dict or set met twice is written once; the later occurrences are
``{"t": "ref", "m": n}`` and the first one carries ``"m": n``. Because a container or
an object is registered before its contents are written (and the reader registers it
before decoding them), tied weights, a submodule used twice and cycles come back as
the same object. Only a tuple, a frozenset or an object's constructor arguments cannot
contain themselves (they exist only once built), which pickle also refuses in its way.
"""

from __future__ import annotations

import copyreg
import importlib
import sys
import types
from collections import OrderedDict, defaultdict
from typing import Any

import numpy as np

from ..core._dtype import dtype
from ..core.device import device
from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .native_reader import _ARRAY_DTYPES, _MAX_DEPTH

_CONTAINERS = {
    list: "list",
    tuple: "tuple",
    dict: "dict",
    OrderedDict: "odict",
    defaultdict: "defaultdict",
    set: "set",
    frozenset: "frozenset",
}
_BUILT_AFTER_CONTENTS = ("tuple", "frozenset")  # cannot be referred to from inside
_MODULE_DICTS = ("_modules", "_parameters", "_buffers")


def global_name(obj: Any, path: str) -> str:
    """``"module:qualname"`` of a class or function that imports back as ``obj``.

    Raises
    ------
    TypeError
        ``obj`` is a lambda, a local (nested) class or function, a bound method, or is
        not found under its own ``__module__`` and ``__qualname__``.
    """
    what = "class" if isinstance(obj, type) else "function" if callable(obj) else "object"
    owner = getattr(obj, "__self__", None)
    if isinstance(obj, types.MethodType) or not (
        owner is None or isinstance(owner, types.ModuleType)
    ):
        raise TypeError(
            f"tinyattn.save: cannot save {path}: {obj!r} is a bound method; only classes "
            "and functions defined at the top level of a module can be saved (pickle "
            "fails here too)"
        )
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise TypeError(f"tinyattn.save: cannot save {path}: the {what} {obj!r} has no module name")
    if "<lambda>" in qualname:
        raise TypeError(
            f"tinyattn.save: cannot save {path}: it is a lambda function ({module}.{qualname}); "
            "only classes and functions defined at the top level of a module can be saved "
            "(pickle fails here too): use a def at module level"
        )
    if "<locals>" in qualname:
        raise TypeError(
            f"tinyattn.save: cannot save {path}: the {what} {module}.{qualname} is defined "
            "inside a function; only classes and functions defined at the top level of a "
            "module can be saved (pickle fails here too)"
        )
    found: Any = None
    try:
        found = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:
        found = None
    if found is not obj:
        raise TypeError(
            f"tinyattn.save: cannot save {path}: the {what} {obj!r} is not importable as "
            f"{module}.{qualname} (pickle fails here too)"
        )
    return f"{module}:{qualname}"


def _reduce(obj: Any, path: str) -> tuple | None:
    """``(cls, new_args, new_kwargs, state, listitems, dictitems)`` from ``__reduce_ex__(2)``.

    None when the object reduces to a string: pickle then stores it as a global by name.
    """
    name = type(obj).__qualname__
    try:
        rv = obj.__reduce_ex__(2)
    except Exception as e:
        raise TypeError(
            f"tinyattn.save: cannot save {path}: objects of type {name} cannot be saved "
            f"({type(e).__name__}: {e}); tinyattn does not pickle"
        ) from e
    if isinstance(rv, str):
        return None
    fn, args = (rv[0], rv[1]) if isinstance(rv, tuple) and 2 <= len(rv) <= 6 else (None, ())
    state, listitems, dictitems, setter = (tuple(rv[2:]) + (None,) * 4)[:4]
    if fn is copyreg.__newobj__ and args and isinstance(args[0], type):
        cls, new_args, new_kwargs = args[0], tuple(args[1:]), {}
    elif fn is copyreg.__newobj_ex__ and len(args) == 3 and isinstance(args[0], type):
        cls, new_args, new_kwargs = args
    else:
        raise TypeError(
            f"tinyattn.save: cannot save {path}: objects of type {name} are not supported: "
            f"they reduce to {fn!r}, not to their class plus a state (tinyattn stores an "
            "object as cls.__new__(cls, *args) and its __dict__/__setstate__ state; it does "
            "not pickle)"
        )
    if setter is not None:
        raise TypeError(f"tinyattn.save: cannot save {path}: {name} uses a state setter function")
    if state is not None and getattr(cls, "__setstate__", None) is None and not _plain_state(state):
        raise TypeError(
            f"tinyattn.save: cannot save {path}: the state of {name} is a "
            f"{type_name(state)}, not a dict or a (dict, slots dict) pair, and the class "
            "has no __setstate__"
        )
    return cls, new_args, dict(new_kwargs), state, listitems, dictitems


def _plain_state(state: Any) -> bool:
    """A state ``__dict__.update`` (and setattr for slots) can apply: dict or (dict, dict)."""
    if isinstance(state, tuple) and len(state) == 2:
        return all(s is None or type(s) is dict for s in state)
    return type(state) is dict


class Encoder:
    """Walks the object tree: arrays go to ``self.arrays``, the structure to JSON nodes."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.array_keys: dict[int, str] = {}  # id(tensor or array) -> array key
        self.nodes: dict[int, dict] = {}  # id(container or object) -> its node
        self.keep: list = []  # keep memoised objects alive so ids stay unique
        self.building: set[int] = set()  # tuples / constructor args not built yet
        self.refs = 0

    def _array(self, obj, data: np.ndarray, path: str) -> str:
        if id(obj) in self.array_keys:
            return self.array_keys[id(obj)]
        if data.dtype.str not in _ARRAY_DTYPES:
            raise TypeError(
                f"tinyattn.save: cannot save {path}: arrays of dtype {data.dtype} "
                f"({data.dtype.str}) are not supported (supported: bool, integer, float and "
                "complex in the machine's byte order; objects would need pickle, which "
                "tinyattn never uses)"
            )
        key = f"a{len(self.arrays)}"
        self.arrays[key] = data
        self.array_keys[id(obj)] = key
        self.keep.append(obj)
        return key

    def _register(self, obj: Any, node: dict) -> dict:
        self.nodes[id(obj)] = node
        self.keep.append(obj)
        return node

    def _ref(self, obj: Any, path: str) -> dict:
        if id(obj) in self.building:
            raise TypeError(
                f"tinyattn.save: cannot save {path}: it contains itself through a tuple, a "
                "frozenset or its own constructor arguments"
            )
        node = self.nodes[id(obj)]
        if "m" not in node:
            node["m"] = self.refs
            self.refs += 1
        return {"t": "ref", "m": node["m"]}

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
        if type(obj) is bytes:
            return {"t": "bytes", "v": obj.hex()}
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, np.ndarray):
            return {"t": "ndarray", "a": self._array(obj, obj, path)}
        if isinstance(obj, np.generic):
            return {"t": "npscalar", "a": self._array(obj, np.asarray(obj), path)}
        if isinstance(obj, dtype):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, device):
            return {"t": "device", "v": "cpu"}
        if id(obj) in self.nodes:
            return self._ref(obj, path)
        if type(obj) in _CONTAINERS:
            return self._container(obj, path, depth)
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            return {"t": "global", "name": global_name(obj, path)}
        reduced = _reduce(obj, path)
        if reduced is None:  # reduces to its own name, as pickle's globals (np.mean ...)
            return {"t": "global", "name": global_name(obj, path)}
        return self._object(obj, reduced, path, depth)

    def _tensor(self, obj: Tensor, path: str) -> dict:
        node = {"t": "tensor", "a": self._array(obj, obj._data, path)}
        # torch restores requires_grad and the Parameter class: a learner's
        # ``W = randn(..., requires_grad=True)`` must keep training after a reload.
        if obj.requires_grad:
            node["rg"] = True
        from ..nn.parameter import Parameter  # nn imports the package: import late

        if isinstance(obj, Parameter):
            node["param"] = True
        return node

    def _container(self, obj: Any, path: str, depth: int, attrs: bool = False) -> dict:
        kind = _CONTAINERS[type(obj)]
        node = self._register(obj, {"t": kind})
        if kind in _BUILT_AFTER_CONTENTS:
            self.building.add(id(obj))
        if kind == "defaultdict":
            node["factory"] = self.encode(obj.default_factory, f"{path}.default_factory", depth + 1)
        if isinstance(obj, dict):
            node["keys"], node["values"] = [], []
            for k, v in obj.items():
                node["keys"].append(self.encode(k, f"{path}.keys()", depth + 1))
                where = f"{path}.{k}" if attrs else f"{path}[{k!r}]"
                node["values"].append(self.encode(v, where, depth + 1))
        else:
            items = obj if kind in ("list", "tuple") else sorted(obj, key=_set_order)
            node["items"] = [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items)]
        self.building.discard(id(obj))
        return node

    def _object(self, obj: Any, reduced: tuple, path: str, depth: int) -> dict:
        cls, new_args, new_kwargs, state, listitems, dictitems = reduced
        node = self._register(obj, {"t": "object", "cls": global_name(cls, f"{path}'s class")})
        self.building.add(id(obj))
        node["new_args"] = [
            self.encode(a, f"{path}.__new__ argument {i}", depth + 1)
            for i, a in enumerate(new_args)
        ]
        if new_kwargs:
            node["new_kwargs"] = self.encode(new_kwargs, f"{path}.__new__ keywords", depth + 1)
        self.building.discard(id(obj))
        if state is not None:
            node["state"] = self._state(state, path, depth + 1)
        if listitems is not None:
            node["listitems"] = self.encode(list(listitems), f"{path} items", depth + 1)
        if dictitems is not None:
            node["dictitems"] = self.encode(dict(dictitems), f"{path} items", depth + 1)
        return node

    def _state(self, state: Any, path: str, depth: int) -> dict:
        """An object's state; its attributes read as ``path.name`` in error messages."""
        if type(state) is not dict or id(state) in self.nodes:
            return self.encode(state, f"{path}.__getstate__()", depth)
        node = self._register(state, {"t": "dict", "keys": [], "values": []})
        for k, v in state.items():
            node["keys"].append(self.encode(k, f"{path}.__dict__ keys", depth + 1))
            if k in _MODULE_DICTS and type(v) in (dict, OrderedDict) and id(v) not in self.nodes:
                # a module's children read as obj.blocks.2.fn, as named_modules names them
                node["values"].append(self._container(v, path, depth + 1, attrs=True))
            else:
                node["values"].append(self.encode(v, f"{path}.{k}", depth + 1))
        return node


def _set_order(item: Any) -> tuple:
    """Sets are written sorted where their items compare, so equal sets give equal files."""
    return (type(item).__name__, item if isinstance(item, (int, float, str)) else id(item))
