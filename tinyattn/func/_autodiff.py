"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``.

All of them are built on one primitive, the reverse-mode vector-Jacobian product
``autograd.grad(outputs, inputs, v)`` = ``v^T J``, as in ``autograd/functional.py``:

* ``grad``    is the vjp of a scalar with ``v = 1``;
* ``vjp``     returns a function that runs that primitive for any ``v``;
* ``jvp``     is the double-vjp trick: ``u -> u^T J`` is linear in ``u``, so its own vjp
  with the tangent ``t`` is ``J t``. tinyattn has no forward mode: a jvp costs two
  backward passes, and every op in ``f`` must support ``create_graph`` (all built-in
  ops do; see ``docs/higher-order.md``);
* ``jacrev``  is one vjp per output element, with a one-hot ``v``;
* ``jacfwd``  returns the same Jacobian as ``jacrev`` (same layout, same values); it is
  computed in reverse mode, so it does not get forward mode's speed on tall Jacobians;
* ``hessian`` is ``jacfwd(jacrev(f))``.

How the transforms nest (``grad(grad(f))``, ``vmap(grad(f))``, ``jacrev(jacrev(f))``):
each transform differentiates with respect to its own copies of the inputs. An input
that does not require grad becomes a fresh leaf; one that does (an outer transform's
input, or a tensor the caller will backward through) is wrapped in a view, so the
gradient is taken with respect to this use only and stays connected to the outer
graph. Before differentiating, the transform looks at the output's graph: if it
reaches a tensor that requires grad other than its own leaves (an outer input, a
module parameter the function closes over), the backward pass is recorded
(``create_graph=True``) so the outer level can differentiate the result; otherwise
results are plain tensors, as torch's are at the top level.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import autograd, stack, zeros_like
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..core.function import AccumulateGrad
from ..tensor_api.tensor import Tensor
from ._pytree import TreeSpec, tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]

Argnums = "int | tuple[int, ...]"


# -- argnums and inputs ---------------------------------------------------------------------
def _check_argnums(argnums: Any, num_args: int) -> tuple[int, ...]:
    """``argnums`` as a tuple of non-negative positions (torch's checks and messages)."""
    items = argnums if isinstance(argnums, tuple) else (argnums,)
    if not items:
        raise RuntimeError("argnums must be non-empty")
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in items):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in items:
        if not -num_args <= a < num_args:
            raise RuntimeError(f"Got argnum={a}, but only {num_args} positional inputs")
    positions = tuple(a % num_args for a in items)
    if len(set(positions)) != len(positions):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return positions


class _Inputs:
    """The differentiated arguments of one transform call, as this transform's own copies.

    ``args``: the arguments to call the function with; ``leaves``: the differentiated
    tensors in flat order; ``specs``: one pytree spec per argnum; ``own``: the fresh
    leaves made here (their graph is this transform's only).
    """

    def __init__(self, args: tuple, argnums: tuple[int, ...], outer_graph: bool) -> None:
        self.args = list(args)
        self.leaves: list = []
        self.specs: list[TreeSpec] = []
        self.own: set[int] = set()
        for a in argnums:
            values, spec = tree_flatten(self.args[a])
            copies = [self._copy(v, outer_graph) for v in values]
            self.leaves.extend(copies)
            self.specs.append(spec)
            self.args[a] = tree_unflatten(copies, spec)

    def _copy(self, value: Any, outer_graph: bool) -> Tensor:
        if not isinstance(value, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(value)}")
        if not value.is_floating_point():
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if outer_graph and value.requires_grad:
            return value.view_as(value)  # stays in the caller's graph
        copy = value.detach().requires_grad_(True)
        self.own.add(id(copy))
        return copy

    def regroup(self, flat: list, as_tuple: bool) -> Any:
        """Flat per-leaf values -> the argnums' pytrees (a tuple of them if ``as_tuple``)."""
        trees, start = [], 0
        for spec in self.specs:
            trees.append(tree_unflatten(flat[start : start + spec.num_leaves], spec))
            start += spec.num_leaves
        return tuple(trees) if as_tuple else trees[0]


def _reaches_outer(tensors: list, own: set[int]) -> bool:
    """Whether any of ``tensors`` depends on a tensor that requires grad and is not in ``own``
    (an iterative walk of the graph, down to the leaves)."""
    stack_, seen = [], set()
    for t in tensors:
        if isinstance(t, Tensor) and t.requires_grad:
            if t.grad_fn is None:
                if id(t) not in own:
                    return True
            else:
                stack_.append(t.grad_fn)
    while stack_:
        node = stack_.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in own:
                return True
            continue
        stack_.extend(n for n in node.next_nodes if n is not None)
    return False


