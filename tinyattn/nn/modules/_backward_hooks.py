"""Module backward hooks: ``register_full_backward_hook`` and ``register_full_backward_pre_hook``.

How they work, in tinyattn's own terms. When a module with backward hooks is called with
grad mode on, :class:`ModuleBackwardHooks` puts an identity op, :class:`BackwardHookFunction`,
on each side of ``forward``:

* on the way in, the tensor arguments pass through one identity node. In the backward
  pass this node receives, all at once, the gradients w.r.t. the module's inputs: it calls
  the full backward hooks ``hook(module, grad_input, grad_output)`` with them, and what a
  hook returns replaces ``grad_input``;
* on the way out, the output tensors pass through another identity node. It receives the
  gradients w.r.t. the outputs first: it calls the pre-hooks ``hook(module, grad_output)``
  (a returned tuple replaces ``grad_output``) and keeps ``grad_output`` for the full hooks.

The nodes are ordinary custom ``autograd.Function`` nodes, so the engine needs no change.
As in torch: ``grad_input`` has one entry per positional argument (None for a non-tensor;
zeros for a tensor that does not require grad or got no gradient), keyword arguments are
not included; ``grad_output`` has one entry per output tensor (None for an output that got
no gradient). When no input requires grad, the full hooks run from the output node with
``grad_input`` all None. Outputs other than a tensor or a tuple of tensors get no hooks
(a warning says so). The outputs and the inputs ``forward`` sees are views made by a custom
function, so modifying them in place raises, as torch's.

The deprecated ``register_backward_hook`` hooks are called like full hooks here (torch
passes them the gradients of the last op's inputs instead, which depend on torch's op
decomposition).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ...autograd.custom_function import Function
from ...core.tensor_base import TensorBase
from ...foundations.type_names import type_name
from ._hooks import RemovableHandle, add_hook

# hooks every module runs (``register_module_full_backward_hook`` ...), before its own
global_backward_hooks: OrderedDict = OrderedDict()
global_backward_pre_hooks: OrderedDict = OrderedDict()
global_non_full_backward_hooks: OrderedDict = OrderedDict()


class BackwardHookFunction(Function):
    """Identity on ``tensors``; its backward hands the incoming gradients to ``on_backward``
    and returns what it gives back (a tuple of the same length). ``zeros_for_missing``: an
    output that got no gradient is handed zeros (else None)."""

    @staticmethod
    def forward(
        ctx: Any, on_backward: Callable, zeros_for_missing: bool, *tensors: TensorBase
    ) -> tuple:
        ctx.on_backward = on_backward
        ctx.set_materialize_grads(zeros_for_missing)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        return (None, None, *ctx.on_backward(grads))


def _mark_views(wrapped: tuple, originals: tuple) -> None:
    """Mark the identity's new outputs so that an in-place change of one raises (torch's
    rule). Under no_grad the identity returns its inputs themselves: those stay unmarked."""
    for i, (t, original) in enumerate(zip(wrapped, originals)):
        if t is not original and t.requires_grad:
            t.__dict__["_custom_view"] = f"Output {i} of BackwardHookFunction"


class ModuleBackwardHooks:
    """One module call's backward hooks: wraps its inputs and outputs, runs the hooks."""

    def __init__(self, module: Any, hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.n_args = 0
        self.tensor_positions: list[int] = []
        self.input_wrapped = False
        self.grad_outputs: tuple | None = None
        self.n_outputs = 0

    def wrap_inputs(self, args: tuple) -> tuple:
        """``args`` with the tensors passed through the input identity node."""
        self.n_args = len(args)
        self.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, TensorBase)]
        tensors = [args[i] for i in self.tensor_positions]
        if not self.hooks or not any(t.requires_grad for t in tensors):
            return args
        self.input_wrapped = True
        wrapped = BackwardHookFunction.apply(self._on_input_grads, True, *tensors)
        _mark_views(wrapped, tensors)
        new_args = list(args)
        for i, t in zip(self.tensor_positions, wrapped):
            new_args[i] = t
        return tuple(new_args)

    def wrap_outputs(self, out: Any) -> Any:
        """``out`` (a tensor or a tuple of tensors) through the output identity node."""
        single = isinstance(out, TensorBase)
        items = (out,) if single else out
        if not (single or (type(out) is tuple and all(isinstance(t, TensorBase) for t in out))):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple "
                f"of Tensors but received {type(out)}",
                stacklevel=3,
            )
            return out
        if not any(t.requires_grad for t in items):
            return out
        self.n_outputs = len(items)
        wrapped = BackwardHookFunction.apply(self._on_output_grads, False, *items)
        _mark_views(wrapped, items)
        return wrapped[0] if single else tuple(wrapped)

    def _on_output_grads(self, grads: tuple) -> tuple:
        """Run the pre-hooks on the output gradients; keep them for the full hooks."""
        for hook in self.pre_hooks:
            result = hook(self.module, grads)
            if result is None:
                continue
            result = _as_grad_tuple(result, "Backward pre hook", "grad_output")
            _check_replacement(hook, grads, result, "grad_output", "Backward pre hook")
            grads = result
        self.grad_outputs = grads
        if not self.input_wrapped and self.hooks:
            self._run_without_input_grads(grads)
        return grads

    def _run_without_input_grads(self, grads: tuple) -> None:
        warnings.warn(
            "Full backward hook is firing when gradients are computed with respect to module "
            "outputs since no inputs require gradients.",
            stacklevel=2,
        )
        grad_input = (None,) * max(self.n_args, 1)
        for hook in self.hooks:
            result = hook(self.module, grad_input, grads)
            if result is not None and (
                not isinstance(result, (tuple, list)) or any(g is not None for g in result)
            ):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient should always "
                    "return None or None for all gradients."
                )

    def _on_input_grads(self, grads: tuple) -> tuple:
        """Run the full hooks on ``grad_input``; return the (possibly replaced) gradients.
        (No hook when the output was not wrapped: an output kind hooks do not follow.)"""
        if not self.n_outputs:
            return grads
        grad_input: list = [None] * self.n_args
        for i, g in zip(self.tensor_positions, grads):
            grad_input[i] = g
        current = tuple(grad_input)
        grad_output = self.grad_outputs if self.grad_outputs is not None else (None,)
        for hook in self.hooks:
            result = hook(self.module, current, grad_output)
            if result is None:
                continue
            result = _as_grad_tuple(result, "Backward hook", "grad_input")
            _check_replacement(hook, current, result, "grad_input", "Backward hook")
            current = result
        return tuple(current[i] for i in self.tensor_positions)


