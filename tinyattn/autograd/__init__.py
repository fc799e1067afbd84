"""Automatic differentiation: ``backward``, ``grad``, grad modes, ``Function``, ``gradcheck``."""

from __future__ import annotations

import warnings

import numpy as np

from ..core.engine import _accumulate_into, run_backward
from .custom_function import Function, FunctionCtx, once_differentiable
from . import _forward_only, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from ..core.function import Node
from ..core.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from ..core.tensor_base import TensorBase
from .trace import trace
from ..foundations.type_names import type_name
from ..core.extensions import extensions as _extensions
from . import xp as _xp  # plugs tensor_xp into the engine's seam: create_graph=True
from . import function  # torch.autograd.function, an attribute after import as in torch

__all__ = [
    "Function",
    "FunctionCtx",
    "detect_anomaly",
    "set_detect_anomaly",
    "once_differentiable",
    "Node",
    "backward",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
]


def _as_list(x) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _root_grads(outputs, grad_outputs, op: str, as_tensors: bool = False) -> list:
    """One gradient per output (ones for a scalar output); Tensors for ``create_graph``.

    Under ``create_graph`` a Tensor given in ``grad_outputs`` is used as it is, so
    that the result is differentiable with respect to it too (``jvp`` relies on this).
    """
    grads: list = []
    for i, out in enumerate(outputs):
        if not isinstance(out, TensorBase):
            raise TypeError(f"{op}: outputs must be tensors, got {type_name(out)}")
        if not out._requires_grad or _forward_only.is_forward_only(out):
            raise RuntimeError(
                f"{op}: element {i} of tensors does not require grad and does not have a grad_fn"
            )
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(
                    f"{op}: grad can be implicitly created only for scalar outputs; this output "
                    f"has shape {list(out._data.shape)}. Pass gradient= (a tensor of that shape)."
                )
            if out._data.dtype.kind == "c":
                raise RuntimeError(
                    f"{op}: grad can be implicitly created only for real scalar outputs; this "
                    f"output is {out._data.dtype}. Take a real loss (e.g. .abs(), .real) or pass "
                    "gradient= (as torch)."
                )
            grads.append(np.ones(out._data.shape, dtype=out._data.dtype))
        else:
            g = g._data if isinstance(g, TensorBase) else np.asarray(g, dtype=out._data.dtype)
            if g.shape != out._data.shape:
                raise RuntimeError(
                    f"{op}: mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} "
                    f"and output[{i}] has a shape of {list(out._data.shape)}"
                )
            grads.append(g)
        if as_tensors:
            given = grad_outputs[i] if i < len(grad_outputs) else None
            keep = isinstance(given, TensorBase) and given._data is grads[-1]
            grads[-1] = given if keep else TensorBase._make(grads[-1])
    return grads


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs=None,
) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of every leaf they depend on.

    ``create_graph=True`` records the backward pass itself, so ``.grad`` can be
    differentiated again (higher-order gradients); ``retain_graph`` then defaults to True.
    """
    if retain_graph is None:
        retain_graph = create_graph
    outputs = _as_list(tensors)
    grads = _root_grads(outputs, _as_list(grad_tensors), "backward", create_graph)
    if inputs is not None:
        captured = run_backward(
            [o._grad_node() for o in outputs],
            grads,
            bool(retain_graph),
            capture=dict.fromkeys(t._grad_node() for t in _as_list(inputs)),
            accumulate=False,
            create_graph=create_graph,
        )
        for t in _as_list(inputs):
            g = captured.get(t._grad_node())
            if g is not None:
                _accumulate_into(t, g)
        return
    run_backward(
        [o._grad_node() for o in outputs], grads, bool(retain_graph), create_graph=create_graph
    )


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is untouched).

    ``create_graph=True``: the returned gradients are in the graph (differentiable
    again, with respect to the inputs and to Tensors in ``grad_outputs``);
    ``retain_graph`` then defaults to True. ``is_grads_batched=True``: the first dim of
    each ``grad_outputs`` entry is a batch of vectors, one vjp each (run one after the
    other; torch vmaps them), the results stacked along a new first dim.
    ``only_inputs`` is deprecated and ignored, as in torch.
    """
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but "
            "got: allow_unused=False."
        )
    if is_grads_batched:
        from .functional import batched_grad

        return batched_grad(
            grad, outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
            materialize_grads,
        )  # fmt: skip
    if retain_graph is None:
        retain_graph = create_graph
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    for i, x in enumerate(ins):
        if not isinstance(x, TensorBase) or not x._requires_grad:
            raise RuntimeError(f"grad: input {i} does not require grad")
    grads = _root_grads(outs, _as_list(grad_outputs), "grad", create_graph)
    targets = [x._grad_node() for x in ins]
    captured = run_backward(
        [o._grad_node() for o in outs],
        grads,
        bool(retain_graph),
        capture=dict.fromkeys(targets),
        accumulate=False,
        create_graph=create_graph,
    )
    result = []
    for i, (x, node) in enumerate(zip(ins, targets)):
        g = captured.get(node)
        if g is None:
            if materialize_grads:
                result.append(TensorBase._make(np.zeros_like(x._data)))
                continue
            if not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} was not used in the graph of the outputs (set "
                    "allow_unused=True to get None for it)"
                )
            result.append(None)
        elif isinstance(g, TensorBase):  # create_graph: the graph's own tensor
            result.append(g if g._data.dtype == x._data.dtype else g.to(x.dtype))  # type: ignore[attr-defined]
        else:
            result.append(TensorBase._make(np.array(g, dtype=x._data.dtype)))
    return tuple(result)


from . import forward_ad, functional, profiler  # (profiler loads tinyattn.profiler on use)

_extensions.set_type_name(type_name)  # error messages name types as the package does
