"""Jacobians, Hessians and their products: ``torch.autograd.functional``'s API.

Everything here is built from one primitive, the vector-Jacobian product: for
``y = f(x)``, ``autograd.grad(y, x, v)`` is ``v^T J``. Then

* ``vjp``      is that primitive;
* ``jacobian`` is one vjp per output element (``v`` = a one-hot), stacked;
* ``jvp``      is the double-vjp trick: ``u -> u^T J`` is linear in ``u``, so its
  own vjp with ``v`` is ``J v`` (torch computes it the same way);
* ``hessian``  is the jacobian of the gradient function ``x -> df/dx``;
* ``vhp``      is the vjp of the gradient function with ``v``, and ``hvp`` equals it
  because a Hessian is symmetric.

Signatures and semantics are torch's: ``inputs`` is a Tensor or a tuple of
Tensors, and results mirror that structure; results are detached unless
``create_graph=True``; an output that does not depend on an input gives zeros,
or raises with ``strict=True``. ``vectorize`` is accepted and the loop computes
the same values (there is no ``vmap`` here). The ops involved must support
``create_graph`` (all of tinyattn's do; see ``docs/higher-order.md``).
"""

from __future__ import annotations

from typing import Any

from ..core.grad_mode import enable_grad
from ..core.tensor_base import TensorBase
from ..foundations.type_names import type_name
from . import grad as _vjp_primitive

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_STRICT = " This is not allowed in strict mode."
_NONE_OUTPUT = "the user-provided function returns a single Tensor with a single element."
_NONE_INPUT = "the input to the user-provided function is a single Tensor with a single element."


# -- Tensor-or-tuple arguments ------------------------------------------------------------------
def _tensors(value, what: str, fn: str) -> tuple[bool, tuple]:
    """(was it a tuple, its Tensors as a tuple)."""
    was_tuple = isinstance(value, tuple)
    items = value if was_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, TensorBase):
            raise TypeError(
                f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but "
                f"the value at index {i} has type {type(item)}."
            )
    return was_tuple, items


def _unwrap(results: tuple, was_tuple: bool):
    return results if was_tuple else results[0]


def _fresh_inputs(inputs: tuple, create_graph: bool) -> tuple:
    """Inputs to differentiate at: kept in the caller's graph only with ``create_graph``."""
    return tuple(
        x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(True)
        for x in inputs
    )


def _finish(results, create_graph: bool):
    """Detach results unless the caller wants a graph (nested tuples kept)."""
    if isinstance(results, tuple):
        return tuple(_finish(r, create_graph) for r in results)
    return results if create_graph else results.detach()


# -- the primitive, with zeros for what does not depend ------------------------------------------
def _vjp(outputs: tuple, inputs: tuple, vs, create_graph: bool, strict: bool, independent: str):
    """``sum_j v_j^T d outputs_j / d inputs``, one Tensor per input (zeros where independent).

    ``independent`` is the strict-mode message for input ``{i}``.
    """
    live = [(y, v) for y, v in zip(outputs, vs) if y.requires_grad]
    grads = (None,) * len(inputs)
    if live:
        grads = _vjp_primitive(
            [y for y, _ in live],
            inputs,
            [v for _, v in live],
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
        )
    result = []
    for i, (g, x) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(independent.format(i=i) + _STRICT)
            g = _zeros_like(x)
        result.append(g)
    return tuple(result)


def _zeros_like(x: TensorBase) -> Any:  # a tinyattn.Tensor (this layer does not import it)
    from .. import zeros_like

    return zeros_like(x)


def _check_requires_grad(tensors: tuple, what: str, strict: bool) -> None:
    if strict:
        for i, t in enumerate(tensors):
            if not t.requires_grad:
                raise RuntimeError(
                    f"The {what} of the user-provided function is independent of input {i}."
                    + _STRICT
                )


