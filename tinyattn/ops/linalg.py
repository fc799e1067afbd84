"""Matrix products: matmul (batched, broadcast), mm, bmm, dot, outer, einsum.

For ``C = A @ B`` the backward is two more products: ``dA = dC @ B^T`` and
``dB = A^T @ dC`` (batch dims that were broadcast are summed by the engine).
"""

from __future__ import annotations

import string

import numpy as np

from .. import _dtype as dt
from ..autograd.function import Function
from ..tensor import Tensor

__all__ = ["matmul", "mm", "bmm", "dot", "outer", "einsum", "inner"]


def _same_dtype(a: np.ndarray, b: np.ndarray, op: str):
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"{op}: expected both operands to have the same dtype, but got {a.dtype} and {b.dtype}"
        )


class Matmul(Function):
    """C = A @ B.   dA = dC @ B^T,  dB = A^T @ dC  (1-D operands are treated as row/column vectors)"""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        if a.ndim == 1 and b.ndim == 1:  # dot product
            return (g * b if need_a else None), (g * a if need_b else None)
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = g
        if a.ndim == 1:
            g2 = g2[..., None, :]
        if b.ndim == 1:
            g2 = g2[..., None]
        da = db = None
        if need_a:
            da = np.matmul(g2, np.swapaxes(b2, -1, -2))
            if a.ndim == 1:
                da = da[..., 0, :]
        if need_b:
            db = np.matmul(np.swapaxes(a2, -1, -2), g2)
            if b.ndim == 1:
                db = db[..., 0]
        return da, db


def _check_matmul(a: Tensor, b: Tensor, op: str) -> None:
    for name, x in (("input", a), ("other", b)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(x).__name__}")
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


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with torch's rules: 1-D vectors, batched and broadcast batch dims."""
    _check_matmul(input, other, "matmul")
    return Matmul.apply(input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """(n, k) @ (k, m) -> (n, m); both must be 2-D."""
    for name, x in (("input", input), ("mat2", mat2)):
        if x.ndim != 2:
            raise RuntimeError(f"mm: {name} must be a matrix (2-D), got shape {list(x.shape)}")
    _check_matmul(input, mat2, "mm")
    return Matmul.apply(input, mat2)


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


def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(
            f"dot: 1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors"
        )
    _check_matmul(input, other, "dot")
    return Matmul.apply(input, other)


inner = dot


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    from .shape import unsqueeze

    return unsqueeze(input, 1) * unsqueeze(vec2, 0)


ger = outer


# -- einsum --------------------------------------------------------------------------------

_LETTERS = set(string.ascii_letters)


def _parse_einsum(equation: str, shapes: list[tuple[int, ...]]):
    """Expand '...' into letters and validate; returns (input subscripts, output, sizes)."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        if "->" in out:
            raise ValueError(f"einsum(): equation {equation!r} has more than one '->'")
    else:
        lhs, out = eq, None
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum(): equation {equation!r} has {len(terms)} operand subscripts but "
            f"{len(shapes)} operands were given"
        )
    for term in terms + ([out] if out is not None else []):
        bad = [c for c in term.replace("...", "") if c not in _LETTERS]
        if bad or term.replace("...", "").count(".") or "." in term.replace("...", ""):
            raise ValueError(
                f"einsum(): invalid subscript {(bad or ['.'])[0]!r} in {equation!r}: subscripts "
                "must be letters a-z, A-Z, with '...' for broadcast dims"
            )
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
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(expanded, shapes)):
        for c, n in zip(term, shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n != 1 and n != seen:
                raise ValueError(
                    f"einsum(): subscript {c!r} has size {n} for operand {i} (shape {list(shape)}) "
                    f"which does not broadcast with size {seen} seen earlier in {equation!r}"
                )
        for c in set(term):
            dims = [shape[j] for j, ch in enumerate(term) if ch == c]
            if len(set(dims)) > 1:
                raise ValueError(
                    f"einsum(): subscript {c!r} is repeated for operand {i} but the sizes don't "
                    f"match, {dims[0]} != {dims[1]}"
                )
    if out is None:
        counts = {}
        for c in "".join(expanded):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        if "..." in out:
            out = out.replace("...", ell)
        elif ell and any(sizes[c] != 1 for c in ell):
            pass  # ellipsis dims are summed when the output omits them
        for c in out:
            if c not in sizes:
                raise ValueError(
                    f"einsum(): output subscript {c!r} in {equation!r} does not appear in any input"
                )
        if len(set(out)) != len(out):
            raise ValueError(f"einsum(): output subscripts of {equation!r} repeat a letter")
    return expanded, out, sizes


class Einsum(Function):
    """out = einsum(subscripts, *operands).

    The gradient of operand i is itself an einsum: contract the output gradient
    with every other operand, producing operand i's subscripts. Letters that only
    operand i has (summed away in forward) are broadcast back; repeated letters
    (a diagonal/trace) put the gradient on that diagonal.
    """

    @staticmethod
    def forward(ctx, *operands, terms, out, sizes):
        ctx.terms, ctx.out, ctx.sizes = terms, out, sizes
        ctx.save_for_backward(*operands)
        expr = ",".join(terms) + "->" + out
        return np.einsum(expr, *operands, optimize=len(operands) > 1)

    @staticmethod
    def backward(ctx, g):
        operands = ctx.saved_tensors
        grads = []
        for i, need in enumerate(ctx.needs_input_grad):
            grads.append(_einsum_grad(g, ctx, operands, i) if need else None)
        return tuple(grads)


def _einsum_grad(g, ctx, operands, i):
    term, sizes = ctx.terms[i], ctx.sizes
    x = operands[i]
    unique = "".join(dict.fromkeys(term))
    others = [(ctx.terms[j], operands[j]) for j in range(len(operands)) if j != i]
    available = set(ctx.out) | set("".join(t for t, _ in others))
    present = "".join(c for c in unique if c in available)
    # letters of size 1 here but larger elsewhere were broadcast: compute at full size, then sum
    expr = ",".join([ctx.out] + [t for t, _ in others]) + "->" + present
    grad = np.einsum(expr, g, *[o for _, o in others], optimize=len(others) > 0)
    full = [sizes[c] if c in present else 1 for c in unique]
    grad = grad.reshape(full)
    own = {c: x.shape[term.index(c)] for c in unique}
    target = [own[c] for c in unique]
    sum_axes = tuple(k for k, c in enumerate(unique) if own[c] == 1 and full[k] != 1)
    if sum_axes:
        grad = grad.sum(axis=sum_axes, keepdims=True)
    grad = np.broadcast_to(grad, target)
    if len(unique) == len(term):
        return np.transpose(grad, [unique.index(c) for c in term]) if unique != term else grad
    result = np.zeros(x.shape, dtype=g.dtype)
    np.einsum(f"{term}->{unique}", result)[...] = grad  # the diagonal view is writable
    return result


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation, e.g. ``einsum('ibhd,jbhd->ijbh', q, k)`` (ellipsis and repeats allowed)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): equation must be a string, got {type(equation).__name__}")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, got {type(x).__name__}")
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    terms, out, sizes = _parse_einsum(equation, [x._data.shape for x in operands])
    rt = dt.result_type(*[x._data for x in operands])
    operands = tuple(x if x._data.dtype == rt else x.to(dt.from_numpy_dtype(rt)) for x in operands)
    return Einsum.apply(*operands, terms=tuple(terms), out=out, sizes=sizes)