def _release(value: Any, keep_graph: bool) -> Any:
    """A result handed back to the caller: detached unless the outer level needs its graph."""
    if keep_graph:
        return value
    return tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, value)


def _vjp(outputs: list, cotangents: list, inputs: list, create_graph: bool) -> list:
    """``sum_j cotangents_j^T d outputs_j / d inputs_i`` for each input (zeros where unused)."""
    live = [(y, v) for y, v in zip(outputs, cotangents) if y.requires_grad]
    grads: tuple = (None,) * len(inputs)
    if live:
        grads = autograd.grad(
            [y for y, _ in live],
            inputs,
            [v for _, v in live],
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
        )
    return [zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _split_aux(result: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return result


def _output_tensors(output: Any, api: str, what: str) -> tuple[list, TreeSpec]:
    leaves, spec = tree_flatten(output)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(
                f"{api}: expected {what} to return only tensors, got unsupported type {type(leaf)}"
            )
    return leaves, spec


# -- grad -----------------------------------------------------------------------------------
def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(gradient, value)`` of a scalar-valued ``func``.

    The gradient is taken with respect to the argument(s) ``argnums`` and has their
    pytree structure (a tuple of them when ``argnums`` is a tuple). With ``has_aux``,
    ``func`` returns ``(scalar, aux)`` and the result is ``(gradient, (value, aux))``.
    ``d value / d x`` by one reverse pass with ``v = 1``.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        positions = _check_argnums(argnums, len(args))
        outer_graph = is_grad_enabled()
        with enable_grad():
            inputs = _Inputs(args, positions, outer_graph)
            output, aux = _split_aux(func(*inputs.args, **kwargs), has_aux, api)
            if not isinstance(output, Tensor):
                raise RuntimeError(
                    f"{api}: Expected f(*args) to return a Tensor, got {type(output)}"
                )
            if output.dim() != 0:
                raise RuntimeError(
                    f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            keep = outer_graph and _reaches_outer([output], inputs.own)
            flat = _vjp([output], [None], inputs.leaves, keep)
        gradient = inputs.regroup(flat, isinstance(argnums, tuple))
        value = _release(output, keep)
        if has_aux:
            return gradient, (value, _release(aux, keep))
        return gradient, value

    return wrapper


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """The gradient function of a scalar-valued ``func`` (``torch.func.grad``).

    ``grad(f)(x)`` is ``df/dx`` shaped like ``x``; ``argnums`` picks the argument(s) (a
    pytree argument gives a pytree of gradients); ``has_aux``: ``func`` returns
    ``(scalar, aux)`` and the result is ``(gradient, aux)``. Composes with itself
    (``grad(grad(f))``) and with ``vmap`` (per-sample gradients).
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = grad_and_value(func, argnums, has_aux)(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


# -- vjp and jvp ----------------------------------------------------------------------------
def vjp(func: Callable, *primals: Any, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``, or ``(output, vjp_fn, aux)`` with ``has_aux``.

    ``vjp_fn(cotangents)``, with ``cotangents`` shaped like the output, returns one
    ``cotangents^T d output / d primal`` per primal (a tuple). It may be called many times.
    """
    api = "vjp(f, *primals)"
    outer_graph = is_grad_enabled()
    with enable_grad():
        inputs = _Inputs(primals, tuple(range(len(primals))), outer_graph)
        output, aux = _split_aux(func(*inputs.args), has_aux, api)
        outs, out_spec = _output_tensors(output, api, "f(*primals)")
        keep = outer_graph and _reaches_outer(outs, inputs.own)

    def vjp_fn(cotangents: Any) -> tuple:
        vs, spec = tree_flatten(cotangents)
        if spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {spec}, primal output: {out_spec}"
            )
        for i, (v, y) in enumerate(zip(vs, outs)):
            if not isinstance(v, Tensor):
                raise RuntimeError(f"vjp_fn: expected cotangents to be Tensors, got {type(v)}")
            if tuple(v.shape) != tuple(y.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {v.shape} and "
                    f"output[{i}] has a shape of {y.shape}."
                )
        graph = keep or (is_grad_enabled() and any(v.requires_grad for v in vs))
        with enable_grad():
            flat = _vjp(outs, vs, inputs.leaves, graph)
        return _release(inputs.regroup(flat, True), graph)

    result = (_release(output, keep), vjp_fn)
    return result + (_release(aux, keep),) if has_aux else result


def jvp(
    func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False
):
    """``(func(*primals), J @ tangents)``, or ``(output, jvp_out, aux)`` with ``has_aux``.

    The double-vjp trick (no forward mode here): with dummy cotangents ``u`` (zeros that
    require grad), ``g(u) = u^T J`` is recorded; ``g`` is linear in ``u``, so the vjp of
    ``g`` with the tangents is ``J t``. Two backward passes, the first with create_graph.
    ``strict`` is accepted for torch's signature (torch raises NotImplementedError for it).
    """
    api = "jvp(f, primals, tangents)"
    if strict:
        raise RuntimeError(f"{api}: strict=True is not supported.")
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {p_spec!r} and tangents with structure {t_spec!r}"
        )
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(p, Tensor):
            raise RuntimeError(f"{api}: Expected primals to only contain Tensors, got {type(p)}")
        if not p.is_floating_point():
            raise ValueError(f"Expected primal to be floating point or complex, but got: {p.dtype}")
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected tangents to only contain Tensors, got {type(t)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} "
                f"while the given forward gradient is of size {list(t.shape)}."
            )
    outer_graph = is_grad_enabled()
    with enable_grad():
        inputs = _Inputs(primals, tuple(range(len(primals))), outer_graph)
        output, aux = _split_aux(func(*inputs.args), has_aux, api)
        outs, out_spec = _output_tensors(output, api, "f(*primals)")
        keep = outer_graph and (
            _reaches_outer(outs, inputs.own) or any(t.requires_grad for t in t_leaves)
        )
        dummies = [zeros_like(y).requires_grad_(True) for y in outs]
        u_grads = _vjp(outs, dummies, inputs.leaves, True)  # u^T J, recorded
        jv = _vjp(u_grads, t_leaves, dummies, keep)  # its vjp with t: J t
    result = (_release(output, keep), _release(tree_unflatten(jv, out_spec), keep))
    return result + (_release(aux, keep),) if has_aux else result