def _as_grad_tuple(result: Any, who: str, what: str) -> tuple:
    """A hook's non-None result as a tuple; it must be a tuple (or list) of gradients."""
    if isinstance(result, (tuple, list)):
        return tuple(result)
    raise RuntimeError(
        f"{who} must return None or a tuple of Tensors (or None) as the new {what}, "
        f"got {type_name(result)}"
    )


def _check_replacement(hook: Callable, old: tuple, new: tuple, what: str, who: str) -> None:
    """A hook's replacement has one gradient per entry, each of the shape it replaces."""
    if len(new) != len(old):
        raise RuntimeError(
            f"{who} returned an invalid number of {what}, got {len(new)}, but expected {len(old)}"
        )
    name = getattr(hook, "__name__", type(hook).__name__)
    for o, n in zip(old, new):
        if n is None or o is None:
            continue
        if not isinstance(n, TensorBase):
            raise TypeError(
                f"hook '{name}' returned {type_name(n)} in its new {what}; expected a "
                "Tensor or None"
            )
        if tuple(n.shape) != tuple(o.shape):
            raise RuntimeError(
                f"hook '{name}' has changed the size of value: {what} entry of shape "
                f"{list(o.shape)} replaced by one of shape {list(n.shape)}"
            )


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, grad_input, grad_output)`` for every module, before its own hooks."""
    return add_hook(global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, grad_output)`` for every module, before its own pre-hooks."""
    return add_hook(global_backward_pre_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Deprecated global form of ``register_backward_hook`` (called as a full hook here)."""
    return add_hook(global_non_full_backward_hooks, hook)


def any_global_backward_hooks() -> bool:
    """Whether a global backward hook or pre-hook is registered."""
    return bool(
        global_backward_hooks or global_backward_pre_hooks or global_non_full_backward_hooks
    )
