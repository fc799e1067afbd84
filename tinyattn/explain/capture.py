"""Record what the page shows: the forward (values, source lines, names, module paths,
each op's arguments) and one backward pass (the engine's order, every gradient).

While a :class:`Capture` is active it wraps four entry points, and restores them on stop:

* ``TensorBase._make``: every tensor made with a ``grad_fn`` is an op's output; its
  value is copied, with the innermost frame of the learner's code that made it;
* ``Function.apply`` (tinyattn's ops and custom ``autograd.Function``s): the op's
  arguments, so that a node's forward can be run again to check its backward;
* ``nn.Module.__call__``: the module path (``model.attention``) of every op;
* a tracer on the engine (``engine.add_tracer``), as ``autograd.trace()`` uses it:
  each node's incoming gradient and the gradients it sends to its inputs.

Names come from the learner's code: the variables in the frame that calls backward,
and the target of the assignment on the source line that made an op's output.
"""

from __future__ import annotations

import ast
import linecache
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..autograd import custom_function
from ..core import engine
from ..core import function as function_mod
from ..core.function import AccumulateGrad, Node
from ..core.tensor_base import TensorBase

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


@dataclass
class ForwardRecord:
    """What the forward knew about one node: its output and where it was made."""

    seq: int
    value: np.ndarray
    file: str = ""
    line: int = 0
    code: str = ""
    module: str = ""
    name: str = ""
    frame_key: tuple = ()
    fn: Any = None
    args: tuple | None = None
    kwargs: dict = field(default_factory=dict)
    tensor_args: tuple = ()


@dataclass
class StepRecord:
    """One node the engine ran: its incoming gradient and what it sent to each input."""

    node: Node
    grad_output: np.ndarray
    input_grads: list
    seconds: float


def _array(x) -> np.ndarray:
    """An array copy of a gradient or value (a Tensor under create_graph)."""
    if isinstance(x, TensorBase):
        x = x._data
    return np.array(x, copy=True)


# The package's own programs that build models the way a learner would (``python -m
# tinyattn explain demo``): their lines are shown as the learner's code.
_PROGRAMS = (str(Path(_PACKAGE_DIR) / "demo" / "__init__.py"),)


def _library(filename: str) -> bool:
    if filename.startswith("<frozen"):  # (runpy, importlib: running the script, not in it)
        return True
    return filename.startswith(_PACKAGE_DIR) and filename not in _PROGRAMS


