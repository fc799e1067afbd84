"""Forward-mode AD with torch's API: ``dual_level``, ``make_dual``, ``unpack_dual``.

A *dual tensor* pairs a value (the primal ``x``) with a direction (the tangent ``t``);
every tensor computed from it carries the directional derivative ``J t`` of the
computation, read back with ``unpack_dual(y).tangent``::

    with forward_ad.dual_level():
        x_dual = forward_ad.make_dual(x, t)
        y = f(x_dual)
        y_value, jvp = forward_ad.unpack_dual(y)      # jvp = J_f(x) @ t

How it is built here: no op has a forward rule. ``make_dual`` returns a tensor that
is in the reverse-mode graph (an alias of ``x``), and ``unpack_dual(y)`` computes
the tangent when asked, from reverse mode, by the double-vjp trick. With ``u`` a
dummy cotangent shaped like ``y`` (zeros that require grad) and ``d_i`` the dual
tensors of the level that ``y`` depends on::

    g_i(u) = (dy/dd_i)^T u            # autograd.grad(y, d_i, u, create_graph=True): linear in u
    s(u)   = sum_i <g_i(u), t_i>      #  = <u, sum_i J_i t_i>
    ds/du  = sum_i J_i t_i            # the tangent of y: a second reverse pass, w.r.t. u

So each ``unpack_dual`` of a new tensor costs two reverse passes over the graph
between the dual inputs and ``y`` (one recorded); results are cached per tensor
until it is changed in place or the level exits.

What a user sees is torch's: a dual made from a tensor that does not require grad,
and what is computed from it, show ``requires_grad`` False, ``grad_fn`` None,
``is_leaf`` True (``_forward_only.py``: the tensor class answers so for tensors whose
graph reaches only our private leaves), and ``requires_grad_()`` on one makes a leaf
that keeps its tangent. A custom ``autograd.Function``'s ``jvp`` staticmethod gives
its outputs' tangents (``_custom_jvp.py``). Differences from torch that follow from
computing tangents from the graph (see ``docs/higher-order.md``, "Forward mode"):

* ops run under ``no_grad`` are not recorded, so their results have no tangent
  (torch's do): ``make_dual`` warns when called with grad mode off;
* a custom Function with a ``backward`` but no ``jvp`` gets its tangent through its
  ``backward`` (double vjp; torch raises), which must support ``create_graph``;
* the tangent is computed from the graph when asked for: ``unpack_dual`` after a
  ``backward()`` that freed the graph, or after an in-place write to a tensor an op
  saved, raises (torch computed it at the op);
* smaller ones: ``autograd.grad`` of a forward-only tensor runs (torch raises; its
  ``backward()`` raises as torch's), ``repr`` shows no ``tangent=``, ``_base`` of a
  dual of a tensor that does not require grad is None, and a custom Function's
  ``jvp`` cannot be combined with ``mark_dirty``.

What matches torch, besides: one level at a time (nesting raises torch's error), the errors
of ``make_dual`` / ``exit_dual_level``, the tangent of a dual is the tangent given
(the same object when its strides match the primal's, a copy in the primal's layout
otherwise), tangents vanish when the level exits, in-place ops on a dual change
its tangent (``d.mul_(2)``: ``2 t``), and forward-over-reverse: the tangent is
differentiable with respect to tensors that require grad (the primal, parameters,
a tangent that requires grad), so ``unpack_dual(y).tangent.backward()`` works. A
tangent requires grad when torch's does (15 cases tested): also when an op on the way reads, in
torch's forward formula, a tensor that requires grad without depending on it (that
tensor then gets torch's zero gradient; ``_forward_only.link_reads``). A tangent has no
tangent of its own at the level.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
import weakref
from typing import Any, NamedTuple

import numpy as np

from ..core.extensions import extensions
from ..core.function import AccumulateGrad
from ..core.grad_mode import enable_grad, is_grad_enabled
from ..core.tensor_base import TensorBase
from ..foundations.type_names import type_name
from . import _forward_only
from .custom_function import Function

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]

_current_level = -1  # the active level (torch's module global); -1: none


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: ``(primal, tangent)``, by position or by name."""

    primal: Any
    tangent: Any


class _Dual:
    """One ``make_dual``: the tensor, the node gradients w.r.t. it flow into, its tangent."""

    __slots__ = ("ref", "node", "version", "tangent", "source", "private")

    def __init__(self, dual, tangent, source, private: bool) -> None:
        self.ref = weakref.ref(dual)
        self.node = dual._grad_node()  # (its grad_fn; for a leaf, its accumulator)
        self.version = dual._version.value
        self.tangent = tangent
        self.source = source  # the tensor given to make_dual
        self.private = private  # the alias hangs from a leaf of our own (source wants no grad)

    def is_unchanged(self, tensor: Any) -> bool:
        """``tensor`` is this dual, not written in place since ``make_dual``."""
        node = tensor._grad_fn if tensor is not None else None
        return (
            tensor is not None
            and (node if node is not None else tensor._accumulator) is self.node
            and tensor._version.value == self.version
            and self.ref() is tensor
        )


