"""A custom ``autograd.Function``'s ``jvp`` under forward-mode AD (torch's semantics).

``Function.apply`` hands itself here while a ``forward_ad.dual_level`` is active. When an
input has a tangent, ``forward`` runs on the primals (grad mode off; the reverse node is
recorded for inputs that require grad), then ``jvp(ctx, *input_tangents)`` (grad mode on;
``ctx.saved_tensors`` there is what ``ctx.save_for_forward`` kept) gives one tangent per
output, and each output is returned as a dual with it. A function with a ``backward`` but
no ``jvp`` gets its tangents by double vjp (see ``forward_ad``; torch raises); one with
neither raises torch's error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.grad_mode import enable_grad
from ..core.tensor_base import TensorBase
from ..foundations.type_names import type_name
from . import custom_function as _custom_function
from . import forward_ad as _fw
from .custom_function import Function
from .forward_ad import _Dual, _Level, _Primal, _register, _tangent_sources, unpack_dual

__all__ = ["apply_custom_function"]


def apply_custom_function(cls: type, args: tuple, kwargs: dict) -> Any:
    """``cls.apply(*args, **kwargs)`` while a level is active (``Function.apply`` calls
    this first). With an input that has a tangent and a ``jvp`` staticmethod: ``forward``
    runs on the primals (recording its reverse node for inputs that require grad), then
    ``jvp(ctx, *input_tangents)`` gives the outputs' tangents: each output is returned as
    a dual with its tangent. Inputs without a tangent get zeros (None for non-tensors).
    NotImplemented (apply as usual) when no input has a tangent, or when ``cls`` has a
    ``backward`` but no ``jvp`` (tangents then by double vjp: a tinyattn extension)."""
    state = _fw._levels.get(_fw._current_level)
    if cls is _Primal or state is None:
        return NotImplemented
    sources = [_tangent_sources(a, state)[0] if isinstance(a, TensorBase) else [] for a in args]
    if not any(sources):
        return NotImplemented
    if cls.jvp is Function.jvp:  # type: ignore[attr-defined]
        if cls.backward is not Function.backward:  # type: ignore[attr-defined]
            return NotImplemented
        Function.jvp(None)  # raises torch's error
    primals, tangents = [], []
    for a, found in zip(args, sources):
        primal, tangent = unpack_dual(a) if found else (a, None)
        if tangent is None and isinstance(a, TensorBase) and a._data.dtype.kind in "fc":
            tangent = TensorBase._make(np.zeros_like(a._data))
        primals.append(primal)
        tangents.append(tangent)
    ctx, output = _custom_function._apply(cls, tuple(primals), kwargs)
    if ctx.__dict__.get("_dirty"):
        raise NotImplementedError(
            f"{cls.__name__}: a custom Function that modifies an input in place "
            "(ctx.mark_dirty) is not supported with forward AD in tinyattn"
        )
    outputs = output if isinstance(output, tuple) else (output,)
    out_tangents = _custom_function._run_jvp(ctx, cls, tangents)
    if len(out_tangents) != len(outputs):
        raise RuntimeError(
            "Function's jvp returned an invalid number of forward gradients (expected "
            f"{len(outputs)} but got {len(out_tangents)})"
        )
    frozen = {id(t) for t in ctx.__dict__.get("_non_differentiable", ())}
    result = [
        o if t is None or id(o) in frozen else _jvp_output(state, ctx, i, o, t)
        for i, (o, t) in enumerate(zip(outputs, out_tangents))
    ]
    return tuple(result) if isinstance(output, tuple) else result[0]


def _jvp_output(state: _Level, ctx, index: int, output, tangent):
    """Output ``index`` of a custom function as a dual with the tangent its jvp gave."""
    if not isinstance(tangent, TensorBase):
        raise RuntimeError(
            f"expected Variable or None (got {type_name(tangent)}) for grad output {index}."
        )
    if not isinstance(output, TensorBase) or output._data.dtype.kind not in "fc":
        return output
    if tangent._data.shape != output._data.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size "
            f"{list(output._data.shape)} while the given forward gradient is of size "
            f"{list(tangent._data.shape)}."
        )
    if not output._requires_grad:  # no reverse graph: a dual like make_dual's
        return _register(state, output, tangent)
    with enable_grad():  # in front of the function's node: where the tangent search stops
        dual = _Primal.apply(output)
    dual._grad_fn._name = ctx.name()  # (shown as the function's node, as torch's)
    state.primal_nodes.add(dual._grad_fn)
    state.duals[dual._grad_fn] = _Dual(dual, tangent, output, private=False)
    return dual