# -- Jacobians ------------------------------------------------------------------------------
def jacrev(
    func: Callable,
    argnums: Any = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Callable:
    """The Jacobian of ``func`` by reverse mode: one vjp per output element (one-hot ``v``).

    For an output leaf of shape ``O`` and an input of shape ``I`` the block has shape
    ``O + I``. The result has the output's pytree structure; each leaf holds the argnum's
    pytree (a tuple of them when ``argnums`` is a tuple). ``chunk_size`` is accepted
    (the vjps run one at a time either way).
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, args, argnums, has_aux, "vjp(f, *primals)")

    return wrapper


def jacfwd(
    func: Callable, argnums: Any = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable:
    """The Jacobian of ``func`` with ``torch.func.jacfwd``'s signature and layout.

    tinyattn has no forward mode: the Jacobian is computed as ``jacrev`` computes it (one
    vjp per output element), so it equals ``jacrev``'s exactly and costs what it does.
    ``randomness`` is checked for torch's values and otherwise unused.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, args, argnums, has_aux, "jvp(f, primals, tangents)")

    return wrapper


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """The Hessian of a scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``.

    For an input of shape ``I`` it has shape ``I + I``.
    """
    return jacfwd(jacrev(func, argnums), argnums)


def _jacobian(func: Callable, args: tuple, argnums: Any, has_aux: bool, api: str) -> Any:
    positions = _check_argnums(argnums, len(args))
    outer_graph = is_grad_enabled()
    with enable_grad():
        inputs = _Inputs(args, positions, outer_graph)
        output, aux = _split_aux(func(*inputs.args), has_aux, api)
        outs, out_spec = _output_tensors(output, api, "f(*primals)")
        keep = outer_graph and _reaches_outer(outs, inputs.own)
        blocks = [_jacobian_of(y, inputs.leaves, keep) for y in outs]
    as_tuple = isinstance(argnums, tuple)
    jac = tree_unflatten([inputs.regroup(b, as_tuple) for b in blocks], out_spec)
    jac = _release(jac, keep)
    return (jac, _release(aux, keep)) if has_aux else jac


def _jacobian_of(y: Tensor, xs: list, create_graph: bool) -> list:
    """``d y / d x`` for each x, shaped ``y.shape + x.shape`` (one vjp per element of y)."""
    flat = y.reshape(-1)
    rows: list[list] = [[] for _ in xs]
    for k in range(flat.numel()):
        one_hot = zeros_like(flat)
        one_hot[k] = 1
        for row, g in zip(rows, _vjp([flat], [one_hot], xs, create_graph)):
            row.append(g)
    return [
        (stack(r) if r else zeros_like(x).reshape(0, *x.shape)).reshape(*y.shape, *x.shape)
        for r, x in zip(rows, xs)
    ]