class _Level:
    """The state of the active level: its duals and the tangents computed so far."""

    def __init__(self) -> None:
        self.duals: dict[Any, _Dual] = {}  # capture node -> dual
        self.private_leaves: dict[int, Any] = {}  # the leaves our aliases hang from, by id
        self.cache: dict[int, tuple] = {}  # id(y) -> (weakref y, grad_fn, version, tangent)
        self.primal_nodes: weakref.WeakSet = weakref.WeakSet()  # where the tangent search stops


_levels: dict[int, _Level] = {}


def enter_dual_level() -> int:
    """Enter a forward-AD level and make it the default of the other functions.

    Returns the level (0). Only one level can be active at a time, as in torch:
    entering a second raises ``RuntimeError``.
    """
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    _levels[0] = _Level()
    from ._custom_jvp import apply_custom_function  # (imports this module)

    # (returns the outputs, or NotImplemented when no input has a tangent, or the function
    # has no jvp but a backward: tangents by double vjp)
    extensions.set_forward_ad_apply(apply_custom_function)
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the active level: every tangent of the level is dropped.

    Dual tensors made from tensors that did not require grad become plain tensors
    again (``requires_grad`` False, no ``grad_fn``).
    """
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    state = _levels.pop(level)
    extensions.set_forward_ad_apply(None)
    for dual in state.duals.values():
        tensor = dual.ref()
        if dual.private and tensor is not None and tensor._grad_fn is dual.node:
            tensor._grad_fn = None
            tensor._requires_grad = False
    _current_level = level - 1


class dual_level(contextlib.ContextDecorator):
    """Context manager (or decorator) that enters a forward-AD level and exits it after.

    ``with dual_level(): ...`` returns the level from ``__enter__``; the tangents of
    the level are gone after the block, as in torch. Levels do not nest.
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _active(level: int | None) -> tuple[int, _Level | None]:
    """The level asked for (default: the active one) and its state (None if not active)."""
    if level is None:
        level = _current_level
    return level, _levels.get(level) if level >= 0 else None


def make_dual(tensor, tangent, *, level: int | None = None):
    """A dual tensor: the value of ``tensor`` with ``tangent`` as its forward gradient.

    Parameters
    ----------
    tensor : Tensor, floating point, shape ``S``
        The primal. The result aliases its memory (an in-place write to one shows in
        the other). If it requires grad, the result is a differentiable view of it.
    tangent : Tensor, floating point, shape ``S``
        The direction ``t``. Kept as it is when its strides are the primal's, else
        copied into the primal's layout. Its dtype may differ (as in torch).
    level : int, optional
        The level (default: the active one).

    Returns
    -------
    Tensor, shape ``S``
        Every tensor ``y = f(result)`` then has the tangent ``J_f t``
        (``unpack_dual(y).tangent``). As in torch, it requires grad only if ``tensor``
        does (then its ``grad_fn`` is a ``ViewBackward0``).

    Raises
    ------
    RuntimeError
        No level is active, ``level`` is not the active one, shapes differ, or
        ``tensor`` already has a tangent at this level (it is a dual or computed from one).
    ValueError
        ``tensor`` or ``tangent`` is not floating point (or complex).
    """
    level, state = _active(level)
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if state is None:
        if _current_level < 0:
            raise RuntimeError(
                "Trying to access a forward AD level with an invalid index. This index was "
                "either not created or is already deleted."
            )
        raise RuntimeError("Invalid level given to _make_dual")
    _check_make_dual(tensor, tangent, level, state)
    if not is_grad_enabled():
        warnings.warn(
            "make_dual under no_grad: tinyattn computes tangents from the recorded graph, so "
            "ops run under no_grad will have no tangent (torch's would)",
            stacklevel=2,
        )
    if _layout(tangent._data) != _layout(tensor._data):
        if tangent._requires_grad:  # a recorded copy, so the tangent keeps its graph
            with enable_grad():
                tangent = tangent.clone()  # type: ignore[attr-defined]
        else:
            copy = np.empty_like(tensor._data, dtype=tangent._data.dtype)  # the primal's layout
            copy[...] = tangent._data
            tangent = TensorBase._make(copy)
    return _register(state, tensor, tangent)


def _register(state: _Level, tensor, tangent):
    """A new dual of ``state``: an alias of ``tensor`` (see ``_alias``) with ``tangent``."""
    dual, leaf = _alias(tensor)
    if leaf is not None:
        state.private_leaves[id(leaf)] = leaf
        _forward_only.mark_private(leaf)
    state.duals[dual._grad_fn] = _Dual(dual, tangent, tensor, private=leaf is not None)
    return dual


