"""Matrix products: matmul (batched, broadcast), mm, bmm, dot, outer, einsum.

For ``C = A @ B`` the backward is two more products: ``dA = dC @ B^T`` and
``dB = A^T @ dC`` (batch dims that were broadcast are summed by the engine).
"""

from __future__ import annotations

import string

import numpy as np

from ...core import _dtype as dt
from ...core import primitives
from ...core.function import Function
from ...core.tensor import Tensor
from ...core.xp import numpy_xp
from ...foundations.type_names import type_name
from ...kernels.matmul import matmul as matmul_arrays
from ...kernels.matmul import matmul_sum_batch
from .._util import gradient_doc, normalize_dim

__all__ = [
    "matmul",
    "mm",
    "bmm",
    "dot",
    "outer",
    "einsum",
    "inner",
    "addmm",
    "baddbmm",
    "addbmm",
    "cross",
]


def _same_dtype(a: np.ndarray, b: np.ndarray, op: str):
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"{op}: expected both operands to have the same dtype, but got {a.dtype} and {b.dtype}"
        )


class Matmul(primitives.Matmul):
    __doc__ = primitives.Matmul.__doc__  # the core's backward, with the BLAS kernels

    product = staticmethod(matmul_arrays)  # (BLAS thread control: kernels/matmul.py)
    product_summed_over_batch = staticmethod(matmul_sum_batch)

    @staticmethod
    def forward(ctx, a, b):
        need = ctx.needs_input_grad
        if need:  # each operand only for the other's gradient (as torch: an in-place write
            # to an operand whose partner needs no gradient is then allowed)
            ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
        return matmul_arrays(a, b)


def _check_matmul(a: Tensor, b: Tensor, op: str) -> None:
    for name, x in (("input", a), ("other", b)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type_name(x)}")
        if x.ndim == 0:
            raise RuntimeError(f"{op}: both arguments need to be at least 1D, but {name} is 0-D")
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        raise RuntimeError(
            f"{op}: inner dimensions do not match: input of shape {list(a.shape)} has "
            f"{k_a} columns but other of shape {list(b.shape)} has {k_b} rows"
        )
    if a.ndim > 2 and b.ndim > 2:
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise RuntimeError(
                f"{op}: batch dimensions {list(a.shape[:-2])} and {list(b.shape[:-2])} of shapes "
                f"{list(a.shape)} and {list(b.shape)} are not broadcastable"
            ) from None
    _same_dtype(a._data, b._data, op)


@gradient_doc(Matmul)
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with torch's rules: 1-D vectors, batched and broadcast batch dims."""
    _check_matmul(input, other, "matmul")
    return Matmul.apply(input, other)


@gradient_doc(Matmul)
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """(n, k) @ (k, m) -> (n, m); both must be 2-D."""
    for name, x in (("input", input), ("mat2", mat2)):
        if x.ndim != 2:
            raise RuntimeError(f"mm: {name} must be a matrix (2-D), got shape {list(x.shape)}")
    _check_matmul(input, mat2, "mm")
    return Matmul.apply(input, mat2)


@gradient_doc(Matmul)
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """(b, n, k) @ (b, k, m) -> (b, n, m); both must be 3-D with the same batch size."""
    for name, x in (("input", input), ("mat2", mat2)):
        if x.ndim != 3:
            raise RuntimeError(f"bmm: {name} must be a 3D tensor, got shape {list(x.shape)}")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(
            f"bmm: batch sizes differ: input {list(input.shape)} and mat2 {list(mat2.shape)}"
        )
    _check_matmul(input, mat2, "bmm")
    return Matmul.apply(input, mat2)


