"""Higher-level autograd: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``.

The signatures and semantics are torch's (``torch.autograd.functional``):
``inputs`` is a Tensor or a tuple of Tensors and the results mirror that
structure; ``create_graph=True`` returns results that are in the graph (else
they are detached); ``strict=True`` raises when an output is independent of an
input instead of returning zeros. ``vectorize=True`` is accepted and computes
the same values with the loop (there is no ``vmap`` here).

All are built on ``autograd.grad`` with ``create_graph=True``: the ops
involved must support it (see ``docs/higher-order.md``).
"""

from __future__ import annotations

from . import grad as _grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from .tensor_base import TensorBase

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# -- helpers (torch's semantics) ---------------------------------------------------------------


def _as_tuple(inp, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether ``inp`` was a tuple, ``inp`` as a tuple); each element must be a Tensor."""
    is_tuple = isinstance(inp, tuple)
    inp = inp if is_tuple else (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, TensorBase):
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the value at index {i} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple``: unwrap single results (two levels for jacobian/hessian)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh leaves (or, with ``create_graph``, graph-keeping copies) to differentiate by."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.clone())  # stays in the user's graph
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph: bool):
    if isinstance(inputs[0], TensorBase):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


_STRICT_MESSAGES = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
    "independent of the input. This is not allowed in strict mode. You should ensure that "
    "your function is thrice differentiable and that the hessian depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
    "function with respect to input {i} is independent of the input. This is not allowed in "
    "strict mode. You should ensure that your function is twice differentiable and that the "
    "jacobian depends on the inputs (this would be violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
    "user-provided function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
    "outputs must be computed in a differentiable manner from the input when running in "
    "strict mode.",
}


def _check_requires_grad(inputs, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode."
            )
        if not inp.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad; None for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad(
        [o for o, _ in pairs],
        list(inputs),
        [g for _, g in pairs],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
    "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entries in the "
    "input. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """None gradients (input unused) as zeros shaped like ``refs``, or an error in strict mode."""
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = TensorBase._make(ref._data * 0)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(
                "The jacobian of the user-provided function is independent of input "
                f"{i}. This is not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _single_entry_v(v, ref, arg: str, fn_name: str, create_graph: bool):
    """``v`` validated against ``ref`` (the outputs or inputs); None only for one 1-element Tensor."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, ref[1], ref[0])
        return v
    if len(ref[1]) != 1 or ref[1][0]._data.size != 1:
        raise RuntimeError(
            f"The vector v can only be None if the {arg} is a single Tensor with a single element."
        )
    return None


# -- the functions ----------------------------------------------------------------------------


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs`` (one backward).

    ``v`` has the shape of ``func``'s output (None for a one-element output).
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _single_entry_v(
            v,
            (is_outputs_tuple, outputs),
            "user-provided function returns",
            "vjp",
            create_graph,
        )
        with set_grad_enabled(True if create_graph else is_grad_enabled()):
            grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
            result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_inputs_tuple
    )


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``.

    Computed by the double-vjp trick, as torch's: with ``u`` a dummy upstream gradient
    that requires grad, ``g(u) = u^T J`` is linear in ``u`` and ``d(g(u) . v)/du = J v``.
    Two backward passes (the first with ``create_graph=True``); no forward mode.
    ``v`` has the shape of ``inputs`` (None for a one-element input).
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_entry_v(
            v, (is_inputs_tuple, inputs), "input to the user-provided function", "jvp", create_graph
        )
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        dummy = tuple(TensorBase._make(o._data * 0).requires_grad_(True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, dummy, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
        with set_grad_enabled(True if create_graph else is_grad_enabled()):
            grad_res = _autograd_grad(grad_inputs, dummy, v, create_graph=create_graph)
            result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_outputs_tuple
    )


def _jacobian_rows(out, inputs, i: int, create_graph: bool, strict: bool) -> tuple:
    """d out / d inputs, one backward per element of ``out`` (a one-hot upstream gradient)."""
    import numpy as np

    from .. import stack

    rows: list[list] = [[] for _ in inputs]
    for j in range(out.numel()):
        onehot = np.zeros(tuple(out.shape), dtype=out._data.dtype)
        onehot.reshape(-1)[j] = 1
        seed = TensorBase._make(onehot)
        grads = _autograd_grad(
            (out,), inputs, (seed,), retain_graph=True, create_graph=create_graph
        )
        for k, (g, inp) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input {k}."
                        " This is not allowed in strict mode."
                    )
                g = TensorBase._make(inp._data * 0)
            rows[k].append(g)
    if out.ndim == 0:  # one row each: no stack (keeps hessian's inner jacobian op-free)
        return tuple(r[0] for r in rows)
    return tuple(
        stack(r, 0).reshape(tuple(out.shape) + tuple(inp.shape))
        if r
        else TensorBase._make(np.zeros(tuple(out.shape) + tuple(inp.shape), inp._data.dtype))
        for r, inp in zip(rows, inputs)
    )


def jacobian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][k]`` of shape ``out_i.shape + in_k.shape``.

    Reverse mode, one backward per output element. ``vectorize=True`` gives the same values
    (computed by the same loop); ``strategy="forward-mode"`` is not supported.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function is not vectorizable, use strategy="reverse-mode".'
        )
    if strategy == "forward-mode":
        raise NotImplementedError(
            "jacobian: strategy='forward-mode' is not supported by tinyattn (no forward-mode "
            "AD); use strategy='reverse-mode'"
        )
    if strict and vectorize:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
            "supported together. Please either set `strict=False` or `vectorize=False`."
        )
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        jac = tuple(
            _jacobian_rows(out, inputs, i, create_graph, strict) for i, out in enumerate(outputs)
        )
    jac = _grad_postprocess(jac, create_graph)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of a scalar ``func`` at ``inputs``: the jacobian of its gradient.

    ``H[i][j]`` has shape ``in_i.shape + in_j.shape``.
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, TensorBase):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return out.sum()  # the one element as a 0-d tensor (as squeeze(), by a converted op)

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _hessian_product(func, inputs, v, create_graph, strict, fn_name: str):
    """``(func(inputs), v^T H)`` for a scalar ``func`` (shared by ``vhp`` and ``hvp``)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_entry_v(
            v,
            (is_inputs_tuple, inputs),
            "input to the user-provided function",
            fn_name,
            create_graph,
        )
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", fn_name
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if is_outputs_tuple or not isinstance(outputs[0], TensorBase):
            raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
        if outputs[0]._data.size != 1:
            raise RuntimeError(
                f"The Tensor returned by the function given to {fn_name} should contain a "
                "single element"
            )
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_inputs_tuple
    )


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: vector-Hessian product of a scalar ``func`` (two backwards)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``: Hessian-vector product of a scalar ``func``.

    The Hessian of a twice continuously differentiable function is symmetric, so
    ``H v = (v^T H)^T``: it is computed as :func:`vhp` (one backward of the gradient)
    rather than by torch's double-backward trick, with the same values.
    """
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")