def _check_make_dual(tensor, tangent, level: int, state: _Level) -> None:
    """torch's checks of ``make_dual``'s arguments (types, dtypes, shapes, no tangent yet)."""
    for name, value in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(value, TensorBase):
            raise TypeError(
                f"make_dual: expected {name} to be a Tensor, but got {type_name(value)}"
            )
        if value._data.dtype.kind not in "fc":
            raise ValueError(
                f"Expected {name} to be floating point or complex, but got: {value.dtype}"  # type: ignore[attr-defined]
            )
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "  # type: ignore[attr-defined]
            f"while the given forward gradient is of size {list(tangent.shape)}."  # type: ignore[attr-defined]
        )
    if _tangent_sources(tensor, state)[0]:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level} is not supported."
        )


def _alias(tensor):
    """``(dual, leaf)``: a non-leaf alias of ``tensor`` in the reverse graph, sharing its
    memory and version counter. From ``tensor`` itself if it requires grad (a view, as
    torch's; leaf None), else from a private leaf (``leaf``): not a view of it, so that
    in-place ops on the dual are allowed, as on torch's."""
    with enable_grad():
        if tensor._requires_grad:
            dual, leaf = tensor.view_as(tensor), None
            dual._grad_fn._name = "ViewBackward0"  # (torch's make_dual is a view)
        else:
            leaf = TensorBase._make(tensor._data)
            leaf._requires_grad = True
            leaf._version = tensor._version
            dual = leaf.view_as(leaf)  # type: ignore[attr-defined]
            dual._base = None
    dual._version = tensor._version
    return dual, leaf