@gradient_doc(Matmul)
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """``sum(input * tensor)`` of two 1-D tensors of the same length."""
    other = tensor  # torch's keyword is ``tensor``
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(
            f"dot: 1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors"
        )
    _check_matmul(input, other, "dot")
    return Matmul.apply(input, other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Products summed over the last dims: ``out[i..., j...] = sum_k input[i..., k] other[j..., k]``.

    d input[i..., k] = sum_j g[i..., j...] other[j..., k],
    d other[j..., k] = sum_i g[i..., j...] input[i..., k] (the matmul's, reshaped).
    """
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            "inner: the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other)
    k = input.shape[-1]
    out = matmul(input.reshape(-1, k), other.reshape(-1, k).t())
    return out.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """out[i, j] = input[i] * vec2[j] (a broadcast product, differentiated as one).

    Gradient: ``d input = g @ vec2``,  ``d vec2 = g^T @ input``.
    """
    from ..shape.views import unsqueeze

    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(
            f"outer: 1D tensors expected, but got input of shape {list(input.shape)} and vec2 "
            f"of shape {list(vec2.shape)}"
        )
    return unsqueeze(input, 1) * unsqueeze(vec2, 0)


ger = outer


# -- products added to an input: addmm, baddbmm, addbmm --------------------------------------


# ops whose alpha = 0 drops the product (its NaN and inf do not propagate), as torch's
# kernels do; torch's baddbmm and addr still multiply by 0
_ALPHA_ZERO_IGNORES = frozenset({"addmm", "addbmm", "addmv"})


def _integral_scalars(beta, alpha, op: str):
    """beta and alpha for an integer product: torch's addr refuses float ones, the others
    truncate them toward zero (``beta=0.5`` acts as 0), keeping the integer dtype."""
    for name, value in (("beta", beta), ("alpha", alpha)):
        if op == "addr" and isinstance(value, (float, np.floating)):
            raise RuntimeError(
                f"{op}(): for integral input tensors, argument {name} must not be a floating "
                f"point number, got {value!r}"
            )
    return int(beta), int(alpha)


def _ignored(t: Tensor) -> Tensor:
    """0 of ``t``'s dtype (False for bool) in ``t``'s graph, with a 0 gradient: a term that
    takes no part, so its NaN and inf do not propagate."""
    from ..elementwise.arithmetic import where

    zero = False if t.dtype.np_dtype.kind == "b" else 0
    return where(Tensor._make(np.zeros((), bool)), t, zero)


def _add_scaled(input: Tensor, product: Tensor, beta, alpha, op: str) -> Tensor:
    """``beta * input + alpha * product``; ``input`` broadcasts to the product's shape only.

    With ``beta = 0`` the input is ignored (NaN and inf in it do not propagate), as in torch.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(input)}")
    try:
        shape = np.broadcast_shapes(input.shape, product.shape)
    except ValueError:
        shape = None
    if shape != tuple(product.shape):
        raise RuntimeError(
            f"{op}(): input of shape {list(input.shape)} cannot be broadcast to the product's "
            f"shape {list(product.shape)}"
        )
    if product.dtype.np_dtype.kind in "iub":
        beta, alpha = _integral_scalars(beta, alpha, op)
        if product.dtype.np_dtype.kind == "b":  # bool results: beta and alpha act as and-masks
            beta, alpha = bool(beta), bool(alpha)
    if alpha == 0 and op in _ALPHA_ZERO_IGNORES:  # torch skips the product: no NaN from it
        scaled = _ignored(product)
    else:
        scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled + _ignored(input)
    return scaled + (input if beta == 1 else input * beta)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for 2-D ``mat1`` (n, k), ``mat2`` (k, m).

    Gradient: ``d input = beta * g`` (summed over broadcast dims),
    ``d mat1 = alpha * g @ mat2^T``, ``d mat2 = alpha * mat1^T @ g``.
    """
    return _add_scaled(input, mm(mat1, mat2), beta, alpha, "addmm")


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``: (b, n, k) @ (b, k, m) -> (b, n, m).

    d input = beta * g, d batch1 = alpha * g @ batch2^T, d batch2 = alpha * batch1^T @ g
    (per batch, as :func:`addmm`).
    """
    return _add_scaled(input, bmm(batch1, batch2), beta, alpha, "baddbmm")


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]`` -> (n, m).

    d input = beta * g, d batch1[b] = alpha * g @ batch2[b]^T,
    d batch2[b] = alpha * batch1[b]^T @ g (as :func:`addmm`, each batch the same ``g``).
    """
    return _add_scaled(input, bmm(batch1, batch2).sum(0), beta, alpha, "addbmm")


class Cross(Function):
    """out = a x b (3-vectors along ``dim``).   da = b x g,  db = g x a"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b, dim):
        ctx.dim = dim
        ctx.save_for_backward(a, b)
        a, b = np.broadcast_arrays(a, b)
        return np.cross(a, b, axis=dim)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, b = ctx.saved_tensors
        return xp.cross(b, g, axis=ctx.dim), xp.cross(g, a, axis=ctx.dim), None


