"""The engine's one extension seam: every feature that changes how ops record or how the
backward pass runs plugs in here, through the methods of :data:`extensions`.

The engine (``engine.py``) and the op base (``function.py``) own this namespace and read
its fields on their hot paths, one attribute read each (``extensions.anomaly is not
None``); a feature never writes the engine's globals. What plugs in, and where:

============================  =====================================  ===========================
extension point               the feature that uses it               the engine reads it
============================  =====================================  ===========================
tracers                       ``autograd.trace()``, the profiler,    after each node's backward
                              ``explain``
anomaly mode                  ``autograd.detect_anomaly``            each recorded op, each node
saved-tensor hooks            ``autograd.graph.saved_tensors_hooks``  each op that saves arrays
node hooks                    ``grad_fn.register_hook`` / prehook    when a hook is registered
create_graph                  ``autograd/xp.py``'s ``tensor_xp``     each node under create_graph
forward-mode AD               ``autograd.forward_ad`` (dual levels)  each custom ``Function.apply``
type names in messages        ``tinyattn._type_names.type_name``     when an error is raised
============================  =====================================  ===========================

Each feature is off until its module turns it on, so a plain forward and backward pays one
attribute read per op for all of them together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Extensions", "extensions"]


class _SavedHooks(threading.local):
    """The ``saved_tensors_hooks`` in effect in this thread."""

    def __init__(self) -> None:
        self.hooks: list = []  # (pack, unpack) pairs, innermost last
        self.disabled: list = []  # disable_saved_tensors_hooks's messages, innermost last


class Extensions:
    """The extension points of the engine (one instance: :data:`extensions`).

    Fields (read by the engine; changed only through the methods below):

    ``tracers``
        objects with ``_record(node, grad_output, input_grads, seconds)``, told of every
        node the engine runs.
    ``anomaly``
        None, or the anomaly mode in effect: an object with ``check_nan``,
        ``record_forward_stack(node)`` (called by ``Function.apply`` for each recorded op)
        and ``call_backward(node, grad) -> input grads`` (the engine runs each node through it).
    ``saved_hooks`` / ``saved_hooks_active`` / ``pack_saved``
        this thread's ``saved_tensors_hooks`` stack; how many blocks are open in any thread
        (while 0, an op pays one read for the feature); ``pack_saved(node, args, result)``,
        which packs what an op saved.
    ``node_hooks``
        None, or an object with ``register_prehook(node, fn)`` and ``register_hook(node, fn)``
        (``Node.register_prehook`` / ``register_hook`` call it).
    ``tensor_xp``
        None, or the namespace of differentiable ops that backward formulas compute with
        under ``create_graph=True`` (``ctx.xp``).
    ``forward_ad_apply``
        None, or ``f(cls, args, kwargs)`` that a custom ``autograd.Function.apply`` calls
        first while a forward-AD level is active (NotImplemented: apply as usual).
    ``type_name``
        ``type_name(obj) -> str``: how error messages name a type (the full package plugs
        in one that also tells how to convert another library's tensor).
    """

    __slots__ = (
        "tracers",
        "anomaly",
        "saved_hooks",
        "saved_hooks_active",
        "pack_saved",
        "node_hooks",
        "tensor_xp",
        "forward_ad_apply",
        "type_name",
        "_lock",
    )

    def __init__(self) -> None:
        self.tracers: list = []
        self.anomaly: Any = None
        self.saved_hooks = _SavedHooks()
        self.saved_hooks_active = 0
        self.pack_saved: Callable[..., None] | None = None
        self.node_hooks: Any = None
        self.tensor_xp: Any = None
        self.forward_ad_apply: Callable[[type, tuple, dict], Any] | None = None
        self.type_name: Callable[[Any], str] = _qualified_name
        self._lock = threading.Lock()

    # -- tracers ----------------------------------------------------------------------------
    def add_tracer(self, tracer: Any) -> None:
        """Report every node the engine runs to ``tracer._record`` until :meth:`remove_tracer`."""
        self.tracers.append(tracer)

    def remove_tracer(self, tracer: Any) -> None:
        """Stop reporting to ``tracer`` (added by :meth:`add_tracer`)."""
        self.tracers.remove(tracer)

    # -- anomaly mode -----------------------------------------------------------------------
    def set_anomaly_mode(self, mode: Any) -> None:
        """Put anomaly mode ``mode`` in effect (None: off); see the class docstring."""
        self.anomaly = mode

    # -- saved-tensor hooks -----------------------------------------------------------------
    def set_saved_tensors_packer(self, pack_saved: Callable[..., None]) -> None:
        """``pack_saved(node, args, result)``: what ``Function.apply`` calls while hooks are open."""
        self.pack_saved = pack_saved

    def push_saved_tensors_hooks(self, pack: Callable, unpack: Callable) -> None:
        """Open a ``saved_tensors_hooks`` block in this thread (innermost applies)."""
        state = self.saved_hooks
        if state.disabled:
            raise RuntimeError(state.disabled[-1])
        state.hooks.append((pack, unpack))
        with self._lock:
            self.saved_hooks_active += 1

    def pop_saved_tensors_hooks(self) -> None:
        """Close the innermost ``saved_tensors_hooks`` block of this thread."""
        self.saved_hooks.hooks.pop()
        with self._lock:
            self.saved_hooks_active -= 1

    def innermost_saved_tensors_hooks(self) -> tuple | None:
        """This thread's innermost ``(pack, unpack)``, or None when no block is open."""
        if not self.saved_hooks_active:
            return None
        hooks = self.saved_hooks.hooks
        return hooks[-1] if hooks else None

    def disable_saved_tensors_hooks(self, message: str) -> None:
        """Until :meth:`enable_saved_tensors_hooks`, opening a block raises ``message``."""
        self.saved_hooks.disabled.append(message)

    def enable_saved_tensors_hooks(self) -> None:
        """End the innermost :meth:`disable_saved_tensors_hooks`."""
        self.saved_hooks.disabled.pop()

    # -- node hooks, create_graph, forward-mode AD ----------------------------------------
    def set_node_hooks(self, node_hooks: Any) -> None:
        """What ``Node.register_prehook`` / ``register_hook`` call (see the class docstring)."""
        self.node_hooks = node_hooks

    def set_tensor_namespace(self, tensor_xp: Any) -> None:
        """The namespace backward formulas run on under ``create_graph=True``."""
        self.tensor_xp = tensor_xp

    def set_forward_ad_apply(self, apply: Callable[[type, tuple, dict], Any] | None) -> None:
        """What custom ``Function.apply`` calls first (None: forward-mode AD is off)."""
        self.forward_ad_apply = apply

    def set_type_name(self, type_name: Callable[[Any], str]) -> None:
        """How error messages name the type of an object."""
        self.type_name = type_name


def _qualified_name(obj: Any) -> str:
    """``module.QualName`` of ``obj``'s type (or of ``obj``, a class); builtins bare."""
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


extensions = Extensions()
