"""``tinyattn.autograd.Function``: torch's custom autograd functions, on Tensors.

A user-defined op, exactly as written for torch::

    class Exp(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):                 # x: a Tensor; runs with grad mode off
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):               # dy: a Tensor; returns one gradient per input
            (y,) = ctx.saved_tensors
            return dy * y

    y = Exp.apply(x)                         # y.grad_fn is <ExpBackward>

How it maps onto the engine. ``apply`` runs ``forward`` on the Tensors themselves
(grad mode off, as torch), then records one :class:`BackwardCFunction` node (the
``ctx`` forward received, and the outputs' ``grad_fn``) whose ``fn`` is an adapter:
when the engine reaches the node, the adapter wraps the incoming gradient arrays
as Tensors, calls the user's ``backward`` with grad mode off and returns its
results as arrays. Under ``create_graph=True`` the engine hands Tensors in and the
adapter runs ``backward`` with grad mode on, so the backward is itself recorded and
a custom function written with differentiable ops has second derivatives (a saved
input is the input Tensor itself, in its graph; a saved output has this node as
``grad_fn``).

The ops inside tinyattn are written one level lower, on NumPy arrays (the
``Function`` of ``core/function.py``): no Tensor is made inside an op, and
their ``backward`` is a formula on arrays. This class is the torch-compatible
front for code that builds new ops out of Tensor operations.

Supported from torch's API: ``ctx.save_for_backward`` / ``saved_tensors`` (with the
in-place modification check), ``ctx.needs_input_grad``, attributes on ``ctx``,
``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``,
several outputs, non-Tensor inputs and outputs, keyword arguments, the
``setup_context`` style (``forward`` without ``ctx``), :func:`once_differentiable`, and
forward-mode AD: a ``jvp`` staticmethod (with ``ctx.save_for_forward``) gives the
outputs' tangents when an input is a dual tensor (``autograd/_custom_jvp.py``).
Differences: a function with several differentiable outputs records one small
node per output in front of its own node (torch has one node with several
outputs), so ``a.grad_fn is b.grad_fn`` is False for two of its outputs (both are
named ``<FnBackward>``); ``vmap`` staticmethods are not used, nor ``jvp`` by
``tinyattn.func.jvp`` (which differentiates ``backward`` twice).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..core import _dtype
from ..core.extensions import extensions as _ext
from ..core.function import Node, OpaqueGrad, leaf_node
from ..core.grad_mode import _state as _grad_mode
from ..core.grad_mode import enable_grad, no_grad
from ..core.tensor_base import TensorBase
from ..foundations.type_names import type_name

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]


class FunctionCtx:
    """The type torch gives ``ctx`` (for ``isinstance`` checks and type hints).

    The ``ctx`` a forward receives is the :class:`BackwardCFunction` node itself.
    """

    __slots__ = ()


class BackwardCFunction(Node, FunctionCtx):
    """The node of one ``Function.apply``: the ``ctx`` of forward, the ``grad_fn`` of outputs."""

    __slots__ = ()

    def save_for_backward(self, *tensors) -> None:
        """Keep Tensors (or None) for ``backward``; it fails if they are modified in place."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, TensorBase):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{i} is of type {type_name(t)}"
                )
        attrs = self.__dict__
        hooks = _ext.innermost_saved_tensors_hooks()
        if hooks:  # autograd.graph.saved_tensors_hooks: packed, not version-checked
            pack, unpack = hooks
            with no_grad():  # (as torch: what a pack hook computes is not recorded)
                attrs["_custom_saved"] = tuple(None if t is None else pack(t) for t in tensors)
            attrs["_custom_versions"] = ()
            attrs["_unpack_hook"] = unpack
            return
        attrs["_custom_saved"] = tensors
        attrs["_custom_versions"] = tuple(None if t is None else t._version.value for t in tensors)

    def save_for_forward(self, *tensors) -> None:
        """Keep Tensors (or None) for ``jvp``: there, ``ctx.saved_tensors`` returns them."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, TensorBase):
                raise AssertionError(  # (torch's type and text, plus which argument)
                    "save_for_forward expects all arguments to be tensors; you should "
                    f"save non-tensors as attributes on ctx. (argument {i} is of type "
                    f"{type_name(t)})"
                )
        self.__dict__["_forward_saved"] = tensors

    @property
    def saved_tensors(self) -> tuple:
        """What ``save_for_backward`` kept (checked against in-place changes since); inside
        ``jvp``, what ``save_for_forward`` kept."""
        attrs = self.__dict__
        if attrs.get("_in_jvp"):
            return tuple(attrs.get("_forward_saved", ()))
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                f"tensors after they have already been freed): {self.name()} released them after "
                "the first backward. Specify retain_graph=True on the first backward() call if "
                "you need to backward twice."
            )
        saved = attrs.get("_custom_saved", ())
        unpack = attrs.get("_unpack_hook")
        if unpack is not None:
            from .graph import _unpacked

            return tuple(None if p is None else _unpacked(unpack, p) for p in saved)
        for t, version in zip(saved, attrs.get("_custom_versions", ())):
            if t is not None and t._version.value != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: {self.name()} saved a "
                    f"{_dtype.from_numpy_dtype(t._data.dtype)} tensor of shape "
                    f"{list(t._data.shape)} at version {version}; it is now at version "
                    f"{t._version.value}. Use an out-of-place op or .clone() it before "
                    "modifying it."
                )
        return tuple(saved)

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place (and returns)."""
        self.__dict__["_dirty"] = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that have no gradient (indices, masks ...)."""
        self.__dict__["_non_differentiable"] = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zeros (default) or None for outputs that got no gradient."""
        self.__dict__["_materialize"] = bool(value)

    def release(self) -> None:
        attrs = self.__dict__
        if attrs.pop("_custom_saved", None) is not None:
            self._mark_released()
        super().release()

    def _mark_released(self) -> None:
        self._released = True  # (keeps its class: attributes on ctx stay readable)