def _layout(a: np.ndarray) -> tuple:
    """Strides in elements (so a float32 tangent can have a float64 primal's layout)."""
    return tuple(s // a.itemsize for s in a.strides)


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level``; ``tangent`` is None if it has none.

    Parameters
    ----------
    tensor : Tensor, shape ``S``
    level : int, optional
        Default: the active level. With no level active the tangent is None.

    Returns
    -------
    UnpackedDualTensor
        ``primal``: the value, without a tangent (it keeps reverse-mode gradients to
        tensors that require grad). ``tangent``, shape ``S``: ``J t`` summed over the
        dual tensors ``tensor`` was computed from (the very tangent given, for a dual
        itself), or None. Computed by two reverse passes (double vjp), then cached.
        It is in the graph (differentiable) when the computation involves tensors
        that require grad, so ``tangent.backward()`` gives forward-over-reverse
        derivatives.
    """
    if not isinstance(tensor, TensorBase):
        raise TypeError(f"unpack_dual(): argument 'tensor' must be Tensor, not {type_name(tensor)}")
    level, state = _active(level)
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if state is None:
        if _current_level >= 0 and _tangent_sources(tensor, _levels[_current_level])[0]:
            raise RuntimeError("Invalid level given to _fw_primal")
        return UnpackedDualTensor(tensor, None)
    duals, real = _tangent_sources(tensor, state)
    primal = _primal(tensor, state, real)
    if not duals or tensor._data.dtype.kind not in "fc":
        return UnpackedDualTensor(primal, None)
    for dual in duals:
        if dual.is_unchanged(tensor):
            return UnpackedDualTensor(primal, dual.tangent)
    return UnpackedDualTensor(primal, _cached_tangent(tensor, state, duals, real))


def _primal(tensor, state: _Level, real: bool):
    """The value of ``tensor`` without a tangent: no graph, or the graph to its source."""
    for dual in state.duals.values():
        if dual.is_unchanged(tensor) and not dual.private:
            with enable_grad():
                return dual.source.view_as(dual.source)
    if not real:
        return tensor.detach()  # type: ignore[attr-defined]
    with enable_grad():
        primal = _Primal.apply(tensor)
    state.primal_nodes.add(primal._grad_fn)
    return primal


class _Computing(threading.local):
    tangent = False  # True while _jvp_by_double_vjp runs its first (recorded) pass


_computing = _Computing()


class _Primal(Function):
    """``primal = y`` for reverse mode; for forward mode, a tensor without a tangent.

    Its backward passes gradients on (``dy = dprimal``), except during the first pass
    of a tangent computation, where it passes none: the tangent search stops here.
    """

    @staticmethod
    def forward(ctx, y):
        return y.view_as(y)

    @staticmethod
    def backward(ctx, g):
        return None if _computing.tangent else g


def _tangent_sources(tensor, state: _Level) -> tuple[list[_Dual], bool]:
    """The duals of ``state`` the graph of ``tensor`` reaches, and whether it reaches a
    leaf that requires grad in the reverse-mode sense (one not made by ``make_dual``)."""
    if not tensor._requires_grad:
        return [], False
    start = (tensor._grad_node(), True)  # (node, whether a tangent can come through it)
    found: list[_Dual] = []
    real = False
    seen = {start}
    stack = [start]
    while stack:
        node, carries = stack.pop()
        dual = state.duals.get(node) if carries else None
        if dual is not None:
            found.append(dual)
        if node.__class__ is AccumulateGrad:
            real = real or id(node.variable) not in state.private_leaves
        # past a primal of unpack_dual, reverse gradients go on but tangents do not
        carries = carries and node not in state.primal_nodes
        for child in node.next_nodes:
            if child is not None and (child, carries) not in seen:
                seen.add((child, carries))
                stack.append((child, carries))
    return found, real


def _cached_tangent(tensor, state: _Level, duals: list[_Dual], real: bool):
    key = id(tensor)
    hit = state.cache.get(key)
    if (
        hit is not None
        and hit[0]() is tensor
        and hit[1] is tensor._grad_fn
        and hit[2] == tensor._version.value
    ):
        return hit[3]
    try:
        tangent = _jvp_by_double_vjp(tensor, duals, real)
    except NotImplementedError as e:  # (a custom Function with jvp but no backward)
        raise NotImplementedError(
            f"unpack_dual: tinyattn computes tangents with backward (double vjp), and {e} "
            "A custom Function's jvp staticmethod is not used: give it a backward."
        ) from e
    except RuntimeError as e:
        if "a second time" not in str(e):
            raise
        raise RuntimeError(
            "unpack_dual: tinyattn computes tangents from the recorded graph, and a backward() "
            "freed it: call unpack_dual before backward(), or backward(retain_graph=True). "
            f"({e})"
        ) from e
    if tangent._grad_fn is not None:  # a tangent has no tangent (nor passes one): as a primal
        name = tangent._grad_fn.name()
        with enable_grad():
            tangent = _Primal.apply(tangent)
        tangent._grad_fn._name = name
        state.primal_nodes.add(tangent._grad_fn)
    elif real and is_grad_enabled():  # (torch's flags)
        tangent = _forward_only.link_reads(
            tangent, tensor._grad_node(), [d.node for d in duals], state.primal_nodes
        )
        if tangent._grad_fn is not None:  # the primals it reads carry no tangent
            state.primal_nodes.add(tangent._grad_fn)
    state.cache[key] = (weakref.ref(tensor), tensor._grad_fn, tensor._version.value, tangent)
    return tangent


def _jvp_by_double_vjp(y, duals: list[_Dual], real: bool):
    """``sum_i J_i t_i`` for ``y``: ``d/du sum_i <(dy/dd_i)^T u, t_i>`` (two reverse passes).

    The second pass records its graph (the tangent is differentiable) when ``real``
    (the graph reaches tensors that require grad) or a tangent requires grad, and
    grad mode is on: forward-over-reverse, as torch's.
    """
    from ..core.engine import run_backward

    differentiable = is_grad_enabled() and (real or any(d.tangent._requires_grad for d in duals))
    with enable_grad():
        u = TensorBase._make(np.zeros(y._data.shape, dtype=y._data.dtype))
        u._requires_grad = True
        nodes = [d.node for d in duals]
        _computing.tangent = True
        try:
            vjps = run_backward(
                [y._grad_node()],
                [u],
                retain_graph=True,
                capture=dict.fromkeys(nodes),
                accumulate=False,
                create_graph=True,
            )
        finally:
            _computing.tangent = False
        total = None
        for dual in duals:
            g = vjps.get(dual.node)
            if not isinstance(g, TensorBase) or not g._requires_grad:
                continue  # no gradient, or one that does not depend on u: no contribution
            t = dual.tangent
            if t._data.dtype != g._data.dtype:
                t = t.to(g.dtype)  # type: ignore[attr-defined]
            term = (g * t).sum()  # type: ignore[attr-defined]
            total = term if total is None else total + term
        if total is None or not total._requires_grad:
            return TensorBase._make(np.zeros(y._data.shape, dtype=y._data.dtype))
        captured = run_backward(
            [total._grad_node()],
            [TensorBase._make(np.ones((), dtype=total._data.dtype))],
            retain_graph=differentiable,
            capture={u._grad_node(): None},
            accumulate=False,
            create_graph=differentiable,
        )
    jt = captured.get(u._grad_node())
    if jt is None:
        return TensorBase._make(np.zeros(y._data.shape, dtype=y._data.dtype))
    if not isinstance(jt, TensorBase):
        return TensorBase._make(np.array(jt, dtype=y._data.dtype))
    if not differentiable:
        return TensorBase._make(np.array(jt._data, dtype=y._data.dtype))
    return jt
