"""``tinyattn.func``: composable function transforms, as ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``,
``vmap``, ``functional_call`` and ``stack_module_state``, with torch's signatures,
pytree arguments (tuples, lists and dicts of tensors), ``argnums`` and ``has_aux``.

How they are built here (see ``docs/func.md``): everything differentiates with the
reverse-mode engine (``jvp`` by the double-vjp trick, ``jacfwd`` as ``jacrev``), and
``vmap`` is a loop over the batch dimension that stacks the results, not a system of
batching rules. The values are torch's; the costs differ (documented per function).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..nn.utils.stateless import call_with_tensors
from ._autodiff import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._vmap import vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "stack_module_state",
    "vjp",
    "vmap",
]


def functional_call(
    module,
    parameter_and_buffer_dicts,
    args: Any = None,
    kwargs: dict | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` with the given tensors in place of its parameters/buffers.

    ``parameter_and_buffer_dicts``: a dict ``{dotted name: tensor}`` or a sequence of
    dicts with disjoint keys. ``args`` that is not a tuple is the one positional argument.
    The module's own tensors are back in place when the call returns (or raises).
    ``tie_weights``: tied names get the value given for any of them. ``strict``: every
    parameter and buffer must be given, and nothing else.
    """
    return call_with_tensors(
        module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights, strict=strict
    )


def stack_module_state(models: Sequence) -> tuple[dict, dict]:
    """``(params, buffers)``: each model's tensors stacked along a new dim 0, by name.

    For ensembling with ``vmap(functional_call ...)``: ``M`` models of one class give
    ``params[name]`` of shape ``(M, *shape)``. A stacked tensor whose sources all require
    grad is a new leaf that requires grad (detached from the models, ready for an
    optimizer); one whose sources do not is a plain stack. Mixing the two is an error.
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    per_model = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in per_model], k) for k in per_model[0]}
    per_model = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf([b[k] for b in per_model], k) for k in per_model[0]}
    return params, buffers


def _stacked_leaf(tensors: list, name: str) -> Any:
    from .. import stack

    wants = {t.requires_grad for t in tensors}
    if len(wants) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack([t.detach() for t in tensors])
    return result.requires_grad_(True) if wants == {True} else result