class _MultiGrad(OpaqueGrad):
    """The gradients of a function's several outputs, on their way to its node.

    Each output's small node sends one with one entry filled; the engine adds
    those (``+``) like any gradient, so the node receives all of them at once.
    """

    __slots__ = ("parts",)
    __array_ufunc__ = None  # NumPy defers ``array + _MultiGrad`` to us

    def __init__(self, parts: list) -> None:
        self.parts = parts

    def __add__(self, other: _MultiGrad) -> _MultiGrad:
        return _MultiGrad(
            [a if b is None else b if a is None else a + b for a, b in zip(self.parts, other.parts)]
        )

    __radd__ = __add__
    __iadd__ = __add__


class _SelectOutput:
    """The node in front of output ``index`` of a several-output function (see ``_MultiGrad``)."""

    supports_create_graph = True

    @staticmethod
    def backward(node: Node, grad):
        where = node.__dict__  # (set by _connect)
        parts: list = [None] * where["n_outputs"]
        parts[where["index"]] = grad
        return (_MultiGrad(parts),)


def once_differentiable(backward):
    """Decorate a ``backward`` that cannot itself be differentiated (written on NumPy, say).

    It then always runs with grad mode off; differentiating its result again raises
    (instead of silently giving zero), as in torch.
    """

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            result = backward(ctx, *grads)
        if not (ctx._graph and any(isinstance(g, TensorBase) and g._requires_grad for g in grads)):
            return result  # (torch checks the incoming gradients only)
        return tuple(_error_if_differentiated(ctx, g) for g in _as_tuple(result))

    wrapper._once_differentiable = True  # type: ignore[attr-defined]
    return wrapper


class _DifferentiatedTwice:
    supports_create_graph = True

    @staticmethod
    def backward(node: Node, grad):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )


