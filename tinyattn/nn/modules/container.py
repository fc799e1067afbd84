"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``Identity``."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterable

from ...foundations.type_names import type_name
from ..parameter import Parameter
from .module import Module


class Identity(Module):
    """Returns its input unchanged (accepts and ignores constructor arguments, as torch)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        """Return ``input`` itself. ``d input = g``."""
        return input


class Sequential(Module):
    """Modules applied in order: ``Sequential(a, b)(x) == b(a(x))``."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def _get_item_by_idx(self, iterator, idx: int):
        """The ``idx``-th item (negative from the end) of ``iterator``, one of this
        container's views (``_modules.values()`` or ``.keys()``)."""
        return list(iterator)[_index(idx, len(self))]

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(self._get_item_by_idx(self._modules.keys(), idx), module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]:
            del self._modules[key]
        items = list(self._modules.values())  # renumbered, as torch (append uses len)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put ``module`` before position ``index`` (the later ones are renumbered)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        items = list(self._modules.values())
        n = len(items)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        items.insert(index % (n + 1) if index < 0 else index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)
        return self

    def extend(self, sequential) -> Sequential:
        """Append every module of ``sequential`` (any iterable of modules)."""
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key: int | slice) -> Module:
        """Remove and return the module at ``key``."""
        module = self[key]
        del self[key]
        return module

    def forward(self, input):
        """``input`` through each child module in order: ``m_n(...m_2(m_1(input)))``.

        The gradient is the chain rule through the children, last to first:
        ``d input = J_1^T (J_2^T (... J_n^T g))``, each ``J_i`` the Jacobian of child i.
        """
        for module in self._modules.values():
            input = module(input)
        return input


def _index(idx: int, n: int) -> int:
    idx = int(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for a container of length {n}")
    return idx % n


class ModuleList(Module):
    """A list of modules whose parameters are registered (``clones`` in the Annotated Transformer)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _get_abs_string_index(self, idx: int) -> str:
        """The registration name of index ``idx`` (negative from the end)."""
        return str(_index(idx, len(self)))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[self._get_abs_string_index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(self._get_abs_string_index(idx), module)

    def __delitem__(self, idx) -> None:
        items = list(self._modules.values())
        del items[idx]
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def pop(self, key: int | slice) -> Module:
        """Remove and return the module at ``key`` (the later ones are renumbered)."""
        module = self[key]
        del self[key]
        return module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __repr__(self) -> str:
        """As torch prints it: a run of children that print alike is one line,
        ``(0-5): 6 x TransformerEncoderLayer(...)``."""
        if not self._modules:
            return self._get_name() + "()"
        lines, first = [], 0
        for text, run in itertools.groupby(repr(m) for m in self):
            n = len(list(run))
            label = f"({first}): " if n == 1 else f"({first}-{first + n - 1}): {n} x "
            lines.append((label + text).replace("\n", "\n  "))
            first += n
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules whose parameters are registered."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self.add_module(key, module)


class ParameterList(Module):
    """A list of parameters, registered under "0", "1", ..."""

    def __init__(self, values=None) -> None:
        super().__init__()
        for v in values or []:
            self.append(v)

    def _get_abs_string_index(self, idx: int) -> str:
        """The registration name of index ``idx`` (negative from the end)."""
        return str(_index(idx, len(self)))

    def __getitem__(self, idx: int) -> Parameter:
        return self._parameters[self._get_abs_string_index(idx)]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value) -> ParameterList:
        if not isinstance(value, Parameter):
            value = Parameter(value)
        self.register_parameter(str(len(self)), value)
        return self

    def extend(self, values) -> ParameterList:
        """Append each of ``values``."""
        for value in values:
            self.append(value)
        return self


class ParameterDict(Module):
    """A dict of parameters."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        for k, v in (parameters or {}).items():
            self[k] = v

    def _key_to_attr(self, key: str) -> str:
        """The registration name of ``key``; ``TypeError`` unless it is a string, as torch."""
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type_name(key)}')."
            )
        return key

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[self._key_to_attr(key)]

    def __setitem__(self, key: str, value) -> None:
        value = value if isinstance(value, Parameter) else Parameter(value)
        self.register_parameter(self._key_to_attr(key), value)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def get(self, key: str, default=None):
        """The parameter under ``key``, or ``default``."""
        return self._parameters.get(key, default)

    def setdefault(self, key: str, default=None):
        """The parameter under ``key``, first set to ``default`` if absent."""
        if key not in self._parameters:
            self[key] = default
        return self[key]

    def pop(self, key: str):
        """Remove and return the parameter under ``key``."""
        return self._parameters.pop(key)

    def popitem(self) -> tuple:
        """Remove and return the last ``(key, parameter)``."""
        return self._parameters.popitem()

    def clear(self) -> None:
        """Remove every parameter."""
        self._parameters.clear()

    def update(self, parameters) -> None:
        """Set every ``key, value`` of ``parameters`` (a mapping or pairs)."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(dict(self._parameters))

    def fromkeys(self, keys, default=None) -> ParameterDict:
        """A new ParameterDict with each of ``keys`` set to (a new Parameter of) ``default``."""
        return ParameterDict({key: default for key in keys})
