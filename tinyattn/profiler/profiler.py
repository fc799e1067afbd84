"""The recorder behind ``tinyattn.profiler.profile``: what is timed and how it is hooked.

Three kinds of events are recorded, each with its thread and start/end times:

* every op application: ``Function.apply`` of the array-level base class
  (``tinyattn.autograd.function``) and of torch-style user functions
  (``tinyattn.autograd.Function``). While at least one profile is active, the
  ``apply`` classmethod of each base class is replaced by a timing wrapper; the
  original is put back when the last one exits, so an unprofiled run executes
  exactly the code it did before (no flag is tested on the hot path). An op is
  named as torch names it, ``aten::`` plus the op in snake case (``Matmul`` ->
  ``aten::matmul``, ``ScaledDotProductAttention`` ->
  ``aten::scaled_dot_product_attention``); user functions keep their class name;
* ``record_function(name)`` ranges;
* backward nodes, through the engine's tracer list (the one ``autograd.trace`` uses):
  ``autograd::engine::evaluate_function: MulBackward0`` enclosing ``MulBackward0``.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
import traceback

from ..autograd import custom_function
from ..core import engine
from ..core import function as array_function
from ..core.tensor_base import TensorBase
from ._events import EventList, FunctionEvent

__all__ = ["Recorder", "record_function"]

_lock = threading.Lock()
_active: list[Recorder] = []  # recorders taking events now (all share one clock)
_saved_apply: dict[type, classmethod] = {}  # base class -> its own apply, while hooked
_names: dict[type, str] = {}
_counter = iter(range(1, 1 << 62))  # event ids


def _now_us() -> float:
    return time.perf_counter_ns() / 1000.0


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def op_name(cls: type) -> str:
    """torch's name for an op: ``aten::`` + snake case of its node name without ``Backward0``."""
    name = _names.get(cls)
    if name is None:
        if issubclass(cls, custom_function.Function):
            name = cls.__name__  # a user's function: torch shows its class name
        else:
            base = getattr(cls, "node_name", None) or cls.__name__
            name = "aten::" + _snake(base.removesuffix("Backward0"))
        _names[cls] = name
    return name


def _shapes(args) -> list:
    return [list(a.shape) if isinstance(a, TensorBase) else [] for a in args]


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MODULES = os.path.join(_PACKAGE, "nn", "modules")


def _stack() -> list[str]:
    """The caller's Python frames, innermost first. tinyattn's own frames are left out, as
    torch's ops are C++ and absent from its stacks, except ``nn.modules`` (torch shows
    its modules' ``forward``)."""
    frames = traceback.extract_stack()[:-2]  # (without _stack and its caller in here)
    return [
        f"{f.filename}({f.lineno}): {f.name}"
        for f in reversed(frames)
        if not f.filename.startswith(_PACKAGE) or f.filename.startswith(_MODULES)
    ]


def _record(name: str, start: float, end: float, args=(), out=None, stack=None) -> None:
    thread = threading.get_native_id()
    for recorder in _active:
        if recorder.recording:
            recorder.add(name, thread, start, end, args, out, stack)


def _timed_apply(original):
    """``apply`` of one base class, wrapped: the op runs as before and is recorded."""

    def apply(cls, *args, **kwargs):
        stack = _stack() if any(r.with_stack for r in _active) else None
        start = _now_us()
        out = original(cls, *args, **kwargs)
        _record(op_name(cls), start, _now_us(), args, out, stack)
        return out

    functools.update_wrapper(apply, original)
    return apply


class _BackwardTracer:
    """An engine tracer (``engine.add_tracer``): the engine reports each node it ran, with its time."""

    def _record(self, node, grad_output, input_grads, seconds: float) -> None:
        end = _now_us()
        start = end - seconds * 1e6
        name = node.name()
        _record("autograd::engine::evaluate_function: " + name, start, end)
        _record(name, start, end)


_tracer = _BackwardTracer()


def _hook() -> None:
    for base in (array_function.Function, custom_function.Function):
        original = base.__dict__["apply"]
        _saved_apply[base] = original
        base.apply = classmethod(_timed_apply(original.__func__))
    engine.add_tracer(_tracer)


def _unhook() -> None:
    for base, original in _saved_apply.items():
        base.apply = original
    _saved_apply.clear()
    engine.remove_tracer(_tracer)


class Recorder:
    """The events of one profile; ``start``/``stop`` hook and unhook (shared by profiles)."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False) -> None:
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack = with_stack
        self.recording = False
        self.events: list[FunctionEvent] = []
        self.origin = 0.0

    def add(self, name, thread, start, end, args, out, stack) -> None:
        nbytes = 0
        if self.profile_memory and isinstance(out, TensorBase):
            nbytes = out._data.nbytes
        shapes = _shapes(args) if self.record_shapes else None
        event = FunctionEvent(next(_counter), name, thread, start - self.origin,
                              end - self.origin, shapes, stack, nbytes)  # fmt: skip
        self.events.append(event)

    def start(self) -> None:
        self.origin = _now_us()
        with _lock:
            if not _active:
                _hook()
            _active.append(self)

    def stop(self) -> None:
        with _lock:
            if self in _active:
                _active.remove(self)
                if not _active:
                    _unhook()

    def event_list(self) -> EventList:
        from ._events import link_children

        events = sorted(self.events, key=lambda e: (e.time_range.start, -e.time_range.end))
        link_children(events)
        return EventList(events, profile_memory=self.profile_memory)


class record_function:
    """A named range in the profile (context manager or decorator), as torch's.

    >>> from tinyattn.profiler import profile, record_function
    >>> with profile() as prof:
    ...     with record_function("my_block"):
    ...         pass
    >>> [e.name for e in prof.events()]
    ['my_block']
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args
        self._start = 0.0
        self._stack = None

    def __enter__(self) -> record_function:
        if _active:  # (nothing to do when no profile is running)
            self._stack = _stack() if any(r.with_stack for r in _active) else None
        self._start = _now_us()
        return self

    def __exit__(self, *exc) -> None:
        if _active:
            _record(self.name, self._start, _now_us(), stack=self._stack)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped
