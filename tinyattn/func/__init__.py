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

    For ensembling with ``vmap(functional_call ...)``. The stacked parameters are new
    leaves (detached from the models), requiring grad when all of their sources do;
    the buffers are stacked as they are.
    """
    from .. import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    first = models[0]
    params = {}
    for name, _ in first.named_parameters():
        group = [dict(m.named_parameters())[name] for m in models]
        requires = all(p.requires_grad for p in group)
        params[name] = stack([p.detach() for p in group]).requires_grad_(requires)
    buffers = {
        name: stack([dict(m.named_buffers())[name] for m in models])
        for name, _ in first.named_buffers()
    }
    return params, buffers