def user_frame():
    """The innermost frame outside the tinyattn library: the learner's line."""
    frame = sys._getframe(2)
    while frame is not None and _library(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


_STATEMENTS: dict[str, list] = {}


def assigned_name(filename: str, line: int) -> str:
    """The target of the assignment whose statement holds ``line`` (``P`` for
    ``P = torch.softmax(S, dim=-1)``), or "" (no assignment, or several targets)."""
    if filename not in _STATEMENTS:
        try:
            tree = ast.parse("".join(linecache.getlines(filename)))
        except (SyntaxError, ValueError):
            tree = ast.Module(body=[], type_ignores=[])
        _STATEMENTS[filename] = [
            n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        ]
    best = None
    for stmt in _STATEMENTS[filename]:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            if best is None or stmt.lineno >= best.lineno:
                best = stmt
    if best is None:
        return ""
    targets = best.targets if isinstance(best, ast.Assign) else [best.target]
    if len(targets) != 1 or not isinstance(targets[0], (ast.Name, ast.Attribute)):
        return ""
    return ast.unparse(targets[0])


class Capture:
    """The forward records, module paths and backward steps of one explained run."""

    def __init__(self) -> None:
        self.forward: dict[Node, ForwardRecord] = {}
        self.steps: list[StepRecord] = []
        self.roots: list[tuple[Node, np.ndarray]] = []
        self.second_roots: list[Node] = []
        self.create_graph = False
        self.node_names: dict[Node, str] = {}
        self.leaf_names: dict[int, str] = {}
        self.param_names: dict[int, str] = {}
        self.grads_before: dict[int, np.ndarray | None] = {}
        self.script = ""
        self._module_stack: list[tuple[Any, str]] = []
        self._module_paths: dict[int, str] = {}
        self._saved: dict = {}
        self._busy = False
        self.active = False

    # -- installing the wrappers ------------------------------------------------------------
    def start(self) -> Capture:
        """Begin recording every op and module call (until ``stop``)."""
        from ..nn.modules.module import Module

        if self.active:
            return self
        capture = self
        saved = self._saved
        saved["make"] = TensorBase.__dict__["_make"]
        saved["apply"] = function_mod.Function.__dict__["apply"]
        saved["custom_apply"] = custom_function.Function.__dict__["apply"]
        saved["call"] = Module.__dict__["__call__"]
        make, apply = saved["make"].__func__, saved["apply"].__func__
        custom_apply, call = saved["custom_apply"].__func__, saved["call"]

        def _make(cls, data, grad_fn=None):
            t = make(cls, data, grad_fn)
            if grad_fn is not None and not capture._busy and grad_fn not in capture.forward:
                capture._on_output(grad_fn, t)
            return t

        def _apply(cls, *args, **kwargs):
            out = apply(cls, *args, **kwargs)
            capture._on_apply(cls, out, args, kwargs)
            return out

        def _custom_apply(cls, *args, **kwargs):
            out = custom_apply(cls, *args, **kwargs)
            capture._on_apply(cls, out, args, kwargs)
            return out

        def _call(module, *args, **kwargs):
            capture._enter_module(module)
            try:
                return call(module, *args, **kwargs)
            finally:
                capture._module_stack.pop()

        TensorBase._make = classmethod(_make)  # type: ignore[method-assign,assignment]
        function_mod.Function.apply = classmethod(_apply)  # type: ignore[method-assign,assignment]
        custom_function.Function.apply = classmethod(_custom_apply)  # type: ignore[method-assign,assignment]
        Module.__call__ = _call  # type: ignore[method-assign]
        self.active = True
        return self

    def stop(self) -> None:
        """Restore the wrapped entry points."""
        from ..nn.modules.module import Module

        if not self.active:
            return
        TensorBase._make = self._saved["make"]  # type: ignore[method-assign]
        function_mod.Function.apply = self._saved["apply"]  # type: ignore[method-assign]
        custom_function.Function.apply = self._saved["custom_apply"]  # type: ignore[method-assign]
        Module.__call__ = self._saved["call"]  # type: ignore[method-assign]
        self.active = False

    # -- the forward ------------------------------------------------------------------------
    def _on_output(self, node: Node, tensor) -> None:
        self._busy = True
        try:
            frame = user_frame()
            rec = ForwardRecord(seq=len(self.forward), value=np.array(tensor._data, copy=True))
            if frame is not None:
                rec.file, rec.line = frame.f_code.co_filename, frame.f_lineno
                rec.code = linecache.getline(rec.file, rec.line).strip()
                rec.frame_key = (id(frame), rec.line)
            rec.module = self._module_stack[-1][1] if self._module_stack else ""
            self.forward[node] = rec
        finally:
            self._busy = False

    def _on_apply(self, cls, out, args, kwargs) -> None:
        node = getattr(out, "_grad_fn", None)
        if node is None:
            return
        if node not in self.forward:  # (a custom Function sets its output's grad_fn itself)
            self._on_output(node, out)
        rec = self.forward[node]
        if rec.fn is not None:
            return
        rec.fn = cls
        rec.args = tuple(
            _array(a) if isinstance(a, TensorBase) else a for a in args
        )  # (inputs copied: an in-place change later must not change the check)
        rec.kwargs = dict(kwargs)
        rec.tensor_args = tuple(isinstance(a, TensorBase) for a in args)

    def _enter_module(self, module) -> None:
        if not self._module_stack:
            frame = user_frame()
            root = _name_in_frame(frame, module) or type(module).__name__.lower()
            for name, m in module.named_modules(prefix=root):
                self._module_paths.setdefault(id(m), name)
            for name, p in module.named_parameters(prefix=root):
                self.param_names.setdefault(id(p), name)
        path = self._module_paths.get(id(module))
        if path is None:
            parent = self._module_stack[-1][1] if self._module_stack else ""
            path = f"{parent}.{type(module).__name__}".lstrip(".")
        self._module_stack.append((module, path))

    def assign_names(self) -> None:
        """Name each op output by the assignment on its line: the last op of a line's run."""
        ordered = sorted(self.forward.items(), key=lambda item: item[1].seq)
        for i, (_, rec) in enumerate(ordered):
            nxt = ordered[i + 1][1].frame_key if i + 1 < len(ordered) else None
            if rec.frame_key and rec.frame_key != nxt and not rec.name:
                rec.name = assigned_name(rec.file, rec.line)

    # -- the backward -----------------------------------------------------------------------
    def names_from_frame(self, frame) -> None:
        """The variable names of the frame that calls backward: tensors and their nodes."""
        if frame is None:
            return
        for scope in (frame.f_globals, frame.f_locals):
            for name, value in scope.items():
                if name.startswith("_") or not isinstance(value, TensorBase):
                    continue
                if value._grad_fn is not None:
                    self.node_names[value._grad_fn] = name
                elif value._requires_grad:
                    self.leaf_names[id(value)] = name

    def record_backward(self, roots: list, root_grads: list, run, create_graph: bool):
        """Run ``run()`` (the backward) with a tracer on the engine; return its result."""
        self.create_graph = bool(create_graph)
        self.roots = [(node, _array(g)) for node, g in zip(roots, root_grads)]
        for leaf in _leaves(roots):
            g = leaf.variable._grad
            self.grads_before[id(leaf.variable)] = None if g is None else _array(g)
        tracer = _Tracer(self)
        engine.add_tracer(tracer)
        try:
            return run()
        finally:
            engine.remove_tracer(tracer)


class _Tracer:
    """An engine tracer (the interface ``autograd.trace`` uses) that keeps the arrays."""

    def __init__(self, capture: Capture) -> None:
        self.capture = capture

    def _record(self, node, grad_output, input_grads, seconds: float) -> None:
        fitted = []
        for g, meta in zip(input_grads, node.input_meta):
            if g is None or meta is None or type(g).__name__ == "_MultiGrad":
                fitted.append(None)
                continue
            a = _array(g.materialize() if hasattr(g, "materialize") else g)
            if a.shape != meta[0]:
                a = engine.unbroadcast(a, meta[0])
            fitted.append(a.astype(meta[1], copy=False))
        self.capture.steps.append(StepRecord(node, _array(grad_output), fitted, seconds))


def _leaves(roots: list) -> list[AccumulateGrad]:
    seen: set[int] = set()
    stack, leaves = list(roots), []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaves.append(node)
        stack.extend(node.next_nodes)
    return leaves


def _name_in_frame(frame, obj) -> str:
    if frame is None:
        return ""
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in scope.items():
            if value is obj and not name.startswith("_") and name != "self":
                return name
    return ""


def timer() -> float:
    """A monotonic clock (generation time is reported, never written into the page)."""
    return time.perf_counter()