def _error_if_differentiated(ctx: Node, grad):
    """``grad`` as a Tensor whose node raises when a later backward reaches it.

    As in torch, the node hangs off a detached copy of the value (no path to the
    graph): differentiating with respect to anything upstream finds it unused.
    """
    if not isinstance(grad, TensorBase):
        return grad
    detached = TensorBase._make(grad._data)
    detached._requires_grad = True
    node = Node(_DifferentiatedTwice, "DelayedError")  # type: ignore[arg-type]
    node.next_nodes = (leaf_node(detached),)
    node.input_meta = ((grad._data.shape, grad._data.dtype),)
    return TensorBase._make(grad._data, node)


def _as_tuple(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


class _Backward:
    """The ``fn`` of a user function's node: calls the user's ``backward`` on Tensors."""

    supports_create_graph = True

    @staticmethod
    def backward(ctx: BackwardCFunction, grad) -> tuple:
        attrs = ctx.__dict__
        metas = attrs["_output_meta"]
        if type(grad) is _MultiGrad:
            parts = grad.parts
        else:  # the one differentiable output's gradient
            parts = [None] * len(metas)
            parts[attrs["_only_output"]] = grad
        graph = ctx._graph
        materialize = attrs.get("_materialize", True)
        grads = []
        for g, meta in zip(parts, metas):
            if g is None:
                if materialize and meta is not None:
                    g = np.zeros(meta[0], meta[1])
                    g = TensorBase._make(g)
            elif not isinstance(g, TensorBase):
                g = TensorBase._make(g if type(g) is np.ndarray else np.asarray(g))
            grads.append(g)
        user = attrs["_user_class"]
        if graph:
            with enable_grad():
                result = user.backward(ctx, *grads)
        else:
            with no_grad():
                result = user.backward(ctx, *grads)
        return _check_gradients(ctx, user, _as_tuple(result), graph)


def _check_gradients(ctx: BackwardCFunction, user: type, result: tuple, graph: bool) -> tuple:
    """One gradient per forward input, of a shape that broadcasts to it (torch's checks)."""
    n_inputs = len(ctx.next_nodes)
    name = ctx.name()
    if len(result) != n_inputs:
        if len(result) < n_inputs or any(g is not None for g in result[n_inputs:]):
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients (expected "
                f"{n_inputs}, got {len(result)})"
            )
        result = result[:n_inputs]
    out: list = []
    for i, (g, node) in enumerate(zip(result, ctx.next_nodes)):
        if g is None or node is None:
            out.append(None)
            continue
        if not isinstance(g, TensorBase):
            if isinstance(g, (int, float, np.ndarray, np.number)):
                g = TensorBase._make(np.asarray(g, dtype=ctx.input_meta[i][1]))
            else:
                raise TypeError(
                    f"function {name} returned a gradient of type {type_name(g)} at "
                    f"position {i}; expected a Tensor or None"
                )
        shape = ctx.input_meta[i][0]
        if not _broadcasts_to(shape, g._data.shape):  # (the engine sums it down to shape)
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {i} - got "
                f"{list(g._data.shape)} but expected shape compatible with {list(shape)}"
            )
        out.append(g if graph else g._data)
    return tuple(out)


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (torch's ``is_expandable_to``)."""
    if len(shape) > len(target):
        return False
    return all(n in (1, m) for n, m in zip(shape[::-1], target[::-1]))


class Function:
    """Base class for custom differentiable ops written with Tensor operations (torch's API).

    Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``
    (or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``) and call
    ``MyFn.apply(*args)``. See the module docstring for what is supported.
    """

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method: call MyFunction.apply(...)"
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` with grad mode off and record one node for the outputs.

        Inside a ``forward_ad.dual_level`` with a dual tensor among the inputs, the
        outputs' tangents come from the function's ``jvp`` (see ``forward_ad``).
        """
        forward_ad_apply = _ext.forward_ad_apply  # (set by forward_ad while a level is active)
        if forward_ad_apply is not None:
            result = forward_ad_apply(cls, args, kwargs)
            if result is not NotImplemented:
                return result
        return _apply(cls, args, kwargs)[1]


def _apply(cls: type[Function], args: tuple, kwargs: dict) -> tuple:
    """``(ctx, outputs)``: run ``forward`` with grad mode off, record the node if an input
    requires grad (``ctx`` is the node, or a node left out of the graph if none does)."""
    needs = tuple(isinstance(a, TensorBase) and a._requires_grad for a in args)
    ctx = BackwardCFunction(_Backward, cls.__name__ + "Backward")  # type: ignore[arg-type]
    ctx.needs_input_grad = needs
    new_style = cls.setup_context is not Function.setup_context
    with no_grad():
        if new_style:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args if not kwargs else (*args, *kwargs.values()), output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    if not (_grad_mode.enabled and any(needs)):
        return ctx, output
    return ctx, _connect(ctx, cls, args, needs, output)


def _run_jvp(ctx: BackwardCFunction, cls: type[Function], tangents: list) -> tuple:
    """The user's ``jvp(ctx, *tangents)`` (grad mode on, as torch), as a tuple; inside it
    ``ctx.saved_tensors`` is what ``save_for_forward`` kept."""
    attrs = ctx.__dict__
    attrs["_in_jvp"] = True
    try:
        with enable_grad():
            result = cls.jvp(ctx, *tangents)
    finally:
        attrs.pop("_in_jvp", None)
    return _as_tuple(result)


def _connect(ctx: BackwardCFunction, cls: type, args: tuple, needs: tuple, output):
    """Make ``ctx`` the node of ``output``'s differentiable tensors (one node per output
    in front of it when there are several); return the outputs torch returns."""
    attrs = ctx.__dict__
    attrs["_user_class"] = cls
    ctx.next_nodes = tuple(a._grad_node() if need else None for a, need in zip(args, needs))
    ctx.input_meta = tuple(
        (a._data.shape, a._data.dtype) if need else None for a, need in zip(args, needs)
    )
    outputs = _as_tuple(output)
    frozen = {id(t) for t in attrs.get("_non_differentiable", ())}
    dirty = {id(t) for t in attrs.get("_dirty", ())}
    inputs = {id(a) for a in args if isinstance(a, TensorBase)}
    differentiable = [
        i
        for i, t in enumerate(outputs)
        if isinstance(t, TensorBase) and id(t) not in frozen and t._data.dtype.kind in "fc"
    ]
    # (shape, dtype) of each tensor output: backward gets zeros of it when no gradient came
    attrs["_output_meta"] = [
        (t._data.shape, t._data.dtype) if isinstance(t, TensorBase) else None for t in outputs
    ]
    if len(differentiable) == 1:
        attrs["_only_output"] = differentiable[0]
    result = list(outputs)
    for i in differentiable:
        node: Node = ctx
        if len(differentiable) > 1:  # one small node per output in front of ctx
            node = Node(_SelectOutput, ctx.name())  # type: ignore[arg-type]
            node.next_nodes = (ctx,)
            node.input_meta = ((None, None),)  # (a _MultiGrad passes the engine's fitting)
            node.__dict__.update(index=i, n_outputs=len(outputs))
        result[i] = _as_output(outputs[i], node, id(outputs[i]) in dirty, id(outputs[i]) in inputs)
    return tuple(result) if isinstance(output, tuple) else result[0]


def _as_output(t: TensorBase, node: Node, dirty: bool, is_input: bool) -> TensorBase:
    """The output tensor with ``node`` as its ``grad_fn`` (torch's rules for inputs returned)."""
    if dirty:  # modified in place: the input itself now comes from this node
        if t._grad_fn is None and t._requires_grad:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation."
            )
        t._grad_fn, t._requires_grad = node, True
        return t
    if is_input:  # returned unchanged: a new tensor on the same memory (torch: a view)
        alias = TensorBase._make(t._data, node)
        alias._version = t._version
        return alias
    if t._grad_fn is not None or t._requires_grad:  # (made with grad mode off: rare)
        t = TensorBase._make(t._data)
    t._grad_fn, t._requires_grad = node, True
    return t