@gradient_doc(Cross)
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (None: the first dim of size 3, torch's
    deprecated default; :func:`tinyattn.linalg.cross` uses -1). Shapes broadcast.
    """
    for name, x in (("input", input), ("other", other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"cross(): argument '{name}' must be a Tensor, not {type_name(x)}")
    if input.ndim != other.ndim:
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions: input "
            f"{list(input.shape)}, other {list(other.shape)}"
        )
    try:
        shape = np.broadcast_shapes(input.shape, other.shape)
    except ValueError:
        raise RuntimeError(
            f"linalg.cross: shapes {list(input.shape)} and {list(other.shape)} are not "
            "broadcastable"
        ) from None
    if dim is None:
        sizes = [d for d, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError(f"cross(): no dimension of size 3 in input {list(input.shape)}")
        dim = sizes[0]
    d = normalize_dim(dim, len(shape), "linalg.cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[d]} and {other.shape[d]} (shapes {list(input.shape)} and "
            f"{list(other.shape)})"
        )
    _same_dtype(input._data, other._data, "linalg.cross")
    return Cross.apply(input, other, d)


# -- einsum --------------------------------------------------------------------------------

_LETTERS = set(string.ascii_letters)


def _parse_einsum(equation: str, shapes: list[tuple[int, ...]]):
    """Expand '...' into letters and validate; returns (input subscripts, output, sizes)."""
    terms, out = _split_equation(equation, len(shapes))
    for term in terms + ([out] if out is not None else []):
        _check_subscripts(term, equation)
    expanded, ell = _expand_ellipsis(terms, shapes, out)
    sizes = _subscript_sizes(expanded, shapes, equation)
    return expanded, _output_subscripts(out, expanded, ell, sizes, equation), sizes


def _split_equation(equation: str, n_operands: int) -> tuple[list[str], str | None]:
    """``"ij,jk->ik"`` -> ``(["ij", "jk"], "ik")``; the output is None without '->'."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        if "->" in out:
            raise ValueError(f"einsum(): equation {equation!r} has more than one '->'")
    else:
        lhs, out = eq, None
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise ValueError(
            f"einsum(): equation {equation!r} has {len(terms)} operand subscripts but "
            f"{n_operands} operands were given"
        )
    return terms, out


def _check_subscripts(term: str, equation: str) -> None:
    """Letters only, with at most one '...'."""
    if term.count("...") > 1:
        raise ValueError(
            f"einsum(): subscripts {term!r} in {equation!r} contain more than one ellipsis"
        )
    bad = [c for c in term.replace("...", "") if c not in _LETTERS]
    if bad or term.replace("...", "").count(".") or "." in term.replace("...", ""):
        raise ValueError(
            f"einsum(): invalid subscript {(bad or ['.'])[0]!r} in {equation!r}: subscripts "
            "must be letters a-z, A-Z, with '...' for broadcast dims"
        )


def _expand_ellipsis(terms: list[str], shapes, out: str | None) -> tuple[list[str], str]:
    """Each operand's '...' replaced by spare letters (right-aligned, as broadcasting);
    returns the expanded subscripts and the letters of the widest ellipsis."""
    used = set("".join(terms)) | set(out or "")
    spare = [c for c in string.ascii_letters if c not in used]
    ell_ndim = 0
    for term, shape in zip(terms, shapes):
        n = len(term.replace("...", ""))
        if "..." in term:
            ell_ndim = max(ell_ndim, len(shape) - n)
    ell = "".join(spare[:ell_ndim])
    expanded = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        n_named = len(term.replace("...", ""))
        if "..." in term:
            k = len(shape) - n_named
            if k < 0:
                raise ValueError(
                    f"einsum(): operand {i} has {len(shape)} dims but subscripts {term!r} name {n_named}"
                )
            term = term.replace("...", ell[ell_ndim - k :])
        elif n_named != len(shape):
            raise ValueError(
                f"einsum(): the number of subscripts in the equation ({n_named}) does not match "
                f"the number of dimensions ({len(shape)}) for operand {i} (subscripts {term!r}, "
                f"shape {list(shape)}) and no ellipsis was given"
            )
        expanded.append(term)
    return expanded, ell