def _vectors(v, like: tuple, fn: str, if_none: str) -> tuple:
    """``v`` as a tuple shaped like ``like``; None only where ``like`` is one element."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if {if_none}")
        return (_ones_like(like[0]),)
    _, vs = _tensors(v, "v", fn)
    if len(vs) != len(like):
        raise RuntimeError(
            f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}."
        )
    for i, (a, b) in enumerate(zip(vs, like)):
        if tuple(a.shape) != tuple(b.shape):
            where = f"Entry {i} in " if len(like) > 1 else ""
            raise RuntimeError(
                f"{where}v has invalid size: should be {b.size()} but got {a.size()}."
            )
    return vs


def _ones_like(x: TensorBase) -> Any:  # a tinyattn.Tensor
    from .. import ones_like

    return ones_like(x)


# -- the public functions -----------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``."""
    in_tuple, xs = _tensors(inputs, "inputs", "vjp")
    with enable_grad():
        xs = _fresh_inputs(xs, create_graph)
        out_tuple, ys = _tensors(func(*xs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(ys, "outputs", strict)
        vs = _vectors(v, ys, "vjp", _NONE_OUTPUT)
        independent = "The output of the user-provided function is independent of input {i}."
        grads = _vjp(ys, xs, vs, create_graph, strict, independent)
    return _unwrap(_finish(ys, create_graph), out_tuple), _unwrap(
        _finish(grads, create_graph), in_tuple
    )


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``.

    Computed by the double-vjp trick (as torch does): ``g(u) = u^T J`` is linear in
    ``u``, so the vjp of ``g`` with ``v`` is ``J v``. It costs two backward passes.
    """
    in_tuple, xs = _tensors(inputs, "inputs", "jvp")
    vs = _vectors(v, xs, "jvp", _NONE_INPUT)
    with enable_grad():
        xs = _fresh_inputs(xs, create_graph)
        out_tuple, ys = _tensors(func(*xs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(ys, "outputs", strict)
        us = tuple(_zeros_like(y).requires_grad_(True) for y in ys)  # dummy cotangents
        independent = "The output of the user-provided function is independent of input {i}."
        g_of_u = _vjp(ys, xs, us, True, strict, independent)
        _check_requires_grad(g_of_u, "grad_inputs", strict)
        independent = "The gradient with respect to input {i} is independent of the inputs."
        jv = _vjp(g_of_u, us, vs, create_graph, strict, independent)
    return _unwrap(_finish(ys, create_graph), out_tuple), _unwrap(
        _finish(jv, create_graph), out_tuple
    )


def jacobian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs``: entry ``[i][j]`` has shape
    ``outputs[i].shape + inputs[j].shape`` (single Tensors unwrap a level).

    One vjp per output element, with a one-hot ``v`` (reverse mode). ``strategy=
    "forward-mode"`` is accepted with torch's conditions (``vectorize=True``, not with
    ``strict`` or ``create_graph``) and gives the same Jacobian: tinyattn's forward mode is
    itself built from reverse passes (``autograd/forward_ad.py``), so the rows are computed
    by reverse mode either way. ``vectorize`` changes nothing else (there is no batching).
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        _check_forward_mode(vectorize, strict, create_graph)
    in_tuple, xs = _tensors(inputs, "inputs", "jacobian")
    with enable_grad():
        xs = _fresh_inputs(xs, create_graph)
        out_tuple, ys = _tensors(func(*xs), "outputs of the user-provided function", "jacobian")
        blocks = tuple(
            _jacobian_of_output(y, i, xs, create_graph, strict) for i, y in enumerate(ys)
        )
    blocks = _finish(blocks, create_graph)
    if not out_tuple:
        return _unwrap(blocks[0], in_tuple)
    return tuple(_unwrap(b, in_tuple) for b in blocks)


def _check_forward_mode(vectorize: bool, strict: bool, create_graph: bool) -> None:
    """torch's conditions on ``strategy="forward-mode"``, with its messages."""
    if strict:
        raise RuntimeError(
            'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
            "are not supported together (yet). Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    if create_graph:
        raise NotImplementedError(
            "torch.autograd.functional.jacobian: `create_graph=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`create_graph=False` or `strategy="reverse-mode"`.'
        )
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
            "implemented for `vectorize=True`."
        )


def _jacobian_of_output(y, i: int, xs: tuple, create_graph: bool, strict: bool) -> tuple:
    """``d y / d xs[j]`` for each j, shaped ``y.shape + xs[j].shape``."""
    from .. import stack

    flat = y.reshape(-1)
    rows: list[list] = [[] for _ in xs]
    independent = f"Output {i} of the user-provided function is independent of input {{i}}."
    for k in range(flat.numel()):
        one_hot = _zeros_like(flat)
        one_hot[k] = 1
        for j, g in enumerate(_vjp((flat,), xs, (one_hot,), create_graph, strict, independent)):
            rows[j].append(g)
    return tuple(
        (stack(r) if r else _zeros_like(x).reshape(0, *x.shape)).reshape(*y.shape, *x.shape)
        for r, x in zip(rows, xs)
    )


def _gradient_function(func, fn: str, strict: bool):
    """``x -> d func / d x`` for a ``func`` that returns one single-element Tensor."""

    def gradient(*xs):
        y = func(*xs)
        out_tuple, ys = _tensors(y, "outputs of the user-provided function", fn)
        if out_tuple or len(ys) != 1:
            raise RuntimeError(f"The function given to {fn} should return a single Tensor")
        if ys[0].numel() != 1:
            raise RuntimeError(
                f"The Tensor returned by the function given to {fn} should contain a single element"
            )
        independent = "The output of the user-provided function is independent of input {i}."
        grads = _vjp(
            (ys[0].reshape(()),), xs, (_ones_like(ys[0].reshape(())),), True, False, independent
        )
        _check_requires_grad(grads, "jacobian", strict)
        return grads

    return gradient


def hessian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of a scalar ``func``: the jacobian of its gradient function.

    Entry ``[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``.
    """
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    in_tuple, xs = _tensors(inputs, "inputs", "hessian")
    gradient = _gradient_function(func, "hessian", strict)
    result = jacobian(
        lambda *x: gradient(*x), xs, create_graph, strict, vectorize, outer_jacobian_strategy
    )
    return _unwrap(tuple(_unwrap(r, in_tuple) for r in result), in_tuple)


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: vector-Hessian product of a scalar ``func`` (two backwards)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``. A Hessian is symmetric, so this is ``vhp``'s value, computed
    the same way (torch gets it by a double-backward trick; the values are equal)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph: bool, strict: bool, fn: str):
    in_tuple, xs = _tensors(inputs, "inputs", fn)
    vs = _vectors(v, xs, fn, _NONE_INPUT)
    with enable_grad():
        xs = _fresh_inputs(xs, create_graph)
        value = func(*xs)
        grads = _gradient_function(lambda *x: value, fn, strict)(*xs)
        independent = (
            "The hessian of the user-provided function with respect to input {i} is "
            "independent of the input."
        )
        product = _vjp(grads, xs, vs, create_graph, strict, independent)
    return _finish(value, create_graph), _unwrap(_finish(product, create_graph), in_tuple)


def batched_grad(
    grad_fn, outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize
) -> tuple:
    """``autograd.grad(..., is_grads_batched=True)``: one vjp per row of the batched
    ``grad_outputs`` (run in turn, the graph kept until the last), stacked per input."""
    from .. import stack

    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if grad_outputs is None:
        raise ValueError(
            "autograd.grad(is_grads_batched=True) needs grad_outputs: one batch of vectors "
            "per output, the batch along their first dim"
        )
    gs = list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs]
    if len(gs) != len(outs):
        raise RuntimeError(f"grad_outputs has {len(gs)} entries for {len(outs)} outputs")
    for i, (g, y) in enumerate(zip(gs, outs)):
        if not isinstance(g, TensorBase) or g._data.shape[1:] != y._data.shape:
            got = list(g._data.shape) if isinstance(g, TensorBase) else type_name(g)
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {got} and output[{i}] has a shape "
                f"of {list(y._data.shape)}."
            )
    sizes = sorted({g._data.shape[0] for g in gs})
    if len(sizes) != 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {[g._data.shape[0] for g in gs]} for the mapped dimension"
        )
    n = sizes[0]
    keep = create_graph if retain_graph is None else retain_graph
    rows = [
        grad_fn(
            outs, inputs, [g[b] for g in gs], retain_graph=keep or b < n - 1,
            create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize,
        )
        for b in range(n)
    ]  # fmt: skip
    ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    result: list = []
    for j, x in enumerate(ins):
        column = [r[j] for r in rows]
        if any(c is None for c in column):
            result.append(None)
        elif not n:
            result.append(_zeros_like(x).reshape(0, *x.shape))
        else:
            result.append(stack(column))
    return tuple(result)
