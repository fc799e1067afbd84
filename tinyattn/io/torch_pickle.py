"""A pickle interpreter for torch's checkpoint files that imports and calls nothing unlisted.

``weights_only=True`` (the default) runs :class:`WeightsOnlyUnpickler`: the opcodes that
torch's own weights-only loader accepts (protocol 2's data opcodes: containers, ints,
floats, strings, memo, ``GLOBAL``, ``REDUCE``, ``NEWOBJ``, ``BUILD``, ``BINPERSID``) and
no others. ``GLOBAL module name`` never imports ``module``: the name is looked up in
:func:`~tinyattn.io.torch_tensors.torch_globals` (tinyattn's own versions of what torch
allows by default) and then in the user's allowlist (``serialization.add_safe_globals`` /
``safe_globals``); any other name raises torch's "Weights only load failed" error. ``REDUCE``
and ``NEWOBJ`` call only what ``GLOBAL`` gave; ``BUILD`` sets state only on an
``OrderedDict`` or an allowlisted class; ``SETITEM(S)`` only on dicts, ``APPEND(S)`` only on
lists. Every read is checked against the end of the stream first, so a truncated or
damaged stream raises :class:`CheckpointError` instead of reading past it.

``weights_only=False`` runs :class:`TrustedUnpickler` (the standard library's), which
imports any name as pickle does, except that torch's rebuild functions are tinyattn's.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import struct
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from ..foundations.type_names import type_name
from .errors import CheckpointError, WeightsOnlyError

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_UNSAFE_ADVICE = (
    "Re-running `tinyattn.load` with `weights_only` set to `False` will likely succeed, but "
    "it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)


def weights_only_message(detail: str) -> str:
    """torch's "Weights only load failed" text around the interpreter's ``detail``."""
    head = (
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint. \n"
        "\t(1) tinyattn.load's `weights_only` defaults to True, as torch.load's does since "
        f"PyTorch 2.6. {_UNSAFE_ADVICE}\n"
        "\t(2) Alternatively, to load with `weights_only=True` please check the recommended "
        "steps in the following error message.\n\tWeightsUnpickler error: "
    )
    if "was not an allowed global" not in detail:
        head = f"Weights only load failed. {_UNSAFE_ADVICE}\nWeightsUnpickler error: "
    return (
        head + detail + "\n\nCheck the documentation of tinyattn.load to learn more about "
        "types accepted by default with weights_only."
    )


def unsupported_global(full: str) -> str:
    shown = full[len("builtins.") :] if full.startswith("builtins.") else full
    return (
        f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
        f"`tinyattn.serialization.add_safe_globals([{shown}])` or the "
        f"`tinyattn.serialization.safe_globals([{shown}])` context manager to allowlist this "
        "global if you trust this class/function."
    )


def _canonical(module: str, name: str) -> tuple[str, str]:
    """Python 2 names in protocol 2 streams (``__builtin__ set``) as Python 3's."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class WeightsOnlyUnpickler:
    """Runs one pickle stream with the allowlist; see the module docstring."""

    def __init__(
        self,
        data: bytes,
        where: str,
        known: dict[str, Any],
        user: dict[str, Any],
        persistent_load: Callable[[Any], Any],
    ) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.where = where  # "tinyattn.load: 'f.pt': entry 'archive/data.pkl'"
        self.known = known  # torch's default allowlist, as tinyattn objects
        self.user = user  # "module.qualname" -> object, from add_safe_globals
        self.allowed_ids = {id(v) for v in (*known.values(), *user.values())}
        self.user_types = tuple(v for v in user.values() if isinstance(v, type))
        self.persistent_load = persistent_load
        self.stack: list = []
        self.marks: list[list] = []
        self.memo: dict[int, Any] = {}

    def error(self, what: str) -> CheckpointError:
        return CheckpointError(f"{self.where}, byte {self.pos}: {what}")

    def refuse(self, detail: str) -> WeightsOnlyError:
        """torch's message first (as code written for torch expects), then where it was."""
        where = f"\n\n(in {self.where}, byte {self.pos})"
        return WeightsOnlyError(weights_only_message(detail) + where)

    def read(self, n: int) -> memoryview:
        if n > len(self.data) - self.pos:
            raise self.error(f"the pickle stream ends inside an opcode (needs {n} more bytes)")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def line(self) -> str:
        end = bytes(self.data[self.pos : self.pos + 512]).find(b"\n")
        if end < 0:
            raise self.error("a GLOBAL name is not ended by a newline within 512 bytes")
        text = bytes(self.read(end + 1))[:-1]
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            raise self.error(f"a GLOBAL name is not UTF-8: {text!r}") from None

    def pop(self) -> Any:
        if not self.stack:
            raise self.error("an opcode pops from an empty stack")
        return self.stack.pop()

    def top(self) -> Any:
        if not self.stack:
            raise self.error("an opcode needs a value on an empty stack")
        return self.stack[-1]

    def pop_mark(self) -> list:
        if not self.marks:
            raise self.error("an opcode expects a MARK that was never set")
        items, self.stack = self.stack, self.marks.pop()
        return items

    def load(self) -> Any:
        """Run the stream to its STOP; the value it built."""
        ops = _OPCODES
        while True:
            code = self.read(1)[0]
            if code == 0x2E:  # STOP
                value = self.pop()
                if self.stack or self.marks:
                    raise self.error("STOP with values left on the stack")
                return value
            handler = ops.get(code)
            if handler is None:
                raise self.refuse(f"Unsupported operand {code}")
            try:
                handler(self)
            except CheckpointError:
                raise
            except RecursionError:
                raise self.error("objects nested too deeply") from None
            except Exception as e:  # a call or a container operation on bad values
                raise self.error(f"{type(e).__name__}: {e}") from e

    # -- the risky opcodes -------------------------------------------------------------
    def op_global(self) -> None:
        module, name = _canonical(self.line(), self.line())
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise self.refuse(
                f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked."
            )
        if full in self.known:
            self.stack.append(self.known[full])
        elif full in self.user:
            self.stack.append(self.user[full])
        else:
            raise self.refuse(unsupported_global(full))

    def op_reduce(self) -> None:
        args, func = self.pop(), self.top()
        if id(func) not in self.allowed_ids or not callable(func):
            raise self.refuse(f"Trying to call reduce for unrecognized function {func!r}")
        if not isinstance(args, tuple):
            raise self.error(f"REDUCE arguments are a {type_name(args)}, not a tuple")
        self.stack[-1] = func(*args)

    def op_newobj(self) -> None:
        args, cls = self.pop(), self.pop()
        from ..nn.parameter import Parameter  # nn imports the package: import late

        if not isinstance(args, tuple):
            raise self.error(f"NEWOBJ arguments are a {type_name(args)}, not a tuple")
        if cls is Parameter:
            self.stack.append(Parameter(*args))
        elif isinstance(cls, type) and cls in self.user_types:
            self.stack.append(cls.__new__(cls, *args))
        else:
            raise self.refuse(
                "Can only create new object for nn.Parameter or classes allowlisted via "
                f"`add_safe_globals` but got {cls!r}"
            )

    def op_build(self) -> None:
        state, inst = self.pop(), self.top()
        if type(inst) is OrderedDict and isinstance(state, dict):
            inst.__dict__.update(state)
        elif type(inst) in self.user_types:
            if getattr(inst, "__setstate__", None) is not None:
                inst.__setstate__(state)
                return
            slots = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slots = state
            if state:
                inst.__dict__.update(state)
            for k, v in (slots or {}).items():
                setattr(inst, k, v)
        else:
            raise self.refuse(
                "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                f"`add_safe_globals`, but got {type(inst)}"
            )

    def op_persid(self) -> None:
        pid = self.pop()
        if type(pid) is not tuple or not pid or pid[0] != "storage":
            raise self.refuse(f"Only persistent_load of storage is allowed, but got {pid!r}")
        self.stack.append(self.persistent_load(pid))

    # -- containers ----------------------------------------------------------------------
    def op_mark(self) -> None:
        self.marks.append(self.stack)
        self.stack = []

    def op_setitem(self) -> None:
        value, key = self.pop(), self.pop()
        self._dict_target("SETITEM")[key] = value

    def op_setitems(self) -> None:
        items = self.pop_mark()
        target = self._dict_target("SETITEMS")
        if len(items) % 2:
            raise self.error("SETITEMS with an odd number of values")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _dict_target(self, op: str) -> dict:
        target = self.top()
        if type(target) not in (dict, OrderedDict, Counter):
            raise self.refuse(
                f"Can only {op} for dict, collections.OrderedDict, collections.Counter, but "
                f"got {type(target)}"
            )
        return target

    def op_append(self) -> None:
        item = self.pop()
        self._list_target("append").append(item)

    def op_appends(self) -> None:
        items = self.pop_mark()
        self._list_target("extend").extend(items)

    def _list_target(self, verb: str) -> list:
        target = self.top()
        if type(target) is not list:
            raise self.refuse(f"Can only {verb} to lists, but got {type(target)}")
        return target

    def op_tuple(self) -> None:
        items = tuple(self.pop_mark())  # before reading self.stack: pop_mark replaces it
        self.stack.append(items)

    def op_tuple_n(self, n: int) -> None:
        if len(self.stack) < n:
            raise self.error(f"TUPLE{n} with {len(self.stack)} values on the stack")
        items = tuple(self.stack[len(self.stack) - n :])
        del self.stack[len(self.stack) - n :]
        self.stack.append(items)

    # -- memo ----------------------------------------------------------------------------
    def op_get(self, width: int) -> None:
        key = self._index(width)
        if key not in self.memo:
            raise self.error(f"memo entry {key} is read before it is written")
        self.stack.append(self.memo[key])

    def op_put(self, width: int) -> None:
        self.memo[self._index(width)] = self.top()

    def _index(self, width: int) -> int:
        return self.read(1)[0] if width == 1 else struct.unpack("<I", self.read(4))[0]

    # -- scalars -------------------------------------------------------------------------
    def op_unicode(self) -> None:
        (n,) = struct.unpack("<I", self.read(4))
        try:
            self.stack.append(str(self.read(n), "utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            raise self.error("a string is not valid UTF-8") from None

    def op_short_binstring(self) -> None:
        raw = bytes(self.read(self.read(1)[0]))
        try:
            self.stack.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise self.error("a string is not valid UTF-8") from None

    def op_long1(self) -> None:
        raw = bytes(self.read(self.read(1)[0]))
        self.stack.append(int.from_bytes(raw, "little", signed=True))

    def op_proto(self) -> None:
        if self.read(1)[0] > pickle.HIGHEST_PROTOCOL:
            raise self.error("unsupported pickle protocol")


def _push(value_of: Callable[[WeightsOnlyUnpickler], Any]) -> Callable:
    return lambda u: u.stack.append(value_of(u))


_U = WeightsOnlyUnpickler
_OPCODES: dict[int, Callable[[WeightsOnlyUnpickler], None]] = {
    ord("c"): _U.op_global,
    ord("R"): _U.op_reduce,
    0x81: _U.op_newobj,
    ord("b"): _U.op_build,
    ord("Q"): _U.op_persid,
    ord("("): _U.op_mark,
    ord("s"): _U.op_setitem,
    ord("u"): _U.op_setitems,
    ord("a"): _U.op_append,
    ord("e"): _U.op_appends,
    ord("t"): _U.op_tuple,
    0x85: lambda u: u.op_tuple_n(1),
    0x86: lambda u: u.op_tuple_n(2),
    0x87: lambda u: u.op_tuple_n(3),
    ord("h"): lambda u: u.op_get(1),
    ord("j"): lambda u: u.op_get(4),
    ord("q"): lambda u: u.op_put(1),
    ord("r"): lambda u: u.op_put(4),
    ord("X"): _U.op_unicode,
    ord("U"): _U.op_short_binstring,
    0x8A: _U.op_long1,
    0x80: _U.op_proto,
    ord("N"): _push(lambda u: None),
    0x89: _push(lambda u: False),
    0x88: _push(lambda u: True),
    ord(")"): _push(lambda u: ()),
    ord("]"): _push(lambda u: []),
    ord("}"): _push(lambda u: {}),
    0x8F: _push(lambda u: set()),
    ord("J"): _push(lambda u: struct.unpack("<i", u.read(4))[0]),
    ord("K"): _push(lambda u: u.read(1)[0]),
    ord("M"): _push(lambda u: struct.unpack("<H", u.read(2))[0]),
    ord("G"): _push(lambda u: struct.unpack(">d", u.read(8))[0]),
}


class TrustedUnpickler(pickle.Unpickler):
    """``weights_only=False``: the standard unpickler, with torch's names mapped to tinyattn's."""

    def __init__(
        self, data: Any, known: dict[str, Any], persistent_load: Callable[[Any], Any], start: int
    ) -> None:
        self.stream = io.BytesIO(data)
        self.stream.seek(start)
        super().__init__(self.stream, encoding="utf-8")
        self.known = known
        self._persistent = persistent_load

    def find_class(self, module: str, name: str) -> Any:
        full = ".".join(_canonical(module, name))
        if full in self.known:
            return self.known[full]
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent(pid)