def _subscript_sizes(expanded: list[str], shapes, equation: str) -> dict[str, int]:
    """The size of each letter, broadcasting 1s; repeated letters (diagonals) must agree."""
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(expanded, shapes)):
        for c in set(term):  # a repeated letter takes a diagonal: its sizes must be equal
            dims = [shape[j] for j, ch in enumerate(term) if ch == c]
            if len(set(dims)) > 1:
                raise ValueError(
                    f"einsum(): subscript {c!r} is repeated for operand {i} but the sizes don't "
                    f"match, {dims[0]} != {dims[1]} (shape {list(shape)}, equation {equation!r})"
                )
        for c, n in zip(term, shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n != 1 and n != seen:
                raise ValueError(
                    f"einsum(): subscript {c!r} has size {n} for operand {i} (shape {list(shape)}) "
                    f"which does not broadcast with size {seen} seen earlier in {equation!r}"
                )
    return sizes


def _output_subscripts(out, expanded: list[str], ell: str, sizes, equation: str) -> str:
    """The output subscripts: given (with '...' expanded; ellipsis dims it omits are
    summed), or implicit: the ellipsis, then the letters used once, sorted."""
    if out is None:
        counts: dict[str, int] = {}
        for c in "".join(expanded):
            counts[c] = counts.get(c, 0) + 1
        return ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    out = out.replace("...", ell)
    for c in out:
        if c not in sizes:
            raise ValueError(
                f"einsum(): output subscript {c!r} in {equation!r} does not appear in any input"
            )
    repeated = [c for c in dict.fromkeys(out) if out.count(c) > 1]
    if repeated:
        raise ValueError(
            f"einsum(): output subscript {repeated[0]!r} appears more than once in the "
            f"output of {equation!r}"
        )
    return out


def _einsum_as_matmul(ta: str, tb: str, out: str, a: np.ndarray, b: np.ndarray):
    """A two-operand einsum as one batched matrix product (BLAS), or None if it doesn't fit.

    Letters are sorted into batch (in a, b and out), left (a and out), right
    (b and out) and contracted (a and b, not out); letters of one operand only
    that the output drops are summed first. Then ``a`` is laid out as
    (batch, left, contracted), ``b`` as (batch, contracted, right), and
    ``out = (a @ b)`` transposed to the output order. ``'bhqd,bhkd->bhqk'`` and the
    attention equations of the tutorials go this way; repeated letters (traces,
    diagonals) and size-1 broadcasting of shared letters use ``np.einsum``.
    """
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb):
        return None
    size = {}
    for term, x in ((ta, a), (tb, b)):
        for c, n in zip(term, x.shape):
            if size.setdefault(c, n) != n:
                return None
    # sum away letters that only one operand has and the output drops
    drop_a = tuple(i for i, c in enumerate(ta) if c not in tb and c not in out)
    if drop_a:
        a = a.sum(axis=drop_a)
        ta = "".join(c for i, c in enumerate(ta) if i not in drop_a)
    drop_b = tuple(i for i, c in enumerate(tb) if c not in ta and c not in out)
    if drop_b:
        b = b.sum(axis=drop_b)
        tb = "".join(c for i, c in enumerate(tb) if i not in drop_b)
    batch = [c for c in out if c in ta and c in tb]
    left = [c for c in out if c in ta and c not in tb]
    right = [c for c in out if c in tb and c not in ta]
    contracted = [c for c in ta if c in tb and c not in out]
    batch_shape = tuple(size[c] for c in batch)
    n_left = int(np.prod([size[c] for c in left], dtype=np.int64))
    n_right = int(np.prod([size[c] for c in right], dtype=np.int64))
    n_contracted = int(np.prod([size[c] for c in contracted], dtype=np.int64))
    a2 = a.transpose([ta.index(c) for c in batch + left + contracted])
    b2 = b.transpose([tb.index(c) for c in batch + contracted + right])
    if contracted:
        a2 = a2.reshape(batch_shape + (n_left, n_contracted))
        result = matmul_arrays(a2, b2.reshape(batch_shape + (n_contracted, n_right)))
    else:  # nothing to contract: a broadcast product, matmul of 1-wide matrices is slow
        result = a2.reshape(batch_shape + (n_left, 1)) * b2.reshape(batch_shape + (1, n_right))
    result = result.reshape(batch_shape + tuple(size[c] for c in left + right))
    order = batch + left + right
    perm = [order.index(c) for c in out]
    return result.transpose(perm) if perm != sorted(perm) else result


def _einsum_arrays(terms, out: str, operands) -> np.ndarray:
    """``np.einsum`` with the matmul lowering for two operands (see ``_einsum_as_matmul``)."""
    if len(operands) == 2:
        result = _einsum_as_matmul(terms[0], terms[1], out, *operands)
        if result is not None:
            return result
    expr = ",".join(terms) + "->" + out
    return np.einsum(expr, *operands, optimize=len(operands) > 1)


class Einsum(Function):
    """out = einsum(subscripts, *operands).

    The gradient of operand i is itself an einsum: contract the output gradient
    with every other operand (conjugated, if complex), producing operand i's subscripts. Letters that only
    operand i has (summed away in forward) are broadcast back; repeated letters
    (a diagonal/trace) put the gradient on that diagonal.
    """

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, *operands, terms, out, sizes):
        ctx.terms, ctx.out, ctx.sizes = terms, out, sizes
        ctx.save_for_backward(*operands)
        return _einsum_arrays(terms, out, operands)

    @staticmethod
    def backward(ctx, g):
        operands = tuple(ctx.xp.conj(x) for x in ctx.saved_tensors)  # (real: the identity)
        grads = []
        for i, need in enumerate(ctx.needs_input_grad):
            grads.append(_einsum_grad(ctx.xp, g, ctx, operands, i) if need else None)
        return tuple(grads)


def _einsum_grad(xp, g, ctx, operands, i):
    """d operand_i = einsum(out, *other terms -> term_i)(g, *others), made to x's shape."""
    term = ctx.terms[i]
    x = operands[i]
    unique = "".join(dict.fromkeys(term))
    others = [(ctx.terms[j], operands[j]) for j in range(len(operands)) if j != i]
    available = set(ctx.out) | set("".join(t for t, _ in others))
    present = "".join(c for c in unique if c in available)
    terms, tensors = [ctx.out] + [t for t, _ in others], [g] + [o for _, o in others]
    if xp is numpy_xp:
        grad = _einsum_arrays(terms, present, tensors)
    else:  # create_graph: a recorded einsum
        grad = xp.einsum(",".join(terms) + "->" + present, *tensors)
    # letters the gradient lacks (x alone had them, forward summed them) broadcast back;
    # letters of size 1 in x but larger elsewhere were broadcast in forward: sum them
    shape = [grad.shape[present.index(c)] if c in present else 1 for c in unique]
    grad = xp.reshape(grad, shape)
    own = [x.shape[term.index(c)] for c in unique]
    sum_axes = tuple(k for k, (n, m) in enumerate(zip(own, shape)) if n == 1 and m != 1)
    if sum_axes:
        grad = xp.sum(grad, axis=sum_axes, keepdims=True)
    grad = xp.broadcast_to(grad, own)
    if len(unique) == len(term):
        return xp.transpose(grad, [unique.index(c) for c in term]) if unique != term else grad
    if xp is not numpy_xp:  # create_graph: grad added at the diagonal's flat positions in x
        size = int(np.prod(x.shape))
        positions = np.einsum(f"{term}->{unique}", np.arange(size).reshape(x.shape))
        flat = xp.add_at((size,), (positions.reshape(-1),), xp.reshape(grad, (-1,)))
        return xp.reshape(flat, x.shape)
    result = np.zeros(x.shape, dtype=g.dtype)
    np.einsum(f"{term}->{unique}", result)[...] = grad  # the diagonal view is writable
    return result


@gradient_doc(Einsum)
def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation, e.g. ``einsum('ibhd,jbhd->ijbh', q, k)`` (ellipsis and repeats allowed).

    For ``out = einsum("ij,jk->ik", a, b)``: ``da = einsum("ik,jk->ij", g, b)``; in general
    ``d operand_i`` = the einsum of ``g`` with the other operands into operand i's subscripts.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): equation must be a string, got {type_name(equation)}")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, got {type_name(x)}")
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    terms, out, sizes = _parse_einsum(equation, [x._data.shape for x in operands])
    rt = dt.result_type(*[x._data for x in operands])
    operands = tuple(x if x._data.dtype == rt else x.to(dt.from_numpy_dtype(rt)) for x in operands)
    return Einsum.apply(*operands, terms=tuple(terms), out=out, sizes=sizes)
